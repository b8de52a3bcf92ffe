"""The redesign's end-to-end speed targets, with the time split by stage.

1. A CLI release (``treedp release``, a fresh process: import, read, plan, count, noise,
   estimate, save) of 10^6 values from a Parquet file at B = 2^20: target under 1 s wall.
2. A full release in Python at B = 2^24 (bins, planning, counting, exact noise for every node,
   efficient estimate, consistent CDF): target under 2 s.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import treedp
from _common import machine
from treedp.domain import make_bins
from treedp.planning import plan

N = 1_000_000
REPEATS = 3


def cli_release(path: Path, out: Path) -> float:
    treedp_cli = Path(sys.executable).with_name("treedp")
    cmd = [str(treedp_cli), "release", str(path), "--column", "x", "--bounds", "0", "2e6"]
    cmd += ["--bins", str(2**20), "--epsilon", "1", "--out", str(out)]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def stages(x: np.ndarray, n_bins: int) -> dict[str, float]:
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    bins = make_bins(bounds=(0.0, 2e6), bins=n_bins)
    times["bins"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    chosen = plan(n_bins, epsilon=1.0)
    times["plan"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    counts, _dropped = bins.count(x)
    times["count"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    release = treedp.release_counts(counts, bins=bins, epsilon=1.0, plan=chosen)
    times["noise+release"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    release.cdf(1e5)  # the first query builds the efficient estimate and the consistent CDF
    times["estimate+consistent"] = time.perf_counter() - t0
    times["total"] = sum(times.values())
    return times


def main() -> None:
    print(f"# end-to-end targets, {N:,} lognormal values, epsilon=1, OS randomness ({machine()})")
    x = np.random.default_rng(0).lognormal(10, 1, size=N)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.parquet"
        pq.write_table(pa.table({"x": x}), path)
        cli_release(path, Path(tmp) / "warm.tdp")
        walls = [cli_release(path, Path(tmp) / "r.tdp") for _ in range(REPEATS)]
    print(f"CLI release at B=2^20: best {min(walls):.2f} s wall of {REPEATS} (target < 1 s)")
    for n_bins in (2**20, 2**24):
        runs = [stages(x, n_bins) for _ in range(REPEATS)]
        best = min(runs, key=lambda r: r["total"])
        parts = ", ".join(f"{k} {v:.3f}" for k, v in best.items() if k != "total")
        print(f"full release at B=2^{n_bins.bit_length() - 1}: {best['total']:.2f} s ({parts})")


if __name__ == "__main__":
    main()
