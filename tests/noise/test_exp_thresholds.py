"""Rigorous bounds for ``s·exp(-x)`` and the exact ``Bernoulli(s·exp(-x))`` built on them."""

from __future__ import annotations

import decimal
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from tests.stats import TEST_SEED, binomial_ok
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource
from treedp.noise.exp_thresholds import (
    bernoulli_scaled_exp,
    exp_bounds,
    floor_scaled_exp_neg,
    resolve_tie,
)

_CTX = decimal.Context(prec=700)


def _exp_decimal(x: Fraction) -> decimal.Decimal:
    """exp(x) to 700 significant digits (decimal's exp is correctly rounded)."""
    return _CTX.exp(_CTX.divide(decimal.Decimal(x.numerator), decimal.Decimal(x.denominator)))


def _floor_reference(x: Fraction, p: int, scale: Fraction) -> int:
    value = _CTX.divide(
        _CTX.multiply(decimal.Decimal(scale.numerator), _CTX.power(decimal.Decimal(2), p)),
        _CTX.multiply(decimal.Decimal(scale.denominator), _exp_decimal(x)),
    )
    floor = int(value.to_integral_value(rounding=decimal.ROUND_FLOOR))
    # trusted only away from integers: 700 digits carry a relative error far below 10**-600
    margin = value * decimal.Decimal(10) ** -600
    assert value - floor > margin and floor + 1 - value > margin
    return floor


@pytest.mark.parametrize("q", [8, 64, 200])
def test_exp_bounds_bracket_exp(q: int) -> None:
    # Regression: the earlier single floored chain plus "one per term" was not an upper bound
    # for v >= 2 (floor errors grow by v/j per term); both chains are now directed.
    for v in [*range(61), Fraction(1, 3), Fraction(355, 113), Fraction(2**52 + 1, 2**40)]:
        lower, upper = exp_bounds(Fraction(v), q)
        true = _CTX.multiply(_CTX.power(decimal.Decimal(2), q), _exp_decimal(Fraction(v)))
        assert lower <= true <= upper
        # tight: a relative gap of a few dozen units of 2**-q (the summation length)
        assert (upper - lower) * 2**q <= 64 * lower


def test_floor_scaled_exp_neg_matches_a_high_precision_reference() -> None:
    r = random.Random(TEST_SEED)
    for _ in range(400):
        x = Fraction(r.randrange(0, 5000), r.choice([1, 3, 7, 11, 2**20, 10**6, 2**52 + 1]))
        s = Fraction(r.randrange(1, 10**9), r.randrange(1, 10**9))
        p = r.choice([0, 1, 64, 128, 300])
        if x == 0:
            assert floor_scaled_exp_neg(x, p, s) == s.numerator * 2**p // s.denominator
        else:
            assert floor_scaled_exp_neg(x, p, s) == _floor_reference(x, p, s)


def test_floor_scaled_exp_neg_refuses_negative_input() -> None:
    with pytest.raises(InvalidParameterError, match="x >= 0"):
        floor_scaled_exp_neg(Fraction(-1), 10)


@pytest.mark.parametrize(
    ("scale", "x"),
    [(Fraction(1), Fraction(1, 3)), (Fraction(9, 10), Fraction(0)), (Fraction(5, 2), Fraction(3))],
)
def test_bernoulli_scaled_exp_has_the_right_rate(scale: Fraction, x: Fraction) -> None:
    n = 200_000
    hits = int(bernoulli_scaled_exp(scale, x, n, InsecureSeededSource(TEST_SEED)).sum())
    assert binomial_ok(hits, n, float(scale) * math.exp(-float(x)))


def test_bernoulli_scaled_exp_edges() -> None:
    src = InsecureSeededSource(TEST_SEED)
    assert bernoulli_scaled_exp(1, 0, 10, src).all()
    with pytest.raises(InvalidParameterError, match="<= 1"):
        bernoulli_scaled_exp(Fraction(3), Fraction(1), 10, src)


def test_tie_path_is_exact() -> None:
    """A first word equal to the threshold: the answer is decided by the following bits."""
    src = InsecureSeededSource(TEST_SEED)
    # rho = 1/2 exactly: a U starting with the bits of 1/2 is >= 1/2, so always a failure
    assert not any(resolve_tie(2**63, Fraction(0), Fraction(1, 2), src) for _ in range(100))
    # rho = exp(-1/3): P(success | tie) is the fraction of rho's bits beyond the first 64
    x, scale = Fraction(1, 3), Fraction(1)
    prefix = floor_scaled_exp_neg(x, 64, scale)
    frac = (floor_scaled_exp_neg(x, 128, scale) - (prefix << 64)) / 2**64
    draws = [resolve_tie(prefix, x, scale, src) for _ in range(20_000)]
    assert binomial_ok(sum(draws), len(draws), frac)
    # a vector draw never disagrees with the threshold on the first word
    out = bernoulli_scaled_exp(scale, x, 1000, src)
    assert out.dtype == np.bool_


def test_huge_exponent_costs_nothing() -> None:
    """F7: floor(2**p·s·exp(-x)) = 0 for a huge x is decided from bit lengths, without a
    floor(x)-bit integer (the old early exit built 2**floor(x): 500 MB for x = 4e9)."""
    import tracemalloc

    from treedp.noise.exponential import sample_weighted_laplace

    tracemalloc.start()
    try:
        assert floor_scaled_exp_neg(Fraction(4 * 10**9), 64) == 0
        assert floor_scaled_exp_neg(Fraction(4 * 10**9) + Fraction(1, 3), 64, Fraction(7, 2)) == 0
        # a tail group whose exponent is ~4e9: two tied blocks far apart in rank
        weights = np.zeros(4001, dtype=np.int64)
        weights[0] = weights[-1] = 1
        units = sample_weighted_laplace(
            weights, Fraction(0), Fraction(2**20), 100, InsecureSeededSource(1)
        )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (units == 0).all()  # the far item has probability exp(-2**20·4000)
    assert peak < 4 * 2**20
    # around the early exit (floor(x) >= 65 here) the answer is still the exact floor
    for x in (Fraction(44), Fraction(129, 2), Fraction(65), Fraction(200, 3)):
        exact = int(_CTX.divide(decimal.Decimal(2**64), _exp_decimal(x)))
        assert floor_scaled_exp_neg(x, 64) == exact
    assert floor_scaled_exp_neg(Fraction(44), 64) > 0
