"""The exact sampler against the exact pmf: chi-square at alpha = 1e-6 with >= 10^6 draws."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.stats import ALPHA, TEST_SEED, binomial_ok, chi_square_pvalue
from treedp.exceptions import InvalidParameterError
from treedp.noise import (
    InsecureSeededSource,
    SystemRandomSource,
    discrete_laplace_pmf,
    discrete_laplace_variance,
    sample_discrete_laplace,
)
from treedp.noise.discrete_laplace import bernoulli_exp, bernoulli_ratio, uniform_below

DRAWS = 1_000_000
SCALES = [Fraction(3), Fraction(1, 2), Fraction(10, 3), Fraction(1000, 7), Fraction(25)]


@pytest.mark.parametrize("scale", SCALES, ids=str)
def test_chi_square_against_exact_pmf(scale: Fraction) -> None:
    x = sample_discrete_laplace(scale, DRAWS, InsecureSeededSource(TEST_SEED))
    assert x.dtype == np.int64 and x.size == DRAWS
    p = chi_square_pvalue(x, lambda k: discrete_laplace_pmf(k, scale))
    assert p > ALPHA, f"chi-square p = {p:.3g} for scale {scale}"


def test_chi_square_with_os_randomness() -> None:
    scale = Fraction(7, 2)
    x = sample_discrete_laplace(scale, DRAWS, SystemRandomSource())
    assert chi_square_pvalue(x, lambda k: discrete_laplace_pmf(k, scale)) > ALPHA


@pytest.mark.parametrize(
    ("drawn", "claimed"), [(Fraction(10, 3), Fraction(3)), (Fraction(3), Fraction(10, 3))]
)
def test_chi_square_detects_a_wrong_scale(drawn: Fraction, claimed: Fraction) -> None:
    """The test above can fail: a sampler 10% off in scale is rejected at alpha = 1e-6."""
    x = sample_discrete_laplace(drawn, DRAWS, InsecureSeededSource(TEST_SEED))
    assert chi_square_pvalue(x, lambda k: discrete_laplace_pmf(k, claimed)) < ALPHA


def test_variance_formula_matches_pmf() -> None:
    for scale in SCALES:
        k = np.arange(-20000, 20001)
        pmf = discrete_laplace_pmf(k, scale)
        assert pmf.sum() == pytest.approx(1.0, rel=1e-12)
        assert (pmf * k**2).sum() == pytest.approx(discrete_laplace_variance(scale), rel=1e-9)


def test_seeded_source_is_reproducible_and_os_source_is_not() -> None:
    a = sample_discrete_laplace(Fraction(5), 1000, InsecureSeededSource(1))
    b = sample_discrete_laplace(Fraction(5), 1000, InsecureSeededSource(1))
    c = sample_discrete_laplace(Fraction(5), 1000, SystemRandomSource())
    d = sample_discrete_laplace(Fraction(5), 1000, SystemRandomSource())
    assert (a == b).all()
    assert not (c == d).all()


@pytest.mark.parametrize(("a", "b"), [(1, 3), (2, 7), (5, 5), (0, 9), (12345, 1 << 40)])
def test_bernoulli_ratio_is_exact(a: int, b: int) -> None:
    n = 200_000
    draws = bernoulli_ratio(a, b, n, InsecureSeededSource(TEST_SEED))
    assert binomial_ok(int(draws.sum()), n, a / b)


@pytest.mark.parametrize(("num", "den"), [(1, 1), (1, 2), (0, 1), (7, 9), (999, 1000)])
def test_bernoulli_exp_is_exact(num: int, den: int) -> None:
    n = 200_000
    draws = bernoulli_exp(np.full(n, num, dtype=np.uint64), den, n, InsecureSeededSource(3))
    assert binomial_ok(int(draws.sum()), n, float(np.exp(-num / den)))


@pytest.mark.parametrize("bound", [1, 3, 7, 200, 1000, 65537, 3 * 2**33])
def test_uniform_below_is_uniform(bound: int) -> None:
    n = 300_000
    u = uniform_below(bound, n, InsecureSeededSource(TEST_SEED)).astype(np.int64)
    assert u.min() >= 0 and u.max() < bound
    if bound == 1:
        assert (u == 0).all()
    elif bound <= 1000:
        from scipy import stats

        counts = np.bincount(u, minlength=bound)
        assert stats.chisquare(counts).pvalue > ALPHA
    else:  # coarse check: the top bit of the range is a fair coin
        assert binomial_ok(int((u >= bound // 2).sum()), n, (bound - bound // 2) / bound)


def test_bad_scale_and_size_are_refused() -> None:
    src = InsecureSeededSource(0)
    with pytest.raises(InvalidParameterError, match="scale"):
        sample_discrete_laplace(Fraction(0), 3, src)
    with pytest.raises(InvalidParameterError, match="size"):
        sample_discrete_laplace(Fraction(1), -1, src)
    assert sample_discrete_laplace(Fraction(1), 0, src).size == 0
