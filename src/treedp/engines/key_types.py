"""Which public keys a ``by`` column can hold, from its input's schema only: never its values.

A ``by`` column's key kind is ``"integer"`` or ``"float"`` (a number type), ``"text"`` (a string
type: numpy ``U``, pandas' string dtypes, Arrow / Parquet ``string``, polars ``String`` or
``Categorical``, a database's ``VARCHAR`` / ``TEXT``, Spark's ``string``), ``"datetime"`` (a
date or datetime type: numpy / pandas ``datetime64``, Arrow / Parquet ``date`` and
``timestamp``, polars ``Date`` / ``Datetime``, a database's ``DATE`` / ``TIMESTAMP``, Spark's
``date`` / ``timestamp``) or None: the schema does not say (a pandas ``object`` or categorical
column, booleans, a list, SQLite, which types values rather than columns, and CSV files, whose
``by`` columns the files engine reads as text and matches by ``str(key)``, or as instants when
every key names one, so any key can match there). A text key can equal no value of a number
column, a number key (``int``, ``float``, ``bool``) no value of a text column, and only a key
naming an instant
(:func:`treedp.engines.keys.key_instant`) a value of a datetime column, on every engine that
types the column: :func:`treedp.grouped_checks.check_key_types` refuses other keys before any
value is read or any budget charged.
"""

from __future__ import annotations

from typing import Any

from treedp.engines.schema import column_kind, schema_kinds
from treedp.engines.sql import sql_types

__all__ = ["key_kind"]

#: The SQL type names of text (DuckDB's, PostgreSQL's as :mod:`treedp.engines.sql.postgres`
#: names them).
_SQL_TEXT = ("VARCHAR", "TEXT", "STRING", "CHAR", "BPCHAR", "NAME")


def key_kind(data: Any, column: str | None = None) -> str | None:
    """``"integer"``, ``"float"``, ``"datetime"``, ``"text"`` or None for ``data[column]`` of a
    table, or ``data`` itself (a key array) when ``column`` is None: from the schema or dtype
    only."""
    try:
        kind = column_kind(data, column)
        if kind in ("integer", "float", "datetime"):
            return kind
        if kind is not None:
            return None
        return "text" if _is_text(data, column) else None
    except (OSError, ValueError, AttributeError, TypeError, ImportError):
        return None  # the engine reports an input it cannot read, as without this check


def _is_text(data: Any, column: str | None) -> bool:
    if column is None:
        return _dtype_text(getattr(data, "type", None) or getattr(data, "dtype", None))
    types = sql_types(data)
    if types is not None:
        return types.get(column, "").upper().startswith(_SQL_TEXT)
    if schema_kinds(data) is None:  # CSV (by columns read as text, matched by text), lists
        return False
    if _root(data) == "pyspark":
        field = next((f for f in data.schema.fields if f.name == column), None)
        return field is not None and field.dataType.typeName() in ("string", "varchar", "char")
    if hasattr(data, "collect_schema"):  # polars
        return _dtype_text(data.collect_schema().get(column))
    schema = _arrow_schema(data)
    if schema is not None:
        return column in schema.names and _dtype_text(schema.field(column).type)
    if hasattr(data, "dtypes") and hasattr(data, "columns"):  # pandas, Dask
        return column in data.columns and _dtype_text(data.dtypes[column])
    col = data.get(column) if hasattr(data, "get") else None  # a mapping of arrays
    return _dtype_text(getattr(col, "type", None) or getattr(col, "dtype", None))


def _arrow_schema(data: Any) -> Any:
    """The Arrow schema of an Arrow table / dataset or of Parquet / Arrow files; None else."""
    if hasattr(data, "schema") and hasattr(data.schema, "names"):
        return data.schema
    from treedp.engines.schema import file_schema

    return file_schema(data)


def _dtype_text(t: Any) -> bool:
    """Whether a numpy / pandas / Arrow / polars type is a string type."""
    if t is None:
        return False
    if _root(t) == "pyarrow":
        import pyarrow as pa

        if pa.types.is_dictionary(t):
            t = t.value_type
        return bool(pa.types.is_string(t) or pa.types.is_large_string(t)) or str(t) == (
            "string_view"
        )
    if _root(t) == "polars":
        import polars as pl

        return bool(t == pl.String or isinstance(t, pl.Categorical | pl.Enum))
    if getattr(t, "kind", None) in ("U", "S"):
        return True
    if _root(t) == "pandas":
        import pandas as pd

        if isinstance(t, pd.StringDtype):
            return True
        if isinstance(t, pd.ArrowDtype):
            return _dtype_text(t.pyarrow_dtype)
    return False


def _root(x: Any) -> str:
    return (type(x).__module__ or "").split(".")[0]
