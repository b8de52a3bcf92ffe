"""The ``sql=`` spelling of every front door: a connection and the query that selects the
rows, the same release as a :class:`treedp.SqlSource`; refusals before anything is read."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

import treedp
from tests.engines.sql.helpers import loader
from treedp.exceptions import InvalidParameterError, InvalidTypeError

DBS = ("duckdb", "sqlite", "postgresql")
ROWS = [(0.1 * i, "ab"[i % 2], i % 5) for i in range(40)]
COLUMNS = [("v", "double"), ("k", "text"), ("p", "bigint")]
SQL = "SELECT v, k, p FROM t"


@pytest.fixture(params=DBS)
def con(request: pytest.FixtureRequest) -> Any:
    return loader(request.param, request)(COLUMNS, ROWS).connection


def _seed() -> treedp.InsecureSeededSource:
    return treedp.InsecureSeededSource(11)


def test_release_cdf_sql_is_the_sql_source(con: Any) -> None:
    kw: dict[str, Any] = {"column": "v", "bounds": (0, 4), "bins": 8, "epsilon": 1.0}
    a = treedp.release_cdf(con, sql=SQL, rng=_seed(), **kw)
    b = treedp.release_cdf(treedp.SqlSource(con, SQL), rng=_seed(), **kw)
    c = treedp.release_cdf(con, SQL, rng=_seed(), **kw)  # positional, right after values
    assert a.cdf([1.0, 2.0]).tolist() == b.cdf([1.0, 2.0]).tolist() == c.cdf([1.0, 2.0]).tolist()


def test_grouped_person_quantiles_median_and_profile(con: Any) -> None:
    g = treedp.release_grouped(
        con, sql=SQL, column="v", by="k", keys=["a", "b"], privacy_unit="p",
        max_contributions=2, bounds=(0, 4), bins=8, epsilon=1.0, rng=_seed(),
    )  # fmt: skip
    assert sorted(g) == ["a", "b"]
    r = treedp.release_cdf(
        con, sql=SQL, column="v", bounds=(0, 4), bins=8, epsilon=1.0, rng=_seed(),
        privacy_unit=treedp.PrivacyUnit("p", max_contributions=3),
    )  # fmt: skip
    assert r.unit.bounds.max_contributions == 3
    q = treedp.quantiles(con, [0.5], sql=SQL, column="v", bounds=(0, 4), epsilon=1.0, rng=_seed())
    assert 0.0 <= float(q.value[0]) <= 4.0
    m = treedp.median(con, sql="SELECT v FROM t", bounds=(0, 4), epsilon=1.0, rng=_seed())
    assert 0.0 <= float(m) <= 4.0
    with pytest.raises(InvalidParameterError, match="'column'"):
        treedp.median(con, sql=SQL, bounds=(0, 4), epsilon=1.0)


def test_profile_sql(request: pytest.FixtureRequest) -> None:
    for kind in ("duckdb", "postgresql"):
        con = loader(kind, request)(COLUMNS, ROWS).connection
        prof = treedp.profile(
            con, sql=SQL, epsilon=1.0, bounds={"v": (0, 4), "p": (0, 5)}, rng=_seed()
        )
        assert sorted(prof) == ["p", "v"]


def test_profile_of_a_relation_and_of_a_sqlite_connection(tmp_path: Any) -> None:
    """A DuckDB relation of several columns is profiled (its columns took turns on one
    connection from several threads: "busy"); a SQLite connection opened in this thread is
    refused in treedp's terms, and profiled once opened with ``check_same_thread=False``."""
    duckdb = pytest.importorskip("duckdb")
    rel = duckdb.sql("SELECT 0.1 * (i % 40) AS v, i % 5 AS p FROM range(1000000) t(i)")
    bounds = {"v": (0, 4), "p": (0, 5)}
    prof = treedp.profile(rel, epsilon=1.0, bounds=bounds, rng=_seed())
    assert sorted(prof) == ["p", "v"]
    path = tmp_path / "t.db"
    with sqlite3.connect(path) as own:
        own.execute("CREATE TABLE t (v REAL, p INTEGER)")
        own.executemany("INSERT INTO t VALUES (?, ?)", [(0.1 * i, i % 5) for i in range(40)])
    kw: dict[str, Any] = {"epsilon": 1.0, "bounds": bounds, "types": {"v": "float", "p": "integer"}}
    acc = treedp.Accountant(treedp.PureDP(5.0))
    with pytest.raises(InvalidParameterError, match="check_same_thread=False"):
        treedp.profile(sqlite3.connect(path), sql="SELECT v, p FROM t", accountant=acc, **kw)
    assert acc.spent == treedp.PureDP(0.0)
    shared = sqlite3.connect(path, check_same_thread=False)
    assert sorted(treedp.profile(shared, sql="SELECT v, p FROM t", rng=_seed(), **kw)) == [
        "p",
        "v",
    ]


def test_refusals_before_anything_is_read() -> None:
    acc = treedp.Accountant(treedp.PureDP(5.0))
    kw: dict[str, Any] = {"bounds": (0, 1), "epsilon": 1.0, "accountant": acc}
    with pytest.raises(InvalidTypeError, match="'sql' parameter needs a"):
        treedp.release_cdf([0.5], sql="SELECT 1", **kw)
    with pytest.raises(InvalidTypeError, match="needs the query"):
        treedp.release_cdf(sqlite3.connect(":memory:"), **kw)
    with pytest.raises(InvalidTypeError, match="needs the query"):
        treedp.quantiles(sqlite3.connect(":memory:"), [0.5], **kw)
    with pytest.raises(InvalidTypeError, match="'sql'"):
        treedp.release_grouped(sqlite3.connect(":memory:"), sql=3, by="k", keys=["a"], **kw)
    with pytest.raises(InvalidTypeError, match="needs the query"):
        treedp.profile(sqlite3.connect(":memory:"), epsilon=1.0)
    assert acc.spent == treedp.PureDP(0.0)


def test_bad_input_with_the_sql_spelling(con: Any) -> None:
    acc = treedp.Accountant(treedp.PureDP(5.0))
    kw: dict[str, Any] = {"bounds": (0, 4), "bins": 4, "epsilon": 1.0, "accountant": acc}
    with pytest.raises(InvalidParameterError, match="'nope'"):
        treedp.release_cdf(con, sql=SQL, column="nope", **kw)
    with pytest.raises(InvalidTypeError, match="number"):
        treedp.release_cdf(con, sql=SQL, column="k", **kw)
    with pytest.raises(InvalidParameterError, match="query failed") as info:
        treedp.release_cdf(con, sql="SELECT v FROM missing_table", column="v", **kw)
    assert "missing_table" not in str(info.value)
    assert acc.spent == treedp.PureDP(0.0)


def test_a_query_ending_in_a_line_comment_is_wrapped_safely(con: Any) -> None:
    """The user's query is wrapped in a subquery: a trailing ``--`` comment must not swallow
    the wrapper's closing parenthesis."""
    kw: dict[str, Any] = {"column": "v", "bounds": (0, 4), "bins": 8, "epsilon": 1.0}
    a = treedp.release_cdf(con, sql=SQL + " -- every row", rng=_seed(), **kw)
    b = treedp.release_cdf(con, sql=SQL, rng=_seed(), **kw)
    assert a.cdf([1.0, 2.0]).tolist() == b.cdf([1.0, 2.0]).tolist()
    g = treedp.release_grouped(
        con, sql=SQL + " -- c", column="v", by="k", keys=["a", "b"], privacy_unit="p",
        max_contributions=3, bounds=(0, 4), bins=8, epsilon=1.0, rng=_seed(),
    )  # fmt: skip
    assert set(g) == {"a", "b"}
