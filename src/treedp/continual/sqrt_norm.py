"""The square-root factorisation with every column scaled to (about) unit norm, streamed, zCDP.

Guarantee
---------
The released vector is ``y = Ĉ·D̃·x + z``: ``Ĉ`` the integer square-root lattice of
:mod:`treedp.continual.sqrt` (``ĉ_j = round(s·c_j)``), ``D̃ = diag(d_j)`` positive integers
``d_j = round(D·s/n̂_j)`` with ``n̂_j = ||Ĉe_j||`` (public: they depend on ``T`` only), so every
column of ``ĈD̃`` has norm about ``D·s`` instead of the first column's norm being the largest
by ``sqrt(1 + ln T/π)``. ``z`` is exact discrete Gaussian noise; ``y_t`` needs steps ``<= t``.
Running counts: ``u = Ĉ⁻¹y`` (Toeplitz, ``u_t = Σ_i h_{t-i} y_i``, ``h`` the power-series
inverse of ``ĉ``), then ``S_t = Σ_{j<=t} u_j/d_j``: post-processing of ``y`` alone, and since
``u_j = d_j·x_j + (Ĉ⁻¹z)_j`` it is unbiased.

Neighbour relation: one record added or removed anywhere in the stream (any step, any bin).
Privacy unit: one record.

Sensitivity derivation: a record at step ``j`` moves ``y`` by column ``j`` of ``ĈD̃``, whose
squared norm is ``d_j²·Σ_{k<T-j} ĉ_k²``; ``Δ2²`` is the largest over ``j`` (an exact integer),
and the release is ``Δ2²/(2σ²)``-zCDP (CKS20, Thm 14). Each bin is its own stream.

Variance: ``Var(t) = Var(Z)·Σ_{i<=t} (Σ_{j=i..t} h_{j-i}/d_j)²``, computed for all ``t`` in
``O(T²)`` once per horizon (so ``T <= NORM_LIMIT``: about a second at ``2**13``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from treedp.continual.sqrt import SCALE, lattice
from treedp.estimation.toeplitz import series_inverse
from treedp.exceptions import InvalidParameterError
from treedp.noise.families import DiscreteGaussian
from treedp.noise.rng import RandomSource

__all__ = ["NORM_LIMIT", "NormSqrtCounter", "column_scales", "norm_sensitivity"]

#: Largest horizon (its exact variances cost ``O(T²)``).
NORM_LIMIT = 2**13
#: The target column norm ``D·s`` starts at ``D = 2**10`` (halved while the sampler's range
#: needs it).
_TARGET = 2**10
#: Rows per block of the exact variances.
_BLOCK = 256


@lru_cache(maxsize=16)
def column_scales(horizon: int, target: int, scale: int = SCALE) -> np.ndarray:
    """``d_j = round(D·s/n̂_j)`` (int64, at least 1)."""
    c2 = lattice(horizon, scale).astype(np.float64) ** 2
    norms = np.sqrt(np.cumsum(c2)[::-1])  # column j holds ĉ_0..ĉ_{T-1-j}
    return np.asarray(np.maximum(np.rint(target * scale / norms), 1), dtype=np.int64)


def norm_sensitivity(horizon: int, target: int, scale: int = SCALE) -> int:
    """``Δ2² = max_j d_j²·Σ_{k<T-j} ĉ_k²``, exact."""
    c = [int(v) for v in lattice(horizon, scale)]
    d = column_scales(horizon, target, scale)
    best, running = 0, 0
    for n in range(1, horizon + 1):  # n = T - j terms
        running += c[n - 1] * c[n - 1]
        best = max(best, int(d[horizon - n]) ** 2 * running)
    return best


@lru_cache(maxsize=8)
def _inverse(horizon: int, scale: int) -> np.ndarray:
    return series_inverse(lattice(horizon, scale).astype(np.float64))


@lru_cache(maxsize=8)
def unit_variances(horizon: int, target: int, scale: int = SCALE) -> np.ndarray:
    """``Σ_i (Σ_{j=i..t} h_{j-i}/d_j)²`` for ``t = 1..T`` (``Var(t)`` per unit noise variance)."""
    h = _inverse(horizon, scale)
    inv_d = 1.0 / column_scales(horizon, target, scale)
    w = np.zeros(horizon)  # w_{t0-1}: the noise weights of the running count before a block
    out = np.empty(horizon)
    for t0 in range(0, horizon, _BLOCK):
        j = np.arange(t0, min(t0 + _BLOCK, horizon))
        lag = j[:, None] - np.arange(j[-1] + 1)[None, :]  # columns past j[-1] stay zero
        rows = np.where(lag >= 0, h[np.maximum(lag, 0)], 0.0) * inv_d[j][:, None]
        block = np.cumsum(rows, axis=0) + w[: j[-1] + 1]  # row r: weights after step t0+r+1
        out[j] = np.einsum("ij,ij->i", block, block)
        w[: j[-1] + 1] = block[-1]
    return out


@dataclass(frozen=True)
class NormSqrtCounter:
    """The column-normalised square root (see the module docstring)."""

    horizon: int
    sigma2: Fraction
    target: int = _TARGET
    contributions: int = 1
    scale: int = SCALE

    name = "sqrt_norm"
    noise = "gaussian"

    @classmethod
    def for_budget(cls, horizon: int, rho: float, contributions: int) -> NormSqrtCounter:
        """The counter whose exact loss is at most ``rho`` (``D`` as large as the exact
        sampler allows)."""
        target = _TARGET
        while True:
            l2 = contributions**2 * norm_sensitivity(horizon, target)
            try:
                return cls(
                    horizon, DiscreteGaussian.for_budget(l2, rho).sigma2, target, contributions
                )
            except InvalidParameterError:
                if target == 1:
                    raise
                target //= 2

    def sensitivity(self) -> dict[str, Any]:
        """``Δ2²`` of the released vector, as data."""
        return {"l2_squared": self.contributions**2 * norm_sensitivity(self.horizon, self.target)}

    def loss(self) -> Fraction:
        """The exact ρ."""
        return DiscreteGaussian(self.sigma2).loss(0, self.sensitivity()["l2_squared"])

    def variances(self, t: np.ndarray) -> np.ndarray:
        """``Var(t)`` for the steps ``t`` (1-based)."""
        unit = unit_variances(self.horizon, self.target, self.scale)
        var_z = DiscreteGaussian(self.sigma2).variance()
        return np.asarray(var_z * unit[np.asarray(t, dtype=np.int64) - 1], dtype=np.float64)

    def initial_state(self, n_bins: int, source: RandomSource) -> dict[str, Any]:
        """Empty histories of ``d_j·x_j`` and ``y``, and the running sum."""
        shape = (self.horizon, n_bins)
        return {
            "dx": np.zeros(shape, dtype=np.int64),
            "y": np.zeros(shape, dtype=np.int64),
            "sum": np.zeros(n_bins, dtype=np.float64),
        }

    def step(
        self, state: dict[str, Any], t: int, counts: np.ndarray, source: RandomSource
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Feed step ``t``; rows ``t`` written in place, the running estimate returned."""
        dx, y = state["dx"], state["y"]
        d = column_scales(self.horizon, self.target, self.scale)
        dx[t - 1] = counts * d[t - 1]
        c = lattice(self.horizon, self.scale)[:t][::-1]
        y[t - 1] = c @ dx[:t] + DiscreteGaussian(self.sigma2).sample(counts.size, source)
        u = _inverse(self.horizon, self.scale)[:t][::-1] @ y[:t]
        total = state["sum"] + u / d[t - 1]
        return {"dx": dx, "y": y, "sum": total}, np.asarray(total, dtype=np.float64)

    def describe(self) -> dict[str, Any]:
        """The public parameters, exactly."""
        return {
            "name": self.name,
            "horizon": self.horizon,
            "sigma2": str(self.sigma2),
            "target": self.target,
            "contributions": self.contributions,
            "scale": self.scale,
        }

    @classmethod
    def from_description(cls, d: dict[str, Any]) -> NormSqrtCounter:
        """The counter :meth:`describe` wrote."""
        return cls(
            int(d["horizon"]),
            Fraction(d["sigma2"]),
            int(d["target"]),
            int(d["contributions"]),
            int(d["scale"]),
        )
