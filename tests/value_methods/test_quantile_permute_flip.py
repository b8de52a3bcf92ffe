"""Permute-and-flip quantiles of integers: exact guarantee (with a mutant), law, answers, checks."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import treedp
from tests.noise.test_permute_flip import permute_flip_law
from tests.stats import ALPHA, TEST_SEED
from treedp import Accountant, InsecureSeededSource, InvalidParameterError, InvalidTypeError, PureDP
from treedp.noise.rational import dyadic_lower_bound
from treedp.value_methods import quantile_permute_flip as qpf
from treedp.value_methods.quantile_permute_flip import (
    _quantile_permute_flip_draws,
    quantile_permute_flip,
)


def exponents(
    x: np.ndarray, lo: int, hi: int, q: float, eps: float, relation: str, scales: int | None = None
) -> list:
    """The implementation's exact exponent of every candidate ``lo..hi`` (one level)."""
    level = Fraction(q)
    rate = dyadic_lower_bound(Fraction(eps) / (2 * qpf._score_sensitivity(level, relation)))
    scales = qpf.SHRINK_SCALES if scales is None else scales
    s = qpf._Scores(np.sort(np.asarray(x, dtype=float)), lo, hi, level, rate, scales)
    distinct = s.exponents(np.arange(int(s.keys.max()) + 1))
    got = [distinct[k] for k in s.keys]
    assert all(f <= g for f, g in zip(s.floors.tolist(), got, strict=True))  # lower bounds
    return got


def score(x: np.ndarray, k: int, q: float, cap: Fraction) -> Fraction:
    """The score's definition: the distance from t to ``[#{x < k}, #{x <= k}]`` shrunk at
    each end by half its width, at most ``cap``."""
    t = Fraction(math.floor(Fraction(q) * x.size * 2**32), 2**32)
    below, upto = int((x < k).sum()), int((x <= k).sum())
    e = min(Fraction(upto - below, 2), cap)
    return max(Fraction(0), below + e - t, t - (upto - e))


@pytest.mark.parametrize("scales", [0, 2])
def test_exponents_are_the_rate_times_the_score_above_its_least(scales: int) -> None:
    """Exactly, near the target and far from it; the floors are lower bounds. ``scales=0``
    is the plain rank gap."""
    rng = np.random.default_rng(TEST_SEED)
    x = np.sort(rng.poisson(30, 4000).astype(float))
    for q, eps in ((0.5, 1.0), (0.3, 0.05), (0.9, 3.0), (0.25, 0.01)):
        sens = qpf._score_sensitivity(Fraction(q), "add_remove")
        rate = dyadic_lower_bound(Fraction(eps) / (2 * sens))
        scores = [score(x, k, q, Fraction(scales) / rate) for k in range(81)]
        got = exponents(x, 0, 80, q, eps, "add_remove", scales)
        assert got == [rate * (v - min(scores)) for v in scores]
        assert min(got) == 0 and (max(got) >= 64 or eps < 0.05)  # some far from the target


def _worst_log_ratio(eps: float, relation: str, q: float, values: int = 3, most: int = 4) -> float:
    """Largest log ratio of the exact output laws over every neighbour of every dataset of up
    to ``most`` values in ``0..values - 1`` (add/remove: one added; replace: one changed)."""
    worst = 0.0
    for n in range(most + 1):
        for d in map(list, itertools.combinations_with_replacement(range(values), n)):
            if relation == "replace":
                others = [[*d[:j], v, *d[j + 1 :]] for j in range(n) for v in range(values)]
            else:
                others = [[*d, v] for v in range(values)] if n < most else []
            law = permute_flip_law(
                np.array(exponents(np.array(d), 0, values - 1, q, eps, relation), dtype=float)
            )
            for e in others:
                g = exponents(np.array(e), 0, values - 1, q, eps, relation)
                other = permute_flip_law(np.array(g, dtype=float))
                worst = max(worst, float(np.abs(np.log(law) - np.log(other)).max()))
    return worst


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_exact_likelihood_ratio_within_epsilon(relation: str) -> None:
    """Over every neighbour of every dataset of up to four values in {0, 1, 2} (and 0..3 at
    the median), the exact output laws' log ratio stays within ε (q = 0.5, 0.25)."""
    for q in (0.5, 0.25):
        assert _worst_log_ratio(1.0, relation, q) <= 1.0 + 1e-9
    assert _worst_log_ratio(1.0, relation, 0.5, values=4) <= 1.0 + 1e-9
    assert _worst_log_ratio(4.0, relation, 0.25) <= 4.0 + 1e-9  # the cap H = 2/rate binds


@pytest.mark.slow
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_exact_likelihood_ratio_within_epsilon_where_the_cap_binds(relation: str) -> None:
    """At ε = 2, 4, 8 the cap ``H = 2/rate`` is below half of most blocks of up to six
    records in 0..3: the log ratio stays within ε there too (an independent review: three
    wrong caps, e.g. ``H + n/8``, exceeded ε by up to 1 and were caught by one test each)."""
    for eps in (2.0, 4.0, 8.0):
        for q in (0.5, 0.25):
            assert _worst_log_ratio(eps, relation, q, values=4, most=6) <= eps + 1e-9


def test_the_least_score_may_lie_outside_the_block_holding_the_target() -> None:
    """The block holding t need not score least (here the empty integer 0 scores 1 and the
    block of 1s, holding t = 1, scores 3/2): the exponents stay >= 0 with one at 0, and the
    release draws (an independent review: a least taken over the holding block alone made
    this release raise after the charge)."""
    x = np.array([1, 1, 1, 1, 1, 2, 2, 2, 2, 3], dtype=float)
    got = exponents(x, 0, 4, 0.1, 1.0, "add_remove")
    assert min(got) == 0 and got[0] == 0 and got[1] > 0
    src = InsecureSeededSource(TEST_SEED)
    assert 0 <= quantile_permute_flip(x, 0.1, bounds=(0, 4), epsilon=1.0, rng=src) <= 4


def test_mutant_with_half_the_sensitivity_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Coins at ``exp(ε u / Δ)`` (the factor 2 dropped, valid only for monotone scores; the
    rank gap is not monotone under add/remove) exceed ε on the same exhaustive check."""
    right = qpf._score_sensitivity
    monkeypatch.setattr(qpf, "_score_sensitivity", lambda level, nb: right(level, nb) / 2)
    assert _worst_log_ratio(1.0, "add_remove", 0.5) > 1.2
    assert _worst_log_ratio(1.0, "replace", 0.5) > 1.2


@pytest.mark.slow
def test_follows_the_permute_and_flip_law_on_tied_integers() -> None:
    """Chi-square of 20,000 draws against the exact law (false-failure rate 10^-6)."""
    x = np.array([1, 1, 2, 2, 2, 2, 2, 3, 5, 5, 8], dtype=float)
    runs, q, eps = 20_000, 0.25, 0.9
    law = permute_flip_law(np.array(exponents(x, 0, 9, q, eps, "add_remove"), dtype=float))
    draws = _quantile_permute_flip_draws(
        x, q, bounds=(0, 9), epsilon=eps, size=runs, rng=InsecureSeededSource(TEST_SEED)
    )
    observed = np.bincount(draws.astype(np.int64), minlength=10)
    assert stats.chisquare(observed, law * runs).pvalue > ALPHA


def test_answers_blocks_of_ties_and_states_its_guarantee() -> None:
    ties = np.repeat([1, 2, 3], [10, 80, 10])
    src = InsecureSeededSource(TEST_SEED)
    res = quantile_permute_flip(ties, 0.5, bounds=(0, 100), epsilon=2.0, rng=src, details=True)
    assert res.value == 2.0
    assert res.guarantee.epsilon <= 2.0 and res.spend.mechanism == "quantile_permute_flip"
    assert res.grid_points == 101
    out = quantile_permute_flip(ties, [0.05, 0.95], bounds=(0, 5), epsilon=40.0, rng=src)
    assert list(out) == [1.0, 3.0]
    empty = quantile_permute_flip([], 0.5, bounds=(-5, 5), epsilon=1.0, rng=src)
    assert -5 <= empty <= 5 and float(empty).is_integer()


def test_accountant_is_charged_after_every_check_and_before_any_coin() -> None:
    acct = Accountant(PureDP(1.0))
    with pytest.raises(InvalidParameterError, match="2\\*\\*20 integers"):
        quantile_permute_flip([1, 2], 0.5, bounds=(0, 2**20), epsilon=1.0, accountant=acct)
    with pytest.raises(InvalidParameterError, match="'bounds'"):
        quantile_permute_flip([1, 2], 0.5, bounds=(0, 2.5), epsilon=1.0, accountant=acct)
    with pytest.raises(InvalidParameterError, match="private"):
        quantile_permute_flip([1, 2], 0.5, bounds="private", epsilon=1.0, accountant=acct)
    with pytest.raises(InvalidTypeError, match="datetimes"):
        quantile_permute_flip(
            np.array(["2020-01-01"], dtype="datetime64[D]"), 0.5, bounds=(0, 9), epsilon=1.0,
            accountant=acct,
        )  # fmt: skip
    assert acct.spent.epsilon == 0
    quantile_permute_flip([1, 2], 0.5, bounds=(0, 2**20 - 1), epsilon=0.5, accountant=acct)
    assert 0.49 < acct.spent.epsilon <= 0.5


class _Probe:
    """A seeded source that records what the accountant had spent at its first draw."""

    seeded = True

    def __init__(self, acct: Accountant) -> None:
        self.acct, self.rest, self.at_first = acct, InsecureSeededSource(TEST_SEED), None

    def random_bytes(self, n: int) -> bytes:
        if self.at_first is None:
            self.at_first = self.acct.spent.epsilon
        return self.rest.random_bytes(n)

    def describe(self) -> dict[str, object]:
        return {"source": "probe"}


def test_the_whole_charge_precedes_the_first_random_bit() -> None:
    acct = Accountant(PureDP(1.0))
    probe = _Probe(acct)
    quantile_permute_flip(
        np.arange(50), [0.25, 0.75], bounds=(0, 60), epsilon=0.5, accountant=acct, rng=probe
    )
    assert probe.at_first is not None and probe.at_first == acct.spent.epsilon > 0.49


def test_bounds_beyond_the_float_range_are_refused_before_the_charge() -> None:
    acct = Accountant(PureDP(1.0))
    with pytest.raises(InvalidParameterError, match="'bounds'"):
        quantile_permute_flip([1], 0.5, bounds=(0, 10**400), epsilon=1.0, accountant=acct)
    with pytest.raises(InvalidParameterError, match="whole numbers lo <= hi"):
        treedp.quantiles(
            np.arange(5), 0.5, bounds=(0, 10**400), bins="integers", epsilon=1.0,
            accountant=acct,
        )  # fmt: skip
    assert acct.spent.epsilon == 0
