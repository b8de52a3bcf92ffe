"""Scaled rows *and* columns of the square-root factorisation (add_remove, ``2^8 <= B <= 2^14``;
issue 33).

Release ``y = e ∘ (Ĉ (p ∘ x)) + Z``, i.e. the integer matrix ``A = diag(e) Ĉ diag(p)``, with

* row multipliers ``e_i = max(1, round(R_e sqrt(w(x_i)/max w)))``, ``R_e`` =
  :data:`ROW_RESOLUTION`, from the fixed profile ``w(x) = (1 − x)^a (x + d)^b`` at
  ``x_i = (i + ½)/B`` (:data:`PROFILE`): public ``B`` only. The profile is a three-parameter
  fit of the row scaling that minimises the real factor's error with normalised columns at
  ``B = 1024`` (L-BFGS over the ``B`` log-weights, offline: 1.0337× the SVD bound there); as a
  function of ``x`` it transfers to other sizes (1.0451× at 256, 1.0295× at 2048, against
  1.0707× / 1.0516× for normalised columns alone);
* column multipliers ``p_j = isqrt(R_p² N_max // N_j)``, ``R_p`` =
  :data:`treedp.mechanisms.sqrt_lattice.NORMALISE_RESOLUTION`, where
  ``N_j = Σ_{i>=j} e_i² ĉ_{i−j}²`` is the squared norm of column ``j`` of ``diag(e) Ĉ`` (exact
  integers, one exact convolution) and ``N_max = max_j N_j``: every column of ``A`` has squared
  norm ``p_j² N_j <= R_p² N_max``, with equality where ``N_j = N_max`` (``p_j = R_p``).

Privacy (ρ-zCDP, add/remove, one record; every record is counted in exactly one bin): a record
added to or removed from bin ``j`` changes the release by ``±A e_j = ±p_j e ∘ Ĉ e_j``, of squared
norm ``p_j² N_j``; so ``Δ₂² = max_j p_j² N_j = R_p² N_max`` and ``Δ₁ = max_j p_j Σ_{i>=j} e_i
ĉ_{i−j}``, both computed exactly (:func:`sensitivities`, Python integers from exact integer
convolutions). Under replace two columns with different multipliers move: not offered there.
``A x`` is an exact integer function of the counts, the noise exact discrete Gaussian with
``σ² >= Δ₂²/(2ρ)``, as for the other lattice factors.

Estimate: ``A`` is square and invertible, so ``P̂ = L diag(1/p) Ĉ^{-1} diag(1/e) y`` is the only
unbiased linear estimate; its covariance is that of normalised columns with the noise of ``y_k``
weighted by ``1/e_k²`` (:class:`treedp.estimation.toeplitz.ScaledToeplitzCovariance` with
``weights``): exact, ``O(B²)``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.sqrt_lattice import (
    NORMALISE_LIMIT,
    NORMALISE_MIN,
    NORMALISE_RESOLUTION,
    choose_scale,
    coefficients,
)

__all__ = [
    "PROFILE",
    "ROW_RESOLUTION",
    "both_apply",
    "both_default",
    "column_multipliers",
    "column_norms",
    "factor",
    "row_weights",
    "sensitivities",
]

#: ``e_i <= R_e`` (with ``R_p = 2^10`` the lattice scale stays about ``2^11`` at ρ = ½, 1024 bins).
ROW_RESOLUTION = 2**5
#: ``(a, b, d)`` of the row profile ``w(x) = (1 − x)^a (x + d)^b``.
PROFILE = (0.7899, 0.5268, 0.0461)


def factor() -> int:
    """``R_e² R_p²``: ``Δ₂² <= factor · Σ ĉ_k²`` (the scale search's bound)."""
    return ROW_RESOLUTION**2 * NORMALISE_RESOLUTION**2


def both_apply(n_bins: int, neighbours: str) -> bool:
    """Whether scaled rows and columns apply: add_remove and ``2^8 <= B <= 2^14``."""
    return neighbours == "add_remove" and NORMALISE_MIN <= n_bins <= NORMALISE_LIMIT


def both_default(n_bins: int, rho: float, neighbours: str, scale: int | None) -> bool:
    """Whether they are the default: where they apply and the lattice scale ``s`` (chosen with
    :func:`factor`, or the given one if it is not above that) has ``s² >= 4B``. Measured at
    ``s = 2 sqrt(B)`` (ρ = ½, scale forced): 1.0538× / 1.0418× / 1.0333× the SVD bound at 256 /
    1024 / 4096 bins, still below normalised columns at their 32 times larger scale (1.0716× /
    1.0580× / 1.0479×); at ``2^14`` and ``s = 128`` (below the threshold) 1.0415× against
    1.0405×. Smaller budgets keep normalised columns. Public parameters only."""
    if not both_apply(n_bins, neighbours):
        return False
    try:
        chosen = choose_scale(n_bins, rho, "add_remove", factor())
    except InvalidParameterError:
        return False
    used = chosen if scale is None else scale
    return used <= chosen and used * used >= 4 * n_bins


@lru_cache(maxsize=4)
def row_weights(n_bins: int) -> np.ndarray:
    """``e`` (int64, read-only, ``1 <= e_i <= R_e``), from public ``B`` only."""
    a, b, d = PROFILE
    x = (np.arange(n_bins, dtype=np.float64) + 0.5) / n_bins
    w = (1.0 - x) ** a * (x + d) ** b
    e: np.ndarray = np.maximum(1, np.rint(ROW_RESOLUTION * np.sqrt(w / w.max()))).astype(np.int64)
    e.setflags(write=False)
    return e


def _column_sums(coef: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``Σ_{i>=j} weights_i coef_{i−j}`` for every ``j``, exact int64 (non-negative public
    inputs, sums below ``2^62``): the exact convolution of the reversed ``weights`` (small, the
    FFT's fixed factor) with ``coef`` (split into limbs), read backwards."""
    from treedp.estimation.toeplitz import exact_convolve

    bits = max(1, int(coef.max()).bit_length())
    out = exact_convolve(np.ascontiguousarray(weights[::-1]), coef, bits)
    return np.ascontiguousarray(out[::-1])


@lru_cache(maxsize=4)
def column_norms(n_bins: int, scale: int) -> np.ndarray:
    """``N_j = Σ_{i>=j} e_i² ĉ_{i−j}²`` (int64, exact: below ``2^44``, as ``e_i² <= 2^10`` and
    ``Σ ĉ_k² < 2^34`` for ``B <= 2^14``)."""
    c = coefficients(n_bins, scale)
    e = row_weights(n_bins)
    out = _column_sums(c * c, e * e)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4)
def column_multipliers(n_bins: int, scale: int) -> np.ndarray:
    """``p_j = isqrt(R_p² N_max // N_j)`` (int64, read-only): the largest integer with
    ``p_j² N_j <= R_p² N_max``."""
    norms = [int(v) for v in column_norms(n_bins, scale)]
    top = NORMALISE_RESOLUTION**2 * max(norms)
    out = np.array([math.isqrt(top // n) for n in norms], dtype=np.int64)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4)
def sensitivities(n_bins: int, scale: int) -> tuple[int, int]:
    """``(L1, L2²)`` of ``diag(e) Ĉ diag(p) x`` under add_remove, exact (Python integers): the
    maxima over ``j`` of ``p_j Σ_{i>=j} e_i ĉ_{i−j}`` and ``p_j² N_j``."""
    c = coefficients(n_bins, scale)
    e = row_weights(n_bins)
    p = [int(v) for v in column_multipliers(n_bins, scale)]
    l1_cols = _column_sums(c, e)
    norms = column_norms(n_bins, scale)
    l1 = max(p[j] * int(l1_cols[j]) for j in range(n_bins))
    return l1, max(p[j] * p[j] * int(norms[j]) for j in range(n_bins))
