"""Brute-force L1 and L2 sensitivity of every block over all neighbouring pairs on small domains.

The released blocks are linear in the bin counts, so a neighbouring pair is determined by the
bins involved: add or remove one record in bin ``j`` (``add_remove``), or move one record from
bin ``i`` to bin ``j`` (``replace``). Every such pair is enumerated on a random base dataset,
and the largest L1 change of each block must equal what the mechanism claims: not above
(the guarantee would be false), and attained (the claim is tight).
"""

from __future__ import annotations

import math

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
    return measured_norms(mech, counts)[0]


def measured_norms(
    mech: Mechanism, counts: np.ndarray
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The largest L1 and L2 changes of each block over every neighbour of ``counts``."""
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
    worst_sq = [0] * len(base)
    for other in neighbours:
        for b, (x, y) in enumerate(zip(base, mech.true_blocks(other), strict=True)):
            worst[b] = max(worst[b], int(np.abs(x - y).sum()))
            worst_sq[b] = max(worst_sq[b], int(((x - y) ** 2).sum()))
    return tuple(worst), tuple(math.sqrt(s) for s in worst_sq)


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
    l1, l2 = measured_norms(mech, counts)
    assert l1 == mech.block_sensitivity == tuple(b.l1 for b in mech.blocks)
    assert l2 == pytest.approx(tuple(b.l2 for b in mech.blocks), rel=1e-15)
    expected_l2 = (
        (1.0,) * (len(branching) + 1)
        if neighbours == "add_remove"
        else (0.0,) + (math.sqrt(2),) * len(branching)
    )
    assert mech.block_l2 == expected_l2
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
    l1, l2 = measured_norms(mech, counts)
    assert l1 == mech.block_sensitivity == tuple(b.l1 for b in mech.blocks)
    assert l2 == pytest.approx(tuple(b.l2 for b in mech.blocks), rel=1e-15)


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


def test_the_check_catches_a_wrong_l2_claim() -> None:
    """A tree claiming L2 = 1 below the root under replace (the true value is sqrt 2)."""
    counts = _counts(8)
    mech = TreeMechanism(shape_for(8, 2), epsilon=1.0, neighbours="replace", n=int(counts.sum()))
    mech.block_l2 = (0.0,) + (1.0,) * (len(mech.block_l2) - 1)
    assert measured_norms(mech, counts)[1] != tuple(b.l2 for b in mech.blocks)
