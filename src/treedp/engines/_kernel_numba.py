"""The compiled float64 counting kernel (numba; the optional extra ``treedp[fast]``).

Importing this module needs only numpy. :func:`load` imports numba and compiles the kernel for
its one signature (or loads it from numba's on-disk cache: next to this file when that
directory is writable, else numba's user-wide cache directory or ``NUMBA_CACHE_DIR``; when no
cache directory is writable the kernel is compiled in memory, with no warning).
:mod:`treedp.engines.local` calls it only when the kernel is asked for or the column is large
(see ``LocalEngine``); the counts are the numpy kernel's, bin for bin.

The kernel counts one contiguous float64 array into equal-width bins with the bin rule of
:mod:`treedp.engines.base`, in one pass, holding no GIL (threads count parts in parallel):

* ``t = (x - lo)·inv`` clipped to ``[0, B - 1/2]`` (NaN gives 0 here, never a cast of NaN),
  ``j = floor(t)``: the arithmetic index of the numpy kernel, the same float operations in
  the same order (numba does not contract them or reassociate without ``fastmath``);
* when the arithmetic is not proven exact for these edges, the edges decide: with the
  *slack* ``delta`` of :func:`treedp.engines.edge_exactness._edge_slack` (how far any edge's own
  arithmetic index strays from its integer), a fractional part ``f = t - j`` with
  ``f > delta`` and ``1 - f > delta`` proves that ``j`` is the bin; any other value is placed
  by comparing it with the edges themselves (step down while ``x < e_j``, up while
  ``x >= e_{j+1}``), which is the bin rule by definition;
* a NaN is counted in an extra bin ``B`` by a select, the same work as any value (no branch,
  no second pass, no copy): the caller reads the missing-value count from it and applies the
  policy after the pass.

The time per value depends on the data only as the numpy kernel's does (where in the counters
each value lands, for the caches) and through the values placed by the edges on the
non-exact path (the rare values near an edge, and every NaN there, whose fractional index is
0); a NaN needs no second pass or copy.

Counters are ``uint32`` (half the cache footprint of ``int64``; at ``B = 2^16`` one thread's
counters fit in a 1 MiB L2 with room for the data stream); a call counts at most
``2^31`` values into them before they are added into the ``int64`` result, so they never wrap.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["count_float64", "load"]

#: Values counted into the ``uint32`` counters before they are added into the result.
_PIECE = 1 << 31
#: Values copied at a time when the input is not contiguous.
_COPY = 1 << 16


def _count_into(
    x: np.ndarray,
    lo: float,
    inv: float,
    top: float,
    delta: float,
    edges: np.ndarray,
    exact: bool,
    counts: np.ndarray,
) -> None:  # pragma: no cover - compiled by numba; tests run the compiled function
    """Add the bins of ``x`` into ``counts`` (``B + 1`` counters, the last one for NaN)."""
    nb = counts.size - 1
    last = nb - 1
    for i in range(x.size):
        v = x[i]
        t = (v - lo) * inv
        t = t if t >= 0.0 else 0.0  # also NaN -> 0: never cast a NaN
        t = t if t <= top else top
        j = int(t)
        if not exact:
            f = t - j  # exact: t and j are within a factor of two
            if not (f > delta and 1.0 - f > delta):
                while j > 0 and v < edges[j]:
                    j -= 1
                while j < last and v >= edges[j + 1]:
                    j += 1
        j = nb if v != v else j
        counts[j] += 1


def _compile(fn: Callable[..., None]) -> Any:
    """Import numba and compile ``fn`` eagerly, cached on disk when a cache directory is
    writable.

    numba raises ``RuntimeError`` when it finds no writable cache location and ``OSError``
    when writing the cache fails; both mean "compile in memory". Warnings raised while numba
    imports and compiles (a cache index it cannot read, a deprecation inside numba) are not
    the user's concern and do not leak.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # numba ships py.typed; the ignore is for type-checking where it is not installed
        import numba  # type: ignore[import-not-found, unused-ignore]
        from numba import types

        # read-only input and edges (a user's column, Bins.edges); writable arrays convert
        ro = types.Array(types.float64, 1, "C", readonly=True)
        f64 = types.float64
        sig = types.void(ro, f64, f64, f64, f64, ro, types.boolean, types.uint32[::1])
        try:
            return numba.njit(sig, nogil=True, cache=True)(fn)
        except (RuntimeError, OSError):
            return numba.njit(sig, nogil=True, cache=False)(fn)


_LOCK = threading.Lock()
_KERNEL: Any = None


def load() -> None:
    """Import numba and compile (or load from the cache) the kernel, once per process.

    Raises
    ------
    ImportError
        If numba is not installed; any error of numba's compiler propagates too.
    """
    global _KERNEL
    with _LOCK:
        if _KERNEL is None:
            _KERNEL = _compile(_count_into)


def count_float64(
    values: np.ndarray,
    edges: np.ndarray,
    inv: float,
    *,
    exact: bool,
    delta: float,
) -> tuple[np.ndarray, int]:
    """Count float64 ``values`` into the equal-width bins with these edges.

    Parameters
    ----------
    values : ndarray of float64
        One-dimensional; any strides (non-contiguous input is copied in small pieces).
    edges : ndarray of float64
        The ``B + 1`` public edges, ``edges[0] = lo``.
    inv : float
        ``B / (hi - lo)``, positive and finite.
    exact : bool
        Whether the arithmetic index alone is the bin rule for these edges
        (:func:`treedp.engines.edge_exactness._arithmetic_is_exact`); then the edges are not read.
    delta : float
        The edges' slack (:func:`treedp.engines.edge_exactness._edge_slack`); ``1.0`` places every
        value by comparing it with the edges. Used only when ``exact`` is false.

    Returns
    -------
    counts : ndarray of int64
        The ``B`` bin counts of the non-missing values.
    missing : int
        The number of NaN values (counted in the same pass; the caller applies the policy).
    """
    if _KERNEL is None:
        load()
    n_bins = int(edges.size - 1)
    lo = float(edges[0])
    top = n_bins - 0.5
    edges = np.ascontiguousarray(edges, dtype=np.float64)
    counters = np.zeros(n_bins + 1, dtype=np.uint32)
    total: np.ndarray | None = None
    contiguous = values.flags.c_contiguous
    step = _PIECE if contiguous else _COPY
    done = 0
    for start in range(0, values.size, step):
        piece = values[start : start + step]
        if not contiguous:
            piece = np.ascontiguousarray(piece)
        _KERNEL(piece, lo, inv, top, delta, edges, exact, counters)
        done += piece.size
        if done >= _PIECE:  # flush before the counters could wrap
            total = counters.astype(np.int64) if total is None else total + counters
            counters[:] = 0
            done = 0
    if total is None:
        total = counters.astype(np.int64)
    elif done:
        total += counters
    return total[:n_bins], int(total[n_bins])
