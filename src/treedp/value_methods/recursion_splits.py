"""Where the recursive quantiles split a node's records: at the released point, or on the
boundary of its unit cell (integer data, the float lattice), so that a node holds whole cells.

No privacy step: the split is a function of the released unit and the public plan. Whole
cells keep the guarantee of :func:`treedp.value_methods.quantiles_recursive.quantiles_recursive`
(one added record changes one node per level, its spread positions interleaving).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp.value_methods.bound_blocks import ZonedGrid, ZoneSplits, spread_at_bounds
from treedp.value_methods.exponential_core import Grid, GridLike

__all__ = ["_CellSplits", "_split_point", "spread_for_splits"]


@dataclass(frozen=True)
class _CellSplits:
    """The grid, with the recursion's splits on unit-cell boundaries (integer data spread
    in their cells): a unit in the lower half of its cell ``[v, v + 1)`` splits at ``v``,
    else at ``v + 1``. A node then holds whole cells, so one record added changes one node
    (its ``k`` spread positions interleave with ``k + 1``: every count below a unit moves by
    0 or 1), and a block of ties holding the target rank mostly below the split goes left,
    where the levels below it are answered in it."""

    grid: Grid

    @property
    def cells(self) -> int:
        return self.grid.cells

    def values(self, k: np.ndarray) -> np.ndarray:
        y = self.grid.values(k)
        v = np.floor(y)
        boundary: np.ndarray = v + (y - v >= 0.5)
        return boundary

    def cell_ends(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The start and end of each unit's cell (in the records' coordinates)."""
        v = np.floor(self.grid.values(k))
        return v, v + 1.0

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        return self.grid.count_at_most(x)


def _split_point(plan: Any, grid: GridLike, unit: int) -> float:
    """Where the records split below a node: at the released point; on a grid whose splits
    keep whole cells (``cell_ends``), a cell holding the point goes to the only child with
    levels, or by the point's half of the cell (public: the plan and the released unit)."""
    ends = getattr(grid, "cell_ends", None)
    if ends is not None and (plan.left is None) != (plan.right is None):
        start, end = ends(np.array([unit]))
        return float(end[0] if plan.right is None else start[0])
    return float(grid.values(np.array([unit]))[0])


def spread_for_splits(x: np.ndarray, grid: Grid, integers: bool) -> tuple[np.ndarray, GridLike]:
    """The sorted records with their ties spread, and the splits that keep them whole:
    integer data in their unit cells ``[v, v + 1)`` of the grid over ``[lo, hi + 1)``
    (:func:`~.quantile_exponential._spread`, :class:`_CellSplits`), else the records at each
    bound in a public zone there (:func:`~.bound_blocks.spread_at_bounds`,
    :class:`~.bound_blocks.ZoneSplits`)."""
    if integers:
        from treedp.value_methods.quantile_exponential import _spread

        return _spread(np.floor(np.clip(x, grid.lo, grid.hi - 1.0))), _CellSplits(grid)
    zoned = ZonedGrid(grid)
    return spread_at_bounds(x, zoned), ZoneSplits(zoned)
