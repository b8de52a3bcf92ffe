"""Optimise a p-Identity strategy on the exact expected error of a workload.

A p-Identity strategy (McKenna et al., "Optimizing error of high-dimensional statistical
queries under differential privacy", VLDB 2018) is the matrix ``A = [I; Θ] S⁻¹`` with ``Θ`` a
non-negative ``p × B`` matrix and ``S = diag(s)``, ``s_j = 1 + Σ_i Θ_ij``: every column of
``A`` has L1 norm 1. With unit-scale Laplace noise on every row of ``A x`` and least squares,
the expected total squared error of a workload ``W`` (``V = WᵀW``) is ``2 tr(V (AᵀA)⁻¹)``, and

``(AᵀA)⁻¹ = S (I + ΘᵀΘ)⁻¹ S = S (I - Θᵀ K⁻¹ Θ) S``, ``K = I_p + ΘΘᵀ`` (Woodbury).

So ``f(Θ) = tr(V (AᵀA)⁻¹) = Σ_j V_jj s_j² - ⟨Θ S V S Θᵀ, K⁻¹⟩``, in ``O(p² B + p³)`` given
``V`` applied to ``p`` vectors (``O(p B)`` for prefixes and ranges: cumulative sums). Its
gradient, with ``Y = (I + ΘᵀΘ)⁻¹`` and ``Z = Y S V S Y``:

``∂f/∂s_j = 2 (V S Y)_jj`` and ``∂f/∂Θ = -2 Θ Z + 1 (∂f/∂s)ᵀ``, using ``Θ Y = K⁻¹ Θ``.

It is minimised by L-BFGS-B over ``Θ >= 0`` from a fixed pseudo-random start (``PCG64`` seed
0), so the result depends only on the public parameters (``B``, ``p``, the workload). This is
written from the paper's description; no code of theirs is used.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import numpy as np

from treedp._validation import check_int, check_option

__all__ = [
    "WORKLOADS",
    "Workload",
    "default_aggregates",
    "one_blas_thread",
    "optimise_pidentity",
    "pidentity_error",
]

#: Workloads a strategy can be optimised for: every prefix ``[0, m)``, ``m = 1..B`` (the
#: CDF), or every range ``[s, t)``, ``0 <= s < t <= B``.
WORKLOADS = ("prefix", "range")


@dataclass(frozen=True)
class Workload:
    """The Gram matrix ``V = WᵀW`` of a workload on ``B`` bins, applied implicitly.

    Attributes
    ----------
    kind : {"prefix", "range"}
        Every prefix ``[0, m)``, ``m = 1..B``, or every range ``[s, t)``, ``0 <= s < t <= B``.
    n_bins : int
        ``B``.
    """

    kind: str
    n_bins: int

    @property
    def n_queries(self) -> int:
        """How many queries the workload has (the mean error divides by it)."""
        b = self.n_bins
        return b if self.kind == "prefix" else b * (b + 1) // 2

    def diag(self) -> np.ndarray:
        """``V_jj``: how many queries contain bin ``j``."""
        j = np.arange(self.n_bins, dtype=np.float64)
        if self.kind == "prefix":
            return self.n_bins - j
        return (j + 1) * (self.n_bins - j)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``V x`` for a ``B × k`` array, by cumulative sums."""
        b = self.n_bins
        if self.kind == "prefix":  # V = CᵀC, (Cx)_m = Σ_{j<m} x_j, m = 1..B
            cx = np.cumsum(x, axis=0)
            out: np.ndarray = np.cumsum(cx[::-1], axis=0)[::-1]
            return out
        # ranges: V = Qᵀ ((B+1) I - 11ᵀ) Q with Q the (B+1) × B prefix matrix (row 0 zero)
        qx = np.concatenate([np.zeros((1, *x.shape[1:])), np.cumsum(x, axis=0)])
        lap = (b + 1) * qx - qx.sum(axis=0, keepdims=True)
        out = np.cumsum(lap[:0:-1], axis=0)[::-1]
        return out


def one_blas_thread() -> AbstractContextManager[object]:
    """Limit BLAS to one thread with threadpoolctl (a core dependency; else do nothing)."""
    try:
        from threadpoolctl import (  # type: ignore[import-untyped, import-not-found, unused-ignore]
            threadpool_limits,
        )
    except ImportError:  # pragma: no cover - an install without its dependencies
        return nullcontext()
    limits: AbstractContextManager[object] = threadpool_limits(1)
    return limits


def default_aggregates(n_bins: int) -> int:
    """The number ``p`` of aggregate rows used by default: ``B/16``, between 1 and 64.

    (At ``B = 4096``, ``p = 32`` gives a mean prefix MSE of 188 at ε = 1, ``p = 64`` 162.)
    """
    return max(1, min(64, n_bins // 16))


def _value_grad(theta: np.ndarray, work: Workload, vdiag: np.ndarray) -> tuple[float, np.ndarray]:
    p = theta.shape[0]
    s = 1.0 + theta.sum(axis=0)
    k_inv = np.linalg.inv(np.eye(p) + theta @ theta.T)
    vst = work.apply((theta * s).T)  # V S Θᵀ, B × p
    a = (theta * s) @ vst  # Θ S V S Θᵀ, p × p
    value = float(np.sum(vdiag * s**2) - np.sum(a * k_inv))
    kt = k_inv @ theta  # Θ Y
    grad_s = 2.0 * (vdiag * s - np.einsum("jk,kj->j", vst, kt))
    tsvs = (s[:, None] * vst).T  # Θ S V S, p × B
    theta_z = k_inv @ (tsvs - a @ kt)
    return value, -2.0 * theta_z + grad_s[None, :]


def pidentity_error(theta: np.ndarray, workload: Workload) -> float:
    """``tr(V (AᵀA)⁻¹)`` of the real p-Identity strategy ``Θ`` (unit Laplace scale)."""
    return _value_grad(np.asarray(theta, dtype=np.float64), workload, workload.diag())[0]


def optimise_pidentity(
    n_bins: int, p: int | None = None, workload: str = "prefix", max_iter: int = 500
) -> np.ndarray:
    """Return the optimised ``Θ`` (``p × B``, non-negative) of a p-Identity strategy.

    Parameters
    ----------
    n_bins : int
        ``B``.
    p : int, optional
        Aggregate rows; default :func:`default_aggregates`.
    workload : {"prefix", "range"}
        The workload whose mean squared error is minimised.
    max_iter : int
        L-BFGS-B iterations at most.

    Returns
    -------
    numpy.ndarray
        ``Θ``; deterministic for given parameters (fixed start).
    """
    from scipy.optimize import minimize  # slow to import: on first use

    b = check_int(n_bins, "n_bins", lo=1)
    rows = default_aggregates(b) if p is None else check_int(p, "p", lo=1)
    work = Workload(check_option(workload, "workload", WORKLOADS), b)
    vdiag = work.diag()
    start = np.random.Generator(np.random.PCG64(0)).random(rows * b)

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _value_grad(x.reshape(rows, b), work, vdiag)
        return value, grad.ravel()

    iters = check_int(max_iter, "max_iter", lo=1)
    with one_blas_thread():  # small products: threads only contend (17x slower when loaded)
        res = minimize(
            fun,
            start,
            jac=True,
            method="L-BFGS-B",
            bounds=[(0.0, None)] * (rows * b),
            options={"maxiter": iters},
        )
    theta: np.ndarray = np.maximum(res.x, 0.0).reshape(rows, b)
    return theta
