"""Noise families: each owns its variance, its sampler and its privacy map.

A mechanism's block is released as ``true + Z`` with ``Z`` drawn entrywise from one family.
The planner, the error predictions and the mechanisms ask the family for the variance and the
privacy loss instead of re-deriving formulas:

* :class:`DiscreteLaplace` with scale ``t``: ``P(Z = z) ∝ exp(-|z|/t)``. For a block of L1
  sensitivity ``Δ1``, ``P(x)/P(x + d) <= exp(|d|_1/t)``, so the block is pure ``Δ1/t``-DP
  (Canonne, Kamath & Steinke 2020, Thm 7 for the discrete version).
* :class:`DiscreteGaussian` with variance parameter ``σ²``: for a block of L2 sensitivity
  ``Δ2`` it is ``Δ2²/(2σ²)``-zCDP (CKS20, Thm 14).

A family that is calibrated from a budget (the planner's and the tree's) also subclasses
:class:`BudgetedFamily`: its key (``ReleaseSpec.noise``), budget unit, planner weight and
proxy variance. Adding one is a class here plus one :func:`register_noise` line; nothing else
switches on its name (:func:`noise_family` looks it up).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from treedp._validation import check_option, check_real, must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise.discrete_gaussian import (
    MAX_GAUSSIAN_DENOMINATOR,
    discrete_gaussian_variance,
    gaussian_supported,
    sample_discrete_gaussian,
)
from treedp.noise.discrete_laplace import discrete_laplace_variance, sample_discrete_laplace
from treedp.noise.rational import float_at_least, noise_scale
from treedp.noise.rng import RandomSource
from treedp.privacy.measures import ZCDP, Measure, PureDP

__all__ = [
    "MAX_RHO",
    "MIN_RHO",
    "NOISES",
    "BudgetedFamily",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "NoiseFamily",
    "check_rho",
    "float_at_least",
    "noise_family",
    "register_noise",
]

#: Smallest ρ accepted: below it the noise swamps any count, and a level's variance
#: ``Δ²/(2ρ_l)`` would leave the exact sampler's range (about 1e8).
MIN_RHO = 1e-6
#: Largest ρ accepted: ``MAX_EPSILON**2 / 2`` (pure 50-DP is 1250-zCDP).
MAX_RHO = 1250.0


def check_rho(rho: Any, name: str = "rho") -> float:
    """``rho`` as a float, finite and in ``[MIN_RHO, MAX_RHO]`` (so ``ρ <= 0`` is refused)."""
    return check_real(rho, name, MIN_RHO, MAX_RHO)


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


class BudgetedFamily(NoiseFamily, ABC):
    """A noise family calibrated from a budget: what the planner and the tree ask of it.

    Attributes
    ----------
    key : str
        Its name in :attr:`treedp.ReleaseSpec.noise` and :attr:`treedp.Plan.noise`.
    label : str
        Its name for people (``Plan.describe``).
    budget_name : {"epsilon", "rho"}
        The unit of its budgets: the keyword a mechanism is built with.
    guarantee_kind : {"pure", "zcdp"}
        The guarantee it gives, as written in release files.
    exponent : int
        A block's smooth variance is ``∝ budget**-exponent`` (:meth:`proxy_variance`); with
        equal shares of a fixed total over ``L`` blocks it grows like ``L**exponent``.
    rule_power : float
        The closed-form budget rule ``b_l ∝ (weight_l · w_l)**rule_power``, ``1/(1+exponent)``.
    rule_label, tuned_label : str
        How the planner names budgets from that rule and tuned budgets.
    deep_trees : bool
        Whether deep trees (small fan-outs) compete: the planner then tries every height.
    keeps_given : bool
        Whether a tree keeps given level budgets that add up exactly (its stored noise
        parameters then rebuild bit for bit).
    field : str
        The release-file key (and mechanism attribute) of the blocks' :attr:`parameter`.
    """

    key: ClassVar[str]
    label: ClassVar[str]
    budget_name: ClassVar[str]
    guarantee_kind: ClassVar[str]
    exponent: ClassVar[int]
    rule_power: ClassVar[float]
    rule_label: ClassVar[str]
    tuned_label: ClassVar[str]
    field: ClassVar[str]
    deep_trees: ClassVar[bool] = False
    keeps_given: ClassVar[bool] = False
    #: The measure of its guarantee (``PureDP`` or ``ZCDP``).
    measure_type: ClassVar[type[PureDP] | type[ZCDP]]

    @classmethod
    def of(cls, parameter: Fraction) -> BudgetedFamily:
        """The family with this :attr:`parameter`."""
        return cls(parameter)  # type: ignore[call-arg]

    @classmethod
    @abstractmethod
    def calibrated(cls, l1: int, l2_squared: int, budget: float) -> BudgetedFamily:
        """The family so a block with these sensitivities costs at most ``budget``."""

    @staticmethod
    @abstractmethod
    def weight(l1: float, l2_squared: float) -> float:
        """A block's planner weight from its sensitivities (its smooth variance is
        ``proxy_variance(weight, budget)``)."""

    @staticmethod
    @abstractmethod
    def proxy_variance(weight: float, budget: float) -> float:
        """The smooth variance of a block of this weight at a positive ``budget``."""

    @staticmethod
    @abstractmethod
    def check_budget(value: Any, name: str) -> float:
        """Validate a total budget in this family's unit."""

    @classmethod
    def measure(cls, loss: Fraction) -> Measure:
        """The guarantee of an exact total loss (in the budget's unit), rounded up."""
        return cls.measure_type(float_at_least(loss))

    @property
    @abstractmethod
    def parameter(self) -> Fraction:
        """The family's one exact rational parameter (scale or variance)."""

    @abstractmethod
    def loss(self, l1: int, l2_squared: int) -> Fraction:
        """The exact loss of one block, in the budget's unit."""


def _fraction(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, Fraction | int | np.integer):
        raise InvalidTypeError(
            must(name, f"be a Fraction or an int. Got {type(value).__name__} {value!r} instead.")
        )
    v = Fraction(int(value)) if isinstance(value, int | np.integer) else value
    if v <= 0:
        raise InvalidParameterError(must(name, f"be > 0. Got {value!r} instead."))
    return v


@dataclass(frozen=True)
class DiscreteLaplace(BudgetedFamily):
    """Exact discrete Laplace noise of rational scale ``t > 0``: pure ε-DP."""

    scale: Fraction
    name = "discrete_laplace"
    key = "laplace"
    label = "discrete Laplace"
    budget_name = "epsilon"
    guarantee_kind = "pure"
    exponent = 2
    rule_power = 1 / 3
    rule_label = "(k-1)^(1/3) budgets"
    tuned_label = "tuned budgets"
    field = "scales"
    measure_type = PureDP

    @staticmethod
    def check_budget(value: Any, name: str) -> float:
        return check_epsilon(value, name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", _fraction(self.scale, "scale"))

    @classmethod
    def for_budget(cls, l1: int, epsilon: float) -> DiscreteLaplace:
        """The family so a block of L1 sensitivity ``l1`` costs at most ``epsilon``: the scale is
        :func:`treedp.noise.noise_scale`'s exact rational ``>= l1/epsilon``."""
        return cls(noise_scale(l1, epsilon))

    @classmethod
    def calibrated(cls, l1: int, l2_squared: int, budget: float) -> DiscreteLaplace:
        return cls.for_budget(l1, budget)

    @staticmethod
    def weight(l1: float, l2_squared: float) -> float:
        """``L1²``."""
        return float(l1) ** 2

    @staticmethod
    def proxy_variance(weight: float, budget: float) -> float:
        """``2 L1²/ε²``, the continuous Laplace variance."""
        return 2.0 * weight / (budget * budget)

    @property
    def parameter(self) -> Fraction:
        return self.scale

    def loss(self, l1: int, l2_squared: int) -> Fraction:
        """``l1 / t``."""
        return Fraction(int(l1)) / self.scale

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
        return self.measure(self.loss(l1, 0))


def _small_range(sigma2: Fraction) -> bool:
    """``2·a·b·t² < 2**55`` for ``σ² = a/b``, ``t = floor(σ) + 1``: the sampler's small range."""
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1
    return 2 * sigma2.numerator * sigma2.denominator * t * t < MAX_GAUSSIAN_DENOMINATOR


@dataclass(frozen=True)
class DiscreteGaussian(BudgetedFamily):
    """Exact discrete Gaussian noise with rational variance parameter ``σ² > 0``: ρ-zCDP."""

    sigma2: Fraction
    name = "discrete_gaussian"
    key = "gaussian"
    label = "discrete Gaussian"
    budget_name = "rho"
    guarantee_kind = "zcdp"
    exponent = 1
    rule_power = 0.5
    rule_label = "sqrt(k-1) budgets"
    tuned_label = "KKT-tuned budgets"
    field = "sigma2"
    deep_trees = True
    keeps_given = True
    measure_type = ZCDP

    @staticmethod
    def check_budget(value: Any, name: str) -> float:
        return check_rho(value, name)

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma2", _fraction(self.sigma2, "sigma2"))

    @classmethod
    def for_budget(cls, l2_squared: int | Fraction, rho: float) -> DiscreteGaussian:
        """The family so a block with squared L2 sensitivity ``l2_squared`` costs at most ``ρ``:
        ``σ² >= Δ2²/(2ρ)``, rounded up to a multiple of ``1/2**k`` with the largest ``k <= 20``
        in the exact sampler's small range (``2·a·b·t² < 2**55``: large variances get coarser
        denominators, up to ``σ² ~ 1.3·10**8``); beyond it, the largest ``k`` its large range
        supports (``2·a < 2**55``: ``σ²`` up to about ``1.8·10**16``). Small range first, so
        every budget that fitted before keeps its ``σ²``.

        Raises
        ------
        InvalidParameterError
            If even an integer ``σ²`` is beyond the sampler's range (``ρ`` far too small).
        """
        exact = Fraction(l2_squared) / (2 * Fraction(rho))
        for fits in (_small_range, gaussian_supported):
            for k in range(20, -1, -1):
                sigma2 = Fraction(math.ceil(exact * 2**k), 2**k)
                if fits(sigma2):
                    return cls(sigma2)
        raise InvalidParameterError(
            "The budget is too small for exact discrete Gaussian noise: the noise variance "
            "would exceed the exact sampler's range (about 1.8e16). Use a larger rho or fewer "
            "levels."
        )

    @classmethod
    def calibrated(cls, l1: int, l2_squared: int, budget: float) -> DiscreteGaussian:
        return cls.for_budget(l2_squared, budget)

    @staticmethod
    def weight(l1: float, l2_squared: float) -> float:
        """``L2²``."""
        return float(l2_squared)

    @staticmethod
    def proxy_variance(weight: float, budget: float) -> float:
        """``L2²/(2ρ)``, the variance parameter."""
        return weight / (2.0 * budget)

    @property
    def parameter(self) -> Fraction:
        return self.sigma2

    def loss(self, l1: int, l2_squared: int) -> Fraction:
        """``Δ2²/(2σ²)`` with the exact integer ``Δ2²``."""
        return Fraction(l2_squared) / (2 * self.sigma2)

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
        return self.measure(Fraction(l2) ** 2 * (1 + Fraction(1, 2**50)) / (2 * self.sigma2))


#: The budgeted noise families by key (``ReleaseSpec.noise``).
NOISES: dict[str, type[BudgetedFamily]] = {}


def register_noise(cls: type[BudgetedFamily]) -> type[BudgetedFamily]:
    """Register ``cls`` under ``cls.key`` (refuses a key taken by another class)."""
    if NOISES.get(cls.key, cls) is not cls:
        raise InvalidParameterError(f"A noise family keyed {cls.key!r} is already registered.")
    NOISES[cls.key] = cls
    return cls


register_noise(DiscreteLaplace)
register_noise(DiscreteGaussian)


def noise_family(key: object) -> type[BudgetedFamily]:
    """The family registered as ``key`` (``"laplace"``, ``"gaussian"``, ...)."""
    return NOISES[check_option(key, "noise", tuple(NOISES))]


def budgeted(epsilon: float | None, rho: float | None) -> tuple[type[BudgetedFamily], Any]:
    """The family a mechanism's budget keyword picks (``epsilon``: the first registered
    family in ε, ``rho``: the first in ρ) and the budget itself."""
    unit, value = ("epsilon", epsilon) if rho is None else ("rho", rho)
    return next(f for f in NOISES.values() if f.budget_name == unit), value
