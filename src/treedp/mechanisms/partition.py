"""Stage 1 of DAWA: a private partition of the bins into buckets of near-uniform counts.

The candidate buckets are the *dyadic blocks* over the bins: at level ``l = 1..L``
(``2**(L-1) < B <= 2**L``) the blocks ``[k·2**l, min((k+1)·2**l, B))``; level 0 is the single
bins. A partition is a cut of this binary tree: every bin lies in exactly one bucket, and a
bucket is a dyadic block. The cost of a bucket ``I`` is its L1 deviation from uniform,

    dev(I) = Σ_{j∈I} |x_j − mean_I(x)|,

the error that spreading the bucket's count evenly over its bins would make. The mechanism
releases one noisy integer cost per block of levels ``1..L`` (the Laplace mechanism) and
chooses, by post-processing alone, the cut that minimises ``Σ_buckets (noisy cost + penalty)``
(one pass up the tree). The penalty is a public constant per bucket that stands for the
noise stage 2 adds per bucket, so that fewer buckets are preferred when the data are flat.

This follows the partition stage of DAWA (Li, Hay, Miklau, Wang, VLDB 2014), restricted to
dyadic candidate intervals so that every bin lies in one candidate per level and the cost
vector has a small, exact L1 sensitivity (derived in :func:`cost_sensitivity`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource, noise_scale, sample_discrete_laplace

__all__ = [
    "Partition",
    "block_costs",
    "choose_partition",
    "cost_sensitivity",
    "dyadic_levels",
    "noisy_block_costs",
    "partition_scale",
]


def dyadic_levels(n_bins: int) -> int:
    """``L``, the number of dyadic levels above the single bins (``2**(L-1) < B <= 2**L``)."""
    return max(0, (int(n_bins) - 1).bit_length())


def _n_blocks(n_bins: int, level: int) -> int:
    return -(-n_bins // (1 << level))


def cost_sensitivity(n_bins: int) -> tuple[int, ...]:
    """The L1 sensitivity of the integer cost vector of each level ``1..L`` (add/remove).

    Derivation. Adding or removing one record changes one bin count ``x_i`` by 1 and leaves
    every other bin unchanged; ``i`` lies in exactly one block per level. For that block ``I``
    of size ``s``, the mean moves by ``1/s``, so each of the ``s − 1`` other terms
    ``|x_j − mean|`` moves by at most ``1/s`` and the term of ``i`` by at most
    ``1 − 1/s``: ``|dev(I) − dev'(I)| <= 2(1 − 1/s)``. The released cost is the integer
    ``⌈dev(I)⌉``; as ``⌈u⌉ <= ⌈u − v⌉ + ⌈v⌉``, the rounded costs differ by at most
    ``⌈2(1 − 1/s)⌉``: 1 for ``s = 2`` and 2 for ``s >= 3``. Blocks of other sizes at the
    end of a level are smaller, with a smaller bound. A level's cost vector therefore has L1
    sensitivity ``⌈2(1 − 2**-l)⌉`` (one block changes), and the whole vector the sum over
    levels. Level 0 (single bins) has ``dev = 0`` always: it is exact and not released.
    ``tests/mechanisms/test_dawa.py`` enumerates neighbours on small domains and checks the
    bound is attained and never exceeded.
    """
    return tuple(
        -(-2 * ((1 << lvl) - 1) // (1 << lvl)) for lvl in range(1, dyadic_levels(n_bins) + 1)
    )


def partition_scale(n_bins: int, epsilon: float) -> tuple[int, Fraction]:
    """``(Δ, t)``: the cost vector's L1 sensitivity and the exact discrete Laplace scale
    ``t >= Δ/epsilon`` of its noise, so stage 1 is ``Δ/t <= epsilon``-DP."""
    delta = sum(cost_sensitivity(n_bins))
    if delta == 0:  # one bin: there is one partition, nothing to choose or to noise
        return 0, Fraction(0)
    return delta, noise_scale(delta, epsilon)


def block_costs(counts: np.ndarray) -> list[np.ndarray]:
    """``⌈dev(I)⌉`` for every dyadic block, one int64 array per level ``1..L`` (exact).

    ``s · dev(I) = Σ_j |s·x_j − S_I|`` is an integer (``S_I`` the block's total), so the
    ceiling is computed with integer arithmetic only (Python integers past int64).
    """
    x = np.asarray(counts, dtype=np.int64)
    b = x.size
    levels = dyadic_levels(b)
    wide = int(x.sum()) * (1 << levels) >= 2**62  # products could overflow int64
    dtype = object if wide else np.int64
    out = []
    for lvl in range(1, levels + 1):
        s = 1 << lvl
        k = _n_blocks(b, lvl)
        padded = np.zeros(k * s, dtype=dtype)
        padded[:b] = x
        blocks = padded.reshape(k, s)
        sizes = np.minimum(b - np.arange(k) * s, s).astype(dtype)
        totals = blocks.sum(axis=1)
        inside = np.arange(s)[None, :] < sizes[:, None]
        dev_s = np.where(inside, np.abs(blocks * sizes[:, None] - totals[:, None]), 0).sum(axis=1)
        out.append((-(-dev_s // sizes)).astype(np.int64))
    return out


def noisy_block_costs(
    counts: np.ndarray, scale: Fraction, source: RandomSource, repeats: int = 1
) -> list[np.ndarray]:
    """The costs of :func:`block_costs` plus exact discrete Laplace noise of ``scale``:
    ``repeats`` independent draws, shape ``(repeats, blocks)`` per level (the path releases
    and the privacy auditor share)."""
    costs = block_costs(counts)
    sizes = [c.size for c in costs]
    if not sizes:
        return []
    noise = sample_discrete_laplace(scale, repeats * sum(sizes), source).reshape(repeats, -1)
    parts = np.split(noise, np.cumsum(sizes)[:-1], axis=1)
    return [c[None, :] + z for c, z in zip(costs, parts, strict=True)]


@dataclass(frozen=True)
class Partition:
    """Buckets over ``n_bins`` bins, given by their starts (public once chosen privately).

    Attributes
    ----------
    n_bins : int
        The number of bins ``B``.
    starts : tuple of int
        The first bin of every bucket: ``0 = starts[0] < starts[1] < ... < B``; bucket ``j``
        is ``[starts[j], starts[j+1])`` with ``starts[K] = B``.
    """

    n_bins: int
    starts: tuple[int, ...]

    def __post_init__(self) -> None:
        s = self.starts
        if (
            not s
            or s[0] != 0
            or any(b <= a for a, b in itertools.pairwise(s))
            or s[-1] >= self.n_bins
        ):
            raise InvalidParameterError(
                "A partition's 'starts' must begin at 0, increase strictly and stay below the "
                "number of bins."
            )

    @property
    def n_buckets(self) -> int:
        """The number of buckets ``K``."""
        return len(self.starts)

    @property
    def edges(self) -> np.ndarray:
        """Bucket boundaries in bin indices, ``K + 1`` values from 0 to ``B``."""
        return np.array([*self.starts, self.n_bins], dtype=np.int64)

    def bucket_counts(self, counts: np.ndarray) -> np.ndarray:
        """The count of every bucket (int64)."""
        return np.add.reduceat(np.asarray(counts, dtype=np.int64), np.asarray(self.starts))

    def weights(self, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For bin prefix ``m``: its bucket ``j`` and the fraction of the bucket below ``m``
        (``P[m] = (1 − f)·Q[j] + f·Q[j + 1]``)."""
        edges = self.edges
        j = np.clip(np.searchsorted(edges, m, side="right") - 1, 0, self.n_buckets - 1)
        return j, (m - edges[j]) / (edges[j + 1] - edges[j])

    def spread(self, bucket_prefix: np.ndarray) -> np.ndarray:
        """Bin prefixes ``P[m], m = 0..B`` from bucket prefixes ``Q[j], j = 0..K`` (last axis):
        each bucket's count spread uniformly over its bins (linear inside a bucket)."""
        j, frac = self.weights(np.arange(self.n_bins + 1))
        q = np.asarray(bucket_prefix, dtype=np.float64)
        out: np.ndarray = q[..., j] * (1.0 - frac) + q[..., j + 1] * frac
        return out


def choose_partition(noisy: list[np.ndarray], n_bins: int, penalty: float) -> Partition:
    """The cut of the dyadic tree minimising ``Σ_buckets (noisy cost + penalty)``.

    Post-processing of the noisy costs only (single bins cost 0 exactly). A noisy cost below
    0 is raised to 0 (every deviation is ``>= 0``): without that the minimum over many noisy
    costs is biased low and favours deep splits. Ties keep the larger bucket.
    """
    levels = dyadic_levels(n_bins)
    best = np.full(n_bins, float(penalty))  # level 0: single bins, cost 0
    merge: list[np.ndarray] = []
    for lvl in range(1, levels + 1):
        k = _n_blocks(n_bins, lvl)
        children = np.zeros(2 * k)
        children[: best.size] = best
        split = children[0::2] + children[1::2]
        whole = np.maximum(noisy[lvl - 1].astype(np.float64), 0.0) + penalty  # dev >= 0
        take = whole <= split
        merge.append(take)
        best = np.where(take, whole, split)
    starts: list[np.ndarray] = []
    active = np.ones(1, dtype=bool)
    for lvl in range(levels, 0, -1):
        take = merge[lvl - 1]
        starts.append(np.flatnonzero(active & take) << lvl)
        active = np.repeat(active & ~take, 2)[: _n_blocks(n_bins, lvl - 1)]
    starts.append(np.flatnonzero(active))
    return Partition(n_bins, tuple(int(v) for v in np.sort(np.concatenate(starts))))
