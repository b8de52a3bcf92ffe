"""The direct estimator: every prefix is the sum of the noisy nodes (or counts) that cover it.

For the tree this is the seeds' covering sum (Lemma IV.1 of [RTS24], the "binary
representation" reconstruction of the lecture notes): the prefix ``[0, m)`` adds, at each level
``l``, the ``d_l(m)`` nodes given by the ``l``-th mixed-radix digit of ``m``; the whole domain
``[0, B)`` is the root. It is unbiased, and as noise is independent across nodes its variance
is ``Σ_l d_l(m) σ_l²``. Noisy counts are integers, so these estimates are exact integers.
"""

from __future__ import annotations

import numpy as np

from treedp.tree import TreeShape

__all__ = [
    "PrefixEstimate",
    "cumulative_prefix",
    "independent_prefix",
    "interval_index",
    "tree_prefix",
]

PrefixEstimate = tuple[np.ndarray, np.ndarray]


def tree_prefix(
    shape: TreeShape, levels: list[np.ndarray], variances: tuple[float, ...]
) -> PrefixEstimate:
    """Direct prefix estimates ``P[m]``, ``m = 0..B`` (the number of values in bins ``[0,
    m)``), and their variances, from the noisy node counts per level (root first) and the
    noise variance of each level (0 where exact)."""
    n_bins = shape.n_bins
    batch = np.asarray(levels[0]).shape[:-1]
    prefix = np.zeros((*batch, n_bins + 1), dtype=np.int64)
    variance = np.zeros(n_bins + 1, dtype=np.float64)
    m = np.arange(n_bins, dtype=np.int64)
    for level in range(1, shape.height + 1):
        node = np.asarray(levels[level], dtype=np.int64)
        cum = np.zeros((*batch, node.shape[-1] + 1), dtype=np.int64)
        np.cumsum(node, axis=-1, out=cum[..., 1:])
        quotient = m // shape.span(level)
        digit = quotient % shape.branching[level - 1]
        prefix[..., :n_bins] += cum[..., quotient] - cum[..., quotient - digit]
        variance[:n_bins] += digit * variances[level]
    prefix[..., n_bins] = np.asarray(levels[0])[..., 0]
    variance[n_bins] = variances[0]
    return prefix.astype(np.float64), variance


def independent_prefix(
    blocks: list[np.ndarray], variances: tuple[float, ...], n_bins: int, n: int | None
) -> PrefixEstimate:
    """Prefix estimates read straight off the first block, which holds one independent noisy
    value per prefix ``[0, t)``, ``t = 1, 2, ...`` in its first entries (the threshold
    baseline; row ``s = 0`` of the all-intervals table). The last prefix is the public ``n``
    when it is given."""
    block = np.asarray(blocks[0], dtype=np.int64)
    prefix = np.zeros((*block.shape[:-1], n_bins + 1), dtype=np.float64)
    k = min(block.shape[-1], n_bins)
    prefix[..., 1 : 1 + k] = block[..., :k]
    variance = np.full(n_bins + 1, variances[0])
    variance[0] = 0.0
    return _public_total(prefix, variance, n_bins, n)


def cumulative_prefix(
    blocks: list[np.ndarray], variances: tuple[float, ...], n_bins: int, n: int | None
) -> PrefixEstimate:
    """Prefix sums of a noisy histogram (the first block); the last is the public ``n``
    when it is given."""
    block = np.asarray(blocks[0], dtype=np.int64)
    prefix = np.zeros((*block.shape[:-1], n_bins + 1), dtype=np.float64)
    np.cumsum(block, axis=-1, out=prefix[..., 1:])
    variance = np.arange(n_bins + 1, dtype=np.float64) * variances[0]
    return _public_total(prefix, variance, n_bins, n)


def _public_total(
    prefix: np.ndarray, variance: np.ndarray, n_bins: int, n: int | None
) -> PrefixEstimate:
    if n is not None:
        prefix[..., n_bins] = float(n)
        variance[n_bins] = 0.0
    return prefix, variance


def interval_index(s: np.ndarray, t: np.ndarray, n_bins: int) -> np.ndarray:
    """Position of the interval ``[s, t)`` in the all-intervals block (row-major upper triangle)."""
    s = np.asarray(s, dtype=np.int64)
    t = np.asarray(t, dtype=np.int64)
    index: np.ndarray = s * n_bins - s * (s - 1) // 2 + (t - s - 1)
    return index
