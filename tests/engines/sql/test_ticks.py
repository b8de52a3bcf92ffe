"""Datetime columns in the SQL engines: the bin of every edge value, and the ticks either
side of it, equals the local rule's (DuckDB, PostgreSQL); SQLite refuses them clearly."""

from __future__ import annotations

import sqlite3
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.dispatch import count_source
from treedp.engines.local import count_chunk
from treedp.engines.sql.ticks import thresholds
from treedp.exceptions import DataError, InvalidTypeError

#: bins in seconds, microseconds and nanoseconds; naive and on the UTC timeline
BINS = {
    "s": treedp.make_bins(bounds=("1969-12-31T23:00:00", "2020-01-03T00:00:01"), bins=7),
    "us": treedp.make_bins(
        bounds=("1969-12-31T23:59:59.999990", "1970-01-01T00:00:00.000031"), bins=5
    ),
    "ns": treedp.make_bins(
        bounds=("1999-12-31T23:59:59.999998999", "2000-01-01T00:00:00.000003001"), bins=3
    ),
    "edges": treedp.make_bins(edges=["1900-01-01", "1970-01-01", "1970-01-02T12:00", "2100-01-01"]),
    # calendar units (no fixed length): a bare KeyError on every database until session 29
    "years": treedp.make_bins(edges=["1950", "1970", "2000", "2100"]),
    "months": treedp.make_bins(edges=["1969-11", "1970-01", "1970-02", "2000-03"]),
}
ZONED = treedp.make_bins(bounds=("1969-12-31T23:00:00Z", "2020-01-03T00:00:01Z"), bins=7)
#: across a daylight-saving change: edges on the UTC timeline
PARIS = treedp.make_bins(
    bounds=("2020-03-28T00:00:00", "2020-03-30T00:00:00"), bins=5, timezone="Europe/Paris"
)

#: database -> SQL type -> (numpy unit of the values, aware)
TYPES = {
    "duckdb": {
        "TIMESTAMP": ("us", False),
        "TIMESTAMP_NS": ("ns", False),
        "TIMESTAMP_MS": ("ms", False),
        "TIMESTAMP_S": ("s", False),
        "DATE": ("D", False),
        "TIMESTAMPTZ": ("us", True),
    },
    "postgresql": {
        "timestamp": ("us", False),
        "date": ("D", False),
        "timestamptz": ("us", True),
    },
}


def edge_values(bins: Any, unit: str) -> np.ndarray:
    """Every edge in the column's unit (rounded down and up), the ticks either side, the
    midpoints: as numpy datetimes of ``unit``."""
    edges = bins.edges.astype(f"datetime64[{bins.datetime_unit}]")
    down = edges.astype(f"datetime64[{unit}]").view(np.int64)
    out = [down - 1, down, down + 1, down + 2]
    mids = (bins.edges[:-1] // 2 + bins.edges[1:] // 2).astype(f"datetime64[{bins.datetime_unit}]")
    out.append(mids.astype(f"datetime64[{unit}]").view(np.int64))
    return np.unique(np.concatenate(out)).astype(f"datetime64[{unit}]")


def _connect(db: str, request: pytest.FixtureRequest) -> Any:
    if db == "duckdb":
        con = pytest.importorskip("duckdb").connect()
        con.execute("SET TimeZone = 'UTC'")
        request.addfinalizer(con.close)
        return con
    return request.getfixturevalue("pg")


def _load(con: Any, db: str, sql_type: str, texts: list[str | None]) -> Any:
    mark = "%s" if db == "postgresql" else "?"
    con.execute("DROP TABLE IF EXISTS t")
    con.execute(f"CREATE TABLE t (v {sql_type})")
    rows = [(v,) for v in texts]
    insert = f"INSERT INTO t VALUES (CAST({mark} AS {sql_type}))"
    if db == "postgresql":
        with con.cursor() as cur:
            cur.executemany(insert, rows)
    else:
        con.executemany(insert, rows)
    return treedp.SqlSource(con, "SELECT v FROM t")


def _texts(values: np.ndarray, aware: bool) -> list[str | None]:
    return [str(v) + ("+00:00" if aware else "") for v in values]


CASES = [(db, t) for db, types in TYPES.items() for t in types]
#: naive columns under every naive bins; zoned columns under the zoned bins
BIN_CASES = [
    (db, t, name)
    for db, t in CASES
    for name in (["zoned", "paris"] if TYPES[db][t][1] else sorted(BINS))
]


@pytest.mark.parametrize(("db", "sql_type", "name"), BIN_CASES)
def test_datetime_bins_equal_local_rule(
    request: pytest.FixtureRequest, db: str, sql_type: str, name: str
) -> None:
    unit, aware = TYPES[db][sql_type]
    bins = {"zoned": ZONED, "paris": PARIS}.get(name) or BINS[name]
    values = edge_values(bins, unit)
    lo, hi = np.datetime64("1900-01-01", unit), np.datetime64("2200-01-01", unit)
    values = values[(values > lo) & (values < hi)]  # in every database's range
    data = _load(_connect(db, request), db, sql_type, _texts(values, aware))
    want = count_chunk(values, bins)
    assert count_source(data, column="v", bins=bins) == want


@pytest.mark.parametrize(("db", "sql_type"), CASES)
def test_null_and_infinity(request: pytest.FixtureRequest, db: str, sql_type: str) -> None:
    """NULL is missing; ``+infinity`` is clamped into the last bin, ``-infinity`` the first."""
    aware = TYPES[db][sql_type][1]
    bins = ZONED if aware else BINS["s"]
    con = _connect(db, request)
    data = _load(con, db, sql_type, ["infinity", "-infinity", "infinity", None])
    got = count_source(data, column="v", bins=bins, nan="drop")
    assert got.counts.tolist() == [1, 0, 0, 0, 0, 0, 2]
    assert got.dropped == 1
    with pytest.raises(DataError) as err:
        count_source(data, column="v", bins=bins)
    assert "infinity" not in str(err.value)


@pytest.mark.parametrize("db", sorted(TYPES))
def test_naive_and_aware_refused(request: pytest.FixtureRequest, db: str) -> None:
    con = _connect(db, request)
    zoned = "TIMESTAMPTZ" if db == "duckdb" else "timestamptz"
    data = _load(con, db, zoned, ["2020-01-01T00:00:00+00:00"])
    with pytest.raises(InvalidTypeError, match="naive"):
        count_source(data, column="v", bins=BINS["s"])
    naive = "TIMESTAMP" if db == "duckdb" else "timestamp"
    data = _load(con, db, naive, ["2020-01-01T00:00:00"])
    with pytest.raises(InvalidTypeError, match="naive"):
        count_source(data, column="v", bins=ZONED)


@pytest.mark.parametrize("db", sorted(TYPES))
def test_wrong_types_refused(request: pytest.FixtureRequest, db: str) -> None:
    """A number column under datetime bins, a datetime column under numeric bins, a TIME
    column: one clear error naming the column, no value."""
    con = _connect(db, request)
    data = _load(con, db, "BIGINT", ["1577836800"])
    with pytest.raises(InvalidTypeError, match="'v' must hold datetimes"):
        count_source(data, column="v", bins=BINS["s"])
    data = _load(con, db, "TIMESTAMP", ["2020-01-01T00:00:00"])
    with pytest.raises(InvalidTypeError, match="'v' holds datetimes but the bins are numeric"):
        count_source(data, column="v", bins=treedp.make_bins(bounds=(0, 1), bins=2))
    data = _load(con, db, "TIME", ["12:00:00"])
    # DuckDB: a TIME of day is no datetime kind; PostgreSQL names the types it reads
    with pytest.raises(InvalidTypeError, match=r"not one of them|not a datetime type") as err:
        count_source(data, column="v", bins=BINS["s"])
    assert "12:00" not in str(err.value)


def test_sqlite_refuses_datetime_bins() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (v TIMESTAMP)")
    con.execute("INSERT INTO t VALUES ('2020-01-01 00:00:00')")
    data = treedp.SqlSource(con, "SELECT v FROM t")
    with pytest.raises(InvalidTypeError, match="sqlite engine does not count datetime"):
        count_source(data, column="v", bins=BINS["s"])
    con.close()


@pytest.mark.parametrize("name", sorted(set(BINS) - {"years", "months"}))  # fixed-length units
@pytest.mark.parametrize("unit", ["D", "ms", "us", "ns"])
def test_edge_values_catch_an_off_by_one_tick_conversion(name: str, unit: str) -> None:
    """The conformance values can fail: thresholds one tick off (``T_j + 1``, or rounded
    down instead of up, mutants of :func:`thresholds`) bin them differently than the local
    rule, while the true thresholds agree with it."""
    bins = BINS[name]
    values = edge_values(bins, unit)
    ticks = values.view(np.int64)
    want = count_chunk(values, bins).counts
    true = np.array(thresholds(bins, unit), dtype=object)

    def counted(ts: Any) -> np.ndarray:
        j = np.searchsorted(np.array(ts[1:-1], dtype=np.int64), ticks, side="right")
        return np.bincount(j, minlength=bins.n_bins)

    assert np.array_equal(counted(true), want)
    assert not np.array_equal(counted(true + 1), want)
    seconds = {"D": 86400, "m": 60, "s": 1, "ms": Fraction(1, 10**3)}
    seconds |= {"us": Fraction(1, 10**6), "ns": Fraction(1, 10**9)}
    per, scale = Fraction(seconds[bins.datetime_unit]), Fraction(seconds[unit])
    if per < scale:  # the column is coarser than the bins: rounding matters
        floor = [(int(e) * per) // scale for e in bins.edges]
        assert not np.array_equal(counted(np.array(floor, dtype=object)), want)


@pytest.mark.parametrize("db", sorted(TYPES))
def test_end_to_end_and_collect_refused(request: pytest.FixtureRequest, db: str) -> None:
    """release_cdf and release_grouped (with a privacy unit) count a datetime column in the
    database; the quantile methods that collect values refuse it clearly, nothing read."""
    con = _connect(db, request)
    naive = "TIMESTAMP" if db == "duckdb" else "timestamp"
    data = _load(con, db, naive, ["2020-01-01T00:00:00", "2020-01-02T12:00:00"] * 200)
    bounds = ("2020-01-01", "2020-01-06")
    r = treedp.release_cdf(data, column="v", bounds=bounds, bins=8, epsilon=1.0)
    # 400 rows, Laplace noise of scale ~8 per bin: the median is inside the bounds
    assert np.datetime64("2020-01-01") <= r.quantile(0.5) <= np.datetime64("2020-01-06")
    con.execute("ALTER TABLE t ADD COLUMN p BIGINT")
    con.execute("UPDATE t SET p = 7")
    data = treedp.SqlSource(con, "SELECT v, p FROM t")
    g = treedp.release_grouped(
        data, column="v", by="p", keys=[7], privacy_unit="p", max_contributions=1,
        bounds=bounds, bins=8, epsilon=1.0,
    )  # fmt: skip
    assert g is not None
    with pytest.raises(InvalidTypeError, match="quantile methods"):
        treedp.median(con, sql="SELECT v FROM t", bounds=bounds, epsilon=1.0)


_RNG = np.random.default_rng(11)
#: explicit datetime edges, uneven, in several units (DuckDB counts them by the search)
SEARCHED = {
    "seconds-1000": treedp.make_bins(
        edges=np.unique(_RNG.integers(-2 * 10**9, 4 * 10**9, 1001)).astype("datetime64[s]")
    ),
    "ns-300": treedp.make_bins(
        edges=np.unique(_RNG.integers(9 * 10**17, 10**18, 301)).astype("datetime64[ns]")
    ),
    "days-5": treedp.make_bins(
        edges=["1900-01-01", "1969-12-31", "1970-01-01", "1970-01-03", "2000-02-29", "2100-01-01"]
    ),
    "ms-uneven": treedp.make_bins(
        edges=np.array([-5, -1, 0, 1, 2, 10**6, 10**12], dtype="datetime64[ms]")
    ),
}


@pytest.mark.parametrize("sql_type", sorted(TYPES["duckdb"]))
@pytest.mark.parametrize("name", sorted(SEARCHED))
def test_explicit_datetime_edges_by_search(
    request: pytest.FixtureRequest, sql_type: str, name: str
) -> None:
    """DuckDB counts explicit datetime edges by the binary search over the integer
    thresholds (``engines/sql/search.py``, ``tick_search``): the local rule on every edge value
    and the ticks either side, ``±infinity`` and NULL."""
    from treedp.engines.sql import search
    from treedp.engines.sql.duck import _ticks

    unit, aware = TYPES["duckdb"][sql_type]
    if aware:
        return  # explicit edges here are naive; zoned columns are refused for naive bins
    bins = SEARCHED[name]
    ticks = _ticks("v", sql_type)
    assert ticks is not None and search.tick_search("x", bins, ticks, -1) is not None
    values = edge_values(bins, unit)
    lo, hi = np.datetime64("1900-01-01", unit), np.datetime64("2200-01-01", unit)
    values = values[(values > lo) & (values < hi)]
    texts: list[str | None] = [*_texts(values, False), "infinity", "-infinity", None]
    data = _load(_connect("duckdb", request), "duckdb", sql_type, texts)
    want = count_chunk(values, bins).counts.copy()
    want[0], want[-1] = want[0] + 1, want[-1] + 1
    got = count_source(data, column="v", bins=bins, nan="drop")
    assert got.counts.tolist() == want.tolist() and got.dropped == 1


def test_a_wrong_tick_search_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``>`` for ``>=`` in the search: the edge values count differently."""
    from treedp.engines.sql import search

    monkeypatch.setattr(search, "_GE", ">")
    bins = SEARCHED["seconds-1000"]
    values = edge_values(bins, "us")
    data = _load(_connect("duckdb", request), "duckdb", "TIMESTAMP", _texts(values, False))
    assert count_source(data, column="v", bins=bins) != count_chunk(values, bins)


@pytest.mark.parametrize("unit", ["s", "ms"])
def test_coarse_timestamps_beyond_the_microsecond_range(unit: str) -> None:
    """A DuckDB TIMESTAMP_S / TIMESTAMP_MS value the microsecond ticks cannot hold (a 9999-12-31
    sentinel is past the nanosecond range some conversions go through; an Arrow column can hold
    2^62 seconds) is clamped like the memory engine's, not a failed query for that row alone."""
    duckdb = pytest.importorskip("duckdb")
    pa = pytest.importorskip("pyarrow")
    values = np.array(
        ["2020-03-01", "9999-12-31", "1000-01-01", 2**62, -(2**62), "2020-06-01"],
        dtype=f"datetime64[{unit}]",
    )
    values[3:5] = np.array([2**62, -(2**62)]).astype(f"datetime64[{unit}]")
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    table = pa.table({"v": pa.array(values)})
    con.register("arrow_values", table)
    con.execute("CREATE TABLE t AS SELECT * FROM arrow_values")
    typed = con.execute("SELECT typeof(v) FROM t LIMIT 1").fetchone()
    assert typed == (f"TIMESTAMP_{unit.upper()}",)
    bins = treedp.make_bins(bounds=("2020-01-01", "2021-01-01"), bins=4)
    data = treedp.SqlSource(con, "SELECT v FROM t")
    assert count_source(data, column="v", bins=bins) == count_chunk(values, bins)
    assert count_source(data, column="v", bins=bins).counts.tolist() == [3, 1, 0, 2]


def test_nanosecond_columns_are_searched_in_microseconds_under_coarser_bins(
    request: pytest.FixtureRequest,
) -> None:
    """A ``TIMESTAMP_NS`` column under bins in microseconds or coarser is counted on the
    floor of its ticks in microseconds: the same bins (``x >= 1000·T'`` exactly when
    ``floor(x/1000) >= T'``), and edges past 2116 (``2^62`` ns) stay in DuckDB's search
    instead of a ``CASE`` tree of every edge (a new user's run: private bounds on 5 million
    rows took 80–145 s and 3.5 GB, 9 s as ``TIMESTAMP``). Nanosecond bins keep nanoseconds."""
    from treedp.engines.sql import duck
    from treedp.engines.sql.search import tick_search
    from treedp.engines.sql.ticks import coarsened

    edges = np.datetime64("1700-01-01", "us") + np.sort(
        np.random.default_rng(5).choice(np.int64(800 * 365 * 86400 * 10**6), 3000, replace=False)
    ).astype("timedelta64[us]")
    bins = treedp.make_bins(edges=[str(e) for e in edges])
    ticks = duck._ticks("x", "TIMESTAMP_NS")
    assert ticks is not None and tick_search("SELECT 1", bins, ticks, -1) is None
    micro = coarsened(ticks, bins)
    assert micro.unit == "us" and tick_search("SELECT 1", bins, micro, -1) is not None
    assert coarsened(ticks, BINS["ns"]) == ticks
    inside = edges[(edges > np.datetime64("1678-01-01")) & (edges < np.datetime64("2262-01-01"))]
    ns = inside.astype("datetime64[ns]").view(np.int64)
    values = np.unique(
        np.concatenate([ns - 1001, ns - 1000, ns - 999, ns - 1, ns, ns + 1, ns + 999])
    )
    values = values.astype("datetime64[ns]")
    data = _load(_connect("duckdb", request), "duckdb", "TIMESTAMP_NS", _texts(values, False))
    assert count_source(data, column="v", bins=bins) == count_chunk(values, bins)
