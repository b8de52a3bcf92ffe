"""The recursive exponential-mechanism quantiles: accuracy, monotonicity, contract, inputs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError, InvalidTypeError
from treedp.exceptions import DataError
from treedp.privacy import PureDP
from treedp.value_methods import quantiles_recursive as qr
from treedp.value_methods.quantiles_recursive import (
    CONTRACT,
    _quantiles_recursive_draws,
    level_counts,
    quantiles_recursive,
)


def test_depth_and_budget_split() -> None:
    # the recursion has ceil(log2(m + 1)) levels
    assert [len(level_counts(m)) for m in (1, 2, 3, 4, 7, 8, 99)] == [1, 2, 2, 3, 3, 4, 7]
    for relation in ("add_remove", "replace"):
        for m in (1, 5, 99):
            q = np.arange(1, m + 1) / (m + 1)
            res = quantiles_recursive(
                [1.0, 2.0], q, bounds=(0, 3), epsilon=0.7, neighbours=relation, details=True
            )
            assert isinstance(res.guarantee, PureDP)
            assert 0.7 * (1 - 2**-28) <= res.epsilon_spent <= 0.7
            assert res.mechanism == CONTRACT.name and relation in CONTRACT.neighbours


def test_level_counts_are_the_plans_shape() -> None:
    from fractions import Fraction

    assert level_counts(99) == (1, 2, 4, 8, 16, 32, 36) and level_counts(1) == (1,)
    for m in (1, 2, 3, 5, 8, 29, 49, 99, 200):
        qs = [Fraction(j, m + 1) for j in range(1, m + 1)]
        plan = qr._plan(qs, 0, m, Fraction(0), Fraction(1), 0, (Fraction(1),) * 9, "add_remove")
        depths = [node.depth for node in qr._walk(plan)]
        assert level_counts(m) == tuple(depths.count(d) for d in range(max(depths) + 1))
        assert len(level_counts(m)) == m.bit_length() and sum(level_counts(m)) == m


@pytest.mark.parametrize("split", [0.0, 0.5, -1.0])
def test_level_budgets_sum_to_epsilon_exactly(split: float, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Any split power gives exact level budgets summing to ε, and the spend stays <= ε."""
    from fractions import Fraction

    monkeypatch.setattr(qr, "SPLIT_POWER", split)
    for m in (1, 5, 99):
        budgets = qr._level_epsilons(Fraction(7, 10), m)
        assert sum(budgets) == Fraction(7, 10) and all(b > 0 for b in budgets)
        if split == 0.0:
            assert len(set(budgets)) == 1  # the equal split eps / L
        for relation in ("add_remove", "replace"):
            q = np.arange(1, m + 1) / (m + 1)
            res = quantiles_recursive(
                [1.0, 2.0], q, bounds=(0, 3), epsilon=0.7, neighbours=relation, details=True
            )
            assert 0.7 * (1 - 2**-28) <= res.epsilon_spent <= 0.7


def test_accuracy_and_monotone() -> None:
    """Mean rank error for 29 levels of N(0, 5), n = 10**4, eps = 1: about 8 (docs/quantiles.md).

    The bound 40 is loose: each node's selection has a geometric rank error of mean about
    2Δ·L/ε, and a tail of 40 on average over 29 levels has a negligible probability.
    """
    x = np.random.default_rng(TEST_SEED).normal(0, 5, 10**4)
    q = np.arange(1, 30) / 30
    out = quantiles_recursive(x, q, bounds=(-50, 50), epsilon=1.0, rng=InsecureSeededSource(1))
    assert np.all(np.diff(out) >= 0)
    ranks = np.searchsorted(np.sort(x), out, side="right")
    assert np.abs(ranks - q * x.size).mean() < 40
    shuffled = quantiles_recursive(
        x, [0.9, 0.1, 0.5, 0.5], bounds=(-50, 50), epsilon=1.0, rng=InsecureSeededSource(2)
    )
    assert shuffled[1] <= shuffled[2] == shuffled[3] <= shuffled[0]


def test_simulated_draws_are_monotone_and_in_bounds() -> None:
    draws = _quantiles_recursive_draws(
        np.arange(20.0),
        [0.1, 0.3, 0.5, 0.7, 0.9],
        bounds=(0, 20),
        epsilon=0.5,
        size=500,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert draws.shape == (500, 5)
    assert (np.diff(draws, axis=1) >= 0).all() and (draws >= 0).all() and (draws <= 20).all()


def test_empty_ties_infinities_and_scalar() -> None:
    src = InsecureSeededSource(3)
    v = quantiles_recursive([], 0.5, bounds=(0, 1), epsilon=1.0, rng=src)
    assert isinstance(v, float) and 0 <= v <= 1
    ties = np.repeat([1.0, 2.0, 3.0], 1000)
    out = quantiles_recursive(ties, [0.2, 0.5, 0.8], bounds=(0, 10), epsilon=1.0, rng=src)
    assert (out >= 0).all() and (out <= 10).all() and np.all(np.diff(out) >= 0)
    inf = quantiles_recursive([-np.inf, np.inf, 0.0], [0.5], bounds=(-1, 1), epsilon=1.0)
    assert -1 <= inf[0] <= 1


def test_datetimes_and_nan() -> None:
    days = np.datetime64("2024-01-01") + np.arange(365).astype("timedelta64[D]")
    out = quantiles_recursive(
        days,
        [0.25, 0.75],
        bounds=("2024-01-01", "2025-01-01"),
        epsilon=2.0,
        rng=InsecureSeededSource(4),
    )
    assert out.dtype.kind == "M" and out[0] <= out[1]
    with pytest.raises(DataError):
        quantiles_recursive([1.0, np.nan], [0.5], bounds=(0, 2), epsilon=1.0)
    kept = quantiles_recursive([1.0, np.nan], [0.5], bounds=(0, 2), epsilon=1.0, nan="drop")
    assert 0 <= kept[0] <= 2
    with pytest.raises(InvalidParameterError, match="nan='drop'"):
        quantiles_recursive(
            [1.0], [0.5], bounds=(0, 2), epsilon=1.0, nan="drop", neighbours="replace"
        )


def test_bad_parameters() -> None:
    with pytest.raises(InvalidParameterError, match="'q'"):
        quantiles_recursive([1.0], [1.5], bounds=(0, 2), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'bounds'"):
        quantiles_recursive([1.0], [0.5], bounds=(2, 2), epsilon=1.0)
    with pytest.raises(InvalidTypeError):
        quantiles_recursive([1.0], [0.5], bounds=("2024-01-01", 3), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'neighbours'"):
        quantiles_recursive([1.0], [0.5], bounds=(0, 2), epsilon=1.0, neighbours="swap")
    with pytest.raises(InvalidParameterError, match="'size'"):
        _quantiles_recursive_draws([1.0], [0.5], bounds=(0, 2), epsilon=1.0, size=0)


def test_node_rates_and_losses() -> None:
    """The per-node rate spends at most the level's share (the derivation's inequalities)."""
    from fractions import Fraction

    for level in (Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)):
        for relation in ("add_remove", "replace"):
            for root in (True, False):
                rate = qr._node_rate(Fraction(1, 4), level, relation, root)
                assert qr._node_loss(rate, level, relation, root) <= Fraction(1, 4)
                # replace, inside one node: the score moves by at most 1
                if relation == "replace":
                    assert 2 * rate <= Fraction(1, 4)


@pytest.mark.parametrize(
    ("m", "relation"),
    [(31, "add_remove"), (31, "replace"), (99, "add_remove"), (99, "replace")],
)
def test_a_budget_below_the_samplers_rate_is_refused_before_the_charge(
    m: int, relation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At ε = 1e-6 a child's anchored rate can fall below the sampler's ``2**-23`` (m = 31),
    and with 99 levels the root's too under ``replace``: refused from public parameters, with
    the accountant untouched (before the check, the sampler raised after the charge)."""
    from treedp.privacy.accountant import Accountant
    from treedp.value_methods import recursion_anchor as ra

    monkeypatch.setattr(ra, "SIGMAS", 0.0)  # the anchored branch: run-time rates
    acc = Accountant(PureDP(1.0), neighbours=relation)
    q = np.arange(1, m + 1) / (m + 1)
    with pytest.raises(InvalidParameterError, match="sampler") as info:
        for seed in range(20):
            quantiles_recursive(
                np.arange(1000.0), q, bounds=(0, 1000), epsilon=1e-6, neighbours=relation,
                accountant=acc, rng=InsecureSeededSource(seed),
            )  # fmt: skip
    assert "1000" not in str(info.value)
    assert acc.spent == PureDP(0.0) and not acc.history


def test_the_smallest_accepted_budget_runs() -> None:
    """Just above the refused budgets every node's rate, planned or anchored, is drawn."""
    from fractions import Fraction

    from treedp.value_methods import recursion_anchor as ra

    m, relation = 31, "replace"
    eps_l = Fraction(1, 2**23) * 4 * (1 + Fraction(1, 2**32)) / (1 - qr.COUNT_SHARE)
    eps = float(eps_l * len(level_counts(m))) * (1 + 1e-9)
    q = np.arange(1, m + 1) / (m + 1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ra, "SIGMAS", 0.0)
        for seed in range(5):
            out = quantiles_recursive(
                np.arange(1000.0), q, bounds=(0, 1000), epsilon=eps, neighbours=relation,
                rng=InsecureSeededSource(seed),
            )  # fmt: skip
            assert np.all(np.diff(out) >= 0)
    with pytest.raises(InvalidParameterError, match="sampler"):
        quantiles_recursive(
            np.arange(1000.0), q, bounds=(0, 1000), epsilon=eps * (1 - 1e-6),
            neighbours=relation,
        )  # fmt: skip


def test_a_level_beside_the_records_at_the_grids_edge_selects_among_them() -> None:
    """A child whose released counts put its level above its records (``HIGH``) answers its
    upper end when that is a released point; at the grid's edge, where none was released (on
    the float lattice ±8.99e307), it selects at level 1 among its records instead (the same
    node budget): records at 4.5 only, the draws spread over the units above them."""
    from treedp.value_methods.exponential_core import Grid
    from treedp.value_methods.recursion_anchor import HIGH, Anchor, anchored_level

    levels = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
    plan = qr._plan(levels, 0, 3, Fraction(0), Fraction(1), 0, (Fraction(1), Fraction(1)),
                    "add_remove")  # fmt: skip
    assert plan is not None and plan.right is not None
    ones = np.ones(300, dtype=np.int64)
    anchor = Anchor(10 * ones, 2 * ones, 3 * ones, "R", {"L": 1e-6, "R": 1e-6})  # a = 5.5 >= 3
    assert anchored_level(plan.right.q, plan.right.level, anchor, 0) == HIGH
    grid, x = Grid(0.0, 8.0, 3), np.array([4.5, 4.5, 4.5])
    edge = qr._select(plan.right, grid, x, 4, 7, 300, InsecureSeededSource(1), anchor,
                      "add_remove")  # fmt: skip
    assert {5, 6, 7} <= set(np.unique(edge)) and np.mean(edge >= 5) > 0.8  # above the records
    inner = qr._select(plan.right, grid, x, 4, 6, 300, InsecureSeededSource(1), anchor,
                       "add_remove")  # fmt: skip
    assert np.all(inner == 6)  # a released point there: answered
