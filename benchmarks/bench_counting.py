"""Counting values into bins: millions of values per second, in memory."""

from __future__ import annotations

import numpy as np

from _common import best_of, machine
from treedp import make_bins

N = 20_000_000


def main() -> None:
    x = np.random.default_rng(0).random(N)
    print(f"# counting {N:,} float64 values into bins ({machine()})")
    print(f"{'bins':>9} {'kind':>12} {'M values/s':>11}")
    for n_bins in (2**8, 2**16, 2**20):
        equal = make_bins(bounds=(0.0, 1.0), bins=n_bins)
        explicit = make_bins(edges=equal.edges)
        for kind, bins in (("equal-width", equal), ("edges", explicit)):
            seconds = best_of(lambda b=bins: b.count(x), 3)
            print(f"{n_bins:>9} {kind:>12} {N / seconds / 1e6:>11.0f}")


if __name__ == "__main__":
    main()
