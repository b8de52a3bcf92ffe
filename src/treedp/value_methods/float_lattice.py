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
  such a value is answered exactly).
* Units. Each cell holds ``2**SUB_BITS`` units (the exponential mechanism's output space is
  the units, uniformly weighted: a prior of ``2**bits(E)`` per octave). Unit ``u`` lies in
  cell ``u >> SUB_BITS``; the answer is that cell's lattice point (post-processing).
* Spread. The ``k`` records of one cell (sorted) get positions ``c·2**S + 2**S (i + 1/2)/k``,
  ``i = 0..k-1`` (:func:`positions`). Adding one record to a cell turns its ``k`` positions
  into ``k + 1`` that interleave with them, so for every unit the number of positions below it
  grows by 0 or 1, exactly as one record added to continuous data; no other cell moves. A
  score ``-|#{positions < u} - t|`` therefore keeps the sensitivity of the plain rank score
  (the argument of :func:`treedp.value_methods.quantile_exponential._spread`, with lattice
  cells for integer cells). Floating-point rounding is monotone, so computed positions
  interleave too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = [
    "CORE_BITS",
    "CORE_OCTAVES",
    "HALVING_OCTAVES",
    "SUB_BITS",
    "TOTAL_CELLS",
    "TOTAL_UNITS",
    "UnitGrid",
    "cell_of",
    "cell_value",
    "positions",
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


_BITS = _bits_per_exponent()
_SHIFT = _MANTISSA - _BITS
#: The first positive cell of each biased exponent (cell 0 is the one holding 0).
_FIRST = np.concatenate([[0], np.cumsum(np.left_shift(1, _BITS))]).astype(np.int64)
_POSITIVE = int(_FIRST[-1])  # cells 0 (zero) .. _POSITIVE - 1 (the largest finite point)
#: Cells of the whole lattice: ``-(largest) .. 0 .. largest``.
TOTAL_CELLS = 2 * _POSITIVE - 1
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
    index = np.where(finite, index, _POSITIVE - 1)
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
    (``-inf`` and values below the first point: cell 0; ``+inf``: the last cell)."""
    x = np.asarray(x, dtype=np.float64)
    negative = x < 0
    index, exact = _floor_magnitude(np.abs(x))
    ceiling = np.minimum(index + (~exact).astype(np.int64), _POSITIVE - 1)
    signed = np.where(negative, -ceiling, index)
    cells: np.ndarray = signed + (_POSITIVE - 1)
    return cells


def cell_value(cell: np.ndarray) -> np.ndarray:
    """The lattice point ``v_c`` of each cell (the answer for a unit in it)."""
    signed = np.asarray(cell, dtype=np.int64) - (_POSITIVE - 1)
    values: np.ndarray = np.sign(signed) * _magnitude(np.abs(signed))
    return values + 0.0  # -0.0 as 0.0


def positions(sorted_x: np.ndarray) -> np.ndarray:
    """The spread positions (in units) of sorted records: the ``k`` records of cell ``c``
    at ``c·2**S + 2**S (i + 1/2) / k`` (module docstring)."""
    if sorted_x.size == 0:
        return np.zeros(0)
    cells = cell_of(sorted_x)
    _, start, counts = np.unique(cells, return_index=True, return_counts=True)
    k = np.repeat(counts, counts).astype(np.float64)
    i = np.arange(sorted_x.size) - np.repeat(start, counts)
    spread: np.ndarray = cells.astype(np.float64) * 2.0**SUB_BITS + 2.0**SUB_BITS * (i + 0.5) / k
    return spread


@dataclass(frozen=True)
class UnitGrid:
    """The units as the exponential core's grid (:class:`~.exponential_core.Grid`'s
    interface): ``count_at_most(p)`` is ``#{u : u <= p}`` for positions ``p``, so a unit's
    rank is the number of positions strictly below it; ``values(u)`` is the start of ``u``'s
    cell in units, which is where the recursive method splits the records (a node's records
    are whole cells, so one added record changes one node)."""

    cells: int = TOTAL_UNITS

    def values(self, k: np.ndarray) -> np.ndarray:
        k = np.asarray(k, dtype=np.int64)
        start: np.ndarray = ((k >> SUB_BITS) << SUB_BITS).astype(np.float64)
        return start

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        counted: np.ndarray = np.clip(np.floor(x) + 1, 0, self.cells).astype(np.int64)
        return counted
