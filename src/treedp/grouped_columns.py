"""The columns of a per-person or group-by release, named and checked before any value is read.

A table (a mapping of columns, a pandas / polars DataFrame, a pyarrow Table, or any input an
engine reads a schema of) has its ``column``, ``by`` and ``privacy_unit`` names checked against
its schema; a single column has its ``by`` keys and person ids given as arrays. Nothing here
reads a value until :func:`read` is called, after every public check.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treedp._validation import must
from treedp.engines.dispatch import pick_engine
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["Lazy", "by_columns", "fetch", "is_table", "read", "unit_column", "value_column"]


def is_table(data: Any) -> bool:
    """Whether ``data`` is a table (its engine reads a schema) rather than one column."""
    schema = pick_engine(data).schema
    return schema is not None and schema(data) is not None


def schema(data: Any) -> list[str]:
    """The column names of a table, from its engine (no value is read)."""
    read_schema = pick_engine(data).schema
    names = None if read_schema is None else read_schema(data)
    return [] if names is None else [str(c) for c in names]


def check_name(data: Any, name: Any, param: str) -> str:
    """Check ``name`` against the table's schema (no value is read)."""
    if not isinstance(name, str):
        raise InvalidTypeError(
            must(param, f"name a column of the table (a str). Got {type(name).__name__} instead.")
        )
    if name not in schema(data):
        raise InvalidParameterError(
            f"The '{param}' parameter names a column the table does not have: {name!r}."
        )
    return name


def fetch(data: Any, name: str) -> Any:
    """One column of an in-memory table, read by its engine."""
    read_column = pick_engine(data).read
    if read_column is None:  # pragma: no cover - files and clusters count in their engine
        raise InvalidTypeError("This input is counted by its engine, not read column by column.")
    return read_column(data, name)


class Lazy:
    """A table column named but not read yet."""

    def __init__(self, name: str) -> None:
        self.name = name


def read(data: Any, col: Any) -> Any:
    return fetch(data, col.name) if isinstance(col, Lazy) else col


def value_column(data: Any, column: Any, table: bool) -> Any:
    if table:
        if column is None:
            raise InvalidParameterError("With a table, 'column' must name the value column.")
        return Lazy(check_name(data, column, "column"))
    if column is not None:
        raise InvalidParameterError(
            "The 'column' parameter names a column of a table; the data is a single column."
        )
    return data


def by_columns(data: Any, by: Any, table: bool) -> tuple[list[str], list[Any]]:
    if by is None:
        return [], []
    if table:
        names = [by] if isinstance(by, str) else list(by) if isinstance(by, Sequence) else [by]
        if not names:
            raise InvalidParameterError(must("by", "name at least one column."))
        if len(set(map(str, names))) != len(names):
            raise InvalidParameterError("The 'by' parameter names a column twice.")
        return [check_name(data, n, "by") for n in names], [Lazy(n) for n in names]
    if isinstance(by, str):
        raise InvalidTypeError(
            "The 'by' parameter names a column, but the data is a single column: pass a "
            "table (DataFrame or mapping), or 'by' as a key array."
        )
    if isinstance(by, tuple):
        return [f"by_{i}" for i in range(len(by))], list(by)
    return ["by"], [by]


def unit_column(data: Any, unit: Any, table: bool) -> tuple[str | None, Any]:
    if unit is None:
        return None, None
    if table:
        return check_name(data, unit, "privacy_unit"), Lazy(str(unit))
    if isinstance(unit, str):
        raise InvalidTypeError(
            "The 'privacy_unit' parameter names a column, but the data is a single column: "
            "pass a table, or the person ids as an array."
        )
    return "privacy_unit", unit
