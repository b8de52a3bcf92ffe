"""Grouped counts (public keys), per-person bounding, the release front doors and bad input,
on every database."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import KINDS, Loader, loader
from treedp.api_grouped import grouped_counts
from treedp.engines.grouped import GroupedJob
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.privacy.contribution import ContributionBounds

BINS = treedp.make_bins(bounds=(0, 1), bins=4)

ROWS = [
    (0.5, "a", 1),
    (0.25, "b", 1),
    (-0.0, "a", 2),
    (1.0, "c", 2),
    (0.75, "a", 3),
    (float("inf"), "b", 3),
    (0.3, "a", 3),
]
COLUMNS = [("v", "double"), ("k", "text"), ("p", "bigint")]


@pytest.fixture(params=KINDS)
def load(request: pytest.FixtureRequest) -> Loader:
    return loader(request.param, request)


def test_grouped_counts_equal_memory(load: Loader) -> None:
    data = load(COLUMNS, ROWS)
    table = {"v": np.array([r[0] for r in ROWS]), "k": np.array([r[1] for r in ROWS])}
    job = GroupedJob(
        "v", ("k",), ("a", "b"), None, ContributionBounds(None, 1, 1, 1), BINS, "error"
    )
    got = grouped_counts(data, job)
    assert got == grouped_counts(table, job)
    assert got["a"].counts.tolist() == [1, 1, 1, 1]  # "c" is not a public key: dropped


def test_release_cdf_grouped_and_quantiles(load: Loader) -> None:
    data = load(COLUMNS, ROWS)
    seed = treedp.InsecureSeededSource(1)
    r = treedp.release_cdf(data, column="v", bounds=(0, 1), bins=4, epsilon=1.0, rng=seed)
    assert r.bins.n_bins == 4
    g = treedp.release_grouped(
        data, column="v", by="k", keys=["a", "b"], bounds=(0, 1), bins=4, epsilon=1.0, rng=seed
    )
    assert len(g) == 2
    q = treedp.quantiles(data, [0.5], column="v", bounds=(0, 1), epsilon=1.0, rng=seed)
    assert 0.0 <= float(q.value[0]) <= 1.0


def test_privacy_unit_bounds_each_person(load: Loader) -> None:
    data = load(COLUMNS, ROWS)
    job = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 1, 1, 1), BINS, "error")
    got = grouped_counts(data, job, treedp.InsecureSeededSource(3))
    assert int(got.counts.sum()) == 3  # one row of each of the three persons


@pytest.mark.parametrize("ask", ["cdf", "grouped"])
def test_bad_input_one_error_nothing_charged(load: Loader, ask: str) -> None:
    data = load([("v", "double"), ("k", "text")], [(0.5, "a"), (None, "b")])
    acc = treedp.Accountant(treedp.PureDP(10.0))

    def run(column: str) -> None:
        if ask == "cdf":
            treedp.release_cdf(
                data, column=column, bounds=(0, 1), bins=4, epsilon=1.0, accountant=acc
            )
        else:
            treedp.release_grouped(
                data,
                column=column,
                by="k",
                keys=["a", "b"],
                bounds=(0, 1),
                bins=4,
                epsilon=1.0,
                accountant=acc,
            )

    with pytest.raises(InvalidParameterError, match="'nope'"):
        run("nope")
    with pytest.raises(InvalidTypeError, match="number"):
        run("k")
    with pytest.raises(DataError, match="missing"):
        run("v")
    assert acc.spent == treedp.PureDP(0.0)


def test_failing_query_is_one_error_without_its_message(request: pytest.FixtureRequest) -> None:
    for kind in ("duckdb", "sqlite", "postgresql"):
        load = loader(kind, request)
        src = load([("v", "text")], [("secret-value-123",)])
        cast = "CAST(v AS INTEGER)" if kind != "sqlite" else "json(v)"  # SQLite casts text to 0
        bad = treedp.SqlSource(src.connection, f"SELECT {cast} AS v FROM t")
        acc = treedp.Accountant(treedp.PureDP(10.0))
        with pytest.raises(InvalidParameterError, match="query failed") as info:
            treedp.release_cdf(bad, column="v", bounds=(0, 1), bins=2, epsilon=1.0, accountant=acc)
        assert "secret" not in str(info.value)
        assert acc.spent == treedp.PureDP(0.0)
        nope = treedp.SqlSource(src.connection, "SELECT * FROM no_such_table")
        with pytest.raises(InvalidParameterError, match="query failed"):
            treedp.release_cdf(nope, column="v", bounds=(0, 1), bins=2, epsilon=1.0)


def test_sqlite_text_value_is_a_type_error(request: pytest.FixtureRequest) -> None:
    load = loader("sqlite", request)
    data = load([("v", "double")], [(0.5,), ("x7",)])  # SQLite keeps the text as text
    with pytest.raises(InvalidTypeError, match="The column 'v' must hold numbers") as info:
        treedp.release_cdf(data, column="v", bounds=(0, 1), bins=2, epsilon=1.0)
    assert "x7" not in str(info.value)  # named as DuckDB's is (a new user's run); no value


def test_query_is_wrapped_and_identifiers_quoted(request: pytest.FixtureRequest) -> None:
    for kind in ("duckdb", "sqlite", "postgresql"):
        load = loader(kind, request)
        src = load([('we"ird col', "double")], [(0.5,), (0.1,)])
        sql = 'SELECT "we""ird col", \'100%\' AS pct FROM t;'
        data = treedp.SqlSource(src.connection, sql)
        got = treedp.engines.dispatch.count_source(
            data, column='we"ird col', bins=treedp.make_bins(bounds=(0, 1), bins=2)
        )
        assert got.counts.tolist() == [1, 1]
        with pytest.raises(InvalidParameterError, match="query failed"):
            treedp.release_cdf(
                treedp.SqlSource(src.connection, "DELETE FROM t"),
                column="v",
                bounds=(0, 1),
                bins=2,
                epsilon=1.0,
            )


def test_private_key_selection_is_refused(load: Loader) -> None:
    data = load(COLUMNS, ROWS)
    with pytest.raises(InvalidParameterError, match="public keys"):
        treedp.release_grouped(
            data, column="v", by="k", bounds=(0, 1), bins=4, epsilon=1.0, delta=1e-6
        )


def test_sql_source_checks_its_inputs() -> None:
    import sqlite3

    with pytest.raises(InvalidTypeError, match="connection"):
        treedp.SqlSource(object(), "SELECT 1")
    with pytest.raises(InvalidTypeError, match="'sql'"):
        treedp.SqlSource(sqlite3.connect(":memory:"), 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="'sql'"):
        treedp.SqlSource(sqlite3.connect(":memory:"), " ; ")
