"""The exponential mechanism with a rank score on a public grid: the quantile methods' core.

Smith's exponential-mechanism quantile, shared by :mod:`.quantile_exponential` (one
selection per level) and :mod:`.quantiles_recursive` (one per node, on a part of the grid),
with the input rules and result shaping the two share. The output space is a public
:class:`Grid` of ``2**bits`` cell midpoints of ``[lo, hi]``; grid point ``y`` has score
``-|i(y) - t|`` with ``i(y) = #{x_j < y}`` (data outside the bounds, ``±inf`` included, count
as at the bound) and target ``t`` (:func:`target_rank`), and is drawn with probability
``∝ exp(-rate · |i(y) - t|)`` by :func:`select`, exactly (integer weights and a dyadic rate,
:func:`treedp.noise.exponential.sample_weighted_laplace`).

Guarantee: a draw with ``rate <= ε / (2Δ)`` is ``PureDP(2Δ·rate)`` for a score of
sensitivity ``Δ``; the privacy unit is one record. Under ``add_remove`` ``Δ = max(q, 1 - q) +
2**-32`` (:func:`rank_sensitivity`); under ``replace`` with ``n`` public, ``Δ = 1``. Each
method states how it composes its draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple, Protocol

import numpy as np

from treedp._validation import must
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import PRIVACY_UNIT, Contract, QuantileResult
from treedp.noise import RandomSource
from treedp.noise.exponential import sample_weighted_laplace
from treedp.noise.rational import dyadic_lower_bound
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import (
    Call,
    as_datetimes,
    datetime_bounds,
    float_up,
    is_datetime_like,
    read_column,
    ticks_in,
)

__all__ = [
    "GRID_BITS",
    "TARGET_BITS",
    "Draws",
    "Grid",
    "GridLike",
    "charge",
    "check_domain",
    "deliver",
    "public_parameters",
    "rank_sensitivity",
    "rank_weights",
    "read_bounds",
    "read_levels",
    "read_sorted",
    "refuse_private",
    "select",
    "selection_rates",
    "target_rank",
]

#: The output grid: 2**48 equal cells of [lo, hi], output at midpoints.
GRID_BITS = 48
#: The target rank q·n is rounded down to a multiple of 2**-TARGET_BITS (so the score is rational).
TARGET_BITS = 32


class GridLike(Protocol):
    """What the selections read of a grid: its number of units, each unit's value, and
    ``#{units with value <= x}`` (:class:`Grid`;
    :class:`~treedp.value_methods.float_lattice.UnitGrid`)."""

    @property
    def cells(self) -> int: ...

    def values(self, k: np.ndarray) -> np.ndarray: ...

    def count_at_most(self, x: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class Grid:
    """The public output grid: ``2**bits`` cell midpoints of ``[lo, hi]``."""

    lo: float
    hi: float
    bits: int = GRID_BITS

    @property
    def cells(self) -> int:
        return 1 << self.bits

    @property
    def half(self) -> float:
        """Half a cell's half, ``hi/2**(bits+1) - lo/2**(bits+1)`` (no overflow)."""
        return float(self.hi / 2 ** (self.bits + 1) - self.lo / 2 ** (self.bits + 1))

    def values(self, k: np.ndarray) -> np.ndarray:
        """The midpoint of cell ``k``, in ``[lo, hi]``: ``2·(lo/2 + (k + 1/2)·half)``, at half
        scale so nothing overflows; non-decreasing in ``k`` (monotone float operations)."""
        k = np.asarray(k, dtype=np.int64).astype(np.float64)
        return np.clip(2.0 * (self.lo / 2 + (k + 0.5) * self.half), self.lo, self.hi)

    def count_at_most(self, x: np.ndarray) -> np.ndarray:
        """``#{k : grid(k) <= x}`` for each ``x``, exactly: a floating-point guess corrected by
        a few unit steps, then bisection for the rest (narrow bounds, equal grid floats)."""
        cells, lo, hi, half = self.cells, self.lo, self.hi, self.half

        def at(k: np.ndarray) -> np.ndarray:
            return self.values(np.clip(k, 0, cells - 1))

        # bounds of subnormal width have half == 0: the guess is then inf or NaN (corrected
        # below), silently, since a warning would depend on the data (privacy review R8, F4)
        with np.errstate(all="ignore"):
            guess = np.floor((np.clip(x, lo, hi) / 2 - lo / 2) / half + 0.5)
            k: np.ndarray = np.clip(np.nan_to_num(guess, nan=0.0), 0, cells).astype(np.int64)
        for _ in range(4):
            up = (k < cells) & (at(k) <= x)
            down = (k > 0) & (at(k - 1) > x)
            if not (up.any() or down.any()):
                return k
            k = k + up - down
        todo = np.flatnonzero(((k < cells) & (at(k) <= x)) | ((k > 0) & (at(k - 1) > x)))
        low = np.zeros(todo.size, dtype=np.int64)  # invariant: grid(low - 1) <= x < grid(high)
        high = np.full(todo.size, cells, dtype=np.int64)
        xt = x[todo]
        while (low < high).any():
            mid = (low + high) // 2
            above = at(mid) > xt
            high = np.where(above, mid, high)
            low = np.where(above, low, mid + 1)
        k[todo] = low
        return k


def rank_sensitivity(level: Fraction) -> Fraction:
    """Δ of the score ``-|i(y) - t(n)|`` to adding or removing one record.

    A record added below ``y`` raises ``i`` by 1 and ``t`` by ``t(n+1) - t(n)``, within
    ``2**-32`` of ``q``; one at or above ``y`` moves only ``t``: ``Δ = max(q, 1 - q) + 2**-32``.
    """
    return max(level, 1 - level) + Fraction(1, 2**TARGET_BITS)


def target_rank(level: Fraction, n: int) -> Fraction:
    """The target ``t = floor(q n 2**32) / 2**32``: ``q n`` rounded down by under ``2**-32``."""
    return Fraction(math.floor(level * n * 2**TARGET_BITS), 2**TARGET_BITS)


def rank_weights(
    grid: GridLike, x: np.ndarray, first: int = 0, last: int | None = None
) -> np.ndarray:
    """The number of grid units ``first..last`` with exactly ``i`` of the sorted ``x`` below
    (with no data, one rank, 0, holding every unit)."""
    last = grid.cells - 1 if last is None else last
    inner = np.clip(grid.count_at_most(x), first, last + 1)
    return np.diff(np.concatenate([[first], inner, [last + 1]]))


def select(
    weights: np.ndarray,
    level: Fraction,
    n: int,
    rate: Fraction,
    size: int,
    source: RandomSource,
    first: int = 0,
) -> np.ndarray:
    """``size`` draws of grid units ``first..``, ``P ∝ exp(-rate |i - t|)`` per unit
    (``weights`` from :func:`rank_weights`; ``rate`` dyadic, the caller's calibration)."""
    target = target_rank(level, n)
    return sample_weighted_laplace(weights, target, rate, size, source) + first


def selection_rates(
    qa: np.ndarray, eps: float, relation: str, sensitivity: Any
) -> tuple[Fraction, list[float], list[tuple[Fraction, Fraction]]]:
    """One selection per level at ``ε / m`` each (basic composition): each level's rate
    ``ε/(2Δ m)`` rounded down to a dyadic, no randomness. Returns the exact ε spent (the sum
    of ``2Δ · rate``, at most ε), the sensitivities and ``(level, rate)`` per level;
    ``sensitivity(level, relation)`` is the score's ``Δ``."""
    eps_each = Fraction(eps) / qa.size
    spent = Fraction(0)
    sens: list[float] = []
    selections: list[tuple[Fraction, Fraction]] = []
    for level in qa:
        exact_level = Fraction(float(level))
        delta_score = sensitivity(exact_level, relation)
        rate = dyadic_lower_bound(eps_each / (2 * delta_score))
        spent += 2 * delta_score * rate
        sens.append(float(delta_score))
        selections.append((exact_level, rate))
    return spent, sens, selections


def read_levels(q: Any) -> np.ndarray:
    """The levels as a non-empty 1-d float array in [0, 1]."""
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0 or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    return qa


def refuse_private(bounds: Any) -> None:
    """``bounds="private"`` (or a private side) names the function that finds them."""
    parts = bounds if isinstance(bounds, tuple | list) else (bounds,)
    if any(isinstance(b, str) and b.strip().lower() == "private" for b in parts):
        raise InvalidParameterError(
            "quantile_exponential and median take public 'bounds'; for bounds found "
            "privately use treedp.quantiles(values, q, bounds='private', "
            "method='exponential')."
        )


def read_bounds(bounds: Any) -> tuple[float, float, str | None]:
    """The public bounds as floats (ticks of their unit for datetimes), and the unit."""
    refuse_private(bounds)
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(must("bounds", f"be a pair. Got {bounds!r}."))
    dated = [is_datetime_like(b) for b in bounds]
    if any(dated):
        if not all(dated):
            raise InvalidTypeError("The 'bounds' parameter mixes a datetime and a number.")
        lo_t, hi_t, unit = datetime_bounds((bounds[0], bounds[1]))
        return float(lo_t), float(hi_t), unit
    try:
        lo, hi = float(bounds[0]), float(bounds[1])
    except (TypeError, ValueError):
        raise InvalidTypeError(
            must("bounds", f"hold two numbers or two datetimes. Got {bounds!r}.")
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError(f"The 'bounds' must be finite with lo < hi. Got {bounds!r}.")
    return lo, hi, None


def read_sorted(
    values: Any, policy: str, relation: str, out_unit: str | None
) -> tuple[np.ndarray, str | None]:
    """The data sorted, as float64 on the bounds' scale (ticks of ``out_unit`` for datetime
    bounds, which need datetime data), and the data's own datetime unit."""
    data, unit = read_column(values, policy, relation)
    if out_unit is not None:
        if unit is None:
            raise InvalidTypeError(
                "The 'bounds' parameter holds datetimes but 'values' holds numbers."
            )
        data = ticks_in(data, unit, out_unit)
    return np.sort(np.asarray(data, dtype=np.float64)), unit


def public_parameters(eps: float, qa: np.ndarray, bounds: Any, nan: Any) -> dict[str, Any]:
    """The public parameters of a call (in its result and its spend record)."""
    return {
        "epsilon": eps,
        "q": tuple(float(v) for v in qa),
        "bounds": (bounds[0], bounds[1]),
        "nan": nan,
    }


def check_domain(n: int, contract: Contract) -> None:
    """Refuse data outside the guarantee's public domain (fewer than 2**32 records)."""
    if n > (contract.max_records or n):  # 2**32 float64 values: 32 GiB
        raise DataError(
            f"{contract.name}'s guarantee is stated for datasets of fewer than 2**32 "
            "records (its public domain, CONTRACT.max_records); split the data or use the tree."
        )


def charge(
    accountant: Accountant | None,
    contract: Contract,
    spent: Fraction,
    relation: str,
    parameters: dict[str, Any],
) -> None:
    """Charge ``PureDP(spent)`` before any selection is drawn (fail closed)."""
    if accountant is not None:
        accountant.charge(
            SpendRecord(contract.name, PureDP(float_up(spent)), relation, PRIVACY_UNIT, parameters)
        )


class Draws(NamedTuple):
    """What a method's inner function returns: the draws and what its result reports."""

    values: np.ndarray  # draws × levels, floats (ticks of ``unit`` for datetime bounds)
    levels: np.ndarray
    epsilon: float
    spent: Fraction
    sensitivity: list[float]
    source: RandomSource
    unit: str | None
    parameters: dict[str, Any]
    total: np.ndarray | None = None  # per draw, a released count of the records, if any


def deliver(
    draws: Draws, q: Any, neighbours: Any, name: str, details: bool, points: int = 1 << GRID_BITS
) -> Any:
    """The first draw as the caller asked: one value for a scalar ``q``, else an array;
    with ``details`` a :class:`~treedp.mechanisms.results.QuantileResult`."""
    out, unit = draws.values[0], draws.unit
    released: Any = out if unit is None else as_datetimes(out, unit)
    if details:
        call = Call(name, str(neighbours), draws.epsilon, draws.parameters, draws.source)
        guarantee = PureDP(float_up(draws.spent))
        return call.result(
            QuantileResult,
            released,
            guarantee,
            draws.sensitivity,
            q=draws.levels,
            grid_points=points,
            records=None if draws.total is None else float(draws.total[0]),
        )
    if np.ndim(q) == 0:
        return float(released[0]) if unit is None else released[0]
    return released
