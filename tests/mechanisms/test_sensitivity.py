"""Brute-force L1 sensitivity of every block over all neighbouring pairs on small domains.

The released blocks are linear in the bin counts, so a neighbouring pair is determined by the
bins involved: add or remove one record in bin ``j`` (``add_remove``), or move one record from
bin ``i`` to bin ``j`` (``replace``). Every such pair is enumerated on a random base dataset,
and the largest L1 change of each block must equal what the mechanism claims: not above
(the guarantee would be false), and attained (the claim is tight).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp.mechanisms import (
    AllIntervalsMechanism,
    HistogramMechanism,
    Mechanism,
    ThresholdMechanism,
    TreeMechanism,
)
from treedp.tree import shape_for


def measured_sensitivity(mech: Mechanism, counts: np.ndarray) -> tuple[int, ...]:
    """The largest L1 change of each block over every neighbour of ``counts``."""
    base = mech.true_blocks(counts)
    n_bins = counts.size
    worst = [0] * len(base)
    neighbours = []
    if mech.neighbours == "add_remove":
        for j in range(n_bins):
            for delta in (1, -1):
                if counts[j] + delta >= 0:
                    other = counts.copy()
                    other[j] += delta
                    neighbours.append(other)
    else:
        for i in range(n_bins):
            for j in range(n_bins):
                if i != j and counts[i] > 0:
                    other = counts.copy()
                    other[i] -= 1
                    other[j] += 1
                    neighbours.append(other)
    for other in neighbours:
        for b, (x, y) in enumerate(zip(base, mech.true_blocks(other), strict=True)):
            worst[b] = max(worst[b], int(np.abs(x - y).sum()))
    return tuple(worst)


def _counts(n_bins: int) -> np.ndarray:
    counts = np.random.default_rng(TEST_SEED).integers(1, 4, size=n_bins)
    return counts.astype(np.int64)


SHAPES = [(8, [2, 2, 2]), (9, [3, 3]), (10, [2, 3, 2]), (7, [4, 2]), (12, [12]), (5, [2, 2, 2])]


@pytest.mark.parametrize(("n_bins", "branching"), SHAPES)
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_tree_sensitivity_per_level(n_bins: int, branching: list[int], neighbours: str) -> None:
    counts = _counts(n_bins)
    n = int(counts.sum()) if neighbours == "replace" else None
    mech = TreeMechanism(shape_for(n_bins, branching), epsilon=1.0, neighbours=neighbours, n=n)
    assert measured_sensitivity(mech, counts) == mech.block_sensitivity
    expected = (
        (1,) * (len(branching) + 1)
        if neighbours == "add_remove"
        else ((0,) + (2,) * len(branching))
    )
    assert mech.block_sensitivity == expected


BASELINE_CASES = [(b, nb) for b in (1, 2, 5, 9) for nb in ("add_remove", "replace")]
BASELINE_CASES.remove((1, "replace"))  # nothing to release: refused, see test_contract.py


@pytest.mark.parametrize(("n_bins", "neighbours"), BASELINE_CASES)
@pytest.mark.parametrize("cls", [HistogramMechanism, ThresholdMechanism, AllIntervalsMechanism])
def test_baseline_sensitivity(cls: type, n_bins: int, neighbours: str) -> None:
    counts = _counts(n_bins)
    n = int(counts.sum()) if neighbours == "replace" else None
    mech = cls(n_bins, epsilon=1.0, neighbours=neighbours, n=n)
    assert measured_sensitivity(mech, counts) == mech.block_sensitivity


class _HalvedTree(TreeMechanism):
    """A deliberately broken tree: claims half the true sensitivity under replace."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.block_sensitivity = tuple(s // 2 for s in self.block_sensitivity)


class _NoRootNoise(TreeMechanism):
    """A deliberately broken tree: treats the root as exact under add_remove."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.block_sensitivity = (0, *self.block_sensitivity[1:])


@pytest.mark.parametrize(
    ("cls", "neighbours"), [(_HalvedTree, "replace"), (_NoRootNoise, "add_remove")]
)
def test_the_check_catches_a_wrong_sensitivity(cls: type, neighbours: str) -> None:
    counts = _counts(8)
    n = int(counts.sum()) if neighbours == "replace" else None
    mech = cls(shape_for(8, 2), epsilon=1.0, neighbours=neighbours, n=n)
    assert measured_sensitivity(mech, counts) != mech.block_sensitivity
