"""Spark that deploys: releases run on executors whose Python cannot import treedp.

A separate driver process (one SparkContext per process) starts ``local[2]`` with
``PYSPARK_PYTHON`` pointing at this interpreter without its site-packages (``python -S``):
the executors' Python has pyspark (Spark puts it on their path) but neither treedp nor numpy.
A plain and a grouped per-person release run (pure Spark SQL: no Python worker does anything);
``method="partition"``, which needs Python there, fails with one clear error naming
``PYSPARK_PYTHON`` and ``--py-files``.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import treedp
from tests.engines.conftest import _java_home

pytestmark = pytest.mark.slow

_DRIVER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import treedp
from pyspark.sql import SparkSession
from treedp.engines.grouped import GroupedJob
from treedp.engines.spark import count_grouped_spark
from treedp.exceptions import MissingDependencyError
from treedp.privacy.contribution import ContributionBounds

spark = (
    SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    .config("spark.sql.shuffle.partitions", "2").getOrCreate()
)
spark.sparkContext.setLogLevel("OFF")
df = spark.range(0, 4000, 1, 3).selectExpr(
    "CAST(id % 100 AS DOUBLE) AS v", "CONCAT('k', CAST(id % 4 AS STRING)) AS g",
    "CONCAT('p', CAST(id % 97 AS STRING)) AS person",
)
out = {}
plain = treedp.release_cdf(df, column="v", epsilon=1.0, bounds=(0, 100), bins=10)
out["plain"] = float(plain.cdf(50.0))
grouped = treedp.release_grouped(
    df, column="v", by="g", keys=["k0", "k1", "k2", "k3"], privacy_unit="person",
    max_contributions=5, epsilon=1.0, bounds=(0, 100), bins=10,
)
out["grouped"] = len(grouped.keys)
bins = treedp.make_bins(bounds=(0, 100), bins=10)
job = GroupedJob("v", ("g",), ("k0", "k1"), "person",
                 ContributionBounds.from_parameters("person", 5), bins, "error")
try:
    count_grouped_spark(df, job, treedp.InsecureSeededSource(1), method="partition")
    out["partition"] = "ran"
except MissingDependencyError as error:
    out["partition"] = str(error)
spark.stop()
print("RESULT " + json.dumps(out))
"""


def test_executors_without_treedp(tmp_path: Path) -> None:
    pytest.importorskip("pyspark", reason="pyspark is not installed (treedp[spark])")
    plain = tmp_path / "python-without-site-packages"
    plain.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    plain.chmod(plain.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cannot = subprocess.run(
        [str(plain), "-c", "import treedp"], env=env, capture_output=True, check=False
    )
    assert cannot.returncode != 0  # the executors' Python really lacks treedp
    java = _java_home()
    if java is not None:
        env["JAVA_HOME"] = java
    env["PYSPARK_PYTHON"] = str(plain)
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    src = str(Path(treedp.__file__).resolve().parents[1])
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
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
    assert out["plain"] == out["plain"]  # a number (the release ran), not NaN
    assert out["grouped"] == 4
    message = out["partition"]
    assert "PYSPARK_PYTHON" in message and "--py-files" in message, message
    assert "cannot import" in message
