"""Grouped releases: speed in memory, on every engine, and against PipelineDP on the same job.

Parts (``--part``, default ``memory engines``):

* ``memory``: 10^7 rows over 1,000 public integer keys at B = 1024, one row per person, and
  the same with a privacy unit (10^6 persons, ``max_contributions=10``): the whole
  ``release_grouped`` call (counting, bounding, planning, noise); and the per-value bins of
  the same values (``bin_index``) against ``np.searchsorted`` over the same edges, and the
  grouped counting kernel against ``np.bincount`` of the precomputed cells.
* ``keys``: many keys and bins, where the noisy levels of every key are most of the work's
  memory: 2·10^6 rows over 2,000 public keys at B = 4096, the whole ``release_grouped``
  call; the baseline in the same process is numpy copying int64 arrays of the size of every
  key's levels once (what a release that copies its levels adds).
* ``engines``: 10^6 synthetic rows, 5·10^5 persons with 2 rows each in 2 different groups of
  10 (at most 2 groups and 1 row per group per person), values integers 0..100; the grouped
  release with ``privacy_unit``, ``max_groups=2``, ``max_contributions_per_group=1``, ε = 1,
  integer bins, then the 5 quantiles 0.1 .. 0.9 of every group, on numpy (a dict of arrays),
  files (one Parquet file), Spark ``local[2]`` and Dask (LocalCluster, 2 processes). The
  Spark session / Dask cluster start and the file write are not timed.
* ``tumult``: Tumult Analytics on Spark ``local[2]``, the same job (one quantile query per
  level at ε/5, ``MaxGroupsPerID(2)``, ``MaxRowsPerGroupPerID(1)``), in the peers' venv.
* ``pipelinedp``: PipelineDP's local backend on the same 10^6 rows, the same bounds, public
  partitions, percentiles 10, 25, 50, 75, 90 per group (run this part in the venv where
  ``pipeline-dp`` is installed: it does not import treedp).

Usage (one command, the machine's load printed first)::

    PYTHONPATH=src python benchmarks/bench_grouped.py
    /tmp/peers-venv/bin/python benchmarks/bench_grouped.py --part pipelinedp

Each figure is the best of ``--repeats`` runs (after a warm-up for the fast ones).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

GROUPS = 10
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


def synthetic(n: int = 1_000_000, seed: int = 1) -> dict[str, np.ndarray]:
    """``n`` rows, ``n/2`` persons with 2 rows each in 2 different groups of :data:`GROUPS`."""
    rng = np.random.default_rng(seed)
    persons = n // 2
    i = np.arange(persons)
    first = i % GROUPS
    second = (first + 1 + (i // GROUPS) % (GROUPS - 1)) % GROUPS
    person = np.repeat(i, 2)
    group = np.stack([first, second], axis=1).ravel()
    order = rng.permutation(person.size)
    return {
        "value": rng.integers(0, 101, person.size)[order].astype(np.int64),
        "group": group[order].astype(np.int64),
        "person": person[order].astype(np.int64),
    }


def best(fn: Callable[[], Any], repeats: int, warm: bool = True) -> float:
    if warm:
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def load() -> str:
    return os.popen("uptime").read().strip()


# ---------------------------------------------------------------------- treedp
def part_memory(repeats: int) -> None:
    import treedp

    rng = np.random.default_rng(2)
    n = 10_000_000
    values = rng.uniform(0, 1000, n)
    groups = rng.integers(0, 1000, n)
    keys = list(range(1000))

    def no_unit() -> Any:
        return treedp.release_grouped(
            values, by=groups, keys=keys, epsilon=1.0, bounds=(0, 1000), bins=1024
        )

    print(
        f"memory, 10^7 rows, 1000 keys, B=1024, one row per person: {best(no_unit, repeats):.2f} s"
    )
    _bin_index_line(values, repeats)
    _cells_line(groups, repeats)
    person = rng.integers(0, 1_000_000, n)

    def with_unit() -> Any:
        return treedp.release_grouped(
            values,
            by=groups,
            keys=keys,
            privacy_unit=person,
            max_contributions=10,
            epsilon=1.0,
            bounds=(0, 1000),
            bins=1024,
        )

    print(
        f"memory, 10^7 rows, 1000 keys, B=1024, 10^6 persons, max_contributions=10: "
        f"{best(with_unit, repeats):.2f} s"
    )


def part_keys(repeats: int) -> None:
    import treedp

    rng = np.random.default_rng(3)
    values, groups = rng.uniform(0, 100, 2_000_000), rng.integers(0, 2000, 2_000_000)

    def release() -> Any:
        return treedp.release_grouped(
            values, by=groups, keys=list(range(2000)), epsilon=1.0, bounds=(0, 100), bins=4096
        )

    sizes = [lv.size for lv in release()[0].noisy_levels]
    levels = [np.ones(size, dtype=np.int64) for size in sizes for _ in range(2000)]
    copy = best(lambda: [np.array(lv) for lv in levels], repeats)
    print(
        f"keys, 2*10^6 rows, 2000 keys, B=4096: {best(release, repeats):.2f} s; numpy copying "
        f"every key's levels once ({sum(sizes) * 2000 * 8 / 2**20:.0f} MB) {copy:.2f} s"
    )


def _bin_index_line(values: np.ndarray, repeats: int) -> None:
    """The per-value bins every grouped engine computes (``engines.grouped_bins.bin_index``)
    against numpy's binary search over the same edges, on two public bounds: ``(0, 1000)``
    (the release's, binary64 arithmetic not exact at 1,024 bins) and ``(0, 1024)`` (exact)."""
    from treedp import make_bins
    from treedp.engines.edge_exactness import _arithmetic_is_exact
    from treedp.engines.grouped_bins import bin_index

    for hi in (1000.0, 1024.0):
        bins = make_bins(bounds=(0.0, hi), bins=1024)
        exact = _arithmetic_is_exact(bins.edges, bins._inv_width)
        ours = best(lambda b=bins: bin_index(values, b), repeats)
        search = best(lambda b=bins: np.searchsorted(b.edges[1:-1], values, "right"), repeats)
        print(
            f"bin_index of 10^7 values, bounds (0, {hi:g}), B=1024 (arithmetic exact: {exact}): "
            f"{ours:.3f} s; np.searchsorted over the edges {search:.3f} s"
        )


def _cells_line(groups: np.ndarray, repeats: int) -> None:
    """The grouped counting kernel (``engines.grouped.count_grouped_codes``: bins and key codes
    to the key × bin counts) against ``np.bincount`` of the precomputed cells ``code·B + bin``."""
    from treedp.engines.grouped import count_grouped_codes

    bins = np.random.default_rng(3).integers(0, 1024, groups.size)
    keys = tuple(range(int(groups.max()) + 1))
    cells = groups * 1024 + bins
    ours = best(lambda: count_grouped_codes(bins, groups, keys, 1024), repeats)
    plain = best(lambda: np.bincount(cells, minlength=len(keys) * 1024), repeats)
    print(
        f"count_grouped_codes of 10^7 rows, {len(keys)} keys, B=1024: {ours:.3f} s; "
        f"np.bincount of the precomputed cells {plain:.3f} s"
    )


def _release(data: Any) -> Any:
    import treedp

    gr = treedp.release_grouped(
        data,
        column="value",
        by="group",
        keys=list(range(GROUPS)),
        privacy_unit="person",
        max_groups=2,
        max_contributions_per_group=1,
        epsilon=1.0,
        bounds=(0, 100),
        bins="integers",
    )
    return gr.quantile(list(QUANTILES))


def part_engines(repeats: int, engines: list[str]) -> None:
    data = synthetic()
    if "numpy" in engines:
        took = best(lambda: _release(data), repeats)
        print(f"engine numpy (dict of arrays), 10^6 rows: {took:.2f} s")
    if "files" in engines:
        import pyarrow as pa
        import pyarrow.parquet as pq

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "synthetic.parquet")
            pq.write_table(pa.table(data), path)
            print(
                f"engine files (Parquet), 10^6 rows: {best(lambda: _release(path), repeats):.2f} s"
            )
    if "spark" in engines:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.memory", "2g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        import pandas as pd

        frame = spark.createDataFrame(pd.DataFrame(data)).cache()
        frame.count()
        print(f"engine Spark local[2], 10^6 rows: {best(lambda: _release(frame), repeats):.2f} s")
        spark.stop()
    if "dask" in engines:
        import dask.dataframe as dd
        import pandas as pd
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = Client(cluster)
        frame = dd.from_pandas(pd.DataFrame(data), npartitions=4).persist()
        print(
            f"engine Dask LocalCluster(2 processes), 10^6 rows: "
            f"{best(lambda: _release(frame), repeats):.2f} s"
        )
        client.close()
        cluster.close()


# ---------------------------------------------------------------------- PipelineDP
def part_pipelinedp(repeats: int) -> None:
    import pipeline_dp

    data = synthetic()
    rows = list(
        zip(data["person"].tolist(), data["group"].tolist(), data["value"].tolist(), strict=True)
    )

    def run() -> Any:
        backend = pipeline_dp.LocalBackend()
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
        engine = pipeline_dp.DPEngine(accountant, backend)
        params = pipeline_dp.AggregateParams(
            metrics=[pipeline_dp.Metrics.PERCENTILE(int(q * 100)) for q in QUANTILES],
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            max_partitions_contributed=2,
            max_contributions_per_partition=1,
            min_value=0,
            max_value=100,
        )
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0],
            partition_extractor=lambda r: r[1],
            value_extractor=lambda r: r[2],
        )
        result = engine.aggregate(rows, params, extractors, public_partitions=list(range(GROUPS)))
        accountant.compute_budgets()
        return list(result)

    print(
        f"PipelineDP {pipeline_dp.__version__ if hasattr(pipeline_dp, '__version__') else ''} "
        f"LocalBackend, 10^6 rows, 5 percentiles per group: "
        f"{best(run, repeats, warm=False):.1f} s"
    )


# ---------------------------------------------------------------------- Tumult Analytics
def part_tumult(repeats: int) -> None:
    """Tumult Analytics on Spark ``local[2]``: the same job, one quantile query per level
    (ε/5 each), ids with at most 2 groups and 1 row per group."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pandas as pd
    from pyspark.sql import SparkSession
    from tmlt.analytics.constraints import MaxGroupsPerID, MaxRowsPerGroupPerID
    from tmlt.analytics.keyset import KeySet
    from tmlt.analytics.privacy_budget import PureDPBudget
    from tmlt.analytics.protected_change import AddRowsWithID
    from tmlt.analytics.query_builder import QueryBuilder
    from tmlt.analytics.session import Session

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    frame = spark.createDataFrame(pd.DataFrame(synthetic())).cache()
    frame.count()
    keys = KeySet.from_dict({"group": list(range(GROUPS))})

    def run() -> Any:
        session = Session.from_dataframe(
            privacy_budget=PureDPBudget(1.0),
            source_id="data",
            dataframe=frame,
            protected_change=AddRowsWithID(id_column="person"),
        )
        out = []
        for q in QUANTILES:
            query = (
                QueryBuilder("data")
                .enforce(MaxGroupsPerID("group", 2))
                .enforce(MaxRowsPerGroupPerID("group", 1))
                .groupby(keys)
                .quantile("value", q, 0, 100)
            )
            out.append(session.evaluate(query, PureDPBudget(1.0 / len(QUANTILES))).collect())
        return out

    print(
        f"Tumult Analytics on Spark local[2], 10^6 rows, 5 quantiles per group: "
        f"{best(run, repeats, warm=False):.1f} s"
    )
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--part",
        nargs="+",
        default=["memory", "engines"],
        choices=["memory", "keys", "engines", "pipelinedp", "tumult"],
    )
    parser.add_argument("--engines", nargs="+", default=["numpy", "files", "spark", "dask"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"load: {load()}")
    if "memory" in args.part:
        part_memory(args.repeats)
    if "keys" in args.part:
        part_keys(args.repeats)
    if "engines" in args.part:
        part_engines(args.repeats, args.engines)
    if "pipelinedp" in args.part:
        part_pipelinedp(max(1, args.repeats - 2))
    if "tumult" in args.part:
        part_tumult(max(1, args.repeats - 2))
    print(f"load: {load()}")


if __name__ == "__main__":
    main()
