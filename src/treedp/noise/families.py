"""Noise families: each owns its variance, its sampler and its privacy map.

A mechanism's block is released as ``true + Z`` with ``Z`` drawn entrywise from one family.
The planner, the error predictions and the mechanisms ask the family for the variance and the
privacy loss instead of re-deriving formulas:

* :class:`DiscreteLaplace` with scale ``t``: ``P(Z = z) ∝ exp(-|z|/t)``. For a block of L1
  sensitivity ``Δ1``, ``P(x)/P(x + d) <= exp(|d|_1/t)``, so the block is pure ``Δ1/t``-DP
  (Canonne, Kamath & Steinke 2020, Thm 7 for the discrete version).
* :class:`DiscreteGaussian` with variance parameter ``σ²``: for a block of L2 sensitivity
  ``Δ2`` it is ``Δ2²/(2σ²)``-zCDP (CKS20, Thm 14).

Adding a family means one class here with these four members.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, runtime_checkable

import numpy as np

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise.discrete_gaussian import (
    discrete_gaussian_variance,
    gaussian_supported,
    sample_discrete_gaussian,
)
from treedp.noise.discrete_laplace import discrete_laplace_variance, sample_discrete_laplace
from treedp.noise.rational import noise_scale
from treedp.noise.rng import RandomSource
from treedp.privacy.measures import ZCDP, Measure, PureDP

__all__ = ["DiscreteGaussian", "DiscreteLaplace", "NoiseFamily", "float_at_least"]


def float_at_least(q: Fraction) -> float:
    """The smallest float ``>= q`` (guarantees are rounded up, never down)."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


@runtime_checkable
class NoiseFamily(Protocol):
    """What a mechanism needs from its noise: name, variance, sampler, privacy map."""

    name: str

    def variance(self) -> float:
        """The variance of one draw (exact, or an upper bound)."""
        ...

    def sample(self, size: int, source: RandomSource) -> np.ndarray:
        """``size`` independent int64 draws from ``source``."""
        ...

    def privacy(self, l1: int, l2: float) -> Measure:
        """The guarantee of ``true + noise`` for a block with these L1 / L2 sensitivities."""
        ...


def _fraction(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, Fraction | int | np.integer):
        raise InvalidTypeError(
            f"The '{name}' parameter must be a Fraction or an int. "
            f"Got {type(value).__name__} {value!r} instead."
        )
    v = Fraction(int(value)) if isinstance(value, int | np.integer) else value
    if v <= 0:
        raise InvalidParameterError(f"The '{name}' parameter must be > 0. Got {value!r} instead.")
    return v


@dataclass(frozen=True)
class DiscreteLaplace:
    """Exact discrete Laplace noise of rational scale ``t``.

    Parameters
    ----------
    scale : Fraction
        ``t > 0``.
    """

    scale: Fraction
    name = "discrete_laplace"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _fraction(self.scale, "scale"))

    @classmethod
    def for_budget(cls, l1: int, epsilon: float) -> DiscreteLaplace:
        """The family calibrated so a block of L1 sensitivity ``l1`` costs at most ``epsilon``.

        The scale is :func:`treedp.noise.noise_scale`'s exact rational ``>= l1/epsilon``
        (rounded up), so :meth:`privacy` never exceeds ``epsilon``.
        """
        return cls(noise_scale(l1, epsilon))

    @staticmethod
    def approx_variance(l1: float | np.ndarray, epsilon: float | np.ndarray) -> np.ndarray:
        """The continuous Laplace variance ``2(l1/ε)²``: a smooth proxy for planning searches
        (0 where ``epsilon`` is 0, an exact block)."""
        eps = np.asarray(epsilon, dtype=np.float64)
        safe = np.where(eps > 0, eps, 1.0)
        return np.where(eps > 0, 2.0 * (np.asarray(l1, dtype=np.float64) / safe) ** 2, 0.0)

    def variance(self) -> float:
        """``2q/(1-q)²`` with ``q = exp(-1/t)``."""
        return discrete_laplace_variance(self.scale)

    def sample(self, size: int, source: RandomSource) -> np.ndarray:
        """Exact draws (CKS20 Algorithm 2)."""
        return sample_discrete_laplace(self.scale, size, source)

    def privacy(self, l1: int, l2: float) -> Measure:
        """``PureDP(l1 / t)``, rounded up to a float (``l2`` is not used)."""
        return PureDP(float_at_least(Fraction(int(l1)) / self.scale))

    def epsilon_exact(self, l1: int) -> Fraction:
        """The exact loss ``l1 / t`` as a rational."""
        return Fraction(int(l1)) / self.scale


@dataclass(frozen=True)
class DiscreteGaussian:
    """Exact discrete Gaussian noise with variance parameter ``σ²`` (rational).

    Parameters
    ----------
    sigma2 : Fraction
        ``σ² > 0``.
    """

    sigma2: Fraction
    name = "discrete_gaussian"

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _fraction(self.sigma2, "sigma2"))

    @classmethod
    def for_budget(cls, l2_squared: int | Fraction, rho: float) -> DiscreteGaussian:
        """The family so a block with squared L2 sensitivity ``l2_squared`` costs at most ``ρ``:
        ``σ² >= Δ2²/(2ρ)``, rounded up to a multiple of ``1/2**k``, with the largest ``k <= 20``
        the exact sampler supports (``2·a·b·t² < 2**55`` for ``σ² = a/b``,
        ``t = floor(σ) + 1``: large variances get coarser denominators, up to ``σ² ~ 1.3·10**8``);
        beyond that, the largest ``k`` that the sampler's large range supports (``2·a < 2**55``:
        ``σ²`` up to about ``1.8·10**16``). The first loop is the sampler's small range, so
        every budget that fitted before keeps its ``σ²``.

        Raises
        ------
        InvalidParameterError
            If even an integer ``σ²`` is beyond the sampler's range (``ρ`` far too small).
        """
        exact = Fraction(l2_squared) / (2 * Fraction(rho))
        for k in range(20, -1, -1):
            den = 2**k
            sigma2 = Fraction(math.ceil(exact * den), den)
            t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
            if 2 * sigma2.numerator * sigma2.denominator * t * t < 2**55:
                return cls(sigma2)
        # Beyond the small range (σ² >~ 1.3e8): the sampler's large range, 2·a < 2**55.
        for k in range(20, -1, -1):
            den = 2**k
            sigma2 = Fraction(math.ceil(exact * den), den)
            if gaussian_supported(sigma2):
                return cls(sigma2)
        raise InvalidParameterError(
            "The budget is too small for exact discrete Gaussian noise: the noise variance "
            "would exceed the exact sampler's range (about 1.8e16). Use a larger rho or fewer "
            "levels."
        )

    @staticmethod
    def approx_variance(l2_squared: float | np.ndarray, rho: float | np.ndarray) -> np.ndarray:
        """The variance parameter ``Δ2²/(2ρ)``: a smooth proxy for planning searches (0 where
        ``rho`` is 0, an exact block). The exact variance is at most this."""
        r = np.asarray(rho, dtype=np.float64)
        safe = np.where(r > 0, r, 1.0)
        return np.where(r > 0, np.asarray(l2_squared, dtype=np.float64) / (2.0 * safe), 0.0)

    def variance(self) -> float:
        """An upper bound on the variance, at most ``σ²``."""
        return discrete_gaussian_variance(self.sigma2)

    def sample(self, size: int, source: RandomSource) -> np.ndarray:
        """Exact draws (CKS20 Algorithm 3)."""
        return sample_discrete_gaussian(self.sigma2, size, source)

    def privacy(self, l1: int, l2: float) -> Measure:
        """``ZCDP(l2² / (2σ²))``, rounded up (``l1`` is not used).

        ``l2`` is a float within a relative ``2**-53`` of the true sensitivity (for example
        ``sqrt(2)``), so its square is inflated by ``2**-50`` to stay an upper bound.
        """
        rho = Fraction(l2) ** 2 * (1 + Fraction(1, 2**50)) / (2 * self.sigma2)
        return ZCDP(float_at_least(rho))
