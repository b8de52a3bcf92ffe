"""The numpy kernels of the in-memory engine: equal-width bins by arithmetic, other edges by
binary search, both chunk by chunk in cache-sized buffers.

:func:`_count_equal_width_missing` indexes a value by ``floor((x - lo)·inv)`` and, where that
arithmetic is not proven to be the bin rule (:mod:`treedp.engines.edge_exactness`), compares
values with the edges themselves; :func:`_count_search` counts into any edges by
``np.searchsorted``. Both give the counts of the bin rule of :mod:`treedp.engines.base`, bin for
bin; :func:`treedp.engines.local.count_chunk` chooses between them (and the compiled kernel).
Missing values follow the policy here too (:func:`_drop`); an error names no count, value or
shape of the data. The time per value depends on the data as the compiled kernel's does
(:mod:`treedp.engines._kernel_numba`): through where the values land in the counters, whether a
chunk lies inside the bounds, and the values compared with the edges.
"""

from __future__ import annotations

import numpy as np

from treedp.engines.edge_exactness import _arithmetic_is_exact, _edge_slack
from treedp.exceptions import DataError

__all__: list[str] = []

#: Values per kernel chunk at least: its buffers stay in the caches (1 MiB each), and two threads,
#: which take turns at ``np.bincount`` (it holds the GIL), hand it over once per 2^17 values;
#: at 2^16 the hand-overs cost two threads 15-30% (docs/benchmarks.md, "Session 15").
CHUNK = 1 << 17


def _drop(arr: np.ndarray, bad: np.ndarray, nan: str, what: str) -> np.ndarray:
    """Apply the missing-value policy; the error names no count, value or shape of the data."""
    if nan == "drop":
        kept: np.ndarray = arr[~bad]
        return kept
    raise _missing_error(what)


def _missing_error(what: str) -> DataError:
    """The error for missing values under ``nan="error"``: no count, value or shape in it."""
    return DataError(
        f"The 'values' argument contains {what} values. Pass nan='drop' to leave them out "
        "(a per-record filter that keeps the add/remove guarantee; see the docs), or clean "
        "the column first."
    )


def _chunk_for(n_bins: int) -> int:
    """Values per chunk: cache-sized, but large enough that the per-chunk bincount of ``B``
    counters stays a small fraction of the work."""
    return int(min(max(CHUNK, 2 * n_bins), 1 << 22))


def _count_equal_width(arr: np.ndarray, edges: np.ndarray, inv: float) -> np.ndarray:
    """The counts of ``arr`` (no NaN: one raises :class:`DataError`) in equal-width bins."""
    return _count_equal_width_missing(arr, edges, inv, "error")[0]


def _count_equal_width_missing(
    arr: np.ndarray, edges: np.ndarray, inv: float, nan: str
) -> tuple[np.ndarray, int]:
    """The counts of ``arr`` (integers or floats) in equal-width bins, and its missing values.

    Chunk by chunk, in preallocated cache-sized buffers (the float index ``t``, its integer part
    and a scratch array): no pass over the whole column and no allocation per value. While the
    chunks lie inside the bounds, each is checked by its maximum, which also rules out NaN, and,
    unless the arithmetic is exact, its minimum, and indexed without the clip
    (:func:`_inside_indices`). With exact arithmetic the minimum is left to ``np.bincount``,
    which checks its input for negative entries anyway: an index ``t`` in ``(-1, 0)`` truncates
    to bin 0, where the clip would put it too, and ``t <= -1`` (``-inf`` included) gives a
    negative integer, which ``np.bincount`` refuses (:func:`_bincount_or_none`), and the chunk is
    counted again on the clipping path (:func:`_bin_indices`): two passes fewer per chunk than
    that path, the same counts. From the first chunk that is not inside, the indices are clipped
    and a chunk's missing values (NaN) are found from the sum of its clipped indices, finite
    unless one is NaN (the clip keeps NaN and nothing else is unbounded). Only a chunk with NaN is
    scanned for them, and then either the error is raised (``nan="error"``) or they are left out.
    Where the arithmetic is not exact, only the values whose fractional index lies within the
    edges' slack of an integer are compared with the edges (:func:`_corrected_near_edges`).
    """
    lo = float(edges[0])
    n_bins = int(edges.size - 1)
    # The O(B) proofs pay off only when there are at least about B values to count (or they are
    # cached); otherwise the per-value correction, exact for every Bins, is cheaper.
    few = arr.size < n_bins
    exact, delta, guarded = _edge_proofs(edges, inv, few)
    chunk = _chunk_for(n_bins)
    if arr.size <= chunk:  # one chunk: its bincount is the result (no B-sized add)
        chunk = max(arr.size, 1)
    counts: np.ndarray | None = None
    n_bad = 0
    size = min(chunk, arr.size)
    buffers = np.empty(size, np.float64), np.empty(size, np.intp), np.empty(size, np.float64)
    inside = True  # whether the last chunk was inside the bounds (then try the short path)
    with np.errstate(all="ignore"):  # per thread: the user's np.seterr must not leak
        for start in range(0, arr.size, chunk):
            x = arr[start : start + chunk]
            part = None
            if inside:
                idx = _inside_indices(x, buffers, lo, inv, n_bins, lower=not exact)
                if idx is not None and exact:
                    part = _bincount_or_none(idx, n_bins)
                elif idx is not None:
                    fixed = _corrected_near_edges(idx, x, buffers, guarded, few, delta)
                    part = np.bincount(fixed, minlength=n_bins)
                inside = part is not None
            if part is None:
                tt, idx = _bin_indices(x, buffers, lo, inv, n_bins)
                if arr.dtype.kind == "f" and np.isnan(np.add.reduce(tt)):
                    bad = np.isnan(x)
                    x = _drop(x, bad, nan, "NaN (missing)")
                    n_bad += int(np.count_nonzero(bad))
                    tt, idx = _bin_indices(x, buffers, lo, inv, n_bins)
                if not exact:
                    idx = _corrected_near_edges(idx, x, buffers, guarded, few, delta)
                part = np.bincount(idx, minlength=n_bins)
            if counts is None:
                counts = part
            else:
                counts += part
    if counts is None:
        return np.zeros(n_bins, dtype=np.int64), n_bad
    return counts, n_bad


def _edge_proofs(edges: np.ndarray, inv: float, few: bool) -> tuple[bool, float, np.ndarray]:
    """``(exact, delta, edges)`` for the corrections: whether the arithmetic alone is the bin
    rule, the edges' slack (``1.0``, "compare every value", when exact or not known), and the
    edges to compare with. The ``O(B)`` proofs are computed only unless ``few`` (fewer values
    than bins; a cached answer is used either way). Without ``few`` the edges have NaN in place
    of ``e_0`` and ``e_B``: no comparison with NaN holds, so :func:`_corrected` needs no bounds
    test (values beyond the ends are already clamped); with ``few``, no ``O(B)`` copy, and the
    corrected index is clipped instead."""
    exact = _arithmetic_is_exact(edges, inv, compute=not few)
    delta = 1.0 if exact else _edge_slack(edges, inv, compute=not few)
    if exact or few:
        return exact, delta, edges
    guarded = edges.astype(np.float64)
    guarded[0] = guarded[-1] = np.nan
    return exact, delta, guarded


def _bincount_or_none(idx: np.ndarray, n_bins: int) -> np.ndarray | None:
    """``np.bincount(idx, minlength=n_bins)`` of indices known to be below ``n_bins``, or None
    when one is negative (``np.bincount`` checks for them in its own pass over the indices
    and raises ``ValueError`` before counting)."""
    try:
        out: np.ndarray = np.bincount(idx, minlength=n_bins)
    except ValueError:
        return None
    return out


def _inside_indices(
    x: np.ndarray,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
    lo: float,
    inv: float,
    n_bins: int,
    *,
    lower: bool,
) -> np.ndarray | None:
    """The integer parts of ``t = (x - lo)·inv`` (binary64), in a view of the integer buffer,
    for a chunk found inside the bounds; None for any other chunk.

    ``T(v) = (v - lo)·inv`` rounded is non-decreasing in ``v`` (a rounded subtraction of a
    constant and a rounded product by a positive constant are monotone), so the chunk's
    largest ``t`` is ``T(max x)``, computed in the same binary64 operations on one value.
    Inside means ``T(max x) < B`` (a NaN maximum fails) and, with ``lower``, ``T(min x) >= 0``:
    then the clip of :func:`_bin_indices` is the identity, no value is NaN, and ``t`` is
    truncated into the integer buffer (truncation is the floor of ``t >= 0``, as ``astype``
    casts). With ``lower`` (the arithmetic is not exact) ``t`` itself is kept in the float
    buffer for :func:`_corrected_near_edges`; without it the product is truncated straight into
    the integer buffer (one fused pass), an index may be negative (``t <= -1``) and the caller
    must refuse it (:func:`_bincount_or_none`); ``t`` in ``(-1, 0)`` truncates to 0, the bin the
    clip gives it. The arithmetic is binary64 whatever the input's dtype (float32 or float16
    columns are not multiplied in their own precision).
    """
    if not (float(np.maximum.reduce(x)) - lo) * inv < n_bins:
        return None
    if lower and not (float(np.minimum.reduce(x)) - lo) * inv >= 0.0:
        return None
    tt, idx = buffers[0][: x.size], buffers[1][: x.size]
    if lower:
        _scaled(x, lo, inv, tt)
        np.copyto(idx, tt, casting="unsafe")
    elif lo == 0.0:  # x - 0.0 is x, bit for bit: one pass fewer
        np.multiply(x, inv, out=idx, casting="unsafe", dtype=np.float64)
    else:
        np.subtract(x, lo, out=tt, dtype=np.float64)
        np.multiply(tt, inv, out=idx, casting="unsafe")
    return idx


def _scaled(x: np.ndarray, lo: float, inv: float, out: np.ndarray) -> None:
    """``out = (x - lo)·inv`` in binary64, the arithmetic of the exactness proofs."""
    if lo == 0.0:  # x - 0.0 is x, bit for bit: one pass fewer
        np.multiply(x, inv, out=out, dtype=np.float64)
    else:
        np.subtract(x, lo, out=out, dtype=np.float64)
        out *= inv


def _bin_indices(
    x: np.ndarray,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
    lo: float,
    inv: float,
    n_bins: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``clip((x - lo)·inv, 0, B - 1/2)`` (binary64 whatever the input's dtype) and its
    integer part, in views of the buffers. (x - lo)·inv may overflow to ±inf: silent under the
    caller's errstate (a warning would be an output that depends on the data); the clip puts
    ±inf in the end bins and keeps NaN.
    """
    tt, idx = buffers[0][: x.size], buffers[1][: x.size]
    _scaled(x, lo, inv, tt)
    np.clip(tt, 0.0, n_bins - 0.5, out=tt)
    np.copyto(idx, tt, casting="unsafe")  # truncation, as astype: the floor of t >= 0
    return tt, idx


def _corrected_near_edges(
    idx: np.ndarray,
    x: np.ndarray,
    buffers: tuple[np.ndarray, np.ndarray, np.ndarray],
    edges: np.ndarray,
    few: bool,
    delta: float,
) -> np.ndarray:
    """:func:`_corrected` for the values that need it: those whose ``t`` (in the float buffer:
    ``T(x)``, clipped or inside, no NaN) has a fractional part ``f`` with ``f <= delta`` or
    ``1 - f <= delta``.

    ``delta`` is the edges' slack (:func:`treedp.engines.edge_exactness._edge_slack`): any
    other value lies in bin ``floor(t)``, the argument the compiled kernel uses
    (:mod:`treedp.engines._kernel_numba`; a ``t`` clipped to ``B - 1/2`` has ``f = 1/2`` and its
    bin ``B - 1`` by the same argument, one clipped to 0 has ``f = 0`` and is compared).
    ``f = t - floor(t)`` is exact (``t >= 0``: the two are within a factor of two, or
    ``floor(t) = 0``). The chunk's smallest and largest ``f`` decide whether any value is
    compared; a slack of ``1/2`` or more (not computed: few values) compares them all.
    """
    n_bins = int(edges.size - 1)
    if x.size == 0:  # a chunk of missing values only, dropped: nothing to compare
        return idx
    if not delta < 0.5:
        return _corrected(idx, x, edges, few, n_bins)
    tt, frac = buffers[0][: x.size], buffers[2][: x.size]
    np.floor(tt, out=frac)
    np.subtract(tt, frac, out=frac)
    if float(np.minimum.reduce(frac)) > delta and 1.0 - float(np.maximum.reduce(frac)) > delta:
        return idx
    near = np.flatnonzero(~((frac > delta) & (1.0 - frac > delta)))
    idx[near] = _corrected(idx[near], x[near], edges, few, n_bins)
    return idx


def _corrected(
    idx: np.ndarray, x: np.ndarray, edges: np.ndarray, few: bool, n_bins: int
) -> np.ndarray:
    """Indices in ``[0, B)`` corrected against the edges themselves, in place: floating-point
    rounding in ``(x - lo)·inv`` may put a value on the wrong side of an edge. ``edges`` are
    guarded (NaN at both ends: no comparison with NaN holds, so values beyond the ends stay
    clamped) unless ``few``, where the plain edges turn ``x < e_0`` into ``-1`` and
    ``x >= e_B`` into ``B`` and the indices are clipped back."""
    idx -= x < edges[idx]
    idx += x >= edges[idx + 1]
    if few:
        np.clip(idx, 0, n_bins - 1, out=idx)
    return idx


def _count_search(arr: np.ndarray, edges: np.ndarray) -> np.ndarray:
    n_bins = int(edges.size - 1)
    inner = edges[1:-1]
    chunk = _chunk_for(n_bins)
    counts = np.zeros(n_bins, dtype=np.int64)
    for start in range(0, arr.size, chunk):
        idx = np.searchsorted(inner, arr[start : start + chunk], side="right")
        counts += np.bincount(idx, minlength=n_bins)
    return counts
