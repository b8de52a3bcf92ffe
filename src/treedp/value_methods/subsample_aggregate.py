"""Subsample-and-aggregate: a query on subsamples, and the noisy mode of its answers.

Guarantee: (ε, δ)-DP, ``replace`` neighbours (``n = len(values)`` public), privacy unit one
record. The noised quantity is the mode's frequency among the ``K`` answers; its sensitivity
``c`` is the number of subsamples one record can be in (1 for disjoint blocks; a certified
binomial tail bound for sampling with replacement).

Derivation: ``Z ~ DLap(c/ε)``, and the mode is released when ``f + Z >= T`` (``f`` its
frequency). If ``f - c`` still exceeds half the answers, neighbours have the same mode and only
the 1-Lipschitz (in units of ``c``) test differs: ratio ``e^ε``. Otherwise ``f <= floor(K/2) +
c`` and the release has probability at most ``P(Z >= T - floor(K/2) - c)``, which ``T`` makes
at most the remaining δ. The realised δ adds the certified sampling failure bound ``P(R > c)``
(replacement variant, :func:`_sampling_failure`) for the ``k`` used.

Errors depend on public parameters only (``n``, ``m``, ``k``, ``variant``, ``ε``, δ) and their
messages print no ``n``: ``m`` outside ``[1, n]`` (so the empty dataset is refused for every
``m``), too few blocks or subsamples for the noise. NaN/NaT values are outside the domain (a
data-free :class:`~treedp.exceptions.DataError`); ``±inf`` are ordinary values (answers may be
infinite or NaN, and the mode is taken over them as they are).
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.results import Contract, MedianResult
from treedp.noise import RandomSource, noise_scale, resolve_source
from treedp.noise.discrete_laplace import uniform_below
from treedp.noise.tail import tail_threshold, tail_upper
from treedp.privacy import ApproxDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.value_methods._column import (
    Call,
    as_datetimes,
    check_delta,
    clears,
    float_down,
    float_up,
    open_call,
    read_column,
)

__all__ = ["CONTRACT", "NEIGHBOURS", "noisy_mode", "subsample_and_aggregate"]

#: The neighbour relations the guarantee holds for (``n`` is public).
NEIGHBOURS: tuple[str, ...] = ("replace",)
CONTRACT = Contract(
    name="subsample_and_aggregate",
    measure=ApproxDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "c for the mode frequency: one replaced record changes the answers of the subsamples "
        "holding it, 1 for disjoint blocks, at most c except with certified probability "
        "<= δ/2 for sampling with replacement"
    ),
)
NOISY_MODE_CONTRACT = Contract(
    name="noisy_mode",
    measure=ApproxDP,
    neighbours=NEIGHBOURS,
    sensitivity="c (given): the mode frequency changes by at most c when c answers change",
)


_VECTORISED: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "median": lambda block: np.median(block, axis=1),
    "mean": lambda block: block.mean(axis=1),
}

_BITS = 128


def _round(x: Fraction, up: bool) -> Fraction:
    """``x > 0`` rounded up or down to a dyadic rational with ``_BITS`` significant bits."""
    num, den = x.numerator, x.denominator
    shift = _BITS - (num.bit_length() - den.bit_length())
    a, b = (num << shift, den) if shift >= 0 else (num, den << -shift)
    m = -((-a) // b) if up else a // b
    return Fraction(m, 1 << shift) if shift >= 0 else Fraction(m << -shift)


def _pow(base: Fraction, e: int, up: bool) -> Fraction:
    """``base**e`` (``base > 0``) rounded in one direction: every step rounds the same way and
    multiplication of positive numbers is monotone, so the result bounds the exact power."""
    result, b = Fraction(1), base
    while e:
        if e & 1:
            result = _round(result * b, up)
        e >>= 1
        if e:
            b = _round(b * b, up)
    return result


def _sampling_failure(n: int, m: int, k: int, budget: Fraction) -> tuple[int, Fraction]:
    """A count ``c >= 1`` and a certified ``U >= P(R > c)`` with ``U <= budget``.

    ``R ~ Binomial(k, p)``, ``p = 1 - (1 - 1/n)^m``: the number of the ``k`` subsamples (``m``
    rows each, drawn with replacement) that hold a given row.

    Proof of the bound. (1) ``p_up = 1 - L`` with ``L <= (1 - 1/n)^m`` (powers rounded down)
    is at least ``p``, and ``P_p(R > c)`` is non-decreasing in ``p`` (a binomial is
    stochastically increasing in ``p``), so bounding the tail at ``p_up`` bounds it at ``p``.
    (2) The terms ``t_j = C(k, j) p^j q^(k-j)`` (``q = 1 - p_up``, exact) are bounded above by
    ``u_j``: ``u_s`` from the exact binomial coefficient and up-rounded powers, then ``u_{j+1}
    = up(u_j · r_j)`` with the exact ratio ``r_j = (k - j) p / ((j + 1) q) = t_{j+1}/t_j``.
    (3) ``r_j`` decreases in ``j``; once ``r_J <= 1/2`` every later term is at most ``t_J
    r_J^i``, so ``sum_{j > J} t_j <= t_J r_J/(1 - r_J) <= t_J <= u_J``. Hence ``U(c) = sum_{c
    < j <= J} u_j + u_J`` bounds ``P(R > c)``, exactly summed. Terms are computed from ``s =
    floor(k p_up)`` upwards only (below the mean the tail is about 1/2 or more, never within
    a budget below 1/2), so ``c >= max(1, s)``: minimality is for utility only, validity does
    not depend on it.
    """
    p = Fraction(1) if n == 1 else 1 - _pow(Fraction(n - 1, n), m, up=False)
    if p >= 1:  # every subsample holds every row: R = k
        return k, Fraction(0)
    q = 1 - p
    s = min(k, math.floor(k * p))
    u = _round(math.comb(k, s) * _pow(p, s, up=True) * _pow(q, k - s, up=True), up=True)
    terms = [u]  # u_s, u_{s+1}, ...
    j = s
    cutoff = budget / 2**64
    remainder = Fraction(0)
    while j < k:
        ratio = Fraction(k - j) * p / (Fraction(j + 1) * q)
        if ratio <= Fraction(1, 2) and terms[-1] <= cutoff:
            remainder = terms[-1]  # >= every later term summed, by (3)
            break
        terms.append(_round(terms[-1] * ratio, up=True))
        j += 1
    # tail[c] = U(c) for c = s..J: suffix sums, exact
    tail = remainder
    best_c, best_tail = j, tail
    for c in range(j - 1, max(1, s) - 1, -1):
        tail = tail + terms[c + 1 - s]
        if tail > budget:
            break
        best_c, best_tail = c, tail
    return max(1, best_c), best_tail  # P(R > 1) <= P(R > 0)


def _check_resolution(resolution: Any, unit: str | None) -> float | None:
    """The public rounding grid of the answers, in ticks for datetimes."""
    if resolution is None:
        return None
    if isinstance(resolution, np.timedelta64 | _dt.timedelta):
        if unit is None:
            raise InvalidParameterError(
                "The 'resolution' parameter is a time span but the values are not datetimes."
            )
        ticks = np.timedelta64(resolution).astype(f"timedelta64[{unit}]").view(np.int64)
        resolution = int(ticks)
    if not (
        isinstance(resolution, float | int)
        and not isinstance(resolution, bool)
        and math.isfinite(resolution)
        and resolution > 0
    ):
        raise InvalidParameterError(
            must("resolution", f"be a positive number. Got {resolution!r}.")
        )
    return float(resolution)


@overload
def subsample_and_aggregate(
    values: Any,
    query: str | Callable[[np.ndarray], Any],
    *,
    epsilon: float,
    delta: float,
    m: int,
    k: int | None = ...,
    variant: str = ...,
    resolution: Any = ...,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
) -> float | np.datetime64 | None: ...


@overload
def subsample_and_aggregate(
    values: Any,
    query: str | Callable[[np.ndarray], Any],
    *,
    epsilon: float,
    delta: float,
    m: int,
    k: int | None = ...,
    variant: str = ...,
    resolution: Any = ...,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
) -> MedianResult: ...


@overload
def subsample_and_aggregate(
    values: Any,
    query: str | Callable[[np.ndarray], Any],
    *,
    epsilon: float,
    delta: float,
    m: int,
    k: int | None = ...,
    variant: str = ...,
    resolution: Any = ...,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
) -> float | np.datetime64 | MedianResult | None: ...


@accepts_aliases
def subsample_and_aggregate(
    values: Any,
    query: str | Callable[[np.ndarray], Any],
    *,
    epsilon: float,
    delta: float,
    m: int,
    k: int | None = None,
    variant: str = "replacement",
    resolution: Any = None,
    neighbours: str = "replace",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
) -> Any:
    """Answer ``query`` on subsamples and release the mode of the answers if it is stable.

    Parameters
    ----------
    values : array-like
        The data (numbers or datetimes).
    query : {"median", "mean"} or callable
        The statistic of one subsample: a callable gets one 1-D array per subsample
        (datetime64 for datetime data) and returns a number or a datetime; it must not raise
        on any subsample, or the exception becomes part of the output.
    epsilon, delta : float
        The budget; the realised δ (reported) is at most ``delta``.
    m : int
        Rows per subsample, at most ``n`` (the public number of records).
    k : int, optional
        Number of subsamples for ``variant="replacement"`` (default: the seed's
        ``ε (n/m)³``, capped at 5,000). The disjoint variant uses ``floor(n/m)`` blocks.
    variant : {"replacement", "disjoint"}
        ``"replacement"``: ``k`` samples of ``m`` rows with replacement; one record is in at
        most ``c`` of them except with certified probability ``<= δ/2``
        (:func:`_sampling_failure`): the mode frequency has sensitivity ``c``. ``"disjoint"``:
        a random partition into blocks of ``m`` rows, sensitivity 1.
    resolution : float or timedelta, optional
        Round every answer to a multiple of this public value before taking the mode (answers
        must agree exactly to form a mode; continuous statistics need a grid). For datetimes,
        a ``timedelta64`` / ``timedelta`` or a number of ticks of the data's unit.
    neighbours : {"replace"}
        The only relation defined (``n`` public); others are refused.
    nan : {"error"}, default="error"
        ``"drop"`` is refused: under ``replace`` dropping would make ``n`` private.
    rng : RandomSource, optional
        Randomness for the subsampling and the noise.
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.MedianResult` (with the realised δ).
    accountant : Accountant, optional
        Charged ``ApproxDP(ε_spent, δ_realised)`` (public) after every check and before any
        subsample or noise is drawn; an overspend raises
        :class:`~treedp.exceptions.BudgetExceededError`, nothing drawn.

    Returns
    -------
    float, numpy.datetime64 or None
        The mode of the answers, or None (refused).

    Notes
    -----
    The guarantee ``ApproxDP(ε, δ_realised)`` and its derivation: the module docstring.
    """
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    dlt = check_delta(delta)
    _check_call(query, m, k, variant, resolution)
    source = resolve_source(rng)
    x, unit = read_column(values, policy, relation)
    grid = _check_resolution(resolution, unit)
    count, sensitivity, sampling_delta = _design(x.size, m, k, variant, eps, dlt)
    threshold, realised, scale = _mode_test(count, eps, dlt, sensitivity, sampling_delta)
    guarantee = ApproxDP(float_up(Fraction(sensitivity) / scale), realised)
    parameters = {
        "epsilon": eps,
        "delta": dlt,
        "m": m,
        "k": count,
        "variant": variant,
        "resolution": grid,
        "query": query if isinstance(query, str) else "callable",
        "nan": policy,
    }
    call = Call(f"{CONTRACT.name}:{variant}", relation, eps, parameters, source)
    call.charge(accountant, guarantee)  # before any subsample or noise is drawn
    index = _subsamples(variant, x.size, count, m, source)
    value = _draw_mode(_answers(x, index, query, unit, grid), threshold, scale, source)
    if value is not None and unit is not None:
        value = as_datetimes(value, unit)
    result = call.result(MedianResult, value, guarantee, (sensitivity,))
    return result if details else result.value


def _check_call(query: Any, m: Any, k: Any, variant: Any, resolution: Any) -> None:
    """The public parameters of :func:`subsample_and_aggregate`, before any data are read."""
    if variant not in ("replacement", "disjoint"):
        raise InvalidParameterError(
            must("variant", f"be 'replacement' or 'disjoint'. Got {variant!r}.")
        )
    if not isinstance(resolution, np.timedelta64 | _dt.timedelta):
        _check_resolution(resolution, None)  # the number check, before looking at the data
    if isinstance(query, str) and query not in _VECTORISED:
        raise InvalidParameterError(
            must("query", f"be 'median', 'mean' or a callable. Got {query!r}.")
        )
    if not isinstance(query, str) and not callable(query):
        raise InvalidParameterError(must("query", "be 'median', 'mean' or a callable."))
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidParameterError(must("m", f"be an int >= 1. Got {m!r}."))
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
        raise InvalidParameterError(must("k", f"be an int >= 2. Got {k!r}."))


def _design(
    n: int, m: int, k: int | None, variant: str, eps: float, dlt: float
) -> tuple[int, int, Fraction]:
    """The number of subsamples, the sensitivity ``c`` and the sampling failure bound, from
    the public ``n`` (under ``replace``) and parameters."""
    if m > n:  # n is public under replace; the message does not print it
        raise InvalidParameterError(
            must("m", f"be at most n, the (public) number of records. Got m={m!r}.")
        )
    if variant == "disjoint":
        blocks = n // m
        if blocks < 2:
            raise InvalidParameterError(
                f"The disjoint variant needs n >= 2m records (m={m}); use a smaller m."
            )
        return blocks, 1, Fraction(0)
    count = int(min(5000, max(2, math.ceil(eps * (n / m) ** 3)))) if k is None else k
    return (count, *_sampling_failure(n, m, count, Fraction(dlt) / 2))


def _subsamples(variant: str, n: int, count: int, m: int, source: RandomSource) -> np.ndarray:
    """The rows of each subsample (``count × m``): a random partition's blocks, or rows drawn
    uniformly with replacement."""
    if variant == "disjoint":
        perm = np.argsort(np.frombuffer(source.random_bytes(8 * n), dtype=np.uint64))
        return perm[: count * m].reshape(count, m)
    return uniform_below(n, count * m, source).astype(np.int64).reshape(count, m)


@overload
def noisy_mode(
    answers: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    sensitivity: int,
    sampling_delta: float = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
) -> tuple[float | None, float]: ...


@overload
def noisy_mode(
    answers: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    sensitivity: int,
    sampling_delta: float = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
) -> MedianResult: ...


@overload
def noisy_mode(
    answers: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    sensitivity: int,
    sampling_delta: float = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
) -> tuple[float | None, float] | MedianResult: ...


def noisy_mode(
    answers: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    sensitivity: int,
    sampling_delta: float = 0.0,
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
) -> Any:
    """Release the mode of ``answers`` when its frequency, plus exact noise, clears a threshold.

    ``sensitivity`` bounds how many answers one changed row can change (``c``); the noise is
    ``DLap(c/ε)`` and the threshold ``floor(K/2) + c + a`` with ``P(Z >= a) <= δ -
    sampling_delta`` (certified). Returns the mode or None, and the realised δ (a certified
    upper bound, rounded up to a float); with ``details=True`` a
    :class:`~treedp.mechanisms.results.MedianResult` instead.

    Guarantee: ``ApproxDP(ε, δ_realised)``, ``δ_realised <= δ``, for answer vectors of public
    length ``K`` that differ in at most ``c`` entries (one replaced record, privacy unit one
    record, when ``c`` bounds the answers a record feeds). Sensitivity: the mode frequency
    changes by at most ``c``. ``sampling_delta`` is added to the realised δ (the caller's
    failure probability of the bound ``c``). Every such vector gets an output: the only
    errors depend on ``K``, ``c``, ε and δ (public), and their messages print none of the
    answers. NaN answers form one value, like any other.

    An ``accountant`` is charged ``ApproxDP(ε_spent, δ_realised)`` after every check and
    before the noise is drawn (an overspend raises and nothing is drawn).
    """
    check_accountant(accountant, unit="record")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise InvalidParameterError(must("sensitivity", f"be an int >= 1. Got {sensitivity!r}."))
    if (
        isinstance(sampling_delta, bool)
        or not isinstance(sampling_delta, float | int | Fraction)
        or not 0 <= sampling_delta < 1
    ):
        raise InvalidParameterError(
            must("sampling_delta", f"be in [0, 1). Got {sampling_delta!r}.")
        )
    arr = np.asarray(answers, dtype=np.float64).ravel()
    source = resolve_source(rng)
    threshold, realised, scale = _mode_test(
        arr.size, eps, dlt, sensitivity, Fraction(sampling_delta)
    )
    parameters = {"epsilon": eps, "delta": dlt, "sampling_delta": float(sampling_delta)}
    call = Call(NOISY_MODE_CONTRACT.name, NEIGHBOURS[0], eps, parameters, source)
    # The guarantee is built only when charged or reported (a δ of 1 is no guarantee).
    if accountant is not None:
        call.charge(accountant, ApproxDP(float_up(Fraction(sensitivity) / scale), realised))
    value = _draw_mode(arr, threshold, scale, source)
    if not details:
        return value, realised
    guarantee = ApproxDP(float_up(Fraction(sensitivity) / scale), realised)
    return call.result(MedianResult, value, guarantee, (sensitivity,))


def _mode_test(
    count: int,
    eps: float,
    delta: float,
    sensitivity: int,
    sampling_delta: Fraction,
) -> tuple[int, float, Fraction]:
    """The public part of the noisy mode: threshold, realised δ and noise scale (no data, no
    randomness), or an InvalidParameterError when ``K``, ``c`` and δ leave no room."""
    if count // 2 + 2 * sensitivity >= count:
        raise InvalidParameterError(
            "Too few subsamples for the noise: the number of answers K must exceed "
            "floor(K/2) + 2·sensitivity; use a smaller m or a larger k."
        )
    scale = noise_scale(sensitivity, eps)
    budget = float_down(Fraction(delta) - sampling_delta)
    if budget <= 0:
        raise InvalidParameterError(
            "The sampling failure already uses up delta; use a larger k or delta."
        )
    a = tail_threshold(scale, budget)
    threshold = count // 2 + sensitivity + a
    realised = float_up(sampling_delta + tail_upper(scale, a, budget))
    return threshold, realised, scale


def _draw_mode(
    answers: np.ndarray, threshold: int, scale: Fraction, source: RandomSource
) -> float | None:
    """The mode of ``answers`` if its frequency plus ``DLap(scale)`` noise reaches
    ``threshold``, else None."""
    uniq, counts = np.unique(answers, return_counts=True)
    best = int(np.argmax(counts))
    return float(uniq[best]) if clears(int(counts[best]), threshold, scale, source) else None


def _answers(
    x: np.ndarray, index: np.ndarray, query: Any, unit: str | None, grid: float | None
) -> np.ndarray:
    """The query's answer on each subsample, as float64 (ticks of ``unit`` for datetimes),
    rounded to a multiple of ``grid`` when one is given."""
    with np.errstate(all="ignore"):  # inf - inf in a mean must not warn for some data only
        if isinstance(query, str):
            answers = np.asarray(_VECTORISED[query](x[index]), dtype=np.float64)
        elif unit is None:
            answers = np.array([float(query(x[row])) for row in index])
        else:
            dt = x.astype(f"datetime64[{unit}]")
            answers = np.array([_as_ticks(query(dt[row]), unit) for row in index])
        return answers if grid is None else np.round(answers / grid) * grid


def _as_ticks(answer: Any, unit: str) -> float:
    """A callable's answer on datetime data: a datetime (as ticks of ``unit``) or a number."""
    if isinstance(answer, np.datetime64 | _dt.date):
        # astype, not np.datetime64(answer, unit): the numpy stubs take only a literal unit.
        moment = np.datetime64(answer).astype(f"datetime64[{unit}]")
        return float("nan") if np.isnat(moment) else float(moment.astype(np.int64))
    return float(answer)
