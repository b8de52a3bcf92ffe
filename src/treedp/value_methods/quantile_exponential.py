"""Smith's exponential-mechanism quantile on a fine public grid, sampled exactly.

Guarantee: pure ε-DP per call (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``replace`` or
``add_remove`` neighbours, privacy unit one record. The score's sensitivity is 1 under
``replace`` and ``max(q, 1 - q) + 2**-32`` under ``add_remove`` (:func:`_score_sensitivity`).
Ties are spread before scoring, which keeps that sensitivity: inside each integer's unit cell
with ``integers=True`` (:func:`_spread`), else the records at each bound inside a public zone
there, a unit in the zone answering the bound (:mod:`~.bound_blocks`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import NDArray

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import Contract, QuantileResult
from treedp.noise import RandomSource, resolve_source
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.value_methods._column import check_nan, check_neighbours, is_datetime_like
from treedp.value_methods.bound_blocks import ZonedGrid, answers, spread_at_bounds
from treedp.value_methods.exponential_core import (
    GRID_BITS,
    TARGET_BITS,
    Draws,
    Grid,
    charge,
    check_domain,
    deliver,
    public_parameters,
    rank_sensitivity,
    rank_weights,
    read_bounds,
    read_levels,
    read_sorted,
    refuse_private,
    select,
    selection_rates,
)

__all__ = [
    "CONTRACT",
    "GRID_BITS",
    "NEIGHBOURS",
    "TARGET_BITS",
    "quantile_exponential",
]

#: ``integers=True`` takes bounds of magnitude below this (``|lo|``, ``|hi| + 1``): float64
#: resolves the positions ``v + (i + 1/2)/k`` inside a unit cell only below ``2**52``.
INTEGER_LIMIT = 2**52
#: The neighbour relations the guarantee holds for.
NEIGHBOURS: tuple[str, ...] = ("replace", "add_remove")
CONTRACT = Contract(
    name="quantile_exponential",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "of the score -|#{x < y} - t(n)|: 1 under replace (n fixed, one rank moves by 1); "
        "max(q, 1 - q) + 2**-32 under add_remove (the rank and the target both move)"
    ),
    max_records=2**32 - 1,  # the rank arithmetic: A·(n + 1) < 2**63 with 31-bit rates
)


def _spread(x: np.ndarray) -> np.ndarray:
    """Integer data spread inside their unit cells: the ``k`` records of value ``v`` (sorted
    input) move to ``v + (i + 1/2)/k``, ``i = 0..k-1``.

    Why the score keeps its sensitivity: adding a record of value ``v`` turns the ``k``
    positions of its block into ``k + 1`` that interleave with them (``(i + 1/2)/(k + 1) <=
    (i + 1/2)/k <= (i + 3/2)/(k + 1)``), so for every grid point ``y`` the count ``#{x' < y}``
    grows by 0 or 1, as for one record added to continuous data; the other blocks do not
    move. Floating-point rounding is monotone, so the computed positions interleave too.

    Every position lies in ``[v, v + 1)``, so its floor is ``v`` exactly and a split at an
    integer (the recursion's whole cells, :class:`~.quantiles_recursive._CellSplits`) reads
    only the integer ``v``: no rounding enters that decision. The sum ``v + (i + 1/2)/k``
    rounds to at least ``v``, but for ``|v| >= 2**48`` it can round up to ``v + 1``, the
    cell's end (privacy review F1: a split there cut a block of ties, so one added record
    changed two nodes). It is clamped to the largest float below ``v + 1`` (exact for
    ``|v| < 2**52``, :data:`INTEGER_LIMIT`): a monotone map, so the interleaving holds.
    Moving a record from one block to another is one removal and one addition: the count
    changes by at most 1. So the exponential mechanism on the spread data has the same ``Δ``
    (:func:`_score_sensitivity`) as on continuous data, and a block of ties ``[#(x < v),
    #(x <= v)]`` holding the target rank now holds grid points of score near 0 inside ``v``'s
    cell (before, every point of that cell scored ``-|#(x < v) - t|``, and the value below a
    block could win).
    """
    if x.size == 0:
        return x
    _, start, counts = np.unique(x, return_index=True, return_counts=True)
    k = np.repeat(counts, counts).astype(np.float64)
    i = np.arange(x.size) - np.repeat(start, counts)
    spread: np.ndarray = np.minimum(x + (i + 0.5) / k, np.nextafter(x + 1.0, -np.inf))
    return spread


def _score_sensitivity(level: Fraction, neighbours: str) -> Fraction:
    """Δ of the score ``-|i - t(n)|``, ``i = #{x < y}``, ``t(n) = floor(q n 2**32) / 2**32``.

    ``replace``: ``n`` is fixed and one record moves, so ``i`` changes by at most 1: ``Δ = 1``.
    ``add_remove``: ``Δ = max(q, 1 - q) + 2**-32``
    (:func:`~treedp.value_methods.exponential_core.rank_sensitivity`).
    """
    return Fraction(1) if neighbours == "replace" else rank_sensitivity(level)


def _integer_bounds(bounds: Any) -> tuple[float, float]:
    """Integer bounds ``lo <= hi`` (``integers=True``), as floats."""
    refuse_private(bounds)
    if isinstance(bounds, tuple | list) and any(is_datetime_like(b) for b in bounds):
        raise InvalidTypeError("integers=True is for numbers, not datetimes.")
    if (
        not isinstance(bounds, tuple | list)
        or len(bounds) != 2
        or not all(
            isinstance(b, int | np.integer | float | np.floating) and not isinstance(b, bool)
            for b in bounds
        )
        or not all(math.isfinite(float(b)) and float(b).is_integer() for b in bounds)
        or float(bounds[0]) > float(bounds[1])
    ):
        raise InvalidParameterError(f"integers=True needs integer bounds lo <= hi. Got {bounds!r}.")
    if max(abs(float(bounds[0])), abs(float(bounds[1])) + 1) >= INTEGER_LIMIT:
        raise InvalidParameterError(
            "integers=True needs bounds of magnitude below 2**52 (ties are spread inside "
            f"each integer's unit cell, which float64 resolves only below it). Got {bounds!r}."
        )
    return float(bounds[0]), float(bounds[1])


def _quantile_exponential(
    values: Any,
    q: Any,
    bounds: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    rng: RandomSource | None,
    draws: int,
    accountant: Accountant | None = None,
    integers: bool = False,
) -> Draws:
    """Validate, then draw ``draws`` independent selections per level (each an ε-release).

    With an ``accountant`` (one draw only), the spend is charged after every check and before
    any selection is drawn.
    """
    check_accountant(accountant, unit="record")
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, NEIGHBOURS)
    policy = check_nan(nan, relation)
    if not isinstance(integers, bool):
        raise InvalidParameterError(must("integers", f"be a bool. Got {integers!r}."))
    if integers:
        lo, hi = _integer_bounds(bounds)
        out_unit = None
        hi += 1.0  # the grid covers the unit cells [v, v + 1) of lo..hi
    else:
        lo, hi, out_unit = read_bounds(bounds)
    grid = Grid(lo, hi)
    zoned = ZonedGrid(grid)  # the continuous selections' units: zones weighted
    qa = read_levels(q)
    source = resolve_source(rng)
    x, unit = read_sorted(values, policy, relation, out_unit)
    if integers:  # each value into its unit cell (clamped to the bounds), ties spread in it
        if unit is not None:
            raise InvalidTypeError("integers=True takes numbers, not datetimes.")
        x = _spread(np.floor(np.clip(x, lo, hi - 1.0)))
    else:  # the records at each bound spread in a public zone there (answered as the bound)
        x = spread_at_bounds(x, zoned)
    check_domain(x.size, CONTRACT)
    # ±inf and other values outside the bounds count as at the bound. With n = 0 there is one
    # rank, 0, holding the whole grid: the output is uniform on the grid.
    weights = rank_weights(grid if integers else zoned, x)
    spent, sens, selections = selection_rates(qa, eps, relation, _score_sensitivity)
    parameters = public_parameters(eps, qa, bounds, nan)
    if integers:
        parameters["integers"] = True
    charge(accountant, CONTRACT, spent, relation, parameters)
    out = np.empty((draws, qa.size))
    for j, (level, rate) in enumerate(selections):
        units = select(weights, level, x.size, rate, draws, source)
        out[:, j] = grid.values(units) if integers else answers(zoned, units)
    if integers:  # the integer whose cell holds the grid point (post-processing)
        out = np.minimum(np.floor(out), hi - 1.0)
    return Draws(out, qa, eps, spent, sens, source, out_unit, parameters)


@overload
def quantile_exponential(
    values: Any,
    q: float,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> float | np.datetime64: ...


@overload
def quantile_exponential(
    values: Any,
    q: Sequence[float] | NDArray[Any],
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> NDArray[Any]: ...


@overload
def quantile_exponential(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> QuantileResult: ...


@overload
def quantile_exponential(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> float | np.datetime64 | NDArray[Any] | QuantileResult: ...


@accepts_aliases
def quantile_exponential(
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
    integers: bool = False,
) -> Any:
    """Smith's exponential-mechanism quantile, on a fine public grid, sampled exactly.

    The output space is a public grid of ``2**48`` points in ``[lo, hi]`` (the midpoints of equal
    cells; the resolution is ``(hi - lo) / 2**48``, finer than most data). Grid point ``y`` has
    score ``-|i(y) - t|`` with ``i(y) = #{x_j < y}`` (data outside the bounds, ``±inf``
    included, count as at the bound) and target ``t = floor(q n 2**32) / 2**32`` (``q n``
    rounded down by less than ``2**-32`` ranks), and is output with probability ``∝ exp(-rate
    · |i(y) - t|)``, ``rate <= ε / (2Δ)``. The grid points with rank ``i`` are counted exactly
    (data and grid compared in floating point, both public-rule exact), so the mechanism is
    Smith's continuous one with the uniform measure replaced by the counting measure on the
    grid.

    The selection is sampled exactly (:func:`treedp.noise.exponential.sample_weighted_laplace`):
    integer weights, a dyadic rate and integer-arithmetic Bernoulli trials on uniform words from
    ``rng`` (default: the operating system's generator). ``n = 10**7`` or heavy ties (ranks with
    no grid point get weight 0) need no floating-point exponentials at all.

    Guarantee: ``PureDP(ε_spent)`` per call, ``ε_spent <= ε``, on every dataset of fewer than
    ``2**32`` records; privacy unit one record. Sensitivity of the score: under ``replace``
    (``n = len(values)`` public) ``Δ = 1``; under ``add_remove`` ``Δ = max(q, 1 - q) + 2**-32``
    (see :func:`_score_sensitivity`). The rate is ``ε/(2Δ)`` rounded *down* to ``A / 2**k``
    with a 31-bit ``A``, so the budget spent is at most ε (and at least ``ε (1 - 2**-29)``).
    Several ``q`` split ε equally (basic composition). The empty dataset is a valid input:
    every grid point has score ``0`` and the output is uniform on the grid.

    Datetimes: with datetime ``bounds`` (numpy, Python or ISO strings; units coarser than a
    second become seconds) the data must be datetimes; both are compared as ticks of the
    bounds' unit and the output is ``datetime64`` of that unit (the grid point rounded to the
    nearest tick, post-processing). With numeric bounds datetimes are read as ticks of their
    own unit and the output is a number of ticks.

    Parameters
    ----------
    values : array-like
        The data (numbers or datetimes); ``len(values) < 2**32``. ``±inf`` count as at the
        bounds.
    q : float or array-like
        Quantile levels in [0, 1].
    bounds : (lo, hi)
        Public bounds (numbers or datetimes); the output lies in them and data outside count
        as at the bound.
    epsilon : float
        Total budget over all ``q``.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        As :func:`treedp.quantiles` and the tree (the default was ``"replace"`` before).
    nan : {"error", "drop"}, default="error"
        NaN and NaT values raise a :class:`DataError` whose message is the same for every
        dataset (no count), or are dropped with ``"drop"``. Dropping is a per-record filter,
        so it keeps the ``add_remove`` guarantee on every dataset; under ``replace`` it would
        make the number of used records private while ``n`` is public, so it is refused there
        (a refusal that depends only on the parameters).
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.QuantileResult` with the guarantee, the
        spend record and the randomness description instead of the values alone.
    accountant : Accountant, optional
        A budget (:class:`treedp.Accountant` or a file ledger) charged ``PureDP(ε_spent)``
        after every check and before anything is drawn; a charge past its total raises
        :class:`~treedp.exceptions.BudgetExceededError` and nothing is drawn or released.
    integers : bool, default=False
        Integer data on integer ``bounds`` ``lo <= hi``: the answer is an integer of
        ``lo..hi``. The grid covers the unit cells ``[v, v + 1)``; each value is put in its
        cell (``floor``, clamped to the bounds) and the ``k`` records of a block of ties are
        spread at ``v + (i + 1/2)/k`` inside it (:func:`_spread`: the same sensitivity), so a
        block holding the target rank wins and the answer lands on the right side of ties
        (the median of ten 1s, eighty 2s and ten 3s is 2). The answer is the integer whose
        cell holds the selected grid point. Without it, the records at or beyond each bound
        are spread the same way inside the first or last ``2**-20`` of the grid and a point
        there answers the bound itself (:mod:`~treedp.value_methods.bound_blocks`), so a block
        at a bound (70% zeros on ``(0, hi)``) gives ``lo`` for the levels inside it.

    Returns
    -------
    float, numpy.datetime64, ndarray or QuantileResult
        One value for a scalar ``q``, else one per level.

    References
    ----------
    .. [Smi11] A. Smith. "Privacy-preserving statistical estimation with optimal convergence
       rates". STOC 2011.
    """
    draws = _quantile_exponential(
        values, q, bounds, epsilon, neighbours, nan, rng, 1, accountant, integers
    )
    return deliver(draws, q, neighbours, CONTRACT.name, details)


def _quantile_exponential_draws(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    size: int,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    integers: bool = False,
) -> np.ndarray:
    """``size`` independent outputs of :func:`quantile_exponential`, for simulation only.

    NOT a private release: each of the ``size`` draws is a separate ε-release of the same data
    (``size·ε`` in total; averaging them removes the noise). For tests, audits and benchmarks
    that need the output distribution quickly. Returns shape ``(size,)`` for a scalar ``q``,
    else ``(size, len(q))`` (float; ticks of the bounds' unit for datetime bounds).
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidParameterError(must("size", f"be an int >= 1. Got {size!r}."))
    out = _quantile_exponential(
        values, q, bounds, epsilon, neighbours, nan, rng, size, None, integers
    ).values
    return out if np.ndim(q) else out[:, 0]
