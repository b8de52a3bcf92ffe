"""Weighted least-squares isotonic regression, piece by piece, in bounded extra memory.

scipy's public ``isotonic_regression`` (pool-adjacent-violators) copies its input, allocates
unit weights and ``B + 1`` block bounds: three arrays of the input's length next to the
release's own. At 2^24 bins that is 384 MB of memory touched for the first time, which on a
machine whose memory is not yet mapped costs more than the fit itself (docs/benchmarks.md,
"Session 15"). :func:`isotonic_into` fits pieces of :data:`PIECE` values with scipy, keeps the
fit as blocks (mean, weight, length) and pools the blocks at each junction, then writes the
values into the caller's array: the same fit, with pieces of memory.

Why pooling at the junctions is the whole fit
---------------------------------------------
The fit of a sequence is its unique partition into blocks whose means are non-decreasing,
each block's own fit being one value (every prefix of a block has a mean at least the block's,
every suffix at most). These are conditions on each block alone, so any run of whole blocks of
a fit is the fit of its own values, and pre-pooled blocks (weighted means) fit as their values
would. Let the blocks so far be ``E`` then ``T`` (the blocks whose mean exceeds ``m``, the first
block mean of the next piece's fit) and the next piece's blocks ``N``. The fit of ``T + N``
takes values at least the smallest prefix mean of ``T + N``, at least ``m`` (every block of
``T`` and ``N`` has mean at least ``m``), and every block of ``E`` has mean at most ``m``; so
``E`` followed by the fit of ``T + N`` has non-decreasing means, and its blocks satisfy the
conditions: it is the fit of everything so far. The values equal a single call's up to the
rounding of the pooled means (a sequence of at most :data:`PIECE` values is one call of
scipy, bit for bit); a running maximum over the block means keeps the result non-decreasing
where that rounding put a pooled mean an ulp below its neighbour.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PIECE", "isotonic_into"]

#: Values fitted by one call of scipy (8 MiB of float64 for each of its arrays).
PIECE = 1 << 20

_Blocks = tuple[np.ndarray, np.ndarray, np.ndarray]


def isotonic_into(y: np.ndarray, weights: np.ndarray | None, out: np.ndarray) -> None:
    """Write the weighted least-squares non-decreasing fit of ``y`` into ``out``.

    Parameters
    ----------
    y : ndarray of float64
        One-dimensional values.
    weights : ndarray of float64, optional
        Positive weights, one per value (checked by the caller); default equal.
    out : ndarray of float64
        Same length as ``y``: ``y`` itself (every value is read before any is written), or
        an array not overlapping it.
    """
    from scipy.optimize import isotonic_regression  # scipy >= 1.12, the project's floor

    if y.size <= PIECE:
        out[:] = isotonic_regression(y, weights=weights).x
        return
    stack: list[_Blocks] = []  # (means, total weights, lengths), means sorted across the stack
    for start in range(0, y.size, PIECE):
        part = slice(start, start + PIECE)
        w_part = None if weights is None else weights[part]
        blocks = _blocks(isotonic_regression(y[part], weights=w_part))
        first = blocks[0][0]
        tail: list[_Blocks] = []
        while stack and stack[-1][0][-1] > first:
            m, w, n = stack.pop()
            k = int(np.searchsorted(m, first, side="right"))
            tail.append((m[k:], w[k:], n[k:]))
            if k:
                stack.append((m[:k], w[:k], n[:k]))
                break
        if tail:
            pooled = [np.concatenate(parts) for parts in zip(*reversed(tail), blocks, strict=True)]
            fit = isotonic_regression(pooled[0], weights=pooled[1])
            bounds = fit.blocks[:-1]
            blocks = fit.x[bounds], fit.weights, np.add.reduceat(pooled[2], bounds)
        stack.append(blocks)
    # A pooled mean of blocks whose means are at least m can round an ulp below m: the
    # running maximum keeps the fit non-decreasing (it moves only such ulps).
    means = np.maximum.accumulate(np.concatenate([b[0] for b in stack]))
    _expand(means, np.concatenate([b[2] for b in stack]), out)


def _blocks(fit: object) -> _Blocks:
    """A scipy fit as its blocks: means, total weights and lengths."""
    bounds = fit.blocks  # type: ignore[attr-defined]
    return fit.x[bounds[:-1]], fit.weights, np.diff(bounds)  # type: ignore[attr-defined]


def _expand(means: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:
    """``out = repeat(means, lengths)`` through pieces of about :data:`PIECE` values (a block
    longer than that is filled, not repeated)."""
    ends = np.cumsum(lengths)
    first = 0
    while first < means.size:
        start = int(ends[first - 1]) if first else 0
        last = int(np.searchsorted(ends, start + PIECE, side="right"))
        if last == first:  # one block longer than a piece
            out[start : int(ends[first])] = means[first]
            first += 1
            continue
        out[start : int(ends[last - 1])] = np.repeat(means[first:last], lengths[first:last])
        first = last
