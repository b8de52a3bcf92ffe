"""The ``by`` columns of a database query: which public key a row's key values equal, in SQL.

Every comparison leaves the column as the database holds it and brings the public key to the
column's type instead, so that no row is converted (an independent review, session 27: a
DuckDB ``JSON`` or ``UHUGEINT`` column compared with a number cast every row, a date column
compared as a ``TIMESTAMP`` cast every date, and one row out of the target type's range failed
the query where its neighbour without it succeeded):

* a number column: a number key that the column's type can hold exactly (DuckDB: ``TRY_CAST``
  of the key, NULL when out of range; a key with a fraction matches no integer); a PostgreSQL
  ``numeric`` column takes the key's exact decimal;
* a date column: a key at midnight as a ``DATE``, any other instant matches no date;
* a naive timestamp column of any precision: the key's instant when that precision holds it
  (a key at 06:30:00.5 matches no ``TIMESTAMP_S``), as the column's type;
* a time-zone-aware column: ``CAST(k AS TIMESTAMP)`` against the key's instant, as before (the
  session's zone; no value of the type is out of that cast's range);
* any other type the engine knows not to compare safely (DuckDB ``JSON``, ``BLOB``, lists,
  structs, maps) is refused from the query's description before anything is read or charged.

A key finer than a microsecond, or naming no instant, matches nothing
(:func:`~treedp.engines.keys.key_micros_text`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.keys import key_micros_text, key_ticks
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.engines.sql.rule import Sql

__all__ = ["check_by_types", "key_position"]

#: Naive timestamp types and the unit a key must fit (lower case, both databases' names).
_NAIVE = {"timestamp_s": "s", "timestamp_ms": "ms", "timestamp": "us", "timestamp_ns": "us"}
_NEVER = "1 = 0"


def check_by_types(
    name: str, by: Sequence[str], kinds: Mapping[str, str | None], types: Mapping[str, str]
) -> None:
    """Refuse a ``by`` column whose SQL type the dialect cannot compare with a key without
    converting its rows (DuckDB: anything but numbers, dates and datetimes, text, booleans,
    enums and UUIDs). From the query's description only."""
    if name != "duckdb":
        return
    for b in by:
        type_name = types.get(b, "")
        if kinds.get(b) is None and not type_name.startswith(_DUCK_KEYS):
            raise InvalidTypeError(
                f"The 'by' column '{b}' has the SQL type {type_name}, which keys are not "
                "compared with; group by a column of a number, text, boolean, date or "
                "timestamp type (cast it in the query)."
            )


_DUCK_KEYS = ("VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR", "BOOLEAN", "ENUM", "UUID")


def key_position(
    sql: Sql,
    by: Sequence[str],
    keys: Sequence[Any],
    kinds: Mapping[str, str | None],
    types: Mapping[str, str],
) -> str:
    """``-1`` for a missing key, the key's position in the public list, or NULL (unlisted);
    the ``by`` columns are ``k0, k1, ...`` of the inner query (NaN already NULL)."""
    if not by:
        return "0"
    cols = [f"k{i}" for i in range(len(by))]
    missing = " OR ".join(f"{c} IS NULL" for c in cols)
    whens = []
    for pos, key in enumerate(keys):
        parts = key if isinstance(key, tuple) else (key,)
        tests = [
            _key_test(sql, c, v, kinds.get(b), types.get(b, ""))
            for c, v, b in zip(cols, parts, by, strict=True)
        ]
        whens.append(f"WHEN {' AND '.join(tests)} THEN {pos}")
    return f"CASE WHEN {missing} THEN -1 {' '.join(whens)} ELSE NULL END"


def _as_type(sql: Sql, key: Any, type_name: str) -> str:
    """The public key as the column's type: DuckDB's ``TRY_CAST`` (NULL when it does not fit:
    matches nothing); elsewhere ``CAST``, which can only fail on the key itself (public)."""
    cast = "TRY_CAST" if sql.dialect.name == "duckdb" else "CAST"
    return f"{cast}({sql.value(key)} AS {type_name})"


def _key_test(sql: Sql, col: str, key: Any, kind: str | None, type_name: str) -> str:
    lower = type_name.lower()
    if kind == "datetime":
        return _instant_test(sql, col, key, lower, type_name)
    number = isinstance(key, int | float | np.integer | np.floating) and not isinstance(key, bool)
    if kind == "integer" and number:
        value = float(key) if isinstance(key, float | np.floating) else int(key)
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            return _NEVER
        if sql.dialect.name != "duckdb":  # PostgreSQL widens the column's integers exactly
            return f"{col} = {sql.value(int(value))}"
        return f"{col} = {_as_type(sql, int(value), type_name)}"
    if kind == "float" and number and lower == "numeric" and math.isfinite(float(key)):
        exact = Decimal(int(key)) if isinstance(key, int | np.integer) else Decimal(float(key))
        return f"{col} = CAST({sql.value(exact)} AS numeric)"
    return f"{col} = {sql.value(key)}"


def _instant_test(sql: Sql, col: str, key: Any, lower: str, type_name: str) -> str:
    text = key_micros_text(key)
    if text is None:  # refused before for a typed column; finer than a microsecond
        return _NEVER
    if lower == "date":
        days = key_ticks(key, "D")
        if days is None:  # a time of day: no date equals it
            return _NEVER
        return f"{col} = {_as_type(sql, str(np.datetime64(days, 'D')), 'DATE')}"
    unit = _NAIVE.get(lower)
    if unit is not None:
        if key_ticks(key, unit) is None:  # finer than the column's precision
            return _NEVER
        return f"{col} = {_as_type(sql, text, type_name)}"
    return f"CAST({col} AS TIMESTAMP) = CAST({sql.value(text)} AS TIMESTAMP)"
