"""Exact covariances of prefix estimates, without simulation: the basis of every error bar.

Every answer of a release is a linear combination of at most four prefix estimates ``P[m]``
(interpolation inside a bin, differences for ranges), so its variance follows from
``Cov(P[m1], P[m2])``. Each class here computes that covariance for a vector of pairs in
``O(h)`` numpy operations (``h`` levels), from public parameters only.

Efficient estimator. The BLUE's covariance is the posterior covariance of the linear model with
a flat prior, which factorises along the tree: given a node's count ``T_p``, its children have
mean ``est_b + (v / V)(T_p - Σ est_b)`` and covariance ``Ψ = diag(v) - v vᵀ / V`` (``v`` the
children's from-below variances, ``V = Σ v``), independently of everything outside ``p``. The
part of a prefix inside ``p`` is ``aᵀ T_children + R`` with ``a = (1, ..., 1, β_child, 0, ...)``,
so bottom-up along the path of ``m``: ``β_p = aᵀv / V`` and
``Var(R_p) = aᵀ diag(v) a - (aᵀv)² / V + Var(R_child)``; at the root
``Var(P[m]) = β² Var(T_root) + Var(R_root)``. Two prefixes are tracked jointly for covariances.
Tested against the dense GLS covariance.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from treedp.estimation.efficient import LevelValues, VariancePlan
from treedp.tree import TreeShape

__all__ = [
    "DirectTreeCovariance",
    "EfficientTreeCovariance",
    "HistogramCovariance",
    "IndependentPrefixCovariance",
    "PrefixCovariance",
]


class PrefixCovariance(Protocol):
    """``Cov(P[m1], P[m2])`` for integer arrays ``m1``, ``m2`` in ``[0, B]`` (broadcast)."""

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        ...


def _pairs(
    m1: np.ndarray, m2: np.ndarray, n_bins: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pairs, flat, with ``m = B`` (the root alone) moved to 0, and where it was."""
    a, b = np.broadcast_arrays(np.asarray(m1, dtype=np.int64), np.asarray(m2, dtype=np.int64))
    full_a, full_b = a.ravel() == n_bins, b.ravel() == n_bins
    return np.where(full_a, 0, a.ravel()), np.where(full_b, 0, b.ravel()), full_a, full_b


class DirectTreeCovariance:
    """Covariances of the direct (covering-sum) estimator of a tree.

    ``P[m]`` sums the level-``l`` nodes ``[q - d, q)`` with ``q = m // span_l`` and
    ``d = q mod k_l`` (the root alone for ``m = B``); noise is independent across nodes, so the
    covariance is ``Σ_l σ_l² |overlap of the two node ranges|``.
    """

    def __init__(self, shape: TreeShape, level_variance: tuple[float, ...]) -> None:
        self.shape = shape
        self.level_variance = level_variance

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        out_shape = np.broadcast(np.asarray(m1), np.asarray(m2)).shape
        a, b, full_a, full_b = _pairs(m1, m2, self.shape.n_bins)
        total = np.where(full_a & full_b, self.level_variance[0], 0.0)
        for level in range(1, self.shape.height + 1):
            span = self.shape.span(level)
            k = self.shape.branching[level - 1]
            qa, qb = a // span, b // span
            lo = np.maximum(qa - qa % k, qb - qb % k)
            hi = np.minimum(qa, qb)
            total = total + self.level_variance[level] * np.clip(hi - lo, 0, None)
        return total.reshape(out_shape)


def _group_terms(
    vb: LevelValues, q: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For nodes ``q`` and their sibling groups of ``k``: whether the group's variance sum
    ``V`` is positive, ``V`` (1 where not), the sum before each node, and its own."""
    base = vb.cumulative(q // k * k)
    total = vb.cumulative(q // k * k + k) - base
    positive = total > 0
    return positive, np.where(positive, total, 1.0), vb.cumulative(q) - base, vb.gather(q)


class EfficientTreeCovariance:
    """Covariances of the efficient (BLUE) estimator of a tree (see the module docstring)."""

    def __init__(self, plan: VariancePlan) -> None:
        self.plan = plan
        self.shape = plan.shape

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        out_shape = np.broadcast(np.asarray(m1), np.asarray(m2)).shape
        shape = self.shape
        a, b, full_a, full_b = _pairs(m1, m2, shape.n_bins)
        zeros = np.zeros(a.shape)
        beta_a, beta_b = zeros.copy(), zeros.copy()
        r_ab = zeros.copy()
        for level in range(shape.height, 0, -1):
            k = shape.branching[level - 1]
            span = shape.span(level)
            vb = self.plan.var_below[level]
            qa, qb = a // span, b // span
            da, db = qa % k, qb % k
            pos_a, safe_a, cum_a, v_a = _group_terms(vb, qa, k)
            pos_b, safe_b, cum_b, v_b = _group_terms(vb, qb, k)
            atv_a = cum_a + beta_a * v_a
            atv_b = cum_b + beta_b * v_b
            # cross term aᵀ diag(v) b, meaningful when both prefixes share the parent
            d_min = np.minimum(da, db)
            cum_min = np.where(da <= db, cum_a, cum_b)
            coef_a = np.where(da == d_min, beta_a, 1.0)
            coef_b = np.where(db == d_min, beta_b, 1.0)
            adb = cum_min + coef_a * coef_b * vb.gather(qa // k * k + d_min)
            same = qa // k == qb // k
            r_ab = np.where(same, r_ab + np.where(pos_a, adb - atv_a * atv_b / safe_a, 0.0), 0.0)
            beta_a = np.where(pos_a, atv_a / safe_a, 0.0)
            beta_b = np.where(pos_b, atv_b / safe_b, 0.0)
        beta_a = np.where(full_a, 1.0, beta_a)
        beta_b = np.where(full_b, 1.0, beta_b)
        r_ab = np.where(full_a | full_b, 0.0, r_ab)
        return (beta_a * beta_b * self.plan.root_variance + r_ab).reshape(out_shape)

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P[m])``: the diagonal of :meth:`cov`, with half the work."""
        m = np.asarray(m, dtype=np.int64)
        shape = self.shape
        full = m == shape.n_bins
        a = np.where(full, 0, m)
        beta = np.zeros(a.shape)
        resid = np.zeros(a.shape)
        for level in range(shape.height, 0, -1):
            k = shape.branching[level - 1]
            vb = self.plan.var_below[level]
            q = a // shape.span(level)
            if vb.starts.size == 1:  # no padding at this level: every node alike
                v = float(vb.values[0])
                atv = (q % k + beta) * v
                ada = (q % k + beta**2) * v
                total = k * v
                if total > 0:
                    resid += ada - atv**2 / total
                    beta = atv / total
                else:
                    beta = np.zeros(a.shape)
                continue
            pos, safe, cum, v_here = _group_terms(vb, q, k)
            atv = cum + beta * v_here
            ada = cum + beta**2 * v_here
            resid += np.where(pos, ada - atv**2 / safe, 0.0)
            beta = np.where(pos, atv / safe, 0.0)
        beta = np.where(full, 1.0, beta)
        resid = np.where(full, 0.0, resid)
        return beta**2 * self.plan.root_variance + resid


class HistogramCovariance:
    """Direct prefix sums of a noisy histogram: ``Cov = min(m1, m2) σ²`` (``P[B] = n`` exact
    under ``replace``)."""

    def __init__(self, n_bins: int, variance: float, n_public: bool) -> None:
        self.n_bins, self.variance, self.n_public = n_bins, variance, n_public

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        out = np.minimum(a, b) * self.variance
        if self.n_public:
            out = np.where((a == self.n_bins) | (b == self.n_bins), 0.0, out)
        return np.asarray(out, dtype=np.float64)


class IndependentPrefixCovariance:
    """Independently noised prefixes (threshold baseline, first row of all-intervals):
    ``Cov = σ²`` for equal ``m`` in ``(0, B)`` (and ``m = B`` unless ``n`` is public)."""

    def __init__(self, n_bins: int, variance: float, n_public: bool) -> None:
        self.n_bins, self.variance, self.n_public = n_bins, variance, n_public

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        live = (a == b) & (a > 0)
        if self.n_public:
            live &= a < self.n_bins
        return np.where(live, self.variance, 0.0)
