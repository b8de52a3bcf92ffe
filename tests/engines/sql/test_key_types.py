"""Keys of a type the database column's SQL type rules out are refused before any charge
(:mod:`treedp.engines.key_types`): DuckDB and PostgreSQL type their columns; SQLite types
values, so its columns are not checked. (DuckDB compared ``k = '9'`` by casting the text, so
it matched where memory and Parquet released noise: one rule now, from the schema.)"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import treedp
from tests.engines.test_key_types import ROWS, _refused, _release
from treedp.engines.key_types import key_kind

_ROWS = list(zip(*(v.tolist() for v in ROWS.values()), strict=True))


def test_duckdb() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (num BIGINT, word VARCHAR, x DOUBLE)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", _ROWS)
    relation = con.sql("SELECT * FROM t")
    _refused(relation, "num", ["9"], "integer")
    _refused(relation, "word", [1], "text")
    _refused(treedp.SqlSource(con, "SELECT * FROM t"), "num", ["9"], "integer")
    assert set(_release(relation, "num", [9, 10]).keys) == {9, 10}


def test_sqlite_columns_are_not_typed() -> None:
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (num INTEGER, word TEXT, x REAL)")
    lite.executemany("INSERT INTO t VALUES (?, ?, ?)", _ROWS)
    source = treedp.SqlSource(lite, "SELECT * FROM t")
    assert key_kind(source, "num") is None and key_kind(source, "word") is None
    assert set(_release(source, "num", [9, 10]).keys) == {9, 10}


def test_postgresql(pg: Any) -> None:
    pg.execute("CREATE TABLE t (num bigint, word text, v varchar(5), x float8)")
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s, %s, %s)", [(n, w, w, x) for n, w, x in _ROWS]
        )
    source = treedp.SqlSource(pg, "SELECT * FROM t")
    _refused(source, "num", ["9"], "integer")
    _refused(source, "word", [1], "text")
    _refused(source, "v", [1], "text")
