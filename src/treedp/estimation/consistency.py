"""Consistency: the closest non-decreasing CDF in ``[0, n̂]`` that ends at ``n̂``.

Post-processing costs no privacy. Given prefix estimates ``P[0..B]`` (``P[0] = 0``,
``P[B] = n̂``, exactly ``n`` when it is public), find ``h`` with ``h_0 = 0``, ``h_B = n̂`` and
``0 <= h_1 <= ... <= h_{B-1} <= n̂`` minimising an additive loss ``Σ d(h_m, P[m])``:

* :func:`monotone_l2` — squared L2, real values: weighted isotonic regression
  (``scipy.optimize.isotonic_regression``, pool-adjacent-violators, O(B), by pieces of
  bounded memory: :mod:`treedp.estimation.isotonic`), then clipping to
  ``[0, n̂]`` (for a chain, clipping the unbounded solution solves the bounded problem).
* :func:`isotonic_on_grid` — any separable convex loss with values restricted to a sorted grid,
  exactly, by threshold decomposition: ``h_m >= g_j`` exactly when ``m`` lies in the best
  suffix for the marginal costs ``Δ_m(j) = d(g_j, P[m]) - d(g_{j-1}, P[m])`` (non-decreasing in
  ``j`` by convexity, so the suffixes nest). A divide and conquer over the grid, vectorised
  over all segments of one depth, solves it in ``O(B log G)``. It gives the real L1 fit (the
  grid of data values) and the optimal *integer* CDF for L1 and L2 (the grid ``0..n``).
* :func:`trellis` — the paper's dynamic program (Sec. VI of Rameshwar et al.) for any additive
  loss on integers, with the suffix-minimum speed-up to ``O(B·n)``; the exact reference the
  fast methods are tested against exhaustively.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from treedp._validation import must
from treedp.estimation.isotonic import isotonic_into
from treedp.exceptions import InvalidParameterError

__all__ = [
    "POSTPROCESS",
    "TRELLIS_MAX_CELLS",
    "band_critical_value",
    "check_postprocess",
    "consistent_prefix",
    "critical_value",
    "isotonic_on_grid",
    "live_se",
    "monotone_l1",
    "monotone_l2",
    "trellis",
]

#: ``postprocess`` values a release accepts.
POSTPROCESS = ("monotone", "monotone_l1", "none")


def check_postprocess(postprocess: object, integer: object) -> None:
    """Validate a release's ``postprocess`` and ``integer`` options (before any data is read)."""
    if postprocess not in POSTPROCESS:
        raise InvalidParameterError(
            must(
                "postprocess",
                f"be one of {', '.join(map(repr, POSTPROCESS))}. Got {postprocess!r} instead.",
            )
        )
    if not isinstance(integer, bool):
        raise InvalidParameterError(must("integer", f"be a bool. Got {integer!r}."))
    if integer and postprocess == "none":
        raise InvalidParameterError(
            "integer=True makes a consistent integer CDF: it needs postprocess='monotone' or "
            "'monotone_l1', not 'none'."
        )


#: The trellis refuses instances with more than this many cells ``(B - 1)·(n + 1)``.
TRELLIS_MAX_CELLS = 20_000_000

Marginal = Callable[[np.ndarray, np.ndarray], np.ndarray]


def monotone_l2(
    prefix: np.ndarray, weights: np.ndarray | None = None, *, overwrite: bool = False
) -> np.ndarray:
    """Least-squares consistent CDF (real values), endpoints kept.

    Parameters
    ----------
    prefix : ndarray
        ``P[0..B]``; ``P[0]`` and ``P[B]`` (= ``n̂``, made non-negative) are kept.
    weights : ndarray, optional
        Positive weights of ``P[1..B-1]`` (for example inverse variances); default equal.
    overwrite : bool, default=False
        Write the fit over ``prefix`` (a writeable float64 array nobody else reads) instead of
        a new array: the fit reads every value before it writes one (:func:`isotonic_into`),
        and at 2^24 bins a second array is 128 MB more memory touched.
    """
    p = np.asarray(prefix, dtype=np.float64)
    n_hat = max(float(p[-1]), 0.0)
    out = p if overwrite else np.empty_like(p)
    out[0], out[-1] = 0.0, n_hat
    inner = p[1:-1]
    if inner.size:
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        if w is not None and (w.shape != inner.shape or not (w > 0).all()):
            raise InvalidParameterError("The weights must be positive, one per value.")
        isotonic_into(inner, w, out[1:-1])  # scipy's pool-adjacent-violators, by pieces
        np.clip(out[1:-1], 0.0, n_hat, out=out[1:-1])
    return out


def isotonic_on_grid(n: int, grid_size: int, marginal: Marginal) -> np.ndarray:
    """The grid indices ``0..grid_size-1`` (int64, non-decreasing, ``n`` of them) minimising a
    separable convex loss given by ``marginal(i, j) = f_i(g_j) - f_i(g_{j-1})`` (index
    arrays, ``j >= 1``; non-decreasing in ``j`` by convexity)."""
    result = np.zeros(n, dtype=np.int64)
    if n == 0 or grid_size <= 1:
        return result
    starts = np.array([0], dtype=np.int64)
    ends = np.array([n], dtype=np.int64)
    lo = np.array([0], dtype=np.int64)
    hi = np.array([grid_size - 1], dtype=np.int64)
    while starts.size:
        done = lo == hi
        for s, e, v in zip(starts[done], ends[done], lo[done], strict=True):
            result[s:e] = v
        keep = ~done
        starts, ends, lo, hi = starts[keep], ends[keep], lo[keep], hi[keep]
        if not starts.size:
            break
        mid = (lo + hi + 1) // 2
        lengths = ends - starts
        seg = np.repeat(np.arange(starts.size), lengths)
        offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        elem = np.arange(lengths.sum()) - np.repeat(offsets, lengths) + np.repeat(starts, lengths)
        d = marginal(elem, mid[seg])
        # Scale each segment to max |d| = 1 (the best split does not change): one cumulative
        # sum then never adds a tiny segment's values to a huge running total.
        scale = np.maximum.reduceat(np.abs(d), offsets)
        d = d / np.where(scale > 0, scale, 1.0)[seg]
        # pre[p] = Σ_{start <= q < p} d_q for p = start..end; the best suffix start maximises it
        pre = np.zeros(lengths.sum() + starts.size)
        pre[np.arange(lengths.sum()) + seg + 1] = d  # a leading 0 per segment
        seg_all = np.repeat(np.arange(starts.size), lengths + 1)
        first = offsets + np.arange(starts.size)
        csum = np.cumsum(pre)
        pre = csum - np.repeat(csum[first], lengths + 1)
        best = np.maximum.reduceat(pre, first)
        position = np.arange(pre.size)
        candidate = np.where(pre == best[seg_all], position, pre.size)
        arg = np.minimum.reduceat(candidate, first) - first  # offset of the split in the segment
        split = starts + arg
        left = split > starts
        right = ends > split
        starts = np.concatenate([starts[left], split[right]])
        ends = np.concatenate([split[left], ends[right]])
        new_lo = np.concatenate([lo[left], mid[right]])
        hi = np.concatenate([mid[left] - 1, hi[right]])
        lo = new_lo
    return result


def monotone_l1(prefix: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Least-absolute-deviations consistent CDF (real values), endpoints kept.

    An optimal L1 fit takes its values among the data (clipped to ``[0, n̂]``), so it is the
    grid solution on those values.
    """
    p = np.asarray(prefix, dtype=np.float64)
    n_hat = max(float(p[-1]), 0.0)
    out = np.empty_like(p)
    out[0], out[-1] = 0.0, n_hat
    inner = p[1:-1]
    if inner.size:
        w = np.ones(inner.size) if weights is None else np.asarray(weights, dtype=np.float64)
        grid = np.unique(np.concatenate([np.clip(inner, 0.0, n_hat), [0.0, n_hat]]))

        def marginal(i: np.ndarray, j: np.ndarray) -> np.ndarray:
            step: np.ndarray = w[i] * _l1_step(grid[j - 1], grid[j], inner[i])
            return step

        out[1:-1] = grid[isotonic_on_grid(inner.size, grid.size, marginal)]
    return out


def _l1_step(g0: np.ndarray, g1: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``|g1 - y| - |g0 - y|`` for ``g0 < g1``, without cancellation (it is ``±(g1 - g0)``
    outside ``[g0, g1]``; subtracting two large absolute values would round it to 0)."""
    gap = g1 - g0
    step: np.ndarray = np.where(y <= g0, gap, np.where(y >= g1, -gap, (g1 - y) - (y - g0)))
    return step


def integer_total(prefix: np.ndarray) -> int:
    """The integer total an integer CDF ends at: ``n̂`` rounded, at least 0."""
    return max(int(np.rint(float(prefix[-1]))), 0)


def _integer_marginal(inner: np.ndarray, loss: str) -> Marginal:
    if loss == "l2":
        return lambda i, j: 2.0 * (j - 0.5 - inner[i])  # (j - y)² - (j - 1 - y)²
    return lambda i, j: _l1_step((j - 1).astype(np.float64), j.astype(np.float64), inner[i])


def consistent_prefix(
    prefix: np.ndarray,
    *,
    loss: str = "l2",
    integer: bool = False,
    weights: np.ndarray | None = None,
    overwrite: bool = False,
) -> np.ndarray:
    """The consistent CDF for a loss (``"l2"`` or ``"l1"``), real or integer-valued;
    ``overwrite``: the L2 fits are written over ``prefix`` (:func:`monotone_l2`)."""
    if loss not in ("l1", "l2"):
        raise InvalidParameterError(f"The 'loss' must be 'l1' or 'l2'. Got {loss!r} instead.")
    if not integer:
        if loss == "l2":
            return monotone_l2(prefix, weights, overwrite=overwrite)
        return monotone_l1(prefix, weights)
    if loss == "l2":
        # Threshold decomposition: with marginals 2(t - 1/2 - y), the integer optimum is at or
        # above t exactly where the real optimum is at or above t - 1/2, so rounding the real
        # L2 fit is optimal (clipping to [0, n] commutes with it). Checked against the trellis.
        total = float(integer_total(np.asarray(prefix, dtype=np.float64)))
        fit: np.ndarray = monotone_l2(prefix, weights, overwrite=overwrite)
        np.rint(fit, out=fit)
        fit[-1] = total
        return fit
    return integer_on_grid(prefix, loss)


def integer_on_grid(prefix: np.ndarray, loss: str) -> np.ndarray:
    """The optimal integer consistent CDF by the grid solver (any of ``"l1"``, ``"l2"``)."""
    p = np.asarray(prefix, dtype=np.float64)
    total = integer_total(p)
    out = np.empty(p.size, dtype=np.float64)
    out[0], out[-1] = 0.0, float(total)
    inner = p[1:-1]
    out[1:-1] = isotonic_on_grid(inner.size, total + 1, _integer_marginal(inner, loss))
    return out


def trellis(
    prefix: np.ndarray, loss: Callable[[np.ndarray, float], np.ndarray] | str = "l2"
) -> tuple[np.ndarray, float]:
    """The paper's trellis dynamic program: the exact optimal integer consistent CDF.

    Stages ``1..B-1`` take values ``0..n`` (``n`` = the rounded total); an edge ``v -> v'``
    needs ``v <= v'``; the cost of value ``v`` at stage ``i`` is ``loss(v, P[i])``. The inner
    minimum over ``v' >= v`` is a suffix minimum, so each stage costs ``O(n)``.

    Parameters
    ----------
    prefix : ndarray
        ``P[0..B]``.
    loss : {"l2", "l1"} or callable
        ``loss(values, target)`` for an array of candidate integers and one target.

    Returns
    -------
    h : ndarray
        The optimal consistent CDF (``h[0] = 0``, ``h[B] = n``).
    cost : float
        Its total loss over stages ``1..B-1``.

    Raises
    ------
    InvalidParameterError
        If ``(B - 1)·(n + 1)`` exceeds :data:`TRELLIS_MAX_CELLS` (time and memory grow with it).
    """
    if isinstance(loss, str):
        name = loss
        loss = (lambda v, t: (v - t) ** 2) if name == "l2" else (lambda v, t: np.abs(v - t))
    p = np.asarray(prefix, dtype=np.float64)
    total = integer_total(p)
    stages = p.size - 2
    cells = max(stages, 0) * (total + 1)
    if cells > TRELLIS_MAX_CELLS:
        raise InvalidParameterError(
            f"The trellis needs (B-1)·(n+1) = {cells} cells, above its limit of "
            f"{TRELLIS_MAX_CELLS}; use the fast method (consistent_prefix) instead."
        )
    values = np.arange(total + 1, dtype=np.float64)
    h = np.zeros(p.size, dtype=np.float64)
    h[-1] = total
    if stages <= 0:
        return h, 0.0
    choice = np.empty((stages, total + 1), dtype=np.int64)
    # alpha[v]: best cost of stages i..B-1 given h_i = v; stage B is fixed at n (>= any v)
    alpha = np.zeros(total + 1)
    for i in range(stages, 0, -1):
        cost = loss(values, p[i]) + alpha
        # suffix minimum and its argmin: the best next value v' >= v
        rev = cost[::-1]
        run_min = np.minimum.accumulate(rev)
        idx = np.arange(total + 1)
        is_new = np.concatenate([[True], rev[1:] < run_min[:-1]])
        arg_rev = np.maximum.accumulate(np.where(is_new, idx, 0))
        choice[i - 1] = (total - arg_rev)[::-1]
        alpha = run_min[::-1]
    v = 0  # the root connects to every value of stage 1: best over v >= 0
    for i in range(1, stages + 1):
        v = int(choice[i - 1][v])
        h[i] = v
    return h, float(alpha[0])


def band_critical_value(errors: np.ndarray, se: np.ndarray, level: float) -> float:
    """Critical value ``c`` of a simultaneous band ``estimate ± c·se`` from simulated errors.

    ``errors`` has one simulated error vector per row. ``c`` is the :func:`critical_value` of
    the statistics ``max_m |errors[m]| / se[m]`` (over ``se > 0``).
    """
    live = live_se(se)
    if not live.any():
        return 0.0
    return critical_value((np.abs(errors[:, live]) / se[live]).max(axis=1), level)


def live_se(se: np.ndarray) -> np.ndarray:
    """The points a band is simultaneous over: standard error above rounding (``1e-12`` of
    the largest, or of 1); the others are known exactly (the empty prefix, a public ``n``)."""
    return np.asarray(se > 1e-12 * max(1.0, float(np.max(se, initial=0.0))))


def critical_value(statistics: np.ndarray, level: float) -> float:
    """The empirical ``level``-quantile of ``R`` simulated statistics, taken at rank
    ``ceil(level·(R + 1))``: the usual conservative Monte-Carlo choice (a new draw exceeds it
    with probability at most ``1 - level`` when the ``R + 1`` are exchangeable). Infinite when
    that rank exceeds ``R`` (``R < level / (1 - level)``): no finite value is certified
    (:func:`~treedp._validation.check_simulations` refuses such a pair first)."""
    sup = np.sort(statistics)
    rank = int(np.ceil(level * (sup.size + 1))) - 1
    return float(sup[rank]) if rank < sup.size else float("inf")
