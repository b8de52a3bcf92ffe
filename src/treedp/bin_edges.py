"""Edges of public bins: their checks (strictly increasing, finite, at most :data:`MAX_BINS`
bins), their arrays (float64 numbers or int64 datetime ticks), and the proof that equal-width
edges suit the arithmetic counting kernel (:class:`treedp.domain.Bins` uses them)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "INTEGER_BINS",
    "MAX_BINS",
    "RELEASE_INTEGER_BINS",
    "blocks",
    "check_edges",
    "edges_array",
    "equal_width_edges",
    "equal_width_inverse",
    "integer_bins",
    "proven_equal_width",
]

#: The largest number of bins accepted (2**26: the tree then needs about 1.5 GiB at most).
MAX_BINS = 2**26
#: The most bins of a profile's integer column: as the quantiles' tree, one bin per integer
#: up to this many integers (``WIDE_INTEGER_RANGE``).
INTEGER_BINS = 4096
#: The most bins of ``bins="integers"`` on privately found bounds in a release, by default
#: (:class:`treedp.PrivateBounds`'s ``max_bins``): one bin per integer over a found range of
#: up to 2**19 integers (five-digit amounts such as Adult's capital gains, ``[0, 131071]``
#: on the grid, with room for the scans' overshoot, up to ``311,743`` in 200 runs), where bins
#: of whole integers spread blocks of tied values (zeros, round amounts) over their integers
#: (docs/private_bounds.md, "Wide integer ranges in a release").
RELEASE_INTEGER_BINS = 2**19


def equal_width_edges(lo: float, hi: float, n_bins: int) -> np.ndarray:
    """The ``n_bins + 1`` edges ``lo + (hi - lo)·fl(j/B)`` from ``lo`` to ``hi`` (a fresh
    float64 array; :func:`proven_equal_width` bounds their rounding). Bins of whole integers
    (integer ``lo``, ``hi`` and width ``w``) get the exact integers ``lo + w·j``: the formula
    put some a hair above their integer, so a value on such an edge counted one bin low.
    When ``hi - lo`` overflows the edges are interpolated without forming it; subnormal
    bounds underflow harmlessly (the caller's ``np.seterr`` must not make that an error)."""
    width = hi - lo
    edges = np.empty(n_bins + 1, dtype=np.float64)
    step = width / n_bins
    whole = max(abs(lo), abs(hi)) <= 2.0**53 and all(float(v).is_integer() for v in (lo, hi, step))
    with np.errstate(all="ignore"):
        for part in blocks(n_bins + 1):  # cache-sized blocks: one pass over memory
            if whole:  # in int64, then to float64: exact, as every integer up to 2**53 is
                j64 = np.arange(part.start, part.stop, dtype=np.int64)
                edges[part] = (int(lo) + int(step) * j64).astype(np.float64)
                continue
            steps = np.arange(part.start, part.stop, dtype=np.float64) / n_bins
            edges[part] = (
                lo + width * steps if math.isfinite(width) else lo * (1.0 - steps) + hi * steps
            )
    edges[-1] = hi
    return edges


def integer_bins(
    lo: int, hi: int, cap: int
) -> tuple[tuple[int, int] | tuple[float, float], int | str, int]:
    """Bins for the integers ``lo..hi``: one bin per integer when they are at most ``cap``,
    else the fewest equal-width bins of ``w`` whole integers each (``w`` the smallest width
    that needs at most ``cap`` bins) covering them from ``lo``.

    Returns ``(bounds, bins, w)``: ``((lo, hi), "integers", 1)``, or
    ``((lo, lo + k·w), k, w)`` (as floats) for ``k`` bins whose edges are the integers
    ``lo + j·w`` (bin ``j`` holds ``lo + j·w .. lo + (j+1)·w - 1``); when their top would
    pass ``2**53`` (float64's last exact integer) they end at ``hi + 1`` instead, still
    covering ``lo..hi``. Public values in, public values out.

    >>> integer_bins(0, 99, 128)
    ((0, 99), 'integers', 1)
    >>> integer_bins(0, 999, 128)
    ((0.0, 1000.0), 125, 8)
    """
    size = hi - lo + 1
    if size <= cap:
        return (lo, hi), "integers", 1
    width = -(-size // cap)
    k = -(-size // width)
    if lo + k * width > 2**53 >= hi + 1:  # anchored at the top: every edge an exact float64
        return (float(hi + 1 - k * width), float(hi + 1)), k, width
    return (float(lo), float(lo + k * width)), k, width


def edges_array(edges: Any, unit: str | None) -> np.ndarray:
    """The edges as a fresh float64 array (numbers) or int64 ticks of ``unit`` (datetimes)."""
    arr = edges if isinstance(edges, np.ndarray) else np.asarray(edges)
    kind = arr.dtype.kind
    if unit is not None:
        if kind == "M":
            if np.isnat(arr).any():
                raise InvalidParameterError(must("edges", "not hold NaT."))
            return arr.astype(f"datetime64[{unit}]").view(np.int64)
        if kind not in "iu":
            raise InvalidTypeError(
                "The 'edges' parameter of datetime bins must hold int64 ticks or datetimes. "
                f"Got dtype {arr.dtype} instead."
            )
        out = arr.astype(np.int64, copy=False)
    else:
        if kind == "M" or kind not in "iuf":
            raise InvalidTypeError(
                must(
                    "edges",
                    "hold numbers (give datetime_unit for datetimes). "
                    f"Got dtype {arr.dtype} instead.",
                )
            )
        out = arr.astype(np.float64, copy=False)
    if out is arr and arr.flags.writeable:
        out = arr.copy()  # the caller's array must not change the bins later
    return out


def equal_width_inverse(edges: np.ndarray) -> float:
    """``B / (hi - lo)`` for the arithmetic counting kernel, after checking the spacing.

    The kernel corrects a rounding error of one bin at most, so the edges must lie within a
    quarter bin of ``lo + j·(hi - lo)/B``; edges that do not are refused. Returns 0.0 when the
    arithmetic would overflow (the bins are then counted by binary search: exact, slower).
    """
    lo, hi = float(edges[0]), float(edges[-1])
    n_bins = edges.size - 1
    with np.errstate(all="ignore"):
        width = hi - lo
        inv = n_bins / width
        arithmetic = math.isfinite(width) and math.isfinite(inv) and inv > 0.0
        if not arithmetic:
            inv = 0.0
            min_gap = min(float(np.diff(edges[s]).min()) for s in blocks(edges.size, overlap=1))
        spaced = True
        for part in blocks(edges.size):  # cache-sized blocks: one pass over memory
            j = np.arange(part.start, part.stop, dtype=np.float64)
            e = edges[part]
            if arithmetic:
                ok = np.abs((e - lo) * inv - j) <= 0.25
            else:
                steps = j / n_bins
                ok = np.abs(e - (lo * (1.0 - steps) + hi * steps)) <= 0.25 * min_gap
            if not ok.all():
                spaced = False
                break
    if not spaced:
        raise InvalidParameterError(
            "equal_width=True needs equally spaced edges lo + j·(hi - lo)/B; use "
            "equal_width=False for other edges."
        )
    return float(inv)


def check_edges(edges: np.ndarray, name: str, increasing: str | None = None) -> None:
    if edges.ndim != 1 or edges.size < 2:
        raise InvalidParameterError(
            must(name, f"be a 1-D sequence of at least 2 edges. Got shape {edges.shape} instead.")
        )
    if edges.size - 1 > MAX_BINS:
        raise InvalidParameterError(
            f"The '{name}' parameter gives {edges.size - 1} bins; at most {MAX_BINS} are allowed."
        )
    floats = edges.dtype.kind == "f"
    for part in blocks(edges.size, overlap=1):  # cache-sized blocks: one pass over memory
        e = edges[part]
        if floats and not np.isfinite(e).all():
            raise InvalidParameterError(must(name, "hold finite values only."))
        if not (e[1:] > e[:-1]).all():
            raise InvalidParameterError(
                increasing or f"The '{name}' parameter must be strictly increasing."
            )


_BLOCK = 1 << 16


def blocks(size: int, overlap: int = 0) -> list[slice]:
    """Slices of about :data:`_BLOCK` items covering ``range(size)``, each ``overlap`` longer."""
    return [
        slice(a, min(a + _BLOCK + overlap, size)) for a in range(0, max(size - overlap, 1), _BLOCK)
    ]


def proven_equal_width(lo: float, hi: float, width: float, n_bins: int) -> bool:
    """Whether ``lo + (hi - lo)·fl(j/B)`` edges are provably within a quarter bin of the ideal.

    With unit roundoff ``u = 2**-53`` and normal numbers, each of ``fl(hi - lo)``,
    ``fl(j/B)``, the product and the sum adds a relative error of at most ``u``, so an edge is
    within ``5u(|lo| + |hi|)(1 + u)`` of ``lo + j(hi - lo)/B``; ``8u(|lo| + |hi|)`` bounds that.
    When this is at most a quarter of the bin width ``(hi - lo)/B``, consecutive edges differ by
    at least half a bin (strictly increasing) and the counting kernel's spacing condition holds,
    so the scans of :class:`Bins` validation would only confirm it.
    """
    if not (math.isfinite(width) and width >= 2.0**-1000 and n_bins / width < math.inf):
        return False
    return 8.0 * 2.0**-53 * (abs(lo) + abs(hi)) * n_bins <= 0.25 * width * (1.0 - 2.0**-40)
