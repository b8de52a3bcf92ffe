"""File inputs as the public functions take them: checked before any value is read, and
public keys typed like the columns they name.

:class:`treedp.FileSource` (a path with its CSV options) is what :func:`treedp.release_cdf`
and :func:`treedp.release_grouped` stream; :func:`check_files` says, before any budget is
spent, whether a path names data files at all; :func:`convert_keys` turns keys written as
text (a keys file) into values of the ``by`` columns' types, from the schema only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from treedp.exceptions import InvalidParameterError

__all__ = ["check_files", "convert_keys"]


def check_files(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[str], str]:
    """Check that ``path`` names data files, before anything is read from them.

    Parameters
    ----------
    path : str, path-like or iterable of them
        A CSV (optionally gzipped), TSV, Parquet or Arrow / Feather file, a directory, a glob
        pattern, several files of one format, or ``"-"`` (CSV on standard input), as
        :class:`treedp.FileSource` and :func:`treedp.read_column` take it.

    Returns
    -------
    files : list of str
        The files ``path`` names (``["-"]`` for standard input).
    file_format : str
        Their common format: ``"csv"``, ``"parquet"`` or ``"arrow"``.

    Raises
    ------
    InvalidParameterError
        If a path does not exist, a glob or directory holds no data file, or the formats
        are mixed.
    InvalidTypeError
        If ``path`` is not a str or path (or an iterable of them).
    """
    from treedp.engines.files import resolve_paths

    return resolve_paths(path)


def convert_keys(keys: Sequence[Any], data: Any, by: Sequence[str]) -> list[Any]:
    """Public keys written as text, converted to the types of the ``by`` columns of ``data``.

    For Parquet and Arrow inputs (and pyarrow datasets) each field of a key becomes a value of
    its column's type (int, float or bool), read from the schema only: no value of the data is
    read. CSV columns are text, so CSV inputs keep text keys. A column missing from the input
    is left to the release to report.

    Parameters
    ----------
    keys : sequence
        One text per key with one ``by`` column; a tuple of texts per key with several.
    data : FileSource, path, pyarrow dataset, SqlSource or DuckDB relation
        The input of :func:`treedp.release_grouped` (a database query's types are read from
        its description; SQLite types values, so its keys stay text).
    by : sequence of str
        The group-by columns.

    Returns
    -------
    list
        The keys, typed (tuples with several ``by`` columns).

    Raises
    ------
    InvalidParameterError
        If a key is not a value of its column's type, or the input is not readable.
    MissingDependencyError
        If pyarrow is not installed (grouped releases of files need it).
    """
    from treedp.engines.files.grouped import file_columns, file_schema
    from treedp.engines.sql import sql_types

    if sql_types(data) is not None:  # a database query: its description, no value read
        return _database_keys(keys, by, data)
    schema = file_schema(data)
    if schema is None:
        return list(keys)
    names = file_columns(data)
    import pyarrow as pa

    def convert(text: Any, name: str) -> Any:
        if name not in names:
            return text  # the release reports the unknown column
        t = schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        try:
            if pa.types.is_integer(t):
                return int(text)
            if pa.types.is_floating(t):
                return float(text)
            if pa.types.is_boolean(t):
                return {"true": True, "false": False}[str(text).strip().lower()]
        except (ValueError, KeyError):
            raise _unreadable(name, t) from None
        return text

    return _each_key(keys, by, convert)


def _database_keys(keys: Sequence[Any], by: Sequence[str], data: Any) -> list[Any]:
    """Text keys as values of their ``by`` columns' kinds in the query's description (DuckDB,
    PostgreSQL; SQLite types values, so its keys stay text and compare by the column's
    affinity): integers, floats (``DECIMAL`` and ``numeric`` too) and booleans."""
    from treedp.engines.sql import sql_kinds, sql_types
    from treedp.engines.sql.by_columns import base_type

    kinds, types = sql_kinds(data) or {}, sql_types(data) or {}

    def convert(text: Any, name: str) -> Any:
        kind = kinds.get(name)
        boolean = base_type(types.get(name, "")) in ("boolean", "bool")
        if not isinstance(text, str) or not (kind in ("integer", "float") or boolean):
            return text
        try:
            if kind == "integer":
                return int(text)
            if kind == "float":
                return float(text)
            return {"true": True, "false": False}[text.strip().lower()]
        except (ValueError, KeyError):
            raise _unreadable(name, base_type(types.get(name, "")).upper()) from None

    return _each_key(keys, by, convert)


def _unreadable(name: str, type_name: Any) -> InvalidParameterError:
    return InvalidParameterError(
        f"A key in 'keys' cannot be read as the type of the column '{name}' ({type_name}); "
        "give keys of that type."
    )


def _each_key(keys: Sequence[Any], by: Sequence[str], convert: Any) -> list[Any]:
    """``convert(text, column)`` applied to every field of every key."""
    if len(by) == 1:
        return [convert(k, by[0]) for k in keys]
    return [tuple(convert(v, n) for v, n in zip(k, by, strict=False)) for k in keys]
