"""The PostgreSQL engine: a :class:`SqlSource` on a ``psycopg`` (3) connection.

Public numbers are bound parameters (server-side, exact doubles); equal-width bins are
counted in one ``GROUP BY`` (:mod:`treedp.engines.sql.fast`); with a privacy unit, and other
bins (numbers, and datetime ticks), behind cheap predicates for missing and out-of-range
values, by ``width_bucket(x, ARRAY[e_1 .. e_{B-1}])``, the number of inner edges ``<= x``,
which is the local rule with clamping (:mod:`treedp.engines.sql.bucket`). ``NaN`` is missing
(``x = 'NaN'::float8`` holds in PostgreSQL). Each query runs in its own transaction block or
savepoint (``connection.transaction()``), so a failing query leaves the caller's connection
usable. ``%`` in the user's query is escaped for psycopg's placeholders.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from treedp.engines.entry import Engine
from treedp.engines.sql.by_columns import ROUNDS_TO_INFINITY, base_type
from treedp.engines.sql.rule import Dialect, Sql, hex_literal
from treedp.engines.sql.source import SqlSource, connection_kind
from treedp.engines.sql.table import engine_row
from treedp.engines.sql.ticks import INFINITE, Ticks
from treedp.exceptions import InvalidTypeError

__all__ = ["DIALECT", "ENGINE"]

_INTEGERS = {20, 21, 23, 26}  # int8 int2 int4 oid
_FLOATS = {700, 701, 1700}  # float4 float8 numeric
_DATETIMES = {1082, 1114, 1184}  # date, timestamp, timestamptz (a time of day is none)


def _literal(v: Any) -> tuple[str, list[Any]]:
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int | float | str | Decimal):
        raise InvalidTypeError(
            f"The postgresql engine compares keys that are numbers or strings. Got "
            f"{type(v).__name__}."
        )
    return "%s", [v]


#: One query at a time per process: a psycopg connection's transaction blocks must not
#: interleave (treedp.profile reads columns from several threads).
_ONE_AT_A_TIME = threading.Lock()


def _execute(con: Any, text: str, params: list[Any]) -> tuple[list[tuple[Any, ...]], Any]:
    with _ONE_AT_A_TIME, con.transaction(), con.cursor() as cur:
        cur.execute(text, params)
        rows = cur.fetchall()
        return rows, cur.description


def _source(data: Any) -> str:
    return "(" + str(data.sql).replace("%", "%%") + "\n)"  # a trailing -- comment ends


def _columns(data: Any) -> list[tuple[str, str | None]]:
    _, desc = _execute(data.connection, f"SELECT * FROM {_source(data)} AS q LIMIT 0", [])
    out: list[tuple[str, str | None]] = []
    for d in desc:
        oid = int(d.type_code)
        out.append(
            (
                str(d.name),
                "integer"
                if oid in _INTEGERS
                else "float"
                if oid in _FLOATS
                else "datetime"
                if oid in _DATETIMES
                else None,
            )
        )
    return out


def _types(data: Any) -> dict[str, str]:
    _, desc = _execute(data.connection, f"SELECT * FROM {_source(data)} AS q LIMIT 0", [])
    # before PostgreSQL 14, EXTRACT(EPOCH ...) is a double: no datetime type is accepted
    old = " (PostgreSQL < 14)" if int(data.connection.info.server_version) < 140000 else ""
    return {str(d.name): _TYPE_NAMES.get(int(d.type_code), "other") + old for d in desc}


_TYPE_NAMES = {
    1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz",
    25: "text", 1043: "varchar", 1042: "bpchar", 19: "name", 1700: "numeric", 16: "bool",
    20: "int8", 21: "int2", 23: "int4", 26: "oid", 700: "float4", 701: "float8",
}  # fmt: skip

#: The least ``numeric`` a double rounds to infinity (``2^1024 - 2^970``) and the largest
#: it rounds to zero (``2^-1075``), exact: PostgreSQL's cast raises on both ("out of range"),
#: for that one value, where Python's ``float`` (the memory engine) gives ±inf and ±0.0.
_OVERFLOW = str(ROUNDS_TO_INFINITY)
_UNDERFLOW = "0." + str(5**1075).zfill(1075)  # 2^-1075 = 5^1075 / 10^1075


def _wide_cast(col: str, type_name: str) -> str | None:
    """A ``numeric`` column as a double, saturating: ±``Infinity`` past the double range and 0
    below its least subnormal, as the memory engine converts a ``Decimal`` (an independent
    review, session 27: one ``1e400`` failed the query)."""
    if base_type(type_name) != "numeric":  # "numeric (PostgreSQL < 14)" too
        return None
    return (
        f"CASE WHEN {col} = 'NaN'::numeric THEN 'NaN'::float8 "  # NaN sorts above all
        f"WHEN {col} >= {_OVERFLOW} THEN 'Infinity'::float8 "
        f"WHEN {col} <= -{_OVERFLOW} THEN '-Infinity'::float8 "
        f"WHEN abs({col}) <= {_UNDERFLOW} THEN 0::float8 ELSE CAST({col} AS float8) END"
    )


def _ticks(col: str, type_name: str) -> Ticks | None:
    """A timestamp or timestamptz as exact microseconds (``EXTRACT(EPOCH ...)`` is a numeric,
    exact, since PostgreSQL 14), a date as days; ``±infinity`` as ``±INFINITE``."""
    if type_name in ("timestamp", "timestamptz"):
        form, unit = f"EXTRACT(EPOCH FROM {col}) * 1000000", "us"
    elif type_name == "date":
        form, unit = f"({col} - DATE '1970-01-01')", "D"
    else:
        return None
    expr = (
        f"CASE WHEN {col} = 'infinity'::{type_name} THEN CAST('{INFINITE}' AS numeric) "
        f"WHEN {col} = '-infinity'::{type_name} THEN CAST('-{INFINITE}' AS numeric) "
        f"ELSE CAST({form} AS numeric) END"
    )
    return Ticks(expr, unit, type_name == "timestamptz", "numeric")


def _run(data: Any, text: str, params: list[Any]) -> list[tuple[Any, ...]]:
    return _execute(data.connection, text, params)[0]


def _errors() -> tuple[type[BaseException], ...]:
    import psycopg

    return (psycopg.Error,)


def _keyed_hash(sql: Sql, key: str, columns: Sequence[str]) -> str:
    """``md5`` (32 hex digits, compared bytewise) of the key and the columns as text."""
    parts = ", ".join(f"({c})::text" for c in columns)
    return f"md5(concat_ws('|', {hex_literal(key)}::text, {parts})) COLLATE \"C\""


DIALECT = Dialect(
    name="postgresql",
    double="float8",
    literal=_literal,
    missing=lambda x: f"({x} IS NULL OR {x} = 'NaN'::float8)",
    nan_null=lambda c: f"CASE WHEN {c} = 'NaN' THEN NULL ELSE {c} END",  # float4/8, numeric
    rule=lambda bins: "width_bucket",
    source=_source,
    run=_run,
    columns=_columns,
    errors=_errors,
    array=lambda values: ("%s::float8[]", [values]),
    max_params=65535,
    keyed_hash=_keyed_hash,
    types=_types,
    ticks=_ticks,
    wide_cast=_wide_cast,
    one_group_by=True,
    inline_bin=True,
)


def _accepts(data: Any) -> bool:
    return isinstance(data, SqlSource) and connection_kind(data.connection) == "postgresql"


ENGINE: Engine = engine_row(DIALECT, _accepts)
