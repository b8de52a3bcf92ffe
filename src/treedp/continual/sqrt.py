"""The square-root (Toeplitz) factorisation, streamed, under zCDP (Henzinger, Upadhyay &
Upadhyay 2023; Fichtenberger, Henzinger & Upadhyay 2023).

Guarantee
---------
The prefix-sum matrix ``A`` (``T x T``, ones on and below the diagonal) is ``C·C`` with ``C``
lower-triangular Toeplitz, ``c_j = binom(2j, j)/4**j``. On the integer lattice of scale ``s``
the released vector is ``y = Ĉx + z``, ``ĉ_j = round(s·c_j)`` (integers, ``ĉ_0 = s``), ``z``
exact discrete Gaussian noise of variance parameter ``σ²``; step ``t`` releases ``y_t``, which
needs only steps ``<= t``. The running counts are ``A·Ĉ⁻¹·y`` (``Ĉ`` is invertible: a
lower-triangular Toeplitz matrix with ``ĉ_0 = s > 0``, its inverse again Toeplitz), computed
from ``y`` alone: post-processing, and ``A·Ĉ⁻¹·y = Ax + A·Ĉ⁻¹·z`` is unbiased.

Neighbour relation: one record added or removed anywhere in the stream (any step, any bin).
Privacy unit: one record (``max_contributions=m``: at most ``m`` records over the stream).

Sensitivity derivation: a record at step ``i`` moves ``x_i`` by 1, so ``y`` by column ``i`` of
``Ĉ``: ``Σ_{j < T-i} ĉ_j²``, largest at ``i = 0``: ``Δ2² = Σ_{j<T} ĉ_j²`` (exact integer).
``m`` records move ``y`` by at most ``m`` columns, ``||·||_2 <= m·max_i ||Ĉe_i||``, so
``Δ2² <= m²·Σ_{j<T} ĉ_j²``; each bin is its own stream and a record is in one bin. The release
is ``Δ2²/(2σ²)``-zCDP (CKS20, Thm 14).

Variance: ``Var(t) = Var(Z)·Σ_{j<t} g_j²`` with ``g`` the first column of ``A·Ĉ⁻¹``
(``g = cumsum(ĉ⁻¹)``, the power-series inverse), exact up to float rounding of ``g``.
State: every step's count and ``y`` so far, ``2·T`` integers per bin.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from treedp.estimation.toeplitz import series_inverse
from treedp.noise.families import DiscreteGaussian
from treedp.noise.rng import RandomSource

__all__ = ["SCALE", "SqrtCounter", "lattice", "lattice_sensitivity"]

#: The lattice scale ``s`` (``ĉ_0 = s``): rounding then moves the variance by < 1e-6.
SCALE = 2**12


@lru_cache(maxsize=8)
def _coefficients(horizon: int) -> np.ndarray:
    j = np.arange(1, horizon, dtype=np.float64)
    return np.concatenate([[1.0], np.cumprod((2 * j - 1) / (2 * j))])


def lattice(horizon: int, scale: int = SCALE) -> np.ndarray:
    """``ĉ_j = round(s·c_j)``, ``j < T`` (int64)."""
    return np.asarray(np.rint(scale * _coefficients(horizon)), dtype=np.int64)


def lattice_sensitivity(horizon: int, contributions: int = 1, scale: int = SCALE) -> int:
    """``Δ2² = m²·Σ_{j<T} ĉ_j²``, an exact integer (see the module docstring)."""
    c = lattice(horizon, scale)
    return contributions**2 * sum(int(v) * int(v) for v in c)


@lru_cache(maxsize=8)
def _decoder(horizon: int, scale: int) -> np.ndarray:
    """``g``: the first column of ``A·Ĉ⁻¹``."""
    return np.cumsum(series_inverse(lattice(horizon, scale).astype(np.float64)))


@dataclass(frozen=True)
class SqrtCounter:
    """The streamed square-root factorisation (see the module docstring).

    Attributes
    ----------
    horizon : int
        Steps ``T``.
    sigma2 : Fraction
        The discrete Gaussian's exact variance parameter.
    contributions : int
        ``m``, the records one privacy unit may add over the stream.
    scale : int
        The lattice scale ``s``.
    """

    horizon: int
    sigma2: Fraction
    contributions: int = 1
    scale: int = SCALE

    name = "sqrt"
    noise = "gaussian"

    @classmethod
    def for_budget(cls, horizon: int, rho: float, contributions: int) -> SqrtCounter:
        """The counter whose exact loss is at most ``rho``."""
        fam = DiscreteGaussian.for_budget(lattice_sensitivity(horizon, contributions), rho)
        return cls(horizon, fam.sigma2, contributions)

    def sensitivity(self) -> dict[str, Any]:
        """``Δ2²`` of the released vector, as data."""
        return {"l2_squared": lattice_sensitivity(self.horizon, self.contributions, self.scale)}

    def loss(self) -> Fraction:
        """The exact ρ: ``Δ2²/(2σ²)``."""
        return DiscreteGaussian(self.sigma2).loss(0, self.sensitivity()["l2_squared"])

    def variances(self, t: np.ndarray) -> np.ndarray:
        """``Var(t) = Var(Z)·Σ_{j<t} g_j²`` for the steps ``t`` (1-based)."""
        g2 = np.cumsum(_decoder(self.horizon, self.scale) ** 2)
        var_z = DiscreteGaussian(self.sigma2).variance()
        return np.asarray(var_z * g2[np.asarray(t, dtype=np.int64) - 1], dtype=np.float64)

    def initial_state(self, n_bins: int, source: RandomSource) -> dict[str, Any]:
        """Empty histories (``z_t`` is drawn at step ``t``, before ``y_t`` is formed)."""
        shape = (self.horizon, n_bins)
        return {"x": np.zeros(shape, dtype=np.int64), "y": np.zeros(shape, dtype=np.int64)}

    def step(
        self, state: dict[str, Any], t: int, counts: np.ndarray, source: RandomSource
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Feed step ``t``'s counts; the state (row ``t`` written in place: a step cannot fail
        once its checks passed) and ``(A·Ĉ⁻¹·y)_t`` per bin."""
        x, y = state["x"], state["y"]
        x[t - 1] = counts
        c = lattice(self.horizon, self.scale)[:t][::-1]
        z = DiscreteGaussian(self.sigma2).sample(counts.size, source)
        y[t - 1] = c @ x[:t] + z
        g = _decoder(self.horizon, self.scale)[:t][::-1]
        return {"x": x, "y": y}, np.asarray(g @ y[:t], dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        """The public parameters, exactly."""
        return {
            "name": self.name,
            "horizon": self.horizon,
            "sigma2": str(self.sigma2),
            "contributions": self.contributions,
            "scale": self.scale,
        }

    @classmethod
    def from_description(cls, d: dict[str, Any]) -> SqrtCounter:
        """The counter :meth:`describe` wrote."""
        return cls(
            int(d["horizon"]), Fraction(d["sigma2"]), int(d["contributions"]), int(d["scale"])
        )
