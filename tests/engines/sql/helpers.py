"""Load the same rows into each database and hand back its input for treedp."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import treedp

KINDS = ("duckdb", "duckdb-relation", "sqlite", "postgresql")

#: column name -> SQL type per database ("double", "bigint", "text")
_TYPES = {
    "duckdb": {"double": "DOUBLE", "bigint": "BIGINT", "text": "VARCHAR"},
    "sqlite": {"double": "REAL", "bigint": "INTEGER", "text": "TEXT"},
    "postgresql": {"double": "float8", "bigint": "int8", "text": "text"},
}

Loader = Callable[[Sequence[tuple[str, str]], Sequence[tuple[Any, ...]]], Any]


def _insert_duckdb(con: Any, types: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
    """DuckDB's ``executemany`` takes about 0.3 ms a row (tens of seconds for the larger test
    tables): rows go in 1,000 to a statement, each parameter cast to its column's type as a
    one-row insert casts it (no type unified across the rows of a ``VALUES`` list)."""
    row = "(" + ", ".join(f"CAST(? AS {t})" for t in types) + ")"
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        con.execute(
            "INSERT INTO t VALUES " + ", ".join([row] * len(chunk)),
            [cell for r in chunk for cell in r],
        )


def loader(kind: str, request: pytest.FixtureRequest) -> Loader:
    """``load(columns, rows) -> data``: a table ``t`` with those rows, and the input that
    selects all of it (a relation or a :class:`treedp.SqlSource`)."""
    if kind.startswith("duckdb"):
        duckdb = pytest.importorskip("duckdb")
        con: Any = duckdb.connect()
        db = "duckdb"
    elif kind == "sqlite":
        con, db = sqlite3.connect(":memory:"), "sqlite"
    else:
        con, db = request.getfixturevalue("pg"), "postgresql"
    request.addfinalizer(con.close)

    def load(columns: Sequence[tuple[str, str]], rows: Sequence[tuple[Any, ...]]) -> Any:
        cols = ", ".join(f'"{n.replace(chr(34), 2 * chr(34))}" {_TYPES[db][t]}' for n, t in columns)
        con.execute("DROP TABLE IF EXISTS t")
        con.execute(f"CREATE TABLE t ({cols})")
        mark = "%s" if db == "postgresql" else "?"
        insert = f"INSERT INTO t VALUES ({', '.join(mark for _ in columns)})"
        if db == "postgresql":
            with con.cursor() as cur:
                cur.executemany(insert, rows)
        elif db == "duckdb":
            _insert_duckdb(con, [_TYPES[db][t] for _, t in columns], rows)
        else:
            con.executemany(insert, rows)
        if kind == "duckdb-relation":
            return con.sql("SELECT * FROM t")
        return treedp.SqlSource(con, "SELECT * FROM t")

    return load
