"""Counting values into bins: millions of values per second, in memory, on one and two threads.

Each rate is the best of 3 (wall clock); "1 thread, CPU" divides by the process CPU time
instead, which a shared machine inflates much less than the wall time (two threads can at best
double it). The load average is printed with every line.
Run: ``PYTHONPATH=src python benchmarks/bench_counting.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from _common import best_of, machine
from treedp import make_bins
from treedp.engines.local import LocalEngine, _arithmetic_is_exact

N = 20_000_000


def best_cpu(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best process CPU time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    x = np.random.default_rng(0).random(N)
    y = x * 10.0 - 5.0
    engines = {1: LocalEngine(workers=1), 2: LocalEngine(workers=2)}
    print(f"# counting {N:,} float64 values into bins ({machine()})")
    print(
        f"{'bins':>9} {'kind':>28} {'1 thread, M/s':>14} {'2 threads, M/s':>15} "
        f"{'1 thread, CPU M/s':>18} load"
    )
    for n_bins in (2**8, 2**16, 2**20):
        unit = make_bins(bounds=(0.0, 1.0), bins=n_bins)
        shifted = make_bins(bounds=(-5.0, 5.0), bins=n_bins)
        explicit = make_bins(edges=unit.edges)
        cases = (
            ("equal-width (0, 1)", unit, x),
            ("equal-width (-5, 5)", shifted, y),
            ("explicit edges", explicit, x),
        )
        for kind, bins, data in cases:
            if bins.equal_width:
                exact = _arithmetic_is_exact(bins.edges, bins._inv_width)
                kind += ", exact" if exact else ", corrected"
            rates = [
                N / best_of(lambda b=bins, d=data, e=engines[w]: e.count(d, b), 3) / 1e6
                for w in (1, 2)
            ]
            cpu = N / best_cpu(lambda b=bins, d=data: engines[1].count(d, b)) / 1e6
            print(
                f"{n_bins:>9} {kind:>28} {rates[0]:>14.0f} {rates[1]:>15.0f} {cpu:>18.0f} "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
