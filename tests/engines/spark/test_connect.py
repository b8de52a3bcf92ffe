"""Spark Connect DataFrames take the same engine row as classic ones (pyspark >= 4).

A separate process starts a local Spark Connect server and client
(``SparkSession.builder.remote("local[2]")``: pyspark 4's pip package ships the server) and
runs a plain count, a release and a grouped per-person release on a
``pyspark.sql.connect.dataframe.DataFrame``; the counts equal the numpy kernel's. pyspark 3.5's
pip package ships no Connect server (``remote("local")`` would download it at run time), so
the test needs pyspark 4 and the Connect client's packages (grpcio, grpcio-status,
googleapis-common-protos, zstandard); CI runs it in its Spark 4 step.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import treedp
from tests.engines.conftest import _java_home

pytestmark = pytest.mark.slow

_DRIVER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import treedp
from pyspark.sql import SparkSession
from treedp.engines import count_chunk
from treedp.engines.dispatch import pick_engine
from treedp.engines.spark import count_spark

spark = SparkSession.builder.remote("local[2]").config("spark.ui.enabled", "false").getOrCreate()
df = spark.range(0, 3000).selectExpr(
    "CAST(id % 101 AS DOUBLE) / 4 AS v", "CONCAT('k', CAST(id % 3 AS STRING)) AS g",
    "id % 37 AS p",
)
out = {"type": type(df).__module__}
bins = treedp.make_bins(bounds=(0, 20), bins=9)
values = (np.arange(3000) % 101) / 4
out["equal"] = count_spark(df, "v", bins) == count_chunk(values, bins)
out["engine"] = pick_engine(df).name
plain = treedp.release_cdf(df, column="v", epsilon=1.0, bounds=(0, 20), bins=9)
out["release"] = type(plain).__name__
grouped = treedp.release_grouped(
    df, column="v", by="g", keys=["k0", "k1", "k2"], privacy_unit="p", max_contributions=5,
    epsilon=1.0, bounds=(0, 20), bins=9,
)
out["keys"] = list(grouped.keys)
spark.stop()
print("RESULT " + json.dumps(out))
"""


def test_spark_connect_dataframes(tmp_path: Path) -> None:
    pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (treedp[spark])")
    if int(pyspark.__version__.split(".")[0]) < 4:
        pytest.skip("pyspark 3.5's pip package ships no Spark Connect server; CI tests pyspark 4")
    for module in ("grpc", "grpc_status", "google.rpc", "zstandard"):
        if importlib.util.find_spec(module.split(".")[0]) is None:
            pytest.skip(f"the Spark Connect client needs {module} (pip install 'pyspark[connect]')")
    env = dict(os.environ)
    java = _java_home()
    if java is not None:
        env["JAVA_HOME"] = java
    env["PYSPARK_PYTHON"] = sys.executable
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    src = str(Path(treedp.__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(script), src],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    out = json.loads(lines[0][len("RESULT ") :])
    assert out["type"] == "pyspark.sql.connect.dataframe"
    assert out["equal"] is True
    assert out["engine"] == "spark"
    assert out["release"] == "Release"
    assert out["keys"] == ["k0", "k1", "k2"]
