"""Engines for databases: the counting runs inside DuckDB, SQLite or PostgreSQL.

:mod:`~treedp.engines.sql.rule` writes the bin rule of :mod:`treedp.engines.base` in SQL and
wraps the user's query; :mod:`~treedp.engines.sql.duck`, :mod:`~treedp.engines.sql.sqlite`
and :mod:`~treedp.engines.sql.postgres` are one engine row each (what differs: literals,
missing values, how the query is run and described). Input: a DuckDB relation, or a
:class:`SqlSource` (a connection and one SELECT). Only ``(groups ×) B`` counts come back
(docs/databases.md).
"""

from __future__ import annotations

from typing import Any

from treedp.engines.sql import duck, postgres, sqlite
from treedp.engines.sql.rule import described, guarded
from treedp.engines.sql.source import SqlSource

__all__ = ["DUCKDB", "POSTGRESQL", "SQLITE", "SqlSource", "sql_kinds", "sql_types"]

DUCKDB = duck.ENGINE
SQLITE = sqlite.ENGINE
POSTGRESQL = postgres.ENGINE


def sql_kinds(data: Any) -> dict[str, str | None] | None:
    """``{column: "integer" | "float" | "datetime" | None}`` of a DuckDB relation or a
    :class:`SqlSource`, from the query's description (no value read); None for other data.
    SQLite types values, not columns: every column is None (declare ``types=``)."""
    for engine, dialect in ((DUCKDB, duck.DIALECT), (SQLITE, sqlite.DIALECT),
                            (POSTGRESQL, postgres.DIALECT)):  # fmt: skip
        if engine.accepts(data):
            return {n: k if k != "any" else None for n, k in described(dialect, data)}
    return None


def sql_types(data: Any) -> dict[str, str] | None:
    """``{column: SQL type name}`` of a DuckDB relation or a :class:`SqlSource`, from the
    query's description (no value read); ``{}`` for SQLite (which types values, not columns);
    None for other data."""
    for engine, dialect in ((DUCKDB, duck.DIALECT), (SQLITE, sqlite.DIALECT),
                            (POSTGRESQL, postgres.DIALECT)):  # fmt: skip
        if engine.accepts(data):
            return _types(dialect, data)
    return None


def _types(dialect: Any, data: Any) -> dict[str, str]:
    types = dialect.types
    return {} if types is None else dict(guarded(dialect, lambda: types(data)))
