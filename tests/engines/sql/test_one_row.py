"""One row never fails a database query where its neighbour without it succeeds: values the
database cannot convert saturate as in memory, keys are compared without casting the column,
and missing markers are missing (an independent review of the engines, session 27)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.dispatch import count_source
from treedp.engines.local import count_chunk

#: numerics at and past the double range, exact (2^1024 - 2^970 rounds to inf; 2^-1075 to 0)
EXTREME = [
    "1",
    "2.5",
    "1e400",
    "-1e400",
    "1e-400",
    "-1e-400",
    str(2**1024 - 2**970),
    str(2**1024 - 2**970 - 1),
    "0." + str(5**1075).zfill(1075),
    "4.9406564584124654e-324",
    "NaN",
]


def _pg_table(pg: Any, ddl: str, rows: list[tuple[Any, ...]]) -> treedp.SqlSource:
    pg.execute(f"CREATE TABLE v ({ddl})")
    with pg.cursor() as cur:
        marks = ", ".join(["%s"] * len(rows[0]))
        cur.executemany(f"INSERT INTO v VALUES ({marks})", rows)
    return treedp.SqlSource(pg, "SELECT * FROM v")


def test_postgres_numeric_saturates_like_python(pg: Any) -> None:
    """A ``numeric`` past the double range counts where Python's float puts the same Decimal
    (±inf clamped, ±0.0), instead of failing the query for that row."""
    data = _pg_table(pg, "x numeric", [(Decimal(v),) for v in EXTREME])
    bins = treedp.make_bins(edges=[-1.0, -1e-300, 0.0, 5e-324, 2.0, 10.0])
    values = np.array([float(Decimal(v)) for v in EXTREME])
    want = count_chunk(values, bins, nan="drop")
    assert count_source(data, column="x", bins=bins, nan="drop") == want
    assert want.counts.tolist() == [1, 0, 3, 2, 4] and want.dropped == 1
    kept = treedp.quantiles(data, [0.5], column="x", bounds=(0, 10), epsilon=1.0, nan="drop")
    assert np.isfinite(kept.values).all()


def test_postgres_numeric_neighbours(pg: Any) -> None:
    """The review's pair: a release on ``[1, 2]`` and on ``[1, 2, 1e400]`` both succeed and both
    charge."""
    data = _pg_table(pg, "x numeric", [(Decimal("1"),), (Decimal("2"),), (Decimal("1e400"),)])
    acc = treedp.Accountant(treedp.PureDP(2.0))
    treedp.release_cdf(data, column="x", bounds=(0, 10), bins=4, epsilon=1.0, accountant=acc)
    assert acc.spent == treedp.PureDP(1.0)


def _release(data: Any, by: str, keys: list[Any], **kw: Any) -> Any:
    acc = treedp.Accountant(treedp.PureDP(2.0))
    rel = treedp.release_grouped(
        data, column="x", by=by, keys=keys, bounds=(0, 10), bins=2, epsilon=1.0,
        accountant=acc, rng=treedp.InsecureSeededSource(0), **kw,
    )  # fmt: skip
    assert acc.spent == treedp.PureDP(1.0)
    return rel


def _duck(ddl: str, rows: list[str]) -> Any:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (x DOUBLE, k {ddl}, p DOUBLE)")
    for i, r in enumerate(rows):
        con.execute(f"INSERT INTO t VALUES ({i % 10}, {r}, {i})")
    return con.sql("SELECT * FROM t")


def test_duckdb_keys_never_convert_the_column() -> None:
    """UHUGEINT, DATE (past the TIMESTAMP range) and TIMESTAMP_S ``by`` columns: one far row is
    released beside its neighbour without it, and each key matches what it names only."""
    big = str(2**128 - 1)
    _release(_duck("UHUGEINT", ["1", big]), "k", [-1, 1, 2.5])
    dated = ["DATE '2020-01-01'", "DATE '2020-01-01'", "DATE '5000000-01-01'"]
    rel = _release(_duck("DATE", dated), "k", ["2020-01-01", "2020-01-01T06:30"])
    counts = treedp.release_grouped(
        _duck("DATE", dated), column="x", by="k", keys=["2020-01-01", "2020-01-01T06:30"],
        bounds=(0, 10), bins=2, epsilon=50.0, postprocess="none",
        rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    assert rel is not None and [round(float(counts[k].n)) for k in counts.keys] == [2, 0]
    pa = pytest.importorskip("pyarrow")
    far = np.array([2**62], dtype="int64").astype("datetime64[s]")[0]
    stamps = np.array([np.datetime64("2020-01-01T06:30:00", "s"), far])
    arrow_t = pa.table({"x": [1.0, 2.0], "k": pa.array(stamps)})  # noqa: F841 - TIMESTAMP_S
    exact = treedp.release_grouped(
        pytest.importorskip("duckdb").sql("SELECT * FROM arrow_t"), column="x", by="k",
        keys=["2020-01-01T06:30", "2020-01-01T06:30:00.5"], bounds=(0, 10), bins=2,
        epsilon=50.0, postprocess="none", rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    assert [round(float(exact[k].n)) for k in exact.keys] == [1, 0]


def test_duckdb_refuses_json_keys_by_type() -> None:
    with pytest.raises(treedp.InvalidTypeError, match="'by' column 'k' has the SQL type JSON"):
        _release(_duck("JSON", ["'1'"]), "k", [1])


@pytest.mark.parametrize("engine", ["duckdb", "postgresql"])
def test_nan_keys_and_ids_are_missing(engine: str, request: pytest.FixtureRequest) -> None:
    """A NaN in a float ``by`` or person-id column is missing (refused under ``nan="error"``,
    dropped under ``"drop"``), as on every other engine, not a key or a person of its own."""
    rows = [(1.0, 1.0, 1.0), (2.0, float("nan"), 2.0), (3.0, 1.0, float("nan"))]
    if engine == "duckdb":
        con = pytest.importorskip("duckdb").connect()
        con.execute("CREATE TABLE t (x DOUBLE, k DOUBLE, p DOUBLE)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        data: Any = con.sql("SELECT * FROM t")
    else:
        data = _pg_table(request.getfixturevalue("pg"), "x float8, k numeric, p float8", rows)
    kw: dict[str, Any] = {"column": "x", "by": "k", "keys": [1.0], "bounds": (0, 10), "bins": 2}
    with pytest.raises(treedp.DataError, match="missing keys"):
        treedp.release_grouped(data, epsilon=1.0, **kw)
    with pytest.raises(treedp.DataError, match="missing"):
        treedp.release_grouped(data, epsilon=1.0, privacy_unit="p", max_contributions=1, **kw)
    _release(data, "k", [1.0], privacy_unit="p", max_contributions=2, nan="drop")


def test_postgres_keys_never_convert_the_column(pg: Any) -> None:
    """A ``date`` column past the ``timestamp`` range and a ``numeric`` column past the double
    range, compared with date and float keys."""
    import datetime as dt

    rows = [(1.0, dt.date(2020, 1, 1), Decimal("0.5"))]
    data = _pg_table(pg, "x float8, d date, m numeric", rows)
    pg.execute("INSERT INTO v VALUES (2.0, '5000000-01-01', NULL), (3.0, '2020-01-01', 1e400)")
    _release(data, "d", [dt.date(2020, 1, 1), "2020-01-01T06:30"], nan="drop")
    _release(data, "m", [0.5, 1.5], nan="drop")
    exact = treedp.release_grouped(
        data, column="x", by="m", keys=[0.5, 0.1], bounds=(0, 10), bins=2, epsilon=50.0,
        postprocess="none", nan="drop", rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    assert [round(float(exact[k].n)) for k in exact.keys] == [1, 0]


def _pair(make: Any, call: Any) -> None:
    """``call`` on a table of one row with a missing key (dropped) and on it plus one far row:
    both released, both charged."""
    for extra in (False, True):
        acc = treedp.Accountant(treedp.PureDP(2.0))
        call(make(extra), acc)
        assert acc.spent == treedp.PureDP(1.0)


@pytest.mark.parametrize(
    ("ddl", "far", "keys"),
    [
        ("DECIMAL(4,1)", "999.9", [10**37, 0.5]),
        ("DOUBLE", "1e300", [10**400, 1.0]),
        ("BOOLEAN", "TRUE", ["abc", True]),
        ("DECIMAL(38,10)", "1e27", [10**30]),
        ("TIMESTAMPTZ", "make_timestamptz(9223372036854775806)", ["2020-01-01"]),
    ],
)
def test_duckdb_far_rows_never_fail_the_key_test(ddl: str, far: str, keys: list[Any]) -> None:
    """The second review's pairs: every key is brought to the column's type in Python (or
    matches nothing), so one far row cannot fail the comparison; a zone-aware column under a
    far session zone included."""
    duckdb = pytest.importorskip("duckdb")

    def make(extra: bool) -> Any:
        con = duckdb.connect()
        con.execute("SET TimeZone = 'Pacific/Kiritimati'")
        con.execute(f"CREATE TABLE t (x DOUBLE, k {ddl})")
        con.execute("INSERT INTO t VALUES (1.0, NULL)")
        if extra:
            con.execute(f"INSERT INTO t VALUES (2.0, {far})")
        return con.sql("SELECT * FROM t")  # a relation keeps the session's zone

    _pair(
        make,
        lambda data, acc: treedp.release_grouped(
            data, column="x", by="k", keys=keys, bounds=(0, 10), bins=2, epsilon=1.0,
            nan="drop", accountant=acc,
        ),
    )  # fmt: skip


@pytest.mark.parametrize(
    "ddl", ["TIME", "UUID", "JSON", "VARCHAR[]", "DATE[]", "BLOB", "DECIMAL(4,1)[]", "ENUM('a')"]
)
def test_duckdb_by_columns_of_other_types_are_refused(ddl: str) -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t (x DOUBLE, k {ddl})")
    acc = treedp.Accountant(treedp.PureDP(2.0))
    with pytest.raises(treedp.InvalidTypeError, match="'by' column 'k' has the SQL type"):
        treedp.release_grouped(
            treedp.SqlSource(con, "SELECT * FROM t"), column="x", by="k", keys=["a"],
            bounds=(0, 10), bins=2, epsilon=1.0, accountant=acc,
        )  # fmt: skip
    assert acc.spent == treedp.PureDP(0.0)


def test_duckdb_list_values_and_timestamp_ids_are_refused_by_type() -> None:
    """A ``DOUBLE[]`` value column is no number column (a prefix made it one, cast per row),
    and a ``TIMESTAMP_S`` person id cannot be read as text past the microseconds."""
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x DOUBLE, l DOUBLE[], s TIMESTAMP_S)")
    data = treedp.SqlSource(con, "SELECT * FROM t")
    with pytest.raises(treedp.InvalidTypeError, match="'l' must hold numbers"):
        treedp.release_cdf(data, column="l", bounds=(0, 1), bins=2, epsilon=1.0)
    with pytest.raises(treedp.InvalidTypeError, match="privacy unit column 's'"):
        treedp.release_cdf(
            data, column="x", bounds=(0, 1), bins=2, epsilon=1.0,
            privacy_unit=treedp.PrivacyUnit("s", max_contributions=2),
        )  # fmt: skip


def _counts(data: Any, keys: list[Any], **kw: Any) -> list[int]:
    rel = treedp.release_grouped(
        data, column="x", by="k", keys=keys, bounds=(0, 10), bins=2, epsilon=50.0,
        postprocess="none", rng=treedp.InsecureSeededSource(0), **kw,
    )  # fmt: skip
    return [round(float(rel[k].n)) for k in rel.keys]


def test_keys_equal_what_they_equal_in_memory(pg: Any) -> None:
    """Float keys on integer and numeric columns match the values that round to them (as
    numpy's and PostgreSQL's ``numeric = float8`` compare), booleans by truth, aware columns
    in UTC whatever the session's zone."""
    import pandas as pd

    big = 2**53
    frame = pd.DataFrame({"x": [1.0] * 4, "k": [big, big + 1, big + 2, 7]})
    # numpy: float(2**53) equals 2**53 and 2**53 + 1 (which rounds to it), not 2**53 + 2
    want = [int((frame["k"] == float(big)).sum()), int((frame["k"] == 7).sum())]
    assert _counts(frame, [float(big), 7]) == want == [2, 1]
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    assert _counts(treedp.SqlSource(con, "SELECT * FROM t"), [float(big), 7]) == want
    pg.execute("CREATE TABLE v (x float8, k int8, m numeric, z timestamptz, b bool)")
    pg.execute("SET TimeZone = 'Pacific/Kiritimati'")
    with pg.cursor() as cur:
        cur.executemany(
            "INSERT INTO v VALUES (1.0, %s, 0.1, '2020-01-01 00:00:00+00', true)",
            [(int(k),) for k in frame["k"]],
        )
    rows = "SELECT x, {} AS k FROM v"
    assert _counts(treedp.SqlSource(pg, rows.format("k")), [float(big), 7]) == want
    assert _counts(treedp.SqlSource(pg, rows.format("m")), [0.1, 0.2]) == [4, 0]
    assert _counts(treedp.SqlSource(pg, rows.format("z")), ["2020-01-01"]) == [4]
    assert _counts(treedp.SqlSource(pg, rows.format("b")), [True, False]) == [4, 0]


def test_postgres_numeric_keys_far_and_infinite(pg: Any) -> None:
    rows = [(1.0, Decimal("1")), (2.0, Decimal("1e400")), (3.0, Decimal("Infinity"))]
    data = _pg_table(pg, "x float8, m numeric", rows)
    got = treedp.release_grouped(
        data, column="x", by="m", keys=[float("inf"), 10**400, 1.0], bounds=(0, 10), bins=2,
        epsilon=50.0, postprocess="none", rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    assert [round(float(got[k].n)) for k in got.keys] == [1, 1, 1]


def test_third_check_keys(pg: Any) -> None:
    """Text keys byte by byte whatever the collation; a bool key is 0 or 1 on a number column
    and 1.0 is True on a boolean one (as numpy compares); an ENUM's labels (a pandas
    Categorical's categories, data) are not in the refusal; PostgreSQL: an oid key outside
    its range and a key in year 0 match nothing instead of failing the query."""
    import pandas as pd

    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (x DOUBLE, k VARCHAR COLLATE NOCASE, n BIGINT, b BOOLEAN)")
    con.execute("INSERT INTO t VALUES (1.0, 'abc', 1, TRUE), (1.0, 'ABC', 0, FALSE)")
    rows = "SELECT x, {} AS k FROM t"
    assert _counts(con.sql(rows.format("k")), ["abc", "Abc"]) == [1, 0]
    assert _counts(con.sql(rows.format("n")), [True, False]) == [1, 1]
    assert _counts(con.sql(rows.format("b")), [1.0, 0]) == [1, 1]
    frame = pd.DataFrame({"x": [1.0, 2.0], "k": pd.Categorical(["alice_secret", "bob"])})  # noqa: F841
    with pytest.raises(treedp.InvalidTypeError) as err:
        _counts(duckdb.sql("SELECT * FROM frame"), ["bob"])
    assert "ENUM" in str(err.value) and "ALICE" not in str(err.value).upper()
    data = _pg_table(pg, "x float8, o oid, d date", [(1.0, 4294967295, "2020-01-01")])
    assert _counts(treedp.SqlSource(pg, "SELECT x, o AS k FROM v"), [-1, 4294967295]) == [0, 1]
    assert data is not None
    year0 = [np.datetime64("0000-01-01"), np.datetime64("2020-01-01")]
    assert _counts(treedp.SqlSource(pg, "SELECT x, d AS k FROM v"), year0) == [0, 1]
    with pytest.raises(treedp.InvalidTypeError, match="'by' column 'k' has the SQL type TIME"):
        _counts(treedp.SqlSource(pg, "SELECT x, CAST('06:30' AS time) AS k FROM v"), ["06:30"])
    named = treedp.SqlSource(pg, "SELECT x, CAST('abc' AS name) AS k FROM v")
    assert _counts(named, ["abc", "ABC"]) == [1, 0]  # PostgreSQL's name type is text
