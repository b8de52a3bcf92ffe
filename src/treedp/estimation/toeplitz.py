"""Lower-triangular Toeplitz algebra for the square-root factorisation, by FFT.

A lower-triangular Toeplitz ``B × B`` matrix is its first column ``a`` (``A[i, j] = a[i - j]``
for ``i >= j``); products and inverses of such matrices are again lower-triangular Toeplitz and
correspond to products and inverses of power series truncated at degree ``B``. Everything here is
``O(B log B)``:

* :func:`exact_convolve` — ``(A x)`` for non-negative integer ``a`` and ``x``, *exactly* (the
  released integers of :mod:`treedp.mechanisms.sqrt_factorization` depend on it);
* :func:`series_inverse` — the first column of ``A^{-1}`` (Newton's iteration, floats: it only
  serves estimation, which is post-processing);
* :class:`ToeplitzPrefixCovariance` — the exact covariances of prefix estimates
  ``P̂ = G y`` with ``G`` lower-triangular Toeplitz and ``y`` carrying i.i.d. noise of variance
  ``v``, optionally conditioned on a public total (``replace``);
* :class:`ScaledToeplitzCovariance` — the same for ``P̂ = L Q H y`` with ``Q`` diagonal (a
  Toeplitz factor with scaled columns), exactly, in ``O(B²)`` time and ``O(B)`` memory.

Exactness of :func:`exact_convolve`. A floating-point FFT convolution of vectors ``u``, ``w`` of
length at most ``N/2`` with ``N = 2^k`` has every entry within
``‖u‖₂ ‖w‖₂ ((1+ε)^{3k} (1+ε√5)^{3k+1} (1+β)^{3k} − 1)`` of the exact result (Percival 2003,
Theorem 5.1; ``ε = 2^-53`` the unit round-off, ``β`` the error of the twiddle factors, taken as
``2^-50``); we require 4 times this bound (a margin for the real-input transform) to be below
``1/2``, so rounding to the nearest integer gives the exact value. ``a`` is fixed and public; ``x``
is split into limbs of ``w`` bits (``x = Σ_q 2^{qw} x_q``, ``0 <= x_q < 2^w``, so
``‖x_q‖₂ < 2^w √B``) with ``w`` chosen from public quantities only, and the number of limbs
follows from a public bound on the counts — the work done never depends on the data. The
results are also representable: by Cauchy–Schwarz every entry is at most
``Σ a · 2^w <= ‖a‖₂ √n 2^w < 2^51`` under the same condition (``κ >= 2^-53``), so the floats
hold the integers exactly. Each
limb's result is also checked against the exact identities ``z(1) = a(1)·x_q(1)`` and
``z(−1) = a(−1)·x_q(−1)`` (sums, in Python integers) before it is used.

References
----------
.. [Per03] C. Percival. "Rapid multiplication modulo the sum and difference of highly composite
   numbers". Mathematics of Computation 72 (2003), 387–395.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "DensePrefixCovariance",
    "LowRankCorrectedCovariance",
    "RowWeightedToeplitzCovariance",
    "ScaledToeplitzCovariance",
    "ToeplitzPrefixCovariance",
    "exact_convolve",
    "fft_error_factor",
    "limb_bits",
    "series_inverse",
    "toeplitz_apply",
]


def _fft_size(n: int) -> int:
    return 1 << max(1, (2 * n - 1).bit_length())


def fft_error_factor(size: int) -> float:
    """4 × Percival's relative bound for an FFT convolution of transform length ``size``."""
    k = max(1, size.bit_length() - 1)
    eps = 2.0**-53
    beta = 2.0**-50
    growth = (
        math.log1p(eps) * 3 * k
        + math.log1p(eps * math.sqrt(5)) * (3 * k + 1)
        + math.log1p(beta) * 3 * k
    )
    return 4.0 * math.expm1(growth)


def limb_bits(coef_norm: float, n: int) -> int:
    """The widest limb ``w`` (bits) with ``4κ ‖a‖₂ 2^w √n < 1/2`` (at least 1, at most 30)."""
    factor = fft_error_factor(_fft_size(n)) * coef_norm * math.sqrt(n)
    w = 30
    while w > 1 and factor * 2.0**w >= 0.5:
        w -= 1
    if factor * 2.0**w >= 0.5:
        raise ValueError("the coefficients are too large for an exact FFT convolution")
    return w


def exact_convolve(coef: np.ndarray, x: np.ndarray, max_bits: int) -> np.ndarray:
    """``(A x)[i] = Σ_{j<=i} a[i-j] x[j]`` exactly, as int64 (see the module docstring).

    ``coef`` (public) and ``x`` are non-negative int64 of length ``n``; ``max_bits``, a public
    bound on the bits of every ``x[j]``, fixes the number of limbs. The caller guarantees
    every entry of ``A x`` is below ``2**62`` (the checksums are exact Python integers).
    """
    n = coef.size
    size = _fft_size(n)
    a = np.asarray(coef, dtype=np.int64)
    w = limb_bits(float(np.sqrt(np.sum(a.astype(np.float64) ** 2))) * (1 + 1e-12), n)
    fa = np.fft.rfft(a.astype(np.float64), size)
    a_sum = int(a.sum())
    a_alt = int(a[0::2].sum()) - int(a[1::2].sum())
    out = np.zeros(n, dtype=np.int64)
    mask = (1 << w) - 1
    xi = np.asarray(x, dtype=np.int64)
    for q in range(max(1, -(-max_bits // w))):
        limb = (xi >> (q * w)) & mask
        full = np.rint(np.fft.irfft(fa * np.fft.rfft(limb.astype(np.float64), size), size))
        z = full[: 2 * n - 1].astype(np.int64)
        limb_sum = int(limb.sum())
        limb_alt = int(limb[0::2].sum()) - int(limb[1::2].sum())
        if _exact_sum(z) != a_sum * limb_sum or (
            _exact_sum(z[0::2]) - _exact_sum(z[1::2]) != a_alt * limb_alt
        ):
            raise ArithmeticError("the exact convolution failed its checksum")  # never expected
        out += z[:n] << (q * w)
    return out


def _exact_sum(z: np.ndarray) -> int:
    """``Σ z`` exactly for non-negative int64 entries below ``2**62`` (two int64 partial
    sums of 31-bit halves, which cannot overflow for fewer than ``2**32`` entries)."""
    high = int((z >> 31).sum())
    low = int((z & ((1 << 31) - 1)).sum())
    return (high << 31) + low


def toeplitz_apply(coef: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``(A y)`` in floating point, along the last axis of ``y`` (leading axes are batches)."""
    return _mul(np.asarray(coef, dtype=np.float64), np.asarray(y, dtype=np.float64), coef.size)


def _mul(a: np.ndarray, b: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` terms of the product of two series (along the last axis)."""
    size = _fft_size(n)
    fa, fb = np.fft.rfft(a[..., :n], size), np.fft.rfft(b[..., :n], size)
    return np.asarray(np.fft.irfft(fa * fb, size)[..., :n])


def series_inverse(coef: np.ndarray) -> np.ndarray:
    """The first column of ``A^{-1}`` (``a[0] != 0``), by Newton's iteration
    ``b ← b + b(1 − a b)``, doubling the precision in the degree each step (floats).

    With ``a b ≡ 1 (mod x^m)`` and ``n = 2m``, the residual ``1 − a b`` has no terms below
    ``x^m``, and its terms ``m..n−1`` are those of the *cyclic* product of ``a[:n]`` and ``b``
    of length ``n`` (the wrap-around only reaches degrees below ``m``); the correction
    ``b · (residual / x^m)`` has degree below ``2m − 1 < n``, again exact cyclically. So every
    transform has length ``n`` (not ``2n``): five FFTs per step, ``b``'s shared.
    """
    a = np.asarray(coef, dtype=np.float64)
    total = a.size
    b = np.array([1.0 / a[0]])
    m = 1
    while m < total:
        n = 2 * m
        head = a[:n] if a.size >= n else np.concatenate([a, np.zeros(n - a.size)])
        fb = np.fft.rfft(b, n)
        residual = -np.fft.irfft(np.fft.rfft(head, n) * fb, n)[m:n]
        step = np.fft.irfft(fb * np.fft.rfft(residual, n), n)[:m]
        b = np.concatenate([b, step])
        m = n
    return b[:total]


def _autocorrelation(g: np.ndarray) -> np.ndarray:
    """``r[d] = Σ_t g[t] g[t+d]`` for ``d = 0..len(g)-1`` (floats)."""
    size = _fft_size(g.size)
    f = np.fft.rfft(g, size)
    return np.asarray(np.fft.irfft(f * np.conj(f), size)[: g.size])


class ToeplitzPrefixCovariance:
    """``Cov(P̂[m1], P̂[m2])`` for ``P̂[m] = (G y)[m − 1]`` (``P̂[0] = 0``), ``G`` lower-triangular
    Toeplitz with first column ``g`` and i.i.d. noise of variance ``v`` on ``y``.

    For ``1 <= a <= b``: ``Cov = v Σ_{t<a} g[t] g[t + b − a]``, the autocorrelation of
    ``g[:b]`` at lag ``b − a`` (computed by dot products or, for many pairs sharing ``b``, one
    FFT). With ``known_total`` (``replace``: ``P[B] = n`` is public) the estimates are
    conditioned on it, ``P̃[m] = P̂[m] − k_m (P̂[B] − n)`` with ``k_m = Cov(m, B)/Var(B)``, so
    ``Cov(P̃[a], P̃[b]) = Cov(a, b) − Cov(a, B) Cov(b, B)/Var(B)``.
    """

    def __init__(self, g: np.ndarray, variance: float, known_total: bool) -> None:
        self.g = np.asarray(g, dtype=np.float64)
        self.n_bins = self.g.size
        self.variance = float(variance)
        self.known_total = known_total
        self._cum_sq = np.concatenate([[0.0], np.cumsum(self.g**2)])
        self._var_last = self.variance * self._cum_sq[-1]
        self._with_last_cache: np.ndarray | None = None

    @property
    def _with_last(self) -> np.ndarray:
        """``Cov(P̂[m], P̂[B])`` for ``m = 0..B``: the lag ``B − m`` autocorrelation of the whole
        of ``g`` (one FFT, computed on first use: the variances without a known total and the
        planner's scores do not need it)."""
        if self._with_last_cache is None:
            r = _autocorrelation(self.g)
            with_last = np.zeros(self.n_bins + 1)
            with_last[1:] = r[::-1]
            self._with_last_cache = self.variance * with_last
        return self._with_last_cache

    def gain(self) -> np.ndarray:
        """``k_m = Cov(P̂[m], P̂[B]) / Var(P̂[B])`` for ``m = 0..B`` (the conditioning weights)."""
        return np.asarray(self._with_last / self._var_last)

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P̃[m])`` in ``O(1)`` per entry."""
        m = np.asarray(m, dtype=np.int64)
        out = self.variance * self._cum_sq[m]
        if self.known_total:
            out = out - self._with_last[m] ** 2 / self._var_last
            out = np.where(m == self.n_bins, 0.0, np.maximum(out, 0.0))
        return np.asarray(out, dtype=np.float64)

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        a_in, b_in = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        shape = a_in.shape
        lo = np.minimum(a_in, b_in).ravel()
        hi = np.maximum(a_in, b_in).ravel()
        out = np.zeros(lo.shape)
        live = np.flatnonzero(lo > 0)
        if live.size:
            order = live[np.argsort(hi[live], kind="stable")]
            his = hi[order]
            cuts = np.flatnonzero(np.diff(his)) + 1
            for group in np.split(order, cuts):
                b = int(hi[group[0]])
                los = lo[group]
                if group.size * float(los.mean()) > 4.0 * b * max(1, b.bit_length()):
                    r = _autocorrelation(self.g[:b])
                    out[group] = r[b - los]
                else:
                    seg = self.g[:b]
                    out[group] = [float(seg[: int(a)] @ seg[b - int(a) : b]) for a in los]
            out *= self.variance
        if self.known_total:
            out = out - self._with_last[lo] * self._with_last[hi] / self._var_last
            out = np.where(hi == self.n_bins, 0.0, out)
        return out.reshape(shape)

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b=1..B} Cov(P̃[a], P̃[b])`` (for the mean range variance), exactly in O(B log B).

        ``Σ_a P̂[a] = Σ_k y_k · (Σ_{t < B−k} g[t])``, so the sum is ``v Σ_k cumsum(g)[B−1−k]²``;
        conditioning subtracts ``(Σ_a Cov(a, B))²/Var(B)``.
        """
        total = self.variance * float(np.sum(np.cumsum(self.g) ** 2))
        if self.known_total:
            total -= float(self._with_last[1:].sum()) ** 2 / self._var_last
        return total


class DensePrefixCovariance:
    """``Cov(P̂[m1], P̂[m2])`` from a dense ``B × B`` covariance of ``P̂[1..B]`` (``P̂[0] = 0``),
    for small ``B`` (the equalised factorisation's GLS estimate)."""

    def __init__(self, cov: np.ndarray) -> None:
        b = cov.shape[0]
        full = np.zeros((b + 1, b + 1))
        full[1:, 1:] = cov
        self.full = full
        self.n_bins = b

    def var(self, m: np.ndarray) -> np.ndarray:
        """The variances ``Var(P̂[m])``."""
        d = np.diagonal(self.full)
        result: np.ndarray = d[np.asarray(m, dtype=np.int64)]
        return result

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        result: np.ndarray = self.full[a, b]
        return result

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b} Cov(P̂[a], P̂[b])``."""
        return float(self.full.sum())


class LowRankCorrectedCovariance:
    """``Cov(a, b) = base.cov(a, b) − v · w_aᵀ K w_b`` with ``w_m`` the row ``m − 1`` of ``W``
    (``w_0 = 0``) and ``K`` symmetric: a Toeplitz estimator improved by a rank-``k`` update."""

    def __init__(
        self, base: ToeplitzPrefixCovariance, w: np.ndarray, core: np.ndarray, variance: float
    ) -> None:
        self.base = base
        self.n_bins = base.n_bins
        self.w = np.vstack([np.zeros((1, w.shape[1])), w])
        self.core = core
        self.variance = variance
        self._wk = self.w @ core

    def var(self, m: np.ndarray) -> np.ndarray:
        """The variances ``Var(P̂[m])``."""
        m = np.asarray(m, dtype=np.int64)
        corr = np.einsum("...k,...k->...", self._wk[m], self.w[m])
        return np.asarray(self.base.var(m) - self.variance * corr, dtype=np.float64)

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``."""
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        corr = np.einsum("...k,...k->...", self._wk[a], self.w[b])
        return np.asarray(self.base.cov(a, b) - self.variance * corr, dtype=np.float64)

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b} Cov(P̂[a], P̂[b])``."""
        s = self.w.sum(axis=0)
        return self.base.prefix_sum_covariance() - self.variance * float(s @ self.core @ s)


#: Pairs sharing a top from which :meth:`ScaledToeplitzCovariance.cov` computes the top's
#: whole column (one FFT) instead of each pair's two rows.
_TOP_GROUP = 8
#: Pairs at most this far apart come from the variance of the range between them.
_NEAR = 4


class ScaledToeplitzCovariance:
    """``Cov(P̂[a], P̂[b])`` for ``P̂[m] = (M y)[m − 1]``, ``M = L diag(q) H`` (``H`` lower-triangular
    Toeplitz with first column ``h``, ``L`` the prefix matrix) and i.i.d. noise of variance ``v``
    on ``y``: the estimator of a Toeplitz factor whose column ``j`` was multiplied by ``1/q_j``.

    ``M`` is not Toeplitz, but its column ``k`` is ``M[i, k] = Σ_{j=k..i} q_j h_{j−k}``, one
    cumulative sum, so every variance ``v Σ_k M[m − 1, k]²`` and the sum of all covariances
    ``v Σ_k (Σ_i M[i, k])²`` are exact sums over the ``B(B + 1)/2`` entries (``O(B²)`` time,
    ``O(B)`` memory, no approximation); a covariance ``v ⟨M[a − 1], M[b − 1]⟩`` computes the two
    rows (``M[i, k] = (H r)[i − k]`` with ``r`` the reversed ``q[:i + 1]``: one FFT product).
    ``weights`` (optional): the noise of ``y_k`` has variance ``v·weights_k`` instead (scaled
    rows and columns: ``weights = 1/e²``); every sum over ``k`` is weighted.
    """

    def __init__(
        self, h: np.ndarray, q: np.ndarray, variance: float, weights: np.ndarray | None = None
    ) -> None:
        self.h = np.asarray(h, dtype=np.float64)
        self.q = np.asarray(q, dtype=np.float64)
        self.n_bins = b = self.h.size
        self.variance = float(variance)
        self.w = np.ones(b) if weights is None else np.asarray(weights, dtype=np.float64)
        sq = np.zeros(b)
        col_sums = np.zeros(b)
        for k in range(b):
            column = np.cumsum(self.q[k:] * self.h[: b - k])
            sq[k:] += self.w[k] * column * column
            col_sums[k] = column.sum()
        self._var = self.variance * np.concatenate([[0.0], sq])
        self._sum_cov = self.variance * float(self.w @ (col_sums * col_sums))
        self._lag_cache: dict[int, np.ndarray] = {}

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P̂[m])`` (``P̂[0] = 0``)."""
        return np.asarray(self._var[np.asarray(m, dtype=np.int64)], dtype=np.float64)

    def rows(self, m: np.ndarray) -> np.ndarray:
        """The rows ``M[m − 1]`` (zeros for ``m = 0``), shaped ``(len(m), B)``."""
        m = np.asarray(m, dtype=np.int64).ravel()
        out = np.zeros((m.size, self.n_bins))
        for r, i in enumerate(m - 1):
            if i >= 0:
                row = toeplitz_apply(self.h[: i + 1], self.q[i::-1].copy())
                out[r, : i + 1] = row[::-1]
        return out

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``.

        Equal prefixes read the variances; ``P̂[0] = 0``. Prefixes ``d <=`` :data:`_NEAR`
        apart come from the range between them, ``P̂[s + d] − P̂[s] = Σ_{s <= j < s + d} q_j
        (H y)[j]``, whose variance is a few convolutions for all ``s``
        (:meth:`_near_cov`: a histogram's and a CDF bracket's intervals). A top shared by many
        pairs is one product, ``Cov(·, t) = v M (w ∘ M[t − 1])`` (an FFT and a cumulative
        sum: a quantile band's ``Cov(m, B)``). The rest compute the two rows, 128 pairs at a
        time (every pair so took 13 s for a 4096-bin release's ``to_arrays`` and over 100 s
        at 2^14).
        """
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        shape = a.shape
        lo, hi = np.minimum(a, b).ravel(), np.maximum(a, b).ravel()
        out = np.asarray(self.var(lo), dtype=np.float64).copy()
        out[(lo == 0) & (hi > 0)] = 0.0
        rest = np.flatnonzero((lo > 0) & (lo != hi))
        lags = hi[rest] - lo[rest]
        for d in np.unique(lags[lags <= _NEAR]).tolist():
            group = rest[lags == d]
            out[group] = self._near_cov(lo[group], d)
        rest = rest[lags > _NEAR]
        tops, counts = np.unique(hi[rest], return_counts=True)
        shared = tops[counts >= _TOP_GROUP]
        for top in shared.tolist():
            group = rest[hi[rest] == top]
            out[group] = self._column(top)[lo[group]]
        rest = rest[~np.isin(hi[rest], shared)]
        for start in range(0, rest.size, 128):
            sel = rest[start : start + 128]
            keys, index = np.unique(np.concatenate([lo[sel], hi[sel]]), return_inverse=True)
            rows = self.rows(keys)
            left, right = rows[index[: sel.size]], rows[index[sel.size :]]
            out[sel] = self.variance * np.einsum("ij,ij,j->i", left, right, self.w)
        return out.reshape(shape)

    def _lag_terms(self, e: int) -> np.ndarray:
        """``q_i q_{i+e} C(i, i + e)`` for ``i = 0..B−1−e``, with ``C(i, j) = Σ_k w_k h[i−k]
        h[j−k]`` the weighted inner product of rows ``i`` and ``j`` of ``H``: the convolution
        of ``h[t] h[t + e]`` with ``w``."""
        if e not in self._lag_cache:
            n = self.n_bins
            conv = _mul(self.h[: n - e] * self.h[e:], self.w, n - e)
            self._lag_cache[e] = self.q[: n - e] * self.q[e:] * conv
        return self._lag_cache[e]

    def _near_cov(self, s: np.ndarray, d: int) -> np.ndarray:
        """``Cov(P̂[s], P̂[s + d])`` for ``s >= 1``: ``(Var(s) + Var(s + d) − V)/2`` with ``V =
        v Σ_{s <= i, j < s + d} q_i q_j C(i, j)``, the variance of the range between them."""
        total = np.zeros(s.size)
        for e in range(d):
            cum = np.concatenate([[0.0], np.cumsum(self._lag_terms(e))])
            window = cum[s + d - e] - cum[s]  # i = s .. s + d − 1 − e
            total += window if e == 0 else 2.0 * window
        between = self.variance * total
        return np.asarray(0.5 * (self._var[s] + self._var[s + d] - between))

    def _column(self, top: int) -> np.ndarray:
        """``Cov(P̂[m], P̂[top])`` for ``m = 0..B``: ``v M (w ∘ M[top − 1])``."""
        z = self.rows(np.array([top]))[0] * self.w
        column = np.cumsum(self.q * toeplitz_apply(self.h, z))
        return np.asarray(self.variance * np.concatenate([[0.0], column]))

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b=1..B} Cov(P̂[a], P̂[b])`` (for the mean range variance)."""
        return self._sum_cov


class RowWeightedToeplitzCovariance:
    """``Cov(P̂[a], P̂[b])`` for ``P̂[m] = (G y)[m − 1]``, ``G`` lower-triangular Toeplitz with first
    column ``g``, and independent noise of variance ``v·w_i`` on ``y_i`` (scaled rows: the
    release ``e ∘ (Ĉ x) + Z`` divided by ``e``, ``w = 1/e²``).

    For ``1 <= a <= b``: ``Cov = v Σ_{i<a} g[a−1−i] g[b−1−i] w_i`` (a dot product);
    ``Var(P̂[m]) = v (g² * w)[m − 1]``, one FFT convolution for every ``m``; the sum of all
    covariances is ``v Σ_i w_i cumsum(g)[B−1−i]²``. Exact up to floating-point rounding.
    """

    def __init__(self, g: np.ndarray, weights: np.ndarray, variance: float) -> None:
        self.g = np.asarray(g, dtype=np.float64)
        self.w = np.asarray(weights, dtype=np.float64)
        self.n_bins = b = self.g.size
        self.variance = float(variance)
        var = np.maximum(_mul(self.g * self.g, self.w, b), 0.0)
        self._var = self.variance * np.concatenate([[0.0], var])
        tails = np.cumsum(self.g)[::-1]
        self._sum_cov = self.variance * float(np.sum(self.w * tails * tails))

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P̂[m])`` (``P̂[0] = 0``)."""
        return np.asarray(self._var[np.asarray(m, dtype=np.int64)], dtype=np.float64)

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariances, shaped like ``broadcast(m1, m2)``.

        Equal prefixes read the variances. Pairs ``s < t`` are grouped by the key fewer of
        them share, the lag ``d = t − s`` or the top ``t``; a large group is one convolution:
        ``Cov(s, s + d) = v ((g[:B−d] g[d:]) * w)[s − 1]`` and ``Cov(s, t) = v (g * u)[s − 1]``
        with ``u_i = g[t − 1 − i] w_i``; a small one a dot product per pair (a quantile band's
        ``Cov(m, B)`` for every ``m`` took one dot product each: minutes at 2^16 bins).
        """
        a, b = np.broadcast_arrays(np.asarray(m1, np.int64), np.asarray(m2, np.int64))
        lo, hi = np.minimum(a, b).ravel(), np.maximum(a, b).ravel()
        out = np.zeros(lo.size)
        rest = np.flatnonzero((lo > 0) & (lo != hi))
        if rest.size:
            by_lag = np.unique(hi[rest] - lo[rest]).size <= np.unique(hi[rest]).size
            keys = hi[rest] - lo[rest] if by_lag else hi[rest]
            order = rest[np.argsort(keys, kind="stable")]
            sorted_keys = keys[np.argsort(keys, kind="stable")]
            cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
            for group in np.split(order, cuts):
                out[group] = self._group_cov(lo[group], hi[group], by_lag)
        out = self.variance * out
        same = lo == hi
        out[same] = self._var[lo[same]]
        return out.reshape(a.shape)

    def _group_cov(self, s: np.ndarray, t: np.ndarray, by_lag: bool) -> np.ndarray:
        """``Cov/v`` of pairs ``s < t`` sharing their lag (``by_lag``) or their top."""
        n = self.n_bins
        if s.size * float(s.mean()) > 4.0 * n * max(1, n.bit_length()):
            if by_lag:
                d = int(t[0] - s[0])
                conv = _mul(self.g[: n - d] * self.g[d:], self.w, n - d)
            else:
                top = int(t[0])
                conv = _mul(self.g, self.g[top - 1 :: -1] * self.w[:top], top)
            return np.asarray(conv[s - 1])
        out = np.empty(s.size)
        for k, (lo, hi) in enumerate(zip(s.tolist(), t.tolist(), strict=True)):
            i = np.arange(lo)  # Σ_{i<lo} g[lo-1-i] g[hi-1-i] w[i]
            out[k] = float(np.sum(self.g[lo - 1 - i] * self.g[hi - 1 - i] * self.w[i]))
        return out

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b=1..B} Cov(P̂[a], P̂[b])`` (for the mean range variance)."""
        return self._sum_cov
