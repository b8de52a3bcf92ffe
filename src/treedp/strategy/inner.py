"""Optimise the strategy inside the blocks of a blocked structure for its role.

In :class:`treedp.strategy.blocked.BlockedStrategy` a block's own release answers the
prefixes *inside* the block, knowing the block's sum from the top up to its variance: the
mean prefix variance of the whole release depends on the inner strategy only through its
within-block covariance ``C`` (``b × b``). With the top's statistics as functions of the
variance ``v = 1ᵀ C 1`` of the block's own sum (``A0``, ``A1``: the mean variance of the
block boundaries ``Ps[k]`` and ``Ps[k+1]``, ``X`` their mean covariance, ``V_K`` the last
prefix's), the exact mean over ``m = 1..B`` is

``T(C) = (K Σ_r [φ(β_r) + Var(Q̃_r) − β_r² v] + V_K) / B``,
``φ(β) = (1 − β)² A0 + 2 β (1 − β) X + β² A1``,

with ``β_r = Cov(Q̃_r, s̃)/v`` (:mod:`treedp.strategy.blocked`). Its gradient in ``C`` is
closed-form; through ``C = κ S (I + ΘᵀΘ)⁻¹ S`` (a real p-Identity strategy, columns of L1
norm 1, continuous Laplace noise of variance ``κ = 2/ε_I²``) it gives the gradient in ``Θ``
as in :mod:`treedp.strategy.optimize`. ``A0, A1, X, V_K`` are interpolated in ``log v`` by
cubic splines over exact evaluations (the optimiser's model only; the released structure's
errors are computed exactly by :class:`treedp.strategy.blocked.BlockedCovariance`).

The start is deterministic: ``Θ`` = 0.9 times the indicators of nodes of ``c`` bins, i.e.
the tree levels ``(1, c)``, so the result depends only on public parameters. At 2^20 bins
(the shipped 4096-bin top, blocks of 256, nodes of 16) the optimum is a row of overlapping
bumps, one per node: mean prefix MSE 612.5 at ε = 1 against 653.9 for the levels (1, 16)
(continuous Laplace, real weights; 614.2 exactly on the lattice 255; ``docs/strategies.md``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from treedp.strategy.model import Strategy
from treedp.strategy.optimize import one_blas_thread

__all__ = ["TopModel", "TopStatistics", "optimise_inner", "role_error", "top_statistics"]

_Stats = tuple[np.ndarray, np.ndarray]


class TopStatistics(Protocol):
    """The top's statistics ``(A0, A1, X, V_K)`` at ``v`` and their derivatives in ``v``."""

    n_blocks: int

    def __call__(self, v: float) -> _Stats: ...  # pragma: no cover - a protocol


def top_statistics(top: Strategy, top_variance: float, v: float) -> np.ndarray:
    """``(A0, A1, X, V_K)`` of the top's BLUE given block sums of variance ``v`` each."""
    d = top.identity.astype(np.float64)
    a = top.aggregates.astype(np.float64) / np.sqrt(top_variance)
    e = 1.0 / (d**2 / top_variance + 1.0 / v)
    g = e[:, None] * a.T
    with one_blas_thread():
        chol = np.linalg.cholesky(np.eye(a.shape[0]) + a @ g)
        gc = np.vstack([np.zeros((1, a.shape[0])), np.cumsum(g, axis=0)])
        h = np.linalg.solve(chol, gc.T).T
    u = np.concatenate([[0.0], np.cumsum(e)])
    vp = u - np.einsum("ij,ij->i", h, h)
    cross = u[:-1] - np.einsum("ij,ij->i", h[:-1], h[1:])
    return np.array([vp[:-1].mean(), vp[1:].mean(), cross.mean(), vp[-1]])


class TopModel:
    """Cubic splines in ``log v`` of :func:`top_statistics` on ``[v_min, v_max]``.

    Parameters
    ----------
    top : Strategy
        The top strategy.
    top_variance : float
        The noise variance of one of its entries.
    v_min, v_max : float
        The range of ``v`` the optimiser may visit.
    points : int
        Exact evaluations (log-spaced).
    """

    def __init__(
        self, top: Strategy, top_variance: float, v_min: float, v_max: float, points: int = 60
    ) -> None:
        from scipy.interpolate import CubicSpline  # slow to import: on first use

        self.n_blocks = top.n_bins
        grid = np.linspace(np.log(v_min), np.log(v_max), points)
        values = np.array([top_statistics(top, top_variance, float(np.exp(x))) for x in grid])
        self._splines = [CubicSpline(grid, values[:, i]) for i in range(4)]

    def __call__(self, v: float) -> _Stats:
        """The statistics at ``v`` and their derivatives in ``v``."""
        x = np.log(v)
        values = np.array([float(s(x)) for s in self._splines])
        slopes = np.array([float(s(x, 1)) for s in self._splines]) / v
        return values, slopes


def role_error(cov: np.ndarray, model: TopStatistics) -> tuple[float, np.ndarray]:
    """``T(C)`` (the module docstring) and its gradient in ``C`` (symmetric).

    Parameters
    ----------
    cov : numpy.ndarray
        ``C``, the within-block covariance of the block's own estimate (``b × b``).
    model : TopStatistics
        The top's statistics as functions of ``v`` (e.g. :class:`TopModel`).
    """
    b = cov.shape[0]
    k = float(model.n_blocks)
    c = cov.sum(axis=1)
    v = float(c.sum())
    g = np.concatenate([[0.0], np.cumsum(c)[:-1]])  # Cov(Q̃_r, s̃), r = 0..b-1
    beta = g / v
    (a0, a1, x, vk), (da0, da1, dx, dvk) = model(v)
    cc = np.cumsum(np.cumsum(cov, axis=0), axis=1)
    qdiag = np.concatenate([[0.0], np.diag(cc)[:-1]])
    phi = (1 - beta) ** 2 * a0 + 2 * beta * (1 - beta) * x + beta**2 * a1
    n_bins = k * b
    value = (k * float(np.sum(phi + qdiag - g**2 / v)) + float(vk)) / n_bins
    dphi = -2 * (1 - beta) * a0 + 2 * (1 - 2 * beta) * x + 2 * beta * a1
    idx = np.arange(b)
    grad = (b - 1 - np.maximum(idx[:, None], idx[None, :])).astype(np.float64)  # LᵀL
    w = dphi / v - 2 * g / v
    lt_w = np.concatenate([np.cumsum(w[::-1])[::-1][1:], [0.0]])  # Lᵀ w
    grad += lt_w[:, None]
    grad += float(np.sum(g**2) / v**2 - np.sum(dphi * g) / v**2)
    grad += float(np.sum((1 - beta) ** 2 * da0 + 2 * beta * (1 - beta) * dx + beta**2 * da1))
    grad = k * (grad + grad.T) / (2 * n_bins) + float(dvk) / n_bins
    return value, grad


def _theta_error(theta: np.ndarray, kappa: float, model: TopStatistics) -> tuple[float, np.ndarray]:
    b = theta.shape[1]
    s = 1.0 + theta.sum(axis=0)
    y = np.linalg.inv(np.eye(b) + theta.T @ theta)
    value, grad_c = role_error(kappa * (s[:, None] * y * s[None, :]), model)
    ysg = y @ (s[:, None] * grad_c)
    grad_s = 2 * kappa * np.diag(ysg)
    z = ysg @ (s[:, None] * y)  # Y S G S Y
    return value, -2 * kappa * theta @ z + grad_s[None, :]


def optimise_inner(
    top: Strategy,
    top_variance: float,
    inner_epsilon: float,
    block: int,
    node: int,
    max_iter: int = 1000,
) -> tuple[np.ndarray, float]:
    """The inner ``Θ`` (``block/node × block``) minimising :func:`role_error`, and its value.

    Parameters
    ----------
    top : Strategy
        The top strategy over the block sums.
    top_variance : float
        The noise variance of one top entry (e.g. ``2 Δ_T² / ε_T²``).
    inner_epsilon : float
        The inner strategy's budget (continuous Laplace, ``κ = 2/ε_I²``).
    block, node : int
        ``b``, and the node size of the start (dividing ``b``).
    max_iter : int
        L-BFGS-B iterations at most.

    Returns
    -------
    tuple
        ``Θ`` (non-negative; deterministic for given parameters) and the model's ``T``.
    """
    from scipy.optimize import minimize  # slow to import: on first use

    kappa = 2.0 / inner_epsilon**2
    model = TopModel(top, top_variance, 1e-2 * kappa, 1e2 * kappa * block, 80)
    idx = np.arange(block)
    start = 0.9 * (idx[None, :] // node == np.arange(block // node)[:, None])
    shape = start.shape

    def fun(flat: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _theta_error(flat.reshape(shape), kappa, model)
        return value, grad.ravel()

    with one_blas_thread():
        res = minimize(
            fun,
            start.ravel(),
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None)] * start.size,
            options={"maxiter": max_iter},
        )
    theta: np.ndarray = np.maximum(res.x, 0.0).reshape(shape)
    return theta, float(res.fun)
