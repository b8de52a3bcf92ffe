"""A row-scaled buffered linear Toeplitz (BLT) counter, streamed with a small state, zCDP.

Guarantee
---------
The encoder is ``diag(e)·Toep(h)``, ``h_k = 2**S·Σ_i α_i λ_i**k`` a sum of ``d`` exponentials
(``α_i = A_i/2**W > 0``, ``λ_i = p_i/2**Q ∈ (0, 1)``) fitted to the square root's
coefficients, ``e_t = m_t/2**R ∈ (0, 1]`` public row multipliers
(:mod:`treedp.continual.blt_design`; all from ``T`` only). ``h`` is kept exactly in fixed point
with ``F`` fraction bits: per bin and buffer the integer ``V_i(t) = floor(p_i·V_i(t−1)/2**Q) +
x_t·2**F`` (int64 limbs ``V = hi·2**F + lo``, :func:`_advance`), and step ``t`` releases

    ``y_t = floor((m_t·Σ_i A_i·V_i(t) + 2**(P−1)) / 2**P) + Z_t``,  ``P = F + R + W − S``,

``Z_t`` exact discrete Gaussian noise (variance parameter ``σ²``), in exact integer arithmetic
(base-``2**20`` digits vectorised over bins, :mod:`treedp.continual.blt_digits`).

Fixed-point deviation: with ``u_i(t) = Σ_{j<=t} λ_i**(t−j)·x_j``, ``D_i(t) = 2**F·u_i(t) −
V_i(t)`` obeys ``D_i(t) = λ_i·D_i(t−1) + φ`` with ``φ ∈ [0, 1)`` the dropped fraction, so
``0 <= D_i(t) < 1/(1 − λ_i)``. Hence ``y_t − Z_t = e_t·(h*x)_t + r_t`` with
``|r_t| <= E_t = 1/2 + e_t·K``, ``K = 2**S·Σ_i α_i/(2**F·(1 − λ_i))`` (``1/2`` the final
rounding), a public exact rational for every ``t``.

Neighbour relation: one record added or removed anywhere in the stream (any step, any bin).
Privacy unit: one record (``max_contributions=k``: one person with at most ``k`` records over
the stream).

Sensitivity derivation: for neighbours ``x, x'`` (``d = x − x'`` with ``|d|₁ <= k``, all of one
sign) in one bin, ``y − y' = e∘Toep(h)·d + (r(x) − r(x'))``, so
``‖y − y'‖₂ <= k·√N + ‖r(x)‖₂ + ‖r(x')‖₂ <= k·√N + 2·√(Σ_t E_t²)`` with
``N = max_j Σ_{t>=j} e_t²·h_{t−j}²`` the largest squared column norm (triangle inequality over
the ``k`` columns). The ``r`` terms depend on the data through the floors and roundings, which is
why they enter twice. ``k`` records touch at most ``k`` bins (``k_b`` records in bin ``b``), so
over all bins ``‖Δy‖₂² <= Σ_b (k_b·√N + 2√S_E)² <= k²·(√N + 2√S_E)²``. The stated
``Δ2² = k²·(N⁺ + 4·(isqrt(N⁺·S⁺) + 1) + 4·S⁺)`` is an integer upper bound of that, with
``N⁺ >= N`` a rigorous float-FFT bound (:func:`treedp.continual.blt_design.column_bound`, at
``S = 0`` times ``2**(2S)``: the columns scale exactly) and
``S⁺ = ceil(Σ_t E_t²)`` exact; ``y − y'`` is an integer vector, so the release is
``Δ2²/(2σ²)``-zCDP (CKS20, Thm 14). At ``S = 24`` the rounding term is ``2·√S_E`` against
``√N⁺ ≈ 2**24`` (``2**24·(0.9998..1.0011)`` for ``T = 2**4..2**20``, measured): ``2·10**-6``
of ``Δ`` at ``T = 2**10``, ``10**-4`` at ``2**20`` (``K`` grows from 0.02 to 0.77).

Decoder (post-processing of ``y``, floats): ``v = Toep(h)⁻¹(y/e)`` by inverting the encoder's
recursion online (``v_t = (w_t − Σ_i 2**S·α_i·λ_i·B_i(t−1))/h_0``, ``B_i(t) = λ_i·B_i(t−1) +
v_t``; the roots of ``h`` lie outside the closed unit disc since ``Re h(x) > 0`` there, so the
recursion is stable), answer ``Σ_{j<=t} v_j = S_t + (G(Z + r)/e)_t`` with ``G`` the Toeplitz
matrix of ``g = 1/((1 − x)h(x))``: unbiased up to the public bounded ``r``
(``|bias_t| <= Σ_i |g_{t−i}|·E_i/e_i``: at most ``7·10**-7`` of the standard deviation at
``T = 2**10``, ``3·10**-5`` at ``2**20``, measured).

Variance: ``Var(t) = Var(Z)·Σ_{i<=t} g_{t−i}²/e_i²``, one FFT convolution (``O(T log T)``).
State per bin: ``d`` buffers as two int64 limbs and ``d`` float decoder buffers and the running
sum: ``3d + 1`` numbers (``d <= 20``). ``hi <= Σ_j x_j <= 2**62`` by the public step cap
:func:`treedp.continual.stream.count_limit`, so nothing wraps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from treedp.continual.blt_design import (
    FRACTION_BITS,
    Q,
    R,
    W,
    base_column_bound,
    fit,
    row_integers,
    rows_digest,
    unit_variances,
)
from treedp.continual.blt_digits import release_digits, to_floats, to_ints
from treedp.exceptions import InvalidParameterError
from treedp.noise.families import DiscreteGaussian
from treedp.noise.rng import RandomSource

__all__ = ["BLT_LIMIT", "SCALE_BITS", "BltCounter", "blt_sensitivity", "deviation_bound"]

#: Largest horizon (planning costs a few power-series inverses of length ``T``).
BLT_LIMIT = 2**20
#: The lattice scale ``2**S`` starts here (lowered while the sampler's range needs it).
SCALE_BITS = 24


def deviation_bound(p: tuple[int, ...], a: tuple[int, ...], scale_bits: int) -> Fraction:
    """``K = 2**S·Σ_i (A_i/2**W)·2**Q/(2**F·(2**Q − p_i))``: ``E_t = 1/2 + e_t·K``."""
    total = sum(Fraction(ai * 2**Q, 2**Q - pi) for pi, ai in zip(p, a, strict=True))
    return total * Fraction(2**scale_bits, 2 ** (W + FRACTION_BITS))


@lru_cache(maxsize=16)
def blt_sensitivity(
    horizon: int, p: tuple[int, ...], a: tuple[int, ...], scale_bits: int, contributions: int
) -> int:
    """``Δ2²`` (see the module docstring): an integer upper bound, rounding term included."""
    m = row_integers(horizon, p, a)
    n_plus = base_column_bound(horizon, p, a) * (1 << (2 * scale_bits))
    k = deviation_bound(p, a, scale_bits)
    sum_m = int(m.sum())
    sum_m2 = int((m * m).sum())  # m <= 2**16: below 2**52, exact in int64
    # Σ_t (1/2 + e_t K)² = T/4 + K·Σe + K²·Σe², e_t = m_t/2**R
    s_e = Fraction(horizon, 4) + k * Fraction(sum_m, 2**R) + k * k * Fraction(sum_m2, 2 ** (2 * R))
    n_int = -(-n_plus.numerator // n_plus.denominator)
    s_int = -(-s_e.numerator // s_e.denominator)
    cross = math.isqrt(n_int * s_int) + 1
    return contributions**2 * (n_int + 4 * cross + 4 * s_int)


def _advance(
    hi: np.ndarray, lo: np.ndarray, p: np.ndarray, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``V' = floor(p·V/2**Q) + x·2**F`` on limbs ``V = hi·2**F + lo`` (``0 <= lo < 2**F``),
    exactly in int64: with ``hi = h1·2**Q + h0``, ``floor(p·V/2**Q) = p·h1·2**F + M``,
    ``M = p·h0·2**(F−Q) + floor(p·lo/2**Q) < 2**(Q+F) + 2**F < 2**61``."""
    h1, h0 = hi >> Q, hi & (2**Q - 1)
    mid = p * h0 * 2 ** (FRACTION_BITS - Q) + ((p * lo) >> Q)
    new_hi = p * h1 + (mid >> FRACTION_BITS) + x[None, :]
    return new_hi, mid & (2**FRACTION_BITS - 1)


@dataclass(frozen=True)
class BltCounter:
    """The streamed row-scaled BLT counter (see the module docstring).

    Attributes
    ----------
    horizon : int
        Steps ``T``.
    sigma2 : Fraction
        The discrete Gaussian's exact variance parameter.
    decays : tuple of int
        ``p_i`` (``λ_i = p_i/2**Q``).
    weights : tuple of int
        ``A_i`` (``α_i = A_i/2**W``).
    scale_bits : int
        ``S``: the lattice scale ``2**S``.
    contributions : int
        ``k``, the records one privacy unit may add over the stream.
    """

    horizon: int
    sigma2: Fraction
    decays: tuple[int, ...]
    weights: tuple[int, ...]
    scale_bits: int = SCALE_BITS
    contributions: int = 1

    name = "blt"
    noise = "gaussian"

    def __post_init__(self) -> None:
        if not self.decays or len(self.decays) != len(self.weights) or len(self.decays) >= 64:
            raise ValueError("blt: decays and weights must have one length in 1..63")
        if any(not 0 < p < 2**Q for p in self.decays) or any(
            w <= 0 or w >= 2**42 for w in self.weights
        ):
            raise ValueError("blt: a decay or weight is out of range")
        if not 0 <= self.scale_bits <= SCALE_BITS:
            raise ValueError("blt: scale out of range")

    @classmethod
    def for_budget(cls, horizon: int, rho: float, contributions: int) -> BltCounter:
        """The counter whose exact loss is at most ``rho`` (the largest scale ``2**S <= 2**24``
        the exact sampler allows)."""
        p, a = fit(horizon)
        bits = SCALE_BITS
        while True:
            l2 = blt_sensitivity(horizon, p, a, bits, contributions)
            try:
                fam = DiscreteGaussian.for_budget(l2, rho)
                return cls(horizon, fam.sigma2, p, a, bits, contributions)
            except InvalidParameterError:
                if bits == 0:
                    raise
                bits -= 1

    def _m(self) -> np.ndarray:
        return row_integers(self.horizon, self.decays, self.weights)

    def sensitivity(self) -> dict[str, Any]:
        """``Δ2²`` of the released vector (rounding term included), as data."""
        l2 = blt_sensitivity(
            self.horizon, self.decays, self.weights, self.scale_bits, self.contributions
        )
        return {"l2_squared": l2}

    def loss(self) -> Fraction:
        """The exact ρ: ``Δ2²/(2σ²)``."""
        return DiscreteGaussian(self.sigma2).loss(0, self.sensitivity()["l2_squared"])

    def variances(self, t: np.ndarray) -> np.ndarray:
        """``Var(t) = Var(Z)·Σ_{i<=t} g_{t−i}²/e_i²`` for the steps ``t`` (1-based)."""
        unit = unit_variances(self.horizon, self.decays, self.weights, self.scale_bits)
        var_z = DiscreteGaussian(self.sigma2).variance()
        return np.asarray(var_z * unit[np.asarray(t, dtype=np.int64) - 1], dtype=np.float64)

    def state_shapes(self, n_bins: int) -> dict[str, tuple[int, ...]]:
        """The shapes of the state's arrays (a loaded state is checked against them)."""
        d = len(self.decays)
        return {"hi": (d, n_bins), "lo": (d, n_bins), "dec": (d, n_bins), "sum": (n_bins,)}

    def initial_state(self, n_bins: int, source: RandomSource) -> dict[str, Any]:
        """Empty buffers (``Z_t`` is drawn at step ``t``)."""
        d = len(self.decays)
        return {
            "hi": np.zeros((d, n_bins), dtype=np.int64),
            "lo": np.zeros((d, n_bins), dtype=np.int64),
            "dec": np.zeros((d, n_bins), dtype=np.float64),
            "sum": np.zeros(n_bins, dtype=np.float64),
        }

    def encode(
        self, state: dict[str, Any], t: int, counts: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """The new buffer limbs and ``round(m_t·Σ_i A_i·V_i(t)/2**P)`` per bin (no noise; exact
        Python ints; round half up): the release of :meth:`step` without its noise."""
        hi, lo, digits = self._release(state, t, counts, np.zeros(counts.size, dtype=np.int64))
        return hi, lo, to_ints(digits)

    def _release(
        self, state: dict[str, Any], t: int, counts: np.ndarray, z: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The new limbs and ``y_t`` (digits, :mod:`treedp.continual.blt_digits`)."""
        p = np.asarray(self.decays, dtype=np.int64)[:, None]
        hi, lo = _advance(state["hi"], state["lo"], p, np.asarray(counts, dtype=np.int64))
        shift = FRACTION_BITS + R + W - self.scale_bits
        a = np.asarray(self.weights, dtype=np.int64)
        return hi, lo, release_digits(a, hi, lo, int(self._m()[t - 1]), shift, z)

    def step(
        self, state: dict[str, Any], t: int, counts: np.ndarray, source: RandomSource
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Feed step ``t``'s counts; the new state and the running estimate per bin: ``y_t``
        exactly (noise included), then its float divided by ``e_t``."""
        z = DiscreteGaussian(self.sigma2).sample(counts.size, source)
        hi, lo, digits = self._release(state, t, counts, z)
        w = to_floats(digits) * (2.0**R / float(self._m()[t - 1]))
        dec, total = self.decode(state["dec"], state["sum"], w)
        return {"hi": hi, "lo": lo, "dec": dec, "sum": total}, total

    def decode(
        self, dec: np.ndarray, total: np.ndarray, w: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """One step of the decoder (floats): ``v = (w − Σ_i β_i λ_i B_i)/h_0``, ``B ← λB + v``,
        the running sum ``+ v``; ``w = y_t/e_t`` per bin, ``β_i = 2**S·α_i``."""
        lam = np.asarray(self.decays, dtype=np.float64)[:, None] / 2**Q
        beta = np.asarray(self.weights, dtype=np.float64)[:, None] * 2.0 ** (self.scale_bits - W)
        v = (w - (beta * lam * dec).sum(axis=0)) / float(beta.sum())
        return lam * dec + v[None, :], np.asarray(total + v)

    def describe(self) -> dict[str, Any]:
        """The public parameters, exactly (and the row integers' SHA-256)."""
        return {
            "name": self.name,
            "horizon": self.horizon,
            "sigma2": str(self.sigma2),
            "decays": list(self.decays),
            "weights": list(self.weights),
            "scale_bits": self.scale_bits,
            "contributions": self.contributions,
            "constants": [Q, FRACTION_BITS, W, R],
            "rows_sha256": rows_digest(self._m()),
        }

    @classmethod
    def from_description(cls, d: dict[str, Any]) -> BltCounter:
        """The counter :meth:`describe` wrote; refused (``ValueError``) when this machine
        computes other row integers or the constants differ (the encoder would change)."""
        counter = cls(
            int(d["horizon"]),
            Fraction(d["sigma2"]),
            tuple(int(v) for v in d["decays"]),
            tuple(int(v) for v in d["weights"]),
            int(d["scale_bits"]),
            int(d["contributions"]),
        )
        if list(d["constants"]) != [Q, FRACTION_BITS, W, R]:
            raise ValueError("blt: other fixed-point constants")
        if rows_digest(counter._m()) != d["rows_sha256"]:
            raise ValueError("blt: the row multipliers differ on this machine")
        return counter
