"""Records at the public bounds, spread inside a public zone at each end, and answers there
snapped to the bound itself: the exponential and recursive quantiles can answer ``lo``.

A block of records at a bound is common: a column of amounts with many zeros over bounds
``(0, hi)``, or values clamped to the bounds. Smith's exponential mechanism samples a grid
point ``y`` with the score ``-|#{x < y} - t|``; every grid point lies strictly above ``lo``,
so ``#{x < y}`` counts the whole block at ``lo`` and a level inside the block (70% zeros,
q = 0.25) gets the value just above it, whose ranks ``[#{x < y}, #{x <= y}]`` are the block's
end: 0.45 n off, where ``lo`` itself is exact.

The fix is :func:`treedp.value_methods.quantile_exponential._spread`'s, for the two ends:

* Zones (public). The first and the last :func:`zone_units` units of the grid (a share
  ``2**-ZONE_BITS`` of it at each end): ``[lo, lo_end)`` and ``(hi_start, hi]``.
* Spread. The ``k`` records at or below ``lo`` (clamped there, as the grid counts them) get
  the positions ``lo + (lo_end - lo)·(i + 1/2)/k``, ``i = 0..k-1``, inside the low zone; the
  records at or above ``hi`` likewise inside the high zone. Adding one record to a block turns
  its ``k`` positions into ``k + 1`` that interleave with them (``(i + 1/2)/(k + 1) <= (i +
  1/2)/k <= (i + 3/2)/(k + 1)``; rounding is monotone, so the computed positions interleave
  too), so for every grid point ``y`` the count ``#{x' < y}`` grows by 0 or 1, exactly as for
  one record added to continuous data; no other record moves. The score keeps its
  sensitivity under both relations (replace: one removal and one addition), so the mechanisms'
  guarantees (pure ε, add/remove or replace, one record) are unchanged.
* Answers (post-processing of the released unit, public): a unit in the low zone answers
  ``lo``, in the high zone ``hi``.
* The recursion's splits (:class:`ZoneSplits`) never cut a zone: a split inside one moves to
  the zone's start or end, so a block stays in one node and one added record changes one node
  per level (the argument of :class:`~.recursion_splits._CellSplits` for integer cells).

Records strictly inside the bounds but within a zone keep their values; a quantile there is
answered at the bound (within ``(hi - lo)·2**-ZONE_BITS`` of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from treedp.value_methods.exponential_core import Grid

__all__ = ["ZONE_BITS", "ZoneSplits", "answers", "spread_at_bounds", "zone_units"]

#: Each zone is ``2**-ZONE_BITS`` of the grid (``2**28`` of the ``2**48`` units): wide
#: enough in units that a block holding the target wins over the gap above it at any ε·n
#: the mechanisms serve, narrow enough in value (``10^-6`` of the range) to cost nothing else.
ZONE_BITS = 20


def zone_units(grid: Grid) -> int:
    """The units of each zone: ``cells >> ZONE_BITS``, 0 (no zones) on a grid too small
    for two zones and one unit between them, or with ``lo == hi``."""
    z = grid.cells >> ZONE_BITS
    if z < 1 or 2 * z + 1 > grid.cells or not grid.lo < grid.hi:
        return 0
    return z


def _ends(grid: Grid, z: int) -> tuple[float, float]:
    """``(lo_end, hi_start)``: the value of unit ``z`` (above the low zone) and of unit
    ``cells - z - 1`` (below the high zone)."""
    vals = grid.values(np.array([z, grid.cells - z - 1]))
    return float(vals[0]), float(vals[1])


def _block(k: int, start: float, end: float) -> np.ndarray:
    """``k`` positions ``start + (end - start)·(i + 1/2)/k`` in ``[start, end)`` (open at
    ``end``: clamped below it), non-decreasing in ``i``."""
    frac = (np.arange(k, dtype=np.float64) + 0.5) / k
    out: np.ndarray = np.clip(start + (end - start) * frac, start, np.nextafter(end, -np.inf))
    return out


def spread_at_bounds(x: np.ndarray, grid: Grid) -> np.ndarray:
    """The sorted records ``x`` with the blocks at the bounds spread in their zones, sorted.

    Records ``<= lo`` (NaN-free input, ±inf included) move into ``[lo, lo_end)``, records
    ``>= hi`` into ``(hi_start, hi]``; the others keep their values. See the module docstring
    for why the exponential mechanism's score keeps its sensitivity."""
    z = zone_units(grid)
    if z == 0 or x.size == 0:
        return x
    lo_end, hi_start = _ends(grid, z)
    k_lo = int(np.searchsorted(x, grid.lo, side="right"))
    k_hi = x.size - int(np.searchsorted(x, grid.hi, side="left"))
    if k_lo == 0 and k_hi == 0:
        return x
    low = _block(k_lo, grid.lo, lo_end)
    high = -_block(k_hi, -grid.hi, -hi_start)[::-1]  # in (hi_start, hi], hi included
    out: np.ndarray = np.sort(np.concatenate([low, x[k_lo : x.size - k_hi], high]))
    return out


def answers(grid: Grid, units: np.ndarray) -> np.ndarray:
    """The values of released units: ``lo`` in the low zone, ``hi`` in the high zone, else
    the grid's (post-processing)."""
    units = np.asarray(units, dtype=np.int64)
    out = grid.values(units)
    z = zone_units(grid)
    if z:
        out = np.where(units < z, grid.lo, np.where(units >= grid.cells - z, grid.hi, out))
    return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class ZoneSplits:
    """The grid, with the recursion's splits kept off the zones: a unit in the lower half of
    a zone splits at its start, in the upper half at its end (just above ``hi`` for the high
    zone), so a node holds a block whole; :meth:`cell_ends` gives a zone's ends, for a node
    whose levels lie on one side (:func:`~.recursion_splits._split_point`)."""

    grid: Grid

    @property
    def cells(self) -> int:
        return self.grid.cells

    def cell_ends(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The start and end of each unit's zone (a unit outside the zones: its value)."""
        k = np.asarray(k, dtype=np.int64)
        y = self.grid.values(k)
        z = zone_units(self.grid)
        if z == 0:
            return y, y
        lo_end, hi_start = _ends(self.grid, z)
        above = np.nextafter(self.grid.hi, np.inf)
        low, high = k < z, k >= self.grid.cells - z
        start = np.where(low, self.grid.lo, np.where(high, hi_start, y))
        end = np.where(low, lo_end, np.where(high, above, y))
        return start, end

    def values(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=np.int64)
        start, end = self.cell_ends(k)
        z = zone_units(self.grid)
        if z == 0:
            return start
        upper = np.where(k < z, k >= z // 2, k >= self.grid.cells - z + z // 2)
        out: np.ndarray = np.where(upper, end, start)
        return out

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        return self.grid.count_at_most(x)
