"""Whether the equal-width arithmetic alone is the bin rule: the proof the kernels cache.

The in-memory kernels (:mod:`treedp.engines.local`, :mod:`treedp.engines._kernel_numba`) and
Spark's bin expression (:mod:`treedp.engines.spark.bins_sql`) index a value by
``floor((x - lo)·inv)``. Floating-point rounding can put a value next to an edge on the wrong
side; :func:`_arithmetic_is_exact` proves, once per edges array in ``O(B)``, that it cannot
(then no per-value correction is needed), and :func:`_edge_slack` bounds how far it can stray
(the compiled kernel's ``delta``). Both facts depend on the public edges only and are cached
by the edges array.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__: list[str] = []

#: Edges arrays already checked by :func:`_arithmetic_is_exact`, by id (the array is kept
#: alive by the entry, so its id cannot be reused while it is cached).
_EXACT_CACHE: dict[int, tuple[np.ndarray, float, Any]] = {}
_EXACT_CACHE_SIZE = 16
_EXACT_BLOCK = 1 << 15


def _arithmetic_is_exact(edges: np.ndarray, inv: float, *, compute: bool = True) -> bool:
    """Whether ``floor(clip((x - lo)·inv))`` alone is the bin rule for these edges.

    The computed index is a non-decreasing function of ``x`` (a rounded subtraction of a
    constant and a rounded product by a positive constant are both monotone, and so are the
    clip and the floor). So it is the bin rule for every ``x`` exactly when each inner edge
    ``e_j`` gets index ``>= j`` and the float just below it gets ``<= j - 1``: an ``O(B)``
    check made once per edges array, after which the per-value edge correction is skipped.

    For an inner edge (``1 <= j <= B - 1``) with ``v = (e_j - lo)·inv``, the clip and the
    floor drop out of both conditions: ``floor(clip(v, 0, B - 1/2)) >= j`` holds exactly when
    ``v >= j`` (a ``v`` above ``B - 1/2`` is above ``j`` and gets index ``B - 1 >= j``; a
    negative ``v`` fails both), and ``floor(clip(u, 0, B - 1/2)) <= j - 1`` exactly when
    ``u < j``. The check compares the floats with ``j`` in cache-sized blocks.

    With ``compute=False`` only a cached answer is used; ``False`` (correct the values) when
    there is none.
    """

    def exact() -> bool:
        return all((v >= j).all() and (u < j).all() for j, v, u in _inner_edge_indices(edges, inv))

    return bool(_cached(_EXACT_CACHE, edges, inv, exact if compute else None, False))


def _cached(
    cache: dict[int, tuple[np.ndarray, float, Any]],
    edges: np.ndarray,
    inv: float,
    compute: Callable[[], Any] | None,
    default: Any,
) -> Any:
    """The cached fact about ``(edges, inv)``, else ``compute()`` cached (``default`` when
    ``compute`` is None)."""
    key = id(edges)
    hit = cache.get(key)
    if hit is not None and hit[0] is edges and hit[1] == inv:
        return hit[2]
    if compute is None:
        return default
    value = compute()
    if len(cache) >= _EXACT_CACHE_SIZE:  # threads may evict at once: no KeyError
        for oldest in list(cache)[:1]:
            cache.pop(oldest, None)
    cache[key] = (edges, inv, value)
    return value


def _inner_edge_indices(
    edges: np.ndarray, inv: float
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """``(j, T(e_j), T(prev(e_j)))`` for the inner edges ``1 <= j <= B - 1``, in cache-sized
    blocks, with ``T(x) = (x - lo)·inv`` rounded as the kernels round it and ``prev`` the next
    float down (floating-point warnings silenced: they would depend only on the public edges,
    but are not the user's concern)."""
    n_bins = int(edges.size - 1)
    lo = float(edges[0])
    for start in range(1, n_bins, _EXACT_BLOCK):
        stop = min(start + _EXACT_BLOCK, n_bins)
        inner = edges[start:stop].astype(np.float64, copy=False)
        with np.errstate(all="ignore"):
            v = inner - lo
            v *= inv
            u = np.nextafter(inner, -np.inf)
            u -= lo
            u *= inv
        yield np.arange(start, stop, dtype=np.float64), v, u


_SLACK_CACHE: dict[int, tuple[np.ndarray, float, Any]] = {}


def _edge_slack(edges: np.ndarray, inv: float, *, compute: bool = True) -> float:
    """How far the arithmetic index of an edge strays from its integer: the compiled kernel's
    ``delta`` (``1.0``, "compare every value with the edges", when not computed or cached).

    With ``T(x) = (x - lo)·inv`` (rounded as the kernels round it; monotone in ``x``), the
    slack is the largest of ``0``, ``j - T(e_j)`` and ``T(prev(e_j)) - j`` over the inner
    edges ``1 <= j <= B - 1``, ``prev`` the next float down. Then a value whose clipped
    ``t = T(x)`` has ``j = floor(t)`` and fractional part ``f`` with ``f > delta`` and
    ``1 - f > delta`` lies in bin ``j``: ``x < e_j`` (``j >= 1``) would give
    ``t <= T(prev(e_j)) <= j + delta``, so ``f <= delta``; ``x >= e_{j+1}`` (``j <= B - 2``, so
    ``t`` was not clipped at the top) would give ``t >= T(e_{j+1}) >= j + 1 - delta``, so
    ``1 - f <= delta``. Each difference is computed exactly when it is below ``1/2``
    (Sterbenz: the two floats are within a factor of two), and rounds to at least ``1/2``
    otherwise, where no fractional part passes the test: ``delta`` is never understated.
    A non-finite slack becomes ``1.0``. Cached by edges array, like
    :func:`_arithmetic_is_exact`.
    """

    def slack() -> float:
        out = 0.0
        with np.errstate(all="ignore"):
            for j, v, u in _inner_edge_indices(edges, inv):
                for block in (float((j - v).max()), float((u - j).max())):
                    if not block <= out:  # larger, or NaN
                        out = block
        return out if 0.0 <= out < 1.0 else 1.0

    return float(_cached(_SLACK_CACHE, edges, inv, slack if compute else None, 1.0))
