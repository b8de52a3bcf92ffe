"""The integer lattice of the square-root factor: coefficients, sensitivities, scale.

The arithmetic behind :mod:`treedp.mechanisms.sqrt_factorization` (its docstring has the
construction and the proofs): the rounded coefficients ``ĉ_k = round(s · c_k)``, their exact
L1 / L2² sensitivities, the largest lattice scale the exact sampler supports, the equalised
columns' slack and the dense / Woodbury systems of their GLS estimate, the normalised columns'
integer multipliers. Public parameters only.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from treedp._validation import check_int
from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.noise.families import DiscreteGaussian

__all__ = [
    "EQUALISE_LIMIT",
    "INT_LIMIT",
    "MAX_SCALE",
    "NORMALISE_LIMIT",
    "NORMALISE_MIN",
    "NORMALISE_RESOLUTION",
    "TAIL_COLUMNS",
    "TAIL_LIMIT",
    "choose_scale",
    "coefficients",
    "equalised_columns",
    "equalised_sensitivities",
    "equalised_system",
    "equaliser",
    "fits",
    "inverse_coefficients",
    "lattice_coefficients",
    "normalise_default",
    "normalised_sensitivities",
    "normaliser",
    "prefix_filter",
    "sensitivities",
    "sqrt_coefficients",
    "tail_system",
]

#: Largest lattice scale ``s`` (the coefficients stay below 2**17; rounding then costs nothing
#: measurable at any supported ``B``).
MAX_SCALE = 2**16
#: Every entry of ``Ĉ x`` stays below this (int64 with room).
INT_LIMIT = 2**62
#: About the largest ``2σ²`` the exact sampler supports with a power-of-two denominator
#: (``2·a < 2**55`` for ``σ² = a/b``): only seeds :func:`choose_scale`'s search window.
_MAX_SIGMA2 = 2**54
#: Largest ``B`` for ``equalise=True`` (its GLS estimate and covariances are dense, ``O(B³)``).
EQUALISE_LIMIT = 1024
#: Above it and up to ``TAIL_LIMIT`` only the last ``TAIL_COLUMNS`` columns are equalised (a
#: rank-``TAIL_COLUMNS`` Woodbury update of the Toeplitz estimator, exact covariances kept).
TAIL_LIMIT = 8192
TAIL_COLUMNS = 256
#: Normalised columns (add_remove, the default for ``NORMALISE_MIN <= B <= NORMALISE_LIMIT``):
#: column ``j`` of ``Ĉ`` is multiplied by the integer ``p_j ≈ R·sqrt(S(B)/S(B − j))``, ``R`` this
#: resolution (``p_0 = R``). Below ``NORMALISE_MIN`` the equalised columns are better; above
#: ``NORMALISE_LIMIT`` the exact error (an ``O(B²)`` sum) would cost more than a second.
NORMALISE_RESOLUTION = 2**10
NORMALISE_MIN = 2**8
NORMALISE_LIMIT = 2**14


def normalises(n_bins: int, neighbours: str) -> bool:
    """Whether normalised columns apply (and are the default): add_remove and
    ``NORMALISE_MIN <= B <= NORMALISE_LIMIT``."""
    return neighbours == "add_remove" and NORMALISE_MIN <= n_bins <= NORMALISE_LIMIT


def normalise_default(n_bins: int, rho: float, neighbours: str, scale: int | None) -> bool:
    """Whether normalised columns are the default: where they apply, unless the budget is so
    small that the factor ``R²`` pushes the lattice scale below ``sqrt(πB)`` (at ``2^14`` bins
    and ρ = 1e-6: scale 87, 1.118× the SVD bound against 1.109× for the plain factor)."""
    if not normalises(n_bins, neighbours):
        return False
    if scale is None:
        try:
            scale = choose_scale(n_bins, rho, "add_remove", NORMALISE_RESOLUTION**2)
        except InvalidParameterError:
            return False
    return 7 * scale * scale >= 22 * n_bins  # s² >= (22/7)·B > πB


@lru_cache(maxsize=4)
def normaliser(n_bins: int, scale: int) -> np.ndarray:
    """``p_j = isqrt(R² S(B) // S(B − j))`` (int64, read-only): the largest integer with
    ``p_j² S(B − j) <= R² S(B)``, so every column of ``Ĉ diag(p)`` has squared norm at most
    ``R² S(B)``, attained at ``j = 0`` (``p_0 = R``)."""
    sq = [int(v) for v in _cumulative(coefficients(n_bins, scale) ** 2)]
    top = NORMALISE_RESOLUTION**2 * sq[n_bins]
    out = np.array([math.isqrt(top // sq[n_bins - j]) for j in range(n_bins)], np.int64)
    out.setflags(write=False)
    return out


def normalised_sensitivities(n_bins: int, scale: int) -> tuple[int, int]:
    """``(L1, L2²)`` of ``Ĉ diag(p) x`` under add_remove, exact (Python integers): adding or
    removing a record in bin ``j`` changes it by ``±p_j Ĉ e_j``, of L1 norm ``p_j T(B − j)`` and
    squared L2 norm ``p_j² S(B − j)``; the maxima over ``j`` (the L2 one is ``R² S(B)``)."""
    c = coefficients(n_bins, scale)
    p = [int(v) for v in normaliser(n_bins, scale)]
    t = [int(v) for v in _cumulative(c)]
    sq = [int(v) for v in _cumulative(c * c)]
    l1 = max(p[j] * t[n_bins - j] for j in range(n_bins))
    return l1, max(p[j] * p[j] * sq[n_bins - j] for j in range(n_bins))


@lru_cache(maxsize=4)
def inverse_coefficients(n_bins: int, scale: int) -> np.ndarray:
    """``h``, the first column of ``Ĉ^{-1}`` (floats, read-only)."""
    from treedp.estimation.toeplitz import series_inverse

    h = series_inverse(coefficients(n_bins, scale))
    h.setflags(write=False)
    return h


def equalised_columns(n_bins: int) -> int:
    """How many (last) columns ``equalise=True`` equalises: all up to :data:`EQUALISE_LIMIT`,
    :data:`TAIL_COLUMNS` up to :data:`TAIL_LIMIT`, else none (refused); none for one bin, whose
    one column has no slack (it took 256 there, and a release crashed after its charge)."""
    if n_bins < 2:
        return 0
    if n_bins <= EQUALISE_LIMIT:
        return n_bins
    return TAIL_COLUMNS if n_bins <= TAIL_LIMIT else 0


@lru_cache(maxsize=4)
def equaliser(n_bins: int, scale: int) -> np.ndarray:
    """``ê_j = isqrt(S(B) − S(B − j))``: the slack of column ``j`` below ``Δ₂² = S(B)``."""
    sq = _cumulative(coefficients(n_bins, scale) ** 2)
    out = np.array([math.isqrt(int(sq[-1] - sq[n_bins - j])) for j in range(n_bins)], np.int64)
    out.setflags(write=False)
    return out


def equalised_sensitivities(n_bins: int, scale: int, columns: int | None = None) -> tuple[int, int]:
    """``(L1, L2²)`` of ``(Ĉ x, ê ∘ x)`` under add_remove: column ``j`` is
    ``(Ĉ e_j, ê_j e_j)``, squared norm ``S(B − j) + ê_j² <= S(B)`` (``ê_j`` is the integer
    square root of the slack), with equality at ``j = 0``: the same ``Δ₂²`` as without.
    ``columns``: only the last ``columns`` columns carry ``ê_j`` (the others ``ê_j = 0``)."""
    c = coefficients(n_bins, scale)
    j = np.arange(n_bins)
    e = np.where(
        j >= n_bins - (n_bins if columns is None else columns), equaliser(n_bins, scale), 0
    )
    rest = n_bins - j  # column j holds ĉ_0..ĉ_{B-j-1}
    return int((_cumulative(c)[rest] + e).max()), int((_cumulative(c**2)[rest] + e**2).max())


def _cumulative(values: np.ndarray) -> np.ndarray:
    """``[0, v_0, v_0 + v_1, ...]`` (int64: exact, as ``Σ ĉ_k² < 2**58`` for ``B <= 2**24``)."""
    return np.concatenate([[0], np.cumsum(values)])


@lru_cache(maxsize=2)
def equalised_system(n_bins: int, scale: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ``Ĉ``, the Cholesky factor of ``M = ĈᵀĈ + diag(ê²)`` and ``L M^{-1} Lᵀ``."""
    from scipy.linalg import cho_factor, cho_solve

    c = coefficients(n_bins, scale).astype(np.float64)
    i, j = np.indices((n_bins, n_bins))
    dense = np.where(i >= j, c[np.clip(i - j, 0, None)], 0.0)
    e = equaliser(n_bins, scale).astype(np.float64)
    factor = cho_factor(dense.T @ dense + np.diag(e * e), lower=True)
    ltri = np.tril(np.ones((n_bins, n_bins)))
    cov = ltri @ cho_solve(factor, ltri.T)
    return dense, factor[0], cov


@lru_cache(maxsize=2)
def tail_system(n_bins: int, scale: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``Z = Ĉ^{-T} U`` (``B × k``, ``U`` = the last ``k`` unit columns times ``ê``),
    ``W = G Z`` and ``(I + ZᵀZ)^{-1}``: ``P̂ = G y₁ + W (I + V)^{-1} (y₂ − Zᵀ y₁)`` and
    ``Cov = v (G Gᵀ − W (I + V)^{-1} Wᵀ)`` (Woodbury; ``docs/factorization.md``)."""
    from treedp.estimation.toeplitz import series_inverse, toeplitz_apply

    inv = series_inverse(coefficients(n_bins, scale))
    js = np.arange(n_bins - k, n_bins)
    rows = np.arange(n_bins)[:, None]
    e = equaliser(n_bins, scale)[js].astype(np.float64)
    z = np.where(rows <= js[None, :], inv[np.clip(js[None, :] - rows, 0, None)], 0.0) * e
    w = toeplitz_apply(prefix_filter(n_bins, scale), z.T).T
    core = np.linalg.inv(np.eye(k) + z.T @ z)
    return z, w, core


def sqrt_coefficients(n_bins: int) -> np.ndarray:
    """``c_k = binom(2k, k)/4^k`` for ``k < B`` (floats, by ``c_k = c_{k-1}(2k − 1)/(2k)``)."""
    return _sqrt_coefficients(check_int(n_bins, "n_bins", lo=1)).copy()


@lru_cache(maxsize=4)
def _sqrt_coefficients(n_bins: int) -> np.ndarray:
    k = np.arange(1, n_bins, dtype=np.float64)
    out = np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])
    out.setflags(write=False)
    return out


def _rounded(n_bins: int, scale: int) -> np.ndarray:
    """``ĉ`` (int64, writable, not cached: the scale search tries many scales)."""
    out: np.ndarray = np.rint(scale * _sqrt_coefficients(n_bins)).astype(np.int64)
    out[0] = scale
    return out


@lru_cache(maxsize=2)
def coefficients(n_bins: int, scale: int) -> np.ndarray:
    """``ĉ`` (int64, read-only, cached)."""
    out = _rounded(n_bins, scale)
    out.setflags(write=False)
    return out


def lattice_coefficients(n_bins: int, scale: int) -> np.ndarray:
    """``ĉ_k = round(s · c_k)`` (int64, non-increasing, ``ĉ_0 = s``): the released matrix."""
    return coefficients(check_int(n_bins, "n_bins", lo=1), check_int(scale, "scale", lo=1))


@lru_cache(maxsize=8)
def _sensitivities(n_bins: int, scale: int, neighbours: str) -> tuple[int, int]:
    from treedp.estimation.toeplitz import exact_convolve

    c = coefficients(n_bins, scale)
    s_all = int(np.sum(c * c))  # ĉ_k² < 2**34, B <= 2**24 terms: exact in int64
    if neighbours == "add_remove":
        return int(c.sum()), s_all
    # replace: i = 0 is worst (module docstring); j = 1..B-1.
    t = _cumulative(c)  # T(m), exact int64 (Σ ĉ < 2**41)
    j = np.arange(1, n_bins)
    l1 = int((2 * t[j] + t[n_bins - j] - t[n_bins]).max())
    auto = exact_convolve(c, c[::-1].copy(), 17)  # z[B-1-j] = A(j)
    a_j = auto[n_bins - 1 - j]
    l2 = int((s_all + _cumulative(c * c)[n_bins - j] - 2 * a_j).max())
    return l1, l2


def sensitivities(n_bins: int, scale: int, neighbours: Neighbours) -> tuple[int, int]:
    """``(L1, L2²)`` of ``Ĉ x`` under ``neighbours`` (exact integers; module docstring)."""
    if neighbours == "replace" and n_bins < 2:
        raise InvalidParameterError("neighbours='replace' needs at least 2 bins.")
    return _sensitivities(n_bins, scale, neighbours)


@lru_cache(maxsize=8)
def prefix_filter(n_bins: int, scale: int) -> np.ndarray:
    """``g``, the first column of ``G = L Ĉ^{-1}`` (floats)."""
    from treedp.estimation.toeplitz import series_inverse

    g = np.cumsum(series_inverse(coefficients(n_bins, scale)))
    g.setflags(write=False)
    return g


def fits(l2_squared: int, rho: float) -> DiscreteGaussian | None:
    """The discrete Gaussian for ``Δ₂²`` at ``rho``, or None outside the sampler's range."""
    try:
        return DiscreteGaussian.for_budget(l2_squared, rho)
    except InvalidParameterError:
        return None


def choose_scale(n_bins: int, rho: float, neighbours: Neighbours, factor: int = 1) -> int:
    """The largest ``s <= MAX_SCALE`` whose noise ``σ² = Δ₂²(s)/(2ρ)`` the exact sampler
    supports (``Δ₂²`` grows with ``s``: a binary search). Public parameters only.

    Since the sampler's large range (``σ²`` up to about ``1.8·10**16``,
    :func:`treedp.noise.discrete_gaussian.sample_discrete_gaussian`) this is ``MAX_SCALE`` for
    every ``ρ >= 1e-6`` and ``B <= 2**24`` (``σ² <= 2**32·Σ c_k²/ρ < 2**54``); the search
    remains for smaller budgets.

    Under ``replace`` the search uses the bound ``Δ₂² <= 2 Σ ĉ_k²`` (two columns of
    non-negative entries), which is cheap; the mechanism then uses the exact ``Δ₂²``.
    ``factor``: ``Δ₂²`` is ``factor`` times that (normalised columns: ``R²``)."""

    def bound(scale: int) -> int:
        c = _rounded(n_bins, scale)
        return int(np.sum(c * c)) * (1 if neighbours == "add_remove" else 2) * factor

    if fits(bound(1), rho) is None:
        raise InvalidParameterError(
            "The budget is too small for the square-root factorisation: even at lattice scale "
            "1 the noise variance would exceed the exact sampler's range. Use a larger rho."
        )
    if fits(bound(MAX_SCALE), rho) is not None:  # the usual case since the sampler's large range
        return MAX_SCALE
    lo, hi = 1, MAX_SCALE
    # Start from the real factor's Σ c_k² (Δ₂²(s) ≈ s² Σ c_k²): a window of ±3 % usually holds
    # the answer, which is then found in a few steps (the full range otherwise).
    real = float(np.sum(_sqrt_coefficients(n_bins) ** 2)) * (1 if neighbours == "add_remove" else 2)
    real *= factor
    guess = int(math.sqrt(_MAX_SIGMA2 * rho / real))
    low, high = max(1, int(guess * 0.97)), min(MAX_SCALE, int(guess * 1.03) + 1)
    if low < high and fits(bound(low), rho) is not None:
        lo = low
        if fits(bound(high), rho) is None:
            hi = high - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(bound(mid), rho) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo
