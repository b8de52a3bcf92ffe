"""The public design of the row-scaled buffered Toeplitz counter (:mod:`treedp.continual.blt`).

Everything here depends on the horizon ``T`` (and the lattice scale) only, never on data:

- the decays ``λ_i = p_i/2**Q`` and integer weights ``A_i`` (``α_i = A_i/2**W``) of the
  sum of exponentials ``a_k = Σ_i α_i λ_i**k`` fitted to the square root's coefficients
  ``c_k = binom(2k, k)/4**k`` (:func:`fit`: a geometric grid of ``1 − λ`` from ``1/(4T)`` to
  0.9, ``α >= 0`` by non-negative least squares on the relative error at about 2 000 lags);
- the row multipliers ``e_t = m_t/2**R`` (:func:`row_integers`): ``sqrt_rows``' construction
  with ``a²`` in place of ``c²``, so every column of ``diag(e)·Toep(a)`` has about the same norm;
- the exact per-step variances per unit noise variance (:func:`unit_variances`, by FFT) and a
  rigorous upper bound on the largest squared column norm (:func:`column_bound`).
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy.optimize import nnls

from treedp.estimation.toeplitz import _fft_size, fft_error_factor, series_inverse

__all__ = [
    "FRACTION_BITS",
    "GRID",
    "U_EXACT",
    "Q",
    "R",
    "W",
    "base_column_bound",
    "column_bound",
    "decoder_taps",
    "encoder_taps",
    "fit",
    "row_integers",
    "rows_digest",
    "unit_variances",
]

#: Decays are ``p/2**Q``.
Q = 24
#: Fraction bits of the buffers (``Q + FRACTION_BITS <= 61`` keeps the limb update in int64).
FRACTION_BITS = 36
#: Weights are ``A/2**W``.
W = 40
#: Row multipliers are ``m/2**R``, ``1 <= m <= 2**R``.
R = 16
#: The number of decays on the fitting grid (those that get a zero weight are dropped).
GRID = 20
#: ``u`` is a series inverse up to this distance from the end (then continued, see
#: :func:`row_integers`).
U_EXACT = 2**16
#: Float lags fitted beyond the first 64.
_LAGS = 2000
#: Relative margin on the float squared coefficients ``h_k²`` (``λ**k`` within ``2·10**-13``,
#: see :func:`encoder_taps`; products and sums of at most 64 terms: below ``2**-46``).
_COEF_MARGIN = 1e-9


def _sqrt_coefficients(horizon: int) -> np.ndarray:
    k = np.arange(1, horizon, dtype=np.float64)
    return np.concatenate([[1.0], np.cumprod((2 * k - 1) / (2 * k))])


@lru_cache(maxsize=8)
def fit(horizon: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(p, A)``: decays ``p_i/2**Q``, weights ``A_i/2**W ∈ [2**-W, 2]`` (positive ints)."""
    c = _sqrt_coefficients(horizon)
    gaps = np.geomspace(1.0 / (4 * horizon), 0.9, GRID)
    p = np.unique(np.clip(2**Q - np.rint(gaps * 2**Q), 1, 2**Q - 1).astype(np.int64))
    lam = p.astype(np.float64) / 2**Q
    dense = np.rint(np.geomspace(1, max(horizon - 1, 1), _LAGS)).astype(np.int64)
    lags = np.unique(np.concatenate([np.arange(min(horizon, 64)), dense[dense < horizon]]))
    x = lam[None, :] ** lags[:, None].astype(np.float64) / c[lags][:, None]
    alpha, _ = nnls(x, np.ones(lags.size), maxiter=50 * GRID)
    weights = np.rint(np.minimum(alpha, 2.0) * 2**W).astype(np.int64)
    keep = weights > 0
    return tuple(int(v) for v in p[keep]), tuple(int(v) for v in weights[keep])


def encoder_taps(
    horizon: int, p: tuple[int, ...], a: tuple[int, ...], scale_bits: int
) -> np.ndarray:
    """``h_k = 2**S·Σ_i (A_i/2**W)·λ_i**k``, ``k < T`` (floats, read-only): the ``S = 0`` taps
    times ``2**S`` (exact in floats)."""
    base = _base_taps(horizon, p, a)
    if scale_bits == 0:
        return base
    out = base * 2.0**scale_bits
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def _base_taps(horizon: int, p: tuple[int, ...], a: tuple[int, ...]) -> np.ndarray:
    """The taps at ``S = 0``. ``λ**k`` as ``exp(k·ln λ)``: relative error below
    ``|k·ln λ|·2**-52`` plus a few ulps (at most ``750·2**-52 < 2·10**-13`` before the term
    underflows to 0, an absolute error below ``10**-300``), well inside ``_COEF_MARGIN``."""
    lam = np.asarray(p, dtype=np.float64) / 2**Q
    alpha = np.asarray(a, dtype=np.float64) * 2.0**-W
    k = np.arange(horizon, dtype=np.float64)
    out = np.zeros(horizon)
    for li, ai in zip(lam, alpha, strict=True):
        out += ai * np.exp(k * math.log(li))
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def row_integers(horizon: int, p: tuple[int, ...], a: tuple[int, ...]) -> np.ndarray:
    """``m_t`` (int64, read-only, ``1..2**R``): ``e_t = m_t/2**R = sqrt(u_t/max u)`` rounded,
    ``u(k)`` (``k`` the distance from the last row) the cumulative sum of the power-series
    inverse of ``a²`` up to :data:`U_EXACT` (positive: ``a²`` is a sum of exponentials with
    positive weights, so log-convex, as in ``sqrt_rows``) and continued by
    ``u(k) ∝ 1/Σ_{j<=k} a_j²`` beyond. Any positive integers are private; the variances are
    those of the integers used."""
    h2 = np.asarray(_base_taps(horizon, p, a)) ** 2
    k0 = min(horizon, U_EXACT)
    u = np.cumsum(series_inverse(h2[:k0]))
    if horizon > k0:
        s = np.cumsum(h2)
        u = np.concatenate([u, u[-1] * s[k0 - 1] / s[k0:]])
    u = np.maximum(u[::-1], u.max() * 2.0 ** (-2 * R))
    m = np.asarray(np.clip(np.rint(2**R * np.sqrt(u / u.max())), 1, 2**R), dtype=np.int64)
    m.setflags(write=False)
    return m


def rows_digest(m: np.ndarray) -> str:
    """SHA-256 of the row integers (a machine computing other ones refuses to resume)."""
    return hashlib.sha256(np.ascontiguousarray(m, dtype="<i8").tobytes()).hexdigest()


def decoder_taps(h: np.ndarray) -> np.ndarray:
    """``g``: the coefficients of ``1/((1 − x)·h(x))`` (cumulative sum of the inverse)."""
    return np.asarray(np.cumsum(series_inverse(h)))


def _fft_corr(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``out[j] = Σ_t a_t b_{j+t}`` for ``j < n`` (float FFT)."""
    n = a.size
    size = _fft_size(n)
    fa = np.fft.rfft(a[::-1], size)
    return np.asarray(np.fft.irfft(fa * np.fft.rfft(b, size), size)[n - 1 : 2 * n - 1])


def column_bound(h: np.ndarray, m: np.ndarray) -> Fraction:
    """A rigorous upper bound on ``max_j Σ_{t>=j} e_t²·h_{t−j}²`` (the largest squared column
    norm of ``diag(e)·Toep(h)``).

    The float FFT correlation is within ``κ‖h²‖₂‖e²‖₂`` of the exact correlation of the float
    inputs everywhere (Percival 2003, Thm 5.1; ``κ`` =
    :func:`treedp.estimation.toeplitz.fft_error_factor`, itself with a margin of 4); ``e² =
    m²/2**(2R)`` is exact in float64 and the float ``h_k²`` are within a relative
    ``_COEF_MARGIN`` of the exact ones, all terms non-negative.
    """
    h2 = h * h
    e2 = (m.astype(np.float64) / 2**R) ** 2
    corr = _fft_corr(h2, e2)
    slack = fft_error_factor(_fft_size(h.size)) * math.sqrt(float(h2 @ h2) * float(e2 @ e2))
    top = (float(corr.max()) + 2.0 * slack) * (1.0 + 2 * _COEF_MARGIN)
    return Fraction(top)


def unit_variances(
    horizon: int, p: tuple[int, ...], a: tuple[int, ...], scale_bits: int
) -> np.ndarray:
    """``Σ_{i<=t} g_{t−i}²/e_i²`` for ``t = 1..T`` (``Var(t)`` per unit noise variance): the
    ``S = 0`` values times ``2**(−2S)`` (``g`` scales by ``2**−S``; exact in floats)."""
    base = _unit_base(horizon, p, a)
    if scale_bits == 0:
        return base
    out = base * 2.0 ** (-2 * scale_bits)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def _unit_base(horizon: int, p: tuple[int, ...], a: tuple[int, ...]) -> np.ndarray:
    """The unit variances at ``S = 0``: one FFT convolution of ``g²`` with ``1/e²``."""
    g = decoder_taps(_base_taps(horizon, p, a))
    inv_e2 = (2.0**R / row_integers(horizon, p, a).astype(np.float64)) ** 2
    size = _fft_size(horizon)
    out = np.fft.irfft(np.fft.rfft(g * g, size) * np.fft.rfft(inv_e2, size), size)[:horizon]
    out = np.asarray(np.maximum(out, 0.0))
    out.setflags(write=False)
    return out


@lru_cache(maxsize=8)
def base_column_bound(horizon: int, p: tuple[int, ...], a: tuple[int, ...]) -> Fraction:
    """:func:`column_bound` at ``S = 0``; at scale ``2**S`` the columns scale by ``2**S``
    exactly, so their largest squared norm is bounded by this times ``2**(2S)``."""
    return column_bound(_base_taps(horizon, p, a), row_integers(horizon, p, a))
