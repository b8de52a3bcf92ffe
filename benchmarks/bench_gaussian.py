"""Exact discrete Gaussian draws per second, OS randomness (default) and seeded.

Each sigma² of the small range is paired with the discrete Laplace sampler at the proposal scale
t = floor(sigma)+1 that Algorithm 3 of CKS20 uses, measured in the same run (so under the same
machine load). The large range (sigma² above about 1.3e8: the stepped proposal of
treedp.noise.discrete_gaussian) has no Laplace column ("-").

Run from the repository root: ``PYTHONPATH=src:benchmarks python benchmarks/bench_gaussian.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from _common import best_of, machine
from treedp.noise import (
    InsecureSeededSource,
    SystemRandomSource,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from treedp.noise.discrete_gaussian import _plan

N = 2_000_000


def main() -> None:
    print(f"# exact discrete Gaussian sampler ({machine()})")
    print(f"{'sigma2':>18} {'source':>8} {'gauss M/s':>10} {'laplace(t) M/s':>15}")
    for sigma2 in (
        Fraction(1, 4),
        Fraction(1),
        Fraction(7, 3),
        Fraction(100),
        Fraction(10**4),
        Fraction(10**6),
        Fraction(10**8),
        Fraction(2**27 + 1),
        Fraction(10**10),
        Fraction(2**40 + 1, 3),
        Fraction(2**53),
    ):
        t = Fraction(math.isqrt(sigma2.numerator // sigma2.denominator) + 1)
        large = _plan(sigma2).large
        for name, source in (("os", SystemRandomSource()), ("seeded", InsecureSeededSource(0))):
            g = best_of(lambda s=sigma2, src=source: sample_discrete_gaussian(s, N, src), 3)
            if large:
                lap_col = "-"
            else:
                lap = best_of(lambda s=t, src=source: sample_discrete_laplace(s, N, src), 3)
                lap_col = f"{N / lap / 1e6:.2f}"
            print(f"{sigma2!s:>18} {name:>8} {N / g / 1e6:>10.2f} {lap_col:>15}")


if __name__ == "__main__":
    main()
