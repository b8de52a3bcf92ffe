"""Unknown bounds that said nothing: ``method="auto"`` releases with the recursion instead.

An int-typed column is read in integer mode, where ``method="auto"`` picks the tree after a
private bounds step; at ``n·ε`` of a few hundred the two scans meet, cross or stop at
neighbouring grid points, and the tree on such bounds answered one value for every level
(Adult ages, ``n = 100``, ε = 1: ``[1, 1, 1]``). The rest of the budget now goes to the
recursive method without bounds (:mod:`treedp.quantiles_fallback`).
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import quantiles_run
from treedp.noise import InsecureSeededSource
from treedp.privacy import PureDP
from treedp.quantile_query import QuantilesRequest
from treedp.quantiles_choice import choose_method
from treedp.quantiles_fallback import (
    FALLBACK_METHOD,
    FOUND_RANGE_KEYS,
    fallback_warning,
    found_range_takes,
    plan_fallback,
    plan_found_range,
    within_public_side,
)
from treedp.value_methods.bounds_grid import SIGNED_GRID
from treedp.value_methods.bounds_warnings import grid_end_warning

Q = [0.25, 0.5, 0.75]
SEEDS = range(20)


def _ages(n: int) -> np.ndarray:
    ages = np.asarray(treedp.datasets.load_adult()["age"])
    return np.random.default_rng(TEST_SEED).choice(ages, n).astype(np.int64)


def _rank_gap(x: np.ndarray, answers: Any, qs: list[float]) -> float:
    """The mean distance from each level's target rank to the ranks the answer holds."""
    xs = np.sort(x)
    lo = np.searchsorted(xs, answers, side="left")
    hi = np.searchsorted(xs, answers, side="right")
    target = np.asarray(qs) * x.size
    gap = np.where(target < lo, lo - target, np.where(target > hi, target - hi, 0.0))
    return float(gap.mean())


def _quartiles(x: np.ndarray, seed: int, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        return treedp.quantiles(
            x, Q, bounds="private", epsilon=1.0, rng=InsecureSeededSource(seed), **kwargs
        )


def _within_budget(res: Any, epsilon: float) -> None:
    """The parts (bounds step, then the method) add up to at most the ε charged."""
    total = sum(Fraction(p.measure.epsilon) for p in res.parts)
    assert total <= Fraction(epsilon), (total, [p.mechanism for p in res.parts])
    assert res.guarantee.epsilon <= epsilon


def test_collapsed_bounds_run_the_recursion_on_the_rest() -> None:
    """Adult ages, n = 100, ε = 1 (int64: integer mode, the tree planned): every run whose
    scans collapsed answers with the recursion (finite, sorted integers), and the bounds step
    and the recursion share the ε."""
    x = _ages(100)
    fell_back = 0
    for seed in SEEDS:
        res = _quartiles(x, seed)
        _within_budget(res, 1.0)
        assert res.integer_mode == "column type"
        if res.method == FALLBACK_METHOD:
            fell_back += 1
            assert res.mechanism == "quantiles[recursive]"
            assert len(res.parts) == 2  # the bounds step, then the recursion on the rest
            assert res.bounds_collapsed
            assert "recursive method instead" in str(res.bounds_warning)
            assert np.all(res.value == np.floor(res.value))
            assert np.all(np.isfinite(res.value)) and np.all(np.diff(res.value) >= 0)
        else:  # the scans found a range: the tree on it
            assert res.method == "tree" and not res.bounds_collapsed
    assert fell_back >= len(SEEDS) // 2  # n·ε = 100: the scans mostly collapse


def test_fallback_rank_gap_beats_the_collapsed_tree() -> None:
    """Rank gap over 20 seeded runs (deterministic given the seeds): the fallback's mean is
    within a few records of the recursion given the whole ε, where the tree answered one
    value (a gap of half the records: 50 here)."""
    x = _ages(100)
    auto = np.mean([_rank_gap(x, _quartiles(x, s).value, Q) for s in SEEDS])
    recursive = np.mean(
        [_rank_gap(x, _quartiles(x, s, method="recursive").value, Q) for s in SEEDS]
    )
    assert auto <= 2 * recursive + 2, (auto, recursive)
    tree = np.mean([_rank_gap(x, _quartiles(x, s, method="tree").value, Q) for s in SEEDS])
    assert tree > 4 * auto, (tree, auto)  # what method="tree" (no fallback) still answers


def test_the_warning_says_what_ran() -> None:
    x = _ages(100)
    seed = next(s for s in SEEDS if _quartiles(x, s).method == FALLBACK_METHOD)
    with pytest.warns(treedp.BoundsWarning, match="recursive method instead") as caught:
        treedp.quantiles(x, Q, bounds="private", epsilon=1.0, rng=InsecureSeededSource(seed))
    assert len(caught) == 1 and "not useful" not in str(caught[0].message)


def test_charged_record_names_the_fallback_and_the_whole_epsilon() -> None:
    x = _ages(100)
    acc = treedp.Accountant(PureDP(2.0))
    res = _quartiles(x, 0, accountant=acc)
    (charge,) = acc.history
    assert charge.record.mechanism == "quantiles[tree]"  # the planned method
    assert charge.record.parameters["if_bounds_collapse"] == FALLBACK_METHOD
    assert math.isclose(acc.spent.epsilon, 1.0)  # type: ignore[union-attr]
    _within_budget(res, 1.0)


def test_no_fallback_where_it_is_not_planned() -> None:
    """``method="tree"``: the tree's answer stands (with its warning); the charged record
    names no fallback."""
    x = _ages(100)
    acc = treedp.Accountant(PureDP(2.0))
    res = _quartiles(x, 0, accountant=acc, method="tree")
    assert res.method == "tree" and "if_bounds_collapse" not in acc.history[0].record.parameters


def test_one_public_side_falls_back_inside_it() -> None:
    """Adult ages, n = 300, ε = 0.3, ``bounds=(0, "private")``: the one scan stops beside
    the public 0 and the tree answered one value (every seed of a new user's run); the
    recursion answers instead, clamped into the public side, which the bounds report."""
    x = _ages(300)
    fell_back = 0
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            res = treedp.quantiles(x, Q, bounds=(0, "private"), epsilon=0.3,
                                   rng=InsecureSeededSource(seed))  # fmt: skip
        _within_budget(res, 0.3)
        if res.method == FALLBACK_METHOD:
            fell_back += 1
            assert res.bounds[0] == 0 and res.value.min() >= 0
    assert fell_back >= 3


def test_within_public_side_clamps_and_rounds_inwards() -> None:
    """Clamped into the public side (rounded inwards on integers), the side and the lattice's
    other end reported, and a warning only when every answer lies at or beyond the side."""
    from treedp.value_methods.float_lattice import TOTAL_CELLS, cell_value

    first, last = cell_value(np.array([0, TOTAL_CELLS - 1])).tolist()
    out, bounds, warning = within_public_side(np.array([-5.0, 2.0, 9.0]), (0.5, None), True)
    assert out.tolist() == [1.0, 2.0, 9.0] and bounds == (1.0, last) and warning is None
    out, bounds, warning = within_public_side(np.array([-5.0, 2.0, 9.0]), (None, 7.5), False)
    assert out.tolist() == [-5.0, 2.0, 7.5] and bounds == (first, 7.5) and warning is None
    out, bounds, warning = within_public_side(np.array([0.0, 0.0, 3.0]), (0, None), True)
    assert out.tolist() == [0.0, 0.0, 3.0] and warning is None  # some above the side
    out, _, warning = within_public_side(np.array([-2.0, 0.0]), (0, None), True)
    assert out.tolist() == [0.0, 0.0] and warning is not None and "lower bound" in warning
    out, _, warning = within_public_side(np.array([8.0, 9.0]), (None, 7.5), False)
    assert out.tolist() == [7.5, 7.5] and warning is not None and "wrong side" in warning
    assert within_public_side(np.array([-1e300, 1e300]), (None, None), False)[1:] == (
        (first, last),
        None,
    )


def _fix_the_bounds_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every later call's bounds step releases what the first call's released."""
    split = quantiles_run.split_private_bounds
    fixed: dict[str, Any] = {}

    def same_release(values: Any, **kwargs: Any) -> Any:
        if not fixed:
            fixed["out"] = split(values, **kwargs)
        return fixed["out"]

    monkeypatch.setattr(quantiles_run, "split_private_bounds", same_release)


def test_the_choice_reads_the_released_stops_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Post-processing: with the bounds step's release fixed, the method does not depend on
    the data (a mutant deciding on the data's size or spread fails this)."""
    _fix_the_bounds_release(monkeypatch)
    small, large = _ages(100), _ages(20_000)
    first = _quartiles(small, 0)
    assert first.method == FALLBACK_METHOD  # seed 0 collapses on 100 ages
    assert _quartiles(large, 0).method == FALLBACK_METHOD  # same stops: same choice


def test_a_mutant_spending_the_whole_epsilon_on_the_rest_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The budget check above can fail: a bounds step that reports the whole ε as its rest
    (the fallback then spends it again) exceeds the ε charged."""
    split = quantiles_run.split_private_bounds

    def leaky(values: Any, **kwargs: Any) -> Any:
        bounds, _, bres = split(values, **kwargs)
        return bounds, kwargs["epsilon"], bres

    monkeypatch.setattr(quantiles_run, "split_private_bounds", leaky)
    res = _quartiles(_ages(100), 0)
    assert res.method == FALLBACK_METHOD
    with pytest.raises(AssertionError):
        _within_budget(res, 1.0)


def _request(**changes: Any) -> QuantilesRequest:
    from dataclasses import replace

    base = QuantilesRequest(
        qa=np.array(Q), eps=1.0, relation="add_remove", nan="error", method="auto",
        bins="integers", bounds="private", request=(None, None), share=0.1, known=None,
        n=None, private_n=False, count_share=0.0, scalar=False,
    )  # fmt: skip
    return replace(base, **changes)


def test_plan_fallback_from_public_parameters() -> None:
    plan = dict(unit=None, unbounded=False, counted=False, rest=0.9, m=3)
    assert plan_fallback(_request(), "tree", **plan) == FALLBACK_METHOD  # type: ignore[arg-type]
    one_side = _request(request=(0, None), known="lower")
    assert plan_fallback(one_side, "tree", **plan) == FALLBACK_METHOD  # type: ignore[arg-type]
    refused = [
        (_request(method="tree"), "tree", {}),
        (_request(privacy=object()), "tree", {}),
        (_request(), "tree", {"counted": True}),
        (_request(), "tree", {"unit": "ns"}),
        (_request(), "tree", {"unbounded": True}),
        (_request(), FALLBACK_METHOD, {}),
        (_request(), "tree", {"rest": 1e-9}),  # below the smallest usable ε per selection
    ]
    for req, chosen, change in refused:
        assert plan_fallback(req, chosen, **{**plan, **change}) is None, change  # type: ignore[arg-type]


def test_every_collapse_warning_is_restated() -> None:
    """Each both-sided collapse (meeting, crossing, neighbouring stops, the grid's end) ends
    in the sentence the fallback replaces."""
    zero = int(np.searchsorted(SIGNED_GRID, 0.0))
    stops = [
        (0.0, 0.0),
        (float(SIGNED_GRID[zero + 3]), float(SIGNED_GRID[zero + 1])),
        (float(SIGNED_GRID[zero + 1]), float(SIGNED_GRID[zero + 2])),
        (0.0, float(SIGNED_GRID[-1])),
    ]
    one_sided = [
        (0.0, float(SIGNED_GRID[zero + 2]), "lower"),
        (float(SIGNED_GRID[zero - 2]), 0.0, "upper"),
    ]
    for lo, hi, known in [*((lo, hi, None) for lo, hi in stops), *one_sided]:
        off = grid_end_warning(lo, hi, known)
        assert off is not None
        restated = fallback_warning(off)
        assert "not useful" not in restated and "recursive method instead" in restated
        assert "far outside the data" in restated and ",;" not in restated
    assert grid_end_warning(float(SIGNED_GRID[zero]), float(SIGNED_GRID[zero + 2])) is None


def test_too_many_records_for_a_selection_is_refused_before_the_charge(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The selections state their guarantee for fewer than 2**32 records (4 stands in here):
    a call that may run one after the tree's bounds step (the fallback) is refused before the
    charge, with nothing spent (privacy review, session 17: it was refused after it)."""
    import dataclasses

    from treedp.value_methods import unbounded_quantiles as uq

    monkeypatch.setattr(uq, "CONTRACT", dataclasses.replace(uq.CONTRACT, max_records=4))
    acc = treedp.Accountant(PureDP(2.0))
    with pytest.raises(treedp.DataError, match="2\\*\\*32"):
        _quartiles(np.zeros(5, np.int64), 0, accountant=acc)
    assert acc.history == () and acc.spent.epsilon == 0  # type: ignore[union-attr]
    res = _quartiles(np.zeros(5, np.int64), 0, accountant=acc, method="tree")  # no selection
    assert res.method == "tree" and len(acc.history) == 1


def _wide(n: int, seed: int) -> np.ndarray:
    """Integer incomes: round(lognormal(8, 1)), int64 (the bounds step finds 10^4–10^5
    integers)."""
    return np.round(np.random.default_rng(200 + seed).lognormal(8, 1, n)).astype(np.int64)


def test_wide_found_integer_range_runs_the_recursion_on_the_found_bounds() -> None:
    """Integer incomes, n = 10^4, ε = 1: the found bounds hold more than 4,096 integers, so
    ``auto`` runs the recursion (integer mode) on them, as on public bounds that wide; same
    bounds step as the tree's (same seed), the parts within the ε, and over 5 fixed seeds a
    mean rank gap at most half the tree's (measured 3.2 against 20.7 records). Poisson(30)
    (about 40 integers found) keeps the tree."""
    auto_gaps, tree_gaps = [], []
    for seed in range(5):
        x = _wide(10_000, seed)
        res = _quartiles(x, seed)
        tree = _quartiles(x, seed, method="tree")
        assert res.method == FALLBACK_METHOD and not res.bounds_collapsed
        assert res.bounds == tree.bounds and res.bounds[1] - res.bounds[0] + 1 > 4096
        assert res.parts[0].mechanism == tree.parts[0].mechanism  # the bounds step
        lo, hi = res.bounds  # the recursion ran on the released bounds, not the data's range
        assert res.parts[-1].parameters["bounds"] == (lo, hi + 1)
        _within_budget(res, 1.0)
        values = np.asarray(res.values, dtype=float)
        assert np.all(values == np.round(values))  # integer mode: integers
        assert np.all((res.bounds[0] <= values) & (values <= res.bounds[1]))
        auto_gaps.append(_rank_gap(x, values, Q))
        tree_gaps.append(_rank_gap(x, np.asarray(tree.values, dtype=float), Q))
    assert np.mean(auto_gaps) <= 0.5 * np.mean(tree_gaps), (auto_gaps, tree_gaps)
    counts = np.random.default_rng(1).poisson(30, 10_000).astype(np.int64)
    assert _quartiles(counts, 0).method == "tree"


def _recursion_on(m: int, bounds: tuple[float, float]) -> bool:
    return found_range_takes(m, bounds, FALLBACK_METHOD)


def test_wide_range_is_the_public_bounds_rule_on_the_released_bounds() -> None:
    """More than 4,096 integers and fewer than 64 levels, within the recursion's integer
    range (magnitude below 2**52): the same answer as choose_method gives public bounds."""
    assert not _recursion_on(3, (0.0, 4095.0)) and _recursion_on(3, (0.0, 4096.0))
    assert _recursion_on(63, (-5000.0, 0.0)) and not _recursion_on(64, (-5000.0, 0.0))
    assert not _recursion_on(3, (0.0, 2.0**52)) and _recursion_on(3, (0.0, 2.0**52 - 2))
    for bounds in ((0, 4095), (0, 4096), (-(10**6), 10**6)):
        public = choose_method(3, epsilon=1.0, bins="integers", bounds=bounds)
        assert _recursion_on(3, (float(bounds[0]), float(bounds[1]))) == (public == "recursive")


def test_the_wide_choice_reads_the_released_bounds_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Post-processing: with the bounds step's release fixed (wide), 1,000 narrow Poisson
    counts get the recursion too; a mutant deciding on the data's own range instead would
    run the tree on them."""
    _fix_the_bounds_release(monkeypatch)
    wide = _quartiles(_wide(10_000, 0), 0)
    counts = np.random.default_rng(2).poisson(30, 1000).astype(np.int64)
    narrow = _quartiles(counts, 0)
    assert wide.method == narrow.method == FALLBACK_METHOD  # the released bounds decide
    # ... and are the recursion's bounds (a mutant running it on the data's range fails)
    assert wide.parts[-1].parameters["bounds"] == narrow.parts[-1].parameters["bounds"]


def test_plan_wide_range_from_public_parameters() -> None:
    plan = dict(unbounded=False, counted=False, rest=0.9, m=3)
    assert plan_found_range(_request(), "tree", **plan) == FALLBACK_METHOD  # type: ignore[arg-type]
    refused = [
        (_request(method="tree"), "tree", {}),
        (_request(privacy=object()), "tree", {}),
        (_request(bins=None), "tree", {}),  # real-valued bins: the tree's bins are its own
        (_request(), "tree", {"counted": True}),
        (_request(), "tree", {"unbounded": True}),
        (_request(), "tree", {"m": 64}),  # the tree from 64 levels, as on public bounds
        (_request(), FALLBACK_METHOD, {}),
        (_request(), "tree", {"rest": 1e-9}),
    ]
    for req, chosen, change in refused:
        assert plan_found_range(req, chosen, **{**plan, **change}) is None, change  # type: ignore[arg-type]


def test_charged_record_names_the_wide_range_plan() -> None:
    """Planned, the charged record says ``if_wide_integer_range``; with ``method="tree"``
    nothing is planned and the tree runs on the wide bounds."""
    acc = treedp.Accountant(PureDP(3.0))
    res = _quartiles(_wide(10_000, 0), 0, accountant=acc)
    params = acc.history[0].record.parameters  # type: ignore[union-attr]
    assert params["if_wide_integer_range"] == FALLBACK_METHOD and res.method == FALLBACK_METHOD
    assert acc.history[0].record.mechanism == "quantiles[tree]"  # type: ignore[union-attr]
    res = _quartiles(_wide(10_000, 0), 0, accountant=acc, method="tree")
    assert res.method == "tree" and "if_wide_integer_range" not in acc.history[1].record.parameters  # type: ignore[union-attr]


def _median(x: np.ndarray, seed: int, **kwargs: Any) -> Any:
    """One level on a public lower bound 0 and a found upper bound: with ``n="private"``
    (add/remove) a bounds step runs (without it, the lattice of every float needs none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        return treedp.quantiles(
            x, 0.5, bounds=(0, "private"), n="private", epsilon=1.0,
            rng=InsecureSeededSource(seed), **kwargs,
        )  # fmt: skip


def test_narrow_found_range_runs_permute_and_flip_on_the_rest() -> None:
    """One level on integer bins after a bounds step: found bounds holding at most 2**20
    integers get permute-and-flip over their integers, as public ones do, on the budget the
    exponential mechanism would have had; the record names the plan; ``method="exponential"``
    plans nothing. Both run on the same released bounds (same seed)."""
    counts = np.random.default_rng(3).poisson(30, 2000).astype(np.int64)
    acc = treedp.Accountant(PureDP(3.0))
    res = _median(counts, 0, accountant=acc)
    params = acc.history[0].record.parameters  # type: ignore[union-attr]
    assert res.method == "permute_and_flip" and params[FOUND_RANGE_KEYS[res.method]] == res.method
    assert acc.history[0].record.mechanism == "quantiles[exponential]"  # type: ignore[union-attr]
    _within_budget(res, 1.0)
    lo, hi = res.bounds
    assert lo == 0 and res.parts[-1].parameters["bounds"] == (lo, hi)  # the released bounds
    assert res.value == np.round(res.value) and lo <= res.value <= hi
    plain = _median(counts, 0, accountant=acc, method="exponential")
    assert plain.method == "exponential" and plain.bounds == res.bounds
    assert "if_narrow_integer_range" not in acc.history[1].record.parameters  # type: ignore[union-attr]
    both = _quartiles(counts, 0)  # several levels: the tree, unchanged
    assert both.method == "tree"


def test_the_narrow_choice_reads_the_released_bounds_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Post-processing: with the bounds step's release fixed (a narrow range), data spread
    over 10**7 integers run permute-and-flip on it too; a mutant reading the data's own range
    would run the exponential mechanism."""
    _fix_the_bounds_release(monkeypatch)
    counts = np.random.default_rng(4).poisson(30, 2000).astype(np.int64)
    first = _median(counts, 0)
    spread = np.random.default_rng(5).integers(0, 10**7, 2000)
    again = _median(spread, 0)
    assert first.method == again.method == "permute_and_flip"
    assert again.parts[-1].parameters["bounds"] == first.parts[-1].parameters["bounds"]


def test_found_range_takes_permute_and_flip_on_narrow_bounds_only() -> None:
    """At one level, at most 2**20 integers below 2**53 in magnitude: the public bounds rule
    (choose_method) on the released bounds; never at two levels; the recursion's rule never
    at one level."""
    pf = "permute_and_flip"
    assert found_range_takes(1, (0.0, 2.0**20 - 1), pf)
    assert not found_range_takes(1, (0.0, 2.0**20), pf)
    assert not found_range_takes(1, (2.0**53, 2.0**53 + 8), pf)
    assert not found_range_takes(2, (0.0, 100.0), pf)
    assert not found_range_takes(1, (0.0, 10_000.0), FALLBACK_METHOD)
    plan = dict(unbounded=False, counted=False, rest=0.9, m=1)
    assert plan_found_range(_request(), "exponential", **plan) == pf  # type: ignore[arg-type]
    for req, change in ((_request(method="exponential"), {}), (_request(bins=None), {}),
                        (_request(), {"m": 2}), (_request(), {"unbounded": True}),
                        (_request(), {"rest": 1e-9})):  # fmt: skip
        assert plan_found_range(req, "exponential", **{**plan, **change}) is None, change  # type: ignore[arg-type]


def test_an_answer_at_a_found_bound_near_its_end_warns() -> None:
    """The recursion on found bounds: an answer equal to a found bound at a level within two
    allowances of records of that end of the recursion's released count (its root's side
    counts, ``records``) warns that records clamped onto it may hold the quantile. An answer
    inside them does not."""
    x = np.round(np.random.default_rng(0).lognormal(8, 1, 2000)).astype(np.int64)
    call = {"bounds": "private", "epsilon": 1.0}
    with pytest.warns(treedp.BoundsWarning, match="answered at a privately found bound"):
        top = treedp.quantiles(x, [0.5, 0.995], rng=InsecureSeededSource(1), **call)
    assert top.method == "recursive" and top.value[-1] == top.bounds[1]
    assert top.bounds_warning is not None and "found bound" in top.bounds_warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        inner = treedp.quantiles(x, [0.5, 0.9], rng=InsecureSeededSource(1), **call)
    assert inner.method == "recursive" and inner.bounds_warning is None
    assert top.bounds[0] < inner.value[-1] < top.bounds[1]


def test_a_public_side_beyond_the_integer_mode_is_refused_before_a_bounds_step() -> None:
    """Privacy review (session 21): with ``n="private"`` a bounds step runs and the integer
    mode moved a found pair inside ±(2**52 - 3), the public side too, so the answers fell
    outside it. Such a side is refused before the charge; without ``n="private"`` (over every
    float, no step) it runs and the answers keep the side."""
    x = np.full(300, 2**53 - 3, dtype=np.int64)
    acc = treedp.Accountant(PureDP(5.0))
    for bounds in ((2**52, "private"), ("private", -(2**52))):
        data = x if bounds[0] != "private" else -x
        with pytest.raises(treedp.InvalidParameterError, match="public side"):
            treedp.quantiles(data, 0.5, epsilon=1.0, bounds=bounds, bins="integers",
                             n="private", accountant=acc)  # fmt: skip
        assert acc.history == ()
        res = treedp.quantiles(data, 0.5, epsilon=1.0, bounds=bounds, bins="integers",
                               rng=InsecureSeededSource(1))  # fmt: skip
        assert (res.value >= 2**52) if bounds[0] != "private" else (res.value <= -(2**52))


def test_the_tree_warns_when_a_tail_level_is_answered_at_a_found_bound() -> None:
    """Adult capital_gain (int, 8% above 12), ε = 0.1: the scans found ``[0, 12]`` and the
    tree answered 12 at q = 0.95 and 0.99 (true 5,013 and 15,024) with only the first bin's
    warning; a level answered at a found bound within two allowances of records of that end of
    the tree's released total now says the quantile may lie further out. A level far from the
    end answered at the bound (a point mass there) does not (:func:`near_found_end`)."""
    from treedp.value_methods.bounds_warnings import near_found_end

    x = np.asarray(treedp.datasets.load_adult()["capital_gain"], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        res = treedp.quantiles(x, [0.5, 0.9, 0.95, 0.99], bounds="private", epsilon=0.1,
                               rng=InsecureSeededSource(3))  # fmt: skip
    assert res.method == "tree" and res.value[-1] == res.bounds[1]
    assert res.bounds_warning is not None and "answered at a privately found bound" in (
        res.bounds_warning
    )
    # The rule alone: released answers, levels, bounds, allowance and count only.
    assert near_found_end([12.0], [0.99], (0.0, 12.0), 1200.0, 48842.0)
    assert not near_found_end([12.0], [0.5], (0.0, 12.0), 1200.0, 48842.0)  # 24,421 above
    assert near_found_end([0.0], [0.01], (0.0, 12.0), 1200.0, 48842.0)  # the lower end
    assert not near_found_end([11.0], [0.99], (0.0, 12.0), 1200.0, 48842.0)  # inside


def test_the_recursions_count_keeps_a_block_at_a_found_bound_from_warning() -> None:
    """Adult capital_gain (int; 92% zeros, found range of about 10^5 integers: the recursion),
    ε = 1: the median and q = 0.9 are the block at 0, the found lower bound. Without a count
    every such answer warned that the quantile may lie further out (a warning on every run of
    a zero-inflated amount); the recursion's released count (its root's side counts) puts
    those levels about 24,000 and 44,000 records from that end, far beyond the scans'
    allowance (120), so only a tail level answered at a bound warns."""
    x = np.asarray(treedp.datasets.load_adult()["capital_gain"], dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        res = treedp.quantiles(x, [0.5, 0.9, 0.95, 0.99], bounds="private", epsilon=1.0,
                               rng=InsecureSeededSource(0))  # fmt: skip
    assert res.method == "recursive" and res.bounds_warning is None
    assert res.value[0] == res.value[1] == res.bounds[0] == 0
    rec = treedp.quantiles_recursive(x, [0.5, 0.9], bounds=(0, 10**5), epsilon=1.0,
                                     rng=InsecureSeededSource(0), details=True)  # fmt: skip
    assert rec.records is not None and abs(rec.records - x.size) < 1000  # sd 73 (200 seeds)
    one = treedp.quantiles_recursive(x, 0.5, bounds=(0, 10**5), epsilon=1.0,
                                     rng=InsecureSeededSource(0), details=True)  # fmt: skip
    assert one.records is None  # one level: no side counts
