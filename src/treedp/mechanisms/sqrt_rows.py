"""Scaled rows for the square-root factorisation (add_remove, ``B > 2^14``; issue 33).

Column ``j`` of the integer factor ``Ĉ`` has squared norm ``S(B − j)``, largest at ``j = 0``.
Multiplying *row* ``i`` by a positive integer ``e_i`` (release ``e ∘ (Ĉ x) + Z``) changes column
``j``'s squared norm to ``N_j = Σ_{i>=j} e_i² ĉ_{i−j}²``; choosing ``e_i² ∝ u_i`` with
``Σ_{i>=j} c_{i−j}² u_i = 1`` for every ``j`` (the real factor's columns all equal) makes every
column nearly as large as the largest, and the estimator stays Toeplitz:
``P̂ = G (y / e)``, ``Var(P̂[m]) = σ² Σ_{i<m} g_{m−1−i}²/e_i²`` (a convolution), with
``G = L Ĉ^{-1}`` as for the plain factor. (Equivalently: row ``i`` gets noise of variance
``σ²/e_i²``.)

``u`` is the reversed cumulative sum of the power-series inverse of ``c²`` (positive: ``c²`` is
log-convex, so the inverse has one positive then only non-positive coefficients, and its partial
sums decrease to ``1/Σ c²`` > 0); it depends on the distance from the end only, so it is
computed once up to :data:`U_EXACT` and continued by ``u(k) ∝ 1/S(k + 1)`` beyond (any positive
integers are private; the error is computed for the integers actually used).

Privacy (ρ-zCDP, add/remove, one record): a record in bin ``j`` changes the release by
``±e ∘ Ĉ e_j``, of squared norm ``N_j``: ``Δ₂² = max_j N_j``, computed *exactly*
(:func:`exact_max_correlation`: a float FFT correlation with Percival's rigorous error bound
selects the candidates that can be the maximum, whose values are then summed exactly in
integers). Under replace two columns move; not offered there.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from treedp.estimation.toeplitz import _fft_size, fft_error_factor, series_inverse
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.sqrt_lattice import (
    NORMALISE_LIMIT,
    _sqrt_coefficients,
    choose_scale,
    coefficients,
)

__all__ = [
    "ROWS_RESOLUTION",
    "U_EXACT",
    "exact_max_correlation",
    "row_l1",
    "row_l2_squared",
    "row_multipliers",
    "row_sensitivities",
    "rows_apply",
    "rows_default",
]

#: ``e_i = round(R sqrt(u_i))``, ``R`` this resolution (``e`` at most ``R``).
ROWS_RESOLUTION = 2**8
#: ``u`` is computed exactly (a series inverse) up to this distance from the end.
U_EXACT = 2**16


def rows_apply(n_bins: int, neighbours: str) -> bool:
    """Whether scaled rows apply (and are the default): add_remove and ``B > 2^14``."""
    return neighbours == "add_remove" and n_bins > NORMALISE_LIMIT


def rows_default(n_bins: int, rho: float, neighbours: str, scale: int | None) -> bool:
    """Whether scaled rows are the default: where they apply, and (scale left to choose) the
    largest lattice scale the sampler allows with the factor ``R²`` keeps ``s² >= πB``, so the
    rounded tail coefficients ``round(s c_k) ≈ s/sqrt(πk)`` stay at least about 1. Below that
    (tiny ρ: at ``2^22`` bins and ρ = 1e-6 the scale would be 321, 2.6× the SVD bound) the
    plain factor, which keeps ``s = 2^16``, is better. Public parameters only."""
    if not rows_apply(n_bins, neighbours):
        return False
    if scale is None:
        try:
            scale = choose_scale(n_bins, rho, "add_remove", ROWS_RESOLUTION**2)
        except InvalidParameterError:
            return False
    return 7 * scale * scale >= 22 * n_bins  # s² >= (22/7)·B > πB


@lru_cache(maxsize=4)
def row_multipliers(n_bins: int) -> np.ndarray:
    """``e`` (int64, read-only, ``1 <= e_i <= R``), from public ``B`` only."""
    k0 = min(n_bins, U_EXACT)
    c2 = np.asarray(_sqrt_coefficients(n_bins)) ** 2
    u = np.cumsum(series_inverse(c2[:k0]))  # u(k), k = distance from the last row
    if n_bins > k0:
        s = np.cumsum(c2)
        u = np.concatenate([u, u[-1] * s[k0 - 1] / s[k0:]])
    e = np.maximum(1, np.rint(ROWS_RESOLUTION * np.sqrt(u / u.max()))).astype(np.int64)
    out = np.ascontiguousarray(e[::-1])
    out.setflags(write=False)
    return out


def exact_max_correlation(a: np.ndarray, b: np.ndarray) -> int:
    """``max_j Σ_t a_t b_{j+t}`` exactly, for non-negative int64 ``a`` (below ``2**32``) and
    ``b`` (below ``2**20``) of one length ``n <= 2**26``.

    A floating-point FFT correlation is within ``κ ‖a‖₂‖b‖₂`` of the exact values everywhere
    (Percival 2003, Thm 5.1; ``κ`` = :func:`treedp.estimation.toeplitz.fft_error_factor`, with
    a margin of 4): every ``j`` whose float value is below the float maximum minus twice that
    cannot hold the maximum. The others (the candidates) are summed exactly: ``a`` split into
    16-bit halves, so every int64 dot product stays below ``2**16 · 2**20 · 2**26 = 2**62``.
    """
    n = a.size
    size = _fft_size(n)
    fa = np.fft.rfft(a.astype(np.float64)[::-1], size)
    fb = np.fft.rfft(b.astype(np.float64), size)
    corr = np.fft.irfft(fa * fb, size)[n - 1 : 2 * n - 1]  # corr[j] = Σ_t a_t b_{j+t}
    norm = math.sqrt(float(np.sum(a.astype(np.float64) ** 2)))
    norm *= math.sqrt(float(np.sum(b.astype(np.float64) ** 2)))
    slack = 2.0 * fft_error_factor(size) * norm * (1 + 1e-9) + 1.0
    candidates = np.flatnonzero(corr >= corr.max() - slack)
    hi, lo = a >> 16, a & 0xFFFF
    best = 0
    for j in candidates.tolist():
        tail = b[j:]
        m = tail.size
        exact = (int(hi[:m] @ tail) << 16) + int(lo[:m] @ tail)
        best = max(best, exact)
    return best


def row_sensitivities(n_bins: int, scale: int) -> tuple[int, int]:
    """``(L1, L2²)`` of ``e ∘ (Ĉ x)`` under add/remove, exact: column ``j`` is ``e ∘ Ĉ e_j``,
    of L1 norm ``Σ_{i>=j} e_i ĉ_{i−j}`` and squared L2 norm ``Σ_{i>=j} e_i² ĉ_{i−j}²``."""
    return row_l1(n_bins, scale), row_l2_squared(n_bins, scale)


@lru_cache(maxsize=4)
def row_l1(n_bins: int, scale: int) -> int:
    """``Δ₁ = max_j Σ_{i>=j} e_i ĉ_{i−j}`` exactly (the contract's; planning does not need it)."""
    return exact_max_correlation(coefficients(n_bins, scale), row_multipliers(n_bins))


@lru_cache(maxsize=4)
def row_l2_squared(n_bins: int, scale: int) -> int:
    """``Δ₂² = max_j Σ_{i>=j} e_i² ĉ_{i−j}²`` exactly (cached: the planner and the mechanism
    share it)."""
    c = coefficients(n_bins, scale)
    e = row_multipliers(n_bins)
    return exact_max_correlation(c * c, e * e)
