"""The optimised linear strategy: objective, least squares, exact covariances, release."""

from __future__ import annotations

import io
import math
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, load_release, plan, release_cdf
from treedp.estimation.dispatch import estimate_prefix, prefix_covariance
from treedp.exceptions import InvalidParameterError, InvalidTypeError, ReleaseFormatError
from treedp.mechanisms import REGISTRY
from treedp.mechanisms.strategy import CONTRACT, StrategyMechanism
from treedp.privacy.measures import PureDP
from treedp.release.format import _checksum, from_json_document, to_json_document
from treedp.strategy import (
    Strategy,
    StrategyCache,
    StrategyCovariance,
    Workload,
    get_strategy,
    optimise_pidentity,
    pidentity_error,
    quantise,
    shipped_strategy,
)
from treedp.strategy.candidate import plan_candidate, strategy_errors
from treedp.strategy.optimize import _value_grad


def _dense_workload(kind: str, b: int) -> np.ndarray:
    if kind == "prefix":
        return np.tril(np.ones((b, b)))
    rows = []
    for s in range(b + 1):
        for t in range(s + 1, b + 1):
            r = np.zeros(b)
            r[s:t] = 1
            rows.append(r)
    return np.array(rows)


@pytest.mark.parametrize("kind", ["prefix", "range"])
def test_workload_gram_matrix(kind: str) -> None:
    b = 7
    dense = _dense_workload(kind, b)
    work = Workload(kind, b)
    assert np.array_equal(work.apply(np.eye(b)), dense.T @ dense)
    assert np.array_equal(work.diag(), np.diag(dense.T @ dense))
    assert work.n_queries == dense.shape[0]


@pytest.mark.parametrize("kind", ["prefix", "range"])
def test_objective_and_gradient(kind: str) -> None:
    b, p = 6, 2
    theta = np.random.default_rng(TEST_SEED).random((p, b))
    work = Workload(kind, b)
    dense = _dense_workload(kind, b)
    a = np.vstack([np.eye(b), theta]) / (1 + theta.sum(axis=0))
    exact = np.trace(dense @ np.linalg.inv(a.T @ a) @ dense.T)
    assert pidentity_error(theta, work) == pytest.approx(exact, rel=1e-10)
    value, grad = _value_grad(theta, work, work.diag())
    step = 1e-6
    for i, j in [(0, 0), (1, 3), (0, 5)]:
        bumped = theta.copy()
        bumped[i, j] += step
        numeric = (_value_grad(bumped, work, work.diag())[0] - value) / step
        assert grad[i, j] == pytest.approx(numeric, rel=1e-4, abs=1e-6)


def test_optimisation_is_deterministic_and_improves() -> None:
    first = optimise_pidentity(32, 2, max_iter=200)
    again = optimise_pidentity(32, 2, max_iter=200)
    assert np.array_equal(first, again)
    start = np.random.Generator(np.random.PCG64(0)).random((2, 32))
    work = Workload("prefix", 32)
    assert pidentity_error(first, work) < pidentity_error(start, work)
    assert (first >= 0).all()


def _dense_prefix_cov(strategy: Strategy, n_public: bool) -> np.ndarray:
    w = strategy.matrix().astype(np.float64)
    m = np.linalg.inv(w.T @ w)
    if n_public:
        one = np.ones((1, strategy.n_bins))
        m = m - m @ one.T @ np.linalg.inv(one @ m @ one.T) @ one @ m
    c = np.vstack([np.zeros(strategy.n_bins), np.tril(np.ones((strategy.n_bins,) * 2))])
    out: np.ndarray = c @ m @ c.T
    return out


@pytest.mark.parametrize("n_public", [False, True])
def test_covariance_and_estimate_match_dense_least_squares(n_public: bool) -> None:
    strategy = quantise(optimise_pidentity(20, 2, max_iter=100))
    dense = _dense_prefix_cov(strategy, n_public)
    cov = StrategyCovariance(strategy, 3.0, n_public)
    m = np.arange(21)
    assert np.allclose(cov.cov(m[:, None], m[None, :]), 3.0 * dense, rtol=1e-9, atol=1e-12)
    assert np.allclose(cov.prefix_variances(), 3.0 * np.diag(dense), rtol=1e-9, atol=1e-12)
    # the estimate is the (constrained) least-squares solution, with batch axes
    rng = np.random.default_rng(TEST_SEED)
    x = rng.integers(0, 50, 20)
    y = strategy.apply(x)[None, :] + rng.normal(0, 5, (4, strategy.n_rows))
    w = strategy.matrix().astype(np.float64)
    ls = np.linalg.solve(w.T @ w, w.T @ y.T).T
    n = int(x.sum())
    if n_public:
        minv = np.linalg.inv(w.T @ w)
        gain = minv.sum(axis=1) / minv.sum()
        ls = ls - np.outer(ls.sum(axis=1) - n, gain)
    ref = np.concatenate([np.zeros((4, 1)), np.cumsum(ls, axis=1)], axis=1)
    got = cov.estimate(y, n if n_public else None)
    assert np.allclose(got, ref, rtol=1e-9, atol=1e-6)
    if n_public:
        assert np.allclose(got[:, -1], n)


def test_errors_of_the_candidate_match_dense() -> None:
    strategy = quantise(optimise_pidentity(12, 1, max_iter=100))
    for nb in ("add_remove", "replace"):
        errors = strategy_errors(strategy, 0.7, nb)
        var = strategy_errors.__globals__["DiscreteLaplace"](
            strategy_errors.__globals__["noise_scale"](strategy.sensitivity(nb)[0], 0.7)
        ).variance()
        dense = var * _dense_prefix_cov(strategy, nb == "replace")
        diag = np.diag(dense)
        assert errors["mean_cdf_mse"] == pytest.approx(diag[1:].mean(), rel=1e-9)
        assert errors["max_cdf_variance"] == pytest.approx(diag.max(), rel=1e-9)
        ranges = [diag[a] + diag[b] - 2 * dense[a, b] for a in range(13) for b in range(a + 1, 13)]
        assert errors["range_mse"] == pytest.approx(np.mean(ranges), rel=1e-9)


def test_goals_at_epsilon_one_are_met_exactly() -> None:
    """Per-prefix MSE at ε = 1, add_remove: ≤ 62 at B = 256 and ≤ 105 at B = 1024 (issue 19),
    both with the issue's 2Δ²/ε² and with the exact discrete Laplace variance."""
    for b, goal in ((256, 62.0), (1024, 105.0)):
        strategy = shipped_strategy(b)
        assert strategy is not None
        l1 = strategy.sensitivity("add_remove")[0]
        unit = float(strategy.unit_prefix_variances()[1:].mean())
        assert 2 * l1**2 * unit <= goal
        assert strategy_errors(strategy, 1.0, "add_remove")["mean_cdf_mse"] <= goal


def test_mechanism_contract_and_registration() -> None:
    assert REGISTRY["strategy"] is StrategyMechanism
    mech = StrategyMechanism(256, epsilon=0.5)
    assert mech.epsilon_spent() <= Fraction(0.5)
    assert float(mech.epsilon_spent()) == pytest.approx(0.5, rel=1e-5)
    assert isinstance(mech.guarantee, PureDP) and mech.guarantee.epsilon <= 0.5
    assert CONTRACT.name == mech.name and CONTRACT.measure is PureDP
    assert mech.neighbours in CONTRACT.neighbours
    described = mech.describe()
    assert described["strategy"]["sha256"] == mech.strategy.digest
    assert mech.spend().parameters["strategy"] == mech.strategy.digest
    with pytest.raises(InvalidParameterError):
        StrategyMechanism.from_parameters(
            256, epsilon=1.0, neighbours="add_remove", n=None, level_budgets=(1.0,)
        )
    with pytest.raises(InvalidTypeError):
        StrategyMechanism(4, epsilon=1.0, strategy="no")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        StrategyMechanism(5, epsilon=1.0, strategy=mech.strategy)
    with pytest.raises(InvalidParameterError):
        Strategy(np.array([0, 1]), np.zeros((1, 2), dtype=np.int64))


def test_cache_is_owned_by_the_caller() -> None:
    cache = StrategyCache()
    first = get_strategy(28, cache=cache)
    assert len(cache) == 1 and get_strategy(28, cache=cache) is first
    assert get_strategy(256, cache=cache) is not None and len(cache) == 1  # shipped
    with pytest.raises(InvalidTypeError):
        get_strategy(28, cache={})  # type: ignore[arg-type]


def test_release_end_to_end_and_file_round_trip() -> None:
    values = np.random.default_rng(TEST_SEED).normal(size=20_000)
    rel = release_cdf(
        values,
        bounds=(-4.0, 4.0),
        bins=256,
        epsilon=1.0,
        mechanism="strategy",
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert rel.mechanism.name == "strategy" and rel.seeded
    cdf = rel.cdf(np.linspace(-4, 4, 33))
    assert np.all(np.diff(cdf) >= 0)  # consistent (monotone) as for trees
    lo, hi = rel.confidence_interval("cdf", 0.0)
    assert lo <= rel.cdf(0.0) <= hi
    assert abs(float(rel.quantile(0.5))) < 0.2
    assert rel.range_count(-1.0, 1.0) == pytest.approx(rel.cdf(1.0) - rel.cdf(-1.0), abs=1.0)
    for fmt in ("json", "binary"):
        buf = io.BytesIO()
        rel.save(buf, file_format=fmt)
        buf.seek(0)
        back = load_release(buf)
        assert np.allclose(back.cdf([-1.0, 0.5]), rel.cdf([-1.0, 0.5]))
    tampered = to_json_document(rel)
    tampered["payload"]["metadata"]["strategy"]["sha256"] = "0" * 64
    tampered["checksum"] = _checksum(tampered["payload"])
    with pytest.raises(ReleaseFormatError):
        from_json_document(tampered, "test")


def test_replace_release_imposes_n() -> None:
    values = np.random.default_rng(TEST_SEED).uniform(size=3_000)
    rel = release_cdf(
        values,
        bounds=(0.0, 1.0),
        bins=256,
        epsilon=1.0,
        neighbours="replace",
        n=3_000,
        mechanism="strategy",
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert rel.cdf(1.0) == pytest.approx(3_000)
    assert rel.prefix_variance[-1] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.slow
def test_prefix_variances_by_simulation() -> None:
    """Empirical variance of P[m] over 4000 simulated releases vs the exact claim: the sample
    variance of near-normal estimates (sums of 272 noise terms) has relative sd
    sqrt(2/(R-1)); tolerance z(ALPHA/k)·that, Bonferroni over the k checked prefixes."""
    mech = StrategyMechanism(256, epsilon=1.0)
    runs = 4_000
    noise = mech.noise_only(runs, InsecureSeededSource(TEST_SEED))
    est = estimate_prefix(mech, noise, "efficient")
    cov = prefix_covariance(mech, "efficient")
    checked = np.array([1, 64, 128, 200, 256])
    from scipy import stats

    z = float(stats.norm.isf(ALPHA / (2 * checked.size)))
    emp = est[:, checked].var(axis=0, ddof=1)
    claim = cov.cov(checked, checked)
    assert np.all(np.abs(emp / claim - 1) <= z * math.sqrt(2 / (runs - 1)))


def test_planner_picks_the_strategy_where_it_wins() -> None:
    chosen = plan(bins=256, epsilon=1.0)
    assert chosen.mechanism == "strategy"
    best_tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
    assert chosen.predicted < best_tree
    assert "strategy" in str(chosen) or "p-Identity" in str(chosen.alternatives[0].how)
    assert plan_candidate(300, 1.0, "add_remove", "laplace", "cdf_mse") is None  # not shipped
    assert plan_candidate(256, 1.0, "add_remove", "gaussian", "cdf_mse") is None
    assert plan_candidate(256, 1.0, "replace", "laplace", "cdf_mse") is None  # tree wins:
    shipped = shipped_strategy(256)
    assert shipped is not None
    replace_tree = plan(bins=256, epsilon=1.0, neighbours="replace", n=10)
    assert strategy_errors(shipped, 1.0, "replace")["mean_cdf_mse"] > replace_tree.mean_cdf_mse


def test_range_strategy_for_the_range_objective() -> None:
    """The planner scores both shipped workloads; for all ranges it picks the range-optimised
    strategy, and ``mechanism="auto"`` releases that very strategy (same exact error)."""
    prefix, ranges = shipped_strategy(256, "prefix"), shipped_strategy(256, "range")
    assert prefix is not None and ranges is not None
    assert (
        strategy_errors(ranges, 1.0, "add_remove")["range_mse"]
        < strategy_errors(prefix, 1.0, "add_remove")["range_mse"]
    )
    chosen = plan(bins=256, epsilon=1.0, objective="range_mse")
    assert chosen.mechanism == "strategy_range"
    assert chosen.predicted == pytest.approx(
        strategy_errors(ranges, 1.0, "add_remove")["range_mse"]
    )
    assert plan(bins=256, epsilon=1.0).mechanism == "strategy"  # the CDF objective
    mech = REGISTRY["strategy_range"].from_parameters(
        256, epsilon=1.0, neighbours="add_remove", n=None
    )
    assert isinstance(mech, StrategyMechanism) and mech.strategy.digest == ranges.digest
    values = np.random.default_rng(TEST_SEED).uniform(size=1_000)
    rel = release_cdf(
        values,
        bounds=(0.0, 1.0),
        bins=256,
        epsilon=1.0,
        mechanism="strategy_range",
        rng=InsecureSeededSource(TEST_SEED),
    )
    buf = io.BytesIO()
    rel.save(buf)
    buf.seek(0)
    assert load_release(buf).mechanism.name == "strategy_range"


def test_weights_times_counts_never_overflow() -> None:
    from treedp.exceptions import DataError

    strategy = Strategy(np.array([255, 1]), np.array([[3, 0]]))
    assert strategy.apply(np.array([2, 5])).tolist() == [510, 5, 6]
    huge = np.array([2**62 // 255 + 1, 0], dtype=np.int64)
    with pytest.raises(DataError) as info:
        strategy.apply(huge)
    assert str(2**62 // 255 + 1) not in str(info.value)


@pytest.mark.parametrize(
    ("mechanism", "privacy"),
    [("strategy", {"epsilon": 1.0}), ("strategy_padded", {"epsilon": 1.0}),
     ("strategy_tree", {"epsilon": 1.0}), ("sqrt_factorization", {"privacy": treedp.ZCDP(0.5)})],
)  # fmt: skip
def test_a_least_squares_mechanism_records_the_estimator_it_ran(
    mechanism: str, privacy: dict
) -> None:
    """estimator='direct' names no estimator of these mechanisms (least squares, one
    estimator): the release records 'efficient' and answers as the efficient one does."""
    x = np.random.default_rng(0).normal(0, 1, 500)
    out = []
    for estimator in ("direct", "efficient"):
        rel = treedp.release_cdf(
            x, bounds=(-4, 4), bins=300, rng=treedp.InsecureSeededSource(1),
            mechanism=treedp.MechanismOptions(mechanism, estimator=estimator), **privacy,
        )  # fmt: skip
        assert rel.estimator == "efficient" and rel.metadata()["estimator"] == "efficient"
        out.append(rel.cdf(np.linspace(-4, 4, 9)))
    np.testing.assert_array_equal(out[0], out[1])
