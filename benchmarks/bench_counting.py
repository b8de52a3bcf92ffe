"""Counting values into bins: millions of values per second, in memory, on one and two threads.

Each rate is the best of 3 (wall clock); "1 thread, CPU" divides by the process CPU time
instead, which a shared machine inflates much less than the wall time (two threads can at best
double it). The load average is printed with every line. Equal-width rows are timed with both
kernels (``LocalEngine(kernel="numpy" | "numba")``), one right after the other so a shared
machine slows both alike; explicit edges are always counted by numpy. When numba (the extra
``treedp[fast]``) is installed, the script first reports, each in a fresh interpreter, the
import of numba and the kernel's load from numba's on-disk cache, and its cold compile
(an empty ``NUMBA_CACHE_DIR``).
Run: ``PYTHONPATH=src python benchmarks/bench_counting.py`` (``--kernel numpy`` or ``numba``
for one kernel only).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

from _common import best_of, machine
from treedp import make_bins
from treedp.engines.edge_exactness import _arithmetic_is_exact
from treedp.engines.local import LocalEngine

N = 20_000_000

_STARTUP = """
import time
start = time.perf_counter()
import numba
imported = time.perf_counter()
from treedp.engines import _kernel_numba
_kernel_numba.load()
print(imported - start, time.perf_counter() - imported)
"""


def best_cpu(fn: Callable[[], object], repeats: int = 3) -> float:
    """Best process CPU time of ``repeats`` calls, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def startup_costs() -> float:
    """numba's import and the kernel's load (cached) and compile (cold), in fresh processes;
    returns the import plus the cached load, in seconds."""
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)

    def run(extra: dict[str, str]) -> tuple[float, float]:
        out = subprocess.run(
            [sys.executable, "-c", _STARTUP],
            env={**env, **extra},
            check=True,
            capture_output=True,
            text=True,
        )
        imported, loaded = out.stdout.split()
        return float(imported), float(loaded)

    run({})  # writes the cache if it is not there yet
    warm = min(run({}) for _ in range(3))
    with tempfile.TemporaryDirectory() as empty:
        cold = run({"NUMBA_CACHE_DIR": empty})
    print(
        f"# numba import {warm[0]:.2f} s; kernel from cache {warm[1]:.2f} s (best of 3 fresh "
        f"processes); cold compile {cold[1]:.2f} s; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    return warm[0] + warm[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=("numpy", "numba", "both"), default="both")
    args = parser.parse_args()
    have_numba = importlib.util.find_spec("numba") is not None
    kernels = ["numpy", "numba"] if args.kernel == "both" else [args.kernel]
    if not have_numba and "numba" in kernels:
        print("# numba is not installed (pip install 'treedp[fast]'): numpy kernel only")
        kernels.remove("numba")
    if not kernels:
        return
    x = np.random.default_rng(0).random(N)
    y = x * 10.0 - 5.0
    print(f"# counting {N:,} float64 values into bins ({machine()})")
    startup = startup_costs() if "numba" in kernels else None
    two_threads: dict[tuple[int, str, str], float] = {}
    engines = {
        (k, w): LocalEngine(workers=w, kernel=k)  # type: ignore[arg-type]
        for k in kernels
        for w in (1, 2)
    }
    print(
        f"{'bins':>9} {'kind':>28} {'kernel':>6} {'1 thread, M/s':>14} {'2 threads, M/s':>15} "
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
            reference = None
            for kernel in kernels if bins.equal_width else ["numpy"]:
                got = engines[kernel, 1].count(data, bins)
                assert reference is None or got == reference, "kernels disagree"
                reference = got
                rates = [
                    N / best_of(lambda b=bins, d=data, e=engines[kernel, w]: e.count(d, b), 3) / 1e6
                    for w in (1, 2)
                ]
                one = engines[kernel, 1]
                cpu = N / best_cpu(lambda b=bins, d=data, e=one: e.count(d, b)) / 1e6
                two_threads[n_bins, kind, kernel] = rates[1]
                print(
                    f"{n_bins:>9} {kind:>28} {kernel:>6} {rates[0]:>14.0f} {rates[1]:>15.0f} "
                    f"{cpu:>18.0f} {os.getloadavg()[0]:.1f}",
                    flush=True,
                )
    if startup is not None:
        # the column size from which a fresh process's first count (numba import + cached load
        # + count) takes no longer than numpy's, on two threads: what AUTO_MIN is chosen from
        for (n_bins, kind, kernel), rate in two_threads.items():
            if kernel != "numba":
                continue
            gain = (1 / two_threads[n_bins, kind, "numpy"] - 1 / rate) / 1e6  # s per value
            even = f"{startup / gain:.1e} values" if gain > 0 else "never"
            print(f"# break-even, 2 threads, {n_bins} bins, {kind}: {even}")


if __name__ == "__main__":
    main()
