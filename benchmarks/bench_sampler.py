"""Exact discrete Laplace draws per second, OS randomness (default) and seeded."""

from __future__ import annotations

from fractions import Fraction

from _common import best_of, machine
from treedp.noise import InsecureSeededSource, SystemRandomSource, sample_discrete_laplace

N = 2_000_000


def main() -> None:
    print(f"# exact discrete Laplace sampler ({machine()})")
    print(f"{'scale':>14} {'source':>10} {'M draws/s':>10}")
    for scale in (
        Fraction(1, 2),
        Fraction(2),
        Fraction(5),
        Fraction(10, 3),
        Fraction(50),
        Fraction(1000, 7),
        Fraction(10**5, 3),
    ):
        for name, source in (("os", SystemRandomSource()), ("seeded", InsecureSeededSource(0))):
            seconds = best_of(lambda s=scale, src=source: sample_discrete_laplace(s, N, src), 3)
            print(f"{scale!s:>14} {name:>10} {N / seconds / 1e6:>10.1f}")


if __name__ == "__main__":
    main()
