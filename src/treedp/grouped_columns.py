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

__all__ = [
    "Lazy",
    "by_columns",
    "check_name",
    "fetch",
    "read",
    "table_schema",
    "unit_column",
    "value_column",
]


def table_schema(data: Any) -> list[str] | None:
    """The column names of a table, read once from its engine's schema (no value is read);
    None when ``data`` is one column."""
    read_schema = pick_engine(data).schema
    names = None if read_schema is None else read_schema(data)
    return None if names is None else [str(c) for c in names]


def check_name(names: list[str], name: Any, param: str) -> str:
    """Check ``name`` against a table's column ``names``."""
    if not isinstance(name, str):
        raise InvalidTypeError(
            must(param, f"name a column of the table (a str). Got {type(name).__name__} instead.")
        )
    if name not in names:
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


def value_column(data: Any, column: Any, names: list[str] | None) -> Any:
    """The value column: named in a table (``names``: its schema), or ``data`` itself."""
    if names is not None:
        if column is None:
            raise InvalidParameterError("With a table, 'column' must name the value column.")
        return Lazy(check_name(names, column, "column"))
    if column is not None:
        raise InvalidParameterError(
            "The 'column' parameter names a column of a table; the data is a single column."
        )
    return data


def by_columns(by: Any, names: list[str] | None) -> tuple[list[str], list[Any]]:
    """The ``by`` names and columns (named in a table, or key arrays)."""
    if by is None:
        return [], []
    if names is not None:
        given = [by] if isinstance(by, str) else list(by) if isinstance(by, Sequence) else [by]
        if not given:
            raise InvalidParameterError(must("by", "name at least one column."))
        if len(set(map(str, given))) != len(given):
            raise InvalidParameterError("The 'by' parameter names a column twice.")
        return [check_name(names, n, "by") for n in given], [Lazy(n) for n in given]
    if isinstance(by, str):
        raise InvalidTypeError(
            "The 'by' parameter names a column, but the data is a single column: pass a "
            "table (DataFrame or mapping), or 'by' as a key array."
        )
    if isinstance(by, tuple):
        return [f"by_{i}" for i in range(len(by))], list(by)
    return ["by"], [by]


def unit_column(unit: Any, names: list[str] | None) -> tuple[str | None, Any]:
    """The person-id column's name and column (named in a table, or an id array)."""
    if unit is None:
        return None, None
    if names is not None:
        return check_name(names, unit, "privacy_unit"), Lazy(str(unit))
    if isinstance(unit, str):
        raise InvalidTypeError(
            "The 'privacy_unit' parameter names a column, but the data is a single column: "
            "pass a table, or the person ids as an array."
        )
    return "privacy_unit", unit
