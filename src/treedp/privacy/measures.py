"""Privacy guarantees as values: pure ε-DP, approximate (ε, δ)-DP and ρ-zCDP.

A mechanism states what it guarantees as one of these frozen values; an accountant composes
them (sequential composition adds ε, ρ, and (ε, δ)). Conversions, exact or tight:

* ``PureDP(ε) → ApproxDP(ε, 0)``: exact (the definitions coincide).
* ``PureDP(ε) → ZCDP(ε²/2)``: Bun & Steinke 2016, Proposition 1.4.
* ``ZCDP(ρ) → ApproxDP(ε, δ)``: Canonne, Kamath & Steinke 2020, Corollary 13: for every α > 1,
  ρ-zCDP implies (ε, δ)-DP with ``ε = αρ + (ln(1/δ) + (α − 1)·ln(1 − 1/α) − ln α)/(α − 1)``.
  Every α gives a valid ε, so minimising numerically over α can only lose tightness, never
  validity; the ε at the α found is rounded up, and never above the classical
  ``ρ + 2·sqrt(ρ·ln(1/δ))`` (Bun & Steinke 2016, Proposition 1.3).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Union

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["ZCDP", "ApproxDP", "Measure", "PureDP", "compose"]

# Relative and absolute upward margins for conversions computed in floating point: the
# functions involved (log, exp, sqrt) are accurate to a few ulps, far inside these margins.
_REL_UP = 1e-12
_ABS_UP = 1e-15


def _check_positive(value: object, name: str, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidTypeError(must(name, f"be a number. Got {type(value).__name__} {value!r}."))
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InvalidParameterError(must(name, f"be finite and {bound}. Got {value!r} instead."))
    return v


def _check_delta(value: object, *, allow_zero: bool) -> float:
    d = _check_positive(value, "delta", allow_zero=allow_zero)
    if d >= 1.0:
        raise InvalidParameterError(must("delta", f"be < 1. Got {d!r} instead."))
    return d


def _up(x: float) -> float:
    return x * (1.0 + _REL_UP) + _ABS_UP


@dataclass(frozen=True)
class PureDP:
    """Pure ε-differential privacy: ``P[M(D) ∈ S] ≤ e^ε·P[M(D') ∈ S]`` for neighbours."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_positive(self.epsilon, "epsilon"))

    def to_zcdp(self) -> ZCDP:
        """ρ = ε²/2 (Bun & Steinke 2016, Proposition 1.4), rounded up."""
        return ZCDP(_up(self.epsilon**2 / 2.0))

    def to_approx(self, delta: float = 0.0) -> ApproxDP:
        """``(ε, 0)``-DP (exact); ``delta`` is accepted for a uniform interface and ignored."""
        return ApproxDP(self.epsilon, 0.0)

    def describe(self) -> str:
        """A short human-readable statement."""
        return f"pure {self.epsilon:g}-DP"


@dataclass(frozen=True)
class ApproxDP:
    """Approximate (ε, δ)-DP: ``P[M(D) ∈ S] ≤ e^ε·P[M(D') ∈ S] + δ`` for neighbours."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_positive(self.epsilon, "epsilon"))
        d = _check_delta(self.delta, allow_zero=True)
        if 0.0 < d < sys.float_info.min:  # subnormal: its shortest decimal is too coarse
            raise InvalidParameterError(
                must(
                    "delta",
                    "be 0 or at least 2.2250738585072014e-308 (the "
                    f"smallest normal float). Got {d!r} instead.",
                )
            )
        object.__setattr__(self, "delta", d)

    def to_approx(self, delta: float | None = None) -> ApproxDP:
        """Itself (an (ε, δ) guarantee cannot be restated at a smaller δ)."""
        if delta is not None and delta < self.delta:
            raise InvalidParameterError(
                f"An ({self.epsilon:g}, {self.delta:g})-DP guarantee cannot be stated at "
                f"delta={delta!r}: delta must be >= {self.delta:g}."
            )
        return self

    def describe(self) -> str:
        """A short human-readable statement."""
        return f"({self.epsilon:g}, {self.delta:.3g})-DP"


@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated DP (Bun & Steinke 2016): ``D_α(M(D) ‖ M(D')) ≤ ρα`` for all α > 1."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _check_positive(self.rho, "rho"))

    def to_zcdp(self) -> ZCDP:
        """Itself."""
        return self

    def to_approx(self, delta: float) -> ApproxDP:
        """The tight (ε, δ) statement at ``delta`` (Canonne, Kamath & Steinke 2020, Cor. 13)."""
        d = _check_delta(delta, allow_zero=False)
        return ApproxDP(zcdp_to_epsilon(self.rho, d), d)

    def describe(self) -> str:
        """A short human-readable statement."""
        return f"{self.rho:g}-zCDP"


Measure = Union[PureDP, ApproxDP, ZCDP]  # noqa: UP007 (a runtime alias, usable in isinstance)


def _cks_epsilon(alpha: float, rho: float, log_inv_delta: float) -> float:
    return alpha * rho + (
        log_inv_delta + (alpha - 1.0) * math.log1p(-1.0 / alpha) - math.log(alpha)
    ) / (alpha - 1.0)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """The smallest ε (rounded up) with ρ-zCDP ⇒ (ε, δ)-DP (CKS20 Corollary 13), for ``ρ >= 0``
    and δ in (0, 1): a valid ε, never above the classical ``ρ + 2·sqrt(ρ·ln(1/δ))``."""
    if rho == 0.0:
        return 0.0
    log_inv = math.log(1.0 / delta)
    classical = rho + 2.0 * math.sqrt(rho * log_inv)
    # ε(α) is convex-like in u = log(α - 1): golden-section search in a wide bracket, then
    # the best value found (any α is valid).
    phi = (math.sqrt(5.0) - 1.0) / 2.0

    def f(u: float) -> float:
        alpha = 1.0 + math.exp(u)
        try:
            return _cks_epsilon(alpha, rho, log_inv)
        except (OverflowError, ValueError):
            return math.inf

    a, b = -20.0, 20.0
    c, d = b - phi * (b - a), a + phi * (b - a)
    fc, fd = f(c), f(d)
    for _ in range(200):
        if fc < fd:
            b, d, fd = d, c, fc
            c = b - phi * (b - a)
            fc = f(c)
        else:
            a, c, fc = c, d, fd
            d = a + phi * (b - a)
            fd = f(d)
    return _up(max(0.0, min(fc, fd, classical)))


def compose(measures: list[Measure] | tuple[Measure, ...]) -> Measure:
    """Sequential composition of guarantees of one kind: ε, ρ or (ε, δ) add (convert mixed
    kinds first, e.g. :meth:`PureDP.to_zcdp`)."""
    if not measures:
        raise InvalidParameterError(must("measures", "hold at least one guarantee."))
    kinds = {type(m) for m in measures}
    if len(kinds) != 1:
        raise InvalidParameterError(
            "compose() takes guarantees of one kind; convert them first (PureDP.to_zcdp())."
        )
    first = measures[0]
    if isinstance(first, PureDP):
        return PureDP(math.fsum(m.epsilon for m in measures if isinstance(m, PureDP)))
    if isinstance(first, ZCDP):
        return ZCDP(math.fsum(m.rho for m in measures if isinstance(m, ZCDP)))
    eps = math.fsum(m.epsilon for m in measures if isinstance(m, ApproxDP))
    delta = math.fsum(m.delta for m in measures if isinstance(m, ApproxDP))
    return ApproxDP(eps, min(delta, 1.0 - 1e-16))
