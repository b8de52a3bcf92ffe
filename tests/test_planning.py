"""The planner: never worse than the references, predicted error matches Monte Carlo."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import treedp
from tests.call_forms import release_kwargs
from tests.estimation.test_efficient import dense_gls
from tests.stats import TEST_SEED, z_two_sided
from treedp.estimation import estimate_prefix
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.registry import make_mechanism
from treedp.noise import InsecureSeededSource, discrete_laplace_variance, noise_scale
from treedp.planning import OBJECTIVES
from treedp.tree import TreeShape

SIZES = [10, 97, 128, 997, 2048, 8192]  # small, prime, 2^7, prime, 2^11, 2^13


#: Up to this many bins, objectives are recomputed from a dense GLS covariance.
DENSE_LIMIT = 128
REFERENCES = (
    "binary tree, equal budgets",
    "paper optimum (Thms IV.2, V.1-V.2)",
    "noisy histogram",
    "flat tree, n public",
)


@functools.cache
def _dense_prefix_cov(
    n_bins: int, branching: tuple[int, ...], budgets: tuple[float, ...], neighbours: str
) -> np.ndarray:
    """Covariance of the efficient prefix estimates ``P[0..B]``, computed independently of
    the planner: dense GLS over the leaves, with each level's variance from the sensitivity
    stated in the docs (1 under add_remove; 2 below an exact root under replace; a level
    switched off is unobserved)."""
    shape = TreeShape(n_bins, branching)
    delta = 1 if neighbours == "add_remove" else 2
    variances = tuple(
        0.0
        if (level == 0 and neighbours == "replace")
        else (math.inf if e == 0 else discrete_laplace_variance(noise_scale(delta, e)))
        for level, e in enumerate(budgets)
    )  # a budget of 0 (the root switched off): no information
    levels = [np.zeros(size) for size in shape.level_sizes()]
    _, cov_leaves = dense_gls(shape, levels, variances)
    lower = np.tril(np.ones((n_bins + 1, n_bins)), -1)  # row m: leaves < m
    return lower @ cov_leaves @ lower.T


def _objective(cov: np.ndarray, objective: str) -> float:
    diag = np.diag(cov)
    if objective == "cdf_mse":
        return float(diag[1:].mean())
    if objective == "max_variance":
        return float(diag[1:].max())
    a, b = np.triu_indices(cov.shape[0], k=1)
    return float((diag[b] + diag[a] - 2 * cov[a, b]).mean())


def _independent_value(candidate, n_bins: int, neighbours: str, objective: str) -> float:
    if candidate.mechanism == "histogram":  # independent bins: Var P[m] = m σ²
        var = discrete_laplace_variance(noise_scale(1, 1.0))
        cov = var * np.minimum.outer(np.arange(n_bins + 1), np.arange(n_bins + 1))
        return _objective(cov.astype(float), objective)
    if candidate.mechanism.startswith("strategy"):  # dense least squares on W (add_remove)
        mech = make_mechanism(candidate.mechanism, n_bins=n_bins, epsilon=1.0,
                              neighbours=neighbours, n=None)  # fmt: skip
        w = mech.strategy.matrix().astype(np.float64)
        var = discrete_laplace_variance(mech.scales[0])
        lower = np.tril(np.ones((n_bins + 1, n_bins)), -1)  # row m: bins < m
        return _objective(var * lower @ np.linalg.inv(w.T @ w) @ lower.T, objective)
    cov = _dense_prefix_cov(
        n_bins, tuple(candidate.branching), tuple(candidate.level_budgets), neighbours
    )
    return _objective(cov, objective)


@pytest.mark.parametrize("n_bins", SIZES)
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_plan_never_loses_to_the_references(n_bins: int, neighbours: str, objective: str) -> None:
    """The plan's error and the references' are recomputed outside the planner: from a dense
    GLS covariance (small B) and from :func:`treedp.predict_error`'s exact covariance."""
    plan = treedp.plan(n_bins, epsilon=1.0, neighbours=neighbours, objective=objective)
    refs = [c for c in plan.alternatives if c.how in REFERENCES]
    hows = {c.how for c in refs}
    assert "binary tree, equal budgets" in hows
    assert "paper optimum (Thms IV.2, V.1-V.2)" in hows
    if n_bins <= DENSE_LIMIT:
        chosen = _independent_value(plan, n_bins, neighbours, objective)
        assert plan.predicted == pytest.approx(chosen, rel=1e-7)
        for ref in refs:
            assert chosen <= _independent_value(ref, n_bins, neighbours, objective) * (1 + 1e-9)
    # predict_error's covariance code is separate from the planner's closed-form objectives
    chosen_mean = treedp.predict_error(
        n_bins,
        epsilon=1.0,
        neighbours=neighbours,
        mechanism=treedp.MechanismOptions(
            plan.mechanism, branching=plan.branching, level_budgets=plan.level_budgets
        )
        if plan.mechanism == "tree"
        else plan.mechanism,
    ).mean_cdf_mse
    assert chosen_mean == pytest.approx(plan.mean_cdf_mse, rel=1e-9)
    if objective == "cdf_mse":
        for ref in refs:
            if ref.mechanism == "tree":
                other = treedp.predict_error(
                    n_bins,
                    epsilon=1.0,
                    neighbours=neighbours,
                    mechanism=treedp.MechanismOptions(
                        "auto", branching=ref.branching, level_budgets=ref.level_budgets
                    ),
                ).mean_cdf_mse
                assert chosen_mean <= other * (1 + 1e-9)
        if n_bins <= 4096:  # the flat tree is among the candidates
            flat = treedp.predict_error(
                n_bins,
                epsilon=1.0,
                neighbours=neighbours,
                mechanism=treedp.MechanismOptions("auto", branching=[n_bins]),
            )
            assert chosen_mean <= flat.mean_cdf_mse * (1 + 1e-9)
    assert sum(plan.level_budgets) == pytest.approx(1.0)
    assert math.prod(plan.branching) >= n_bins


@pytest.mark.parametrize("n_bins", [97, 128, 2048])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_planned_error_matches_monte_carlo(n_bins: int, neighbours: str) -> None:
    plan = treedp.plan(n_bins, epsilon=1.0, neighbours=neighbours)
    n = 0 if neighbours == "replace" else None
    rel = treedp.release_cdf(
        np.empty(0),
        bounds=(0, 1),
        bins=n_bins,
        epsilon=1.0,
        neighbours=neighbours,
        n=n,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert rel.mechanism.name == plan.mechanism
    if plan.mechanism == "tree":
        assert rel.branching == plan.branching
    trials = 3000
    blocks = rel.mechanism.noise_only(trials, InsecureSeededSource(TEST_SEED + 1))
    errors = estimate_prefix(rel.mechanism, blocks, rel.estimator)
    per_trial = (errors[:, 1:] ** 2).mean(axis=1)
    se = per_trial.std(ddof=1) / math.sqrt(trials)
    assert abs(per_trial.mean() - plan.mean_cdf_mse) <= z_two_sided() * se
    assert plan.mean_cdf_mse == pytest.approx(rel.prefix_variance[1:].mean(), rel=1e-9)


def test_auto_picks_the_histogram_for_tiny_domains() -> None:
    plan = treedp.plan(10, epsilon=1.0)
    assert plan.mechanism == "histogram"
    rel = treedp.release_cdf(np.arange(10.0), bounds=(0, 10), bins=10, epsilon=1.0)
    assert rel.mechanism.name == "histogram"
    tree = treedp.release_cdf(
        np.arange(10.0), bounds=(0, 10), bins=10, epsilon=1.0, mechanism="tree"
    )
    assert tree.mechanism.name == "tree"


def test_plan_validates_and_describes() -> None:
    for kwargs, match in [
        ({"epsilon": 0}, "epsilon"),
        ({"epsilon": 1.0, "noise": "gaussian"}, "noise"),
        ({"epsilon": 1.0, "objective": "l1"}, "objective"),
        ({"epsilon": 1.0, "estimator": "x"}, "estimator"),
        ({"epsilon": 1.0, "neighbours": "x"}, "neighbours"),
    ]:
        with pytest.raises(treedp.InvalidParameterError, match=match):
            treedp.plan(100, **kwargs)
    with pytest.raises(treedp.InvalidParameterError, match="'bins'"):
        treedp.plan(0, epsilon=1.0)
    text = treedp.plan(1000, epsilon=0.5, neighbours="replace").describe()
    assert "expected CDF error" in text and "quantile" in text
    assert treedp.plan(1000, epsilon=1.0, objective="max_variance").max_cdf_variance is not None


def test_efficient_planning_beats_the_paper_after_estimation() -> None:
    """The paper optimises the direct estimator; planning for the efficient one moves the
    optimum (REFERENCE §10): strictly better than the paper's configuration here."""
    plan = treedp.plan(65536, epsilon=1.0, neighbours="add_remove")
    paper = next(c for c in plan.alternatives if c.how.startswith("paper"))
    assert plan.predicted < 0.9 * paper.value


def test_repeated_releases_plan_once_through_the_default_cache(monkeypatch) -> None:
    """Issue 28 item 6: the default cache is keyed on public parameters only; False turns it
    off; a caller's cache keeps at most maxsize plans."""
    import treedp.planning.planner as planning_module

    calls = []
    real = planning_module.search_plan
    monkeypatch.setattr(
        planning_module, "search_plan", lambda *a, **k: calls.append(a) or real(*a, **k)
    )
    planning_module.DEFAULT_PLAN_CACHE.clear()
    common = {"bounds": (0, 1), "bins": 96, "epsilon": 0.7}
    for data in ([0.1, 0.5], [0.9] * 50, []):  # other data, the same public parameters
        treedp.release_cdf(data, **release_kwargs(common))
    assert len(calls) == 1
    treedp.release_cdf([0.2], plan=False, **release_kwargs(common))
    treedp.release_cdf([0.2], plan=False, **release_kwargs(common))
    assert len(calls) == 3
    treedp.release_cdf([0.2], **{**common, "epsilon": 0.8})  # other public parameters
    assert len(calls) == 4
    small = treedp.PlanCache(maxsize=1)
    small.get(treedp.ReleaseSpec(bins=8, epsilon=1.0))
    small.get(treedp.ReleaseSpec(bins=9, epsilon=1.0))
    assert len(small) == 1
    with pytest.raises(treedp.InvalidTypeError, match=r"'plan'.*PlanCache"):
        treedp.release_cdf([0.2], plan="yes", **release_kwargs(common))


@pytest.mark.parametrize(
    "kwargs",
    [{"bins": 17, "epsilon": 1.0}, {"bins": 1000, "epsilon": 1.0},
     {"bins": 4096, "privacy": treedp.ZCDP(0.5)},
     {"bins": 64, "epsilon": 1.0, "neighbours": "replace", "n": 10},
     {"bins": 40, "epsilon": 1.0, "workload": [(0, 7), (3, 19), 33]}],
)  # fmt: skip
def test_a_plan_round_trips_through_json(kwargs: dict) -> None:
    """Plan.to_dict / from_dict: every field and alternative back, through JSON text."""
    import json

    plan = treedp.plan(**kwargs)
    back = treedp.Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    assert back == plan and back.alternatives == plan.alternatives


def test_a_loaded_plan_releases_as_the_plan_and_bad_data_is_refused() -> None:
    import json

    plan = treedp.plan(17, epsilon=1.0)
    loaded = treedp.Plan.from_dict(json.loads(json.dumps(plan.to_dict())))
    x = np.arange(17) % 5
    common = {"bounds": (0, 17), "bins": 17, "epsilon": 1.0}
    a = treedp.release_cdf(x, plan=plan, rng=treedp.InsecureSeededSource(2), **common)
    b = treedp.release_cdf(x, plan=loaded, rng=treedp.InsecureSeededSource(2), **common)
    assert a.cdf(8) == b.cdf(8) and a.mechanism.scales == b.mechanism.scales
    good = plan.to_dict()
    for bad in (None, [], {**good, "format": "other"}, {k: v for k, v in good.items()
                if k != "branching"}, {**good, "mechanism": "nonsense"}):  # fmt: skip
        with pytest.raises(InvalidParameterError):
            treedp.Plan.from_dict(bad)
