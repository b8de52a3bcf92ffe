"""The one-GROUP-BY rule of equal-width bins (``engines/sql/fast.py``) is the local rule, bit
for bit, on every layout treedp builds (DuckDB and PostgreSQL), and a mutant is caught."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import loader
from treedp.domain import Bins
from treedp.engines.dispatch import count_source
from treedp.engines.local import count_chunk
from treedp.engines.sql import fast

_MAX = 1.7976931348623157e308

#: (bounds, bins) and the edge form the plan must take: the awkward ones of each form.
LAYOUTS = [
    ((0, 100), 100, "step"), ((0, 99), 100, "lerp"), ((-3.7, 11.1), 37, "lerp"),
    ((1 / 3, 2 / 3), 12345, "lerp"), ((0, 1e-310), 4, "lerp"), ((-1e-300, 1e-300), 6, None),
    ((0.1, 0.7), 3, "step"),
    ((0, 1), 1024, "step"), ((-2, 2), 4096, "step"), ((0, 1), 1, "step"),
    ((0, 5e-323), 10, "step"), ((0, 1.7e308), 4, "step"), ((-1.7e308, 0), 4, "step"),
    ((-0.0, 3.0), 3, "step"), ((1e15, 1e15 + 7), 7, "step"), ((0, 10), "integers", "step"),
    ((-1e308, 1e308), 8, "interp"), ((-_MAX, _MAX), 7, "interp"), ((-_MAX, 1e300), 5, None),
    ((0, 1), 10, None), ((0, 1e6), 10, None), ((-2, 2), 1024, None),
]  # fmt: skip


def _bins(bounds: Any, n: Any) -> Bins:
    return treedp.make_bins(bounds=bounds, bins=n)


def _values(bins: Bins) -> list[float | None]:
    """Every edge and its neighbouring doubles, ±0, ±inf, NaN, NULL, values far outside the
    bounds, the smallest subnormals and spread values."""
    e = bins.edges
    with np.errstate(all="ignore"):
        near = [e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf)]
        lo, hi = float(e[0]), float(e[-1])
        spread = np.random.default_rng(2).uniform(0, 1, 2000) * (hi / 2 - lo / 2) * 2 + lo
    extra = [-math.inf, math.inf, 1e308, -1e308, _MAX, -_MAX, 0.0, -0.0, 5e-324, -5e-324]
    out: list[float | None] = [float(v) for v in np.concatenate([*near, extra, spread])]
    return [*out, math.nan, None, None]


def _want(bins: Bins, values: list[float | None]) -> Any:
    arr = np.array([math.nan if v is None else v for v in values], dtype=np.float64)
    return count_chunk(arr, bins, "drop")


@pytest.mark.parametrize(("bounds", "n", "form"), LAYOUTS)
def test_every_layout_has_a_plan(bounds: Any, n: Any, form: str | None) -> None:
    plan = fast.fast_plan(_bins(bounds, n))
    assert plan is not None
    if form is not None:
        assert plan.edge == form


def test_random_layouts_all_have_a_plan() -> None:
    """Bounds of every scale (seeded): each make_bins layout gets a plan without a list."""
    rng = np.random.default_rng(7)
    for i in range(1500):
        scale = 10.0 ** rng.uniform(-300, 300) if i % 3 else float(rng.uniform(0, _MAX))
        lo = float(rng.uniform(-1, 1) * scale)
        hi = lo + float(rng.uniform(1e-6, 2) * scale) if i % 3 else float(rng.uniform(0, _MAX))
        n = int(rng.choice([1, 2, 3, 7, 10, 100, 1000, 1024, 12345]))
        try:
            bins = _bins((lo, hi), n)
        except treedp.exceptions.InvalidParameterError:
            continue  # too many bins for the float resolution of the bounds
        plan = fast.fast_plan(bins)
        assert plan is not None and plan.edge != "list", (lo, hi, n)


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
@pytest.mark.parametrize(("bounds", "n", "form"), LAYOUTS)
def test_fast_rule_equals_the_local_rule(
    request: pytest.FixtureRequest, kind: str, bounds: Any, n: Any, form: str | None
) -> None:
    bins = _bins(bounds, n)
    values = _values(bins)
    data = loader(kind, request)([("v", "double")], [(v,) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") == _want(bins, values)


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_equal_width_edges_of_no_formula_use_the_list(
    request: pytest.FixtureRequest, kind: str
) -> None:
    """Equal-width edges given explicitly, a few moved by one double: no formula makes
    them, so the edge is read from the list; still the local rule."""
    edges = np.linspace(0.0, 1.0, 65)
    edges[[3, 17, 40]] = np.nextafter(edges[[3, 17, 40]], np.inf)
    bins = Bins(edges, equal_width=True)
    plan = fast.fast_plan(bins)
    assert plan is not None and plan.edge == "list"
    values = _values(bins)
    data = loader(kind, request)([("v", "double")], [(v,) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") == _want(bins, values)


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
@pytest.mark.parametrize(("attr", "mutant"), [("_GE", ">"), ("_HALF", 0.0)])
def test_a_mutant_rule_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str, attr: str,
    mutant: Any,
) -> None:  # fmt: skip
    """``>`` for ``>=``, or no half shift: the same values count differently on some layout
    (so the conformance test above can fail)."""
    load = loader(kind, request)
    monkeypatch.setattr(fast, attr, mutant)
    caught = 0
    for bounds, n, _ in LAYOUTS[:6]:
        bins = _bins(bounds, n)
        values = _values(bins)
        data = load([("v", "double")], [(v,) for v in values])
        caught += count_source(data, column="v", bins=bins, nan="drop") != _want(bins, values)
    assert caught > 0


def test_a_plan_that_fails_its_check_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check of ``K`` can fail: with a scale too large by one bin in eight, no plan."""
    bins = _bins((0, 100), 100)
    real = fast._y_form
    monkeypatch.setattr(fast, "_y_form", lambda lo, hi, n: (real(lo, hi, n)[0] * 1.125, 1.0,
                                                          False))  # fmt: skip
    assert fast.fast_plan(bins) is None


def test_direct_plans_only_where_floor_y_is_the_bin() -> None:
    """``b = floor(y)`` with no comparison: for ``B = 1024`` over ``(0, 1)`` and unit
    integer bins (``y`` exact), not for 1,000 bins over ``(0, 1)`` nor for 10 (where
    ``floor(y)`` just below an edge is already the next bin)."""
    direct = {
        (b, n): fast.fast_plan(_bins(b, n)).direct  # type: ignore[union-attr]
        for b, n in [((0, 1), 1024), ((0, 10), "integers"), ((0, 1), 1000), ((0, 1), 10)]
    }
    assert list(direct.values()) == [True, True, False, False]


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_a_direct_plan_without_its_check_below_the_edges_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Without the check of ``floor(y)`` just below each edge, layouts such as 10 bins over
    ``(0, 1)`` take the direct plan and the doubles just below their edges count wrong
    (so the conformance test above can fail for the direct plan)."""
    load = loader(kind, request)
    monkeypatch.setattr(fast, "_PRED", False)
    caught = 0
    for bounds, n in [((0, 1), 10), ((0, 100), 10)]:
        bins = _bins(bounds, n)
        assert fast.fast_plan(bins).direct  # type: ignore[union-attr]
        values = _values(bins)
        data = load([("v", "double")], [(v,) for v in values])
        caught += count_source(data, column="v", bins=bins, nan="drop") != _want(bins, values)
    assert caught == 2


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_the_range_test_from_e1_counts_the_same(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """The range test from ``e_1`` (before this rule started at ``e_0``) on the layouts
    whose start moved: the same counts, the local rule."""
    load = loader(kind, request)
    monkeypatch.setattr(fast, "_START", "e1")
    for bounds, n in [((0, 99), 100), ((-3.7, 11.1), 37), ((0, 1), 10), ((-_MAX, _MAX), 7)]:
        bins = _bins(bounds, n)
        plan = fast.fast_plan(bins)
        assert plan is not None and not plan.wide
        values = _values(bins)
        data = load([("v", "double")], [(v,) for v in values])
        assert count_source(data, column="v", bins=bins, nan="drop") == _want(bins, values)


def test_the_range_test_starts_at_e0_unless_postgresql_could_underflow() -> None:
    """DuckDB (IEEE results) tests ``x >= e_0``; PostgreSQL too, unless one ulp above
    ``e_0`` times ``S`` rounds to zero (it raises there): then ``x >= e_1``."""
    from treedp.engines.sql.duck import DIALECT as DUCK
    from treedp.engines.sql.postgres import DIALECT as PG
    from treedp.engines.sql.rule import Sql

    for bounds, n, pg_start in [((0, 100), 100, 0.0), ((0, 1e6), 10, 1e5)]:
        bins = _bins(bounds, n)
        plan = fast.fast_plan(bins)
        assert plan is not None and plan.wide and plan.start == pg_start
        duck = Sql(DUCK)
        _, k = fast.plan_bins(duck, plan, "x", bins.edges)
        assert "x >= CAST('0.0' AS DOUBLE) AND" in k
        pg = Sql(PG)
        fast.plan_bins(pg, plan, "x", bins.edges)
        assert pg_start in pg.params


def test_postgresql_raises_without_the_underflow_guard(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard can fail: starting PostgreSQL's range test at ``e_0 = 0`` with ``S`` below
    one, the row ``5e-324`` underflows ``y`` and the server raises."""
    load = loader("postgresql", request)
    bins = _bins((0, 1e6), 10)
    data = load([("v", "double")], [(5e-324,), (0.5,)])
    assert count_source(data, column="v", bins=bins).counts[0] == 2
    monkeypatch.setattr(fast, "_from_lo", lambda plan: True)
    with pytest.raises(treedp.exceptions.InvalidParameterError):
        count_source(data, column="v", bins=bins)


def test_k_must_be_j_minus_one_at_every_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    """``K(e_j) = j`` at one inner edge (``y`` half a bin high there) is refused: a row
    just below that edge could take ``k = j`` and land one bin high."""
    bins = _bins((-3.7, 11.1), 37)
    plan = fast.fast_plan(bins)
    assert plan is not None and not plan.direct
    real = fast._y
    bump = bins.edges[20]
    monkeypatch.setattr(fast, "_y", lambda p, x: real(p, x) + 0.6 * (x == bump))
    assert not fast._k_ok(plan, bins.edges)


def _queries(dialect: Any, data: Any, bins: Bins) -> list[str]:
    """The counting queries ``count_sql`` sends for ``bins`` (captured, then run)."""
    from treedp.engines.sql.rule import count_sql

    texts: list[str] = []

    def run(d: Any, text: str, params: list[Any]) -> Any:
        texts.append(text)
        return dialect.run(d, text, params)

    count_sql(dataclasses.replace(dialect, run=run), data, "v", bins, "drop")
    return texts


def test_duckdb_direct_key_groups_by_a_perfect_hash() -> None:
    """The direct plan's ``BIGINT`` key (missing as ``MISSING_K``) lets DuckDB bound its
    range from the table's statistics and group by a perfect hash, as its own ``floor(v·B)``
    ``GROUP BY`` does; the double key of before did not (so the check can fail). A speed
    check, not a privacy one: a later DuckDB may plan differently."""
    duckdb = pytest.importorskip("duckdb")
    from treedp.engines.sql.duck import DIALECT as DUCK

    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT random() AS v FROM range(100000)")

    def perfect(text: str) -> bool:
        rows = con.execute(f"EXPLAIN ANALYZE {text}").fetchall()
        return "Perfect Hash Group By" in " ".join(str(r[1]) for r in rows)

    # the installed DuckDB's own behaviour, so that another version's planner skips, not fails
    plain = "SELECT CAST(floor(v * 1024) AS BIGINT) AS b, count(*) FROM t GROUP BY b"
    if not perfect(plain):
        pytest.skip("this DuckDB plans no perfect-hash aggregate for a bounded BIGINT key")
    src = treedp.SqlSource(con, "SELECT v FROM t")
    bins = _bins((0, 1), 1024)
    assert fast.fast_plan(bins).direct  # type: ignore[union-attr]
    plans = []
    for dialect in (DUCK, dataclasses.replace(DUCK, integer_key=False)):
        (text,) = _queries(dialect, src, bins)
        plans.append(perfect(text))
    assert plans[0]
    if not perfect("SELECT floor(v * 1024) AS b, count(*) FROM t GROUP BY b"):
        assert not plans[1]  # a double key: no perfect hash in this DuckDB
    con.close()


def test_postgresql_counts_one_case_without_a_subquery(request: pytest.FixtureRequest) -> None:
    """PostgreSQL's bin is one ``CASE`` of ``x`` (``k``'s arithmetic written twice), no
    subquery for ``k``: the same counts as the subquery form (both the local rule)."""
    from treedp.engines.sql.postgres import DIALECT as PG
    from treedp.engines.sql.rule import count_sql

    load = loader("postgresql", request)
    sub = dataclasses.replace(PG, inline_bin=False)
    for bounds, n in [((0, 1), 1000), ((-3.7, 11.1), 37), ((0, 1), 1024), ((-_MAX, _MAX), 7)]:
        bins = _bins(bounds, n)
        values = _values(bins)
        data = load([("v", "double")], [(v,) for v in values])
        (text,) = _queries(PG, data, bins)
        assert " AS k " not in text
        want = _want(bins, values)
        assert count_sql(PG, data, "v", bins, "drop") == want
        assert count_sql(sub, data, "v", bins, "drop") == want


@pytest.mark.parametrize("kind", ["duckdb", "postgresql"])
def test_a_missing_code_inside_the_bins_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """``MISSING_K = 0`` (the outer query then takes ``b < 1`` as missing): bin 0's rows are
    counted as missing on a direct layout, so the conformance test above can fail there."""
    load = loader(kind, request)
    monkeypatch.setattr(fast, "MISSING_K", 0)
    bins = _bins((0, 1), 1024)
    values = _values(bins)
    data = load([("v", "double")], [(v,) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") != _want(bins, values)


@pytest.mark.parametrize(("bounds", "n"), [((0, 1), 1024), ((0, 1), 1000), ((0, 10), "integers")])
def test_duckdb_rows_with_a_privacy_unit_take_the_same_bins(
    request: pytest.FixtureRequest, bounds: Any, n: Any
) -> None:
    """With a privacy unit, DuckDB bins each row by ``k`` and ``b`` before the bounding
    (missing as ``MISSING_K`` for a direct plan): every edge, its neighbours, ±inf, NaN,
    NULL and values outside the bounds, one row per person (nothing dropped by the
    bounding), count as in memory."""
    from treedp.api_grouped import grouped_counts
    from treedp.engines.grouped import GroupedJob
    from treedp.privacy.contribution import ContributionBounds

    bins = _bins(bounds, n)
    values = _values(bins)
    rows = [(v, i) for i, v in enumerate(values)]
    data = loader("duckdb", request)([("v", "double"), ("p", "bigint")], rows)
    job = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 1, 1, 1), bins, "drop")
    table = {
        "v": np.array([math.nan if v is None else v for v in values], dtype=np.float64),
        "p": np.arange(len(values)),
    }
    got = grouped_counts(data, job, treedp.InsecureSeededSource(1))
    assert got == grouped_counts(table, job, treedp.InsecureSeededSource(1))


def test_a_privacy_unit_missing_code_taken_for_a_bin_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``MISSING_K = -1`` (the per-row clamp still takes only ``b < -1`` as missing): NaN
    and NULL rows land in bin 0, and the test above fails."""
    monkeypatch.setattr(fast, "MISSING_K", -1)
    with pytest.raises(AssertionError):
        test_duckdb_rows_with_a_privacy_unit_take_the_same_bins(request, (0, 1), 1024)
