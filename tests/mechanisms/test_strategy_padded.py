"""The padded strategy: a shipped strategy on its first B bins (mechanisms/strategy_padded.py).

Exact algebra throughout: the released matrix is the shipped one's first B columns (padding
with empty bins), its claimed sensitivities are the exact maxima over enumerated neighbours
(and a claim that forgets the aggregate rows is caught), the planner's score is the dense
least-squares error of that matrix, and a release of it saves, loads and cross-checks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.mechanisms.test_strategy_sensitivity import _brute
from tests.privacy.auditor import audit_mechanism
from tests.stats import TEST_SEED
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.strategy_padded import PaddedStrategyMechanism
from treedp.noise import InsecureSeededSource
from treedp.noise.families import DiscreteLaplace
from treedp.strategy.store import SHIPPED_SIZES, padded_strategy, shipped_strategy


@pytest.mark.parametrize("n_bins", [1, 5, 253, 300, 1000, 3000])
def test_the_released_matrix_is_the_shipped_one_on_its_first_bins(n_bins: int) -> None:
    size = next(s for s in SHIPPED_SIZES if s >= n_bins)
    shipped = shipped_strategy(size)
    padded = padded_strategy(n_bins)
    assert shipped is not None and padded is not None and padded.n_bins == n_bins
    w = shipped.matrix()
    kept = w[:, :n_bins]
    kept = kept[kept.any(axis=1)]  # the identity rows of the padding and empty aggregates go
    np.testing.assert_array_equal(padded.matrix(), kept)
    # padding: W' x equals W (x, 0...) on every row that is not identically zero
    x = np.arange(n_bins, dtype=np.int64) % 7
    full = shipped.apply(np.concatenate([x, np.zeros(size - n_bins, dtype=np.int64)]))
    released = padded.apply(x)
    assert sorted(full[full != 0].tolist()) == sorted(released[released != 0].tolist())


def test_no_padded_strategy_above_the_largest_shipped_size() -> None:
    at_size, shipped = padded_strategy(4096), shipped_strategy(4096)
    assert at_size is not None and shipped is not None and at_size.digest == shipped.digest
    assert padded_strategy(4097) is None
    with pytest.raises(InvalidParameterError, match="strategy_padded"):
        PaddedStrategyMechanism(5000, epsilon=1.0)


@pytest.mark.parametrize("n_bins", [3, 6])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_claim_is_the_exact_maximum(n_bins: int, relation: str) -> None:
    n = 2 if relation == "replace" else None
    mech = PaddedStrategyMechanism(n_bins, epsilon=1.0, neighbours=relation, n=n)
    l1, l2 = _brute(mech.strategy, relation)
    assert mech.block_sensitivity == (l1,)
    assert mech.block_l2[0] == pytest.approx(l2)


def test_the_planner_scores_the_exact_least_squares_error() -> None:
    """The planner's figure is the mean prefix variance of dense least squares on W'."""
    n_bins, eps = 300, 1.0
    plan = treedp.plan(n_bins, epsilon=eps)
    assert plan.mechanism == "strategy_padded"
    mech = PaddedStrategyMechanism(n_bins, epsilon=eps)
    w = mech.strategy.matrix().astype(np.float64)
    sigma2 = DiscreteLaplace(mech.scales[0]).variance()
    cov = sigma2 * np.linalg.inv(w.T @ w)
    prefix = np.tril(np.ones((n_bins, n_bins)))
    dense = float(np.mean(np.einsum("ij,jk,ik->i", prefix, cov, prefix)))
    assert plan.predicted == pytest.approx(dense, rel=1e-9)
    # and it beats the planner's best tree, as docs/strategies.md says
    best_tree = min(c.value for c in plan.alternatives if not c.offered)
    assert plan.predicted < 0.95 * best_tree


def test_auto_releases_it_and_the_file_round_trips(tmp_path: Path) -> None:
    x = np.random.default_rng(1).normal(0, 1, 2000)
    rel = treedp.release_cdf(x, bounds=(-4, 4), bins=1000, epsilon=1.0, rng=InsecureSeededSource(3))
    assert rel.mechanism.name == "strategy_padded"
    assert rel.guarantee.epsilon <= 1.0
    path = tmp_path / "r.json"
    rel.save(path)
    back = treedp.load_release(path)
    assert back.mechanism.name == "strategy_padded"
    np.testing.assert_allclose(back.cdf(np.linspace(-4, 4, 9)), rel.cdf(np.linspace(-4, 4, 9)))


class _AggregatesForgotten(PaddedStrategyMechanism):
    """A mutant claiming the identity weights' sensitivity only (noise too small)."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.block_sensitivity = (int(self.strategy.identity.max()),)
        self._set_scales()


def _worst(mech: PaddedStrategyMechanism) -> tuple[np.ndarray, np.ndarray]:
    w = mech.strategy.matrix()
    base = np.full(mech.n_bins, 3, dtype=np.int64)
    other = base.copy()
    other[int(np.argmax(w.sum(axis=0)))] += 1
    return base, other


@pytest.mark.slow
def test_audit_passes_and_catches_the_mutant() -> None:
    """Audits at false-failure rate 1e-6 each (auditor.py) on the worst add/remove pair."""
    honest = PaddedStrategyMechanism(6, epsilon=1.0)
    d, d2 = _worst(honest)
    result = audit_mechanism(honest, d, d2, runs=200_000, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    broken = _AggregatesForgotten(6, epsilon=1.0)
    assert broken.scales[0] < honest.scales[0]
    flagged = audit_mechanism(
        broken, d, d2, runs=200_000, source=InsecureSeededSource(TEST_SEED), claimed=honest
    )
    assert flagged.flagged, flagged
