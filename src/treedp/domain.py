"""Public bins: the domain a release is defined on, built from bounds, a bin count or edges.

The :class:`~treedp.partition.Bins` type and its rule (a value counts in the bin holding it,
values outside the edges are clamped into the end bins) live in :mod:`treedp.partition`; here
the entry points' requests become bins, every check on public parameters only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._validation import check_int, must
from treedp.bin_edges import (
    MAX_BINS,
    check_edges,
    equal_width_edges,
    integer_bins,
    proven_equal_width,
)
from treedp.engines.base import NanPolicy
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.partition import EXACT_INT, Bins, finish_bins
from treedp.timezones import (
    OFFSETS,
    UNKNOWN,
    bound_pair,
    coarse_unit,
    edges_zone,
    to_utc,
)

__all__ = [
    "MAX_BINS",
    "Bins",
    "NanPolicy",
    "check_bin_count",
    "held_bins",
    "integer_range_bins",
    "make_bins",
    "public_bins",
]


def _is_datetime_like(x: Any) -> bool:
    import datetime as _dt

    return isinstance(x, np.datetime64 | _dt.date) or (isinstance(x, str) and not _parses(float, x))


def _parses(read: Any, s: str) -> bool:
    """Whether ``read(s)`` succeeds (``float`` or ``np.datetime64``)."""
    try:
        read(s)
    except ValueError:
        return False
    return True


def _check_number(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise InvalidTypeError(
            must(name, f"hold two numbers or two datetimes. Got {type(x).__name__} {x!r}.")
        )
    try:
        v = float(x)
    except OverflowError:  # a Python int beyond the float range
        raise InvalidParameterError(
            f"The '{name}' parameter holds an integer beyond the float64 range."
        ) from None
    if not math.isfinite(v):
        raise InvalidParameterError(must(name, f"be finite. Got {x!r} instead."))
    if isinstance(x, int | np.integer) and abs(int(x)) > EXACT_INT:
        raise InvalidParameterError(
            f"The '{name}' parameter holds the integer {x!r}, beyond 2**53: float64 edges "
            "cannot represent it exactly. Give bounds within ±2**53 (9007199254740992)."
        )
    return v


def make_bins(
    *,
    bounds: tuple[Any, Any] | Sequence[Any] | np.ndarray | None = None,
    bins: int | str | None = None,
    edges: Any = None,
    timezone: Any = None,
) -> Bins:
    """Build public bins from ``bounds`` and ``bins``, or from explicit ``edges``.

    Parameters
    ----------
    bounds : (lo, hi), optional
        Public bounds, numbers or datetimes, ``lo < hi``. With ``bins=B``: ``B`` equal-width
        bins covering ``[lo, hi)``. With ``bins="integers"``: integer ``lo`` and ``hi`` and one
        bin per integer in ``lo..hi`` (both included).
    bins : int or "integers", optional
        The number of bins ``B`` (1 to :data:`MAX_BINS`), or ``"integers"``.
    edges : array-like, optional
        ``B + 1`` strictly increasing public edges (numbers or datetimes). Not with ``bounds``.
    timezone : str or tzinfo, optional
        The data's time zone, for datetime bins: naive bounds or edges are wall times there,
        aware ones instants; the bins carry this zone. None: the zone of aware bounds or edges
        (their two zones must then agree), or naive bins. See :mod:`treedp.timezones`.

    Returns
    -------
    Bins

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        Naming the argument and what is allowed.
    """
    if edges is not None:
        if bounds is not None or bins is not None:
            raise InvalidParameterError(
                "Give either 'edges' or 'bounds' with 'bins', not both. Got edges and "
                f"{'bounds' if bounds is not None else 'bins'}."
            )
        return _bins_from_edges(edges, timezone)
    if bounds is None or bins is None:
        raise InvalidParameterError(
            "Public bins are required: give 'bounds=(lo, hi)' with 'bins=B' (or "
            "bins='integers'), or explicit 'edges'. treedp never derives bins from the data."
        )
    if not isinstance(bounds, tuple | list):
        raise InvalidTypeError(
            must(
                "bounds",
                f"be a pair (lo, hi) (a tuple or list). Got {type(bounds).__name__} instead.",
            )
        )
    if len(bounds) != 2:
        raise InvalidParameterError(must("bounds", f"be a pair (lo, hi). Got {bounds!r} instead."))
    if _is_datetime_like(bounds[0]) or _is_datetime_like(bounds[1]):
        return _datetime_bins(bounds, bins, timezone)
    lo, hi = _check_number(bounds[0], "bounds"), _check_number(bounds[1], "bounds")
    if bins == "integers":
        return _integer_bins(lo, hi, bounds)
    return _equal_width_bins(lo, hi, check_bin_count(bins), bounds)


def _bins_from_edges(edges: Any, timezone: Any) -> Bins:
    """Bins from explicit edges (numbers, datetimes, or their text)."""
    zone = edges_zone(edges, timezone)
    if zone is not None:
        utc = to_utc(edges, zone, "edges")
        unit = coarse_unit(np.datetime_data(utc.dtype)[0])
        if np.isnat(utc).any():
            raise InvalidParameterError(must("edges", "not hold NaT."))
        ticks = utc.astype(f"datetime64[{unit}]").view(np.int64).copy()
        return finish_bins(ticks, False, False, unit, zone)
    arr = np.asarray(edges)
    if arr.dtype.kind in "OU":
        try:
            arr = arr.astype("datetime64") if arr.dtype.kind == "U" else arr.astype(float)
        except (ValueError, TypeError):
            raise InvalidTypeError(must("edges", "hold numbers or datetimes.")) from None
    if arr.dtype.kind == "M":
        unit = np.datetime_data(arr.dtype)[0]
        if np.isnat(arr).any():
            raise InvalidParameterError(must("edges", "not hold NaT."))
        return finish_bins(arr.view(np.int64).copy(), False, False, unit)
    if arr.dtype.kind not in "iuf":
        raise InvalidTypeError(must("edges", f"hold numbers or datetimes. Got dtype {arr.dtype}."))
    return finish_bins(arr.astype(np.float64), False, False, None)


def _datetime_bins(bounds: Sequence[Any], bins: Any, timezone: Any) -> Bins:
    """``bins`` equal-width bins between two datetime bounds, in integer ticks."""
    lo_raw, hi_raw = bounds
    if not (_is_datetime_like(lo_raw) and _is_datetime_like(hi_raw)):
        word = next((b for b in (lo_raw, hi_raw) if isinstance(b, str)), None)
        if word == "private":
            raise InvalidParameterError(
                "The 'bounds' parameter: bounds found privately ('private') are not "
                "available here; give public bounds=(lo, hi)."
            )
        if word is not None and not _parses(np.datetime64, word):
            raise InvalidParameterError(
                f"The 'bounds' parameter holds {word!r}, which is neither a number nor a "
                "datetime; the word for bounds found privately is 'private' (as "
                "bounds='private', or (lo, 'private') / ('private', hi) with one side "
                "public)."
            )
        raise InvalidTypeError("The 'bounds' parameter mixes a datetime and a number.")
    try:
        lo_dt, hi_dt, zone = bound_pair(lo_raw, hi_raw, timezone)
    except (InvalidParameterError, InvalidTypeError):
        raise
    except ValueError:
        raise InvalidParameterError(
            f"The 'bounds' parameter could not be read as datetimes: {bounds!r}."
        ) from None
    unit = coarse_unit(np.datetime_data(np.array([lo_dt, hi_dt]).dtype)[0])
    # astype, not np.datetime64(x, unit): the stubs take only a literal unit.
    lo_t = int(lo_dt.astype(f"datetime64[{unit}]").astype(np.int64))
    hi_t = int(hi_dt.astype(f"datetime64[{unit}]").astype(np.int64))
    if bins == "integers":
        raise InvalidParameterError("bins='integers' needs numeric bounds, not datetimes.")
    n_bins = check_bin_count(bins)
    if not lo_t < hi_t:
        raise InvalidParameterError(must("bounds", f"satisfy lo < hi. Got {bounds!r} instead."))
    if hi_t - lo_t < n_bins:
        raise InvalidParameterError(
            f"The 'bins' parameter ({n_bins}) exceeds the number of {unit} ticks in 'bounds'."
        )
    ticks = lo_t + (np.arange(n_bins + 1, dtype=object) * (hi_t - lo_t)) // n_bins
    return finish_bins(np.array([int(t) for t in ticks], dtype=np.int64), False, False, unit, zone)


def _integer_bins(lo: float, hi: float, bounds: Sequence[Any]) -> Bins:
    """One bin per integer in ``lo..hi`` (both included)."""
    if lo != int(lo) or hi != int(hi):
        raise InvalidParameterError(
            f"bins='integers' needs integer bounds. Got {bounds!r} instead."
        )
    if not lo <= hi:
        raise InvalidParameterError(
            must("bounds", f"satisfy lo <= hi for bins='integers'. Got {bounds!r} instead.")
        )
    if max(abs(int(lo)), abs(int(hi)) + 1) > EXACT_INT:
        raise InvalidParameterError(
            f"bins='integers' needs bounds within ±(2**53 - 1): beyond, float64 edges "
            f"cannot tell consecutive integers apart. Got {bounds!r} instead."
        )
    n = int(hi) - int(lo) + 1
    if n > MAX_BINS:
        raise InvalidParameterError(
            f"bins='integers' over {bounds!r} gives {n} bins; at most {MAX_BINS} are allowed."
        )
    return finish_bins(np.arange(int(lo), int(hi) + 2, dtype=np.float64), True, True, None)


def _equal_width_bins(lo: float, hi: float, n_bins: int, bounds: Sequence[Any]) -> Bins:
    """``n_bins`` equal-width bins covering ``[lo, hi)``."""
    if not lo < hi:
        raise InvalidParameterError(must("bounds", f"satisfy lo < hi. Got {bounds!r} instead."))
    width = hi - lo
    edges_f = equal_width_edges(lo, hi, n_bins)
    if proven_equal_width(lo, hi, width, n_bins):
        edges_f.setflags(write=False)
        return Bins._proven(edges_f, n_bins / width)
    check_edges(
        edges_f,
        "bins",
        increasing=f"The 'bins' parameter ({n_bins}) is too large for the float resolution of "
        f"'bounds' {bounds!r}: edges would coincide.",
    )
    try:
        return finish_bins(edges_f, False, True, None)
    except InvalidParameterError:  # rounding moved an edge by more than a quarter bin
        raise InvalidParameterError(
            f"The 'bins' parameter ({n_bins}) is too large for the float resolution of "
            f"'bounds' {bounds!r}: the edges cannot be equally spaced."
        ) from None


def integer_range_bins(lo: int, hi: int, cap: int) -> tuple[Bins, int]:
    """Bins for the public integers ``lo..hi`` and their width: one bin per integer when they
    are at most ``cap`` (discrete bins, width 1), else at most ``cap`` equal-width bins of ``w``
    whole integers each (``Bins.integers``: queries read integer data), as
    :func:`~treedp.bin_edges.integer_bins` lays them out.

    >>> bins, width = integer_range_bins(0, 999, 128)
    >>> bins.n_bins, width, bins.integers, bins.discrete
    (125, 8, True, False)
    """
    bounds, request, width = integer_bins(lo, hi, cap)
    if width == 1:
        return make_bins(bounds=bounds, bins=request), 1
    edges = equal_width_edges(float(bounds[0]), float(bounds[1]), int(request))  # exact integers
    return finish_bins(edges, False, True, None, integers=True), width


def held_bins(bounds: Sequence[Any], bins: int) -> Bins | None:
    """``bins`` equal-width bins of numeric ``bounds``, or None when the bounds' floats cannot
    hold that many distinct edges (public parameters only: for callers choosing bins after a
    charge, where a refusal would spend the budget for nothing)."""
    try:
        return make_bins(bounds=bounds, bins=bins)
    except InvalidParameterError:
        return None


def check_bin_count(bins: Any, integers: bool = True) -> int:
    """``bins`` as a number of bins in ``[1, MAX_BINS]`` (the message names ``'integers'``
    too where the caller takes it)."""
    expected = f"be an int in [1, {MAX_BINS}]{' or ' + repr('integers') if integers else ''}. Got"
    if isinstance(bins, str):  # the right type, a value other than "integers"
        raise InvalidParameterError(must("bins", f"{expected} {bins!r} instead."))
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer):
        raise InvalidTypeError(must("bins", f"{expected} {type(bins).__name__} {bins!r} instead."))
    if not 1 <= bins <= MAX_BINS:
        raise InvalidParameterError(must("bins", f"{expected} {bins!r} instead."))
    return int(bins)


def public_bins(bounds: Any, bins: Any, edges: Any, timezone: str | None = None) -> Bins:
    """The bins of a public entry point: the types are checked here, the values by
    :func:`make_bins` (``timezone``: the data's zone from its type, see
    :func:`treedp.timezones.data_zone`)."""
    if bins is not None and not isinstance(bins, str):
        check_int(bins, "bins")
    if bounds is not None and (
        isinstance(bounds, str | bytes) or not isinstance(bounds, Sequence | np.ndarray)
    ):
        raise InvalidTypeError(
            must("bounds", f"be a pair (lo, hi). Got {type(bounds).__name__} {bounds!r} instead.")
        )
    zone = None if timezone in (UNKNOWN, OFFSETS) else timezone
    return make_bins(bounds=bounds, bins=bins, edges=edges, timezone=zone)
