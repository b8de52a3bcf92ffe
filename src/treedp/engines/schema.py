"""The public type of a column from its input's schema: never from its values.

A kind is ``"integer"``, ``"float"``, ``"datetime"`` or None (not numeric: text, booleans,
or no schema to say). It is read from a pandas / polars / Dask DataFrame's dtypes, an Arrow or
Parquet schema, a database relation's types (:func:`treedp.engines.sql.sql_kinds`), a Spark
DataFrame's schema, or the numpy dtypes of a mapping's arrays. A CSV file has no schema: its
columns are typed by the caller's declaration (``types=`` of :func:`treedp.profile`,
``PrivateBounds(datetimes=True)``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from treedp._validation import must
from treedp.engines.sql import sql_kinds
from treedp.exceptions import InvalidTypeError, MissingDependencyError

__all__ = ["column_kind", "file_schema", "integer_typed", "schema_kinds"]


def schema_kinds(table: Any) -> dict[str, str | None] | None:
    """Every column of a table with its kind; None when the table has no schema (CSV).

    Raises
    ------
    InvalidTypeError
        If ``table`` is not a table treedp reads.
    """
    if type(table).__name__ == "FileSource":  # a path with its CSV options
        table = table.path
    if isinstance(table, str | os.PathLike) or _paths(table):
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
    if _root(table) == "pyspark" and hasattr(table, "schema"):
        return {f.name: _spark_kind(f.dataType) for f in table.schema.fields}
    if hasattr(table, "collect_schema"):  # polars (whose schema also has names)
        return {str(n): _polars_kind(t) for n, t in table.collect_schema().items()}
    if hasattr(table, "schema") and hasattr(table.schema, "names"):  # pyarrow Table / Dataset
        schema = table.schema
        return {n: _arrow_kind(schema.field(n).type) for n in schema.names}
    if hasattr(table, "dtypes") and hasattr(table, "columns"):  # pandas, Dask
        return {str(n): _numpy_kind(t) for n, t in table.dtypes.items()}
    raise InvalidTypeError(
        must(
            "table",
            "be a pandas / polars DataFrame, a pyarrow Table, a mapping of column name to "
            f"array, or a Parquet / CSV path. Got {type(table).__name__} instead.",
        )
    )


def column_kind(values: Any, column: str | None = None) -> str | None:
    """The kind of one column: ``values[column]`` of a table, or ``values`` itself.

    None when the type says nothing (a CSV file, a list or tuple, an array of Python objects,
    an input treedp cannot type): the caller then treats the column as numbers unless told
    otherwise (``PrivateBounds(datetimes=True)``). Nothing is inferred from values: one
    record's type would then decide the kind of the release (privacy review of datetime
    bounds, F1); a value of another type than declared is refused, and lies outside the
    datasets the guarantee is stated for.
    """
    if column is not None:
        try:
            kinds = schema_kinds(values)
        except (InvalidTypeError, OSError, ValueError, AttributeError, TypeError):
            return None  # the engine reports an input it cannot read
        return None if kinds is None else kinds.get(column)
    if isinstance(values, list | tuple):
        return None
    if _root(values) == "pyarrow" and hasattr(values, "type"):
        return _arrow_kind(values.type)
    dtype = getattr(values, "dtype", None)
    if dtype is None:
        return None
    if _root(values) == "polars":
        return _polars_kind(dtype)
    return _numpy_kind(dtype)


def integer_typed(values: Any, column: str | None = None) -> bool:
    """Whether a column's declared type is an integer type: the kind :func:`column_kind`
    reads (the rule :func:`treedp.profile` types its columns by), and for a database query
    of one column (``column`` None) that column's type.

    Signed and unsigned integers of every width, nullable ones included (pandas ``Int64``,
    Arrow and polars integers with nulls, SQL ``INTEGER`` / ``BIGINT``). Booleans are not
    integers here (the value methods refuse them: convert them to 0/1 integers to declare
    them); lists, object arrays, CSV files and SQLite queries have no declared type, so they
    are not. Nothing is read from the values: a float column of whole numbers is a float
    column.
    """
    kind = column_kind(values, column)
    if kind is None and column is None:  # one column of a database query or DuckDB relation
        kinds = sql_kinds(values)
        if kinds is not None and len(kinds) == 1:
            kind = next(iter(kinds.values()))
    return kind == "integer"


def _paths(x: Any) -> bool:
    """A list or tuple of file paths (several files of one format)."""
    return (
        isinstance(x, list | tuple) and bool(x) and all(isinstance(p, str | os.PathLike) for p in x)
    )


def _root(x: Any) -> str:
    return (type(x).__module__ or "").split(".")[0]


def file_schema(table: Any) -> Any:
    """The Arrow schema of the first of Parquet / Arrow files (a path, paths or a
    ``FileSource``); None for CSV / TSV files and for anything else."""
    if type(table).__name__ == "FileSource":
        table = table.path
    if not (isinstance(table, str | os.PathLike) or _paths(table)):
        return None
    from treedp.sources import check_files

    return _files_schema(*check_files(table))


def _files_schema(files: list[str], file_format: str) -> Any:
    """The Arrow schema of the files (Parquet, Arrow): the first file's, each column in the
    type every file's converts to exactly where one exists
    (:func:`treedp.engines.files.column_types.unified_schema`); None for CSV / TSV."""
    if file_format == "csv":
        return None
    try:
        import pyarrow.dataset as ds
    except ImportError:  # as the files engine says it (a raw ModuleNotFoundError was raised)
        raise MissingDependencyError(
            f"Reading {'Parquet' if file_format == 'parquet' else 'Arrow'} files needs pyarrow: "
            "install treedp[parquet] (pip install pyarrow)."
        ) from None

    from treedp.engines.files.column_types import unified_schema

    fmt = "parquet" if file_format == "parquet" else "ipc"
    return unified_schema(ds.dataset(files, format=fmt))


def _file_kinds(files: list[str], file_format: str) -> dict[str, str | None] | None:
    """The kinds in the schema of the first file (Parquet, Arrow); None for CSV / TSV."""
    schema = _files_schema(files, file_format)
    if schema is None:
        return None
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


def _spark_kind(t: Any) -> str | None:
    name = t.typeName()
    if name in ("byte", "short", "integer", "long"):
        return "integer"
    if name in ("float", "double", "decimal"):
        return "float"
    if name in ("timestamp", "timestamp_ntz", "date"):
        return "datetime"
    return None
