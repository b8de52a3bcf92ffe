"""Counting values into bins: millions of values per second, in memory, on one and two threads."""

from __future__ import annotations

import numpy as np

from _common import best_of, machine
from treedp import make_bins
from treedp.engines.local import LocalEngine, _arithmetic_is_exact

N = 20_000_000


def main() -> None:
    x = np.random.default_rng(0).random(N)
    y = x * 10.0 - 5.0
    engines = {1: LocalEngine(workers=1), 2: LocalEngine(workers=2)}
    print(f"# counting {N:,} float64 values into bins ({machine()})")
    print(f"{'bins':>9} {'kind':>28} {'1 thread, M/s':>14} {'2 threads, M/s':>15}")
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
            print(f"{n_bins:>9} {kind:>28} {rates[0]:>14.0f} {rates[1]:>15.0f}", flush=True)


if __name__ == "__main__":
    main()
