"""The public grid of the private-bounds scans, and the counts they read from any source.

:data:`SIGNED_GRID` holds the candidates ``±(2**(j/4) - 1)``, ``j = 0..4000`` (about ``-1e301``
to ``1e301``; steps of 0.19 near 0, then 19% apart): public and data-independent.
:data:`COUNT_EDGES` and :class:`GridCounts` give every count a scan reads from one counting
pass over any source (files, Spark, Dask).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError

__all__ = ["COUNT_EDGES", "GRID", "MAX_OCTAVE", "SIGNED_GRID", "STEPS_PER_OCTAVE", "GridCounts"]

#: Grid points per doubling of the magnitude.
STEPS_PER_OCTAVE = 4
#: Largest exponent (in octaves) of the grid: |grid| lies in [2**-1000, 2**1000] or is 0.
MAX_OCTAVE = 1000


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


#: The public candidate magnitudes, ascending from 0: ``2**(j/4) - 1``, ``j = 0..4000``.
GRID = _frozen(np.exp2(np.arange(MAX_OCTAVE * STEPS_PER_OCTAVE + 1) / STEPS_PER_OCTAVE) - 1.0)
#: The public candidates of both scans, ascending: ``-GRID`` reversed, then ``GRID`` (8,001
#: points, symmetric about 0, which is the middle point).
SIGNED_GRID = _frozen(np.concatenate([-GRID[:0:-1], GRID]))


def _make_count_edges() -> np.ndarray:
    top = float(np.finfo(np.float64).max)
    edges = np.empty(2 * SIGNED_GRID.size + 2)
    edges[0], edges[-1] = -top, top
    edges[1:-1:2] = SIGNED_GRID
    edges[2:-1:2] = np.nextafter(SIGNED_GRID, np.inf)
    return _frozen(edges)


#: Public edges whose bin counts give every query of both scans (:class:`GridCounts`):
#: ``-max_float``, then each grid point ``c`` followed by the next float above it (a bin
#: holding exactly ``c``), then ``max_float`` (16,004 edges). ``±inf`` are clamped into the
#: end bins, which lie beyond every grid point on their side, as the scans count them.
COUNT_EDGES = _make_count_edges()


@dataclass(frozen=True, repr=False)
class GridCounts:
    """The counts the scans read, from any source: :meth:`from_counts` of one counting pass
    over :data:`COUNT_EDGES` (files in bounded memory, Spark, Dask) or :meth:`from_values`.
    :func:`treedp.private_bounds` releases from it exactly what it releases from the values.

    Attributes
    ----------
    below, above : ndarray
        ``#{x < c}`` and ``#{x > c}``, one per grid point (int64, read-only).
    total : int
        The number of records counted.
    """

    below: np.ndarray
    above: np.ndarray
    total: int

    def __post_init__(self) -> None:
        for name in ("below", "above"):
            arr = getattr(self, name)
            if (
                not isinstance(arr, np.ndarray)
                or arr.shape != SIGNED_GRID.shape
                or arr.dtype.kind not in "iu"
            ):
                raise InvalidParameterError(
                    f"GridCounts.{name} must hold one integer count per point of SIGNED_GRID; "
                    "make it with GridCounts.from_counts or GridCounts.from_values."
                )

    @classmethod
    def from_counts(cls, counts: Any) -> GridCounts:
        """From the ``COUNT_EDGES.size - 1`` bin counts of a pass over :data:`COUNT_EDGES`.

        Raises
        ------
        InvalidParameterError
            If ``counts`` is not that many non-negative integers.
        """
        arr = np.asarray(counts)
        if (
            arr.shape != (COUNT_EDGES.size - 1,)
            or arr.dtype.kind not in "iu"
            or (arr.size and int(arr.min()) < 0)
        ):
            raise InvalidParameterError(
                must(
                    "counts",
                    "hold the non-negative integer counts of the "
                    f"{COUNT_EDGES.size - 1} bins of COUNT_EDGES.",
                )
            )
        total = np.cumsum(arr.astype(np.int64))
        below = total[0 : 2 * SIGNED_GRID.size : 2]  # bins before the one holding c exactly
        at_most = total[1 : 2 * SIGNED_GRID.size : 2]
        return cls._frozen(below, total[-1] - at_most, int(total[-1]))

    @classmethod
    def from_values(cls, values: Any) -> GridCounts:
        """From numbers in memory (no missing values)."""
        x = np.sort(np.asarray(values, dtype=np.float64).ravel())
        below = np.searchsorted(x, SIGNED_GRID, side="left")
        above = x.size - np.searchsorted(x, SIGNED_GRID, side="right")
        return cls._frozen(below, above, int(x.size))

    @classmethod
    def _frozen(cls, below: np.ndarray, above: np.ndarray, total: int) -> GridCounts:
        return cls(_frozen(below.astype(np.int64)), _frozen(above.astype(np.int64)), total)
