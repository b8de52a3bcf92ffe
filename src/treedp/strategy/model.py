"""An integer p-Identity strategy: its exact sensitivities, least squares and covariances.

The released vector is ``y = W x + z``: ``x`` the bin counts, ``W = [diag(d); A]`` an
integer matrix (``d_j >= 1`` the identity weights, ``A`` the ``p × B`` non-negative integer
weights of the aggregate rows) and ``z`` i.i.d. discrete Laplace noise of one scale ``t``.
Every entry of ``W x`` is an integer, so exact discrete Laplace noise applies. The real
optimised strategy ``[I; Θ] S⁻¹`` (columns of L1 norm 1, see
:mod:`treedp.strategy.optimize`) is put on the lattice ``W = round(q [I; Θ] S⁻¹)``; the
sensitivities below are those of the integer ``W`` actually released, not of the real matrix.

Sensitivity (derived in :class:`treedp.mechanisms.strategy.StrategyMechanism`; the privacy
unit is one record, counted in exactly one bin): the largest norm of a column ``W e_j``
(``add_remove``), or of ``W (e_k - e_j)`` over all pairs ``j ≠ k`` (``replace``: the exact
maximum, by branch and bound), in L1 and in L2.

Estimation is generalised least squares (here ordinary: one noise scale), the BLUE:
``x̂ = (WᵀW)⁻¹ Wᵀ y`` with ``Cov(x̂) = σ² (WᵀW)⁻¹``. ``WᵀW = D² + AᵀA`` is a diagonal plus a
rank-``p`` matrix, so by Woodbury ``(WᵀW)⁻¹ = D⁻² - G K⁻¹ Gᵀ`` with ``G = D⁻² Aᵀ`` and
``K = I_p + A D⁻² Aᵀ``. For prefixes ``P[m] = Σ_{j<m} x̂_j``:

``Cov(P[a], P[b]) = σ² (U[min(a, b)] - H[a]·H[b])``, ``U[m] = Σ_{j<m} d_j⁻²``,
``H[m] = (Σ_{j<m} G_j) L⁻ᵀ`` (``K = L Lᵀ``),

``O(p)`` per pair. Under ``replace`` the size ``n = P[B]`` is public and is imposed as a
linear constraint (the constrained BLUE): ``P'[m] = P[m] - c[m] (P[B] - n) / c[B]`` with
``c[m] = Cov(P[m], P[B])``, and ``Cov' (a, b) = Cov(a, b) - c[a] c[b] / c[B]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from treedp.exceptions import DataError, InvalidParameterError
from treedp.strategy.optimize import one_blas_thread

__all__ = [
    "DEFAULT_LATTICE",
    "Strategy",
    "StrategyCovariance",
    "quantise",
]

#: ``q``: the real strategy's columns (L1 norm 1) are scaled by ``q`` and rounded, so every
#: weight is an integer in ``[0, q]`` (identity weights at least 1).
DEFAULT_LATTICE = 255


@dataclass(frozen=True, eq=False)
class Strategy:
    """An integer p-Identity strategy ``W = [diag(identity); aggregates]`` on ``B`` bins.

    Attributes
    ----------
    identity : numpy.ndarray
        ``d``, int64, shape ``(B,)``, every entry ``>= 1``.
    aggregates : numpy.ndarray
        ``A``, int64, shape ``(p, B)``, non-negative.
    workload : {"prefix", "range"}
        What it was optimised for (public).
    """

    identity: np.ndarray
    aggregates: np.ndarray
    workload: str = "prefix"
    _memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        d = np.array(self.identity, dtype=np.int64, copy=True)
        a = np.array(self.aggregates, dtype=np.int64, copy=True)
        if d.ndim != 1 or d.size < 1 or a.ndim != 2 or a.shape[1] != d.size:
            raise InvalidParameterError(
                "A strategy needs identity weights of shape (B,) and aggregate weights of "
                "shape (p, B)."
            )
        if (d < 1).any() or (a < 0).any():
            raise InvalidParameterError(
                "A strategy's identity weights must be >= 1 and its aggregate weights >= 0."
            )
        d.setflags(write=False)
        a.setflags(write=False)
        object.__setattr__(self, "identity", d)
        object.__setattr__(self, "aggregates", a)

    @property
    def n_bins(self) -> int:
        """``B``."""
        return int(self.identity.size)

    @property
    def n_rows(self) -> int:
        """``B + p``: entries released."""
        return int(self.identity.size + self.aggregates.shape[0])

    @property
    def digest(self) -> str:
        """SHA-256 of the weights (identifies the strategy in a release's metadata)."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.identity, dtype="<i8").tobytes())
        h.update(np.ascontiguousarray(self.aggregates, dtype="<i8").tobytes())
        h.update(self.workload.encode())
        return h.hexdigest()

    def matrix(self) -> np.ndarray:
        """The dense ``(B + p) × B`` integer matrix ``W`` (for tests and small ``B``)."""
        return np.vstack([np.diag(self.identity), self.aggregates])

    def max_total(self) -> int:
        """The largest total count :meth:`apply` computes exactly in int64: every entry of
        ``W x`` is at most the heaviest weight times ``Σ x``."""
        heaviest = int(max(self.identity.max(), self.aggregates.max(initial=0)))
        return (2**62) // heaviest

    def apply(self, counts: np.ndarray) -> np.ndarray:
        """``W x`` for integer bin counts (exact int64 arithmetic).

        Raises
        ------
        DataError
            If an entry of ``W x`` could overflow int64 (a total above about ``2**62 / q``
            records; the message names no count).
        """
        x = np.asarray(counts, dtype=np.int64)
        if x.size and int(x.sum(dtype=object)) > self.max_total():
            raise DataError(
                "The counts' total is too large for the strategy's integer weights (int64)."
            )
        return np.concatenate([self.identity * x, self.aggregates @ x])

    def sensitivity(self, neighbours: str) -> tuple[int, float]:
        """The exact ``(L1, L2)`` sensitivity of ``W x`` (see the module docstring)."""
        key = f"sens_{neighbours}"
        if key not in self._memo:
            self._memo[key] = _sensitivity(self.identity, self.aggregates, neighbours)
        return self._memo[key]  # type: ignore[return-value]

    def _factors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``U``, ``H``, ``G`` and the Cholesky factor ``L`` of ``K`` (module docstring)."""
        if "factors" not in self._memo:
            d2 = self.identity.astype(np.float64) ** 2
            a = self.aggregates.astype(np.float64)
            g = a.T / d2[:, None]  # D⁻² Aᵀ
            with one_blas_thread():  # small products: BLAS threads only contend
                chol = np.linalg.cholesky(np.eye(a.shape[0]) + a @ g)
                gc = np.concatenate([np.zeros((1, a.shape[0])), np.cumsum(g, axis=0)])
                h = np.linalg.solve(chol, gc.T).T  # rows: Gc[m] L⁻ᵀ
            u = np.concatenate([[0.0], np.cumsum(1.0 / d2)])
            self._memo["factors"] = (u, h, g, chol)
        return self._memo["factors"]  # type: ignore[return-value]

    def unit_cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """``Cov(P[m1], P[m2]) / σ²`` of the unconstrained least squares (broadcast)."""
        u, h = self._factors()[:2]
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        out: np.ndarray = u[np.minimum(a, b)] - np.einsum("...k,...k->...", h[a], h[b])
        return out

    def unit_prefix_variances(self) -> np.ndarray:
        """``Var(P[m]) / σ²`` for ``m = 0..B`` (unconstrained)."""
        u, h = self._factors()[:2]
        out: np.ndarray = u - np.einsum("mk,mk->m", h, h)
        return out

    def least_squares_prefix(self, noisy: np.ndarray) -> np.ndarray:
        """Prefix estimates ``P[0..B]`` from noisy rows (leading batch axes allowed)."""
        g, chol = self._factors()[2:]
        y = np.asarray(noisy, dtype=np.float64)
        b = self.n_bins
        d = self.identity.astype(np.float64)
        r = d * y[..., :b] + y[..., b:] @ self.aggregates.astype(np.float64)  # Wᵀ y
        # x̂ = D⁻² r - G K⁻¹ Gᵀ r
        with one_blas_thread():
            t = r @ g
            flat = t.reshape(-1, t.shape[-1]).T
            sol = np.linalg.solve(chol.T, np.linalg.solve(chol, flat)).T
            x_hat = r / d**2 - sol.reshape(t.shape) @ g.T
        zeros = np.zeros((*x_hat.shape[:-1], 1))
        out: np.ndarray = np.concatenate([zeros, np.cumsum(x_hat, axis=-1)], axis=-1)
        return out


def _sensitivity(d: np.ndarray, a: np.ndarray, neighbours: str) -> tuple[int, float]:
    if neighbours == "add_remove":
        l1 = int((d + a.sum(axis=0)).max())
        l2sq = int((d**2 + (a**2).sum(axis=0)).max())
        return l1, float(np.sqrt(l2sq))
    if d.size < 2:
        return 0, 0.0
    l1 = _max_over_pairs(d, a + 0, np.abs, d + a.sum(axis=0))
    l2sq = _max_over_pairs(d**2, a + 0, np.square, d**2 + (a**2).sum(axis=0))
    return l1, float(np.sqrt(l2sq))


def _max_over_pairs(
    own: np.ndarray, a: np.ndarray, norm: Callable[[np.ndarray], np.ndarray], bound: np.ndarray
) -> int:
    """``max_{j≠k} own_j + own_k + Σ_i norm(A_ij - A_ik)``, exactly, by branch and bound.

    For non-negative weights ``norm(A_ij - A_ik) <= norm(A_ij) + norm(A_ik)``, so a pair is at
    most ``bound_j + bound_k`` (``bound`` = the column's own total). Columns are visited by
    decreasing bound, each against every other column; once ``bound_j + max(bound)`` cannot
    beat the best pair found, no later column can (its pairs with earlier columns are done).
    """
    order = np.argsort(-bound, kind="stable")
    top = int(bound[order[0]])
    best = 0
    for j in order:
        if int(bound[j]) + top <= best:
            break
        values = own[j] + own + norm(a - a[:, j : j + 1]).sum(axis=0)
        values[j] = 0  # not a pair
        best = max(best, int(values.max()))
    return best


def quantise(
    theta: np.ndarray, lattice: int = DEFAULT_LATTICE, workload: str = "prefix"
) -> Strategy:
    """Put the real strategy ``[I; Θ] S⁻¹`` on the integer lattice ``round(q ·)``."""
    t = np.asarray(theta, dtype=np.float64)
    s = 1.0 + t.sum(axis=0)
    d = np.maximum(1, np.rint(lattice / s)).astype(np.int64)
    a = np.rint(lattice * t / s).astype(np.int64)
    return Strategy(d, a, workload)


class StrategyCovariance:
    """Exact ``Cov(P[m1], P[m2])`` of a strategy release (the PrefixCovariance protocol).

    Parameters
    ----------
    strategy : Strategy
        The released integer strategy.
    variance : float
        The exact noise variance of one released entry.
    n_public : bool
        Whether ``n = P[B]`` is public (``replace``): the constrained estimator.
    """

    def __init__(self, strategy: Strategy, variance: float, n_public: bool) -> None:
        self.strategy, self.variance, self.n_public = strategy, variance, n_public
        b = strategy.n_bins
        self._c = strategy.unit_cov(np.arange(b + 1), np.full(b + 1, b)) if n_public else None

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        out = self.strategy.unit_cov(a, b)
        if self._c is not None:
            c = self._c
            out = out - c[a] * c[b] / c[-1]
        result: np.ndarray = self.variance * out
        return result

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P[m])``."""
        return self.cov(m, m)

    def prefix_variances(self) -> np.ndarray:
        """``Var(P[m])`` for ``m = 0..B``."""
        base = self.strategy.unit_prefix_variances()
        if self._c is not None:
            base = base - self._c**2 / self._c[-1]
        out: np.ndarray = self.variance * np.maximum(base, 0.0)
        return out

    def estimate(self, noisy: np.ndarray, n: int | None) -> np.ndarray:
        """Prefix estimates ``P[0..B]`` from the noisy rows (``n`` imposed when public)."""
        prefix = self.strategy.least_squares_prefix(noisy)
        if self._c is not None and n is not None:
            c = self._c
            prefix = prefix - (c / c[-1]) * (prefix[..., -1:] - n)
        return prefix
