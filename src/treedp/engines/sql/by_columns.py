"""The ``by`` columns of a database query: which public key a row's key values equal, in SQL.

Every comparison leaves the column as the database holds it and brings the public key to the
column's type in Python, or matches nothing, so that no row is converted and no row can fail
the query (two independent reviews, session 27: a DuckDB ``JSON``, ``UHUGEINT``, ``DECIMAL``,
``UUID`` or list column compared with a key converted every row, a ``DATE`` or
``TIMESTAMPTZ`` column was cast to ``TIMESTAMP``, a ``numeric`` one to a double; one far row
failed the query where its neighbour without it was released). A key equals a value as in
memory:

* an integer column: an integral number key (DuckDB ``TRY_CAST`` to the column's type, NULL
  when it cannot hold it; PostgreSQL widens its integers exactly); a key with a fraction
  matches nothing;
* a float column (``FLOAT``, ``DOUBLE``, ``float4``, ``float8``): the key as a double (a key
  no double holds matches nothing); DuckDB ``DECIMAL``: the column as a double (a decimal of at
  most 38 digits always converts), as DuckDB compared it; PostgreSQL ``numeric``: an integer
  key exactly, a float key to the numerics that round to it (between the exact midpoints to its
  neighbours, half to even: what ``numeric = float8`` compared, without converting a row);
* a boolean column: ``True`` / 1 and ``False`` / 0; anything else matches nothing;
* a date column: a key at midnight as a ``DATE``, any other instant matches nothing;
* a naive timestamp column of any precision: the key's instant when that precision holds it
  (a key at 06:30:00.5 matches no ``TIMESTAMP_S``); a zone-aware column
  (``TIMESTAMPTZ``, ``timestamptz``): the key as a UTC instant (the stored timeline, as every
  other engine reads an aware column), whatever the session's zone;
* a text column: the key's text.

Any other type (DuckDB ``JSON``, ``BLOB``, ``UUID``, ``ENUM``, ``TIME``, lists, structs, maps;
PostgreSQL types outside those) is refused from the query's description before anything is
read or charged: cast it in the query. A key finer than a microsecond, or naming no instant,
matches nothing (:func:`~treedp.engines.keys.key_micros_text`); so does a PostgreSQL date or
timestamp key before year 1 (its ISO text is not PostgreSQL's ``BC`` form).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.keys import key_micros_text, key_ticks
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.engines.sql.rule import Sql

__all__ = ["base_type", "check_by_types", "check_unit_type", "key_position"]

#: Naive timestamp types and the unit a key must fit (lower case, both databases' names).
_NAIVE = {"timestamp_s": "s", "timestamp_ms": "ms", "timestamp": "us", "timestamp_ns": "us"}
_AWARE = ("timestamp with time zone", "timestamptz")
_TEXT = ("varchar", "text", "bpchar", "name")
_BOOLEAN = ("boolean", "bool")
_NEVER = "1 = 0"
#: The least magnitude a double rounds to infinity: the largest double's upper midpoint.
ROUNDS_TO_INFINITY = 2**1024 - 2**970
#: The SQL types whose ``by`` columns are compared (lower case, a DECIMAL by its name).
_KEYED = {
    "duckdb": {
        "tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint",
        "uinteger", "ubigint", "uhugeint", "float", "double", "decimal", "date", "timestamp",
        "timestamp_s", "timestamp_ms", "timestamp_ns", "timestamp with time zone", "varchar",
        "boolean",
    },
    "postgresql": {
        "int2", "int4", "int8", "oid", "float4", "float8", "numeric", "date", "timestamp",
        "timestamptz", "text", "varchar", "bpchar", "name", "bool",
    },
}  # fmt: skip


def base_type(type_name: str) -> str:
    """``decimal`` for ``DECIMAL(4,1)``, ``numeric`` for ``numeric (PostgreSQL < 14)``; a list
    or array (``DECIMAL(4,1)[]``) is ``list``. The name alone: an ``ENUM('a', 'b')``'s labels
    come from the data (a pandas Categorical's categories), so no message shows them."""
    if "[" in type_name:
        return "list"
    return type_name.split(" (")[0].split("(")[0].strip().lower()


def check_by_types(name: str, by: Sequence[str], types: Mapping[str, str]) -> None:
    """Refuse a ``by`` column whose SQL type keys are not compared with (DuckDB, PostgreSQL;
    SQLite types values, and compares any key without converting a row). From the query's
    description only."""
    keyed = _KEYED.get(name)
    if keyed is None:
        return
    for b in by:
        type_name = types.get(b, "")
        base = base_type(type_name)
        if base not in keyed:
            raise InvalidTypeError(
                f"The 'by' column '{b}' has the SQL type {base.upper()}, which keys are not "
                "compared with; group by a column of a number, text, boolean, date or "
                "timestamp type (cast it in the query)."
            )


def check_unit_type(name: str, unit: str, types: Mapping[str, str]) -> None:
    """Refuse a DuckDB person-id column of ``TIMESTAMP_S`` / ``TIMESTAMP_MS``: its keyed hash
    reads the id as text, which DuckDB cannot write for an id past the microseconds (the query
    failed for that one row and invalidated the database; a review, session 27). Saturating
    the id instead would merge persons and break the contribution bound."""
    if name == "duckdb" and base_type(types.get(unit, "")) in ("timestamp_s", "timestamp_ms"):
        raise InvalidTypeError(
            f"The privacy unit column '{unit}' has the SQL type {base_type(types[unit]).upper()}, "
            "which cannot be read as an id exactly; cast it in the query (to TIMESTAMP or BIGINT)."
        )


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


def _number(key: Any) -> bool:
    """A number key (a bool is 0 or 1, as numpy compares it with a number column)."""
    return isinstance(key, int | float | np.integer | np.floating)


def _key_test(sql: Sql, col: str, key: Any, kind: str | None, type_name: str) -> str:
    if sql.dialect.name not in _KEYED:  # SQLite: values typed one by one, nothing converted
        return f"{col} = {sql.value(key)}"
    base = base_type(type_name)
    if kind == "datetime":
        return _instant_test(sql, col, key, base, type_name)
    if base in _BOOLEAN:
        if _number(key) and key in (0, 1):  # True, 1 and 1.0 alike, as numpy
            return f"{col} = {'TRUE' if key else 'FALSE'}"
        return _NEVER
    if base in _TEXT:  # byte by byte, whatever the column's or the session's collation
        collate = 'COLLATE "C"' if sql.dialect.name == "postgresql" else "COLLATE C"
        return f"{col} {collate} = {sql.value(key)}" if isinstance(key, str) else _NEVER
    if not _number(key):
        return _NEVER
    if kind == "integer":
        return _integer_test(sql, col, key, type_name)
    if base == "numeric":
        return _numeric_test(sql, col, key)
    value = _double(key)
    if value is None:
        return _NEVER
    double = "CAST({} AS DOUBLE)" if sql.dialect.name == "duckdb" else "CAST({} AS float8)"
    literal = double.format(sql.value(value))
    if base == "decimal":  # at most 38 digits: always a double
        return f"CAST({col} AS DOUBLE) = {literal}"
    return f"{col} = {literal}"


def _double(key: Any) -> float | None:
    """The key as a double, None when none holds it (an int past the double range)."""
    try:
        return float(key)
    except OverflowError:
        return None


#: DuckDB's integer types and their ranges, to bound a range of integers inside the type.
_INT_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1), "smallint": (-(2**15), 2**15 - 1),
    "integer": (-(2**31), 2**31 - 1), "bigint": (-(2**63), 2**63 - 1),
    "hugeint": (-(2**127), 2**127 - 1), "utinyint": (0, 2**8 - 1), "usmallint": (0, 2**16 - 1),
    "uinteger": (0, 2**32 - 1), "ubigint": (0, 2**64 - 1), "uhugeint": (0, 2**128 - 1),
    "oid": (0, 2**32 - 1),  # PostgreSQL's: -1 read as 4294967295, 2^32 refused
}  # fmt: skip


def _integer_test(sql: Sql, col: str, key: Any, type_name: str) -> str:
    """An int key exactly; a float key as the integers that round to it, as numpy compares an
    integer column with a float (beyond 2^53 several do: ``2**53 + 1`` rounds to ``2**53``);
    a float with a fraction matches nothing."""
    if not isinstance(key, float | np.floating):
        whole = int(key)
        type_low, type_high = _INT_RANGES.get(base_type(type_name), (whole, whole))
        if not type_low <= whole <= type_high:
            return _NEVER
        if sql.dialect.name != "duckdb":  # PostgreSQL widens the column's integers exactly
            return f"{col} = {sql.value(whole)}"
        return f"{col} = {_as_type(sql, whole, type_name)}"
    value = float(key)
    if not (math.isfinite(value) and value.is_integer()):
        return _NEVER
    low, high, ends = _rounding_range(value)
    first = math.ceil(low) if ends else math.floor(low) + 1
    last = math.floor(high) if ends else math.ceil(high) - 1
    type_low, type_high = _INT_RANGES.get(base_type(type_name), (first, last))
    first, last = max(first, type_low), min(last, type_high)
    if first > last:
        return _NEVER
    if sql.dialect.name == "duckdb":
        low_sql, high_sql = _as_type(sql, first, type_name), _as_type(sql, last, type_name)
    else:
        low_sql, high_sql = sql.value(first), sql.value(last)
    return f"({col} >= {low_sql} AND {col} <= {high_sql})"


def _numeric_test(sql: Sql, col: str, key: Any) -> str:
    """A PostgreSQL ``numeric`` against a number key: an integer exactly, a float as the
    numerics that round to it (half to even), ±inf as ``Infinity``; NaN matches nothing."""
    if isinstance(key, int | np.integer):
        return f"{col} = CAST({sql.value(Decimal(int(key)))} AS numeric)"
    value = float(key)
    if math.isnan(value):
        return _NEVER
    if math.isinf(value):
        return f"{col} = CAST({sql.value('Infinity' if value > 0 else '-Infinity')} AS numeric)"
    low, high, ends = _rounding_range(value)
    below, above = (">=", "<=") if ends else (">", "<")
    lo = f"CAST({sql.value(_decimal(low))} AS numeric)"
    hi = f"CAST({sql.value(_decimal(high))} AS numeric)"
    return f"({col} {below} {lo} AND {col} {above} {hi})"


def _rounding_range(value: float) -> tuple[Fraction, Fraction, bool]:
    """The exact midpoints between ``value`` and its neighbouring doubles (the largest
    double's upper one is :data:`ROUNDS_TO_INFINITY`), and whether the midpoints themselves
    round to ``value`` (half to even: its last mantissa bit is 0)."""
    here = Fraction(value)
    down = float(np.nextafter(value, -math.inf))
    up = float(np.nextafter(value, math.inf))
    top = Fraction(ROUNDS_TO_INFINITY)
    low = (here + Fraction(down)) / 2 if math.isfinite(down) else -top
    high = (here + Fraction(up)) / 2 if math.isfinite(up) else top
    return low, high, struct.unpack("<q", struct.pack("<d", value))[0] % 2 == 0


def _decimal(x: Fraction) -> Decimal:
    """An exact decimal of a dyadic fraction (its denominator a power of two)."""
    k = x.denominator.bit_length() - 1
    assert x.denominator == 1 << k
    return Decimal(f"{x.numerator * 5**k}E-{k}")  # from text: exact, whatever the context


def _instant_test(sql: Sql, col: str, key: Any, base: str, type_name: str) -> str:
    text = key_micros_text(key)
    if text is None:  # refused before for a typed column; finer than a microsecond
        return _NEVER
    pg = sql.dialect.name == "postgresql"
    if pg and text.startswith(("-", "0000")):  # no BC form: before year 1 matches nothing
        return _NEVER
    if base == "date":
        days = key_ticks(key, "D")
        if days is None:  # a time of day: no date equals it
            return _NEVER
        return f"{col} = {_as_type(sql, str(np.datetime64(days, 'D')), 'DATE')}"
    unit = _NAIVE.get(base)
    if unit is not None:
        if key_ticks(key, unit) is None:  # finer than the column's precision
            return _NEVER
        return f"{col} = {_as_type(sql, text, type_name)}"
    if base in _AWARE:
        return f"{col} = {_as_type(sql, text + '+00:00', type_name)}"
    return _NEVER
