"""Date and datetime ``by`` columns in DuckDB and PostgreSQL are grouped by instants
(the key's instant in the column's type: ``engines/sql/by_columns.py``), as on every other engine
(``tests/engines/test_datetime_keys.py``); DuckDB used to cast the key's text to the column's
type, so a key at 06:30 matched a whole date."""

from __future__ import annotations

from typing import Any

import pytest

import treedp
from tests.engines.test_datetime_keys import (
    FRAME,
    X,
    _counts,
    _reference,
    _release,
    _same_as_reference,
)


def test_duckdb() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    frame = FRAME[["d", "x"]]  # noqa: F841 - read by DuckDB's replacement scan
    con.execute("CREATE TABLE t AS SELECT CAST(d AS DATE) AS d, d AS ts, x FROM frame")
    _same_as_reference(con.sql("SELECT d, x FROM t"), ("text", "date", "pandas"))
    _same_as_reference(con.sql("SELECT ts AS d, x FROM t"), ("datetime", "numpy"))
    got = _release(con.sql("SELECT d, x FROM t"), ["2024-01-01T06:30", "2024-01-02"])
    assert _counts(got)[1] == _reference()[1]  # the 06:30 key matches no date (was cast)


def test_postgresql(pg: Any) -> None:
    pg.execute("CREATE TABLE t (d date, ts timestamp, x float8)")
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO t VALUES (%s, %s, %s)",
            [(d.date(), d.to_pydatetime(), float(x)) for d, x in zip(FRAME["d"], X, strict=True)],
        )
    _same_as_reference(treedp.SqlSource(pg, "SELECT d, x FROM t"), ("text", "date"))
    _same_as_reference(treedp.SqlSource(pg, "SELECT ts AS d, x FROM t"), ("datetime",))
