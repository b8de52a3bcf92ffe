"""Audit of the strategy mechanism on its worst neighbours, and a mutant that must be flagged.

False-failure rate AUDIT_ALPHA = 1e-6 per audit (auditor.py). The worst neighbours are the
bin with the largest column sum of ``W`` (add/remove) and the pair of bins whose columns
differ most (replace): there the privacy loss reaches the claim.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.privacy.auditor import audit_mechanism
from tests.stats import TEST_SEED
from treedp.mechanisms.strategy import StrategyMechanism
from treedp.noise import InsecureSeededSource
from treedp.strategy import Strategy, optimise_pidentity, quantise

RUNS = 200_000

SMALL = Strategy(np.array([1, 2, 1, 3]), np.array([[1, 1, 0, 0], [0, 1, 1, 1]]))
OPTIMISED = quantise(optimise_pidentity(12, 1, max_iter=100))


def _worst_pair(strategy: Strategy, neighbours: str) -> tuple[np.ndarray, np.ndarray]:
    w = strategy.matrix()
    base = np.full(strategy.n_bins, 3, dtype=np.int64)
    other = base.copy()
    if neighbours == "add_remove":
        other[int(np.argmax(w.sum(axis=0)))] += 1
        return base, other
    moved = np.abs(w[:, :, None] - w[:, None, :]).sum(axis=0)
    j, k = np.unravel_index(int(np.argmax(moved)), moved.shape)
    other[j] -= 1
    other[k] += 1
    return base, other


def _mechanism(strategy: Strategy, neighbours: str, counts: np.ndarray) -> StrategyMechanism:
    n = int(counts.sum()) if neighbours == "replace" else None
    return StrategyMechanism(
        strategy.n_bins, epsilon=1.0, neighbours=neighbours, n=n, strategy=strategy
    )


@pytest.mark.slow
@pytest.mark.parametrize("strategy", [SMALL, OPTIMISED], ids=["small", "optimised"])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_strategy_mechanism_passes(strategy: Strategy, neighbours: str) -> None:
    d, d2 = _worst_pair(strategy, neighbours)
    mech = _mechanism(strategy, neighbours, d)
    result = audit_mechanism(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    assert result.epsilon_low > 0.3  # the audit is not vacuous


class _RowWeightsNotAccounted(StrategyMechanism):
    """A mutant whose sensitivity counts the rows a bin is in, as if every row were a 0/1
    pattern: the rows' integer weights are not accounted (the noise is too small)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        rows_per_bin = (self.strategy.matrix() != 0).sum(axis=0)
        self.block_sensitivity = (int(rows_per_bin.max()),)
        self._set_scales()


@pytest.mark.parametrize("strategy", [SMALL, OPTIMISED], ids=["small", "optimised"])
def test_mutant_with_a_row_weight_not_accounted_is_flagged(strategy: Strategy) -> None:
    d, d2 = _worst_pair(strategy, "add_remove")
    honest = _mechanism(strategy, "add_remove", d)
    broken = _RowWeightsNotAccounted(strategy.n_bins, epsilon=1.0, strategy=strategy)
    assert broken.scales[0] < honest.scales[0]
    result = audit_mechanism(
        broken, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED), claimed=honest
    )
    assert result.flagged, result
