"""Exact error bars: stderr vs Monte Carlo, interval coverage, predict_error, reference tables.

The estimators are linear in the noise, so the error of every answer is ``M @ noise`` for a
matrix ``M`` built once by feeding unit vectors through the estimator; many trials are then one
matrix product over exact discrete Laplace draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import treedp
from tests.call_forms import release_kwargs
from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.estimation import estimate_prefix
from treedp.estimation.covariance import DirectTreeCovariance, EfficientTreeCovariance
from treedp.estimation.efficient import VariancePlan
from treedp.noise import InsecureSeededSource, sample_discrete_laplace
from treedp.release import queries
from treedp.release.inference import half_width_factor
from treedp.tree import shape_for

TRIALS = 20_000


def error_matrix(rel: treedp.Release) -> tuple[np.ndarray, list[tuple[int, object]]]:
    """Columns: the prefix-estimate change per unit of noise on each noised node."""
    mech = rel.mechanism
    sizes = [lv.size for lv in rel.noisy_levels]
    zero = [np.zeros(s, dtype=np.int64) for s in sizes]
    base = estimate_prefix(mech, zero, rel.estimator)
    cols, owners = [], []
    for level, size in enumerate(sizes):
        if mech.scales[level] is None:
            continue
        for i in range(size):
            unit = [z.copy() for z in zero]
            unit[level][i] = 1
            cols.append(estimate_prefix(mech, unit, rel.estimator) - base)
            owners.append((level, mech.scales[level]))
    return np.array(cols).T, owners


def simulate_prefix_errors(rel: treedp.Release, trials: int) -> np.ndarray:
    matrix, owners = error_matrix(rel)
    source = InsecureSeededSource(TEST_SEED)
    noise = np.empty((trials, len(owners)))
    for j, (_, scale) in enumerate(owners):
        noise[:, j] = sample_discrete_laplace(scale, trials, source)
    return noise @ matrix.T  # trials x (B + 1)


CONFIGS = [
    {"bins": 64, "branching": [4, 4, 4], "neighbours": "add_remove", "estimator": "efficient"},
    {"bins": 64, "branching": [4, 4, 4], "neighbours": "replace", "estimator": "efficient"},
    {
        "bins": 60,
        "branching": [8, 8],
        "neighbours": "replace",
        "estimator": "efficient",
        "level_budgets": [0.3, 0.7],
    },
    {"bins": 50, "branching": 2, "neighbours": "add_remove", "estimator": "direct"},
    {"bins": 30, "mechanism": "histogram", "neighbours": "replace", "estimator": "efficient"},
    {"bins": 30, "mechanism": "threshold", "neighbours": "add_remove", "estimator": "direct"},
]


def _release(config: dict) -> treedp.Release:
    config = dict(config)
    b = config.pop("bins")
    n = 500 if config.get("neighbours") == "replace" else None
    values = np.random.default_rng(TEST_SEED).uniform(0, 100, 500)
    return treedp.release_cdf(
        values,
        bounds=(0, 100),
        bins=b,
        epsilon=1.0,
        n=n,
        rng=InsecureSeededSource(1),
        **release_kwargs(config),
    )


def _queries(rel: treedp.Release):
    xs = np.array([0.0, 13.3, 37.5, 50.0, 71.9, 99.2, 100.0])
    a = np.array([0.0, 10.0, 33.3, 45.0, 5.5])
    b = np.array([100.0, 20.0, 34.1, 90.0, 5.9])
    ix, cx = queries.cdf_terms(rel.bins, queries.to_axis(rel.bins, xs, "x")).coefficients()
    ta, tb = queries.to_axis(rel.bins, a, "a"), queries.to_axis(rel.bins, b, "b")
    return xs, a, b, (ix, cx), queries.range_terms(rel.bins, ta, tb).coefficients()


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(map(str, c.values())))
def test_stderr_matches_monte_carlo_and_intervals_cover(config: dict) -> None:
    rel = _release(config)
    errors = simulate_prefix_errors(rel, TRIALS)
    xs, a, b, (ix, cx), (ir, cr) = _queries(rel)
    err_cdf = (errors[:, ix] * cx).sum(axis=2)
    err_range = (errors[:, ir] * cr).sum(axis=2)
    for err, se, answers in (
        (err_cdf, rel.stderr("cdf", xs), rel.confidence_interval("cdf", xs)),
        (err_range, rel.stderr("range_count", a, b), rel.confidence_interval("range_count", a, b)),
    ):
        se = np.asarray(se)
        live = se > 0
        assert (err[:, ~live] == 0).all()
        # variance: chi-square band widened for Laplace kurtosis (excess <= 3), Bonferroni
        k = live.sum()
        lo = stats.chi2.ppf(ALPHA / (2 * k), TRIALS - 1) / (TRIALS - 1)
        hi = stats.chi2.isf(ALPHA / (2 * k), TRIALS - 1) / (TRIALS - 1)
        ratio = err[:, live].var(axis=0, ddof=1) / se[live] ** 2
        widen = math.sqrt(1 + 3 / 2)
        assert (ratio > 1 - (1 - lo) * widen).all() and (ratio < 1 + (hi - 1) * widen).all()
        # 95% intervals: coverage within 1 point of nominal or above (one-sided, alpha 1e-6).
        # The noise part of the interval, estimate ± c·se; confidence_interval widens it to
        # the bracketing edges inside bins and clips it to [0, n] (tests/release/test_intervals).
        half = se * half_width_factor(0.95)
        assert (answers[0] <= answers[1]).all()
        covered = (np.abs(err[:, live]) <= half[live]).mean(axis=0)
        tol = stats.norm.isf(ALPHA / k) * math.sqrt(0.94 * 0.06 / TRIALS)
        assert (covered >= 0.94 - tol).all(), covered


def test_intervals_can_fail() -> None:
    """With the normal quantile alone, a single Laplace node under-covers: caught."""
    rel = _release(CONFIGS[4])  # histogram: each bin is one Laplace-noised count plus a shift
    errors = simulate_prefix_errors(rel, TRIALS)
    one = errors[:, 1]  # prefix [0, 1): mostly one Laplace variable
    se = math.sqrt(rel.prefix_variance[1])
    covered = (np.abs(one) <= 1.959964 * se).mean()
    assert covered < 0.945  # the Laplace-aware factor (2.118) is what restores 95%


@pytest.mark.parametrize("config", CONFIGS[:5], ids=lambda c: "-".join(map(str, c.values())))
def test_predict_error_matches_monte_carlo(config: dict) -> None:
    config = dict(config)
    bins = config.pop("bins")
    pred = treedp.predict_error(bins, epsilon=1.0, **release_kwargs(config))
    rel = _release({"bins": bins, **config})
    errors = simulate_prefix_errors(rel, TRIALS)
    per_trial = (errors[:, 1:] ** 2).mean(axis=1)
    se = per_trial.std(ddof=1) / math.sqrt(TRIALS)
    assert abs(per_trial.mean() - pred.mean_cdf_mse) <= z_two_sided() * se
    assert np.allclose(pred.prefix_variance, rel.prefix_variance)
    assert pred.max_cdf_variance == pytest.approx(rel.prefix_variance.max())


def _sum_prefix_variance(cov, b: int) -> float:
    m = np.arange(1, b + 1)
    return float(cov.cov(m, m).sum())


@pytest.mark.parametrize(
    ("k_total", "branching", "expected"),
    [
        (256, [2] * 8, 1.181e5),
        (256, [4] * 4, 5.862e4),
        (256, [16, 16], 4.104e4),
        (256, [256], 8.738e4),
        (1024, [2] * 10, 8.751e5),
        (1024, [32, 32], 3.388e5),
        (1024, [8, 8, 16], 3.528e5),
        (4096, [16] * 3, 2.169e6),
        (4096, [8] * 4, 2.305e6),
    ],
)
def test_reference_gls_table(k_total: int, branching: list[int], expected: float) -> None:
    """REFERENCE §4.2: root known, Lap(2/ε_l) (variance 8/ε_l²), ε_l = 1/h, ε = 1."""
    h = len(branching)
    variances = (0.0,) + (8.0 * h**2,) * h
    shape = shape_for(k_total, branching)
    got = _sum_prefix_variance(EfficientTreeCovariance(VariancePlan(shape, variances)), k_total)
    assert got == pytest.approx(expected, rel=6e-4)
    naive = _sum_prefix_variance(DirectTreeCovariance(shape, variances), k_total)
    assert naive == pytest.approx(4 * k_total * sum((k - 1) * h**2 for k in branching), rel=1e-12)


@pytest.mark.parametrize(("k_total", "direct", "gls"), [(256, 4.00, 1.07), (1024, 5.00, 1.24)])
def test_reference_dyadic_unit_noise(k_total: int, direct: float, gls: float) -> None:
    """REFERENCE §2.2: binary tree, unit noise on every node: mean prefix variance."""
    shape = shape_for(k_total, 2)
    variances = (1.0,) * (shape.height + 1)
    m = np.arange(1, k_total + 1)
    eff = EfficientTreeCovariance(VariancePlan(shape, variances)).cov(m, m).mean()
    dire = DirectTreeCovariance(shape, variances).cov(m, m).mean()
    assert dire == pytest.approx(direct, abs=0.005)
    assert eff == pytest.approx(gls, abs=0.005)


def test_predict_error_validates() -> None:
    with pytest.raises(treedp.InvalidParameterError, match="'bins'"):
        treedp.predict_error(0, epsilon=1.0)
    with pytest.raises(treedp.InvalidParameterError, match="'epsilon'"):
        treedp.predict_error(10, epsilon=-1.0)
    p = treedp.predict_error(100, epsilon=1.0, neighbours="replace")
    assert p.prefix_variance[-1] == 0 and p.estimator == "efficient" and p.rmse > 0


def test_stderr_and_interval_api() -> None:
    rel = _release(CONFIGS[0])
    assert isinstance(rel.stderr("cdf", 50.0), float)
    assert rel.stderr("cdf", [10.0, 20.0]).shape == (2,)
    lo, hi = rel.confidence_interval("cdf", 50.0, level=0.9)
    assert lo < rel.cdf(50.0) < hi
    with pytest.raises(treedp.InvalidParameterError, match="stderr takes"):
        rel.stderr("quantile", 0.5)
    with pytest.raises(treedp.InvalidParameterError, match="'level'"):
        rel.confidence_interval("cdf", 1.0, level=1.5)
    # replace: the whole domain is exact
    exact = _release(CONFIGS[1])
    assert exact.stderr("cdf", 100.0) == 0.0
    assert exact.stderr("range_count", 0.0, 100.0) == 0.0
    # the efficient estimator has smaller error than direct, here by a wide margin
    direct = _release({**CONFIGS[1], "estimator": "direct"})
    assert exact.prefix_variance[1:-1].mean() < 0.6 * direct.prefix_variance[1:-1].mean()
    # all intervals: stderr of ranges from the interval table
    ai = treedp.release_cdf(
        np.arange(10.0),
        bounds=(0, 10),
        bins=10,
        epsilon=1.0,
        mechanism="all_intervals",
        rng=InsecureSeededSource(0),
    )
    var = ai.level_variance[0]
    assert ai.stderr("range_count", 2.0, 7.0) == pytest.approx(math.sqrt(var))
    assert ai.stderr("range_count", 2.5, 7.0) == pytest.approx(math.sqrt(1.25 * var))


def test_all_intervals_range_uses_the_exact_total_under_replace() -> None:
    values = np.arange(10.0)
    ai = treedp.release_cdf(
        values,
        bounds=(0, 10),
        bins=10,
        epsilon=1.0,
        neighbours="replace",
        n=10,
        mechanism="all_intervals",
        rng=InsecureSeededSource(0),
    )
    assert ai.range_count(0.0, 10.0) == 10.0
    assert ai.range_count(-5.0, 50.0) == 10.0
    assert ai.stderr("range_count", 0.0, 10.0) == 0.0
    assert ai.stderr("range_count", 0.0, 5.0) > 0.0
