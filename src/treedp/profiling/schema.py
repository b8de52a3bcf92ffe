"""The public type of every column of a table, from its schema or the user's declaration.

A kind is ``"integer"`` (one bin per integer), ``"float"`` (equal-width bins), ``"datetime"``,
or None (not profiled: text, booleans, anything else). It is read from a pandas / polars
DataFrame's dtypes, an Arrow or Parquet schema, or the numpy dtypes of a mapping's arrays;
``types=`` overrides it. No value is read. A CSV file has no schema: its columns are typed by
``types=`` only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from treedp._validation import must
from treedp.engines.sql import sql_kinds
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["KINDS", "column_kinds"]

#: The declared types a column may have.
KINDS = ("integer", "float", "datetime")


def column_kinds(table: Any, types: Mapping[str, str] | None) -> dict[str, str | None]:
    """Every column of ``table`` with its kind (schema first, then ``types=``)."""
    declared = _check_types(types)
    kinds = _schema_kinds(table)
    if kinds is None:  # no schema: the declaration is all there is
        if not declared:
            raise InvalidParameterError(
                "This table has no schema (a CSV file, or columns without a dtype): declare the "
                "columns to profile with types={'name': 'integer' | 'float' | 'datetime'}."
            )
        return dict(declared)
    for name in declared:
        if name not in kinds:
            raise InvalidParameterError(
                f"The 'types' parameter names a column the table does not have: {name!r}."
            )
    kinds.update(declared)
    return kinds


def _check_types(types: Any) -> dict[str, str]:
    if types is None:
        return {}
    if not isinstance(types, Mapping):
        raise InvalidTypeError(
            must("types", f"be a mapping of column name to a type. Got {type(types).__name__}.")
        )
    for name, kind in types.items():
        if not isinstance(name, str) or kind not in KINDS:
            raise InvalidParameterError(
                must("types", "map column names to 'integer', 'float' or 'datetime'.")
            )
    return dict(types)


def _schema_kinds(table: Any) -> dict[str, str | None] | None:
    """The kinds from the table's schema; None when it has none."""
    if isinstance(table, str | os.PathLike):
        from treedp.sources import check_files

        return _file_kinds(*check_files(table))
    if (sql := sql_kinds(table)) is not None:  # a DuckDB relation or a treedp.SqlSource
        return sql
    if isinstance(table, Mapping):
        out: dict[str, str | None] = {}
        for name, col in table.items():
            dtype = getattr(col, "dtype", None)
            if dtype is None:
                return None  # a list: its type would come from its values
            out[str(name)] = _numpy_kind(dtype)
        return out
    if hasattr(table, "schema") and hasattr(table.schema, "names"):  # pyarrow Table / Dataset
        schema = table.schema
        return {n: _arrow_kind(schema.field(n).type) for n in schema.names}
    if hasattr(table, "collect_schema"):  # polars
        return {str(n): _polars_kind(t) for n, t in table.collect_schema().items()}
    if hasattr(table, "dtypes") and hasattr(table, "columns"):  # pandas
        return {str(n): _numpy_kind(t) for n, t in table.dtypes.items()}
    raise InvalidTypeError(
        must(
            "table",
            "be a pandas / polars DataFrame, a pyarrow Table, a mapping of column name to "
            f"array, or a Parquet / CSV path. Got {type(table).__name__} instead.",
        )
    )


def _file_kinds(files: list[str], file_format: str) -> dict[str, str | None] | None:
    """The kinds in the schema of the first file (Parquet, Arrow); None for CSV / TSV."""
    if file_format == "csv":
        return None
    import pyarrow.dataset as ds

    fmt = "parquet" if file_format == "parquet" else "ipc"
    schema = ds.dataset(files[0], format=fmt).schema
    return {n: _arrow_kind(schema.field(n).type) for n in schema.names}


def _numpy_kind(dtype: Any) -> str | None:
    kind = getattr(dtype, "kind", None)
    if kind in ("i", "u"):
        return "integer"
    if kind == "f":
        return "float"
    if kind == "M":
        return "datetime"
    return None


def _arrow_kind(t: Any) -> str | None:
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "float"
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "datetime"
    return None


def _polars_kind(t: Any) -> str | None:
    if t.is_integer():
        return "integer"
    if t.is_float() or t.is_decimal():
        return "float"
    if t.is_temporal() and str(t).startswith(("Datetime", "Date")):
        return "datetime"
    return None
