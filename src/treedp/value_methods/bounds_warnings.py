"""Warnings about privately found bounds: post-processing of released values only.

Each function reads the stops of a :class:`~treedp.value_methods.private_bounds.BoundsResult`,
a released count or public parameters, so it costs no privacy and its text holds no data value.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.value_methods.bounds_grid import SIGNED_GRID

__all__ = [
    "BEYOND_INTEGERS_WARNING",
    "NEAR_PUBLIC",
    "NEIGHBOURS_WARNING",
    "PRIVATE_WIDEN",
    "PUBLIC_ONLY_WIDEN",
    "PUBLIC_WIDEN",
    "RECORDS_PER_ALLOWANCE",
    "at_bound_warning",
    "clamp_warning",
    "few_records_warning",
    "grid_end_warning",
    "in_found_end_bins",
    "near_found_end",
    "neighbours_ruled_out",
    "restated",
    "scans_warning",
]

#: A one-sided scan that stops within this many grid points past the public bound gets a
#: warning (:func:`grid_end_warning`): the stop is then within a factor of about
#: ``2**(NEAR_PUBLIC/4)`` of the public bound's first grid points.
NEAR_PUBLIC = 4


def grid_end_warning(
    lo: float, hi: float, known: str | None = None, grid: str | None = None
) -> str | None:
    """A warning when the scans' stops (``BoundsResult.stops``) say nothing about the data,
    else None.

    With too few records beyond the scans' threshold for this ε (fewer than about ``k``, a
    few hundred at ε = 1), a scan stops at once or runs to the far end of :data:`SIGNED_GRID`,
    or the two stops cross (``lo > hi``), meet, or are neighbouring grid points (the lower
    scan, started at the upper stop, stopped at once: fewer than about ``k`` records below
    the upper stop, unless almost all lie in that one grid cell, which the warning says).
    With one public side (``known``), the one scan starting at the public bound is flagged
    when it stops within :data:`NEAR_PUBLIC` grid points of it: too few records, or the
    public bound on the wrong side of the data (unless the data really lie that close to it,
    which the warning says). ``grid``: the release's ``bounds_step["grid"]`` (``"days"`` for
    datetimes, whose stops are seconds on
    :data:`~treedp.value_methods.datetime_bounds.DAY_GRID`; None for numbers).
    """
    if grid is not None:
        return _day_grid_warning(float(lo), float(hi))
    end = float(SIGNED_GRID[-1])
    if known is not None:  # one scan, started at the public bound: did it stop at once?
        return _near_public_warning(float(lo), float(hi), known)
    if float(lo) == float(hi):  # the scans (from 0, then from the upper stop) met at once
        return (
            "The two private bounds' scans stopped at the same grid point: unless almost all "
            "records equal it, too few records lie beyond the scans' threshold for this "
            "epsilon, so the bounds say nothing about the data's range and the release is not "
            "useful. Give public bounds, or more epsilon or more records."
        )
    if float(lo) > float(hi):  # the stops crossed (scans run before this round, independent)
        return (
            "The two private bounds' scans crossed (the upper scan stopped below the lower "
            "one): too few records lie beyond the scans' threshold for this epsilon, so the "
            "bounds say nothing about the data's range and the release is not useful. Give "
            "public bounds, or more epsilon or more records."
        )
    if abs(float(lo)) >= end or abs(float(hi)) >= end:
        return (
            "A privately found bound reached the end of the public grid (about 1e301 in "
            "magnitude): too few records lie beyond the scans' threshold for this epsilon, so "
            "the bounds say nothing about the data's range and the release is not useful. Give "
            "public bounds, or more epsilon or more records."
        )
    first, last = np.searchsorted(SIGNED_GRID, [float(lo), float(hi)])
    if last - first > 1:
        return None
    return NEIGHBOURS_WARNING


#: :func:`grid_end_warning` for stops at neighbouring grid points (the lower scan, started at
#: the upper stop, stopped at once). :func:`neighbours_ruled_out` drops it when a released
#: count shows that the data lie within that grid step.
NEIGHBOURS_WARNING = (
    "The two private bounds' scans stopped at neighbouring grid points: either the data "
    "lie within that one grid step (about 19% wide away from 0), and the bounds hold them, "
    "or too few records lie beyond the scans' threshold for this epsilon, so the bounds "
    "say nothing about the data's range and the release is not useful. Give public "
    "bounds, or more epsilon or more records."
)


def neighbours_ruled_out(warning: str | None, allowance: float | None, count: float | None) -> bool:
    """Whether ``warning`` is :data:`NEIGHBOURS_WARNING` and a released (noisy) count or a
    public ``n`` rules out its "too few records" reading: with at least
    :data:`RECORDS_PER_ALLOWANCE` ``· allowance`` records, all but about ``2 k`` of them lie in
    the one grid step between the stops (at most about ``k`` above the upper stop, and the
    lower scan stopped where fewer than about ``k`` lie below), so the bounds hold the data.
    A missing or zero ``allowance`` (release files older than it) rules nothing out.
    Post-processing of released values."""
    if warning != NEIGHBOURS_WARNING or count is None or not allowance or allowance <= 0:
        return False
    return bool(count >= RECORDS_PER_ALLOWANCE * float(allowance))


def _day_grid_warning(lo: float, hi: float) -> str | None:
    """:func:`grid_end_warning` for the day grid of datetimes (both sides searched)."""
    from treedp.value_methods.datetime_bounds import DAY_GRID

    first, last = float(DAY_GRID[0]), float(DAY_GRID[-1])
    if first < lo and hi < last and lo == hi:
        return (
            "The two private bounds' scans stopped on the same day: unless almost all records "
            "fall on it, too few records lie beyond the scans' threshold for this epsilon, so "
            "the bounds say nothing about the data's range and the release is not useful. Give "
            "public bounds, or more epsilon or more records."
        )
    if first < lo and hi < last:
        return None
    return (
        "A privately found datetime bound reached the end of the public grid of days (1678 "
        "to 2261): too few records lie beyond the scans' threshold for this epsilon, or the "
        "data lie outside those years, so the release is not useful. Give public bounds, or "
        "more epsilon or more records."
    )


def _near_public_warning(lo: float, hi: float, known: str) -> str | None:
    """:func:`grid_end_warning` for a one-sided search."""
    if known == "lower":
        first = int(np.searchsorted(SIGNED_GRID, lo, side="right"))
        steps = int(np.searchsorted(SIGNED_GRID, hi, side="left")) - first
        found, public, other = "upper", "lower", "above"
    else:
        last = int(np.searchsorted(SIGNED_GRID, hi, side="left")) - 1
        steps = last - int(np.searchsorted(SIGNED_GRID, lo, side="left"))
        found, public, other = "lower", "upper", "below"
    end = float(SIGNED_GRID[-1])
    if steps >= NEAR_PUBLIC and abs(lo) < end and abs(hi) < end:
        return None
    return (
        f"The privately found {found} bound stopped within {NEAR_PUBLIC} points of the public "
        f"grid from the public {public} bound: unless the data really lie that close to it, "
        f"too few records lie {other} it for this epsilon (or the public bound is on the "
        "wrong side of the data), and the release is not useful. Give public bounds, or more "
        "epsilon or more records."
    )


#: :func:`few_records_warning` flags a release whose count is below this many times the
#: scans' allowance ``k`` (``k`` records beyond a stop is then more than 10% of the count).
RECORDS_PER_ALLOWANCE = 10


def few_records_warning(allowance: float, count: float) -> str | None:
    """A warning when the records released are too few for the scans' allowance, else None.

    Each scan stops where about ``allowance`` records (``k``, ``BoundsResult.allowance``),
    plus noise, lie beyond its stop; with fewer than :data:`RECORDS_PER_ALLOWANCE` ``· k``
    records the clamped share is often large (lognormal incomes, one public side, ε = 1 with
    a 10% share, ``k = 60``: a tenth of the records clamped in the worst 10% of runs at 600
    records, a third at 300). ``count`` must be a released (noisy) count or a public ``n``,
    never the data's, so that the check is post-processing.
    """
    if not count < RECORDS_PER_ALLOWANCE * float(allowance):
        return None
    return (
        f"The private bounds' scans stop where about {float(allowance):.0f} records (their "
        f"threshold at this epsilon) lie beyond a found bound, and the release counts fewer "
        f"than {RECORDS_PER_ALLOWANCE} times as many records: the ends of the distribution are "
        "probably clamped and quantiles near them unreliable. Give public bounds, or more "
        "epsilon or more records."
    )


def at_bound_warning(allowance: float) -> str:
    """The warning for quantiles answered at a found bound: about ``allowance`` records, plus
    noise, may lie beyond that bound, clamped onto it, so the quantile may lie further out. It
    reads the released answers and bounds only (post-processing)."""
    return (
        "A quantile was answered at a privately found bound, beyond which the bounds' scans "
        f"leave about {float(allowance):.0f} records (their threshold at this epsilon) clamped "
        "onto it: the true quantile may lie further out. Give public bounds, or more epsilon "
        "or more records."
    )


#: Where integer bounds are clamped (``private_bounds._INTEGER_LIMIT``): a found float bound is
#: never exactly this (grid points ``2**(j/4) - 1`` moved by a quarter of the width).
_INTEGER_CLAMP = float(2**53 - 1)
#: :func:`clamp_warning` when integer bounds were clamped to ``±(2**53 - 1)``.
BEYOND_INTEGERS_WARNING = (
    "A privately found integer bound reached ±(2**53 - 1), beyond which float64 holds no exact "
    "integer: the integer bounds were clamped there and every record beyond was clamped onto "
    "them, so the answers are not useful. Give public bounds, or pass the column as floats "
    "(values.astype(float))."
)


#: With a count known, a quantile answered at a found bound warns when its level lies within
#: this many allowances of records of that end of the count (the scans leave about the
#: allowance, plus noise, beyond each stop).
NEAR_END_ALLOWANCES = 2.0


def _near_an_end(low: np.ndarray, high: np.ndarray, levels: Any, allowance: float,
                 count: float) -> bool:  # fmt: skip
    """Whether an answer at the lower (``low``) or upper (``high``) end sits at a level within
    :data:`NEAR_END_ALLOWANCES` allowances of records of that end of ``count``."""
    q = np.asarray(levels, dtype=np.float64)
    room = NEAR_END_ALLOWANCES * float(allowance)
    return bool(np.any((low & (q * float(count) <= room)) | (high & ((1.0 - q) * count <= room))))


def near_found_end(answers: Any, levels: Any, bounds: Any, allowance: float, count: float) -> bool:
    """Whether an answer equals a found bound at a level within
    :data:`NEAR_END_ALLOWANCES` allowances of records of that end of ``count`` (``(1 - q)·n̂``
    above the upper bound, ``q·n̂`` below the lower): the records the scans leave beyond the
    bound may hold the quantile. Released values only."""
    a = np.asarray(answers, dtype=np.float64)
    return _near_an_end(a == float(bounds[0]), a == float(bounds[1]), levels, allowance, count)


def in_found_end_bins(
    answers: Any, levels: Any, edges: Any, allowance: float, count: float
) -> bool:
    """Whether an answer lies in an end bin of bins over found bounds (``edges``, on the
    numeric axis) at a level within :data:`NEAR_END_ALLOWANCES` allowances of records of that
    end of ``count`` (a release's total): the records clamped into that bin may hold the
    quantile (:func:`near_found_end` for a release's quantiles, which interpolate inside
    a bin). Released values only."""
    a = np.asarray(answers, dtype=np.float64)
    e = np.asarray(edges, dtype=np.float64)
    return _near_an_end(a < e[1], a >= e[-2], levels, allowance, count)


def clamp_warning(
    allowance: float,
    count: float | None,
    answers: Any,
    bounds: Any,
    found: Any = None,
    levels: Any = None,
) -> str | None:
    """After a bounds step: :data:`BEYOND_INTEGERS_WARNING` when an integer bound was clamped
    to ``±(2**53 - 1)`` (read from ``found``, the bounds as the step released them, before a
    method moved them into its own range; default ``bounds``), else
    :func:`few_records_warning` when a count is known (a public ``n`` or a released one),
    else :func:`at_bound_warning` when an answer equals a bound the method used (``bounds``,
    or None), else None. With a count and the answers' ``levels``, also
    :func:`at_bound_warning` when :func:`near_found_end` (the tree's answer at a found bound
    for a level within the allowance of that end: Adult capital_gain at ε = 0.1 answered 12
    at q = 0.99 on found bounds ``[0, 12]`` with 8% of the records above; the recursion's
    count, its root's side counts, keeps a block at a found bound, the median of a
    zero-inflated amount, from warning). Datetime bounds
    take only the count's warning. Released values only (post-processing)."""
    found = bounds if found is None else found
    if _numbers(found) and _INTEGER_CLAMP in (abs(float(found[0])), abs(float(found[1]))):
        return BEYOND_INTEGERS_WARNING  # integer bounds clamped where float64 holds no integer
    if count is not None:
        few = few_records_warning(allowance, float(count))
        near = levels is not None and _numbers(bounds)
        if few is None and near and near_found_end(answers, levels, bounds, allowance, count):
            return at_bound_warning(allowance)
        return few
    if _numbers(bounds) and np.isin(np.asarray(answers, dtype=np.float64), bounds).any():
        return at_bound_warning(allowance)
    return None


def _numbers(bounds: Any) -> bool:
    """Whether ``bounds`` is a pair of real numbers (not None, not datetimes)."""
    real = (int, float, np.integer, np.floating)
    return bounds is not None and all(isinstance(b, real) for b in bounds)


def scans_warning(
    off: str | None,
    result: Any,
    count: float | None,
    answers: Any,
    bounds: Any,
    levels: Any = None,
) -> str | None:
    """The bounds warning of a quantiles call once its answers are out: ``off`` (the stops'
    :func:`grid_end_warning`) unless a count rules it out (:func:`neighbours_ruled_out`),
    else :func:`clamp_warning`. ``result``: the bounds step's (its ``allowance`` and the
    bounds it released, ``value``); ``bounds``: those the method used. Released values only
    (post-processing)."""
    if neighbours_ruled_out(off, result.allowance, count):
        off = None  # the count shows the data lie within that grid step
    if off is not None:
        return off
    return clamp_warning(result.allowance, count, answers, bounds, result.value, levels)


#: The end-bin warning's advice (``report.tables.end_mass_text``) on public bounds (from
#: counts made elsewhere, ``release_counts``, no bounds can be found: the records are needed) ...
PUBLIC_WIDEN = "widen the bounds, or find them from the records with bounds='private'"
#: ... and where private bounds are not available (a group-by or per-person release).
PUBLIC_ONLY_WIDEN = (
    "widen the public bounds; private bounds are not available for a group-by or per-person release"
)
#: ... and on bounds found privately (asking for them again would not widen them).
PRIVATE_WIDEN = (
    "the private bounds' scans leave some records beyond their stops by design: give public "
    "bounds that hold them"
)


def restated(
    held: list[tuple[str, type[Warning]]], private: bool, current: str | None
) -> str | None:
    """The warnings a quantile method's own release held (:func:`treedp._validation
    .held_warnings`), emitted again on the caller's behalf, a bounds warning's advice being
    :data:`PRIVATE_WIDEN` when the call's bounds were found privately (the method's release
    saw them as public). Returns the caller's ``current`` bounds warning, or when it has none
    the first held one (for the caller to emit and keep in its result); emits the others.
    Post-processing of released values."""
    from treedp._validation import warn_user
    from treedp.exceptions import BoundsWarning

    for message, category in held:
        if category is BoundsWarning and private:
            message = message.replace(PUBLIC_WIDEN, PRIVATE_WIDEN)
        if category is BoundsWarning and current is None:
            current = message
        else:
            warn_user(message, category)
    return current
