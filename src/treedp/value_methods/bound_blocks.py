"""Records at the public bounds, spread inside a public zone at each end, and answers there
snapped to the bound itself: the exponential and recursive quantiles can answer ``lo``.

A block of records at a bound is common: a column of amounts with many zeros over bounds
``(0, hi)``, or values clamped to the bounds. Smith's exponential mechanism samples a grid
point ``y`` with the score ``-|#{x < y} - t|``; every grid point lies strictly above ``lo``,
so ``#{x < y}`` counts the whole block at ``lo`` and a level inside the block (70% zeros,
q = 0.25) gets the value just above it, whose ranks ``[#{x < y}, #{x <= y}]`` are the block's
end: 0.45 n off, where ``lo`` itself is exact.

The fix is :func:`treedp.value_methods.quantile_exponential._spread`'s, for the two ends:

* Zones (public). The first and the last ``cells >> ZONE_BITS`` units of the grid (a share
  ``2**-ZONE_BITS`` of it at each end): ``[lo, lo_end)`` and ``(hi_start, hi]``.
* Weight (public). In the selections each zone unit counts ``2**ZONE_WEIGHT_BITS`` times
  (:class:`ZonedGrid`: the zone's units repeated, a public base measure), so a block at a
  bound holding the target outweighs the gap of records above it at small ``ε·n`` while the
  zone stays ``2**-ZONE_BITS`` of the range in value. The exponential mechanism with a public
  base measure ``μ`` (``P(y) ∝ μ(y)·exp(-rate·|i(y) - t|)``) keeps its guarantee: the ratio of
  two neighbours' probabilities is bounded by the score's alone, ``μ`` cancelling.
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

from dataclasses import dataclass, field

import numpy as np

from treedp.value_methods.exponential_core import Grid

__all__ = [
    "ZONE_BITS",
    "ZONE_WEIGHT_BITS",
    "ZoneSplits",
    "ZonedGrid",
    "answers",
    "spread_at_bounds",
    "zone_units",
]

#: Each zone is ``2**-ZONE_BITS`` of the grid (``2**28`` of the ``2**48`` units): narrow
#: enough in value (``10^-6`` of the range) to cost nothing else.
ZONE_BITS = 20
#: Each zone unit counts ``2**ZONE_WEIGHT_BITS`` times in the selections (:class:`ZonedGrid`):
#: a zone then weighs ``2**-14`` of the grid, enough that a block at a bound holding the
#: target wins over the gap above it at ``ε·n`` down to about 100 (docs/quantiles.md,
#: "Blocks at a bound at small ε·n": 2**8 and 2**10 cost up to 1.12x on narrow data).
ZONE_WEIGHT_BITS = 6


@dataclass(frozen=True)
class ZonedGrid:
    """The output grid with each zone unit repeated ``weight`` times: the units the
    selections draw from (a public base measure; :meth:`unit` maps one to its grid unit).

    Units ``0 .. zone·weight - 1`` are the low zone's (``weight`` per grid unit), then the
    grid's units between the zones, then the high zone's."""

    base: Grid
    weight: int = field(default_factory=lambda: 1 << ZONE_WEIGHT_BITS)

    @property
    def lo(self) -> float:
        return self.base.lo

    @property
    def hi(self) -> float:
        return self.base.hi

    @property
    def zone(self) -> int:
        """The grid units of each zone (0: no zones)."""
        return _grid_zone(self.base)

    @property
    def cells(self) -> int:
        return self.base.cells + 2 * self.zone * (self.weight - 1)

    def unit(self, k: np.ndarray) -> np.ndarray:
        """The grid unit of each weighted unit ``k`` (non-decreasing in ``k``)."""
        k = np.asarray(k, dtype=np.int64)
        z, w, cells = self.zone, self.weight, self.base.cells
        top = z * w + cells - 2 * z  # the first weighted unit of the high zone
        inner = z + (k - z * w)
        high = cells - z + (k - top) // w
        out: np.ndarray = np.where(k < z * w, k // w, np.where(k < top, inner, high))
        return out

    def values(self, k: np.ndarray) -> np.ndarray:
        return self.base.values(self.unit(k))

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        """``#{weighted units k : value(k) <= x}``, exactly, from the grid's count."""
        c = self.base.count_at_most(x)
        z, w, cells = self.zone, self.weight, self.base.cells
        low = np.minimum(c, z)
        inner = np.clip(c - z, 0, cells - 2 * z)
        high = np.clip(c - (cells - z), 0, z)
        out: np.ndarray = low * w + inner + high * w
        return out


def _grid_zone(grid: Grid) -> int:
    """The grid units of each zone: ``cells >> ZONE_BITS``, 0 (no zones) on a grid too small
    for two zones and one unit between them, or with ``lo == hi``."""
    z = grid.cells >> ZONE_BITS
    if z < 1 or 2 * z + 1 > grid.cells or not grid.lo < grid.hi:
        return 0
    return z


def zone_units(grid: Grid | ZonedGrid) -> int:
    """The units of each zone: of a :class:`ZonedGrid`, its weighted units (``zone ·
    weight``); of a plain grid, its own (weight 1)."""
    if isinstance(grid, ZonedGrid):
        return grid.zone * grid.weight
    return _grid_zone(grid)


def _ends(grid: Grid | ZonedGrid, z: int) -> tuple[float, float]:
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


def spread_at_bounds(x: np.ndarray, grid: Grid | ZonedGrid) -> np.ndarray:
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


def answers(grid: Grid | ZonedGrid, units: np.ndarray) -> np.ndarray:
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

    grid: Grid | ZonedGrid

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
