"""Private key selection on every engine: numpy / pandas in memory, files (Parquet, CSV, Arrow,
a directory), Spark ``local[2]`` and Dask.

* The pre-noise selection counts (per key: distinct bounded persons, or rows without a privacy
  unit) are identical across engines whenever they are seed-free (no unit, or no person in more
  than ``max_groups`` keys), and equal to a brute-force count.
* With binding ``max_groups`` every engine keeps exactly ``min(#keys, g)`` keys per person
  (a deterministic total), which catches a mutant that forgets the cut.
* Without a privacy unit and with the same seeded source, the selected keys, the selection
  record and every noisy level agree across engines (nothing but the noise is random).
* With a privacy unit the selection is the same function (``choose_keys``) of those counts,
  called once per release, after the accountant is charged the (ε, δ) target once.
* Bad input: missing keys follow ``nan``; no message holds a count or a non-selected key.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp import grouped_stage as grouped_stage_module
from treedp.api_grouped import choose_keys, release_grouped, selection_counts
from treedp.engines.grouped import GroupedJob, KeyCounts, key_counts
from treedp.engines.keys import unique_pairs
from treedp.exceptions import DataError
from treedp.privacy.accountant import Accountant
from treedp.privacy.contribution import ContributionBounds
from treedp.privacy.measures import ApproxDP

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pd = pytest.importorskip("pandas")

BINS = make_bins(bounds=(0, 100), bins=16)
BIG = ("a", "b", "c")
RARE = tuple(f"rare{i}" for i in range(6))  # one row (one person) each: never selected


def _table(persons: int = 600, keys_per_person: int = 2, seed: int = 0) -> dict[str, np.ndarray]:
    """Each person holds ``keys_per_person`` distinct big keys (1–2 rows each) and the rare
    keys one row each (persons 0–5)."""
    rng = np.random.default_rng(TEST_SEED + seed)
    g, p, h = [], [], []
    for person in range(persons):
        held = rng.choice(len(BIG), size=keys_per_person, replace=False)
        for k in held:
            for _ in range(int(rng.integers(1, 3))):
                g.append(BIG[int(k)])
                p.append(person)
                h.append(int(k) % 2)
    for i, key in enumerate(RARE):
        g.append(key)
        p.append(i)
        h.append(0)
    n = len(g)
    return {
        "v": np.round(rng.uniform(-5, 105, n), 3),
        "g": np.array(g, dtype=object),
        "h": np.array(h, dtype=np.int64),
        "p": np.array(p, dtype=np.int64),
    }


def _brute(cols: dict[str, np.ndarray], by: tuple[str, ...], unit: str | None) -> dict[Any, int]:
    """Per key: its rows (no unit) or its distinct persons (bounds that do not bind)."""
    keys = [
        tuple(cols[b][i] for b in by) if len(by) > 1 else cols[by[0]][i]
        for i in range(len(cols["v"]))
    ]
    keys = [
        tuple(x.item() if isinstance(x, np.generic) else x for x in k)
        if isinstance(k, tuple)
        else k
        for k in keys
    ]
    if unit is None:
        return dict(Counter(keys))
    pairs = {(int(cols[unit][i]), k) for i, k in enumerate(keys)}
    return dict(Counter(k for _, k in pairs))


def _job(by: tuple[str, ...], unit: str | None, g: int = 3) -> GroupedJob:
    bounds = ContributionBounds(unit, g, g, g) if unit else ContributionBounds(None, 1, 1, 1)
    return GroupedJob("v", by, (), unit, bounds, BINS, "error")


def _files(tmp: Path, cols: dict[str, np.ndarray]) -> dict[str, Any]:
    import pyarrow.csv as pacsv
    import pyarrow.feather as pf

    table = pa.table({k: (v.tolist() if v.dtype == object else v) for k, v in cols.items()})
    pq.write_table(table, tmp / "t.parquet", row_group_size=500)
    pacsv.write_csv(table, tmp / "t.csv")
    pf.write_feather(table, tmp / "t.arrow", chunksize=400)
    (tmp / "dir").mkdir()
    half = table.num_rows // 2
    pq.write_table(table.slice(0, half), tmp / "dir" / "part-0.parquet")
    pq.write_table(table.slice(half), tmp / "dir" / "part-1.parquet")
    return {
        "parquet": str(tmp / "t.parquet"),
        "csv": str(tmp / "t.csv"),
        "arrow": str(tmp / "t.arrow"),
        "directory": str(tmp / "dir"),
    }


def _forms(tmp: Path, cols: dict[str, np.ndarray]) -> dict[str, Any]:
    return {"numpy": cols, "pandas": pd.DataFrame(cols), **_files(tmp, cols)}


def _check_cut(found: KeyCounts, cols: dict[str, np.ndarray], g: int) -> None:
    """Binding ``max_groups``: each person keeps exactly ``min(#keys, g)`` of its keys."""
    held: dict[int, set[Any]] = {}
    for person, key in zip(cols["p"].tolist(), cols["g"].tolist(), strict=True):
        held.setdefault(person, set()).add(key)
    assert int(found.counts.sum()) == sum(min(len(k), g) for k in held.values())
    holders = Counter(k for keys in held.values() for k in keys)
    surely = Counter(k for keys in held.values() if len(keys) <= g for k in keys)
    for key, count in found.as_dict().items():
        assert surely[key] <= count <= holders[key], key


# ---------------------------------------------------------------------- pre-noise counts
def test_unique_pairs_is_numpy_unique_over_columns() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for n in (0, 1, 37, 4000):
        a, b = rng.integers(-5, 20, n), rng.integers(0, 4, n)
        expected = np.unique(np.stack([a, b]), axis=1).reshape(2, -1)
        assert np.array_equal(unique_pairs(a, b), expected)


@pytest.mark.parametrize("unit", [None, "p"])
def test_selection_counts_agree_in_memory_and_on_files(tmp_path: Path, unit: str | None) -> None:
    cols = _table()
    expected = _brute(cols, ("g",), unit)
    for name, form in _forms(tmp_path, cols).items():
        found = selection_counts(form, _job(("g",), unit), InsecureSeededSource(TEST_SEED))
        assert found.as_dict() == expected, name
        assert list(found.keys) == sorted(expected), name  # the order noise is drawn in


def test_selection_counts_of_several_by_columns(tmp_path: Path) -> None:
    cols = _table(200)
    paths = _files(tmp_path, cols)
    for unit in (None, "p"):
        expected = _brute(cols, ("g", "h"), unit)
        for form in (cols, paths["parquet"], paths["directory"]):
            found = selection_counts(form, _job(("g", "h"), unit), InsecureSeededSource(1))
            assert found.as_dict() == expected


def test_binding_max_groups_cuts_every_person_and_catches_the_mutant(tmp_path: Path) -> None:
    cols = _table(300, keys_per_person=3)
    job = _job(("g",), "p", g=1)
    for name, form in _forms(tmp_path, cols).items():
        found = selection_counts(form, job, InsecureSeededSource(TEST_SEED))
        _check_cut(found, cols, 1)
        assert name  # every form checked
    # the mutant: selection counts that forget the cut to max_groups (all pairs counted)
    keep = np.ones(cols["v"].size, dtype=bool)
    mutant = key_counts([cols["g"]], keep, cols["p"], "p", 3, "error", InsecureSeededSource(1))
    with pytest.raises(AssertionError):
        _check_cut(KeyCounts.merge([mutant]), cols, 1)


def test_files_spill_the_pairs_over_many_partitions(tmp_path: Path) -> None:
    from treedp.engines.files import key_counts_files

    cols = _table(300)
    path = _files(tmp_path, cols)["parquet"]
    for partitions in (1, 7):
        found = key_counts_files(
            path, _job(("g",), "p"), InsecureSeededSource(3), partitions=partitions
        )
        assert found.as_dict() == _brute(cols, ("g",), "p")


# ---------------------------------------------------------------------- the release
def _release(form: Any, **kwargs: Any) -> Any:
    return release_grouped(
        form,
        column="v",
        by="g",
        epsilon=2.0,
        delta=1e-7,
        bounds=(0, 100),
        bins=16,
        rng=InsecureSeededSource(TEST_SEED),
        **kwargs,
    )


def _same_release(a: Any, b: Any) -> None:
    assert a.keys == b.keys
    assert a.selection == b.selection
    assert a.guarantee == b.guarantee
    for key in a.keys:
        for x, y in zip(a[key].noisy_levels, b[key].noisy_levels, strict=True):
            assert np.array_equal(x, y), key


def test_release_with_selection_agrees_in_memory_and_on_files(tmp_path: Path) -> None:
    cols = _table()
    reference = _release(cols)
    assert set(reference.keys) == set(BIG)  # the rare keys (one person each) are not selected
    assert isinstance(reference.guarantee, ApproxDP) and reference.guarantee.delta == 1e-7
    assert reference.guarantee.epsilon <= 2.0
    for name, form in _forms(tmp_path, cols).items():
        _same_release(_release(form), reference)
        assert name


def test_selection_with_a_unit_is_choose_keys_of_the_engine_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cols = _table()
    calls: list[tuple[dict[Any, int], tuple[Any, ...]]] = []

    def spy(counts: KeyCounts, *args: Any) -> Any:
        out = choose_keys(counts, *args)
        calls.append((counts.as_dict(), out[0]))
        return out

    monkeypatch.setattr(grouped_stage_module, "choose_keys", spy)
    expected = _brute(cols, ("g",), "p")
    for name, form in _forms(tmp_path, cols).items():
        accountant = Accountant(ApproxDP(10.0, 1e-3))
        gr = _release(
            form,
            privacy_unit="p",
            max_groups=3,
            max_contributions_per_group=2,
            accountant=accountant,
        )
        counts, chosen = calls.pop()
        assert not calls, name  # one selection per release
        assert counts == expected, name
        assert gr.keys == chosen == BIG, name
        history = accountant.history
        assert len(history) == 1 and history[0].record.measure == ApproxDP(2.0, 1e-7), name
        assert isinstance(gr.guarantee, ApproxDP) and gr.guarantee.epsilon <= 2.0


def test_missing_keys_follow_the_nan_policy_and_messages_hold_no_data(tmp_path: Path) -> None:
    cols = _table(200)
    cols["g"] = cols["g"].copy()
    cols["g"][7] = None
    for name, form in _forms(tmp_path, cols).items():
        with pytest.raises(DataError) as info:
            _release(form)
        assert "missing keys" in str(info.value), name
        found = selection_counts(
            form, GroupedJob("v", ("g",), (), None, ContributionBounds(None, 1, 1, 1), BINS, "drop")
        )
        assert found.as_dict() == {
            k: c for k, c in _brute(cols, ("g",), None).items() if k is not None
        }
    # nothing reaches the threshold: the message names no key and no count
    tiny = {"v": np.arange(6.0), "g": np.array(RARE, dtype=object)}
    (tmp_path / "tiny").mkdir()
    for name, form in _forms(tmp_path / "tiny", tiny).items():
        with pytest.raises(DataError) as info:
            _release(form)
        message = str(info.value)
        assert not any(k in message for k in RARE) and "6" not in message, name


# ---------------------------------------------------------------------- Spark and Dask
def _spark_frame(spark: Any, cols: dict[str, np.ndarray]) -> Any:
    rows = [
        (float(v), None if g is None else str(g), int(h), int(p))
        for v, g, h, p in zip(cols["v"], cols["g"], cols["h"], cols["p"], strict=True)
    ]
    frame = spark.createDataFrame(rows, "v double, g string, h long, p long")
    return frame.repartition(3).cache()  # several queries read it: shuffle once


def _dask_frame(cols: dict[str, np.ndarray]) -> Any:
    import dask.dataframe as dd

    return dd.from_pandas(pd.DataFrame(cols), npartitions=4)


def _cluster_checks(frame: Any, cols: dict[str, np.ndarray]) -> None:
    for unit in (None, "p"):
        found = selection_counts(frame, _job(("g",), unit), InsecureSeededSource(TEST_SEED))
        assert found.as_dict() == _brute(cols, ("g",), unit)
        assert list(found.keys) == sorted(found.keys)
    several = selection_counts(frame, _job(("g", "h"), "p"), InsecureSeededSource(2))
    assert several.as_dict() == _brute(cols, ("g", "h"), "p")
    _same_release(_release(frame), _release(cols))  # no unit: the same release, bit for bit
    gr = _release(frame, privacy_unit="p", max_groups=3, max_contributions_per_group=2)
    assert gr.keys == BIG and isinstance(gr.guarantee, ApproxDP)
    # persons 0-5 hold three keys: cut to two
    _check_cut(selection_counts(frame, _job(("g",), "p", g=2), InsecureSeededSource(5)), cols, 2)


@pytest.mark.slow
def test_spark_selection_conformance(spark: Any) -> None:
    cols = _table(300)
    _cluster_checks(_spark_frame(spark, cols), cols)
    holes = dict(cols)
    holes["g"] = cols["g"].copy()
    holes["g"][3] = None
    with pytest.raises(DataError, match="missing keys"):
        _release(_spark_frame(spark, holes))


@pytest.mark.slow
def test_dask_selection_conformance(dask_client: Any) -> None:
    cols = _table(300)
    _cluster_checks(_dask_frame(cols), cols)
    holes = dict(cols)
    holes["g"] = cols["g"].copy()
    holes["g"][3] = None
    with pytest.raises(DataError, match="missing keys"):
        _release(_dask_frame(holes))
    gr = _release(_dask_frame(holes), nan="drop")
    assert gr.keys == BIG


def test_mixed_type_keys_and_person_ids_are_not_an_error() -> None:
    """One record whose key (or person id) has another type than the rest (5 among strings)
    must not make the release fail where its neighbour succeeds: which types a column holds
    is data. Private selection sorts mixed keys by type name, then text."""
    import pandas as pd

    from treedp.engines.keys import person_codes, sorted_keys, unique_inverse

    assert sorted_keys([5, "CA", 2, "AB"]) == [2, 5, "AB", "CA"]
    values, codes = unique_inverse(np.array(["b", 5, "a", 5, "b"], dtype=object))
    assert values == [5, "a", "b"] and codes.tolist() == [2, 0, 1, 0, 2]
    ids = person_codes(np.array(["p1", 7, "p1", 7, "p2"], dtype=object))
    assert ids[0] == ids[2] and ids[1] == ids[3] and len(set(ids.tolist())) == 3
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "state": pd.Series(rng.choice(["CA", "NY", "TX"], 3000), dtype=object),
            "person": pd.Series(rng.integers(0, 1000, 3000), dtype=object),
            "income": rng.lognormal(10, 1, 3000),
        }
    )
    neighbour = frame.copy()
    neighbour.loc[0, "state"] = 5
    neighbour.loc[1, "person"] = "someone"
    kwargs = dict(
        column="income",
        by="state",
        privacy_unit="person",
        max_contributions=3,
        max_groups=1,
        delta=1e-6,
        bounds=(0, 5e5),
        bins=64,
        epsilon=1.0,
    )
    a = release_grouped(frame, rng=InsecureSeededSource(1), **kwargs)
    b = release_grouped(neighbour, rng=InsecureSeededSource(1), **kwargs)
    assert set(a.keys) == set(b.keys) == {"CA", "NY", "TX"}


def test_selected_key_labels_do_not_depend_on_which_equal_key_came_first() -> None:
    """1, 1.0, True and np.int64(1) are one key; privately selected, it is released as 1
    whichever of them a (neighbouring) dataset holds first."""
    from treedp.engines.keys import canonical_key

    assert canonical_key(True) == 1 and type(canonical_key(True)) is int
    assert type(canonical_key(1.0)) is int and type(canonical_key(np.int64(1))) is int
    assert canonical_key(2.5) == 2.5 and canonical_key(("a", 1.0)) == ("a", 1)
    assert type(canonical_key(("a", 1.0))[1]) is int and canonical_key("1") == "1"
    values = np.arange(600.0) % 50
    for other in ("CA", 2):
        labels = set()
        for first in ([], [1.0], [True], [np.int64(1)]):
            keys = np.array(first + [1] * 300 + [other] * 300, dtype=object)
            v = np.concatenate([np.ones(len(first)), values])
            rel = release_grouped(
                v,
                by=keys,
                epsilon=2.0,
                delta=1e-6,
                bounds=(0, 50),
                bins=16,
                rng=InsecureSeededSource(1),
            )
            labels.add(tuple(repr(k) for k in rel.keys))
        assert len(labels) == 1 and "1" in next(iter(labels))
