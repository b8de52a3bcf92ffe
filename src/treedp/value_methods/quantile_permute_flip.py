"""Quantiles of integer data by permute-and-flip over the integers of public bounds.

Guarantee: pure ε-DP per call (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``replace`` or
``add_remove`` neighbours, privacy unit one record. Candidate ``k`` (an integer of
``lo..hi``) has score ``u_k = -dist(t, [#{x < k}, #{x <= k}])``, the rank gap of answering
``k`` (0 when a block of ties at ``k`` holds the target rank ``t``); its sensitivity is 1
under ``replace`` and ``max(q, 1 - q) + 2**-32`` under ``add_remove``
(:func:`_score_sensitivity`). Permute-and-flip with coins ``exp(rate · (u_k - u*))``, ``rate
<= ε / (2Δ)``, is ε-DP (McKenna & Sheldon 2020, Theorem 1) and its expected score is never
below the exponential mechanism's on the same candidates and score (their Theorem 2).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import Contract
from treedp.noise import RandomSource, resolve_source
from treedp.noise.permute_flip import MAX_FLOOR, permute_and_flip
from treedp.noise.rational import dyadic_lower_bound
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.value_methods._column import check_nan, check_neighbours, is_datetime_like
from treedp.value_methods.exponential_core import (
    TARGET_BITS,
    Draws,
    charge,
    check_domain,
    deliver,
    public_parameters,
    rank_sensitivity,
    read_levels,
    read_sorted,
    refuse_private,
    target_rank,
)

__all__ = ["CONTRACT", "MAX_CANDIDATES", "NEIGHBOURS", "quantile_permute_flip"]

#: The most integers the bounds may hold: one coin (a 64-bit word) is flipped for each.
MAX_CANDIDATES = 2**20
#: The neighbour relations the guarantee holds for.
NEIGHBOURS: tuple[str, ...] = ("replace", "add_remove")
CONTRACT = Contract(
    name="quantile_permute_flip",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "of the score -dist(t(n), [#{x < k}, #{x <= k}]): 1 under replace (n fixed, each "
        "count moves by at most 1); max(q, 1 - q) + 2**-32 under add_remove (the counts and "
        "the target both move)"
    ),
    max_records=2**32 - 1,  # the target rank's arithmetic, as the exponential mechanism's
)
_ONE = 1 << TARGET_BITS


def _score_sensitivity(level: Fraction, neighbours: str) -> Fraction:
    """Δ of the rank-gap score (the module's docstring).

    ``replace``: ``n`` and ``t`` are fixed and moving one record changes ``#{x < k}`` and
    ``#{x <= k}`` by at most 1 each: ``Δ = 1``. ``add_remove``: a record added below ``k``
    raises both counts by 1 and ``t`` by ``δ = t(n + 1) - t(n)``, within ``2**-32`` of ``q``
    (the gap moves by ``|1 - δ|``); one at ``k`` raises ``#{x <= k}`` only (by ``-δ`` or ``1 -
    δ``); one above moves only ``t`` (by ``δ``): ``Δ = max(q, 1 - q) + 2**-32``.
    """
    return Fraction(1) if neighbours == "replace" else rank_sensitivity(level)


def _integer_bounds(bounds: Any) -> tuple[int, int]:
    """Public integer bounds ``lo <= hi`` holding at most :data:`MAX_CANDIDATES` integers."""
    refuse_private(bounds)
    if isinstance(bounds, tuple | list) and any(is_datetime_like(b) for b in bounds):
        raise InvalidTypeError("quantile_permute_flip is for integers, not datetimes.")
    real = (int, np.integer, float, np.floating)
    if (
        not isinstance(bounds, tuple | list)
        or len(bounds) != 2
        or not all(isinstance(b, real) and not isinstance(b, bool) for b in bounds)
        or not all(math.isfinite(float(b)) and float(b).is_integer() for b in bounds)
        or float(bounds[0]) > float(bounds[1])
    ):
        raise InvalidParameterError(must("bounds", f"be integers lo <= hi. Got {bounds!r}."))
    lo, hi = int(bounds[0]), int(bounds[1])
    if max(abs(lo), abs(hi)) >= 2**53 or hi - lo + 1 > MAX_CANDIDATES:
        raise InvalidParameterError(
            must(
                "bounds",
                f"hold at most 2**20 integers, each below 2**53 in magnitude (one coin is "
                f"flipped per integer); use quantile_exponential(..., integers=True) for "
                f"wider ranges. Got {bounds!r}.",
            )
        )
    return lo, hi


class _Scores:
    """The candidates' exponents ``γ_k = rate · (u* - u_k)``, exactly, and integer lower
    bounds on them (:func:`~treedp.noise.permute_flip.permute_and_flip`).

    With ``T = t · 2**32 = t_int · 2**32 + t_frac`` (``f = t_frac / 2**32`` in ``[0, 1)``):
    above the target (``#{x < k} > t``, ``j = #{x < k} - t_int >= 1``) the gap is ``j - f >
    j - 1``; below it (``#{x <= k} < t``, ``i = t_int - #{x <= k}``, ``i >= 1`` or ``i = 0 <
    f``) it is ``i + f >= i``; else 0. So ``floor(rate · m)`` with ``m = j - 1``, ``i`` or 0
    is a lower bound, computed in int64 from the dyadic ``rate = a / 2**b`` (``m`` capped
    where the bound reaches 64, so nothing overflows).
    """

    def __init__(self, x: np.ndarray, lo: int, hi: int, level: Fraction, rate: Fraction):
        ks = np.arange(lo, hi + 1, dtype=np.float64)  # exact: |k| < 2**53
        self.below = np.searchsorted(x, ks, side="left").astype(np.int64)
        self.upto = np.searchsorted(x, ks, side="right").astype(np.int64)
        self.rate = rate
        self.t_int, self.t_frac = divmod(int(target_rank(level, x.size) * _ONE), _ONE)
        j = self.below - self.t_int  # >= 1: above the target
        i = self.t_int - self.upto
        m = np.where(j >= 1, j - 1, np.maximum(i, 0))
        a, b = rate.numerator, rate.denominator.bit_length() - 1  # rate = a / 2**b
        if rate <= 0 or rate.denominator != 1 << b:
            raise InvalidParameterError(f"The selection's rate must be dyadic. Got {rate}.")
        if (MAX_FLOOR + 2) << b < 2**62:
            cap = ((MAX_FLOOR + 1) << b) // a + 1  # rate · cap > 64 + 1
            self.floors = np.minimum((np.minimum(m, cap) * a) >> b, MAX_FLOOR)
        else:  # pragma: no cover - a rate below 2**-55: 0 is a lower bound too
            self.floors = np.zeros(m.size, dtype=np.int64)

    def gamma(self, k: int) -> Fraction:
        """The exact exponent of candidate ``k``."""
        below, upto = int(self.below[k]), int(self.upto[k])
        if below > self.t_int:
            return self.rate * Fraction((below - self.t_int) * _ONE - self.t_frac, _ONE)
        if upto < self.t_int or (upto == self.t_int and self.t_frac > 0):
            return self.rate * Fraction((self.t_int - upto) * _ONE + self.t_frac, _ONE)
        return Fraction(0)

    def exponents(self, indices: np.ndarray) -> list[Fraction]:
        return [self.gamma(k) for k in indices.tolist()]


def _quantile_permute_flip(
    values: Any,
    q: Any,
    bounds: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    rng: RandomSource | None,
    draws: int,
    accountant: Accountant | None = None,
) -> Draws:
    """Validate, then draw ``draws`` independent selections per level (each an ε-release);
    with an ``accountant`` (one draw), the charge comes after every check, before any coin."""
    check_accountant(accountant, unit="record")
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, NEIGHBOURS)
    policy = check_nan(nan, relation)
    lo, hi = _integer_bounds(bounds)
    qa = read_levels(q)
    source = resolve_source(rng)
    x, unit = read_sorted(values, policy, relation, None)
    if unit is not None:
        raise InvalidTypeError("quantile_permute_flip takes numbers, not datetimes.")
    x = np.floor(np.clip(x, lo, hi))  # each value to its integer (±inf: the bound)
    check_domain(x.size, CONTRACT)
    eps_each = Fraction(eps) / qa.size
    spent = Fraction(0)
    sens: list[float] = []
    selections: list[tuple[Fraction, Fraction]] = []
    for level in qa:  # the rates: no randomness
        exact_level = Fraction(float(level))
        delta_score = _score_sensitivity(exact_level, relation)
        rate = dyadic_lower_bound(eps_each / (2 * delta_score))
        spent += 2 * delta_score * rate
        sens.append(float(delta_score))
        selections.append((exact_level, rate))
    parameters = public_parameters(eps, qa, bounds, nan)
    charge(accountant, CONTRACT, spent, relation, parameters)
    out = np.empty((draws, qa.size))
    for j, (level, rate) in enumerate(selections):
        scores = _Scores(x, lo, hi, level, rate)
        for d in range(draws):
            out[d, j] = lo + permute_and_flip(scores.floors, scores.exponents, source)
    return Draws(out, qa, eps, spent, sens, source, None, parameters)


@accepts_aliases
def quantile_permute_flip(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
) -> Any:
    """Quantiles of integer data by permute-and-flip over the integers of the bounds, exactly.

    Each integer ``k`` of ``lo..hi`` is a candidate with score ``-dist(t, [#{x < k}, #{x <=
    k}])``: 0 when the records at ``k`` hold the target rank ``t = floor(q n 2**32) / 2**32``,
    else how many ranks answering ``k`` is off (values are floored and clamped to the bounds;
    ``±inf`` count as at the bound). Permute-and-flip visits the candidates in a random order
    and answers the first whose coin ``Bernoulli(exp(rate · u_k))`` comes up heads, ``rate <=
    ε / (2Δ)``. Its expected rank gap is never larger than the exponential mechanism's on the
    same candidates and score, and smaller where few integers score near the top (tied
    integer data at small ``n · ε``).

    Sampled exactly (:func:`treedp.noise.permute_flip.permute_and_flip`): one coin per integer
    compared bit by bit with ``exp(-γ)``, then a uniform pick among the heads, which has the
    law of the sequential procedure. The bounds may hold at most ``2**20`` integers.

    Guarantee: ``PureDP(ε_spent)`` per call, ``ε_spent <= ε``, on every dataset of fewer than
    ``2**32`` records; privacy unit one record. Sensitivity of the score: ``Δ = 1`` under
    ``replace`` (``n = len(values)`` public), ``Δ = max(q, 1 - q) + 2**-32`` under
    ``add_remove`` (:func:`_score_sensitivity`). The rate is ``ε/(2Δ)`` rounded down to a
    dyadic, so the budget spent is at most ε. Several ``q`` split ε equally (basic
    composition). The empty dataset is valid: every integer scores ``-t = 0``.

    Parameters
    ----------
    values : array-like
        Numbers (integers, or floats read as the integer below them); ``len(values) < 2**32``.
    q : float or array-like
        Quantile levels in [0, 1].
    bounds : (int, int)
        Public integer bounds ``lo <= hi`` holding at most ``2**20`` integers.
    epsilon : float
        Total budget over all ``q``.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
        As :func:`treedp.quantile_exponential`.
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.QuantileResult` instead of the values.
    accountant : Accountant, optional
        Charged ``PureDP(ε_spent)`` after every check and before any coin is flipped.

    Returns
    -------
    float, ndarray or QuantileResult
        One integer (as a float) for a scalar ``q``, else one per level.

    References
    ----------
    .. [MS20] R. McKenna and D. Sheldon. "Permute-and-Flip: A new mechanism for
       differentially private selection". NeurIPS 2020.
    """
    draws = _quantile_permute_flip(values, q, bounds, epsilon, neighbours, nan, rng, 1, accountant)
    return deliver(draws, q, neighbours, CONTRACT.name, details, _candidates(bounds))


def _candidates(bounds: Any) -> int:
    return int(bounds[1]) - int(bounds[0]) + 1


def _quantile_permute_flip_draws(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    size: int,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
) -> np.ndarray:
    """``size`` independent outputs, for simulation only: NOT a private release (each draw is
    a separate ε-release of the same data). Shape ``(size,)`` for a scalar ``q``, else
    ``(size, len(q))``."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidParameterError(must("size", f"be an int >= 1. Got {size!r}."))
    out = _quantile_permute_flip(values, q, bounds, epsilon, neighbours, nan, rng, size).values
    return out if np.ndim(q) else out[:, 0]
