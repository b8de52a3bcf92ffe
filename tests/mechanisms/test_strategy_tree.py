"""A strategy over block sums with tree levels inside blocks: exact GLS, covariances,
sensitivities, planner and release."""

from __future__ import annotations

import io
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.mechanisms.strategy_tree_helpers import (
    check_dense_least_squares,
    check_sensitivities,
    kurtosis,
)
from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, load_release, plan, release_cdf
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import REGISTRY
from treedp.mechanisms.strategy_tree import (
    CONFIGS,
    CONTRACT,
    StrategyTreeMechanism,
    configured_size,
    default_structure,
    split_epsilon,
    structure_covariance,
)
from treedp.privacy.measures import PureDP
from treedp.strategy import Strategy
from treedp.strategy.blocked import BlockedStrategy

TOP = Strategy(np.array([3, 2, 4, 1, 2]), np.array([[1, 2, 0, 1, 1], [0, 1, 3, 1, 0]]))
SMALL = BlockedStrategy(TOP, 8, (1, 2, 4), (0.4, 0.2, 0.1, 0.3))


@pytest.mark.parametrize("n_public", [False, True])
@pytest.mark.parametrize("n_bins", [40, 37])  # 37: three empty padding bins
def test_covariance_and_estimate_match_dense_least_squares(n_public: bool, n_bins: int) -> None:
    check_dense_least_squares(SMALL, n_public, n_bins)


SENSITIVITY_CASES = [
    BlockedStrategy(
        Strategy(np.array([1, 2, 1]), np.array([[1, 1, 2]])), 4, (1, 2), (0.5, 0.3, 0.2)
    ),
    BlockedStrategy(Strategy(np.array([2, 1]), np.array([[3, 1], [0, 2]])), 4, (1,), (0.5, 0.5)),
]


@pytest.mark.parametrize("structure", SENSITIVITY_CASES)
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_claimed_sensitivities_are_the_exact_maxima(
    structure: BlockedStrategy, relation: str
) -> None:
    check_sensitivities(structure, relation)


def test_mechanism_contract_and_registration() -> None:
    assert REGISTRY["strategy_tree"] is StrategyTreeMechanism
    assert CONTRACT.name == "strategy_tree" and CONTRACT.measure is PureDP
    mech = StrategyTreeMechanism(SMALL.n_bins, epsilon=0.7, structure=SMALL)
    assert mech.epsilon_spent() <= Fraction(0.7)
    assert isinstance(mech.guarantee, PureDP) and mech.guarantee.epsilon <= 0.7
    assert sum(mech.block_epsilons) == pytest.approx(0.7)
    meta = mech.describe()
    assert meta["strategy"]["sha256"] == TOP.digest  # type: ignore[index]
    assert mech.spend().parameters["strategy"] == TOP.digest
    for bad in (0, 2**22 + 1):
        with pytest.raises(InvalidParameterError):
            StrategyTreeMechanism(bad, epsilon=1.0)
    with pytest.raises(InvalidParameterError):
        StrategyTreeMechanism(SMALL.n_bins + 1, epsilon=1.0, structure=SMALL)
    with pytest.raises(InvalidParameterError):
        BlockedStrategy(TOP, 8, (1, 3), (0.5, 0.25, 0.25))  # 3 does not divide 8
    with pytest.raises(InvalidParameterError):
        BlockedStrategy(TOP, 8, (1, 2), (0.5, 0.25, 0.2))  # shares do not sum to 1


@pytest.mark.parametrize("n_bins", [1, 2, 3, 8, 100, 5000])
def test_every_bin_count_gets_a_valid_fallback(n_bins: int) -> None:
    structure = default_structure(n_bins)
    assert structure.n_bins >= n_bins and structure.n_bins < 4 * max(n_bins, 2)
    mech = StrategyTreeMechanism(n_bins, epsilon=1.0)
    assert len(mech.true_blocks(np.ones(n_bins, np.int64))) == 1 + len(structure.levels)


def test_prefix_variances_by_simulation() -> None:
    """4,000 simulated releases at 40 bins: the sample variance of every prefix estimate
    matches the exact one. A weighted sum of independent symmetric draws has kurtosis at most
    the largest of theirs (``κ``), so the sample variance's relative sd is at most
    ``sqrt((κ - 1)/R)``; tolerance ``z(ALPHA/k)`` times that (normal approximation,
    Bonferroni over the ``k`` prefixes)."""
    from scipy import stats

    mech = StrategyTreeMechanism(SMALL.n_bins, epsilon=1.0, structure=SMALL)
    runs = 4_000
    noise = mech.noise_only(runs, InsecureSeededSource(TEST_SEED))
    estimates = mech.prefix_estimate(noise, "efficient")[:, 1:]
    exact = mech.prefix_covariance("efficient").prefix_variances()[1:]
    kappa = max(kurtosis(float(t)) for t in mech.scales if t is not None)
    z = float(stats.norm.isf(ALPHA / (2 * exact.size)))
    empirical = estimates.var(axis=0, ddof=1)
    assert np.all(np.abs(empirical / exact - 1) <= z * np.sqrt((kappa - 1) / runs))


def test_planner_picks_it_at_configured_sizes() -> None:
    for n_bins in CONFIGS:
        chosen = plan(bins=n_bins, epsilon=1.0)
        assert chosen.mechanism == "strategy_tree"
        best_tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
        exact = structure_covariance(default_structure(n_bins), 1.0, n_bins).prefix_variances()
        assert chosen.predicted == pytest.approx(float(exact[1:].mean()), rel=1e-12)
        assert chosen.predicted < 0.92 * best_tree
        assert "block sums" in chosen.alternatives[0].how
    offer = StrategyTreeMechanism.plan_candidate
    assert offer(2**16, 1.0, "replace", "laplace", "cdf_mse") is None
    assert offer(2**16, 1.0, "add_remove", "gaussian", "cdf_mse") is None
    assert offer(1000, 1.0, "add_remove", "laplace", "cdf_mse") is None  # not configured
    assert offer(2**16, 1.0, "add_remove", "laplace", "range_mse") is None


def test_sizes_between_configs_use_the_next_configured_structure_padded() -> None:
    """A ``B`` between 2^12 and 2^20 that is not configured gets the next power of two's
    structure, padded with empty bins; the planner scores it exactly over the ``B`` prefixes
    and picks it where it beats every tree (here at every size tried: 0.83-0.98x)."""
    assert configured_size(2**16) == 2**16
    assert configured_size(5000) == 2**13 and configured_size(100_000) == 2**17
    for outside in (1, 1000, 4096, 2**20 + 1, 2**21):
        assert configured_size(outside) is None
    assert default_structure(100_000).n_bins == 2**17
    assert default_structure(100_000).top.digest == default_structure(2**17).top.digest
    for n_bins, ratio in ((4097, 0.99), (5000, 0.94), (100_000, 0.87)):
        chosen = plan(bins=n_bins, epsilon=1.0)
        assert chosen.mechanism == "strategy_tree"
        exact = structure_covariance(default_structure(n_bins), 1.0, n_bins).prefix_variances()
        assert exact.size == n_bins + 1
        assert chosen.predicted == pytest.approx(float(exact[1:].mean()), rel=1e-12)
        best_tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
        assert chosen.predicted < ratio * best_tree
    mech = StrategyTreeMechanism(5000, epsilon=1.0)
    blocks = mech.true_blocks(np.ones(5000, np.int64))
    assert int(blocks[0].sum()) > 0 and mech.structure.n_bins == 2**13


def test_release_end_to_end_and_file_round_trip() -> None:
    values = np.random.default_rng(TEST_SEED).normal(size=20_000)
    rel = release_cdf(
        values,
        bounds=(-4.0, 4.0),
        bins=2**16,
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert rel.mechanism.name == "strategy_tree"  # "auto" releases the planner's choice
    cdf = rel.cdf(np.linspace(-4, 4, 33))
    assert np.all(np.diff(cdf) >= 0)
    lo, hi = rel.confidence_interval("cdf", 0.0)
    assert lo <= rel.cdf(0.0) <= hi
    assert abs(float(rel.quantile(0.5))) < 0.1
    assert rel.range_count(-1.0, 1.0) == pytest.approx(rel.cdf(1.0) - rel.cdf(-1.0), abs=1.0)
    buf = io.BytesIO()
    rel.save(buf)
    buf.seek(0)
    back = load_release(buf)
    assert np.allclose(back.cdf([-1.0, 0.5]), rel.cdf([-1.0, 0.5]))


def test_replace_release_imposes_n() -> None:
    values = np.random.default_rng(TEST_SEED).uniform(size=3_000)
    rel = release_cdf(
        values,
        bounds=(0.0, 1.0),
        bins=100,
        epsilon=1.0,
        neighbours="replace",
        n=3_000,
        mechanism="strategy_tree",
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert rel.cdf(1.0) == pytest.approx(3_000)
    assert rel.prefix_variance[-1] == pytest.approx(0.0, abs=1e-6)


# Privacy review (session 6) F1-F4: the domain, the budget split, the shipped top.


def test_the_shipped_top_is_pinned() -> None:
    """F4: a swapped data file would change the released strategy unnoticed."""
    top = default_structure(2**20).top
    assert top.n_bins == 4096
    assert top.digest == "d1c1aa761acc33a8be6eddf4ab42c2287e621cb440bfcbbbc70a2796f39f6cef"


def test_a_total_beyond_int64_is_outside_the_domain_before_the_charge() -> None:
    """F1: the strategy's int64 product refused after the charge and the noise; now the
    mechanism's domain (checked before anything is charged or drawn) excludes it."""
    mech = StrategyTreeMechanism(2**13, epsilon=1.0)
    limit = mech.max_records()
    assert limit == mech.structure.top.max_total() and limit < 2**62
    mech.check_domain(limit)
    with pytest.raises(treedp.DataError) as info:
        mech.check_domain(limit + 1)
    assert str(limit) not in str(info.value)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 1.7, 3.3, 1e-5])
def test_custom_shares_never_spend_more_than_epsilon(epsilon: float) -> None:
    """F2/F3: float shares whose sum rounds above 1 (within the structure's tolerance) must
    not spend more than epsilon; a mutant split of ``epsilon * f`` does at 1.7."""
    top = Strategy(np.ones(4, dtype=np.int64), np.ones((1, 4), dtype=np.int64))
    for shares in ((0.31, 0.69 + 9e-10), (0.1, 0.2, 0.7 + 5e-10), (1 / 3, 1 / 3, 1 / 3)):
        levels = (1,) if len(shares) == 2 else (1, 2)
        structure = BlockedStrategy(top, 4, levels, shares)
        mech = StrategyTreeMechanism(16, epsilon=epsilon, structure=structure)
        assert mech.epsilon_spent() <= Fraction(epsilon)
        assert sum(Fraction(e) for e in split_epsilon(epsilon, shares)) <= Fraction(epsilon)
    naive = [1.7 * f for f in (0.31, 0.69 + 9e-10)]
    assert sum(Fraction(e) for e in naive) > Fraction(1.7)  # what the split must correct
