"""The private-bounds stage of a release: ``release_cdf(bounds="private")``.

Every public parameter of the release is checked first, on stand-in bounds with the budget the
release will have after the stage (public); then the data are scanned (one counting pass over
the public grid, or the column in memory), the whole ε is charged once, and the bounds are
found with ``share · ε`` (:func:`treedp.value_methods.bounds_split.split_private_bounds`). The
release then runs on the found bounds with the rest, without charging again.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from treedp.bin_edges import RELEASE_INTEGER_BINS
from treedp.config import configure
from treedp.domain import MAX_BINS, integer_range_bins, make_bins
from treedp.engines.dispatch import count_source
from treedp.engines.schema import column_kind
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.registry import mechanism_class
from treedp.options import PrivateBounds
from treedp.privacy.spend import PRIVATE_BOUNDS_RECORD
from treedp.query import Query
from treedp.timezones import OFFSETS, UNKNOWN, data_zone, zone_info

__all__ = [
    "PRIVATE_BOUNDS_RECORD",
    "datetime_zones",
    "n_differs",
    "private_bounds_charge",
    "run_bounds_stage",
]


def run_bounds_stage(query: Query) -> tuple[Any, Any, float, dict[str, Any]]:
    """Check, charge once and find the bounds of a private-bounds query; returns the bounds,
    the bins request of the release on them, the epsilon left for the release and the
    bounds step's record (kept in the release).

    With ``bins="integers"`` a found range of more integers than ``PrivateBounds.max_bins``
    (at most the mechanism's limit) is released on equal-width bins of whole integers
    (:func:`~treedp.domain.integer_range_bins`, ``Bins.integers``: queries read integer data;
    the record's ``"width"``), never cut."""
    from treedp.value_methods.bounds_split import split_private_bounds
    from treedp.value_methods.private_bounds import check_known_bound

    private, spec, bins = query.private_bounds, query.release_spec, query.bins_request
    assert private is not None and query.epsilon is not None
    zones = datetime_zones(query.data, query.column, private)
    if zones is not None and bins == "integers":
        raise InvalidParameterError(
            "bins='integers' needs numeric bounds: a datetime column takes a number of "
            "equal-width bins."
        )
    known = check_known_bound(private.lower, private.upper, bins == "integers", "bounds")
    # The stand-in (same number of bins, the budget left after the bounds: public) is
    # configured in full (the relation, a public n, the mechanism's own checks): nothing
    # public may refuse after the bounds' charge. Its plan is kept for the release, which
    # has the same bins (equal-width) and budget.
    plan = query.plan if bins != "integers" else None
    configure(spec, plan=plan, plan_cache=query.plan_cache)
    max_bins = MAX_BINS if spec.mechanism == "auto" else mechanism_class(spec.mechanism).max_bins
    charge = private_bounds_charge(
        query.epsilon, private.share, bins, spec.neighbours, spec.nan, _given(private)
    )
    accountant = query.accountant
    if accountant is not None:  # a spend it cannot take is refused before the data is read
        accountant.check(charge)
    if zones is not None:
        bounds, rest, step = _datetime_stage(query, charge, zones)
        return bounds, bins, rest, step
    scanned = bounds_input(query.data, query.column, spec.nan, query.progress, query.engine)
    if spec.n is not None and records_read(scanned) != spec.n:
        raise n_differs()  # public under replace: refused before the bounds' charge
    found, epsilon, found_by = split_private_bounds(
        scanned,
        epsilon=query.epsilon,
        share=private.share,
        integers=bins == "integers",
        neighbours=spec.neighbours,
        nan=spec.nan,
        rng=query.rng,
        accountant=accountant,  # charged the whole epsilon once, before any noise
        lower=private.lower,
        upper=private.upper,
        charge=charge,
        max_bins=None,  # integers: coarser bins below, never a cut range
    )
    bounds, request = found, bins
    bins_note: dict[str, Any] = {}  # how integers were binned, for the record
    if bins == "integers":
        wanted = RELEASE_INTEGER_BINS if private.max_bins is None else private.max_bins
        cap = min(max_bins, wanted)
        beyond = _beyond_exact_integers(found, found_by.stops, known)
        if beyond is not None:  # float bins: integers there are not exact in float64
            bounds, request, bins_note = beyond, cap, {"beyond_exact_integers": True}
        else:
            request, width = integer_range_bins(int(found[0]), int(found[1]), cap)
            bins_note = {"width": width} if width > 1 else {}  # bins of `width` integers
    bounds_step = {
        "method": "private_bounds",
        "stops": [float(v) for v in found_by.stops],
        "epsilon": found_by.epsilon_spent,
        "share": private.share,
        "allowance": found_by.allowance,
        "lo": float(found[0]),
        "hi": float(found[1]),
    }
    if known is not None:  # that side was the caller's public bound
        bounds_step["known"] = known
    return bounds, request, epsilon, {**bounds_step, **bins_note}


def _beyond_exact_integers(
    found: tuple[float, float], stops: tuple[float, float], known: str | None
) -> tuple[float, float] | None:
    """Float bounds for integer data whose scans stopped beyond ``±(2**53 - 1)``, where the
    integer bounds are clamped (every record beyond would be clamped onto them, and float64
    holds no exact integer there): each such side becomes the grid point one margin past its
    stop. None when both stops lie within. Post-processing of the released stops."""
    from treedp.value_methods.bounds_grid import SIGNED_GRID
    from treedp.value_methods.private_bounds import MARGIN

    limit = 2.0**53 - 1
    if max(abs(stops[0]), abs(stops[1])) <= limit:
        return None
    where = np.searchsorted(SIGNED_GRID, np.asarray(stops, dtype=np.float64))
    top = SIGNED_GRID.size - 1
    lo = (
        found[0]
        if known == "lower" or abs(stops[0]) <= limit
        else float(SIGNED_GRID[max(int(where[0]) - MARGIN, 0)])
    )
    hi = (
        found[1]
        if known == "upper" or abs(stops[1]) <= limit
        else float(SIGNED_GRID[min(int(where[1]) + MARGIN, top)])
    )
    return float(lo), float(hi)


def _given(private: PrivateBounds) -> Any:
    """``bounds=`` as the caller wrote it, for the charge's record."""
    request = private.request
    return "private" if request == ("private", "private") else request


def bounds_input(values: Any, column: str | None, nan: Any, progress: Any, engine: Any) -> Any:
    """What the private bounds scan: a column in memory as it is; anything else (files of
    any size, tables, pandas / polars / Spark / Dask DataFrames by ``column``) through one
    counting pass over the public :data:`~treedp.value_methods.bounds_grid.COUNT_EDGES`
    with the release's engine, in bounded memory (the scans read only those counts)."""
    from treedp.engines.files import FileSource
    from treedp.value_methods.bounds_grid import COUNT_EDGES, GridCounts

    if column is None and not isinstance(values, FileSource | os.PathLike):
        return values
    try:
        counts = count_source(
            values,
            column=column,
            bins=make_bins(edges=COUNT_EDGES),
            nan=nan,
            progress=progress,
            engine=engine,
        ).counts
    except InvalidTypeError as error:  # only "holds datetimes but the bins are numeric"
        if "holds datetimes" not in str(error):  # (a text cell's refusal names datetimes too)
            raise
        raise InvalidTypeError(  # the engine's advice (datetime bounds) does not apply here
            "bounds='private' read datetimes in a column its type did not declare as "
            "datetimes (a CSV file has no types): give bounds=treedp.PrivateBounds("
            "datetimes=True), or public datetime bounds=(lo, hi)."
        ) from None
    return GridCounts.from_counts(counts)


def private_bounds_charge(
    epsilon: float, share: float, bins: Any, neighbours: str, nan: str, bounds: Any = "private"
) -> Any:
    """The record charged once for a release with private bounds (public parameters)."""
    from treedp.privacy.measures import PureDP
    from treedp.privacy.spend import SpendRecord

    return SpendRecord(
        PRIVATE_BOUNDS_RECORD,
        PureDP(float(epsilon)),
        neighbours,
        "record",
        {
            "epsilon": float(epsilon),
            "bounds": bounds if isinstance(bounds, str) else str(tuple(bounds)),
            "bounds_share": share,
            "bins": bins,
            "nan": nan,
        },
    )


def n_differs() -> DataError:
    """A contract check on the public n failed; the message holds no count of the data."""
    return DataError(
        "With neighbours='replace' the 'n' parameter must be the public number of records, "
        "and the column's number of records differs from it. Pass the true public n, or "
        "use neighbours='add_remove' (n then stays private)."
    )


def records_read(scanned: Any) -> int:
    """The number of records the bounds step reads: its counting pass's total, or the
    values' count (under replace missing values are refused, so every value counts)."""
    from treedp._inputs import as_1d_array
    from treedp.value_methods.bounds_grid import GridCounts

    if isinstance(scanned, GridCounts):
        return scanned.total
    return int(as_1d_array(scanned).size)


def datetime_zones(
    values: Any, column: str | None, private: PrivateBounds
) -> tuple[str | None, str | None] | None:
    """Whether private bounds are searched for datetimes (from the column's type or the
    request), and then the zone of the counting pass and of the bounds found (None: naive).
    Public inputs only: the type, the type's zone and the request."""
    declared = private.timezone
    typed = column_kind(values, column) == "datetime"  # the type says so
    datetimes = private.datetimes
    if datetimes is None:
        datetimes = declared is not None or typed
    if not datetimes:
        return None
    # The zone from the type only: Python datetimes (no dtype) are naive unless 'timezone'
    # declares theirs (one record's tzinfo would otherwise decide the bins' zone).
    zone = data_zone(values, column) if typed else UNKNOWN
    if declared is not None and zone not in (UNKNOWN, OFFSETS, declared):
        raise InvalidParameterError(
            "A time zone for private datetime bounds (timezone=, --tz) is for datetimes whose "
            "type names no zone (CSV cells or values with UTC offsets); this column's type is "
            "naive or names its own zone, which the bounds keep: leave the time zone out."
        )
    if declared is not None:
        answer: str | None = declared
    elif zone == OFFSETS:
        answer = "UTC"
    else:
        answer = None if zone in (None, UNKNOWN) else zone
    return (None if answer is None else "UTC"), answer


def _datetime_stage(
    query: Query, charge: Any, zones: tuple[str | None, str | None]
) -> tuple[Any, float, dict[str, Any]]:
    """The bounds stage of a datetime column: one counting pass over the public day grid,
    the charge, the scans (:mod:`treedp.value_methods.datetime_bounds`); the bounds come
    back as datetimes in the answers' zone (naive for naive data)."""
    from treedp.timezones import check_agrees
    from treedp.value_methods.datetime_bounds import (
        DAY_EDGES,
        GRID_NAME,
        DayCounts,
        split_datetime_bounds,
    )

    private, spec = query.private_bounds, query.release_spec
    assert private is not None and query.epsilon is not None
    count_zone, answer_zone = zones
    grid = make_bins(edges=DAY_EDGES, timezone=count_zone)
    check_agrees(data_zone(query.data, query.column), grid)
    counts = count_source(
        query.data,
        column=query.column,
        bins=grid,
        nan=spec.nan,  # type: ignore[arg-type]
        progress=query.progress,
        engine=query.engine,
    ).counts
    days = DayCounts.from_counts(counts)
    if spec.n is not None and days.total != spec.n:
        raise n_differs()  # public under replace: refused before the bounds' charge
    found, rest = split_datetime_bounds(
        days,
        epsilon=query.epsilon,
        share=private.share,
        neighbours=spec.neighbours,
        rng=query.rng,
        accountant=query.accountant,  # charged the whole epsilon once, before any noise
        charge=charge,
    )
    lo, hi = (int(v) for v in found.value)
    step = {
        "method": "private_bounds",
        "grid": GRID_NAME,
        "stops": [float(v) for v in found.stops],
        "epsilon": found.epsilon_spent,
        "share": private.share,
        "allowance": found.allowance,
        "lo": float(lo),
        "hi": float(hi),
    }
    return (_datetime(lo, answer_zone), _datetime(hi, answer_zone)), rest, step


def _datetime(seconds: int, zone: str | None) -> Any:
    """Seconds since 1970-01-01 as a bound: a naive ``datetime64[us]`` (wall time), or an
    aware datetime in ``zone`` (the seconds being a UTC instant)."""
    import datetime as dt

    if zone is None:
        return np.datetime64(seconds * 1_000_000, "us")
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    return instant.astimezone(zone_info(zone))
