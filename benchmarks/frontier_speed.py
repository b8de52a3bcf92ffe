"""Issue 33, item 7: release to first answer at 2^24 bins, and default counting at 4096 bins.

Run from the repository root::

    PYTHONPATH=src python benchmarks/frontier_speed.py

1. ``release_counts`` of the counts of 10^6 lognormal values over 2^24 equal-width bins at
   ε = 1 (the plan made beforehand and passed, as ``bench_targets.py`` does), then the first
   answer (``cdf``, which computes the efficient estimate and the consistent CDF), wall and CPU
   seconds each; the baseline in the same run is plain numpy's cumulative sum of the same
   counts. Goal: release + first answer at most 2 s on 2 cores.
2. The default in-memory counting (``LocalEngine()``: two threads, ``kernel="auto"``) of 2·10^7
   uniform values into 4096 equal-width bins, best of 3, in M values/s; the baseline in the same
   run is ``np.bincount`` of the precomputed bin indices (one thread). Goal: at least 400 M/s.

The machine is shared: the load average is printed with every line.
"""

from __future__ import annotations

import os
import time

import numpy as np

import treedp
from _common import machine
from treedp.domain import make_bins
from treedp.engines.local import LocalEngine
from treedp.planning import plan


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def release_to_first_answer(n_bins: int = 2**24) -> None:
    x = np.random.default_rng(0).lognormal(10, 1, size=1_000_000)
    bins = make_bins(bounds=(0.0, 2e6), bins=n_bins)
    chosen = plan(n_bins, epsilon=1.0)
    counts, _ = bins.count(x)
    start = time.perf_counter()
    np.cumsum(counts)
    baseline = time.perf_counter() - start
    for _ in range(2):
        w0, c0 = time.perf_counter(), time.process_time()
        rel = treedp.release_counts(counts, bins=bins, epsilon=1.0, plan=chosen)
        w1, c1 = time.perf_counter(), time.process_time()
        rel.cdf(1e5)
        w2, c2 = time.perf_counter(), time.process_time()
        print(
            f"2^{n_bins.bit_length() - 1} bins ({rel.mechanism.name}): release {w1 - w0:.2f} s "
            f"wall / {c1 - c0:.2f} s CPU, first answer {w2 - w1:.2f} / {c2 - c1:.2f}, total "
            f"{w2 - w0:.2f} s wall (goal 2 s); numpy cumsum {baseline:.3f} s ({_load()})",
            flush=True,
        )


def counting(n_bins: int = 4096, size: int = 2 * 10**7) -> None:
    x = np.random.default_rng(1).random(size)
    bins = make_bins(bounds=(0.0, 1.0), bins=n_bins)
    engine = LocalEngine()
    idx = np.minimum((x * n_bins).astype(np.intp), n_bins - 1)
    engine.count(x, bins)  # warm-up (the exactness proof is cached per edges array)
    best = min(_timed(lambda: engine.count(x, bins)) for _ in range(3))
    base = min(_timed(lambda: np.bincount(idx, minlength=n_bins)) for _ in range(3))
    print(
        f"counting {size:,} values into {n_bins} bins: default {size / best / 1e6:.0f} M/s "
        f"(goal 400), np.bincount of precomputed indices {size / base / 1e6:.0f} M/s ({_load()})"
    )


def _timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    print(f"# {machine()}")
    counting()
    release_to_first_answer()


if __name__ == "__main__":
    main()
