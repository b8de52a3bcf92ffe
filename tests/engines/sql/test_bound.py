"""Per-person bounding inside the database: the same counts as the local rule when the
selection cannot differ, the bounds kept otherwise, and a uniform sample (with a mutant)."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import Loader, loader
from treedp.api_grouped import grouped_counts
from treedp.engines.dispatch import pick_engine
from treedp.engines.grouped import GroupedJob
from treedp.engines.sql import duck, postgres, sqlite
from treedp.engines.sql.bound import selection_sql
from treedp.engines.sql.rule import Dialect, Sql, cells_sql
from treedp.exceptions import DataError
from treedp.privacy.contribution import ContributionBounds

DBS = ("duckdb", "sqlite", "postgresql")
DIALECTS = {"duckdb": duck.DIALECT, "sqlite": sqlite.DIALECT, "postgresql": postgres.DIALECT}
BINS = treedp.make_bins(bounds=(0, 4), bins=4)
COLUMNS = [("v", "double"), ("k", "text"), ("p", "bigint")]


@pytest.fixture(params=DBS)
def db(request: pytest.FixtureRequest) -> tuple[str, Loader]:
    return request.param, loader(request.param, request)


def _job(by: tuple[str, ...], keys: Any, m: int, g: int, c: int) -> GroupedJob:
    return GroupedJob("v", by, keys, "p", ContributionBounds("p", m, g, c), BINS, "error")


def _kept(dialect: Dialect, data: Any, job: GroupedJob, keys: list[str]) -> list[tuple[Any, ...]]:
    """The (person, key position, bin) rows the database keeps (for the tests only)."""
    sql = Sql(dialect)
    text = selection_sql(sql, cells_sql(sql, data, job), job, keys)
    with dialect.session(data, sql.functions):
        return dialect.run(data, text, sql.params)


def _table(rows: list[tuple[Any, ...]]) -> dict[str, np.ndarray]:
    return {
        "v": np.array([r[0] for r in rows], dtype=float),
        "k": np.array([r[1] for r in rows], dtype=object),
        "p": np.array([r[2] for r in rows]),
    }


def test_same_counts_as_local_when_nothing_is_dropped(db: tuple[str, Loader]) -> None:
    """Every person within the bounds: both rules keep every row, so the counts agree."""
    _, load = db
    rows = [(0.5, "a", 1), (1.5, "b", 1), (2.5, "a", 2), (3.5, "a", 2), (0.1, "b", 3)]
    data = load(COLUMNS, rows)
    for job in (
        _job((), ((),), 2, 2, 2),
        _job(("k",), ("a", "b"), 2, 2, 2),
        _job(("k",), ("a", "b"), 3, 2, 2),
    ):
        src = treedp.InsecureSeededSource(5)
        got = grouped_counts(data, job, src)
        want = grouped_counts(_table(rows), job, treedp.InsecureSeededSource(5))
        assert got == want
        assert int(np.asarray(got.counts).sum()) == len(rows)


@pytest.mark.parametrize(("m", "g", "c"), [(3, 3, 3), (4, 2, 1), (2, 2, 2), (5, 1, 5), (6, 2, 3)])
def test_each_person_keeps_at_most_the_bounds(
    db: tuple[str, Loader], m: int, g: int, c: int
) -> None:
    name, load = db
    rng = np.random.default_rng(7)
    rows = [
        (float(rng.integers(0, 4)) + 0.5, "abc"[int(rng.integers(0, 3))], int(rng.integers(0, 6)))
        for _ in range(200)
    ]
    data = load(COLUMNS, rows)
    job = _job(("k",), ("a", "b", "c"), m, g, c)
    kept = _kept(DIALECTS[name], data, job, ["0f" * 16, "1e" * 16, "2d" * 16])
    per_person = Counter(int(p) for p, _, _ in kept)
    per_group = Counter((int(p), int(k)) for p, k, _ in kept)
    groups = Counter(int(p) for p, _ in per_group)
    assert max(per_person.values()) <= m and max(per_group.values()) <= c
    assert max(groups.values()) <= g
    # and no fewer than the bounds allow: with every group allowed, each person keeps
    # min(m, sum over groups of min(rows, c)) rows, whatever the sample
    have = Counter((p, "abc".index(k)) for _, k, p in rows)
    if g >= 3:
        for p in {q for q, _ in have}:
            want = min(m, sum(min(n, c) for (q, _), n in have.items() if q == p))
            assert per_person[p] == want
        counts = grouped_counts(data, job, treedp.InsecureSeededSource(1)).counts
        assert int(np.asarray(counts).sum()) == len(kept)


@pytest.mark.slow
@pytest.mark.parametrize("name", DBS)
def test_the_sample_is_uniform_and_a_mutant_is_caught(
    name: str, request: pytest.FixtureRequest
) -> None:
    """Each of P persons has rows in bins (0, 0, 3) and keeps one: the exact law keeps a
    bin-0 row with probability 2/3 (a uniform 1-of-3 sample), independently per person. The
    tolerance is 4.5 binomial standard deviations (false failure below 1e-5). A variant that
    forgets the occurrence number ``j`` (identical rows hash alike) keeps bin 0 with
    probability 1/2, 7 standard deviations away: the test catches it."""
    load = loader(name, request)
    n_people = 400
    rows = [(v, "a", p) for p in range(n_people) for v in (0.5, 0.5, 3.5)]
    data = load(COLUMNS, rows)
    job = _job((), ((),), 1, 1, 1)
    dialect = DIALECTS[name]
    sd = math.sqrt(n_people * (2 / 3) * (1 / 3))

    def share_of_bin0(d: Dialect, seed: int) -> float:
        keys = [f"{seed:02x}" * 16, f"{seed + 1:02x}" * 16, f"{seed + 2:02x}" * 16]
        kept = _kept(d, data, job, keys)
        assert len(kept) == n_people
        return sum(1 for _, _, b in kept if int(b) == 0)

    assert abs(share_of_bin0(dialect, 3) - n_people * 2 / 3) < 4.5 * sd
    assert dialect.keyed_hash is not None
    orig = dialect.keyed_hash
    mutant = dataclasses.replace(
        dialect, keyed_hash=lambda sql, key, cols: orig(sql, key, [c for c in cols if c != "j"])
    )
    assert abs(share_of_bin0(mutant, 3) - n_people * 2 / 3) > 4.5 * sd


def test_missing_person_id_refused_or_dropped_nothing_charged(db: tuple[str, Loader]) -> None:
    _, load = db
    data = load(COLUMNS, [(0.5, "a", 1), (1.5, "a", None), (2.5, "a", 2)])
    acc = treedp.Accountant(treedp.PureDP(10.0))
    with pytest.raises(DataError):
        treedp.release_cdf(
            data,
            column="v",
            bounds=(0, 4),
            bins=4,
            epsilon=1.0,
            privacy_unit=treedp.PrivacyUnit("p", max_contributions=1),
            accountant=acc,
        )
    assert acc.spent == treedp.PureDP(0.0)
    job = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 1, 1, 1), BINS, "drop")
    got = grouped_counts(data, job, treedp.InsecureSeededSource(1))
    assert int(np.asarray(got.counts).sum()) == 2


def test_the_database_engine_counts_it(db: tuple[str, Loader]) -> None:
    name, load = db
    data = load(COLUMNS, [(0.5, "a", 1)])
    assert pick_engine(data).name == name
