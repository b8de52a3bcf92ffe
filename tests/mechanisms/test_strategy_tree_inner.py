"""A strategy inside the blocks of ``strategy_tree``: exact GLS and covariances, exact
sensitivities (with a mutant caught), the role objective and its gradient, the shipped
inner strategies and the planner at 2^15 to 2^20 (issue 33, item 2)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.mechanisms.strategy_tree_helpers import (
    brute,
    check_dense_least_squares,
    check_sensitivities,
    kurtosis,
)
from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, plan
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.strategy_tree import (
    CONFIGS,
    StrategyTreeMechanism,
    default_structure,
    structure_covariance,
)
from treedp.strategy import Strategy
from treedp.strategy.blocked import BlockedStrategy
from treedp.strategy.inner import _theta_error, role_error, top_statistics

TOP = Strategy(np.array([3, 2, 4, 1, 2]), np.array([[1, 2, 0, 1, 1], [0, 1, 3, 1, 0]]))
INNER = Strategy(
    np.array([2, 1, 3, 1, 2, 2, 1, 1]),
    np.array([[1, 3, 0, 0, 2, 1, 0, 0], [0, 0, 1, 2, 0, 1, 3, 1]]),
)
WITH_INNER = BlockedStrategy(TOP, 8, (), (0.6, 0.4), INNER)
BOTH = BlockedStrategy(TOP, 8, (1, 4), (0.4, 0.2, 0.1, 0.3), INNER)


@pytest.mark.parametrize("structure", [WITH_INNER, BOTH])
@pytest.mark.parametrize("n_public", [False, True])
@pytest.mark.parametrize("n_bins", [40, 37])  # 37: three empty padding bins
def test_covariance_and_estimate_match_dense_least_squares(
    structure: BlockedStrategy, n_public: bool, n_bins: int
) -> None:
    check_dense_least_squares(structure, n_public, n_bins)


# K = 2 (moves across blocks: twice the heaviest column), and K = 1 (inside one block only:
# the inner strategy's own replace sensitivity, here below twice its heaviest column).
SMALL_INNER = Strategy(np.array([2, 1, 1]), np.array([[3, 0, 1], [0, 2, 1]]))
SENSITIVITY_CASES = [
    BlockedStrategy(Strategy(np.array([1, 2]), np.array([[2, 1]])), 3, (), (0.5, 0.5), SMALL_INNER),
    BlockedStrategy(
        Strategy(np.array([1, 2]), np.array([[2, 1]])), 3, (1,), (0.4, 0.3, 0.3), SMALL_INNER
    ),
    BlockedStrategy(Strategy(np.array([2]), np.array([[1]])), 3, (), (0.5, 0.5), SMALL_INNER),
]


@pytest.mark.parametrize("structure", SENSITIVITY_CASES)
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_claimed_sensitivities_are_the_exact_maxima(
    structure: BlockedStrategy, relation: str
) -> None:
    check_sensitivities(structure, relation)


def test_a_mutant_inner_sensitivity_is_caught_by_brute_force() -> None:
    """A claim that takes the inner strategy's own ``replace`` sensitivity (moves inside one
    block) and forgets moves between blocks is too small: the brute force catches it."""
    structure = SENSITIVITY_CASES[0]
    inner = structure.inner
    assert inner is not None
    assert inner.sensitivity("replace")[0] < brute(structure, "replace")[-1]
    rows_a_bin_is_in = int((inner.matrix() > 0).sum(axis=0).max())  # as if 0/1 rows
    assert rows_a_bin_is_in < brute(structure, "add_remove")[-1]


def test_structure_checks_and_description() -> None:
    with pytest.raises(InvalidParameterError):
        BlockedStrategy(TOP, 8, (), (0.5, 0.5))  # neither levels nor an inner strategy
    with pytest.raises(InvalidParameterError):
        BlockedStrategy(TOP, 4, (), (0.5, 0.5), INNER)  # inner of 8 bins, blocks of 4
    with pytest.raises(InvalidParameterError):
        BlockedStrategy(TOP, 8, (1,), (0.5, 0.5), INNER)  # one share missing
    mech = StrategyTreeMechanism(WITH_INNER.n_bins, epsilon=1.0, structure=WITH_INNER)
    meta = mech.describe()["strategy"]
    assert meta["inner_sha256"] == INNER.digest  # type: ignore[index]
    assert mech.spend().parameters["inner_strategy"] == INNER.digest
    assert mech.max_records() == min(TOP.max_total(), INNER.max_total())


def test_prefix_variances_by_simulation() -> None:
    """4,000 simulated releases at 40 bins: the sample variance of every prefix estimate
    matches the exact one (tolerance as in test_strategy_tree.py: relative sd at most
    ``sqrt((κ - 1)/R)``, ``z(ALPHA/k)`` times it, Bonferroni over the ``k`` prefixes)."""
    from scipy import stats

    mech = StrategyTreeMechanism(BOTH.n_bins, epsilon=1.0, structure=BOTH)
    runs = 4_000
    noise = mech.noise_only(runs, InsecureSeededSource(TEST_SEED))
    estimates = mech.prefix_estimate(noise, "efficient")[:, 1:]
    exact = mech.prefix_covariance("efficient").prefix_variances()[1:]
    kappa = max(kurtosis(float(t)) for t in mech.scales if t is not None)
    z = float(stats.norm.isf(ALPHA / (2 * exact.size)))
    empirical = estimates.var(axis=0, ddof=1)
    assert np.all(np.abs(empirical / exact - 1) <= z * np.sqrt((kappa - 1) / runs))


class _ExactTop:
    """The role objective's model with exact top statistics (derivatives by central
    differences), for the tests."""

    def __init__(self, top: Strategy, variance: float) -> None:
        self.top, self.variance, self.n_blocks = top, variance, top.n_bins

    def __call__(self, v: float) -> tuple[np.ndarray, np.ndarray]:
        h = 1e-6 * v
        up = top_statistics(self.top, self.variance, v + h)
        down = top_statistics(self.top, self.variance, v - h)
        return top_statistics(self.top, self.variance, v), (up - down) / (2 * h)


def test_role_error_is_the_exact_mean_prefix_variance_and_its_gradient() -> None:
    """``role_error`` of the inner strategy's within-block covariance equals the blocked
    structure's exact mean prefix variance (dense least squares checked above), and the
    gradient in ``Θ`` matches central differences."""
    rng = np.random.default_rng(TEST_SEED)
    theta = rng.random((2, 8))
    kappa, top_var = 3.0, 7.0
    model = _ExactTop(TOP, top_var)
    s = 1 + theta.sum(axis=0)
    cov_x = kappa * s[:, None] * np.linalg.inv(np.eye(8) + theta.T @ theta) * s[None, :]
    value, _ = role_error(cov_x, model)
    # dense least squares: the top on the block sums (variance top_var) and the real inner
    # strategy A = [I; Θ] S⁻¹ on every block (variance kappa), so C = kappa (AᵀA)⁻¹
    k, b = TOP.n_bins, 8
    real = np.vstack([np.eye(b), theta]) / s[None, :]
    w = np.vstack([TOP.matrix() @ np.kron(np.eye(k), np.ones((1, b))), np.kron(np.eye(k), real)])
    weights = np.concatenate(
        [np.full(TOP.n_rows, 1 / top_var), np.full(k * real.shape[0], 1 / kappa)]
    )
    inv = np.linalg.inv(w.T @ (weights[:, None] * w))
    pm = np.tril(np.ones((k * b, k * b)))
    assert value == pytest.approx(float(np.diag(pm @ inv @ pm.T).mean()), rel=1e-9)
    _, grad = _theta_error(theta, kappa, model)
    step = rng.standard_normal(theta.shape)
    h = 1e-5
    up, _ = _theta_error(theta + h * step, kappa, model)
    down, _ = _theta_error(theta - h * step, kappa, model)
    assert (up - down) / (2 * h) == pytest.approx(float(np.sum(grad * step)), rel=1e-5)


INNER_DIGESTS = {
    2**15: "336d14e211e48022922a88da6f41ec9dd57cefa44acffa733e1ac064e60031ea",
    2**16: "41dd34774839e1d32c9aea594c2cc3a4dc90cf43209cb94a99a4489e454f7cd5",
    2**17: "42a658a250b9b59f5d7f1e3ec98a37eb37b01d8f3f9ee6c951be6e201ea65609",
    2**18: "b4090cec6c4f8f70d5aaa06233c5fc84dd773380d92cc5981ab550b63810ce41",
    2**19: "b785e48d94edf6520d6e1bd7abcb31707641a52e417a78cb2815d6ddd9b3f59d",
    2**20: "857142392a37197e713434cf686e9e937a3c2cdb9091fe2f12233f4db8431679",
}


@pytest.mark.parametrize("n_bins", sorted(INNER_DIGESTS))
def test_the_shipped_inner_strategies_are_pinned(n_bins: int) -> None:
    """A swapped data file would change the released strategy unnoticed."""
    structure = default_structure(n_bins)
    assert structure.inner is not None and structure.inner.digest == INNER_DIGESTS[n_bins]
    assert CONFIGS[n_bins][4] == f"inner{n_bins.bit_length() - 1}"


@pytest.mark.parametrize("n_bins", [2**16, 2**20])
def test_the_planner_picks_it_within_0_85_of_the_best_tree(n_bins: int) -> None:
    """Issue 33 item 2: at most 0.85 times the planned tree's mean prefix MSE at 2^16 and
    2^20 (exact errors: a deterministic check, no tolerance for chance)."""
    chosen = plan(bins=n_bins, epsilon=1.0)
    assert chosen.mechanism == "strategy_tree" and "a strategy (p=" in chosen.alternatives[0].how
    best_tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
    exact = structure_covariance(default_structure(n_bins), 1.0, n_bins).prefix_variances()
    assert chosen.predicted == pytest.approx(float(exact[1:].mean()), rel=1e-12)
    assert chosen.predicted <= 0.85 * best_tree


# --- privacy review R5 (session 7): the domain, the parts' check, the split, the files ---

HEAVY_INNER = Strategy(  # heavier than TOP: its int64 limit is the smaller one
    np.array([200, 100, 300, 100, 200, 200, 100, 100]),
    np.array([[100, 300, 0, 0, 200, 100, 0, 0], [0, 0, 100, 200, 0, 100, 300, 100]]),
)


@pytest.mark.parametrize(
    "structure",
    [BlockedStrategy(TOP, 8, (), (0.6, 0.4), HEAVY_INNER), WITH_INNER, BOTH],
    ids=["heavy-inner", "with-inner", "both"],
)
def test_the_domain_is_the_smaller_int64_limit_before_the_charge(
    structure: BlockedStrategy,
) -> None:
    """F2: a domain from the top alone would let a total the inner part cannot hold be
    charged, then refused with a data-dependent error; the inner limit must count."""
    mech = StrategyTreeMechanism(structure.n_bins, epsilon=1.0, structure=structure)
    limit = min(TOP.max_total(), structure.inner.max_total())  # type: ignore[union-attr]
    assert mech.max_records() == limit
    mech.check_domain(limit)
    with pytest.raises(treedp.DataError):
        mech.check_domain(limit + 1)


@pytest.mark.parametrize("n_bins", sorted(n for n in CONFIGS if CONFIGS[n][4] is not None))
def test_every_configured_size_refuses_one_past_its_limit(n_bins: int) -> None:
    mech = StrategyTreeMechanism(n_bins, epsilon=1.0)
    structure = mech.structure
    assert structure.inner is not None
    limit = min(structure.top.max_total(), structure.inner.max_total())
    assert mech.max_records() == limit
    with pytest.raises(treedp.DataError):
        mech.check_domain(limit + 1)
    assert Fraction(mech.epsilon_spent()) <= Fraction(1.0)  # F4: the inner share included


def test_the_parts_refuse_a_total_past_the_inner_limit() -> None:
    """F3 (defence in depth): the parts themselves refuse a total the inner part's int64
    products could overflow, whatever the caller checked."""
    heavy = BlockedStrategy(TOP, 8, (), (0.6, 0.4), HEAVY_INNER)
    counts = np.zeros(heavy.n_bins, dtype=np.int64)
    counts[0] = HEAVY_INNER.max_total() + 1
    with pytest.raises(treedp.DataError):
        heavy.parts(counts)
    counts[0] -= 1
    heavy.parts(counts)  # at the limit: exact


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 1.7, 3.3, 1e-5])
def test_inner_structures_never_spend_more_than_epsilon(epsilon: float) -> None:
    """F4: the inner part's share is part of the split that must not exceed epsilon."""
    for structure in (WITH_INNER, BOTH, BlockedStrategy(TOP, 8, (), (0.31, 0.69 + 9e-10), INNER)):
        mech = StrategyTreeMechanism(structure.n_bins, epsilon=epsilon, structure=structure)
        assert mech.epsilon_spent() <= Fraction(epsilon)


def test_a_shipped_file_that_does_not_match_its_digest_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """F1: the shipped weights are checked against the pinned digests each time they load."""
    from pathlib import Path

    from treedp.exceptions import TreeDPError
    from treedp.strategy import digests, store

    shipped = Path(store.__file__).parent / "data"
    names = sorted(p.name for p in shipped.glob("*.npz"))
    assert names == sorted(digests.SHIPPED_DIGESTS)  # every shipped file is pinned
    monkeypatch.setitem(digests.SHIPPED_DIGESTS, "pidentity_inner20_256.npz", "0" * 64)
    with pytest.raises(TreeDPError, match="pinned digest"):
        store.shipped_strategy(256, "inner20")
    assert store.shipped_strategy(4096, "top") is not None  # the others still load
