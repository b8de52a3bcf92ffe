"""A public lattice of the whole float64 line, and records spread inside its cells.

The lattice of :mod:`treedp.value_methods.unbounded_quantiles`: public and data-independent,
it covers every finite float64 (both signs), so a quantile needs no bounds.

* Cells. Per binary exponent ``E`` (``|x|`` in ``[2**E, 2**(E+1))``) the lattice keeps the
  floats whose mantissa has ``bits(E)`` significant bits: :data:`CORE_BITS` in the core
  octaves ``CORE_OCTAVES`` (``2**-32`` to ``2**64``, about ``2e-10`` to ``2e19``), one bit
  fewer every :data:`HALVING_OCTAVES` octaves further out, at least 0 (one point per octave).
  The lattice points are ``0``, ``±`` these floats; cell ``c`` is ``[v_c, v_{c+1})``, the last
  cell reaching ``+inf`` and records below the first point put in the first cell. Every
  integer of magnitude below ``2**(CORE_BITS + 1)`` and ``0`` is a lattice point (an atom at
  such a value is answered exactly). The point 0 is held by a block of :data:`ZERO_CELLS`
  cells (the weight of a core octave), spread over as one cell.
* Units. Each cell holds ``2**SUB_BITS`` units (the exponential mechanism's output space is
  the units, uniformly weighted: a prior of ``2**bits(E)`` per octave). Unit ``u`` lies in
  cell ``u >> SUB_BITS``; the answer is that cell's lattice point, or the next cell's in the
  upper half of the units of a cell whose point is not round (:func:`answer_of`;
  post-processing).
* Spread. The ``k`` records of one cell (sorted) get positions ``c·2**S + 2**S (i + 1/2)/k``,
  ``i = 0..k-1`` (:func:`positions`; the zero block as one cell ``ZERO_CELLS`` times wider).
  Integer data (``integers=True``) are spread over the cells of their integer's unit interval
  ``[v, v + 1)`` as one group (at least the one cell holding ``v`` where cells are wider than
  one), and every unit of that group answers ``v`` (:func:`answer_of`): a unit between two
  blocks of ties then scores the rank of the block it answers, as in the bounded integer mode
  (:func:`treedp.value_methods.quantile_exponential._spread`). The groups are consecutive
  cells partitioning the line, so the interleaving argument below is unchanged.
  Adding one record to a cell turns its ``k`` positions into ``k + 1`` that interleave
  with them, so for every unit the number of positions below it grows by 0 or 1, exactly as
  one record added to continuous data; no other cell moves. A score ``-|#{positions < u} -
  t|`` therefore keeps the sensitivity of the plain rank score (the argument of
  :func:`treedp.value_methods.quantile_exponential._spread`, with lattice cells for integer
  cells). Only the unit holding a position matters (for a unit ``u``, ``p < u`` iff
  ``floor(p) < u``), so each position is that unit, computed exactly in integers (floor is
  monotone: the interleaving holds) and strictly inside its cell, so a split at a cell
  boundary never cuts a cell (privacy review F2: float64 positions could round onto it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CORE_BITS",
    "CORE_OCTAVES",
    "HALVING_OCTAVES",
    "ROUND_BITS",
    "SUB_BITS",
    "TOTAL_CELLS",
    "TOTAL_UNITS",
    "ZERO_CELLS",
    "UnitGrid",
    "answer_of",
    "cell_of",
    "cell_value",
    "positions",
    "side_units",
]

#: Significant mantissa bits of the lattice in the core octaves (relative step ``2**-16``).
CORE_BITS = 16
#: The core binary exponents ``[lo, hi)``: magnitudes ``2**-32`` to ``2**64``.
CORE_OCTAVES = (-32, 64)
#: Outside the core one mantissa bit is dropped every this many octaves.
HALVING_OCTAVES = 8
#: Units per cell: ``2**SUB_BITS`` (room to spread ties; the total stays below ``2**53``).
SUB_BITS = 28

_MANTISSA = 52
_EXPONENTS = 2047  # biased exponents 0..2046 are finite (0: zero and subnormals)


def _bits_per_exponent() -> np.ndarray:
    unbiased = np.arange(_EXPONENTS) - 1023
    lo, hi = CORE_OCTAVES
    outside = np.maximum(lo - unbiased, unbiased - (hi - 1))
    outside = np.maximum(outside, 0)
    drop = (outside + HALVING_OCTAVES - 1) // HALVING_OCTAVES
    bits: np.ndarray = np.maximum(CORE_BITS - drop, 0).astype(np.int64)
    return bits


#: The point 0 is held by this many cells (a block, one group for the spread): the prior
#: weight of a core octave, so an atom at 0 (zero-inflated counts, incomes) is not
#: outweighed by the many tiny magnitudes around it.
ZERO_CELLS = 2**CORE_BITS

_BITS = _bits_per_exponent()
_SHIFT = _MANTISSA - _BITS
#: The first magnitude index of each biased exponent (index 0: zero and the subnormals).
_FIRST = np.concatenate([[0], np.cumsum(np.left_shift(1, _BITS))]).astype(np.int64)
_MAGNITUDES = int(_FIRST[-1])  # magnitude indices 0 (zero) .. _MAGNITUDES - 1 (largest)
_NEGATIVE = _MAGNITUDES - 1  # cells 0.._NEGATIVE - 1 hold negative points
_ZERO = _NEGATIVE  # the first cell of the zero block
_POSITIVE_FIRST = _ZERO + ZERO_CELLS  # the cell of the smallest positive point
#: Cells of the whole lattice: negative points, the zero block, positive points.
TOTAL_CELLS = 2 * _NEGATIVE + ZERO_CELLS
#: Units of the whole lattice (below ``2**53``: positions are exact in float64).
TOTAL_UNITS = TOTAL_CELLS << SUB_BITS
assert TOTAL_UNITS < 2**53


def _floor_magnitude(mag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The positive cell index ``P`` with ``value(P) <= mag`` (largest such), and whether
    ``mag`` is exactly a lattice point; ``mag >= 0`` (``inf`` into the last cell)."""
    bits = np.ascontiguousarray(mag, dtype=np.float64).view(np.int64)
    exponent = np.minimum(bits >> _MANTISSA, _EXPONENTS - 1)
    finite = (bits >> _MANTISSA) < _EXPONENTS
    mantissa = bits & ((1 << _MANTISSA) - 1)
    shift = _SHIFT[exponent]
    index = _FIRST[exponent] + (mantissa >> shift)
    exact = (mantissa & ((np.int64(1) << shift) - 1)) == 0
    index = np.where(finite, index, _MAGNITUDES - 1)
    return index.astype(np.int64), exact & finite


def _magnitude(index: np.ndarray) -> np.ndarray:
    """The lattice point of positive cell ``index`` (``0`` for cell 0)."""
    index = np.asarray(index, dtype=np.int64)
    exponent = np.searchsorted(_FIRST, index, side="right") - 1
    offset = index - _FIRST[exponent]
    bits = (exponent.astype(np.int64) << _MANTISSA) | (offset << _SHIFT[exponent])
    values: np.ndarray = bits.view(np.float64)
    return values


def cell_of(x: np.ndarray) -> np.ndarray:
    """The cell ``c`` (``0..TOTAL_CELLS - 1``) with ``v_c <= x < v_{c+1}``, for each ``x``
    (``-inf`` and values below the first point: cell 0; ``+inf``: the last cell; 0 and the
    positive subnormals: the first cell of the zero block)."""
    x = np.asarray(x, dtype=np.float64)
    negative = x < 0
    index, exact = _floor_magnitude(np.abs(x))
    ceiling = np.minimum(index + (~exact).astype(np.int64), _MAGNITUDES - 1)
    below = _NEGATIVE - ceiling  # ceiling >= 1 for a negative x
    above = np.where(index > 0, _POSITIVE_FIRST + index - 1, _ZERO)
    cells: np.ndarray = np.where(negative, below, above).astype(np.int64)
    return cells


def cell_value(cell: np.ndarray) -> np.ndarray:
    """The lattice point ``v_c`` of each cell (the answer for a unit in it)."""
    cell = np.asarray(cell, dtype=np.int64)
    negative = cell < _ZERO
    magnitude = np.where(negative, _NEGATIVE - cell, np.maximum(cell - _POSITIVE_FIRST + 1, 0))
    values: np.ndarray = np.where(negative, -1.0, 1.0) * _magnitude(magnitude)
    return values + 0.0  # -0.0 as 0.0


#: A lattice point that is an integer or has at most this many significant bits (0.5, 2.25,
#: 7.0, 65,000) is *round*: the answer for any unit of its cell (:func:`answer_of`).
ROUND_BITS = 8


def _round(values: np.ndarray) -> np.ndarray:
    """Whether each lattice point is round: an integer, or at most :data:`ROUND_BITS`
    significant bits (its mantissa's lowest set bit, counted from the leading one)."""
    v = np.asarray(values, dtype=np.float64)
    mantissa = (np.abs(v).view(np.int64) & ((1 << _MANTISSA) - 1)) | (1 << _MANTISSA)
    lowest = np.log2((mantissa & -mantissa).astype(np.float64))  # exact: a power of two
    short = (_MANTISSA + 1 - lowest) <= ROUND_BITS
    out: np.ndarray = (v == np.floor(v)) | short
    return out


def answer_of(units: np.ndarray, integers: bool = False) -> np.ndarray:
    """The answer for each selected unit (post-processing of the unit only): its cell's
    lattice point, except in the upper half of the units of a cell whose point is not round
    (:data:`ROUND_BITS`), where it is the next cell's point. With ``integers``: the integer
    ``v`` of the unit's group (``[v, v + 1)``), the floor of its cell's point.

    The records of a cell are spread over its units by rank, so a unit in the upper half of
    a cell lies above most of the cell's records: for a block of ties at a value that is no
    lattice point (7.3 lies inside the cell of 7.29998...) the point below it holds none of
    the block's ranks, and at a level above the block's middle the next point (above 7.3) is
    the nearer side (0.245 n off at q = 0.75 with 99% at 7.3, against 0.745 n). A round point
    (0, every integer of magnitude below ``2**17``, 0.5, ...) is where such values sit exactly
    and stays the answer in its whole cell, so blocks there are answered exactly as before.
    """
    units = np.asarray(units, dtype=np.int64)
    cells = np.minimum(units >> SUB_BITS, TOTAL_CELLS - 1)
    values = cell_value(cells)
    if integers:
        floored: np.ndarray = np.floor(values)
        return floored
    upper = (units - (cells << SUB_BITS)) >= (1 << (SUB_BITS - 1))
    move = upper & (cells < TOTAL_CELLS - 1) & ~_round(values)
    out: np.ndarray = np.where(move, cell_value(np.minimum(cells + 1, TOTAL_CELLS - 1)), values)
    return out


def _group(cell: np.ndarray, integers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The spread group of each cell, as its first cell and its number of cells: the zero
    block is one group of :data:`ZERO_CELLS` cells, every other cell its own. With
    ``integers``: the cells of ``[v, v + 1)``, ``v`` the floor of the cell's point (the zero
    block and the positive cells below 1 for ``v = 0``; where cells are wider than one, the
    cell itself): consecutive cells, a partition of the line."""
    cell = np.asarray(cell, dtype=np.int64)
    if integers:
        v = np.floor(cell_value(cell))
        first = cell_of(v)
        end = cell_of(v + 1.0)  # v + 1 rounds to v far out: the cell alone
        return first, np.maximum(end - first, 1)
    zero = (cell >= _ZERO) & (cell < _POSITIVE_FIRST)
    return np.where(zero, _ZERO, cell), np.where(zero, ZERO_CELLS, 1)


def positions(sorted_x: np.ndarray, integers: bool = False) -> np.ndarray:
    """The spread positions of sorted records, as exact unit indices (int64): the ``k``
    records of cell ``c`` in the units ``c·2**S + floor(2**S (i + 1/2) / k)`` (module
    docstring, :func:`_units`); with ``integers``, the records of each integer's group spread
    over all its units (:func:`_group`)."""
    if sorted_x.size == 0:
        return np.zeros(0, dtype=np.int64)
    first, width = _group(cell_of(sorted_x), integers)
    _, start, counts = np.unique(first, return_index=True, return_counts=True)
    k = np.repeat(counts, counts)
    i = np.arange(sorted_x.size) - np.repeat(start, counts)
    return _units(first, width, i, k)


def _units(first: np.ndarray, width: np.ndarray, i: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The unit of record ``i`` of the ``k`` in the group of ``width`` cells from cell
    ``first``: ``first·2**S + floor(W (2i + 1) / (2k))``, ``W = width·2**S``, in exact int64.

    ``W (2i + 1)`` reaches ``2**77`` in the zero block, so with ``t = 2**S (2i + 1) < 2**61``
    and ``t = a·2k + b``: ``floor(W (2i + 1) / (2k)) = width·a + floor(width·b / (2k))``
    (``width·b < 2**55``: a group is at most about ``2**21.4`` cells, the integer 0's).
    It is below ``W`` (``2i + 1 < 2k``): the unit lies strictly inside
    the group, whatever ``k`` (privacy review F2: in float64, above cell ``2**23`` the last
    of more than ``2**29`` records landed on the group's end, where a split cut it).
    """
    first, width, i, k = (np.asarray(a, dtype=np.int64) for a in (first, width, i, k))
    whole, rest = np.divmod((2 * i + 1) << SUB_BITS, 2 * k)
    units: np.ndarray = (first << SUB_BITS) + width * whole + (width * rest) // (2 * k)
    return units


def side_units(
    side: tuple[float | None, float | None], integers: bool = False
) -> tuple[int, int, tuple[int, int]]:
    """The units a public side leaves (post-processing of public values): ``first``, the
    start of the group holding the lower bound (0 without one), ``last``, the end of the group
    holding the upper bound (the last unit without one), and the edge groups' ends,
    ``(low_end, high_start)``, where every unit answers that group's value (a recursion node
    inside one is *forced*: :func:`treedp.value_methods.recursion_forced.forced_sides`)."""
    first, low_end, high_start, last = 0, 0, TOTAL_UNITS, TOTAL_UNITS - 1
    if side[0] is not None:
        start, width = _group(cell_of(np.array([float(side[0])])), integers)
        first, low_end = int(start[0]) << SUB_BITS, int(start[0] + width[0]) << SUB_BITS
    if side[1] is not None:
        start, width = _group(cell_of(np.array([float(side[1])])), integers)
        high_start, last = int(start[0]) << SUB_BITS, (int(start[0] + width[0]) << SUB_BITS) - 1
    return first, last, (low_end, high_start)


@dataclass(frozen=True)
class UnitGrid:
    """The units as the exponential core's grid (:class:`~.exponential_core.Grid`'s
    interface): ``count_at_most(p)`` is ``#{u : u <= p}`` for positions ``p``, so a unit's
    rank is the number of positions strictly below it; ``values(u)`` is where the recursive
    method splits the records: the start of ``u``'s cell when ``u`` lies in the cell's lower
    half of units, else its end. A node's records are whole cells, so one added record
    changes one node; the cell of the split goes to the side holding most of it below or
    above ``u`` (an atom holding the target rank mostly below ``u`` goes left, and the levels
    below it are answered in it)."""

    cells: int = TOTAL_UNITS
    #: Integer data: the groups are the integers' unit intervals (:func:`_group`).
    integers: bool = False
    #: With a public side (:func:`side_units`): ``(low_end, high_start)``, the units below
    #: the end of the group at the public lower bound and from the start of the group at the
    #: public upper bound (``(0, cells)`` for a missing side: never a zone); None: the same.
    zones: tuple[int, int] | None = None

    def values(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=np.int64)
        first, width = _group(k >> SUB_BITS, self.integers)
        start, size = first << SUB_BITS, width << SUB_BITS
        upper = 2 * (k - start) >= size  # in the upper half of its group's units
        boundary: np.ndarray = (start + upper * size).astype(np.float64)
        return boundary

    def cell_ends(self, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The first and one past the last unit of each unit's group (cell or zero block)."""
        first, width = _group(np.asarray(k, dtype=np.int64) >> SUB_BITS, self.integers)
        start = first << SUB_BITS
        return start.astype(np.float64), (start + (width << SUB_BITS)).astype(np.float64)

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        counted: np.ndarray = np.clip(np.floor(x) + 1, 0, self.cells).astype(np.int64)
        return counted
