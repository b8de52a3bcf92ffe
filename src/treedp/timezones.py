"""Time zones of datetime data, bounds and answers: the one place the zone rule lives.

The rule
--------
* **Datetimes are counted on the UTC timeline.** Bins of tz-aware data hold int64 ticks of UTC
  instants, and equal-width bins are equal on that timeline (a bin that crosses a change of
  daylight-saving time is as long in seconds as any other; its local labels may differ by the
  hour of the change).
* **The zone is public.** It comes from the input's type, never from its values: a pandas
  ``datetime64[ns, tz]`` dtype, a polars ``Datetime(time_zone=...)``, an Arrow/Parquet
  ``timestamp(unit, tz)`` field, a *named* zone object (``zoneinfo.ZoneInfo``, pytz) set on
  every Python datetime (the same name on all: a declaration like a dtype), or, for text with
  no schema (CSV) and for Python datetimes with fixed UTC offsets (``datetime.timezone``), the
  bounds' zone (``"2013-01-01T00:00Z"``, a tz-aware ``Timestamp``) or the CLI's ``--tz``. A CSV
  cell's offset, like a fixed-offset ``tzinfo``, only places that value on the UTC timeline; it
  never sets the zone, and messages never print a zone of the data. Missing values (``None``,
  NaN, ``pd.NaT``) are skipped when the kind of Python datetimes is decided.
* **Naive bounds are wall times in the data's zone**: ``bounds=("2013-01-01", "2014-01-01")``
  on New York data are New York midnights. Aware bounds are instants (any zone); the answers
  are in the data's zone (the bounds' zone when the data has no schema).
* **Naive and aware never mix.** Naive data with aware bounds, aware data with naive bins,
  Python datetimes of several zones, or a CSV column whose cells are naive where the bins are
  aware (or carry an offset where they are naive) are refused with
  :class:`~treedp.exceptions.InvalidTypeError` naming the argument, before any budget is
  charged. For in-memory inputs the refusal depends on types only; for CSV text it depends on
  how the cells are written (like a cell that is not a number), and the message holds no value.

Zones are named by strings: ``"UTC"``, an IANA name (``"America/New_York"``), or a fixed offset
``"+05:30"``.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "OFFSETS",
    "UNKNOWN",
    "aware_bound",
    "data_zone",
    "from_ticks",
    "localize",
    "zone_name",
]

#: The zone of an input without a schema (CSV text, clusters): decided by the bounds.
UNKNOWN = "<unknown>"

#: Python datetimes with fixed UTC offsets: instants whose zone is decided by aware bounds or
#: ``timezone=``; naive bounds are refused (as for CSV cells with offsets).
OFFSETS = "<offsets>"

_OFFSET = re.compile(r"^(.*\d)(?:(Z|z)|([+-])(\d\d):?(\d\d)?)$")
_FIXED = re.compile(r"^[+-]\d\d:\d\d$")
#: IANA's fixed offsets (what polars makes of pandas' ``UTC-04:00``): offsets, not zones.
_ETC_FIXED = re.compile(r"^Etc/GMT[+-]\d{1,2}$")


def zone_name(tz: Any, name: str = "timezone") -> str:
    """The name of a zone given as a string or a ``tzinfo`` (zoneinfo, pytz, dateutil, fixed)."""
    if isinstance(tz, str):
        return _checked(tz, name)
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)
    if isinstance(key, str):
        return _checked(key, name)
    if isinstance(tz, _dt.tzinfo):
        offset = tz.utcoffset(None)
        if offset is not None:
            return _offset_name(offset)
        text = str(tz)
        if text in ("UTC", "tzutc()"):
            return "UTC"
    got = "" if name == "values" else f" Got {tz!r}."  # a zone of the data is not printed
    raise InvalidTypeError(
        must(name, f"be a time zone: a name such as 'UTC' or 'Europe/Paris'.{got}")
    )


def _offset_name(offset: _dt.timedelta) -> str:
    minutes = int(offset.total_seconds() // 60)
    if minutes == 0:
        return "UTC"
    sign = "+" if minutes > 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _checked(text: str, name: str) -> str:
    if text.upper() in ("UTC", "Z", "+00:00", "-00:00", "ETC/UTC"):
        return "UTC"
    zone_info(text, name)
    return text


def zone_info(zone: str, name: str = "timezone") -> _dt.tzinfo:
    """The ``tzinfo`` of a zone name."""
    if zone == "UTC":
        return _dt.UTC
    if _FIXED.match(zone):
        sign = -1 if zone[0] == "-" else 1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        return _dt.timezone(sign * _dt.timedelta(hours=hours, minutes=minutes))
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        got = "" if name == "values" else f" Got {zone!r}."  # a zone of the data is not printed
        raise InvalidParameterError(
            must(name, f"name a time zone ('UTC', 'Europe/Paris', '+05:30').{got}")
        ) from None


# ---------------------------------------------------------------------------- bounds
def aware_bound(x: Any) -> tuple[np.datetime64, str | None]:
    """A bound as a datetime64 and its zone: for an aware bound the UTC instant, for a naive
    one its wall time (zone None). The unit is that of the same bound written naive."""
    if isinstance(x, str):
        m = _OFFSET.match(x.strip())
        if m is None or not ("T" in x or " " in x):
            return np.datetime64(x.strip().replace(" ", "T")), None
        wall = np.datetime64(m.group(1).replace(" ", "T"))
        if m.group(2):
            return wall, "UTC"
        sign = -1 if m.group(3) == "-" else 1
        shift = sign * _dt.timedelta(hours=int(m.group(4)), minutes=int(m.group(5) or 0))
        return _minus(wall, shift), _offset_name(shift)
    if isinstance(x, _dt.datetime) and x.tzinfo is not None:
        zone = zone_name(x.tzinfo, "bounds")
        offset = x.utcoffset()
        assert offset is not None
        wall = np.datetime64(_naive(x))
        return _minus(wall, offset), zone
    return np.datetime64(x), None


def coarse_unit(unit: str) -> str:
    """The unit of datetime bins: seconds at least (coarser units cannot hold an offset)."""
    return "s" if unit in ("Y", "M", "W", "D", "h", "m") else unit


def bound_pair(lo: Any, hi: Any, timezone: Any) -> tuple[np.datetime64, np.datetime64, Any]:
    """Two datetime bounds on the UTC timeline (wall times for naive bins) and the bins' zone:
    ``timezone`` (the data's) when given, else the bounds' own zone."""
    (lo_dt, lo_zone), (hi_dt, hi_zone) = aware_bound(lo), aware_bound(hi)
    if (lo_zone is None) != (hi_zone is None):
        raise InvalidTypeError(
            "The 'bounds' parameter mixes a naive datetime and one with a time zone; give "
            "both with a zone, or both naive (read in the data's zone)."
        )
    zone = None if timezone is None else zone_name(timezone)
    if zone is None and lo_zone != hi_zone:
        raise InvalidParameterError(
            f"The 'bounds' parameter is in two time zones ({lo_zone}, {hi_zone}); give both "
            "in the data's zone."
        )
    zone = zone or lo_zone
    if lo_zone is None and zone is not None:  # naive bounds: wall times in the data's zone
        lo_dt, hi_dt = localize(lo_dt, zone), localize(hi_dt, zone)
    return lo_dt, hi_dt, zone


def edges_zone(edges: Any, timezone: Any) -> str | None:
    """The zone of datetime edges: ``timezone`` (the data's) for datetime edges, else that of
    aware edges (a pandas tz dtype, aware datetimes, text with offsets), else None."""
    tz = getattr(getattr(edges, "dtype", None), "tz", None)
    if tz is not None:
        return zone_name(timezone if timezone is not None else tz, "edges")
    arr = np.asarray(edges) if not isinstance(edges, np.ndarray) else edges
    if arr.dtype.kind not in "MOU" or arr.size == 0:
        return None
    if timezone is not None:
        return zone_name(timezone)
    if arr.dtype.kind == "M":
        return None
    zones = set()
    for v in arr.reshape(-1):
        if isinstance(v, str | _dt.datetime):
            try:
                zones.add(aware_bound(v)[1])
            except ValueError:
                return None  # not datetimes: the numeric path reports it
    if len(zones) > 1:
        raise InvalidTypeError(
            "The 'edges' parameter mixes time zones (or naive and aware times); give them in "
            "one zone."
        )
    return zones.pop() if zones else None


def refuse_aware(x: Any, name: str) -> None:
    """Refuse tz-aware query points for naive datetime bins."""
    aware = getattr(getattr(x, "dtype", None), "tz", None) is not None
    if isinstance(x, _dt.datetime):
        aware = x.tzinfo is not None
    elif isinstance(x, list | tuple) or (isinstance(x, np.ndarray) and x.dtype.kind == "O"):
        aware = any(isinstance(v, _dt.datetime) and v.tzinfo is not None for v in x)
    if aware:
        raise InvalidTypeError(
            f"The '{name}' argument holds times with a time zone but the bins are naive; give "
            "naive times."
        )


def _naive(x: _dt.datetime) -> Any:
    """The wall time of an aware datetime: a pandas ``Timestamp`` keeps its unit, a Python
    datetime has that of its ISO 8601 text (seconds without microseconds), as a bound
    written ``"2013-01-01T00:00Z"`` would."""
    if hasattr(x, "tz_localize"):
        return x.tz_localize(None)  # a pandas Timestamp: keeps nanoseconds
    return x.replace(tzinfo=None).isoformat()


def _minus(wall: np.datetime64, offset: _dt.timedelta) -> np.datetime64:
    unit = np.datetime_data(wall.dtype)[0]
    fine = unit if unit in ("s", "ms", "us", "ns", "ps", "fs", "as") else "s"
    seconds = int(offset.total_seconds())
    out: np.datetime64 = wall.astype(f"datetime64[{fine}]") - np.timedelta64(seconds, "s")
    return out


def localize(wall: np.datetime64, zone: str, name: str = "bounds") -> np.datetime64:
    """The UTC instant of the wall time ``wall`` in ``zone``; a wall time that does not exist
    or occurs twice there (a change of daylight-saving time) is refused."""
    if zone == "UTC" or np.isnat(wall):
        return wall
    tz = zone_info(zone)
    seconds = wall.astype("datetime64[s]")
    base = _dt.datetime(1970, 1, 1) + _dt.timedelta(seconds=int(seconds.astype(np.int64)))
    first, second = base.replace(tzinfo=tz, fold=0), base.replace(tzinfo=tz, fold=1)
    off0, off1 = first.utcoffset(), second.utcoffset()
    assert off0 is not None and off1 is not None
    back = first.astimezone(_dt.UTC).astimezone(tz).replace(tzinfo=None)
    if off0 != off1 or back != base:
        raise InvalidParameterError(
            f"The '{name}' parameter holds {str(wall)!r}, a wall time that "
            f"{'occurs twice' if back == base else 'does not exist'} in {zone} (a change of "
            "daylight-saving time); give it with its UTC offset."
        )
    return _minus(wall, off0)


def to_utc(x: Any, zone: str, name: str) -> np.ndarray:
    """Query points for bins in ``zone`` as UTC datetime64: aware points are instants (any
    zone), naive ones wall times in ``zone``."""
    tz = getattr(getattr(x, "dtype", None), "tz", None)
    if tz is not None and hasattr(x, "tz_convert"):  # a pandas Series or DatetimeIndex
        if hasattr(x, "dt"):  # a Series: its values, not its index
            return np.asarray(x.dt.tz_convert("UTC").dt.tz_localize(None))
        return np.asarray(x.tz_convert("UTC").tz_localize(None))
    if isinstance(x, _dt.datetime | str | np.datetime64):
        return np.asarray(_one_utc(x, zone, name))
    arr = np.asarray(x)
    if arr.dtype.kind == "M" and zone == "UTC":
        return arr
    if arr.dtype.kind not in "MOU":
        raise InvalidTypeError(
            f"The '{name}' argument must hold datetimes for these datetime bins. "
            f"Got dtype {arr.dtype} instead."
        )
    flat = [_one_utc(v, zone, name) for v in arr.reshape(-1)]
    out = np.array(flat) if flat else np.array([], dtype="datetime64[s]")
    return out.reshape(arr.shape)


def _one_utc(v: Any, zone: str, name: str) -> np.datetime64:
    if v is None or (isinstance(v, float) and v != v):
        return np.datetime64("NaT")
    if not isinstance(v, _dt.date | str | np.datetime64):
        raise InvalidTypeError(f"The '{name}' argument must hold datetimes for these bins.")
    try:
        instant, own = aware_bound(v)
    except ValueError:
        raise InvalidTypeError(
            f"The '{name}' argument must hold datetimes for these datetime bins."
        ) from None
    return instant if own is not None else localize(instant, zone, name)


# ---------------------------------------------------------------------------- data
def data_zone(values: Any, column: Any = None) -> str | None:
    """The zone of a datetime input from its type (None: naive or not datetime;
    :data:`UNKNOWN`: no schema, such as CSV text or a cluster). Reads no value, except the
    ``tzinfo`` of Python datetimes, which must all agree."""
    root = (type(values).__module__ or "").split(".")[0]
    if root == "polars" and hasattr(values, "collect_schema"):  # a (lazy) frame: its schema
        schema = values.collect_schema()
        if column is None or column not in schema.names():
            return UNKNOWN  # the engine reports the missing column
        zone = getattr(schema[column], "time_zone", None)
        return None if zone is None else _type_zone(zone)
    if root in ("pandas", "polars", "dask") and hasattr(values, "columns"):
        if column is None or column not in list(values.columns):
            return UNKNOWN  # the engine reports the missing column
        values = values[column]
    if root in ("pandas", "dask"):
        col = values
        dtype = getattr(col, "dtype", None)
        tz = getattr(dtype, "tz", None)
        if tz is None and root == "pandas" and getattr(dtype, "kind", "") == "O":
            return objects_zone(col)  # Python objects in a pandas column: their tzinfo kinds
        return None if tz is None else _type_zone(tz)
    if root == "polars":
        col = values
        if str(getattr(col, "dtype", "")) == "Null":  # no type, nothing present: no zone
            return UNKNOWN
        zone = getattr(getattr(col, "dtype", None), "time_zone", None)
        return None if zone is None else _type_zone(zone)
    if root == "pyarrow":
        schema = getattr(values, "schema", None)
        if schema is not None and (column is None or column not in schema.names):
            return UNKNOWN  # the engine reports the missing column
        t = _arrow_type(values, column)
        if str(t) == "null":  # no type, nothing present: no zone (the bounds' holds)
            return UNKNOWN
        zone = getattr(t, "tz", None)
        return None if zone is None else _type_zone(zone)
    if type(values).__name__ == "FileSource":
        values = values.path
    if isinstance(values, str) or hasattr(values, "__fspath__"):
        return _file_zone(values, column)
    if isinstance(values, np.ndarray) and values.dtype.kind == "M":
        return UNKNOWN  # numpy datetimes carry no zone: UTC instants under aware bounds
    if isinstance(values, np.ndarray) and values.dtype.kind != "O":
        return None
    if isinstance(values, list | tuple | np.ndarray):
        # The first present element says what the sequence is (paths, Python datetimes or
        # numbers), without asking its length: only datetimes are scanned for their zone.
        first = next(
            (v for v in values if not (v is None or (isinstance(v, float) and v != v))), None
        )
        if first is None:  # nothing present: no zone (the bounds' holds), never "naive"
            return UNKNOWN
        if _is_path(first) and all(_is_path(v) for v in values):
            return _file_zone(first, column)
        return objects_zone(values) if isinstance(first, _dt.datetime) else None
    return UNKNOWN if root in ("pyspark", "duckdb", "sqlite3", "treedp") else None


def _type_zone(tz: Any) -> str:
    """The zone a column's type declares: a named zone (``America/New_York``) or UTC; a fixed
    UTC offset other than UTC (pandas' ``datetime64[ns, UTC-04:00]``, which pandas infers when
    every value it parses has that offset; Arrow ``timestamp(unit, "+04:00")``; polars) is
    :data:`OFFSETS`: each value an instant, the zone declared by the bounds or ``timezone=``,
    as for fixed-offset Python datetimes (privacy review F5: the offset, and with it the bins,
    would follow the season of the records)."""
    name = zone_name(tz, "values")
    return OFFSETS if _FIXED.match(name) or _ETC_FIXED.match(name) else name


def utc_naive(v: Any) -> Any:
    """A Python datetime as its naive UTC instant (naive ones and other values unchanged);
    ``pd.NaT`` (a ``datetime`` unequal to itself) as numpy's NaT, a missing value."""
    if isinstance(v, _dt.datetime) and v != v:
        return np.datetime64("NaT")
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        if hasattr(v, "tz_convert"):  # a pandas Timestamp: keeps nanoseconds
            return v.tz_convert("UTC").tz_localize(None)
        return v.astimezone(_dt.UTC).replace(tzinfo=None)
    return v


def _arrow_type(values: Any, column: Any) -> Any:
    schema = getattr(values, "schema", None)
    if schema is not None and column is not None and column in schema.names:
        return schema.field(column).type
    return getattr(values, "type", None)


def _is_path(v: Any) -> bool:
    return isinstance(v, str) or hasattr(v, "__fspath__")


def _file_zone(path: Any, column: Any) -> str | None:
    """A Parquet file's zone from its schema (the first file of a folder or pattern); CSV text
    and other inputs have none (:data:`UNKNOWN`)."""
    import glob
    import os

    text = os.fspath(path)
    if os.path.isdir(text):
        found = sorted(glob.glob(os.path.join(text, "**", "*.parquet"), recursive=True))
        text = found[0] if found else text
    elif any(ch in text for ch in "*?["):
        found = sorted(glob.glob(text, recursive=True))
        text = found[0] if found else text
    if text.lower().endswith((".parquet", ".pq")) and column is not None:
        try:
            import pyarrow.parquet as pq

            schema = pq.read_schema(text)
        except Exception:  # the reader reports a missing or broken file with its own error
            return UNKNOWN
        if column in schema.names:
            t = schema.field(column).type
            if str(t) == "null":  # a null column: no type, no zone (the bounds' holds)
                return UNKNOWN
            zone = getattr(t, "tz", None)
            return None if zone is None else _type_zone(zone)
    return UNKNOWN


def objects_zone(values: Any) -> str | None:
    """The zone of Python datetimes, from their ``tzinfo`` objects (missing values skipped).

    * all naive: None; none present (every value missing, or none): :data:`UNKNOWN`, no zone
      to agree with (it was None, and aware bounds refused an empty column as naive where its
      neighbour with one aware record was released);
    * all carry one *named* zone (a ``zoneinfo.ZoneInfo`` or a pytz zone, with the same name):
      that zone. Like a dtype, a zone object set on every value declares the zone;
    * all carry a fixed UTC offset (``datetime.timezone``, ``datetime.UTC``, what
      ``datetime.fromisoformat("...-04:00")`` returns): :data:`OFFSETS`. Like a CSV cell's
      offset, each offset only places its value on the UTC timeline; the zone comes from aware
      bounds or ``timezone=`` / ``--tz``, and naive bounds are refused;
    * any other mix is refused with one fixed message (no zone or value of the data).

    Missing values (``None``, NaN, ``pd.NaT``, which is a ``datetime`` whose ``tzinfo`` is None)
    are skipped, so they never count as naive: the missing-value policy decides about them."""
    kinds: set[str | None] = set()
    for v in values:
        if not isinstance(v, _dt.datetime) or v != v:  # not a datetime, or NaT (NaT != NaT)
            continue
        kinds.add(_object_kind(v.tzinfo))
        if len(kinds) > 1:
            raise InvalidTypeError(
                "The 'values' argument mixes datetimes of different time zones (or naive and "
                "tz-aware ones, or named zones and fixed UTC offsets); give them in one zone."
            )
    return kinds.pop() if kinds else UNKNOWN  # no datetime present: no zone to agree with


def _object_kind(tz: Any) -> str | None:
    """None (naive), a zone name (a named zone object) or :data:`OFFSETS` (a fixed offset)."""
    if tz is None:
        return None
    key = getattr(tz, "key", None) or getattr(tz, "zone", None)
    if isinstance(key, str):
        return zone_name(key, "values")
    if isinstance(tz, _dt.tzinfo) and tz.utcoffset(None) is not None:
        return OFFSETS
    raise InvalidTypeError(
        "The 'values' datetimes carry a time zone object without a name (use zoneinfo.ZoneInfo "
        "zones, fixed UTC offsets, or a pandas column with a tz dtype)."
    )


def check_agrees(data: str | None, bins: Any) -> None:
    """Refuse naive data with aware bins and aware data with naive bins (types only)."""
    if bins.datetime_unit is not None:
        _agree(data, bins.timezone)


def _agree(data: str | None, bins_zone: str | None) -> None:
    """Refuse a naive/aware mismatch. The messages hold no zone read from the data (only the
    bounds' zone, a public input)."""
    if data in (UNKNOWN, bins_zone) or (data is not None and bins_zone is not None):
        return
    if data is None:
        raise InvalidTypeError(
            f"The 'bounds' parameter is in the time zone {bins_zone} but the 'values' "
            "datetimes are naive; give naive bounds, or data with a time zone."
        )
    if data == OFFSETS:
        raise InvalidTypeError(
            "The 'values' datetimes carry fixed UTC offsets (no named zone) but the bounds are "
            "naive: give bounds with a zone (ending in Z or an offset such as +01:00, or "
            "zoneinfo datetimes)."
        )
    raise InvalidTypeError(
        "The 'values' datetimes carry a time zone but the bins are naive; build them with "
        "bounds or edges in that zone (naive bounds are read in the data's zone by treedp's "
        "entry points)."
    )


def quantile_bounds(values: Any, column: Any, bounds: Any) -> tuple[Any, str | None]:
    """Bounds of a quantile query on the UTC timeline, and the zone of its answers (None:
    naive, the bounds unchanged). Naive bounds are wall times in the data's zone; private
    bounds (``'private'``) answer in the zone the data's type names (UTC for fixed
    offsets), as ``release_cdf`` does."""
    if isinstance(bounds, str) and bounds == "private":
        zone = data_zone(values, column)
        return bounds, ("UTC" if zone == OFFSETS else None if zone == UNKNOWN else zone)
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        return bounds, None
    if not all(_datetime_word(b) for b in bounds):
        return bounds, None  # numbers, 'private' or a mix: the request's checks tell
    zone = data_zone(values, column)
    try:
        declared = None if zone in (UNKNOWN, OFFSETS) else zone
        lo, hi, bins_zone = bound_pair(bounds[0], bounds[1], declared)
    except (InvalidParameterError, InvalidTypeError):
        raise
    except ValueError:
        return bounds, None  # unreadable: the request's checks tell
    _agree(zone, bins_zone)
    return (bounds, None) if bins_zone is None else ((lo, hi), bins_zone)


def expect_offsets(bounds: Any, zone: str | None) -> bool | None:
    """Whether CSV datetime cells must carry a UTC offset for a quantile query: True for
    tz-aware bounds (``zone``), False for naive datetime bounds, None otherwise (numbers,
    ``'private'``: the request's checks tell)."""
    if zone is not None:
        return True
    pair = isinstance(bounds, tuple | list) and len(bounds) == 2
    return False if pair and all(_datetime_word(b) for b in bounds) else None


def _datetime_word(b: Any) -> bool:
    if isinstance(b, str):
        try:
            float(b)
        except ValueError:
            return b != "private"
        return False
    return isinstance(b, _dt.date | np.datetime64)


def result_in_zone(result: Any, zone: str | None) -> Any:
    """A quantile result with its value and bounds in ``zone`` (unchanged for None)."""
    if zone is None:
        return result
    import dataclasses

    value = from_ticks(np.asarray(result.value), "s", zone)
    bounds = tuple(from_ticks(np.asarray(b), "s", zone) for b in result.bounds)
    return dataclasses.replace(result, value=value, bounds=bounds)


# ---------------------------------------------------------------------------- answers
def from_ticks(ticks: np.ndarray, unit: str, zone: str) -> Any:
    """UTC ticks as times in ``zone``: pandas ``Timestamp`` objects (an object array shaped
    like ``ticks``, or a scalar for 0-d), or Python datetimes without pandas; NaN is NaT."""
    raw = np.asarray(ticks)
    if raw.dtype.kind == "M":
        unit = np.datetime_data(raw.dtype)[0]
    utc = raw.astype(f"datetime64[{unit}]")
    flat = utc.reshape(-1)
    try:
        import pandas as pd
    except ImportError:  # without pandas: Python datetimes (microseconds)
        tz = zone_info(zone)
        out = np.array(
            [
                None
                if np.isnat(t)
                else t.astype("datetime64[us]").item().replace(tzinfo=_dt.UTC).astimezone(tz)
                for t in flat
            ],
            dtype=object,
        )
    else:
        index = pd.DatetimeIndex(flat.astype(_pandas_unit(unit))).tz_localize("UTC")
        index = index.tz_convert(zone_info(zone))
        out = np.empty(flat.size, dtype=object)
        out[:] = list(index)
    shaped = out.reshape(utc.shape)
    return shaped[()] if shaped.ndim == 0 else shaped


def _pandas_unit(unit: str) -> str:
    return f"datetime64[{unit}]" if unit in ("s", "ms", "us", "ns") else "datetime64[ns]"
