"""Private bounds of datetime columns (the day grid) against the true range given free.

Run: ``PYTHONPATH=src python benchmarks/datetime_bounds.py [--reps R]``. Prints a Markdown
table (docs/private_bounds.md holds one run). Data: departure times of one year (uniform over
2013, seconds), the same over one day, and a year with a long tail (exponential gaps of a mean
of 30 days after 2013). For each ``n`` and ``ε`` (the whole release; 10% finds the bounds),
``R`` seeded runs of ``release_cdf(times, bounds="private", bins=1024)``; metrics, averaged:

* clamped: the share of records outside the bounds found (the release clamps them);
* width: the width of the bounds over the data's true range (1 is the oracle ``(min, max)``);
* median rank error of the release's median against the oracle release with the true range
  at the full ε (same seed), in records;
* time of the bounds step and release against numpy's ``min``/``max`` of the same column
  (the oracle's cost, not private), best of 3.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from benchmarks._common import machine

import treedp

START = np.datetime64("2013-01-01T00:00:00", "s")


def _data(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "one year":
        secs = rng.integers(0, 365 * 86_400, n)
    elif kind == "one day":
        secs = rng.integers(0, 86_400, n)
    else:  # a year and a tail
        secs = rng.integers(0, 365 * 86_400, n)
        tail = rng.random(n) < 0.01
        secs[tail] = 365 * 86_400 + rng.exponential(30 * 86_400, tail.sum()).astype(np.int64)
    return START + secs.astype("timedelta64[s]")


def _rank_error(x: np.ndarray, value: np.datetime64) -> float:
    s = np.sort(x)
    lo = np.searchsorted(s, value, side="left")
    hi = np.searchsorted(s, value, side="right")
    target = 0.5 * x.size
    return 0.0 if lo <= target <= hi else float(min(abs(lo - target), abs(hi - target)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    print(machine())
    print("| data | n | ε | clamped | width / range | median rank error (oracle) | time |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    warnings.simplefilter("ignore", treedp.BoundsWarning)
    for kind in ("one year", "one day", "year + tail"):
        for n in (10**3, 10**4, 10**6):
            x = _data(kind, n, np.random.default_rng(n))
            true = (x.min(), x.max() + np.timedelta64(1, "s"))
            for eps in (0.1, 1.0):
                clamped, width, err, oracle = [], [], [], []
                for rep in range(args.reps):
                    rel = treedp.release_cdf(
                        x, epsilon=eps, bounds="private", bins=1024,
                        rng=treedp.InsecureSeededSource(rep),
                    )  # fmt: skip
                    lo, hi = rel.bins.edges_as_values()[[0, -1]]
                    clamped.append(float(np.mean((x < lo) | (x > hi))))
                    width.append(float((hi - lo) / (true[1] - true[0])))
                    err.append(_rank_error(x, rel.quantile(0.5)))
                    ref = treedp.release_cdf(
                        x, epsilon=eps, bounds=true, bins=1024,
                        rng=treedp.InsecureSeededSource(rep),
                    )  # fmt: skip
                    oracle.append(_rank_error(x, ref.quantile(0.5)))
                t0 = time.perf_counter()
                for _ in range(3):
                    treedp.release_cdf(x, epsilon=eps, bounds="private", bins=1024)
                t_rel = (time.perf_counter() - t0) / 3
                t0 = time.perf_counter()
                for _ in range(3):
                    x.min(), x.max()
                t_np = (time.perf_counter() - t0) / 3
                print(
                    f"| {kind} | {n:,} | {eps:g} | {100 * np.mean(clamped):.2f}% | "
                    f"{np.mean(width):.2f} | {np.mean(err):.1f} ({np.mean(oracle):.1f}) | "
                    f"{1000 * t_rel:.0f} ms (numpy min/max {1000 * t_np:.1f} ms) |"
                )


if __name__ == "__main__":
    main()
