"""Engines for databases: the counting runs inside DuckDB, SQLite or PostgreSQL.

:mod:`~treedp.engines.sql.rule` writes the bin rule of :mod:`treedp.engines.base` in SQL and
wraps the user's query; :mod:`~treedp.engines.sql.duck`, :mod:`~treedp.engines.sql.sqlite`
and :mod:`~treedp.engines.sql.postgres` are one engine row each (what differs: literals,
missing values, how the query is run and described). Input: a DuckDB relation, or a
:class:`SqlSource` (a connection and one SELECT). Only ``(groups ×) B`` counts come back
(docs/databases.md).
"""

from __future__ import annotations

from treedp.engines.sql import duck, postgres, sqlite
from treedp.engines.sql.source import SqlSource

__all__ = ["DUCKDB", "POSTGRESQL", "SQLITE", "SqlSource"]

DUCKDB = duck.ENGINE
SQLITE = sqlite.ENGINE
POSTGRESQL = postgres.ENGINE
