"""``treedp.quantiles(..., n="private")``: a noisy count chooses the method and the tree's bins.

The count step (:mod:`treedp.value_methods.private_count`) releases ``max(0, n + Z)`` with exact
discrete Laplace noise ``Z``. Its exact law is computed here from the implementation's scale
and compared with the claim over neighbouring counts (brute force, no sampling), a mutant with
half the noise under the same claim exceeds it, and a chi-square test (false-failure rate
``ALPHA``) ties the sampler to the law (a sampler with half the scale is rejected). The rest:
the composed guarantee and its parts, the accountant (charged once, before any noise), replace,
no spend where ``n`` cannot matter, errors before any charge, and reproducibility.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import treedp
from tests.sources import CountingSource
from tests.stats import ALPHA, TEST_SEED, chi_square_pvalue
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.noise import RandomSource, discrete_laplace_pmf
from treedp.privacy import ZCDP, PureDP
from treedp.quantiles_api import DEFAULT_N_SHARE, choose_method, quantiles, tree_bins
from treedp.value_methods import private_count as pc
from treedp.value_methods._column import float_up

Q29 = np.arange(1, 30) / 30


# -- the count step: exact law, claim, mutants, sampler ------------------------------------


def _log_law(n: int, scale: float, top: int) -> np.ndarray:
    """``log P(max(0, n + Z) = k)`` for ``k = 0..top``, ``Z ~ DLap(scale)`` (exact formula;
    the mass at 0 is ``P(Z <= -n) = q**n / (1 + q)``, ``q = e^{-1/scale}``)."""
    k = np.arange(top + 1)
    log_q = -1.0 / scale
    log_norm = math.log(-math.expm1(log_q)) - math.log1p(math.exp(log_q))
    out = log_norm + log_q * np.abs(k - n)
    out[0] = n * log_q - math.log1p(math.exp(log_q))
    return out


def _max_log_ratio(scale: float) -> float:
    """The largest ``|log P_n(k) - log P_{n+1}(k)|`` over outputs ``k`` and neighbouring
    counts ``n, n + 1`` (add/remove: the counts differ by exactly one)."""
    worst = 0.0
    for n in (0, 1, 2, 7, 60):
        top = n + 400
        a, b = _log_law(n, scale, top), _log_law(n + 1, scale, top)
        worst = max(worst, float(np.max(np.abs(a - b))))
    return worst


@pytest.mark.parametrize("eps", [0.005, 0.05, 0.3, 1.0])
def test_count_exact_likelihood_ratio_within_claim_and_reaches_it(eps: float) -> None:
    scale, claim = pc.count_scale(eps)
    assert claim <= eps and claim == float_up(1 / scale)
    loss = _max_log_ratio(float(scale))
    assert loss <= claim * (1 + 1e-9)
    assert loss >= claim * (1 - 1e-6)  # the claim is not loose


def test_count_mutant_with_half_the_noise_is_caught() -> None:
    scale, claim = pc.count_scale(0.05)
    assert _max_log_ratio(float(scale) / 2) > 1.9 * claim


def _sampler_pvalue(release: Callable[[int, Fraction, RandomSource], int], size: int) -> float:
    scale, _ = pc.count_scale(0.2)  # t = 5
    source = InsecureSeededSource(TEST_SEED)
    draws = np.array([release(size, scale, source) for _ in range(20_000)])
    t = float(scale)
    q = math.exp(-1.0 / t)

    def law(z: np.ndarray) -> np.ndarray:  # of draws - size: the noise after clipping
        z = np.asarray(z)
        at_zero = q**size / (1 + q)  # P(n + Z <= 0)
        return np.where(
            z < -size, 0.0, np.where(z == -size, at_zero, discrete_laplace_pmf(z, scale))
        )

    return chi_square_pvalue(draws - size, law)


@pytest.mark.parametrize("size", [0, 3, 200])
def test_count_sampler_follows_the_exact_law(size: int) -> None:
    assert _sampler_pvalue(pc.release_count, size) > ALPHA


def test_count_sampler_mutant_with_half_the_scale_is_rejected() -> None:
    def half(size: int, scale: Fraction, source: RandomSource) -> int:
        return pc.release_count(size, scale / 2, source)

    assert _sampler_pvalue(half, 200) < ALPHA


def test_private_count_contract_and_refusals() -> None:
    assert pc.CONTRACT.measure is PureDP and pc.CONTRACT.neighbours == ("add_remove",)
    assert pc.CONTRACT.privacy_unit == "record" and "sensitivity 1" in pc.CONTRACT.sensitivity
    doc = (pc.private_count.__doc__ or "").lower()
    for word in ("guarantee", "sensitivity", "record", "neighbour relation", "add_remove"):
        assert word in doc
    x = np.arange(100.0)
    res = pc.private_count(x, epsilon=0.5, rng=InsecureSeededSource(1))
    assert isinstance(res.value, int) and res.value >= 0 and res.seeded
    assert res.guarantee == PureDP(pc.count_scale(0.5)[1]) and res.sensitivity == (1.0,)
    assert res.spend.mechanism == "private_count" and res.spend.unit == "record"
    again = pc.private_count(x, epsilon=0.5, rng=InsecureSeededSource(1))
    assert again.value == res.value
    with pytest.raises(InvalidParameterError, match="neighbours"):
        pc.private_count(x, epsilon=0.5, neighbours="replace")
    acct = treedp.Accountant(PureDP(0.6))
    pc.private_count(x, epsilon=0.5, accountant=acct)
    source = CountingSource()
    with pytest.raises(treedp.BudgetExceededError):
        pc.private_count(x, epsilon=0.5, accountant=acct, rng=source)
    assert source.calls == 0
    with pytest.raises(treedp.DataError):
        pc.private_count([1.0, np.nan], epsilon=0.1, accountant=acct)
    assert len(acct.history) == 1


# -- treedp.quantiles(..., n="private") -----------------------------------------------------


def _data(size: int = 1000) -> np.ndarray:
    return np.random.default_rng(TEST_SEED).lognormal(0, 1, size)


def test_the_count_chooses_the_method_and_the_bins() -> None:
    x = _data()
    for eps, m in ((0.1, 7), (0.1, 29), (1.0, 29), (1.0, 9), (1.0, 99)):
        q = np.arange(1, m + 1) / (m + 1)
        res = quantiles(
            x, q, epsilon=eps, bounds=(0, 100), n="private", rng=InsecureSeededSource(3)
        )
        assert res.n_source == "private" and isinstance(res.n_released, int)
        count, *gate, release = res.parts  # the concentration gate before a tree on many bins
        scale, spent = pc.count_scale(eps * DEFAULT_N_SHARE)
        assert count.mechanism == "private_count" and count.measure == PureDP(spent)
        assert count.neighbours == "add_remove" and count.unit == "record"
        assert count.parameters["sensitivity"] == 1 and count.parameters["scale"] == str(scale)
        # the released count is the first draw of the source: max(0, n + Z)
        assert res.n_released == pc.release_count(x.size, scale, InsecureSeededSource(3))
        rest = math.nextafter(eps - spent, 0.0)
        assert res.method == choose_method(m, epsilon=rest, n=res.n_released, gated=True)
        if gate:  # lognormal data on [0, 100] are not concentrated: the bins of the rest
            assert res.method == "tree" and gate[0].mechanism == "concentration_gate"
            rest = math.nextafter(rest - gate[0].measure.epsilon, 0.0)  # type: ignore[union-attr]
        if res.method == "tree":
            assert res.grid_points == tree_bins(rest, res.n_released)
        assert release.measure.epsilon <= rest  # type: ignore[union-attr]
        total = sum((Fraction(p.measure.epsilon) for p in res.parts[:-1]), Fraction(0))  # type: ignore[union-attr]
        total += Fraction(release.measure.epsilon)  # type: ignore[union-attr]
        assert res.guarantee == PureDP(float_up(total)) and res.epsilon_spent <= eps
        assert res.parameters["n"] == "private" and res.spend.mechanism.startswith("quantiles[")
    # a small count at ε = 0.1 takes the tree on few bins from 7 levels (n ε = 100)
    small = quantiles(
        x, Q29[:7], epsilon=0.1, bounds=(0, 100), n="private", rng=InsecureSeededSource(1)
    )
    assert small.method == "tree" and small.grid_points <= 256
    # below 7 levels the recursion, whatever n: no count is spent
    fewer = quantiles(
        x, Q29[:6], epsilon=0.1, bounds=(0, 100), n="private", rng=InsecureSeededSource(1)
    )
    assert fewer.method == "recursive" and fewer.n_source == "not needed"


def test_method_tree_spends_on_the_count_for_its_bins_only() -> None:
    x = _data()
    res = quantiles(
        x,
        [0.5],
        epsilon=1.0,
        bounds=(0, 100),
        method="tree",
        n="private",
        rng=InsecureSeededSource(2),
    )
    assert res.method == "tree" and res.n_source == "private" and len(res.parts) == 2
    rest = math.nextafter(1.0 - pc.count_scale(DEFAULT_N_SHARE)[1], 0.0)
    assert res.grid_points == tree_bins(rest, res.n_released)


def test_composed_with_private_bounds() -> None:
    x = _data(3000)
    acct = treedp.Accountant(PureDP(1.0))
    res = quantiles(
        x,
        Q29,
        epsilon=1.0,
        bounds="private",
        bounds_share=0.2,
        n="private",
        n_share=0.1,
        rng=InsecureSeededSource(4),
        accountant=acct,
    )
    names = [p.mechanism for p in res.parts]
    assert names[:2] == ["private_bounds", "private_count"] and len(names) == 3
    losses = [Fraction(p.measure.epsilon) for p in res.parts]  # type: ignore[attr-defined]
    assert losses[0] <= Fraction(0.2) and losses[1] <= Fraction(0.1)
    assert res.guarantee == PureDP(float_up(sum(losses, Fraction(0))))
    assert res.epsilon_spent <= 1.0 and res.n_source == "private"
    (entry,) = acct.history  # charged once, the whole ε, naming no method
    assert entry.record.mechanism == "quantiles[auto, private n]"
    assert entry.record.measure == PureDP(1.0)
    assert entry.record.parameters["n"] == "private" and entry.record.parameters["n_share"] == 0.1


def test_accountant_charged_once_before_any_noise() -> None:
    x = _data()
    acct = treedp.Accountant(PureDP(1.5))
    quantiles(x, Q29, epsilon=1.0, bounds=(0, 100), n="private", accountant=acct)
    assert len(acct.history) == 1 and acct.spent == PureDP(1.0)
    source = CountingSource()
    for bounds in ((0, 100), "private"):
        with pytest.raises(treedp.BudgetExceededError):
            quantiles(x, Q29, epsilon=1.0, bounds=bounds, n="private", accountant=acct, rng=source)
    assert source.calls == 0 and len(acct.history) == 1


def test_replace_uses_the_public_count_and_spends_nothing() -> None:
    x = _data()
    kw: dict[str, Any] = {"epsilon": 1.0, "bounds": (0, 100), "neighbours": "replace"}
    res = quantiles(x, Q29, n="private", rng=InsecureSeededSource(5), **kw)
    plain = quantiles(x, Q29, rng=InsecureSeededSource(5), **kw)
    assert res.n_source == "public" and res.n_released is None and len(res.parts) == 1
    assert res.method == plain.method and np.array_equal(res.values, plain.values)
    assert res.epsilon_spent == plain.epsilon_spent


@pytest.mark.parametrize(
    "kw",
    [
        {"q": [0.5]},  # one level: the exponential mechanism
        {"q": [0.2, 0.5, 0.8]},  # fewer levels than any rule's tree threshold: recursive
        {"q": Q29, "bins": "integers", "bounds": (0, 20)},  # integer bins: the tree
        {"q": Q29, "method": "recursive"},
        {"q": Q29, "method": "exponential"},
        {"q": Q29, "method": "tree", "bins": 300},  # explicit bins
        {"q": np.arange(1, 100) / 100, "bins": 300},  # the tree for every n, on given bins
    ],
)
def test_no_spend_where_n_cannot_matter(kw: dict[str, Any]) -> None:
    x = np.floor(_data()) if kw.get("bins") == "integers" else _data()
    args: dict[str, Any] = {"epsilon": 1.0, "bounds": (0, 100), **kw}
    q = args.pop("q")
    res = quantiles(x, q, n="private", rng=InsecureSeededSource(6), **args)
    plain = quantiles(x, q, rng=InsecureSeededSource(6), **args)
    assert res.n_source == "not needed" and res.n_released is None
    assert [p.mechanism for p in res.parts] == [p.mechanism for p in plain.parts]
    assert res.method == plain.method and np.array_equal(res.values, plain.values)
    assert res.guarantee == plain.guarantee


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_same_seed_same_result() -> None:
    x = _data()
    runs = [
        quantiles(x, Q29, epsilon=0.3, bounds="private", n="private", rng=InsecureSeededSource(9))
        for _ in range(2)
    ]
    assert runs[0].n_released == runs[1].n_released and runs[0].method == runs[1].method
    assert np.array_equal(runs[0].values, runs[1].values) and runs[0].bounds == runs[1].bounds
    assert runs[0].seeded


def test_without_n_auto_counts_privately_and_other_methods_do_not() -> None:
    x = _data()
    res = quantiles(x, Q29, epsilon=1.0, bounds=(0, 100), rng=InsecureSeededSource(7))
    same = quantiles(x, Q29, epsilon=1.0, bounds=(0, 100), n="private", rng=InsecureSeededSource(7))
    assert res.n_source == "private" and res.n_released is not None
    assert np.array_equal(res.values, same.values) and res.n_released == same.n_released
    tree = quantiles(
        x, Q29, epsilon=1.0, bounds=(0, 100), method="tree", rng=InsecureSeededSource(7)
    )
    assert tree.n_source == "none" and tree.n_released is None and "n" not in tree.parameters
    target = quantiles(
        x, Q29, epsilon=None, privacy=ZCDP(0.5), bounds=(0, 100), rng=InsecureSeededSource(7)
    )
    assert target.n_source == "none" and target.n_released is None
    pub = quantiles(x, Q29, epsilon=1.0, bounds=(0, 100), n=1000, rng=InsecureSeededSource(7))
    assert pub.n_source == "public"


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"n": "privat"}, InvalidParameterError),
        ({"n_share": 0.1, "method": "tree"}, InvalidParameterError),  # no count can be spent
        ({"n_share": 0.1, "epsilon": None, "privacy": ZCDP(0.5)}, InvalidParameterError),
        ({"n": 1000, "n_share": 0.1}, InvalidParameterError),
        ({"n": "private", "n_share": 0.0}, InvalidParameterError),
        ({"n": "private", "n_share": 1.0}, InvalidParameterError),
        ({"n": "private", "n_share": True}, treedp.InvalidTypeError),
        ({"n": "private", "n_share": "0.1"}, treedp.InvalidTypeError),
        ({"n": "private", "bounds": "private", "n_share": 0.9}, InvalidParameterError),
        (
            {"n": "private", "bounds": "private", "bounds_share": 0.5, "n_share": 0.5},
            InvalidParameterError,
        ),
        ({"n": "private", "bins": 2**27}, InvalidParameterError),  # the tree may run
        ({"n": "private", "nan": "error", "values": [1.0, np.nan] * 50}, treedp.DataError),
    ],
)
def test_errors_come_before_the_charge(kw: dict[str, Any], error: type[Exception]) -> None:
    args: dict[str, Any] = {"values": _data(), "epsilon": 1.0, "bounds": (0, 100), **kw}
    acct = treedp.Accountant(PureDP(10.0))
    source = CountingSource()
    values = args.pop("values")
    with pytest.raises(error):
        quantiles(values, Q29, accountant=acct, rng=source, **args)
    assert acct.spent == PureDP(0.0) and source.calls == 0


def test_datetimes_with_numeric_bounds_are_refused_when_the_tree_may_run() -> None:
    when = np.datetime64("2024-01-01") + np.arange(500).astype("timedelta64[D]")
    acct = treedp.Accountant(PureDP(10.0))
    with pytest.raises(treedp.InvalidTypeError):
        quantiles(when, Q29, epsilon=1.0, bounds=(0, 10**6), n="private", accountant=acct)
    assert acct.spent == PureDP(0.0)
    bounds = (np.datetime64("2023-06-01"), np.datetime64("2026-01-01"))
    res = quantiles(when, Q29, epsilon=1.0, bounds=bounds, n="private", rng=InsecureSeededSource(1))
    assert res.n_source == "private" and np.all(np.diff(res.values) >= np.timedelta64(0))


def test_rule_bins_fit_narrow_bounds() -> None:
    """The count picks the bins after the charge; bounds too narrow for that many float edges
    get fewer (halved until they fit) instead of a refusal after the budget is spent."""
    tight = (1e9, 1e9 + 1e-4)
    x = np.random.default_rng(TEST_SEED).uniform(*tight, 10_000)
    acct = treedp.Accountant(PureDP(1.0))
    res = quantiles(
        x, Q29, epsilon=0.1, bounds=tight, n="private", rng=InsecureSeededSource(1),
        accountant=acct,
    )  # fmt: skip
    rest = math.nextafter(0.1 - pc.count_scale(0.1 * DEFAULT_N_SHARE)[1], 0.0)
    assert res.method == "tree" and tree_bins(rest, res.n_released) == 512
    assert res.grid_points == 256 and len(acct.history) == 1
    assert np.all((tight[0] <= res.values) & (res.values <= tight[1]))
