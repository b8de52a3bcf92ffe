"""How the planner scores the square-root factorisation (issue 33): exactly up to 2^19 bins, by
the measured rule above (``treedp.mechanisms.sqrt_plan``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import treedp
from treedp.mechanisms import sqrt_lattice as lat
from treedp.mechanisms import sqrt_plan as sp
from treedp.mechanisms import sqrt_rows as sr
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, plan_candidate


def _svd_bound(n_bins: int, rho: float) -> float:
    k = np.arange(1, n_bins + 1, dtype=np.float64)
    nuclear = float(np.sum(1.0 / (2.0 * np.sin((2 * k - 1) * np.pi / (4 * n_bins + 2)))))
    return nuclear**2 / (2 * rho * n_bins**2)


@pytest.mark.parametrize("n_bins", [2, 7, 4096, 4097, 100_000, 2**20 + 1, 3 * 2**21])
def test_svd_bound_from_above(n_bins: int) -> None:
    """The O(1) evaluation is never below the exact sum, and within 1e-8 of it."""
    exact = _svd_bound(n_bins, 0.3)
    above = sp.svd_bound_above(n_bins, 0.3)
    assert exact <= above <= exact * (1 + 1e-8)


def test_rule_applies_only_where_measured() -> None:
    b = sp.EXACT_PLAN_LIMIT + 1
    assert sp.rule_applies(b, 0.5, "add_remove")
    assert not sp.rule_applies(b, 0.5, "replace")
    assert not sp.rule_applies(sp.EXACT_PLAN_LIMIT, 0.5, "add_remove")
    assert not sp.rule_applies(sp.PLAN_LIMIT + 1, 0.5, "add_remove")
    # The scale's lower bound never exceeds the scale the mechanism chooses; where the rule
    # applies, the default is scaled rows at a scale of at least 8 sqrt(B).
    for n_bins in (b,):
        for rho in (1e-4, 2e-3, 0.5):
            scale = lat.choose_scale(n_bins, rho, "add_remove", sr.ROWS_RESOLUTION**2)
            assert sp.scale_below(n_bins, rho) <= scale
            if sp.rule_applies(n_bins, rho, "add_remove"):
                assert scale * scale >= 64 * n_bins
                assert sr.rows_default(n_bins, rho, "add_remove", None)
    assert sp.scale_below(3 * 2**20, 0.5) == lat.MAX_SCALE
    assert sp.rule_applies(2**20, 1e-3, "add_remove")
    assert not sp.rule_applies(2**20, 1e-4, "add_remove")  # a smaller scale: not measured
    assert plan_candidate(2**21, 1e-4, "add_remove", "gaussian", "cdf_mse") is None
    assert plan_candidate(2**21, 0.5, "replace", "gaussian", "cdf_mse") is None
    assert plan_candidate(2**24 + 1, 0.5, "add_remove", "gaussian", "cdf_mse") is None


def test_rule_bounds_the_exact_figures_just_above_the_exact_limit() -> None:
    """At 2^19 + 1 (the rule's largest measured ratios) the candidate's figures are above the
    mechanism's exact ones (its covariance), by at most the rule's margin."""
    n_bins, rho = sp.EXACT_PLAN_LIMIT + 1, 0.5
    mech = SqrtFactorizationMechanism(n_bins, rho=rho)
    assert mech.rows and mech.scale == lat.MAX_SCALE
    cov = mech.covariance()
    var = cov.var(np.arange(1, n_bins + 1))
    rng = ((n_bins + 1) * float(var.sum()) - cov.prefix_sum_covariance()) / (
        n_bins * (n_bins + 1) / 2
    )
    exact = {"cdf_mse": float(var.mean()), "max_variance": float(var.max()), "range_mse": rng}
    for objective, value in exact.items():
        cand = plan_candidate(n_bins, rho, "add_remove", "gaussian", objective)
        assert cand is not None and "measured rule" in cand.how
        assert value <= cand.value <= value * 1.06
        assert cand.mean_cdf_mse is not None and exact["cdf_mse"] <= cand.mean_cdf_mse
        assert cand.max_cdf_variance is not None and exact["max_variance"] <= cand.max_cdf_variance


def test_exact_candidate_up_to_the_limit_skips_the_l1() -> None:
    """Up to the exact limit the scaled rows' candidate is the mechanism's exact figure, from
    ``Δ₂²`` alone (the contract's ``Δ₁`` is computed when the mechanism is built)."""
    n_bins = 2**15
    sr.row_l1.cache_clear()
    cand = plan_candidate(n_bins, 0.5, "add_remove", "gaussian", "max_variance")
    assert sr.row_l1.cache_info().currsize == 0
    mech = SqrtFactorizationMechanism(n_bins, rho=0.5)
    var = mech.covariance().var(np.arange(1, n_bins + 1))
    assert cand is not None and cand.value == pytest.approx(float(var.max()), rel=1e-12)
    assert cand.mean_cdf_mse == pytest.approx(float(var.mean()), rel=1e-12)


def test_auto_picks_the_factorisation_at_2_21() -> None:
    """Above 2^20 ``auto`` releases the factorisation (before issue 33: a tree, 1.58× the
    bound against 1.037×)."""
    plan = treedp.plan(2**21, privacy=treedp.ZCDP(0.5))
    assert plan.mechanism == "sqrt_factorization"
    tree = min(c.value for c in plan.alternatives if not c.offered)
    assert plan.mean_cdf_mse < 0.7 * tree
    assert math.isclose(plan.mean_cdf_mse, 1.045 * sp.svd_bound_above(2**21, 0.5))
    # A budget so large that the tree's discrete Gaussian noise is far below its σ²: the tree.
    assert treedp.plan(2**21, privacy=treedp.ZCDP(1000.0)).mechanism == "tree"


@pytest.mark.parametrize("n_bins", [94, 1024])
def test_an_explicit_prefix_workload_scores_the_factorisation_exactly(n_bins: int) -> None:
    """``plan(privacy=ZCDP(ρ), workload=[prefixes])`` scores the factorisation on those
    prefixes (the mean of their exact variances) instead of leaving it out: it used to pick a
    tree 1.3–1.5 times worse on that very workload (94 bins: 7.89 against 6.27). Ranges other
    than prefixes are still left to the trees."""
    rho = 0.405
    prefixes = list(range(3, n_bins - 10))
    plan = treedp.plan(n_bins, privacy=treedp.ZCDP(rho), workload=prefixes)
    assert plan.mechanism == "sqrt_factorization"
    mech = SqrtFactorizationMechanism(n_bins, rho=rho)
    exact = float(np.mean(mech.covariance().var(np.array(prefixes))))
    assert plan.predicted == pytest.approx(exact, rel=1e-9)
    ranges = treedp.plan(n_bins, privacy=treedp.ZCDP(rho), workload=[(1, 5), (2, 9)])
    assert ranges.mechanism != "sqrt_factorization"
