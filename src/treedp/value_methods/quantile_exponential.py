"""Smith's exponential-mechanism quantile on a fine public grid, sampled exactly; the median.

Guarantee: pure ε-DP per call (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``replace`` or
``add_remove`` neighbours, privacy unit one record. The score's sensitivity is 1 under
``replace`` and ``max(q, 1 - q) + 2**-32`` under ``add_remove`` (:func:`_score_sensitivity`).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import check_epsilon
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import PRIVACY_UNIT, Contract, QuantileResult
from treedp.noise import RandomSource, resolve_source
from treedp.noise.exponential import sample_weighted_laplace
from treedp.noise.rational import dyadic_lower_bound
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import (
    as_datetimes,
    check_nan,
    check_neighbours,
    datetime_bounds,
    describe,
    float_up,
    is_datetime_like,
    read_column,
    ticks_in,
)

__all__ = [
    "CONTRACT",
    "GRID_BITS",
    "NEIGHBOURS",
    "TARGET_BITS",
    "median",
    "quantile_exponential",
]

#: The exponential mechanism's output grid: 2**48 equal cells of [lo, hi], output at midpoints.
GRID_BITS = 48
#: The target rank q·n is rounded down to a multiple of 2**-TARGET_BITS (so the score is rational).
TARGET_BITS = 32
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


def _grid_values(k: np.ndarray, lo: float, hi: float, half: float) -> np.ndarray:
    """The public grid point ``k``: the midpoint of cell ``k``, kept inside ``[lo, hi]``.

    ``half`` is half a cell half, ``hi/2**49 - lo/2**49``; the point is computed at half scale,
    ``2·(lo/2 + (k + 1/2)·half)``, so no intermediate overflows even for bounds near the
    largest float. Non-decreasing in ``k`` (floating-point multiplication and addition are
    monotone; halving and doubling are exact).
    """
    return np.clip(2.0 * (lo / 2 + (k.astype(np.float64) + 0.5) * half), lo, hi)


def _grid_count_at_most(x: np.ndarray, lo: float, hi: float, half: float) -> np.ndarray:
    """``#{k : grid(k) <= x}`` for each ``x``, exactly.

    The answer is the ``k`` with ``grid(k - 1) <= x < grid(k)``. A floating-point guess is
    corrected by a few unit steps; values still unresolved (grid points that round to the same
    float, when the bounds are narrow) are settled by bisection on ``[0, 2**48]``.
    """
    cells = 1 << GRID_BITS

    def at(k: np.ndarray) -> np.ndarray:
        return _grid_values(np.clip(k, 0, cells - 1), lo, hi, half)

    guess = np.floor((np.clip(x, lo, hi) / 2 - lo / 2) / half + 0.5)
    k: np.ndarray = np.clip(guess, 0, cells).astype(np.int64)
    for _ in range(4):
        up = (k < cells) & (at(k) <= x)
        down = (k > 0) & (at(k - 1) > x)
        if not (up.any() or down.any()):
            return k
        k = k + up - down
    todo = np.flatnonzero(((k < cells) & (at(k) <= x)) | ((k > 0) & (at(k - 1) > x)))
    low = np.zeros(todo.size, dtype=np.int64)  # invariant: grid(low - 1) <= x, grid(high) > x
    high = np.full(todo.size, cells, dtype=np.int64)
    xt = x[todo]
    while (low < high).any():
        mid = (low + high) // 2
        above = at(mid) > xt
        high = np.where(above, mid, high)
        low = np.where(above, low, mid + 1)
    k[todo] = low
    return k


def _spread(x: np.ndarray) -> np.ndarray:
    """Integer data spread inside their unit cells: the ``k`` records of value ``v`` (sorted
    input) move to ``v + (i + 1/2)/k``, ``i = 0..k-1``.

    Why the score keeps its sensitivity: adding a record of value ``v`` turns the ``k``
    positions of its block into ``k + 1`` that interleave with them (``(i + 1/2)/(k + 1) <=
    (i + 1/2)/k <= (i + 3/2)/(k + 1)``), so for every grid point ``y`` the count ``#{x' < y}``
    grows by 0 or 1, as for one record added to continuous data; the other blocks do not
    move. Floating-point rounding is monotone, so the computed positions interleave too.
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
    spread: np.ndarray = x + (i + 0.5) / k
    return spread


def _score_sensitivity(level: Fraction, neighbours: str) -> Fraction:
    """Δ of the score ``-|i - t(n)|``, ``i = #{x < y}``, ``t(n) = floor(q n 2**L) / 2**L``.

    ``replace``: ``n`` is fixed and one record moves, so ``i`` changes by at most 1: ``Δ = 1``.
    ``add_remove``: a record added below ``y`` raises ``i`` by 1 and ``t`` by ``t(n+1) - t(n)``,
    which lies within ``2**-L`` of ``q``; one added above moves only ``t``. So ``Δ = max(q,
    1 - q) + 2**-L``.
    """
    if neighbours == "replace":
        return Fraction(1)
    return max(level, 1 - level) + Fraction(1, 2**TARGET_BITS)


def _refuse_private(bounds: Any) -> None:
    """``bounds="private"`` (or a private side) names the function that finds them."""
    parts = (
        (bounds,)
        if isinstance(bounds, str)
        else tuple(bounds)
        if isinstance(bounds, tuple | list)
        else ()
    )
    if any(isinstance(b, str) and b.strip().lower() == "private" for b in parts):
        raise InvalidParameterError(
            "quantile_exponential and median take public 'bounds'; for bounds found "
            "privately use treedp.quantiles(values, q, bounds='private', "
            "method='exponential')."
        )


def _integer_bounds(bounds: Any) -> tuple[float, float]:
    """Integer bounds ``lo <= hi`` (``integers=True``), as floats."""
    _refuse_private(bounds)
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


def _read_bounds(bounds: Any) -> tuple[float, float, str | None]:
    """The public bounds as floats (ticks of their unit for datetimes), and the unit."""
    _refuse_private(bounds)
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(f"The 'bounds' parameter must be a pair. Got {bounds!r}.")
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
            f"The 'bounds' parameter must hold two numbers or two datetimes. Got {bounds!r}."
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError(f"The 'bounds' must be finite with lo < hi. Got {bounds!r}.")
    return lo, hi, None


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
) -> tuple[np.ndarray, np.ndarray, float, Fraction, list[float], RandomSource, str | None]:
    """Validate, then draw ``draws`` independent selections per level (each an ε-release).

    Returns the draws (float; ticks of ``unit`` for datetime bounds), the levels, ε, the ε
    spent (exact), the sensitivities, the source and the datetime unit of the output. With an
    ``accountant`` (one draw only), the spend is charged after every check and before any
    selection is drawn.
    """
    check_accountant(accountant)
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, NEIGHBOURS)
    policy = check_nan(nan, relation)
    if not isinstance(integers, bool):
        raise InvalidParameterError(f"The 'integers' parameter must be a bool. Got {integers!r}.")
    if integers:
        lo, hi = _integer_bounds(bounds)
        out_unit = None
        hi += 1.0  # the grid covers the unit cells [v, v + 1) of lo..hi
    else:
        lo, hi, out_unit = _read_bounds(bounds)
    half = hi / 2 ** (GRID_BITS + 1) - lo / 2 ** (GRID_BITS + 1)
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0 or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    source = resolve_source(rng)
    data, unit = read_column(values, policy, relation)
    if out_unit is not None:
        if unit is None:
            raise InvalidTypeError(
                "The 'bounds' parameter holds datetimes but 'values' holds numbers."
            )
        data = ticks_in(data, unit, out_unit)
    elif unit is not None:  # numeric bounds with datetimes: ticks of the data's own unit
        data = data.astype(np.float64)
    x = np.sort(data)
    if integers:  # each value into its unit cell (clamped to the bounds), ties spread in it
        if unit is not None:
            raise InvalidTypeError("integers=True takes numbers, not datetimes.")
        x = _spread(np.floor(np.clip(x, lo, hi - 1.0)))
    n = x.size
    if n > (CONTRACT.max_records or n):  # outside the domain (2**32 float64 values: 32 GiB)
        raise DataError(
            "quantile_exponential's guarantee is stated for datasets of fewer than 2**32 "
            "records (its public domain, CONTRACT.max_records); split the data or use the tree."
        )
    # Grid points with exactly i data values below them: [count(<= x_(i)), count(<= x_(i+1))).
    # ±inf and other values outside the bounds count as at the bound. With n = 0 there is one
    # rank, 0, holding the whole grid: the output is uniform on the grid.
    starts = np.concatenate([[0], _grid_count_at_most(x, lo, hi, half), [1 << GRID_BITS]])
    weights = np.diff(starts)
    eps_each = Fraction(eps) / qa.size
    out = np.empty((draws, qa.size))
    spent = Fraction(0)
    sens: list[float] = []
    selections: list[tuple[Fraction, Fraction]] = []
    for level in qa:  # the targets and rates: no randomness
        exact_level = Fraction(float(level))
        target = Fraction(math.floor(exact_level * n * 2**TARGET_BITS), 2**TARGET_BITS)
        delta_score = _score_sensitivity(exact_level, relation)
        rate = dyadic_lower_bound(eps_each / (2 * delta_score))
        spent += 2 * delta_score * rate
        sens.append(float(delta_score))
        selections.append((target, rate))
    if accountant is not None:  # committed before any selection is drawn (fail closed)
        accountant.charge(
            SpendRecord(
                CONTRACT.name,
                PureDP(float_up(spent)),
                relation,
                PRIVACY_UNIT,
                _parameters(eps, qa, bounds, nan, integers),
            )
        )
    for j, (target, rate) in enumerate(selections):
        units = sample_weighted_laplace(weights, target, rate, draws, source)
        out[:, j] = _grid_values(units, lo, hi, half)
    if integers:  # the integer whose cell holds the grid point (post-processing)
        out = np.minimum(np.floor(out), hi - 1.0)
    return out, qa, eps, spent, sens, source, out_unit


def _parameters(
    eps: float, qa: np.ndarray, bounds: Any, nan: Any, integers: bool = False
) -> dict[str, Any]:
    """The public parameters of a call (in its result and its spend record)."""
    out = {
        "epsilon": eps,
        "q": tuple(float(v) for v in qa),
        "bounds": (bounds[0], bounds[1]),
        "nan": nan,
    }
    if integers:
        out["integers"] = True
    return out


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
        cell holds the selected grid point.

    Returns
    -------
    float, numpy.datetime64, ndarray or QuantileResult
        One value for a scalar ``q``, else one per level.

    References
    ----------
    .. [Smi11] A. Smith. "Privacy-preserving statistical estimation with optimal convergence
       rates". STOC 2011.
    """
    out, qa, eps, spent, sens, source, unit = _quantile_exponential(
        values, q, bounds, epsilon, neighbours, nan, rng, 1, accountant, integers
    )
    released: Any = out[0] if unit is None else as_datetimes(out[0], unit)
    if details:
        return QuantileResult(
            value=released,
            guarantee=PureDP(float_up(spent)),
            neighbours=str(neighbours),
            mechanism=CONTRACT.name,
            epsilon=eps,
            sensitivity=tuple(sens),
            parameters=_parameters(eps, qa, bounds, nan, integers),
            randomness=describe(source),
            q=qa,
            grid_points=1 << GRID_BITS,
        )
    if np.ndim(q) == 0:
        return float(released[0]) if unit is None else released[0]
    return released


def median(
    values: Any,
    *,
    epsilon: float,
    bounds: tuple[Any, Any],
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
    integers: bool = False,
) -> Any:
    """A private median: the exponential-mechanism quantile at ``q = 1/2``.

    ``median(values, epsilon=..., bounds=...)`` is ``quantile_exponential(values, 0.5, ...)``:
    pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``) under ``replace`` (score sensitivity 1)
    or ``add_remove`` (sensitivity ``1/2 + 2**-32``), privacy unit one record; defined on
    every dataset, the empty one included. See :func:`quantile_exponential` for the
    mechanism, the ``nan`` policy and datetimes; :func:`treedp.stable_median` and
    :func:`treedp.subsample_and_aggregate` are the (ε, δ) alternatives.

    Parameters
    ----------
    values : array-like
        The data (numbers or datetimes).
    epsilon : float
        The budget.
    bounds : (lo, hi)
        Public bounds (numbers or datetimes).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        As :func:`treedp.quantiles` and the tree (the default was ``"replace"`` before).
    nan : {"error", "drop"}, default="error"
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.QuantileResult` instead of the value.
    accountant : Accountant, optional
        Charged before anything is drawn, as for :func:`quantile_exponential`.
    integers : bool, default=False
        Integer data on integer bounds: the median is an integer of the domain, on the right
        side of a block of ties (:func:`quantile_exponential`). For private bounds use
        ``treedp.quantiles(values, 0.5, bounds="private", ...)``.

    Returns
    -------
    float, numpy.datetime64 or QuantileResult
    """
    return quantile_exponential(
        values,
        0.5,
        bounds=bounds,
        epsilon=epsilon,
        neighbours=neighbours,
        nan=nan,
        rng=rng,
        details=details,
        accountant=accountant,
        integers=integers,
    )


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
        raise InvalidParameterError(f"The 'size' parameter must be an int >= 1. Got {size!r}.")
    out = _quantile_exponential(
        values, q, bounds, epsilon, neighbours, nan, rng, size, None, integers
    )[0]
    return out if np.ndim(q) else out[:, 0]
