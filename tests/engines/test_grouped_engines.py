"""Grouped counting and per-person bounding on every engine: numpy / pandas / polars / pyarrow
in memory, files (Parquet, CSV, Arrow, directories), Spark ``local[2]`` and Dask.

* Seed-free inputs (no privacy unit, or bounds that cannot bind): identical ``(G × B)`` counts.
* Binding bounds: every engine keeps exactly the bounded number of rows per person and per
  (person, group) — the value column holds the person's id, so the counts of integer bins are
  the kept rows per person and group.
* Sampling is uniform (files engine, through the spill; chi-square at ``ALPHA``).
* Bad input gets the same error class on every engine, before any value is read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp.api_grouped import grouped_counts, release_grouped
from treedp.engines.grouped import GroupedJob
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.privacy.contribution import ContributionBounds

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

KEYS = ("a", "b", "c", "e")  # "e" has no rows; "z" rows are not public


def _table(n: int = 4000, persons: int = 700, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(TEST_SEED + seed)
    return {
        "v": np.round(rng.uniform(-5, 105, n), 3),
        "g": rng.choice(np.array(["a", "b", "c", "z"], dtype=object), n),
        "p": rng.integers(0, persons, n),
    }


def _job(unit: str | None, bounds: ContributionBounds, bins: Any, value: str = "v") -> GroupedJob:
    return GroupedJob(value, ("g",), KEYS, unit, bounds, bins, "error")


def _files(tmp: Path, cols: dict[str, np.ndarray]) -> dict[str, Any]:
    table = pa.table({k: (v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    import pyarrow.csv as pacsv
    import pyarrow.feather as pf

    pq.write_table(table, tmp / "t.parquet", row_group_size=900)
    pacsv.write_csv(table, tmp / "t.csv")
    pf.write_feather(table, tmp / "t.arrow", chunksize=700)
    (tmp / "dir").mkdir()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), tmp / "dir" / "part-0.parquet")
    pq.write_table(table.slice(half), tmp / "dir" / "part-1.parquet")
    return {
        "parquet": str(tmp / "t.parquet"),
        "csv": str(tmp / "t.csv"),
        "arrow": str(tmp / "t.arrow"),
        "directory": str(tmp / "dir"),
        "glob": str(tmp / "dir" / "*.parquet"),
        "pyarrow-table": table,
    }


def _memory_forms(cols: dict[str, np.ndarray]) -> dict[str, Any]:
    pl = pytest.importorskip("polars")
    frame = pd.DataFrame(cols)
    return {"numpy": cols, "pandas": frame, "polars": pl.from_pandas(frame)}


def _all_forms(tmp: Path, cols: dict[str, np.ndarray]) -> dict[str, Any]:
    forms = _memory_forms(cols)
    forms.update(_files(tmp, cols))
    import pyarrow.dataset as ds

    forms["pyarrow-dataset"] = ds.dataset(forms["parquet"])
    return forms


@pytest.mark.parametrize("unit", [None, "p"])
def test_seed_free_counts_agree_in_memory_and_on_files(tmp_path: Path, unit: str | None) -> None:
    cols = _table()
    bins = make_bins(bounds=(0, 100), bins=37)
    # with a unit: bounds no person reaches (at most 30 rows each here), so nothing is sampled
    bounds = (
        ContributionBounds(None, 1, 1, 1)
        if unit is None
        else ContributionBounds.from_parameters("p", 1000)
    )
    job = _job(unit, bounds, bins)
    expected = grouped_counts(cols, job, InsecureSeededSource(1))
    assert expected.counts.sum() == int(np.isin(cols["g"], KEYS).sum())
    for name, form in _all_forms(tmp_path, cols).items():
        got = grouped_counts(form, job, InsecureSeededSource(2))
        assert np.array_equal(got.counts, expected.counts), name


def _expected_kept(rows: int, groups: int, b: ContributionBounds) -> int:
    per_group = min(rows, b.max_contributions_per_group)
    return min(b.max_contributions, min(groups, b.max_groups) * per_group)


def _per_person_table(persons: int, rows: int, groups: int) -> dict[str, np.ndarray]:
    """Each person has ``rows`` rows in each of ``groups`` groups; the value is the person id."""
    p = np.repeat(np.arange(persons), rows * groups)
    g = np.tile(np.repeat(np.array(KEYS[:groups], dtype=object), rows), persons)
    order = np.random.default_rng(TEST_SEED + 7).permutation(p.size)  # rows in no order
    return {"v": p[order].astype(np.int64), "g": g[order], "p": p[order]}


def _check_binding(counts: np.ndarray, persons: int, rows: int, groups: int, b: Any) -> None:
    per_pair = counts[:, :persons]  # counts[key, person]: kept rows of the person in the key
    assert (per_pair <= b.max_contributions_per_group).all()
    assert ((per_pair > 0).sum(axis=0) <= b.max_groups).all()
    assert (per_pair.sum(axis=0) == _expected_kept(rows, groups, b)).all()


BINDING = [(3, None, None), (4, 2, 1), (5, 2, 2), (None, 1, 2)]


@pytest.mark.parametrize(("m", "g", "c"), BINDING)
def test_binding_bounds_keep_exactly_the_bounded_rows_in_memory_and_files(
    tmp_path: Path, m: Any, g: Any, c: Any
) -> None:
    persons, rows, groups = 60, 3, 3
    cols = _per_person_table(persons, rows, groups)
    b = ContributionBounds.from_parameters("p", m, g, c)
    bins = make_bins(bounds=(0, persons - 1), bins="integers")
    job = _job("p", b, bins)
    forms = _memory_forms(cols)
    forms.update(_files(tmp_path, cols))
    for name, form in forms.items():
        got = grouped_counts(form, job, InsecureSeededSource(TEST_SEED))
        _check_binding(got.counts, persons, rows, groups, b)
        assert got.counts.sum() == persons * _expected_kept(rows, groups, b), name


def test_sampling_through_the_spill_is_uniform(tmp_path: Path) -> None:
    """Each person holds 4 rows (values 0..3) in one group and keeps 1: the kept value is
    uniform over the 4, so the counts over persons are Multinomial(persons, 1/4 each)."""
    persons = 4000
    p = np.repeat(np.arange(persons), 4)
    v = np.tile(np.arange(4), persons)
    order = np.random.default_rng(TEST_SEED + 8).permutation(p.size)
    table = pa.table({"v": v[order], "g": ["a"] * p.size, "p": p[order]})
    pq.write_table(table, tmp_path / "u.parquet", row_group_size=5000)
    job = GroupedJob(
        "v",
        ("g",),
        ("a",),
        "p",
        ContributionBounds.from_parameters("p", 1),
        make_bins(bounds=(0, 3), bins="integers"),
        "error",
    )
    got = grouped_counts(str(tmp_path / "u.parquet"), job, InsecureSeededSource(TEST_SEED))
    observed = got.counts[0]
    assert observed.sum() == persons
    assert stats.chisquare(observed).pvalue > ALPHA


def test_files_without_a_seed_use_fresh_randomness(tmp_path: Path) -> None:
    cols = _per_person_table(40, 3, 2)
    b = ContributionBounds.from_parameters("p", 2)
    job = _job("p", b, make_bins(bounds=(0, 39), bins="integers"))
    path = _files(tmp_path, cols)["parquet"]
    a = grouped_counts(path, job).counts
    _check_binding(a, 40, 3, 2, b)


# ---------------------------------------------------------------------- bad input
def _bad_calls() -> list[tuple[dict[str, Any], type[Exception]]]:
    ok = {"column": "v", "by": "g", "keys": list(KEYS), "privacy_unit": "p"}
    return [
        ({**ok, "by": "nope"}, InvalidParameterError),
        ({**ok, "privacy_unit": "nope"}, InvalidParameterError),
        ({**ok, "column": "nope"}, InvalidParameterError),
        ({**ok, "keys": ["a", None]}, InvalidParameterError),
        ({**ok, "keys": ["a", "a"]}, InvalidParameterError),
        ({**ok, "max_contributions": 0}, InvalidParameterError),
        ({**ok, "max_contributions": 1.5}, InvalidTypeError),
        ({**ok, "keys": None}, InvalidParameterError),  # no keys, no delta
    ]


class _Unreadable(dict):  # type: ignore[type-arg]
    """A table whose values may not be read: the checks must come first."""

    def __getitem__(self, key: Any) -> Any:
        raise AssertionError("a value was read before the checks")


def test_bad_input_is_refused_before_any_value_is_read(tmp_path: Path) -> None:
    cols = _table(200)
    forms: dict[str, Any] = {"mapping": _Unreadable(cols)}
    forms.update({k: v for k, v in _files(tmp_path, cols).items() if k != "pyarrow-table"})
    for name, form in forms.items():
        for kwargs, error in _bad_calls():
            kwargs.setdefault("max_contributions", 2)
            with pytest.raises(error) as info:
                release_grouped(form, epsilon=1.0, bounds=(0, 100), bins=8, **kwargs)
            assert "200" not in str(info.value), (name, kwargs)


def test_missing_keys_and_ids_follow_the_nan_policy_on_files(tmp_path: Path) -> None:
    cols = _table(300)
    cols["g"] = cols["g"].copy()
    cols["g"][5] = None
    paths = _files(tmp_path, cols)
    job = _job(None, ContributionBounds(None, 1, 1, 1), make_bins(bounds=(0, 100), bins=8))
    for name in ("parquet", "csv", "arrow"):
        with pytest.raises(DataError) as info:
            grouped_counts(paths[name], job)
        assert "300" not in str(info.value)
    dropped = GroupedJob("v", ("g",), KEYS, None, job.bounds, job.bins, "drop")
    expected = grouped_counts(cols, dropped)
    for name in ("parquet", "csv", "arrow"):
        assert np.array_equal(grouped_counts(paths[name], dropped).counts, expected.counts)


# ---------------------------------------------------------------------- Spark and Dask
def _spark_frame(spark: Any, cols: dict[str, np.ndarray]) -> Any:
    rows = list(zip(cols["v"].tolist(), cols["g"].tolist(), cols["p"].tolist(), strict=True))
    kind = "double" if cols["v"].dtype.kind == "f" else "long"
    return spark.createDataFrame(rows, f"v {kind}, g string, p long")


@pytest.mark.slow
def test_spark_conformance_and_binding_bounds(spark: Any) -> None:
    cols = _table(3000)
    frame = _spark_frame(spark, cols)
    bins = make_bins(bounds=(0, 100), bins=37)
    for bounds, unit in [
        (ContributionBounds(None, 1, 1, 1), None),
        (ContributionBounds.from_parameters("p", 1000), "p"),
    ]:
        job = _job(unit, bounds, bins)
        expected = grouped_counts(cols, job, InsecureSeededSource(1))
        got = grouped_counts(frame, job, InsecureSeededSource(2))
        assert np.array_equal(got.counts, expected.counts)
    persons, rows, groups = 40, 3, 3
    data = _per_person_table(persons, rows, groups)
    frame = _spark_frame(spark, data).repartition(3)
    pbins = make_bins(bounds=(0, persons - 1), bins="integers")
    from treedp.engines.spark import count_grouped_spark

    # the window method: steps c and g, then g and m, then m alone (behind the prefilter);
    # the partition method: the in-memory rule
    plan = [
        ((4, 2, 1), "window"),
        ((None, 1, 2), "window"),
        ((3, None, None), "window"),
        ((5, 2, 2), "partition"),
    ]
    for (m, g, c), method in plan:
        b = ContributionBounds.from_parameters("p", m, g, c)
        got = count_grouped_spark(
            frame, _job("p", b, pbins), InsecureSeededSource(TEST_SEED), method=method
        )
        _check_binding(got.counts, persons, rows, groups, b)
    # missing keys / ids under nan="error": refused by the driver, from the kernel's tallies
    holes = spark.createDataFrame(
        [(1.0, "a", 1), (2.0, None, 2), (3.0, "b", None)], "v double, g string, p long"
    )
    b = ContributionBounds.from_parameters("p", 2)
    for unit, what in ((None, "missing keys"), ("p", "missing")):
        job = _job(unit, b if unit else ContributionBounds(None, 1, 1, 1), pbins)
        with pytest.raises(DataError, match=what):
            grouped_counts(holes, job, InsecureSeededSource(1))
    with pytest.raises(InvalidParameterError):
        release_grouped(
            frame, column="v", by="nope", keys=list(KEYS), epsilon=1.0, bins=4, bounds=(0, 1)
        )


@pytest.mark.slow
def test_dask_conformance_and_binding_bounds(dask_client: Any) -> None:
    import dask.dataframe as dd

    cols = _table(3000)
    frame = dd.from_pandas(pd.DataFrame(cols), npartitions=4)
    bins = make_bins(bounds=(0, 100), bins=37)
    for bounds, unit in [
        (ContributionBounds(None, 1, 1, 1), None),
        (ContributionBounds.from_parameters("p", 1000), "p"),
    ]:
        job = _job(unit, bounds, bins)
        expected = grouped_counts(cols, job, InsecureSeededSource(1))
        got = grouped_counts(frame, job, InsecureSeededSource(2))
        assert np.array_equal(got.counts, expected.counts)
    persons, rows, groups = 40, 3, 3
    data = _per_person_table(persons, rows, groups)
    frame = dd.from_pandas(pd.DataFrame(data), npartitions=3)
    pbins = make_bins(bounds=(0, persons - 1), bins="integers")
    for m, g, c in BINDING:
        b = ContributionBounds.from_parameters("p", m, g, c)
        got = grouped_counts(frame, _job("p", b, pbins), InsecureSeededSource(TEST_SEED))
        _check_binding(got.counts, persons, rows, groups, b)
    with pytest.raises(InvalidParameterError):
        release_grouped(
            frame,
            column="v",
            by="g",
            keys=list(KEYS),
            privacy_unit="nope",
            max_contributions=1,
            epsilon=1.0,
            bins=4,
            bounds=(0, 1),
        )
