"""Per-person grouped release at agency scale (issue 29, item 1), against baselines in one process.

The data imitate NYC flights 2013 resampled (the issue's case): ``tailnum``-like string person
ids (4,000 planes, rows per plane lognormally skewed), 16 carriers as keys (each plane flies for
one carrier), an integer value (a delay in minutes, 0–1023) counted into ``bins="integers"``
over ``(0, 1024)``; ε = 1, ``max_contributions=50``.

Cases, each run in this process (interleaved rounds, the best and the median reported):

* ``pandas`` — the issue's baseline: ``df.sample(frac=1).groupby(unit).head(50)`` (a uniform
  sample of at most 50 rows per person; ``groupby(unit).sample(n=50)`` refuses persons with
  fewer rows) then a per-key ``value_counts`` of the value;
* ``ungrouped`` — ``treedp.release_cdf`` of the same column, no grouping, no unit;
* ``ids`` — the least any per-person grouped release must do besides counting: tell the
  persons and the keys apart (``pd.factorize`` of the ``tailnum`` and ``carrier`` columns;
  Arrow's dictionary encoding for these ``string[pyarrow]`` columns), no sampling, no noise:
  ``ids / ungrouped`` above 3 shows that the issue's "at most 3× the ungrouped release" cannot
  be met by any implementation that reads the ids;
* ``treedp`` — ``treedp.release_grouped(..., by="carrier", keys=16 carriers,
  privacy_unit="tailnum", max_contributions=50)`` on a pandas DataFrame;
* ``file`` (with ``--file``) — the same grouped release from a Parquet file of the rows,
  written to a temporary directory, in a fresh child process; its peak RSS above the
  interpreter (``ru_maxrss`` after the imports vs at the end).

Usage::

    PYTHONPATH=src python benchmarks/per_person.py --rows 1000000 10000000 --rounds 5 --file
    PYTHONPATH=src python benchmarks/per_person.py --rows 1000000 --profile  # cProfile, top 25
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import treedp

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

CARRIERS = [f"C{i:02d}" for i in range(16)]
PLANES = 4000
BOUNDS = (0, 1024)


def make_frame(rows: int, seed: int = 0) -> Any:
    """The flights-like table (pandas): tailnum (str), carrier (str), delay (int64)."""
    import pandas as pd

    fixed = np.random.default_rng(0)  # the planes and their carriers: the same in every chunk
    weight = fixed.lognormal(0.0, 1.0, PLANES)
    carrier_of = np.array(CARRIERS, dtype=object)[fixed.integers(0, 16, PLANES)]
    rng = np.random.default_rng(seed)
    plane = rng.choice(PLANES, size=rows, p=weight / weight.sum())
    names = np.array([f"N{i:05d}" for i in range(PLANES)], dtype=object)
    delay = np.minimum(rng.geometric(1 / 40, rows) - 1, 1023).astype(np.int64)
    return pd.DataFrame(
        {
            "tailnum": pd.array(names[plane], dtype="string[pyarrow]"),
            "carrier": pd.array(carrier_of[plane], dtype="string[pyarrow]"),
            "delay": delay,
        }
    )


def pandas_baseline(df: Any) -> Any:
    """At most 50 uniformly chosen rows per person, then the value's counts per key."""
    kept = df.sample(frac=1, random_state=1).groupby("tailnum", sort=False).head(50)
    return kept.groupby("carrier")["delay"].value_counts()


def ids_floor(df: Any) -> Any:
    """The persons and the keys as integer codes: no release can bound persons without this."""
    import pandas as pd

    return pd.factorize(df["tailnum"])[0], pd.factorize(df["carrier"])[0]


def ungrouped(df: Any) -> Any:
    return treedp.release_cdf(df["delay"].to_numpy(), bounds=BOUNDS, bins="integers", epsilon=1.0)


def grouped(data: Any) -> Any:
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


def timed(fn: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one call (CPU time is steadier on a shared machine)."""
    start, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - cpu


def hwm_mb() -> float:
    """This process's peak RSS (``VmHWM``; ``ru_maxrss`` would carry the parent's peak over
    ``fork`` + ``exec``), in MB."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_file_child(path: str) -> None:
    """In a fresh process: the grouped release from ``path``; prints wall s and RSS MB."""
    import pandas  # noqa: F401  (the parent's imports, so that 'base' holds them)
    import pyarrow.parquet  # noqa: F401

    base = hwm_mb()
    start = time.perf_counter()
    cpu0 = time.process_time()
    grouped(path)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    peak = hwm_mb()
    print(f"{wall:.3f} {cpu:.3f} {base:.1f} {peak:.1f}")


def file_case(rows: int, rounds: int) -> list[tuple[float, float, float, float]]:
    """The grouped release from a Parquet file of ``rows`` rows (written in chunks of at most
    10^7 rows to a temporary directory), each round in a fresh child process."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "flights.parquet")
        writer = None
        for i, start in enumerate(range(0, rows, 10**7)):
            table = pa.Table.from_pandas(make_frame(min(10**7, rows - start), seed=i + 1))
            table = table.select(["tailnum", "carrier", "delay"])
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema)
            writer.write_table(table)
        assert writer is not None
        writer.close()
        env = dict(os.environ)
        for _ in range(rounds):
            res = subprocess.run(
                [sys.executable, __file__, "--child", path],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            wall, cpu, base, peak = map(float, res.stdout.split()[-4:])
            out.append((wall, cpu, base, peak))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="*", default=[10**6, 10**7])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--file", action="store_true", help="also the Parquet path at each size")
    ap.add_argument("--file-rows", type=int, nargs="*", default=[], help="Parquet sizes only")
    ap.add_argument("--profile", action="store_true", help="cProfile the grouped release")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_file_child(args.child)
        return
    print(machine())
    print(f"load average at start: {os.getloadavg()}")
    for rows in args.rows:
        df = make_frame(rows)
        if args.profile:
            grouped(df)  # warm-up: imports and the plan cache
            prof = cProfile.Profile()
            prof.runcall(grouped, df)
            pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
            pstats.Stats(prof).sort_stats("tottime").print_stats(15)
            continue
        cases: dict[str, Callable[[], Any]] = {
            "pandas": lambda df=df: pandas_baseline(df),
            "ungrouped": lambda df=df: ungrouped(df),
            "ids": lambda df=df: ids_floor(df),
            "treedp": lambda df=df: grouped(df),
        }
        grouped(df)  # warm-up: imports and the plan cache
        times: dict[str, list[float]] = {k: [] for k in cases}
        cpus: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(args.rounds):
            for name, fn in cases.items():
                wall, cpu = timed(fn)
                times[name].append(wall)
                cpus[name].append(cpu)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"\nrows={rows:,} (load average {os.getloadavg()[0]:.1f})")
        for name, v in times.items():
            print(
                f"  {name:10s} median {med[name]:.3f} s  best {min(v):.3f} s  "
                f"(CPU median {statistics.median(cpus[name]):.3f} s)"
            )
        best = {k: min(v) for k, v in times.items()}
        print(
            f"  treedp / pandas {med['treedp'] / med['pandas']:.2f} (medians), "
            f"{best['treedp'] / best['pandas']:.2f} (bests); "
            f"treedp / ungrouped {med['treedp'] / med['ungrouped']:.2f}; "
            f"ids alone / ungrouped {med['ids'] / med['ungrouped']:.2f} (medians)"
        )
        if args.file:
            report_file(rows, args.rounds)
    for rows in args.file_rows:
        report_file(rows, args.rounds)


def report_file(rows: int, rounds: int) -> None:
    res = file_case(rows, rounds)
    walls = [r[0] for r in res]
    print(
        f"  file of {rows:,} rows (load average {os.getloadavg()[0]:.1f}): wall median "
        f"{statistics.median(walls):.3f} s best {min(walls):.3f} s, "
        f"CPU {statistics.median(r[1] for r in res):.3f} s, interpreter+imports "
        f"{max(r[2] for r in res):.0f} MB, peak {max(r[3] for r in res):.0f} MB, "
        f"above {max(r[3] - r[2] for r in res):.0f} MB"
    )


if __name__ == "__main__":
    main()
