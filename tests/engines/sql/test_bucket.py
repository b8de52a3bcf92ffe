"""PostgreSQL's explicit edges by ``width_bucket`` (``engines/sql/bucket.py``), numbers and
datetimes, and DuckDB's equal-width bins under a privacy unit by the fast rule: the local
rule on every edge and its neighbours, ±0, ±inf, NaN and NULL, and mutants caught."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import loader
from tests.engines.sql.test_fast import LAYOUTS, _values, _want
from tests.engines.sql.test_search import EDGES
from tests.engines.sql.test_search import _values as search_values
from tests.engines.sql.test_ticks import SEARCHED, TYPES, _connect, _load, _texts, edge_values
from treedp.api_grouped import grouped_counts
from treedp.engines.dispatch import count_source
from treedp.engines.grouped import GroupedJob
from treedp.engines.local import count_chunk
from treedp.engines.sql import bucket, duck, fast, postgres
from treedp.engines.sql.rule import Sql, cells_sql
from treedp.privacy.contribution import ContributionBounds

pytest.importorskip("psycopg")

#: the ``EDGES`` of test_search, and one and two bins (no search, or predicates only)
PG_EDGES = {**EDGES, "one": [0.0, 1.0], "two": [-1.0, 0.0, 1.0]}


def _pg_numbers(request: pytest.FixtureRequest, name: str) -> tuple[Any, Any, np.ndarray]:
    bins = treedp.make_bins(edges=PG_EDGES[name])
    values = search_values(bins.edges)
    rows = [(float(v),) for v in values] + [(None,)]
    data = loader("postgresql", request)([("v", "double")], rows)
    return data, bins, np.append(values, np.nan)


@pytest.mark.parametrize("name", sorted(PG_EDGES))
def test_width_bucket_equals_the_local_rule(request: pytest.FixtureRequest, name: str) -> None:
    data, bins, values = _pg_numbers(request, name)
    sql = Sql(postgres.DIALECT)
    job = GroupedJob("v", (), ((),), None, ContributionBounds(None, 1, 1, 1), bins, "drop")
    text = cells_sql(sql, data, job)
    assert ("width_bucket" in text) == (bins.n_bins > 1)  # the rule under test
    got = count_source(data, column="v", bins=bins, nan="drop")
    assert got == count_chunk(values, bins, "drop")
    assert got.dropped == 2  # NaN and NULL


def test_without_the_predicates_the_same_bins(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bare ``width_bucket`` (the previous rule, still timed by the benchmark) clamps
    the same way: the same counts."""
    monkeypatch.setattr(bucket, "_PREDICATES", False)
    for name in ("five", "huge", "1000-uneven"):
        data, bins, values = _pg_numbers(request, name)
        assert count_source(data, column="v", bins=bins, nan="drop") == count_chunk(
            values, bins, "drop"
        )


def test_a_shifted_width_bucket_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inner edges one double lower (a mutant): the edge values count differently, on every
    set of at least three bins."""
    monkeypatch.setattr(bucket, "_SHIFT", -1)
    for name in sorted(set(PG_EDGES) - {"one"}):
        data, bins, values = _pg_numbers(request, name)
        got = count_source(data, column="v", bins=bins, nan="drop")
        assert got != count_chunk(values, bins, "drop"), name


PG_TYPES = sorted(t for t, (_, aware) in TYPES["postgresql"].items() if not aware)


def _pg_ticks(
    request: pytest.FixtureRequest, sql_type: str, name: str
) -> tuple[Any, Any, list[int]]:
    unit = TYPES["postgresql"][sql_type][0]
    bins = SEARCHED[name]
    values = edge_values(bins, unit)
    lo, hi = np.datetime64("1900-01-01", unit), np.datetime64("2200-01-01", unit)
    values = values[(values > lo) & (values < hi)]
    texts: list[str | None] = [*_texts(values, False), "infinity", "-infinity", None]
    data = _load(_connect("postgresql", request), "postgresql", sql_type, texts)
    want = count_chunk(values, bins).counts.copy()
    want[0], want[-1] = want[0] + 1, want[-1] + 1
    return data, bins, want.tolist()


@pytest.mark.parametrize("sql_type", PG_TYPES)
@pytest.mark.parametrize("name", sorted(SEARCHED))
def test_datetime_width_bucket_equals_the_local_rule(
    request: pytest.FixtureRequest, sql_type: str, name: str
) -> None:
    """Explicit datetime edges: every edge, the ticks either side, the midpoints, ±infinity
    and NULL, as the local rule (no ``CASE`` tree left in the query)."""
    data, bins, want = _pg_ticks(request, sql_type, name)
    sql = Sql(postgres.DIALECT)
    job = GroupedJob("v", (), ((),), None, ContributionBounds(None, 1, 1, 1), bins, "drop")
    text = cells_sql(sql, data, job)
    assert "width_bucket" in text and "CASE WHEN x < CAST" not in text
    got = count_source(data, column="v", bins=bins, nan="drop")
    assert got.counts.tolist() == want and got.dropped == 1


@pytest.mark.parametrize("sql_type", PG_TYPES)
def test_a_shifted_tick_bucket_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, sql_type: str
) -> None:
    monkeypatch.setattr(bucket, "_SHIFT", -1)
    for name in sorted(SEARCHED):
        data, bins, want = _pg_ticks(request, sql_type, name)
        assert count_source(data, column="v", bins=bins, nan="drop").counts.tolist() != want


def _unit_counts(request: pytest.FixtureRequest, bins: Any, values: list[Any]) -> Any:
    """The counts of one row per person (bounds of one: nothing dropped) in DuckDB."""
    rows = [(v, i) for i, v in enumerate(values)]
    data = loader("duckdb", request)([("v", "double"), ("p", "bigint")], rows)
    job = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 1, 1, 1), bins, "drop")
    assert "__treedp_k" in cells_sql(Sql(duck.DIALECT), data, job)  # the fast rule
    return grouped_counts(data, job).counts[0].tolist()


@pytest.mark.parametrize(("bounds", "n", "form"), LAYOUTS)
def test_privacy_unit_equal_width_by_the_fast_rule(
    request: pytest.FixtureRequest, bounds: Any, n: Any, form: str | None
) -> None:
    bins = treedp.make_bins(bounds=bounds, bins=n)
    values = _values(bins)
    assert _unit_counts(request, bins, values) == _want(bins, values).counts.tolist()


def test_privacy_unit_fast_rule_mutant_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fast, "_GE", ">")
    caught = 0
    for bounds, n, _ in LAYOUTS[:6]:
        bins = treedp.make_bins(bounds=bounds, bins=n)
        values = _values(bins)
        caught += _unit_counts(request, bins, values) != _want(bins, values).counts.tolist()
    assert caught > 0
