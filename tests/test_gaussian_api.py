"""Asking for a Gaussian release by target guarantee: API, spec, plan, predict_error, CLI."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.call_forms import release_kwargs
from tests.stats import TEST_SEED, z_two_sided
from treedp import ZCDP, ApproxDP, InsecureSeededSource, PureDP, ReleaseSpec
from treedp.cli import main
from treedp.estimation import prefix_covariance
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.measures import zcdp_to_epsilon
from treedp.release.inference import LATTICE
from treedp.spec import rho_for_approx_dp

VALUES = np.random.default_rng(TEST_SEED).normal(50, 12, size=3000)


@pytest.mark.parametrize(
    ("epsilon", "delta"), [(1.0, 1e-6), (1.0, 1e-9), (0.1, 1e-6), (10.0, 1e-3), (1e-6, 1e-5)]
)
def test_rho_for_approx_dp_is_the_largest_valid_rho(epsilon: float, delta: float) -> None:
    rho = rho_for_approx_dp(epsilon, delta)
    assert zcdp_to_epsilon(rho, delta) <= epsilon
    assert zcdp_to_epsilon(rho * (1 + 1e-9), delta) > epsilon * (1 - 1e-12)
    # at least the ρ of the loose conversion ρ + 2 sqrt(ρ ln(1/δ)) = ε
    log_inv = math.log(1 / delta)
    loose = (math.sqrt(log_inv + epsilon) - math.sqrt(log_inv)) ** 2
    assert rho >= loose


def test_release_by_target_guarantee() -> None:
    kw = {"bounds": (0, 100), "bins": 128}
    rel = treedp.release_cdf(VALUES, privacy=ZCDP(0.5), rng=InsecureSeededSource(1), **kw)
    assert isinstance(rel.guarantee, ZCDP) and rel.guarantee.rho <= 0.5
    assert rel.mechanism.noise == "gaussian"  # type: ignore[attr-defined]
    assert sum(rel.level_budgets) == pytest.approx(0.5, rel=1e-9)
    assert rel.epsilon == math.inf
    target = ApproxDP(1.0, 1e-6)
    rel2 = treedp.release_cdf(VALUES, privacy=target, rng=InsecureSeededSource(1), **kw)
    assert rel2.guarantee.to_approx(1e-6).epsilon <= 1.0  # type: ignore[union-attr]
    # PureDP(ε) is epsilon=ε exactly (same Laplace mechanism, same noise)
    a = treedp.release_cdf(VALUES, privacy=PureDP(1.0), rng=InsecureSeededSource(2), **kw)
    b = treedp.release_cdf(VALUES, epsilon=1.0, rng=InsecureSeededSource(2), **kw)
    assert a.metadata() == b.metadata() and (a.cdf([30, 50]) == b.cdf([30, 50])).all()
    counts, _ = np.histogram(np.clip(VALUES, 0, 99.999), bins=128, range=(0, 100))
    rel3 = treedp.release_counts(counts, privacy=ZCDP(0.5), rng=InsecureSeededSource(1))
    assert isinstance(rel3.guarantee, ZCDP)
    # replace: the root is the public n
    rel4 = treedp.release_cdf(
        VALUES, privacy=ZCDP(0.5), neighbours="replace", n=VALUES.size, mechanism="tree", **kw
    )
    assert rel4.n == VALUES.size and rel4.level_budgets[0] == 0.0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"privacy": ZCDP(0.0)}, InvalidParameterError, "rho"),
        ({"privacy": ZCDP(1e-9)}, InvalidParameterError, "rho"),
        ({"privacy": ApproxDP(1.0, 0.0)}, InvalidParameterError, "delta"),
        ({"privacy": ApproxDP(1.0, 0.01)}, InvalidParameterError, "delta"),
        ({"privacy": ApproxDP(0.0, 1e-6)}, InvalidParameterError, "epsilon"),
        ({"privacy": ZCDP(0.5), "epsilon": 1.0}, InvalidParameterError, "not both"),
        ({"privacy": 0.5}, InvalidTypeError, "privacy"),
        ({}, InvalidTypeError, "epsilon"),
        ({"privacy": ZCDP(0.5), "mechanism": "histogram"}, InvalidParameterError, "Gaussian"),
    ],
)
def test_bad_targets_are_refused(kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ReleaseSpec(bins=64, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        treedp.release_cdf(VALUES, bounds=(0, 100), bins=64, **kwargs)  # type: ignore[arg-type]
    if "mechanism" not in kwargs:  # plan() always plans the tree (or histogram)
        with pytest.raises(error, match=match):
            treedp.plan(64, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(error, match=match):
        treedp.predict_error(64, **release_kwargs(kwargs))  # type: ignore[arg-type]


def test_plan_and_prediction_agree_and_use_gaussian_variances() -> None:
    p = treedp.plan(1024, privacy=ZCDP(0.5))
    assert p.noise == "gaussian" and p.rho == 0.5 and p.epsilon == math.inf
    assert sum(p.level_budgets) == pytest.approx(0.5)
    pred = treedp.predict_error(1024, privacy=ZCDP(0.5), plan=p)
    assert pred.mean_cdf_mse == pytest.approx(p.mean_cdf_mse, rel=1e-9)
    assert pred.level_budgets == pytest.approx(p.level_budgets)
    rel = treedp.release_cdf(
        VALUES, bounds=(0, 100), bins=1024, privacy=ZCDP(0.5), plan=p, rng=InsecureSeededSource(3)
    )
    assert rel.mechanism.name == p.mechanism  # the tree, or the sqrt factorisation if it wins
    assert rel.branching == (p.branching if p.mechanism == "tree" else None)
    with pytest.raises(InvalidParameterError, match="other public parameters"):
        treedp.release_cdf(VALUES, bounds=(0, 100), bins=1024, privacy=ZCDP(0.4), plan=p)
    with pytest.raises(InvalidParameterError, match="other public parameters"):
        treedp.release_cdf(VALUES, bounds=(0, 100), bins=1024, epsilon=0.5, plan=p)
    with pytest.raises(InvalidParameterError, match="contradicts"):
        treedp.plan(1024, privacy=ZCDP(0.5), noise="laplace")
    # the plan never loses to the binary tree with equal budgets (the OpenDP-style tree)
    binary = [c for c in p.alternatives if c.how == "binary tree, equal budgets"]
    assert binary and p.predicted <= binary[0].value
    assert "discrete Gaussian" in p.describe()
    cache = treedp.PlanCache()
    spec = ReleaseSpec(bins=1024, privacy=ZCDP(0.5))
    assert cache.get(spec) is cache.get(spec)
    assert cache.get(spec) is not cache.get(ReleaseSpec(bins=1024, epsilon=0.5))


def test_gaussian_beats_laplace_at_equal_rho() -> None:
    """A pure 1-DP release is 0.5-zCDP (ε²/2): at that ρ the Gaussian tree's exact CDF error
    is far below the Laplace tree's. (At equal (ε, δ) it is not, below B ~ 2^20: see
    docs/gaussian.md.)"""
    g = treedp.plan(65536, privacy=ZCDP(0.5))
    lap = treedp.plan(65536, epsilon=1.0)
    assert PureDP(1.0).to_zcdp().rho == pytest.approx(0.5)
    assert g.mean_cdf_mse < lap.mean_cdf_mse / 10


@pytest.mark.slow
def test_planning_at_2_to_the_24() -> None:
    """At 2^24 ``auto`` picks the square-root factorisation, scored by the planner's measured
    rule (its exact error would cost 26 s of CPU and 1.6 GB to plan; docs/factorization.md)."""
    p = treedp.plan(2**24, privacy=ZCDP(0.5))
    assert p.mechanism == "sqrt_factorization"


def test_stationarity_of_the_tuned_budgets() -> None:
    """At the KKT budgets, ρ_l / (Δ_l sqrt(∂f/∂σ_l²)) is nearly the same for every level."""
    from treedp.estimation.objectives import mean_prefix_variance
    from treedp.planning.levels import smooth_variances as _smooth_variances
    from treedp.tree import TreeShape

    p = treedp.plan(4096, privacy=ZCDP(1.0))
    tuned = next(c for c in p.alternatives if c.how == "KKT-tuned budgets")
    shape = TreeShape(4096, tuned.branching)
    var = np.array(_smooth_variances(np.array(tuned.level_budgets), "add_remove", "gaussian"))
    base = mean_prefix_variance(shape, tuple(var))
    ratios = []
    for lv in range(var.size):
        up = var.copy()
        up[lv] *= 1 + 1e-6
        grad = (mean_prefix_variance(shape, tuple(up)) - base) / (1e-6 * var[lv])
        ratios.append(tuned.level_budgets[lv] / math.sqrt(grad))
    assert max(ratios) / min(ratios) < 1.1


def test_stderr_and_intervals_use_the_gaussian_variances() -> None:
    """The exact prefix variance equals the Monte Carlo variance of the estimate's error over
    the noise alone (normal band on a sample variance, ALPHA = 1e-6 Bonferroni over 3
    prefixes); 95% intervals (normal quantile) cover at the nominal rate (exact binomial)."""
    from scipy import stats

    from treedp.estimation import estimate_prefix

    rel = treedp.release_cdf(
        VALUES, bounds=(0, 100), bins=64, privacy=ZCDP(0.2), rng=InsecureSeededSource(5)
    )
    mech, est = rel.mechanism, rel.estimator
    reps = 20_000
    errors = estimate_prefix(mech, mech.noise_only(reps, InsecureSeededSource(TEST_SEED)), est)
    cov = prefix_covariance(mech, est)
    z = z_two_sided(1e-6 / 3)
    for m in (1, 20, 50):
        var = float(cov.cov(np.array([m]), np.array([m]))[0])
        sample = errors[:, m]
        assert abs(sample.var(ddof=1) - var) <= z * math.sqrt(2 * var**2 / (reps - 1))
        assert rel.stderr("cdf", float(m * 100 / 64 - 1e-9)) == pytest.approx(
            math.sqrt(var), rel=1e-6
        )
        inside = int((np.abs(sample) <= 1.959964 * math.sqrt(var)).sum())
        assert stats.binomtest(inside, reps, 0.95).pvalue > 1e-6 / 3
    # a range between edges is exact at its ends: the interval is estimate ± z·se
    lo, hi = rel.confidence_interval("range_count", 25.0, 50.0, level=0.95)
    se = rel.stderr("range_count", 25.0, 50.0)
    assert hi - lo == pytest.approx(2 * (1.959964 * se + LATTICE), rel=1e-5)  # + a lattice step


def test_cli_budget_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--bins", "1024", "--rho", "0.5"]) == 0
    assert "discrete Gaussian" in capsys.readouterr().out
    assert main(["plan", "--bins", "1024", "--epsilon", "1", "--delta", "1e-6"]) == 0
    assert "rho=0.02" in capsys.readouterr().out
    assert main(["plan", "--bins", "1024", "--epsilon", "1"]) == 0
    assert "discrete Laplace" in capsys.readouterr().out
    for bad in (["--rho", "0.5", "--epsilon", "1"], ["--rho", "0"], ["--delta", "1e-6"], []):
        assert main(["plan", "--bins", "64", *bad]) == 2
        assert "error" in capsys.readouterr().err
    csv = tmp_path / "a.csv"
    csv.write_text("age\n" + "\n".join(str(v) for v in range(20, 80)) + "\n")
    out = tmp_path / "a.tdp"
    args = ["release", str(csv), "--column", "age", "--bounds", "0", "100", "--bins", "64"]
    assert main([*args, "--rho", "0.5", "--out", str(out), "--insecure-seed", "1"]) == 0
    assert "zCDP" in capsys.readouterr().out
    assert isinstance(treedp.load_release(out).guarantee, ZCDP)


def test_replace_prediction_bands_and_default_shape() -> None:
    pred = treedp.predict_error(256, privacy=ZCDP(0.5), neighbours="replace", mechanism="tree")
    assert pred.level_budgets[0] == 0.0 and pred.prefix_variance[-1] == 0.0  # n public
    rel = treedp.release_cdf(
        VALUES, bounds=(0, 100), bins=64, privacy=ZCDP(0.5), rng=InsecureSeededSource(6)
    )
    lo, hi = rel.quantile_interval(0.5, level=0.9, rng=InsecureSeededSource(7))
    assert lo <= rel.quantile(0.5) <= hi
    # a tree asked for without its shape gets the fan-out best for Gaussian noise (deeper)
    g = treedp.default_branching(65536, "add_remove", "gaussian")
    lap = treedp.default_branching(65536, "add_remove")
    assert len(g) > len(lap)
