"""Exact thresholds, the tie-breaking path of the unit geometric, rational scales and sources."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.stats import TEST_SEED, binomial_ok, chi_square_pvalue
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource, noise_scale, rational_upper_bound, resolve_source
from treedp.noise.exp_thresholds import (
    count_exp_thresholds,
    floor_exp_neg,
    sample_unit_geometric,
)


@pytest.mark.parametrize("v", [1, 2, 3, 10, 44])
def test_floor_exp_neg_agrees_with_float_and_with_itself(v: int) -> None:
    assert abs(floor_exp_neg(v, 50) - 2**50 * math.exp(-v)) <= 2
    for p in (64, 100, 300):
        assert floor_exp_neg(v, p + 17) >> 17 == floor_exp_neg(v, p)


def test_floor_exp_neg_brackets_exp_exactly() -> None:
    # exp(-1) = sum (-1)^j / j!: alternating partial sums bracket it; compare with Fractions
    lower = sum(Fraction((-1) ** j, math.factorial(j)) for j in range(61))
    upper = sum(Fraction((-1) ** j, math.factorial(j)) for j in range(62))
    lo, hi = sorted((lower, upper))
    t = floor_exp_neg(1, 128)
    assert Fraction(t, 2**128) <= hi and Fraction(t + 1, 2**128) > lo


def test_unit_geometric_matches_its_pmf() -> None:
    v = sample_unit_geometric(1_000_000, InsecureSeededSource(TEST_SEED)).astype(np.int64)

    def pmf(k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=float)
        return np.exp(-np.abs(k)) * (1 - math.exp(-1)) * (k >= 0)

    assert chi_square_pvalue(v, pmf) > 1e-6


def test_tie_resolution_is_exact() -> None:
    """A word equal to a threshold reveals more bits: V is 0 or 1 with P(1) = frac(2^64/e)."""
    prefix = floor_exp_neg(1, 64)
    frac = (floor_exp_neg(1, 128) - (prefix << 64)) / 2**64
    src = InsecureSeededSource(TEST_SEED)
    draws = [count_exp_thresholds(prefix, 64, 1, 1, src) for _ in range(20_000)]
    assert set(draws) <= {0, 1}
    assert binomial_ok(sum(draws), len(draws), frac)
    # a zero word leaves every v >= 45 undecided: V is then at least 44
    assert count_exp_thresholds(0, 64, 1, 1, src) >= 44


def test_rational_upper_bound_is_the_best_from_above() -> None:
    for x in [
        Fraction(22, 7) + Fraction(1, 10**9),
        Fraction(math.pi),
        Fraction(1, 3) - Fraction(1, 10**12),
        Fraction(0.1),
        Fraction(10, 3),
    ]:
        for max_den in (1, 2, 7, 50, 333):
            best = min(
                Fraction(-(-x.numerator * q // x.denominator), q) for q in range(1, max_den + 1)
            )
            assert rational_upper_bound(x, max_den) == best


def test_noise_scale_never_below_the_requested_scale() -> None:
    for eps in (0.1, 0.3, 1 / 3, 0.7, 1.0, 2.5, 1e-5):
        for d in (1, 2, 17):
            t = noise_scale(d, eps)
            assert t >= Fraction(d) / Fraction(eps)
            # at most a relative 1e-6 more noise than asked (denominators stay below 2**20)
            assert float(t) == pytest.approx(d / eps, rel=1e-6)


def test_noise_scale_refuses_bad_input() -> None:
    with pytest.raises(InvalidParameterError, match="epsilon"):
        noise_scale(1, 0.0)
    with pytest.raises(InvalidParameterError, match="exceeds"):
        noise_scale(10**6, 1e-6)


def test_resolve_source_wants_explicit_seeding() -> None:
    with pytest.raises(InvalidParameterError, match="InsecureSeededSource"):
        resolve_source(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="RandomSource"):
        resolve_source("os")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="seed"):
        InsecureSeededSource(-1)
    assert resolve_source(None).seeded is False
    assert InsecureSeededSource(5).describe() == {
        "source": "numpy.PCG64",
        "seeded": True,
        "seed": 5,
    }
