"""The planner optimises for the workload the user names (issue #19 item 3): shapes screened by
the exact workload error, the strategy candidate scored on an explicit workload, exact errors
against dense least squares."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from tests.test_planning_frontier import _dense_gls, _range_variance
from treedp.mechanisms.baselines import histogram_variance as _histogram_variance
from treedp.mechanisms.tree import TreeMechanism
from treedp.planning import Workload
from treedp.planning.search import SEARCH_RANGES as _SEARCH_RANGES
from treedp.strategy.candidate import plan_candidate, workload_error
from treedp.strategy.store import padded_strategy, shipped_strategy
from treedp.tree import TreeShape


def _short_ranges(n_bins: int, count: int, longest: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, n_bins - longest, count)
    return [
        (int(a), int(a + k)) for a, k in zip(lo, rng.integers(1, longest + 1, count), strict=False)
    ]


def _plan_error(p: treedp.Plan, workload: Workload) -> float:
    """A plan's exact error on a workload, whatever its mechanism."""
    if p.mechanism == "tree":
        mech = TreeMechanism(
            TreeShape(p.bins, p.branching), epsilon=p.epsilon, level_budgets=p.level_budgets
        )
        return workload.tree_variance(mech.shape, mech.block_variance(), "efficient")
    if p.mechanism == "histogram":
        return workload.independent_variance(_histogram_variance(p.bins, p.epsilon), False)
    if p.mechanism == "strategy_padded":
        strategy = padded_strategy(p.bins)
    else:
        kind = {"strategy": "prefix", "strategy_range": "range"}[p.mechanism]
        strategy = shipped_strategy(p.bins, kind)
    assert strategy is not None
    return workload_error(strategy, p.epsilon, p.neighbours, workload)


def test_reported_error_is_the_dense_gls() -> None:
    n_bins = 48
    ranges = [*_short_ranges(n_bins, 10, 16, seed=1), 40, 30, 20, (5, 45)]
    p = treedp.plan(n_bins, epsilon=1.0, workload=ranges)
    assert p.objective == "workload_mse" and p.mechanism == "tree"
    mech = TreeMechanism(TreeShape(n_bins, p.branching), epsilon=1.0, level_budgets=p.level_budgets)
    cov = _dense_gls(mech.shape, mech.block_variance())
    pairs = [(0, r) if isinstance(r, int) else r for r in ranges]
    brute = np.mean([_range_variance(cov, a, c) for a, c in pairs])
    assert p.predicted == pytest.approx(brute, rel=1e-9)


def test_long_workload_is_scored_on_all_its_ranges() -> None:
    """The search sees a subset; the reported error is the whole workload's, exactly."""
    n_bins = 120
    ranges = _short_ranges(n_bins, 3 * _SEARCH_RANGES, 30, seed=2)
    p = treedp.plan(n_bins, epsilon=1.0, workload=ranges)
    assert p.mechanism == "tree"
    w = Workload.from_ranges(ranges, n_bins)
    assert p.predicted == pytest.approx(_plan_error(p, w), rel=1e-12)
    mech = TreeMechanism(TreeShape(n_bins, p.branching), epsilon=1.0, level_budgets=p.level_budgets)
    cov = _dense_gls(mech.shape, mech.block_variance())
    brute = np.mean([_range_variance(cov, a, c) for a, c in ranges])
    assert p.predicted == pytest.approx(brute, rel=1e-9)
    for c in p.alternatives:  # every alternative's value is on the same, whole workload
        if c.mechanism == "tree":
            shape = TreeShape(n_bins, c.branching)
            m = TreeMechanism(shape, epsilon=1.0, level_budgets=c.level_budgets)
            assert c.value == pytest.approx(
                w.tree_variance(shape, m.block_variance(), "efficient"), rel=1e-12
            )


@pytest.mark.parametrize(("n_bins", "longest"), [(600, 3), (1024, 40)])
def test_short_ranges_beat_the_cdf_plan(n_bins: int, longest: int) -> None:
    ranges = _short_ranges(n_bins, 200, longest, seed=3)
    w = Workload.from_ranges(ranges, n_bins)
    p = treedp.plan(n_bins, epsilon=1.0, workload=ranges)
    cdf = treedp.plan(n_bins, epsilon=1.0)
    assert p.predicted == pytest.approx(_plan_error(p, w), rel=1e-12)
    assert p.predicted < _plan_error(cdf, w) * 0.9  # strictly (here by more than 10%)


def test_strategy_candidate_is_exact_on_an_explicit_workload() -> None:
    n_bins = 256
    ranges = [*_short_ranges(n_bins, 50, 40, seed=4), 100, 255]
    w = Workload.from_ranges(ranges, n_bins)
    cand = plan_candidate(n_bins, 1.0, "add_remove", "laplace", "cdf_mse", workload=w)
    assert cand is not None
    # dense least squares for the shipped strategy it names
    kind = "range" if cand.mechanism == "strategy_range" else "prefix"  # type: ignore[attr-defined]
    strategy = shipped_strategy(n_bins, kind)
    assert strategy is not None
    l1, _ = strategy.sensitivity("add_remove")
    from treedp.noise import noise_scale
    from treedp.noise.families import DiscreteLaplace

    var = DiscreteLaplace(noise_scale(l1, 1.0)).variance()
    mat = strategy.matrix().astype(np.float64)
    leaves = var * np.linalg.inv(mat.T @ mat)
    brute = np.mean(
        [_range_variance(leaves, int(a), int(c)) for a, c in zip(w.lo, w.hi, strict=False)]
    )
    assert cand.value == pytest.approx(brute, rel=1e-8)  # type: ignore[attr-defined]
    # the better of the two shipped strategies on this workload
    other = shipped_strategy(n_bins, "prefix" if kind == "range" else "range")
    assert other is not None
    assert cand.value <= workload_error(other, 1.0, "add_remove", w)  # type: ignore[attr-defined]


@pytest.mark.parametrize("n_bins", [256, 1024, 4096])
def test_ranges_choose_the_range_strategy_where_it_wins(n_bins: int) -> None:
    p = treedp.plan(n_bins, epsilon=1.0, workload="ranges")
    trees = [c.value for c in p.alternatives if c.mechanism == "tree"]
    assert p.mechanism == "strategy_range" and p.predicted < min(trees)


def test_all_ranges_listed_choose_a_strategy() -> None:
    """An explicit list of every range is scored like ``"ranges"`` (same exact error)."""
    n_bins = 256
    ranges = [(a, c) for a in range(0, n_bins, 4) for c in range(a + 1, n_bins + 1, 4)]
    p = treedp.plan(n_bins, epsilon=1.0, workload=ranges)
    assert p.mechanism in ("strategy", "strategy_range")
    w = Workload.from_ranges(ranges, n_bins)
    assert p.predicted == pytest.approx(_plan_error(p, w), rel=1e-12)


@pytest.mark.slow
def test_large_domain_workload_plans() -> None:
    """B = 65536 with short ranges: the budget polish may drive a level to a budget too small
    for exact noise; that configuration is skipped (it used to raise)."""
    n_bins = 65536
    p = treedp.plan(n_bins, epsilon=1.0, workload=_short_ranges(n_bins, 100, 63, seed=0))
    assert p.objective == "workload_mse" and np.isfinite(p.predicted)


def test_repeated_ranges_are_weighted_exactly() -> None:
    """A long workload scores each distinct range once, weighted by its count: the same mean."""
    n_bins = 200
    rng = np.random.default_rng(6)
    lo = rng.integers(0, n_bins - 20, 20000)
    hi = lo + rng.integers(1, 21, 20000)
    w = Workload(n_bins, lo, hi)
    shape = TreeShape(n_bins, (10, 20))
    variances = (np.inf, 3.0, 5.0)
    from treedp.estimation.covariance import EfficientTreeCovariance
    from treedp.estimation.efficient import VariancePlan

    cov = EfficientTreeCovariance(VariancePlan(shape, variances))
    plain = np.mean(cov.cov(hi, hi) + cov.cov(lo, lo) - 2 * cov.cov(lo, hi))
    assert w.tree_variance(shape, variances, "efficient") == pytest.approx(plain, rel=1e-12)
