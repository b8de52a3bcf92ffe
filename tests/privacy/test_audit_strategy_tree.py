"""Audit of the strategy-over-blocks mechanism on its worst neighbours, and a mutant that must
be flagged.

False-failure rate AUDIT_ALPHA = 1e-6 per audit (auditor.py). The worst neighbours: a record
added in a bin of the block whose column of the top strategy has the largest L1 norm (it
changes that column, and one node of every level); under ``replace`` a record moved between
the two blocks whose columns differ most (and so between nodes of every level).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.privacy.auditor import audit_mechanism
from tests.stats import TEST_SEED
from treedp.mechanisms.strategy_tree import StrategyTreeMechanism
from treedp.noise import InsecureSeededSource
from treedp.strategy import Strategy
from treedp.strategy.blocked import BlockedStrategy

RUNS = 200_000

STRUCTURE = BlockedStrategy(
    Strategy(np.array([1, 2, 1]), np.array([[2, 1, 0], [0, 1, 3]])), 4, (1, 2), (0.5, 0.25, 0.25)
)


def _worst_pair(neighbours: str) -> tuple[np.ndarray, np.ndarray]:
    w = STRUCTURE.top.matrix()
    base = np.full(STRUCTURE.n_bins, 3, dtype=np.int64)
    other = base.copy()
    b = STRUCTURE.block
    if neighbours == "add_remove":
        other[b * int(np.argmax(w.sum(axis=0)))] += 1
        return base, other
    moved = np.abs(w[:, :, None] - w[:, None, :]).sum(axis=0)
    j, k = np.unravel_index(int(np.argmax(moved)), moved.shape)
    other[b * int(j)] -= 1
    other[b * int(k)] += 1
    return base, other


def _mechanism(neighbours: str, counts: np.ndarray) -> StrategyTreeMechanism:
    n = int(counts.sum()) if neighbours == "replace" else None
    return StrategyTreeMechanism(
        STRUCTURE.n_bins, epsilon=1.0, neighbours=neighbours, n=n, structure=STRUCTURE
    )


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_strategy_tree_mechanism_passes(neighbours: str) -> None:
    d, d2 = _worst_pair(neighbours)
    mech = _mechanism(neighbours, d)
    result = audit_mechanism(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    assert result.epsilon_low > 0.3  # the audit is not vacuous


class _TopWeightsNotAccounted(StrategyTreeMechanism):
    """A mutant whose top sensitivity is one (a block sum changes by one), forgetting that the
    strategy's rows weigh each block sum: the top's noise is too small."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.block_sensitivity = (1, *self.block_sensitivity[1:])
        self._set_scales()


def test_mutant_with_the_top_weights_not_accounted_is_flagged() -> None:
    d, d2 = _worst_pair("add_remove")
    honest = _mechanism("add_remove", d)
    broken = _TopWeightsNotAccounted(STRUCTURE.n_bins, epsilon=1.0, structure=STRUCTURE)
    assert broken.scales[0] < honest.scales[0]
    result = audit_mechanism(
        broken, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED), claimed=honest
    )
    assert result.flagged, result


# An inner strategy inside the blocks (issue 33 item 2). Under ``replace`` the worst move is
# between two blocks at the inner strategy's heaviest column (twice that column), which a
# claim of the inner strategy's own ``replace`` sensitivity (moves inside one block) misses:
# here 2 instead of 10 (its aggregate row cancels inside a block).
INNER = BlockedStrategy(
    Strategy(np.array([1, 2]), np.array([[2, 1]])),
    3,
    (),
    (0.5, 0.5),
    Strategy(np.array([1, 1, 1]), np.array([[4, 4, 4]])),
)


def _inner_worst_pair() -> tuple[np.ndarray, np.ndarray]:
    inner = INNER.inner
    assert inner is not None
    r = int(np.argmax(inner.matrix().sum(axis=0)))
    base = np.full(INNER.n_bins, 3, dtype=np.int64)
    other = base.copy()
    other[r] -= 1  # block 0
    other[INNER.block + r] += 1  # block 1, same position
    return base, other


class _InnerMovesInsideOneBlock(StrategyTreeMechanism):
    """A mutant claiming the inner strategy's own ``replace`` sensitivity, forgetting moves
    between blocks: the inner part's noise is too small."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        assert self.structure.inner is not None
        own = self.structure.inner.sensitivity("replace")[0]
        self.block_sensitivity = (*self.block_sensitivity[:-1], own)
        self._set_scales()


@pytest.mark.slow
def test_inner_strategy_mechanism_passes_under_replace() -> None:
    d, d2 = _inner_worst_pair()
    mech = StrategyTreeMechanism(
        INNER.n_bins, epsilon=1.0, neighbours="replace", n=int(d.sum()), structure=INNER
    )
    result = audit_mechanism(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
    assert result.passes, result
    assert result.epsilon_low > 0.3  # the audit is not vacuous


def test_mutant_with_inner_moves_inside_one_block_is_flagged() -> None:
    d, d2 = _inner_worst_pair()
    kwargs = {"epsilon": 1.0, "neighbours": "replace", "n": int(d.sum()), "structure": INNER}
    honest = StrategyTreeMechanism(INNER.n_bins, **kwargs)  # type: ignore[arg-type]
    broken = _InnerMovesInsideOneBlock(INNER.n_bins, **kwargs)
    assert broken.scales[-1] < honest.scales[-1]
    result = audit_mechanism(
        broken, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED), claimed=honest
    )
    assert result.flagged, result
