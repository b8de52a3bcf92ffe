"""The concentration gate before the tree (:mod:`treedp.value_methods.concentration_gate`).

Privacy: the statistic ``S = 2 P - n`` changes by exactly 1 between every pair of add/remove
neighbours (exhaustive on small count vectors; a mutant ``3 P - n`` is caught), and the law
of the released ``S + Z`` (hence of its sign) has a largest log-ratio of exactly the claimed
loss over neighbours, computed from the discrete Laplace pmf (mutants at half the scale or
with the mutant statistic exceed it). A spy ties the draw inside :func:`treedp.quantiles` to
the planned scale and the statistic of the true counts on the public test grid. Then the
wiring: the gate runs only where ``auto``'s private count picks the tree, its part is in the
spend, the finer bins are used exactly when the noisy statistic is positive, and the whole ε
is never exceeded.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.noise import discrete_laplace_pmf
from treedp.privacy import PureDP
from treedp.quantile_methods import fitting_bins
from treedp.quantiles_choice import MAX_TREE_BINS, tree_bins
from treedp.value_methods import concentration_gate as cg
from treedp.value_methods._column import float_up
from treedp.value_methods.private_count import count_scale

Q29 = np.arange(1, 30) / 30


def _neighbours(counts: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every add/remove neighbour of a count vector (one record added to or removed from a
    bin)."""
    out = []
    for k in range(len(counts)):
        for d in (-1, 1):
            c = list(counts)
            c[k] += d
            if c[k] >= 0:
                out.append(tuple(c))
    return out


def _statistic_mutant(counts: np.ndarray) -> int:
    return 3 * cg.pair_max(counts) - int(np.sum(counts))


@pytest.mark.parametrize("bins", [1, 2, 3, 4])
def test_statistic_changes_by_exactly_one(bins: int) -> None:
    worst_mutant = 0
    for counts in itertools.product(range(4), repeat=bins):
        s = cg.gate_statistic(np.array(counts))
        for other in _neighbours(counts):
            assert abs(cg.gate_statistic(np.array(other)) - s) == 1
            worst_mutant = max(
                worst_mutant,
                abs(_statistic_mutant(np.array(other)) - _statistic_mutant(np.array(counts))),
            )
    assert worst_mutant == 2  # the audit below can fail


def test_statistic_values() -> None:
    assert cg.pair_max(np.array([5])) == 5 and cg.gate_statistic(np.array([5])) == 5
    assert cg.pair_max(np.array([1, 4, 3, 0])) == 7
    assert cg.gate_statistic(np.array([1, 4, 3, 0])) == 6
    assert cg.gate_statistic(np.array([3, 0, 0, 3])) == -0  # half in two pairs: not more


def _worst_log_ratio(stat: Any, scale: Fraction, bins: int) -> float:
    """The largest log-ratio of the law of ``stat(counts) + Z`` (and of its sign) over every
    add/remove neighbour pair of count vectors with entries 0..3."""
    reach = int(60 * float(scale)) + 60  # the tails beyond hold below e^-60 of the mass
    z = np.arange(-reach, reach + 1)
    pz = discrete_laplace_pmf(z, scale)
    worst = 0.0
    for counts in itertools.product(range(4), repeat=bins):
        s = stat(np.array(counts))
        for other in _neighbours(counts):
            t = stat(np.array(other))
            # P(S + Z = k) / P(T + Z = k) over every k: shift the pmf
            ratio = np.log(discrete_laplace_pmf(z - s, scale)) - np.log(
                discrete_laplace_pmf(z - t, scale)
            )
            worst = max(worst, float(np.abs(ratio).max()))
            above_s = float(pz[z > -s].sum())  # P(S + Z > 0)
            above_t = float(pz[z > -t].sum())
            for a, b in ((above_s, above_t), (1 - above_s, 1 - above_t)):
                worst = max(worst, abs(math.log(a) - math.log(b)))
    return worst


@pytest.mark.parametrize("eps", [0.05, 0.5, 2.0])
def test_exact_audit_against_the_claim(eps: float) -> None:
    scale, spent = cg.gate_scale(eps)
    assert spent <= eps and Fraction(spent) >= 1 / scale
    worst = _worst_log_ratio(cg.gate_statistic, scale, 3)
    assert worst <= spent + 1e-12
    assert worst >= spent * (1 - 1e-9)  # the claim is reached: the audit is tight
    # mutants: half the scale, or a statistic of sensitivity 2, exceed the claim
    assert _worst_log_ratio(cg.gate_statistic, scale / 2, 3) > spent * 1.5
    assert _worst_log_ratio(_statistic_mutant, scale, 3) > spent * 1.5


def test_contract_states_the_guarantee() -> None:
    doc = (cg.__doc__ or "") + (cg.gate_statistic.__doc__ or "") + cg.CONTRACT.sensitivity
    for word in ("pure", "add_remove", "record", "sensitivity", "2 P - n"):
        assert word in doc
    assert cg.CONTRACT.neighbours == ("add_remove",) and cg.CONTRACT.measure is PureDP


def test_gated_bins_is_public_post_processing() -> None:
    assert cg.gated_bins((0.0, 1000.0), 512, False, MAX_TREE_BINS) is None  # the rule's
    assert cg.gated_bins((0.0, 1000.0), 512, True, MAX_TREE_BINS) == 512 * cg.FINER_BINS
    assert cg.gated_bins((0.0, 1000.0), 64, True, MAX_TREE_BINS) == cg.MIN_FINER_BINS
    assert cg.gated_bins((0.0, 1000.0), 8192, True, MAX_TREE_BINS) == MAX_TREE_BINS
    # bounds too narrow for that many distinct float edges keep the bins
    narrow = (1e9, 1e9 + 1e-4)
    treedp.domain.make_bins(bounds=narrow, bins=256)
    assert cg.gated_bins(narrow, 256, True, MAX_TREE_BINS) is None


def test_plan_gate_below_the_smallest_epsilon() -> None:
    assert cg.plan_gate(1e-5) is None
    scale, spent, share = cg.plan_gate(1.0)  # type: ignore[misc]
    assert share == cg.GATE_SHARE and (scale, spent) == cg.gate_scale(cg.GATE_SHARE)


def test_released_bit_is_the_sign_of_the_statistic_plus_the_drawn_noise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The drawn noise enters the bit (a gate that drew noise and ignored it, or scaled it,
    passed every other test; privacy review 13)."""
    drawn = {"z": 0}
    monkeypatch.setattr(
        cg, "sample_discrete_laplace", lambda scale, k, src: np.full(k, drawn["z"], np.int64)
    )
    x = np.full(100, 3.0)  # all in one test bin: S = 100
    for z, bit in ((0, True), (-99, True), (-100, False), (-101, False)):
        drawn["z"] = z
        assert cg.release_gate(x, (0.0, 1000.0), cg.TEST_BINS, Fraction(1), None) is bit
    y = np.array([0.0, 999.0])  # two far bins: S = 2 * 1 - 2 = 0
    for z, bit in ((1, True), (0, False), (-1, False)):
        drawn["z"] = z
        assert cg.release_gate(y, (0.0, 1000.0), cg.TEST_BINS, Fraction(1), None) is bit


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(5, 2)])
def test_released_bit_has_the_law_of_its_scale(scale: Fraction) -> None:
    """At S = 0 the bit is 1 with probability P(Z > 0) = q / (1 + q), q = exp(-1/t), for the
    scale t the loss is computed from. 4,000 draws; the band is 4.4 standard deviations
    (two-sided false-failure rate about 1e-5); half the noise (t/2) moves the frequency by
    more than 7 of them at either scale."""
    y = np.array([0.0, 999.0])
    source = InsecureSeededSource(TEST_SEED)
    draws = 4000
    hits = sum(cg.release_gate(y, (0.0, 1000.0), cg.TEST_BINS, scale, source) for _ in range(draws))
    q = math.exp(-1 / float(scale))
    p = q / (1 + q)
    sd = math.sqrt(p * (1 - p) / draws)
    assert abs(hits / draws - p) < 4.4 * sd
    q_half = math.exp(-2 / float(scale))
    assert abs(q_half / (1 + q_half) - p) > 7 * sd  # the test can fail


# -- inside treedp.quantiles ----------------------------------------------------------------


def _run(x: np.ndarray, bounds: tuple[float, float], eps: float, seed: int = 1, **kw: Any) -> Any:
    return treedp.quantiles(
        x, Q29, epsilon=eps, bounds=bounds, rng=InsecureSeededSource(seed), **kw
    )


def _rests(eps: float) -> tuple[float, float]:
    """The budget after the count, and after the count and the gate (a share of the first)."""
    _, count = count_scale(eps * treedp.quantiles_api.DEFAULT_N_SHARE)
    rest = math.nextafter(eps - count, 0.0)
    return rest, math.nextafter(rest - cg.gate_scale(rest * cg.GATE_SHARE)[1], 0.0)


def test_concentrated_data_get_finer_bins() -> None:
    rng = np.random.default_rng(TEST_SEED)
    narrow = rng.uniform(0, 1, 10_000)  # all in the first bin of [0, 1000]
    res = _run(narrow, (0.0, 1000.0), 0.1)
    names = [p.mechanism for p in res.parts]
    assert names[:2] == ["private_count", "concentration_gate"] and len(names) == 3
    _, after = _rests(0.1)
    base = tree_bins(after, res.n_released)
    assert res.grid_points == min(MAX_TREE_BINS, base * cg.FINER_BINS) > base
    gate = res.parts[1]
    assert gate.parameters["bins"] == cg.TEST_BINS and gate.neighbours == "add_remove"
    losses = [Fraction(p.measure.epsilon) for p in res.parts]  # type: ignore[attr-defined]
    assert res.guarantee == PureDP(float_up(sum(losses, Fraction(0))))
    assert res.epsilon_spent <= 0.1
    # far better than the tree on its default bins, which put every record in one bin
    truth = np.quantile(narrow, Q29)
    assert np.abs(np.asarray(res.values) - truth).max() < 0.1


def test_data_that_fill_their_bounds_keep_their_bins() -> None:
    x = np.random.default_rng(TEST_SEED).uniform(0, 1000, 10_000)
    res = _run(x, (0.0, 1000.0), 0.1)
    assert [p.mechanism for p in res.parts][:2] == ["private_count", "concentration_gate"]
    _, after = _rests(0.1)
    assert res.grid_points == tree_bins(after, res.n_released)


def test_few_records_on_concentrated_data() -> None:
    """At ``n · ε = 100`` the tree's 64 bins put uniform(0, 1) data on [0, 1000] in one bin;
    the gate (on its fixed test grid) sends them to the finer bins."""
    x = np.random.default_rng(TEST_SEED).uniform(0, 1, 1000)
    res = _run(x, (0.0, 1000.0), 0.1, seed=3)
    names = [p.mechanism for p in res.parts]
    assert names[:2] == ["private_count", "concentration_gate"]
    _, after = _rests(0.1)
    assert tree_bins(after, res.n_released) == 64 and res.grid_points == cg.MIN_FINER_BINS


def test_no_gate_where_the_tree_is_not_chosen_or_cannot_change() -> None:
    x = np.random.default_rng(TEST_SEED).uniform(0, 1, 1000)
    q13 = np.arange(1, 14) / 14  # 13 levels at n ε = 1000: the recursion
    rec = treedp.quantiles(x, q13, epsilon=1.0, bounds=(0.0, 1000.0), rng=InsecureSeededSource(1))
    assert rec.method == "recursive"
    assert "concentration_gate" not in [p.mechanism for p in rec.parts]
    rest, _ = _rests(1.0)
    assert rec.parts[-1].parameters["epsilon"] == rest  # the gate's share went back
    for kw in ({"n": 1000}, {"method": "tree", "n": "private"}, {"bins": 512}):
        other = _run(np.random.default_rng(1).uniform(0, 1, 10_000), (0.0, 1000.0), 0.1, **kw)
        assert "concentration_gate" not in [p.mechanism for p in other.parts]
    # datetimes: no gate (the test grid is numeric); nothing refused after the charge
    days = np.datetime64("2020-01-01") + np.random.default_rng(3).integers(0, 3, 10_000)
    dated = treedp.quantiles(
        days, Q29, epsilon=0.1, bounds=("2020-01-01", "2030-01-01"),
        rng=InsecureSeededSource(1),
    )  # fmt: skip
    assert dated.method == "tree" and dated.n_source == "private"
    assert "concentration_gate" not in [p.mechanism for p in dated.parts]
    # bounds too narrow for the test grid's float edges: no gate, nothing drawn for it
    tight = (1e9, 1e9 + 1e-4)
    y = np.random.default_rng(2).uniform(*tight, 10_000)
    res = _run(y, tight, 0.1)
    assert "concentration_gate" not in [p.mechanism for p in res.parts]
    rule = tree_bins(_rests(0.1)[0], res.n_released)
    assert res.grid_points == fitting_bins(tight, rule) < rule


def test_the_draw_has_the_planned_scale_and_the_true_statistic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: dict[str, Any] = {}
    real = cg.gate_statistic

    def spy_statistic(counts: np.ndarray) -> int:
        seen["statistic"] = real(counts)
        return real(counts)

    def fixed_noise(scale: Fraction, size: int, source: Any) -> np.ndarray:
        seen["scale"] = scale
        return np.zeros(size, dtype=np.int64)

    monkeypatch.setattr(cg, "gate_statistic", spy_statistic)
    monkeypatch.setattr(cg, "sample_discrete_laplace", fixed_noise)
    x = np.concatenate([np.full(6000, 3.0), np.random.default_rng(2).uniform(0, 1000, 4000)])
    res = _run(x, (0.0, 1000.0), 0.1)
    stat_seen, scale_seen = seen["statistic"], seen["scale"]
    assert scale_seen == cg.gate_scale(_rests(0.1)[0] * cg.GATE_SHARE)[0]
    counts, _ = treedp.domain.make_bins(bounds=(0.0, 1000.0), bins=cg.TEST_BINS).count(x)
    assert stat_seen == real(counts) > 0  # the true counts' statistic, concentrated
    _, after = _rests(0.1)
    assert res.grid_points == tree_bins(after, res.n_released) * cg.FINER_BINS


def test_the_charged_record_names_the_gate_share() -> None:
    x = np.random.default_rng(TEST_SEED).uniform(0, 1, 10_000)
    acct = treedp.Accountant(PureDP(1.0))
    treedp.quantiles(
        x, Q29, epsilon=0.1, bounds=(0.0, 1000.0), rng=InsecureSeededSource(1), accountant=acct
    )
    (entry,) = acct.history
    assert entry.record.parameters["gate_share"] == cg.GATE_SHARE
    assert entry.record.measure == PureDP(0.1)
    # a call that can pick no tree plans no gate
    acct2 = treedp.Accountant(PureDP(1.0))
    treedp.quantiles(
        x, Q29[:5], epsilon=0.1, bounds=(0.0, 1000.0), rng=InsecureSeededSource(1),
        accountant=acct2,
    )  # fmt: skip
    assert "gate_share" not in acct2.history[0].record.parameters


def test_a_large_n_share_leaves_the_quantiles_their_rest() -> None:
    """The gate takes its share of what the count leaves (privacy review 13: a share of the
    whole ε refused ``n_share >= 0.97`` calls that ran before it)."""
    x = np.random.default_rng(TEST_SEED).uniform(0, 1, 10_000)
    res = treedp.quantiles(
        x, Q29, epsilon=1.0, bounds=(0.0, 1000.0), n="private", n_share=0.98,
        rng=InsecureSeededSource(1),
    )  # fmt: skip
    losses = {p.mechanism: p.measure.epsilon for p in res.parts}  # type: ignore[union-attr]
    assert losses["concentration_gate"] <= 0.03 * 0.021
    assert res.epsilon_spent <= 1.0
