"""The stable median: propose-test-release with the median's stability.

Guarantee: (ε, δ)-DP, ``replace`` neighbours (``n = len(values)`` public), privacy unit one
record. The noised quantity is the stability ``Δ(x)``, whose sensitivity is 1 (see
:func:`stable_median`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import check_real, must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import Contract, MedianResult
from treedp.noise import RandomSource, noise_scale, resolve_source
from treedp.noise.tail import tail_threshold
from treedp.privacy import ApproxDP
from treedp.privacy.accountant import Accountant
from treedp.value_methods._column import (
    Call,
    as_datetimes,
    check_delta,
    clears,
    datetime_bounds,
    float_up,
    is_datetime_like,
    open_call,
    read_column,
)

__all__ = ["CONTRACT", "NEIGHBOURS", "SENSITIVITY", "stable_median"]

#: The neighbour relations the guarantee holds for (``n`` is public).
NEIGHBOURS: tuple[str, ...] = ("replace",)
#: The L1 sensitivity of the stability ``Δ(x)`` under ``replace`` (it is 1-Lipschitz).
SENSITIVITY = 1
CONTRACT = Contract(
    name="stable_median",
    measure=ApproxDP,
    neighbours=NEIGHBOURS,
    sensitivity="1: the stability Δ(x) changes by at most 1 when one record is replaced",
)


def _median_stability(x: np.ndarray) -> tuple[Any, int]:
    """The median and its stability ``Δ(x)``: the fewest rows to replace to change it.

    NOT differentially private: the exact median of a non-empty float or int64 array, the
    lower median ``x_(k)``, ``k = ceil(n/2)`` (1-indexed). With ``L`` values below it and
    ``E`` equal to it, lowering it needs ``k - L`` replacements and raising it ``L + E - k +
    1``; ``Δ`` is the smaller.
    """
    x = np.sort(np.asarray(x))
    if x.dtype.kind != "i":
        x = x.astype(np.float64)
    n = x.size
    k = (n + 1) // 2
    med = x[k - 1].item()
    below = int(np.searchsorted(x, med, side="left"))
    equal = int(np.searchsorted(x, med, side="right")) - below
    return med, min(k - below, below + equal - k + 1)


@overload
def stable_median(
    values: Any,
    *,
    epsilon: float,
    delta: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    bounds: tuple[Any, Any] | None = ...,
) -> float | np.datetime64 | None: ...


@overload
def stable_median(
    values: Any,
    *,
    epsilon: float,
    delta: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
    bounds: tuple[Any, Any] | None = ...,
) -> MedianResult: ...


@overload
def stable_median(
    values: Any,
    *,
    epsilon: float,
    delta: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
    bounds: tuple[Any, Any] | None = ...,
) -> float | np.datetime64 | MedianResult | None: ...


@accepts_aliases
def stable_median(
    values: Any,
    *,
    epsilon: float,
    delta: float,
    neighbours: str = "replace",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
    bounds: tuple[Any, Any] | None = None,
) -> Any:
    """The stable median (SMed): release the exact median when it is stable, else refuse.

    Draw ``Z ~ DLap(1/ε)`` (exact); release ``median(x)`` when ``Δ(x) + Z >= T``, else ``None``.
    ``T = 1 + a`` with ``a`` the smallest integer such that ``P(Z >= a) <= δ``
    (:func:`treedp.noise.tail.tail_threshold`, certified).

    Guarantee: ``ApproxDP(ε, δ)`` for ``replace`` neighbours (``n = len(values)`` public),
    privacy unit one record. Sensitivity: ``Δ`` is 1-Lipschitz under replacement (change one
    row, then ``Δ(x')`` more), so the test has sensitivity 1. If ``Δ(x) >= 2`` the neighbour
    has the same median and only the release decision differs, a 1-sensitive test with exact
    Laplace noise of scale ``>= 1/ε``: ratio ``e^ε``. If the medians differ then ``Δ(x) = 1``
    and the release of ``median(x)`` has probability ``P(1 + Z >= T) = P(Z >= a) <= δ``.

    The empty dataset (its only neighbour is itself) is refused (``None``) without drawing;
    ``±inf`` are ordinary values; NaN/NaT values are outside the domain (a data-free
    :class:`DataError`). Datetimes are ordered as their ticks, the median returned as
    ``numpy.datetime64``.

    Parameters
    ----------
    values : array-like
        The data (numbers or datetimes).
    epsilon : float
        The privacy budget of the test.
    delta : float
        The failure probability δ, in (0, 1).
    neighbours : {"replace"}, default="replace"
        The only relation the stability argument is made for (``n`` public), hence the
        default, unlike the ``"add_remove"`` of every other front door; others are refused.
    nan : {"error"}, default="error"
        ``"drop"`` is refused: under ``replace`` dropping would make ``n`` private.
    rng : RandomSource, optional
        Default: the operating system's cryptographic generator.
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.MedianResult` instead of the value.
    accountant : Accountant, optional
        Charged ``ApproxDP(ε, δ)`` after every check and before the noise is drawn; an
        overspend raises :class:`~treedp.exceptions.BudgetExceededError`, nothing drawn.
    bounds : (lo, hi), optional
        Public bounds (numbers or datetimes), as for :func:`treedp.median`: every value is
        clamped into ``[lo, hi]`` first (a per-record map, so the guarantee is unchanged) and
        the median released lies in them. Default: no clamping.

    Returns
    -------
    float, numpy.datetime64 or None
        The exact median, or None (refused).

    References
    ----------
    .. [DR14] C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy, Ch. 7.
    """
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    dlt = check_delta(delta)
    clamp = _check_bounds(bounds)
    source = resolve_source(rng)
    x, unit = read_column(values, policy, relation)
    if clamp is not None:  # public bounds: each record mapped on its own
        x = _clamped(x, unit, clamp)
    scale = noise_scale(SENSITIVITY, eps)
    guarantee = ApproxDP(float_up(Fraction(SENSITIVITY) / scale), dlt)
    call = Call(CONTRACT.name, relation, eps, {"epsilon": eps, "delta": dlt, "nan": policy}, source)
    call.charge(accountant, guarantee)
    value = None
    if x.size:  # n is public under replace: the empty dataset is always refused
        med, stability = _median_stability(x)
        if clears(stability, 1 + tail_threshold(scale, dlt), scale, source):
            value = float(med) if unit is None else as_datetimes(med, unit)
    result = call.result(MedianResult, value, guarantee, (SENSITIVITY,))
    return result if details else result.value


def _check_bounds(bounds: Any) -> tuple[Any, Any] | None:
    """Public ``bounds`` as a checked pair (numbers or datetimes, ``lo < hi``), or None."""
    if bounds is None:
        return None
    if isinstance(bounds, str) or not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(
            must("bounds", f"be public bounds (lo, hi), numbers or datetimes. Got {bounds!r}.")
        )
    if any(isinstance(b, str) and b == "private" for b in bounds):
        raise InvalidParameterError(
            must(
                "bounds",
                "be public (lo, hi) for treedp.stable_median: find bounds privately with "
                "treedp.private_bounds first.",
            )
        )
    if is_datetime_like(bounds[0]) or is_datetime_like(bounds[1]):
        lo_t, hi_t, unit = datetime_bounds((bounds[0], bounds[1]))
        return ("datetime", (lo_t, hi_t, unit))
    lo = check_real(bounds[0], "bounds")
    hi = check_real(bounds[1], "bounds")
    if not lo < hi:
        raise InvalidParameterError(must("bounds", f"have lo < hi. Got {bounds!r} instead."))
    return ("number", (lo, hi))


def _clamped(x: np.ndarray, unit: str | None, clamp: tuple[Any, Any]) -> np.ndarray:
    """The column clamped into the checked bounds (ticks of the column's unit for datetimes)."""
    kind, pair = clamp
    if kind == "datetime":
        if unit is None:
            raise InvalidTypeError(
                must("bounds", "be numbers for numeric data (datetime bounds were given).")
            )
        lo_t, hi_t, b_unit = pair
        lo = np.datetime64(int(lo_t), b_unit).astype(f"datetime64[{unit}]").astype(np.int64)
        hi = np.datetime64(int(hi_t), b_unit).astype(f"datetime64[{unit}]").astype(np.int64)
        clipped: np.ndarray = np.clip(x, lo, hi)
        return clipped
    if unit is not None:
        raise InvalidTypeError(
            must("bounds", "be datetimes for datetime data (numbers were given).")
        )
    numbers: np.ndarray = np.clip(x, pair[0], pair[1])
    return numbers
