"""Per-person bounding on Dask by buckets of keyed id hashes (``engines/dask_persons.py``), on
the real two-process cluster and, where a kernel is replaced, the synchronous scheduler.

* Ids that are long strings, unicode, with pandas NA / None / NaN (missing: dropped or
  refused by the stated rule), in partitions of different column types: the same counts as
  the in-memory path when the bounds cannot bind, exactly the bounded rows per person when
  they do — and a hash that differs between column types (pandas' own) is caught splitting
  persons.
* The sampling is uniform (chi-square at ``ALPHA``) with a person's rows in several
  partitions, and fresh without a seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp.engines.grouped import GroupedJob, count_bounded
from treedp.exceptions import DataError
from treedp.privacy.contribution import ContributionBounds

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.slow

KEYS = ("a", "b", "c")


def _ids(n: int) -> list[str]:
    """Person names of the hard kinds: long, unicode, 8-byte boundaries, empty."""
    base = ["", "ü", "🙂" * 5, "x" * 150, "12345678", "N0001", "e\u0301", "é"]
    return [base[i % len(base)] + f"-{i}" * (i % 3) for i in range(n)]


def _frame(parts: list[Any]) -> Any:
    """A Dask DataFrame whose partitions are ``parts`` as they are (their dtypes may differ)."""
    import dask.dataframe as dd

    return dd.from_map(lambda p: p, parts, meta=parts[0].iloc[:0], enforce_metadata=False)


def _job(bounds: ContributionBounds, nan: str = "error", n_bins: int = 12) -> GroupedJob:
    bins = make_bins(bounds=(0, n_bins - 1), bins="integers")
    return GroupedJob("v", ("g",), KEYS, "p", bounds, bins, nan)  # type: ignore[arg-type]


def _objects(series: Any) -> np.ndarray:
    out = series.to_numpy(dtype=object)
    out[np.asarray(series.isna())] = None
    return out


def _local(table: Any, job: GroupedJob) -> np.ndarray:
    got = count_bounded(
        table["v"].to_numpy(dtype=float),
        [_objects(table["g"])],
        _objects(table["p"]),
        job,
        InsecureSeededSource(1),
    )
    return got.counts


def _text_table(n: int = 3000) -> Any:
    rng = np.random.default_rng(TEST_SEED)
    names = np.array(_ids(400), dtype=object)
    person = names[rng.integers(0, names.size, n)]
    person[rng.random(n) < 0.03] = None  # pd.NA once the column is a pandas string dtype
    person[rng.random(n) < 0.01] = np.nan
    table = pd.DataFrame(
        {
            "v": rng.integers(0, 12, n).astype(float),
            "g": rng.choice(np.array(["a", "b", "c", "z"], dtype=object), n),
            "p": person,
        }
    )
    table.loc[rng.random(n) < 0.02, "v"] = np.nan
    return table


def _mixed_text_parts(table: Any) -> list[Any]:
    """Four partitions whose id columns are object (None), string[pyarrow] (NA),
    string[python] and categories: one person's rows in several of them."""
    quarter = len(table) // 4
    parts = [table.iloc[i * quarter : (i + 1) * quarter].copy() for i in range(4)]
    parts[1]["p"] = parts[1]["p"].astype("string[pyarrow]")
    parts[2]["p"] = parts[2]["p"].astype("string[python]")
    parts[3]["p"] = parts[3]["p"].astype("category")
    return parts


def test_text_ids_with_nulls_in_mixed_partitions_count_as_in_memory(dask_client: Any) -> None:
    """Bounds that cannot bind: Dask's counts equal the in-memory ones under nan="drop"
    (None, pd.NA and NaN ids are missing: dropped); under nan="error" the in-memory error."""
    from treedp.engines.dask import count_grouped_dask

    table = _text_table()
    parts = _mixed_text_parts(table)
    loose = ContributionBounds.from_parameters("p", 10_000)
    drop = _job(loose, "drop")
    got = count_grouped_dask(_frame(parts), drop, InsecureSeededSource(2))
    assert np.array_equal(got.counts, _local(table, drop))
    assert got.dropped == len(table) - int(got.counts.sum())
    with pytest.raises(DataError) as info:
        count_grouped_dask(_frame(parts), _job(loose), InsecureSeededSource(2))
    assert not any(ch.isdigit() for ch in str(info.value))
    empty_ids = table.dropna().copy()
    empty_ids["p"] = ""  # the empty string is an id, not a missing one: one person
    seven = _job(ContributionBounds.from_parameters("p", 7))
    one = count_grouped_dask(_frame([empty_ids]), seven, InsecureSeededSource(2))
    assert int(one.counts.sum()) == 7


def _binding_table(persons: int, rows: int) -> Any:
    """Each person has ``rows`` rows in group "a"; the value is the person's number."""
    person = np.repeat(np.arange(persons), rows)
    order = np.random.default_rng(TEST_SEED + 3).permutation(person.size)
    return pd.DataFrame({"v": person[order], "g": "a", "p": person[order]})


def _int_parts(table: Any) -> list[Any]:
    """Integer ids as int64, float64 and nullable Int64 partitions (an object column of
    Python ints would reach the workers as text: Dask converts object columns to strings)."""
    third = len(table) // 3
    parts = [table.iloc[i * third : (i + 1) * third].copy() for i in range(3)]
    parts[1]["p"] = parts[1]["p"].astype(float)
    parts[2]["p"] = parts[2]["p"].astype("Int64")
    return parts


def _kept_per_person(counts: np.ndarray, persons: int) -> np.ndarray:
    return counts[0, :persons]


def test_binding_bounds_never_split_a_person_across_column_types(dask_client: Any) -> None:
    from treedp.engines.dask import count_grouped_dask

    persons, rows, m = 30, 9, 4
    table = _binding_table(persons, rows)
    job = _job(ContributionBounds.from_parameters("p", m), n_bins=persons)
    for parts in (_int_parts(table), _text_parts(table)):
        got = count_grouped_dask(_frame(parts), job, InsecureSeededSource(TEST_SEED))
        assert (_kept_per_person(got.counts, persons) == m).all()


def _text_parts(table: Any) -> list[Any]:
    named = table.assign(p=[f"persön-{p}" * (1 + p % 4) for p in table["p"]])
    return _mixed_text_parts(named)


def test_a_hash_that_differs_by_column_type_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The privacy check can fail: pandas' own hash (the previous code's) gives 5 and 5.0
    different hashes, so a person whose id is int64 in one partition and float64 in another
    is split, and keeps more than ``max_contributions`` rows; the rule in use does not."""
    import dask

    from treedp.engines import dask_persons
    from treedp.engines.dask import count_grouped_dask

    persons, rows, m = 30, 9, 4
    job = _job(ContributionBounds.from_parameters("p", m), n_bins=persons)
    frame = _frame(_int_parts(_binding_table(persons, rows)))
    with dask.config.set(scheduler="sync"):
        right = count_grouped_dask(frame, job, InsecureSeededSource(TEST_SEED))
        assert (_kept_per_person(right.counts, persons) == m).all()

        def pandas_hash(column: Any, key: Any) -> np.ndarray:
            return np.asarray(pd.util.hash_pandas_object(column, index=False), dtype=np.uint64)

        monkeypatch.setattr(dask_persons, "hash_ids", pandas_hash)
        wrong = count_grouped_dask(frame, job, InsecureSeededSource(TEST_SEED))
    assert (_kept_per_person(wrong.counts, persons) > m).any()


def test_sampling_across_partitions_is_uniform(dask_client: Any) -> None:
    """Each person holds 4 rows (values 0..3), spread over partitions, and keeps 1: the kept
    value is uniform over the 4, so the counts are Multinomial(persons, 1/4 each)."""
    from treedp.engines.dask import count_grouped_dask

    persons = 4000
    p = np.repeat(np.arange(persons), 4)
    v = np.tile(np.arange(4), persons)
    order = np.random.default_rng(TEST_SEED + 8).permutation(p.size)
    table = pd.DataFrame({"v": v[order], "g": "a", "p": [f"id-{i}" for i in p[order]]})
    parts = [table.iloc[i : i + 3000] for i in range(0, len(table), 3000)]
    job = _job(ContributionBounds.from_parameters("p", 1), n_bins=4)
    got = count_grouped_dask(_frame(parts), job, InsecureSeededSource(TEST_SEED))
    observed = got.counts[0, :4]
    assert observed.sum() == persons
    assert stats.chisquare(observed).pvalue > ALPHA


def test_without_a_seed_each_run_draws_fresh_randomness(dask_client: Any) -> None:
    """The value is the row's number, so the counts are the set of kept rows: two runs with
    the operating system's randomness keep the same set with probability 15^-60; two runs with
    one seed keep the same."""
    from treedp.engines.dask import count_grouped_dask
    from treedp.noise.rng import SystemRandomSource

    persons, rows, m = 60, 6, 2
    table = _binding_table(persons, rows).assign(v=np.arange(persons * rows))
    job = _job(ContributionBounds.from_parameters("p", m), n_bins=persons * rows)
    frame = _frame(_int_parts(table))
    runs = [count_grouped_dask(frame, job, SystemRandomSource()).counts for _ in range(2)]
    for counts in runs:
        assert counts.sum() == persons * m
    assert not np.array_equal(runs[0], runs[1])
    seeded = [count_grouped_dask(frame, job, InsecureSeededSource(5)).counts for _ in range(2)]
    assert np.array_equal(seeded[0], seeded[1])


def _constant_hash(column: Any, key: Any) -> np.ndarray:
    """Every id routed to bucket 0: all persons collide."""
    return np.zeros(len(column), dtype=np.uint64)


def test_persons_colliding_in_one_bucket_are_bounded_apart(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the hash forced to a constant every row shares one bucket, yet each true person
    keeps exactly ``m`` rows (integer ids in int64, float64 and Int64 partitions; text ids in
    object, Arrow, Python-string and category partitions), and with loose bounds the counts
    equal the in-memory path's."""
    import dask

    from treedp.engines import dask_persons
    from treedp.engines.dask import count_grouped_dask

    monkeypatch.setattr(dask_persons, "hash_ids", _constant_hash)
    persons, rows, m = 30, 9, 4
    table = _binding_table(persons, rows)
    job = _job(ContributionBounds.from_parameters("p", m), n_bins=persons)
    text = _text_table()
    drop = _job(ContributionBounds.from_parameters("p", 10_000), "drop")
    with dask.config.set(scheduler="sync"):
        for parts in (_int_parts(table), _text_parts(table)):
            got = count_grouped_dask(_frame(parts), job, InsecureSeededSource(TEST_SEED))
            assert (_kept_per_person(got.counts, persons) == m).all()
        loose = count_grouped_dask(_frame(_mixed_text_parts(text)), drop, InsecureSeededSource(2))
    assert np.array_equal(loose.counts, _local(text, drop))


def _by_hash(original: Any) -> Any:
    """The mutant: ``bound_bucket`` identifying persons by their routing hash (the previous
    code's rule), through the same function."""

    def bound(job: GroupedJob, seed: int | None, dropped: list[int], *pieces: Any) -> Any:
        hashed = [[(r, r["p"]) for r, _ in piece] for piece in pieces]
        return original(job, seed, dropped, *hashed)

    return bound


def test_a_collision_does_not_exceed_the_sensitivity_and_identity_by_hash_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Neighbours: ``D`` holds person B (``m`` rows, bin 0), ``D'`` adds person A (1000 rows,
    bin 1), and A's hash collides with B's. The release's counts may differ by at most ``m``
    rows (L1, the add/remove sensitivity): exactly ``m`` here. The mutant that identifies
    persons by the hash merges A and B, keeps ``m`` of their 1,020 rows, almost all A's, and
    moves the counts by about ``2m`` — caught unless at least half of the kept rows are B's
    (probability below 10^-13 per seed; the seed is fixed)."""
    import dask

    from treedp.engines import dask_persons
    from treedp.engines.dask import count_grouped_dask

    m = 20
    b = pd.DataFrame({"v": 0.0, "g": "a", "p": np.full(m, 7, dtype=np.int64)})
    a = pd.DataFrame({"v": 1.0, "g": "a", "p": np.full(1000, 8, dtype=np.int64)})
    d, d2 = _frame([b]), _frame([b.iloc[:10], a, b.iloc[10:]])
    job = _job(ContributionBounds.from_parameters("p", m), n_bins=2)
    monkeypatch.setattr(dask_persons, "hash_ids", _constant_hash)

    def distance() -> int:
        with dask.config.set(scheduler="sync"):
            one = count_grouped_dask(d, job, InsecureSeededSource(TEST_SEED)).counts
            two = count_grouped_dask(d2, job, InsecureSeededSource(TEST_SEED)).counts
        return int(np.abs(one - two).sum())

    assert distance() == m
    monkeypatch.setattr(dask_persons, "bound_bucket", _by_hash(dask_persons.bound_bucket))
    assert distance() > m


def test_person_codes_follow_python_equality_across_piece_types() -> None:
    """A bucket's ids from pieces of different types are one person exactly when Python
    equality says so (the in-memory rule): 5, 5.0, True == 1, Decimal(5) and the Int64 5
    alike, "5" and b"5" apart, a datetime never its nanosecond integer; ids of types the hash
    does not read (tuples, all routed alike) stay distinct persons."""
    import datetime
    import decimal

    from treedp.engines.dask_persons import id_values, person_codes
    from treedp.engines.id_hash import IdHashKey, hash_ids

    stamp = pd.Timestamp("2020-01-01 00:00:00.000000001")
    series = [
        pd.Series([5, 1, 2**53 + 1]),
        pd.Series([5.0, 2.0**53]),
        pd.Series([True, decimal.Decimal(5), "5", b"5", (1, 2), (3,), (1, 2)], dtype=object),
        pd.Series(["5", "x"], dtype="string[pyarrow]"),
        pd.Series(["x", "5"], dtype="category"),
        pd.Series([5, 1], dtype="Int64"),
        pd.Series([stamp, stamp.value]),
        pd.Series([datetime.datetime(2020, 1, 1)]),
    ]
    codes = person_codes([id_values(s) for s in series])
    objects = np.concatenate([s.astype(object).to_numpy() for s in series])
    expected, _ = pd.factorize(objects)
    assert np.array_equal(codes, expected)
    assert len({codes[9], codes[10], codes[11]}) == 2  # (1, 2), (3,), (1, 2)
    tuples = np.empty(2, dtype=object)
    tuples[0], tuples[1] = (1, 2), (3,)
    key = IdHashKey((1, 2, 3, 4, 5, 6, 7, 8))
    assert len(set(hash_ids(tuples, key).tolist())) == 1  # one bucket, two persons
