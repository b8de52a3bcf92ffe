"""Counting values into bins: millions of values per second, in memory, on one and two threads.

Each rate is the best of 3 (wall clock); "1 thread, CPU" divides by the process CPU time
instead, which a shared machine inflates much less than the wall time (two threads can at best
double it). The load average is printed with every line.
A second table compares, in the same process and interleaved (so a shared machine slows both
alike), the float64 equal-width kernel with the previous one (a NaN pass over the whole part,
then clip, cast and ``np.bincount`` per chunk; still the kernel for other dtypes): the best
process CPU time over several rounds, one thread, and the wall time on two threads.
Run: ``PYTHONPATH=src python benchmarks/bench_counting.py``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from _common import best_of, machine
from treedp import make_bins
from treedp.domain import Bins
from treedp.engines.local import LocalEngine, _arithmetic_is_exact, _count_equal_width

N = 20_000_000


def best_cpu(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best process CPU time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def previous_kernel(values: np.ndarray, bins: Bins) -> np.ndarray:
    """The float64 path before the dedicated kernel: NaN test of the whole part, then the
    generic equal-width kernel (the same counts)."""
    np.count_nonzero(np.isnan(values))
    return _count_equal_width(values, bins.edges, bins._inv_width)


def on_two_threads(fn: Callable[[np.ndarray], object], values: np.ndarray) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(fn, np.array_split(values, 2)))


def compare_kernels(x: np.ndarray, y: np.ndarray, rounds: int = 7) -> None:
    """Previous vs current kernel, interleaved: CPU M/s on one thread, wall M/s on two."""
    print(f"# previous vs current float64 kernel, best of {rounds} interleaved rounds")
    print(
        f"{'bins':>9} {'bounds':>9} {'1 thread CPU M/s, before/now':>30} "
        f"{'2 threads wall M/s, before/now':>31} load"
    )
    one = LocalEngine(workers=1)
    for n_bins in (2**8, 2**16, 2**20):
        for bounds, data in (((0.0, 1.0), x), ((-5.0, 5.0), y)):
            bins = make_bins(bounds=bounds, bins=n_bins)
            kernels = {
                "before": lambda v, b=bins: previous_kernel(v, b),
                "now": lambda v, b=bins: one.count(v, b),
            }
            assert np.array_equal(kernels["before"](data), one.count(data, bins).counts)
            cpu = dict.fromkeys(kernels, np.inf)
            wall = dict.fromkeys(kernels, np.inf)
            for _ in range(rounds):
                for name, fn in kernels.items():
                    start = time.process_time()
                    fn(data)
                    cpu[name] = min(cpu[name], time.process_time() - start)
                    start = time.perf_counter()
                    on_two_threads(fn, data)
                    wall[name] = min(wall[name], time.perf_counter() - start)
            c = "/".join(f"{data.size / cpu[k] / 1e6:.0f}" for k in kernels)
            w = "/".join(f"{data.size / wall[k] / 1e6:.0f}" for k in kernels)
            print(f"{n_bins:>9} {bounds!s:>9} {c:>30} {w:>31} {os.getloadavg()[0]:.1f}", flush=True)


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
    compare_kernels(x, y)


if __name__ == "__main__":
    main()
