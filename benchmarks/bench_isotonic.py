"""The consistent CDF's isotonic regression: treedp's ``monotone_l2`` against a direct call of
scipy's public ``scipy.optimize.isotonic_regression`` (the baseline, same process), and the
one-off cost of the first consistent release in a fresh interpreter (imports included).

Run: ``PYTHONPATH=src python benchmarks/bench_isotonic.py [OTHER_SRC]``; with ``OTHER_SRC`` (the
``src`` folder of another checkout, for example the commit before a change) the fresh-interpreter
timing also runs that source, interleaved, as a baseline under the same load.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
from scipy.optimize import isotonic_regression

from _common import best_of, machine
from treedp.estimation.consistency import monotone_l2

FIRST_RELEASE = (
    "import time; t = time.perf_counter()\n"
    "import numpy as np, treedp\n"
    "x = np.random.default_rng(0).integers(0, 100, 10_000)\n"
    "treedp.release_cdf(x, bounds=(0, 99), bins='integers', epsilon=1.0).cdf(50)\n"
    "print(time.perf_counter() - t)\n"
)


def first_release_seconds(paths: list[str], repeats: int = 5) -> list[float]:
    """Best wall-clock time of import + one consistent release + one query, each run in a fresh
    interpreter, for each source folder (runs interleaved)."""
    times: list[list[float]] = [[] for _ in paths]
    for _ in range(repeats):
        for path, found in zip(paths, times, strict=True):
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([path, *sys.path])}
            out = subprocess.run(
                [sys.executable, "-c", FIRST_RELEASE],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            found.append(float(out.stdout))
    return [min(found) for found in times]


def main() -> None:
    print(f"# isotonic regression of a noisy CDF ({machine()}, load {os.getloadavg()[0]:.1f})")
    print(f"{'bins':>10} {'monotone_l2 ms':>15} {'scipy public ms':>16} {'weighted ms':>12}")
    rng = np.random.default_rng(1)
    for n_bins in (2**10, 2**16, 2**20, 2**22):
        noisy = rng.poisson(3, n_bins) + rng.laplace(0, 6, n_bins)  # a noisy CDF, for timing
        prefix = np.concatenate([[0.0], np.cumsum(noisy)])
        weights = rng.uniform(0.5, 2.0, n_bins - 1)
        t_ours = best_of(lambda p=prefix: monotone_l2(p), 5)
        t_scipy = best_of(lambda p=prefix: isotonic_regression(p[1:-1]), 5)
        t_weighted = best_of(lambda p=prefix, w=weights: monotone_l2(p, w), 5)
        print(
            f"{n_bins:>10} {t_ours * 1e3:>15.2f} {t_scipy * 1e3:>16.2f} {t_weighted * 1e3:>12.2f}"
        )
    start = time.perf_counter()
    here = os.path.dirname(os.path.dirname(os.path.abspath(monotone_l2.__code__.co_filename)))
    paths = [os.path.dirname(here), *sys.argv[1:]]
    for path, first in zip(paths, first_release_seconds(paths), strict=True):
        print(
            f"# import treedp + first consistent release and query (10^4 values, 100 bins), "
            f"fresh interpreter, best of 5, {path}: {first:.3f} s"
        )
    print(f"# (measured in {time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
