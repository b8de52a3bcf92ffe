"""The exact exponential-mechanism selection: its law, its units and its input checks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import treedp.noise.exponential as expo
from tests.stats import ALPHA, TEST_SEED
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource
from treedp.noise.exponential import sample_weighted_laplace
from treedp.noise.rational import dyadic_lower_bound


def _target(weights: np.ndarray, center: Fraction, rate: Fraction) -> np.ndarray:
    """P(item i) ∝ weights_i · exp(-rate |i - center|), in log space."""
    i = np.arange(weights.size)
    with np.errstate(divide="ignore"):
        logp = np.log(weights.astype(float)) - float(rate) * np.abs(i - float(center))
    p = np.exp(logp - logp.max())
    return p / p.sum()


def _items(units: np.ndarray, weights: np.ndarray) -> np.ndarray:
    starts = np.concatenate([[0], np.cumsum(weights)])
    return np.searchsorted(starts, units, side="right") - 1


def _fits(items: np.ndarray, p: np.ndarray) -> bool:
    """Goodness of fit at total false-failure rate ALPHA (two tests at ALPHA/2 each).

    Cells with expectation >= 5 get a chi-square test, conditional on their total count; the
    sparse rest is pooled and its count gets an exact two-sided binomial test (a chi-square cell
    with an expectation of 0.02 would turn one legitimate draw into a false failure).
    """
    n = items.size
    observed = np.bincount(items, minlength=p.size)
    big = p * n >= 5
    sparse_count, sparse_p = int(observed[~big].sum()), float(p[~big].sum())
    if sparse_p == 0.0:
        sparse_ok = sparse_count == 0
    else:
        sparse_ok = stats.binomtest(sparse_count, n, sparse_p).pvalue > ALPHA / 2
    if big.sum() < 2:
        return sparse_ok
    counts = observed[big]
    expected = p[big] / p[big].sum() * counts.sum()
    stat = float(((counts - expected) ** 2 / expected).sum())
    return sparse_ok and float(stats.chi2.sf(stat, big.sum() - 1)) > ALPHA / 2


_WEIGHTS = np.array([3, 0, 5, 1, 7, 2, 0, 0, 9, 4, 6, 6, 6, 1, 1, 2, 8])
_CASES = [
    (_WEIGHTS, Fraction(15, 2), Fraction(1, 2)),
    (_WEIGHTS, Fraction(0), Fraction(3)),
    (_WEIGHTS, Fraction(16), dyadic_lower_bound(Fraction(1, 10**5))),
    (_WEIGHTS, Fraction(1, 3), dyadic_lower_bound(Fraction(7, 3))),
    (np.arange(1, 300), Fraction(1001, 10), dyadic_lower_bound(Fraction(1, 7))),
    (np.arange(1, 300), Fraction(150), dyadic_lower_bound(Fraction(25))),
]


@pytest.mark.parametrize("span", [48, 1])
@pytest.mark.parametrize(("weights", "center", "rate"), _CASES)
def test_items_follow_the_exponential_mechanism(
    monkeypatch: pytest.MonkeyPatch, span: int, weights, center, rate
) -> None:
    # span 1 forces most of the mass into the tail groups, so their path is tested too
    monkeypatch.setattr(expo, "_SPAN", span)
    n = 200_000
    units = sample_weighted_laplace(weights, center, rate, n, InsecureSeededSource(TEST_SEED))
    items = _items(units, weights)
    assert (weights[items] > 0).all()
    assert _fits(items, _target(weights, center, rate))


def test_far_mass_and_heavy_ties() -> None:
    """All weight far from the center (ties leave ranks empty): no underflow, right split."""
    w = np.zeros(10**6 + 1, dtype=np.int64)
    w[0], w[-1], w[1] = 2**40, 2**40, 1  # item 1: closer by one rank, 2**40 times lighter
    units = sample_weighted_laplace(
        w, Fraction(500_000), Fraction(1, 2), 20_000, InsecureSeededSource(TEST_SEED)
    )
    items = _items(units, w)
    assert set(np.unique(items)) <= {0, 10**6}  # item 1: probability e^0.5 / 2**41 < 1e-12
    assert stats.binomtest(int((items == 0).sum()), items.size, 0.5).pvalue > ALPHA


def test_units_are_uniform_inside_an_item() -> None:
    w = np.array([0, 4, 0, 6])
    units = sample_weighted_laplace(
        w, Fraction(2), Fraction(1, 4), 60_000, InsecureSeededSource(TEST_SEED)
    )
    inside = units[units >= 4] - 4
    counts = np.bincount(inside, minlength=6)
    assert stats.chisquare(counts).pvalue > ALPHA


@pytest.mark.parametrize(
    ("weights", "center", "rate", "match"),
    [
        (np.array([0, 0]), Fraction(0), Fraction(1), "weights"),
        (np.array([1.5, 2.0]), Fraction(0), Fraction(1), "weights"),
        (np.array([1, 2]), Fraction(2), Fraction(1), "center"),
        (np.array([1, 2]), Fraction(0), Fraction(1, 3), "rate"),
        (np.array([1, 2]), Fraction(0), Fraction(-1), "rate"),
    ],
)
def test_bad_input(weights, center, rate, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        sample_weighted_laplace(weights, center, rate, 1, InsecureSeededSource(1))


def test_dyadic_lower_bound() -> None:
    for x in (Fraction(1, 3), Fraction(50), Fraction(5, 10**7), Fraction(2, 7) * 10**-6):
        r = dyadic_lower_bound(x)
        assert r <= x and (x - r) / x < Fraction(1, 2**29)
        assert r.denominator & (r.denominator - 1) == 0
    with pytest.raises(InvalidParameterError, match="'x'"):
        dyadic_lower_bound(Fraction(0))
