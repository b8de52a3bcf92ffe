"""Quantiles without bounds: exact privacy audits (pure and zCDP) with mutants, atoms."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from treedp.noise import InsecureSeededSource
from treedp.privacy import PureDP
from treedp.value_methods.exponential_core import target_rank
from treedp.value_methods.float_lattice import TOTAL_UNITS, UnitGrid, positions
from treedp.value_methods.unbounded_quantiles import (
    CONTRACT,
    _independent_losses,
    quantiles_unbounded,
    unbounded_draws,
    zcdp_cost,
)

TEST_SEED = 20261126


def _log_probs(
    x: np.ndarray, level: float, rate: float, cuts: np.ndarray, integers: bool = False
) -> np.ndarray:
    """log P(unit segment) of one selection, exactly up to float rounding: segments between
    ``cuts`` (each of constant rank)."""
    pos = positions(np.sort(x), integers)
    ranks = np.searchsorted(pos, cuts[:-1], side="left")  # #{pos < u}, constant per segment
    t = float(target_rank(Fraction(level), x.size))
    logw = np.log(np.diff(cuts).astype(np.float64)) - rate * np.abs(ranks - t)
    m = logw.max()
    return logw - (m + math.log(np.exp(logw - m).sum()))


def _pair(
    x: np.ndarray, y: np.ndarray, level: float, rate: float, integers: bool = False
) -> tuple[np.ndarray, ...]:
    grid = UnitGrid(integers=integers)
    cuts = np.unique(
        np.r_[0, grid.count_at_most(positions(np.sort(x), integers)), grid.count_at_most(
            positions(np.sort(y), integers)), TOTAL_UNITS]
    )  # fmt: skip
    cuts = cuts[(cuts >= 0) & (cuts <= TOTAL_UNITS)]
    return (
        _log_probs(x, level, rate, cuts, integers),
        _log_probs(y, level, rate, cuts, integers),
    )


def _neighbours() -> list[tuple[np.ndarray, np.ndarray, str]]:
    rng = np.random.default_rng(TEST_SEED)
    base = np.r_[np.zeros(6), np.full(4, 3.0), np.round(rng.normal(0, 5, 6), 2)]
    pairs = []
    for extra in (0.0, 3.0, -7.5, 1e9, float(base[-1])):
        pairs.append((base, np.r_[base, extra], "add_remove"))
    moved = base.copy()
    moved[0] = 3.0  # replace: a zero becomes a 3
    pairs.append((base, moved, "replace"))
    moved2 = base.copy()
    moved2[-1] = -1e12
    pairs.append((base, moved2, "replace"))
    return pairs


def _integer_neighbours() -> list[tuple[np.ndarray, np.ndarray, str]]:
    """Integer data (integer mode): blocks at 0, 3 and -1, a spread of small integers; added
    records in a block, beside one, far out and negative; replaced ones."""
    rng = np.random.default_rng(TEST_SEED)
    base = np.r_[np.zeros(6), np.full(4, 3.0), np.full(2, -1.0), rng.integers(-20, 40, 5)]
    pairs = [(base, np.r_[base, extra], "add_remove") for extra in (0.0, 3.0, 4.0, -1.0, 1e9)]
    for i, value in ((0, 3.0), (6, -5.0), (11, 70_000.0)):
        moved = base.copy()
        moved[i] = value
        pairs.append((base, moved, "replace"))
    return pairs


def _max_loss_and_renyi(
    rate_scale: float, eps: float, level: float, integers: bool = False
) -> tuple[float, float]:
    """The largest privacy loss and the largest D_α/α (α in a grid) over the neighbours."""
    worst_loss, worst_renyi = 0.0, 0.0
    for x, y, relation in _integer_neighbours() if integers else _neighbours():
        ((_, rate),) = _independent_losses(np.array([level]), eps, relation)[0]
        r = float(rate) * rate_scale
        p, q = _pair(x, y, level, r, integers)
        for a, b in ((p, q), (q, p)):
            worst_loss = max(worst_loss, float(np.max(np.abs(a - b))))
            for alpha in (1.01, 1.5, 2.0, 4.0, 16.0):
                d = math.log(np.exp(alpha * a - (alpha - 1) * b).sum()) / (alpha - 1)
                worst_renyi = max(worst_renyi, d / alpha)
    return worst_loss, worst_renyi


@pytest.mark.parametrize("level", [0.5, 0.25, 0.9])
def test_exact_audit_pure_and_zcdp(level: float) -> None:
    """Exact output laws on neighbours (ties, the zero block, far values, replace): the
    privacy loss is at most the charged ε and D_α/α at most the charged ρ = ε²/8."""
    eps = 2.0
    _, losses = _independent_losses(np.array([level]), eps, "add_remove")
    loss, renyi = _max_loss_and_renyi(1.0, eps, level)
    assert loss <= float(losses[0]) * (1 + 1e-9) + 1e-12
    assert renyi <= float(zcdp_cost(losses)) * (1 + 1e-9) + 1e-12


def test_mutant_noise_for_a_larger_epsilon_is_caught() -> None:
    """A variant with the rate of 2ε charged the zCDP cost of ε (or the pure ε) fails the
    same audit: the test can fail."""
    eps, level = 2.0, 0.5
    _, losses = _independent_losses(np.array([level]), eps, "add_remove")
    for integers in (False, True):
        loss, renyi = _max_loss_and_renyi(2.0, eps, level, integers)
        assert loss > float(losses[0]) * 1.2
        assert renyi > float(zcdp_cost(losses)) * 1.2


@pytest.mark.parametrize("level", [0.5, 0.25, 0.9])
def test_exact_audit_integer_mode(level: float) -> None:
    """Integer mode (each integer's records spread over its unit interval of the lattice):
    the same exact audit on integer neighbours, within the charged ε and ρ = ε²/8."""
    eps = 2.0
    _, losses = _independent_losses(np.array([level]), eps, "add_remove")
    loss, renyi = _max_loss_and_renyi(1.0, eps, level, integers=True)
    assert loss <= float(losses[0]) * (1 + 1e-9) + 1e-12
    assert renyi <= float(zcdp_cost(losses)) * (1 + 1e-9) + 1e-12


def test_integer_mode_answers_the_block_holding_the_level() -> None:
    """Blocks at 51, 52 and 53 with q·n = 9,000 inside 53's (its ranks 8,983..10,000): the
    plain lattice left the gap below 53 (2,047 cells scoring 52's top rank) to outweigh 53's
    one cell, and every draw answered 52 (rank gap 17); integer mode answers 53, as the
    bounded methods do. The same for the recursion, and every answer is an integer."""
    x = np.r_[np.full(200, 51), np.full(8783, 52), np.full(1017, 53)].astype(np.int64)
    for independent in (True, False):
        call = {"epsilon": 0.1, "size": 40, "independent": independent}
        new = unbounded_draws(x, [0.9], rng=InsecureSeededSource(5), integers=True, **call)
        old = np.floor(unbounded_draws(x, [0.9], rng=InsecureSeededSource(5), **call))
        assert np.mean(new == 53) >= 0.8 and np.all(new == np.round(new)), new.ravel()
        assert np.mean(old == 53) <= 0.1  # the plain cells: the mutant the test catches
    wide = x * 4096 - 7  # cells wider than one integer there: answers still integers
    out = unbounded_draws(wide, [0.9], epsilon=1.0, size=20, rng=InsecureSeededSource(6),
                          integers=True)  # fmt: skip
    assert np.all(out == np.round(out)) and np.all((out > wide.min() - 64) & (out <= wide.max()))


def test_guarantee_record_and_contract() -> None:
    x = np.random.default_rng(TEST_SEED).lognormal(3, 1, 500)
    res = quantiles_unbounded(
        x, [0.1, 0.5, 0.9], epsilon=1.0, details=True, rng=InsecureSeededSource(1)
    )
    assert isinstance(res.guarantee, PureDP) and res.guarantee.epsilon <= 1.0
    assert res.spend.mechanism == CONTRACT.name and res.neighbours in CONTRACT.neighbours
    assert np.all(np.diff(res.value) >= 0)


def test_atoms_answered_exactly() -> None:
    """diffprivlib issue #107's input (80% at 65,000) and 99% one value: the exact atom."""
    rng = np.random.RandomState(0)
    a = np.concatenate([np.full(80_000, 65_000.0), rng.randint(0, 500_000, size=20_000)])
    b = np.r_[np.full(9_900, 7.0), np.random.default_rng(1).normal(0, 100, 100)]
    for x in (a, b):
        atom = float(np.median(x))
        for independent in (True, False):
            out = unbounded_draws(
                x, [0.5], epsilon=0.3, size=20, independent=independent,
                rng=InsecureSeededSource(2),
            )  # fmt: skip
            assert np.all(out == atom)


def test_tiny_budget_still_near_the_data() -> None:
    """ε·n = 100 on lognormal data: the answers lie in the data's range widened 10x (the
    private-bounds scans of the tree used to answer 1e275 here)."""
    x = np.random.default_rng(TEST_SEED).lognormal(10, 1, 10_000)
    out = unbounded_draws(x, [0.25, 0.5, 0.75], epsilon=0.01, size=20, rng=InsecureSeededSource(3))
    assert np.all(np.isfinite(out)) and out.min() > 0 and out.max() < 10 * x.max()


def test_recursion_splits_never_cut_a_group() -> None:
    """Below any released unit, with one child or two, the records split at a group
    boundary (whole lattice cells, the zero block whole; whole integer cells for the integer
    recursion), so one added record changes one node per level."""
    from treedp.value_methods.exponential_core import Grid
    from treedp.value_methods.float_lattice import _group, cell_of
    from treedp.value_methods.quantile_exponential import _spread
    from treedp.value_methods.quantiles_recursive import _Plan
    from treedp.value_methods.recursion_splits import _CellSplits, _split_point

    rng = np.random.default_rng(TEST_SEED)
    x = np.sort(np.r_[np.zeros(9), np.full(7, 65_000.0), np.full(5, -3.0), rng.normal(0, 9, 9)])
    pos = positions(x)
    groups = _group(cell_of(x))[0]
    half, one = Fraction(1, 2), Fraction(1)
    leaf = _Plan(0, half, half, 1, one, one, None, None, None)
    shapes = [(leaf, leaf), (leaf, None), (None, leaf)]
    lattice = UnitGrid()
    for p in pos:
        for du in (-3, 0, 2):
            for left, right in shapes:
                plan = _Plan(0, half, half, 0, one, one, one, left, right)
                split = int(np.searchsorted(pos, _split_point(plan, lattice, int(p) + du)))
                assert split in (0, x.size) or groups[split - 1] != groups[split]
    ints = np.sort(np.r_[np.full(6, 4.0), np.full(3, 9.0), np.arange(12.0)])
    grid = Grid(0.0, 13.0)
    spread, splits = _spread(ints), _CellSplits(grid)
    for value in spread:
        unit = int(grid.count_at_most(np.array([value]))[0]) - 1
        for left, right in shapes:
            plan = _Plan(0, half, half, 0, one, one, one, left, right)
            split = int(np.searchsorted(spread, _split_point(plan, splits, unit)))
            assert split in (0, ints.size) or ints[split - 1] != ints[split]


def _side_law(x: np.ndarray, level: float, rate: float, side: tuple, cuts: np.ndarray,
              integers: bool) -> np.ndarray:  # fmt: skip
    """log P(unit segment) of one selection on the units a public side leaves, the records
    clamped into it (as ``_unbounded`` does)."""
    lo = -np.inf if side[0] is None else side[0]
    hi = np.inf if side[1] is None else side[1]
    return _log_probs(np.clip(x, lo, hi), level, rate, cuts, integers)


SIDES = [((0.0, None), False), ((0.0, None), True), ((None, 3.0), True), ((-1.0, None), False)]


@pytest.mark.parametrize(("side", "integers"), SIDES)
def test_exact_audit_with_a_public_side(side: tuple, integers: bool) -> None:
    """A public side: the records clamped into it, the units from the group holding it on.
    The exact law over those units on neighbours (records beyond the side included) stays
    within the charged ε; a rate of 2ε exceeds it."""
    from treedp.value_methods.float_lattice import side_units

    first, last, _ = side_units(side, integers)
    grid = UnitGrid(integers=integers)
    level, eps = 0.5, 2.0
    pairs = _integer_neighbours() if integers else _neighbours()
    worst, mutant = 0.0, 0.0
    for x, y, relation in pairs:
        ((_, rate),) = _independent_losses(np.array([level]), eps, relation)[0]
        lo = -np.inf if side[0] is None else side[0]
        hi = np.inf if side[1] is None else side[1]
        marks = [grid.count_at_most(positions(np.sort(np.clip(d, lo, hi)), integers))
                 for d in (x, y)]  # fmt: skip
        cuts = np.unique(np.r_[first, np.clip(np.r_[marks[0], marks[1]], first, last + 1),
                               last + 1])  # fmt: skip
        for scale in (1.0, 2.0):
            a = _side_law(x, level, float(rate) * scale, side, cuts, integers)
            b = _side_law(y, level, float(rate) * scale, side, cuts, integers)
            loss = float(np.max(np.abs(a - b)))
            worst, mutant = (
                (max(worst, loss), mutant) if scale == 1.0 else (worst, max(mutant, loss))
            )
    _, losses = _independent_losses(np.array([level]), eps, "add_remove")
    assert worst <= float(losses[0]) * (1 + 1e-9) + 1e-12
    assert mutant > float(losses[0]) * 1.2


def test_a_public_side_forces_the_recursion_at_its_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """70% zeros with a public lower bound 0: the zero group is the lattice's first, a node
    inside it answers 0 and counts its records, and its sibling targets absolute ranks. At
    n = 10^4, ε = 0.1, 3 levels (12 seeded draws) the rank gap falls below half that without
    the side (Kaplan's rescaled level misses by the block); a mutant that never forces a
    lattice node loses it. Answers lie in the side."""
    from treedp.value_methods import recursion_forced as rf

    rng = np.random.default_rng(TEST_SEED)
    n, q = 10_000, [0.25, 0.5, 0.75]
    x = np.where(rng.random(n) < 0.7, 0.0, rng.lognormal(5, 1, n))
    xs, t = np.sort(x), np.array(q) * n

    def gap(side: tuple) -> float:
        out = unbounded_draws(x, q, epsilon=0.1, size=12, rng=InsecureSeededSource(9), side=side)
        assert side[0] is None or out.min() >= 0.0
        lo, hi = np.searchsorted(xs, out, "left"), np.searchsorted(xs, out, "right")
        return float(np.maximum(np.maximum(lo - t, t - hi), 0).mean())

    free, sided = gap((None, None)), gap((0.0, None))
    assert sided < 0.5 * free, (sided, free)
    real = rf.forced_sides
    monkeypatch.setattr(rf, "forced_sides", lambda s, u: (False, False) if hasattr(s, "zones")
                        else real(s, u))  # fmt: skip
    import treedp.value_methods.quantiles_recursive as qr

    monkeypatch.setattr(qr, "forced_sides", rf.forced_sides)
    assert gap((0.0, None)) > 0.5 * free  # the mutant: no forced node on the lattice


def test_a_side_off_the_lattice_is_answered_exactly_and_checked_before_the_charge() -> None:
    """Privacy review (session 21): a side that is no lattice point (0.3) lies inside a cell
    whose upper units answered the next point, so records all clamped onto it were answered
    just beside it; every unit of the side's group now answers the side. (The recursion's
    sibling of a forced child holding every record has no records and its law is uniform over
    its units, far from the data: the both-sided lattice does the same; docs/private_bounds.md.)
    A malformed side is refused before the accountant is charged."""
    from treedp import Accountant, InvalidParameterError, InvalidTypeError

    for data, side in ((np.full(500, -5.0), (0.3, None)), (np.full(500, 9.0), (None, 0.3))):
        for independent in (True, False):
            out = unbounded_draws(data, [0.25, 0.5, 0.75], epsilon=1.0, size=10, side=side,
                                  independent=independent, rng=InsecureSeededSource(1))  # fmt: skip
            near = np.abs(out - 0.3) < 1e-3  # the recursion's sibling of a forced child
            assert np.all(out[near] == 0.3) and (near.all() or not independent), out
    acc = Accountant(PureDP(5.0))
    bad = [((5.0, 3.0), False), ((np.nan, None), False), ((None, np.inf), False),
           ((1e308, None), True), ((0.5, None), True)]  # fmt: skip
    for side, integers in bad:
        with pytest.raises(InvalidParameterError):
            quantiles_unbounded(np.arange(10.0), [0.5], epsilon=1.0, side=side,
                                integers=integers, accountant=acc)  # fmt: skip
    with pytest.raises(InvalidTypeError):
        quantiles_unbounded(np.arange(10.0), [0.5], epsilon=1.0, side=("a", None), accountant=acc)
    assert acc.history == ()
