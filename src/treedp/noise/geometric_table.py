"""Exact geometric draws by table inversion: ``P(Y >= y) = exp(-y·x)`` for a rational ``x > 0``.

A uniform ``U`` in ``[0, 1)`` is revealed 32 bits at a time, ``U ∈ [W/2**32, (W+1)/2**32)``,
and ``Y = #{y >= 1 : U < exp(-y·x)}`` has exactly the law above (the events are nested). With
the exact thresholds ``T_y = floor(2**32 · exp(-y·x))`` (integer arithmetic, :func:`_thresholds`):
``W < T_y`` implies ``U < exp(-y·x)`` (``y`` counts), ``W > T_y`` implies ``U > exp(-y·x)``, and
``W == T_y`` (or ``W == 0`` past the table, where ``T_y = 0``) is decided by revealing more bits
(:func:`~treedp.noise.exp_thresholds.count_exp_thresholds`): probability at most
``(table size + 1) / 2**32`` per draw.

Fast path: ``Y`` is looked up by the top 16 bits of ``W``; only words in the few buckets that
hold a threshold go through a binary search. No floating-point number enters any decision. The
table is a pure function of the public ``x``, memoised.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise.exp_thresholds import count_exp_thresholds, floor_scaled_exp_neg
from treedp.noise.rng import RandomSource, words

__all__ = ["MAX_TABLE", "GeometricTable", "geometric_table"]

#: Largest table built (about ``22.2 / x`` thresholds: scales up to about 1,470). Larger ones
#: lose more to binary search and set-up than they gain (measured: 5 M/s at scale 33,333 against
#: 16 M/s for the chain); beyond it callers use the Bernoulli-chain sampler, which needs none.
MAX_TABLE = 1 << 15

_BITS = 32
_BUCKET_SHIFT = 16


@dataclass(frozen=True, eq=False)
class GeometricTable:
    """The exact 32-bit inversion table of ``P(Y >= y) = exp(-y·x)``: ``ascending`` holds the
    non-zero ``T_y`` for ``y = Y_max, ..., 1``; ``lut`` maps each bucket of the top 16 bits to
    ``Y`` when the bucket decides it, else ``-1``."""

    x: Fraction
    ascending: np.ndarray
    lut: np.ndarray

    def sample(self, n: int, source: RandomSource) -> np.ndarray:
        """Return ``n`` exact draws of ``Y`` as int64."""
        w = words(source, _BITS, n)
        y: np.ndarray = self.lut.take(w >> np.uint32(_BUCKET_SHIFT))  # take: 2x [] here
        slow = np.flatnonzero(y < 0)
        if slow.size:
            ws = w[slow]
            pos = np.searchsorted(self.ascending, ws, side="right")
            size = self.ascending.size
            y[slow] = size - pos
            # w equal to a threshold, or 0 (every T_y past the table; the table is empty when
            # x > ln 2**32)
            tie = ws == 0
            if size:
                tie |= (pos > 0) & (self.ascending[np.maximum(pos - 1, 0)] == ws)
            for i in np.flatnonzero(tie):  # every y with a threshold above w counts
                y[slow[i]] = count_exp_thresholds(int(ws[i]), _BITS, self.x, y[slow[i]] + 1, source)
        return y


def _thresholds(x: Fraction) -> list[int]:
    """Exact ``floor(2**32 · exp(-y·x))`` for ``y = 1, 2, ...`` while non-zero.

    With ``L = floor(2**P exp(-x))``, ``lo_y = floor(lo_{y-1} L / 2**P)`` and ``hi_y =
    ceil(hi_{y-1} (L + 1) / 2**P)`` bracket ``2**P exp(-y·x)`` by induction; where they give
    the same 32-bit floor it is exact, otherwise the floor is computed directly.
    """
    guard = 96
    p = _BITS + guard
    low = floor_scaled_exp_neg(x, p)
    high = low + 1
    lo, hi = low, high
    out: list[int] = []
    shift = p - _BITS
    y = 1
    while True:
        a, b = lo >> shift, hi >> shift
        t = a if a == b else floor_scaled_exp_neg(x * y, _BITS)
        if t == 0:
            return out
        out.append(t)
        y += 1
        lo = (lo * low) >> p
        hi = -((-hi * high) >> p)


@lru_cache(maxsize=64)
def geometric_table(x: Fraction) -> GeometricTable | None:
    """The table for rate ``x``, or ``None`` when it would exceed :data:`MAX_TABLE` entries."""
    x = Fraction(x)
    if x <= 0:
        raise InvalidParameterError(f"The rate must be positive. Got {x} instead.")
    if x * MAX_TABLE < Fraction(222, 10):  # about 22.2 / x thresholds are non-zero
        return None
    values = _thresholds(x)
    ascending = np.array(values[::-1], dtype=np.uint32)
    # Y for words in bucket b: decided when no threshold lies in [b·2**16, (b+1)·2**16).
    buckets = 1 << (_BITS - _BUCKET_SHIFT)
    starts = np.arange(buckets, dtype=np.uint64) << np.uint64(_BUCKET_SHIFT)
    ends = starts + np.uint64((1 << _BUCKET_SHIFT) - 1)
    size = ascending.size
    # equal counts at or above the lowest word and above the highest: no threshold inside
    at_or_above_start = size - np.searchsorted(ascending, starts, side="left")
    above_end = size - np.searchsorted(ascending, ends, side="right")
    lut = np.where(at_or_above_start == above_end, above_end, -1).astype(np.int64)
    lut[0] = -1  # the word 0 ties with every threshold past the table
    ascending.setflags(write=False)
    lut.setflags(write=False)
    return GeometricTable(x, ascending, lut)
