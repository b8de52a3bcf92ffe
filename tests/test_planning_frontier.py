"""The planner finds the best tree: mixed radices, the root switched off, free level budgets,
workloads, and the release of such a plan end to end."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import treedp
from treedp.estimation.dispatch import estimate_prefix
from treedp.estimation.objectives import mean_prefix_variance, mean_range_variance
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.tree import TreeMechanism
from treedp.noise import InsecureSeededSource
from treedp.planning import Workload
from treedp.privacy.measures import ZCDP
from treedp.tree import TreeShape

#: Issue #19's "best tree with tuned level budgets" column: mean per-prefix CDF MSE at ε = 1,
#: add_remove, continuous Laplace variance 2Δ²/ε².
TARGETS = {256: 69.3, 1024: 119.0, 4096: 197.2}


def _dense_gls(shape: TreeShape, variances: tuple[float, ...]) -> np.ndarray:
    """Covariance of the leaves' GLS estimate from every measured node (dense, brute force)."""
    rows, weights = [], []
    b = shape.n_bins
    for level, var in enumerate(variances):
        if math.isinf(var):
            continue
        span = shape.span(level)
        for node in range(shape.level_sizes()[level]):
            row = np.zeros(b)
            row[node * span : min((node + 1) * span, b)] = 1.0
            rows.append(row)
            weights.append(1.0 / var)
    a = np.array(rows)
    return np.linalg.inv(a.T @ (np.array(weights)[:, None] * a))


def _range_variance(cov: np.ndarray, lo: int, hi: int) -> float:
    c = np.zeros(cov.shape[0])
    c[lo:hi] = 1.0
    return float(c @ cov @ c)


@pytest.mark.parametrize("n_bins", sorted(TARGETS))
def test_the_best_tree_meets_the_issue_column(n_bins: int) -> None:
    p = treedp.plan(n_bins, epsilon=1.0)
    # the best tree the planner scored (the plan itself may be a non-tree strategy that wins)
    best = min((c for c in p.alternatives if c.mechanism == "tree"), key=lambda c: c.value)
    assert best.level_budgets[0] == 0  # the root is switched off
    assert p.mean_cdf_mse <= best.value
    # exact discrete Laplace variances (what treedp releases)
    assert best.value <= TARGETS[n_bins] * 1.01
    # and the issue's own measure, continuous Laplace 2/ε² per node, for the same tree
    proxy = tuple(2.0 / e**2 if e > 0 else math.inf for e in best.level_budgets)
    value = mean_prefix_variance(TreeShape(n_bins, best.branching), proxy)
    assert value <= TARGETS[n_bins] * 1.01


def test_the_objective_with_the_root_off_is_the_dense_gls() -> None:
    """The closed form with an unobserved root / middle level against dense least squares."""
    rng = np.random.default_rng(5)
    for n_bins, branching in [(30, (2, 4, 4)), (27, (3, 3, 3)), (40, (5, 9)), (17, (3, 2, 3))]:
        shape = TreeShape(n_bins, branching)
        for off in ([0], [1], [0, 1]):
            var = [float(v) for v in rng.uniform(0.5, 20.0, shape.height + 1)]
            for lv in off:
                var[lv] = math.inf
            cov = _dense_gls(shape, tuple(var))
            brute = np.mean([_range_variance(cov, 0, m) for m in range(1, n_bins + 1)])
            assert mean_prefix_variance(shape, tuple(var)) == pytest.approx(brute, rel=1e-9)
            ranges = [(a, c) for a in range(n_bins) for c in range(a + 1, n_bins + 1)]
            brute_r = np.mean([_range_variance(cov, a, c) for a, c in ranges])
            assert mean_range_variance(shape, tuple(var)) == pytest.approx(brute_r, rel=1e-9)


def test_explicit_workload_error_is_the_dense_gls() -> None:
    n_bins = 40
    ranges = [(0, 7), (3, 19), (10, 11), (25, 40), 33]
    p = treedp.plan(n_bins, epsilon=1.0, workload=ranges)
    assert p.objective == "workload_mse" and p.workload == "5 given ranges"
    assert p.mechanism == "tree"
    mech = TreeMechanism(TreeShape(n_bins, p.branching), epsilon=1.0, level_budgets=p.level_budgets)
    cov = _dense_gls(mech.shape, mech.block_variance())
    pairs = [(0, r) if isinstance(r, int) else r for r in ranges]
    brute = np.mean([_range_variance(cov, a, c) for a, c in pairs])
    assert p.predicted == pytest.approx(brute, rel=1e-9)
    # and it is no worse for its workload than the CDF plan is (a strategy here)
    from tests.test_planning_workloads import _plan_error  # (it imports this module)

    w = Workload.from_ranges(ranges, n_bins)
    assert p.predicted <= _plan_error(treedp.plan(n_bins, epsilon=1.0), w) * (1 + 1e-9)


def test_workload_names_map_to_the_objectives() -> None:
    a = treedp.plan(300, epsilon=1.0, workload="ranges")
    b = treedp.plan(300, epsilon=1.0, objective="range_mse")
    assert (a.objective, a.workload, a.predicted) == ("range_mse", "ranges", b.predicted)
    c = treedp.plan(300, epsilon=1.0, workload="cdf")
    assert c.predicted == treedp.plan(300, epsilon=1.0).predicted
    assert treedp.plan(300, epsilon=1.0, objective="max_variance").workload.startswith("cdf")


@pytest.mark.parametrize(
    ("workload", "kwargs", "error"),
    [
        ("prefixes", {}, InvalidParameterError),
        ([(0, 0)], {}, InvalidParameterError),
        ([(5, 3)], {}, InvalidParameterError),
        ([(0, 301)], {}, InvalidParameterError),
        ([], {}, InvalidParameterError),
        ([(0, 1.5)], {}, InvalidTypeError),
        ([(0, 1, 2)], {}, InvalidTypeError),
        ([True], {}, InvalidTypeError),
        (3, {}, InvalidTypeError),
        ("ranges", {"objective": "max_variance"}, InvalidParameterError),
        ([(0, 5)], {"objective": "range_mse"}, InvalidParameterError),
    ],
)
def test_bad_workloads_are_refused(workload: object, kwargs: dict, error: type) -> None:
    with pytest.raises(error) as info:
        treedp.plan(300, epsilon=1.0, workload=workload, **kwargs)  # type: ignore[arg-type]
    assert type(info.value) is error


def test_describe_shows_levels_off() -> None:
    # a B and objective where a tree with its root off wins (strategies ship for every B
    # from 11 bins up under the CDF objective since session 31; ranges at 50 are a tree's)
    p = treedp.plan(50, epsilon=1.0, objective="range_mse")
    text = p.describe()
    assert "root 0 (blocks of" in text and "OFF (not released" in text
    r = treedp.plan(1024, epsilon=1.0, neighbours="replace", n=100)
    assert "exact (n is public)" in r.describe()


def test_a_plan_with_the_root_off_releases_unbiased_estimates() -> None:
    """Exact algebra: on noise-free blocks (the off level published as 0) the efficient
    estimate is the true prefix, for the root off and for a middle level off."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 50, 1000)
    truth = np.concatenate([[0], np.cumsum(counts)])
    p = treedp.plan(1000, epsilon=1.0)  # its best tree (a padded strategy wins at 1000 bins)
    best = min((c for c in p.alternatives if c.mechanism == "tree"), key=lambda c: c.value)
    assert best.level_budgets[0] == 0.0  # the root off
    for budgets, branching in [
        (best.level_budgets, best.branching),
        ((0.2, 0.0, 0.35, 0.45), (4, 8, 32)),
        ((0.0, 0.5, 0.0, 0.5), (4, 8, 32)),
    ]:
        mech = TreeMechanism(TreeShape(1000, branching), epsilon=1.0, level_budgets=budgets)
        blocks = mech.true_blocks(counts)
        for lv in mech.off_levels:
            assert not blocks[lv].any()  # nothing of the data in an off level
        est = estimate_prefix(mech, blocks, "efficient")
        np.testing.assert_allclose(est, truth, rtol=1e-9, atol=1e-6)
        assert mech.epsilon_spent() <= 1.0
        with pytest.raises(InvalidParameterError, match="direct"):
            estimate_prefix(mech, blocks, "direct")


def test_a_middle_level_off_is_the_merged_tree() -> None:
    shape = TreeShape(1000, (4, 8, 32))
    merged = TreeShape(1000, (32, 32))
    var = (3.0, math.inf, 5.0, 7.0)
    assert mean_prefix_variance(shape, var) == pytest.approx(
        mean_prefix_variance(merged, (3.0, 5.0, 7.0)), rel=1e-12
    )


def test_release_with_the_plan_end_to_end(tmp_path: Path) -> None:
    values = np.random.default_rng(0).integers(0, 50, 20_000)
    p = treedp.plan(50, epsilon=1.0, objective="range_mse")  # a tree with its root off
    assert p.mechanism == "tree"
    release = treedp.release_cdf(
        values, bounds=(0, 50), bins=50, epsilon=1.0, plan=p, rng=InsecureSeededSource(4)
    )
    assert release.mechanism.off_levels == (0,)
    path = tmp_path / "r.treedp"
    release.save(path)
    loaded = treedp.load_release(path)
    assert loaded.cdf(8) == release.cdf(8)
    # the passed-back budgets release the same configuration
    again = treedp.release_cdf(
        values,
        bounds=(0, 50),
        bins=50,
        epsilon=1.0,
        rng=InsecureSeededSource(4),
        mechanism=treedp.MechanismOptions(
            "auto", branching=p.branching, level_budgets=p.level_budgets
        ),
    )
    assert again.cdf(8) == release.cdf(8)


def test_gaussian_plans_may_switch_the_root_off_too() -> None:
    p = treedp.plan(4096, privacy=ZCDP(1.0))
    best = min((c for c in p.alternatives if c.mechanism == "tree"), key=lambda c: c.value)
    mech = TreeMechanism(TreeShape(4096, best.branching), rho=1.0, level_budgets=best.level_budgets)
    assert float(mech.rho_spent()) <= 1.0


def test_planning_at_2_to_the_24_needs_no_scipy_optimize() -> None:
    """Speed is measured by benchmarks/bench_planning.py (docs/planning.md), not asserted."""
    assert treedp.plan(2**24, epsilon=1.0).mechanism == "tree"
    code = (
        "import sys, treedp; treedp.plan(4096, epsilon=1.0); print('scipy.optimize' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_cli_plan_takes_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    from treedp.cli import main

    assert main(["plan", "--bins", "200", "--epsilon", "1", "--workload", "0:10,50:90,120"]) == 0
    out = capsys.readouterr().out
    assert "workload 3 given ranges" in out and "objective workload_mse" in out
    assert "OFF (not released" in out and "(root off)" in out
    assert main(["plan", "--bins", "200", "--epsilon", "1", "--workload", "ranges"]) == 0
    assert "workload ranges" in capsys.readouterr().out
    assert main(["plan", "--bins", "200", "--epsilon", "1", "--workload", "0:x"]) == 2
    assert main(["plan", "--bins", "200", "--epsilon", "1", "--workload", "0:300"]) == 2


class _LeakyRootOff(TreeMechanism):
    """A mutant: the root is 'switched off' (no budget, no noise) but its true count is
    published instead of 0."""

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        return self.shape.aggregate(counts)


@pytest.mark.slow
def test_privacy_audit_of_a_root_off_tree_and_a_leaky_mutant() -> None:
    """The statistical auditor (false-failure rate 1e-6) passes the honest tree with the root
    off and flags the mutant that publishes the unnoised root."""
    from tests.privacy.auditor import audit_mechanism
    from tests.stats import TEST_SEED

    shape = TreeShape(16, (2, 2, 4))
    budgets = (0.0, 0.3, 0.3, 0.4)
    d = np.full(16, 3, dtype=np.int64)
    d2 = d.copy()
    d2[0] += 1
    honest = TreeMechanism(shape, epsilon=1.0, level_budgets=budgets)
    assert honest.off_levels == (0,) and honest.scales[0] is None
    ok = audit_mechanism(honest, d, d2, runs=100_000, source=InsecureSeededSource(TEST_SEED))
    assert not ok.flagged, ok
    leaky = _LeakyRootOff(shape, epsilon=1.0, level_budgets=budgets)
    bad = audit_mechanism(leaky, d, d2, runs=100_000, source=InsecureSeededSource(TEST_SEED))
    assert bad.flagged, bad
