"""A Dask column read straight from Parquet is counted from the files' row groups
(:mod:`treedp.engines.dask_parquet`): the same counts, bin for bin, as Dask's pandas
partitions, and the general path whenever anything stands between the files and the column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from treedp import make_bins
from treedp.domain import Bins
from treedp.engines import BinCounts, count_chunk
from treedp.exceptions import DataError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("dask.dataframe")

EQUAL = make_bins(bounds=(-1.0, 1.0), bins=7)
BIG = make_bins(edges=[-1e19, -(2.0**53), 0.0, 2.0**53, 2.0**53 + 2, 2.0**62, 1e19])


def _hard(bins: Bins) -> np.ndarray:
    edges = bins.edges
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    special = np.array([0.0, -0.0, 5e-324, np.inf, -np.inf, 1e308, -7.5, 0.3, 1 / 3, np.nan])
    return np.concatenate([near, special])


def _write(path: Path, table: Any, row_group_size: int = 7) -> str:
    pq.write_table(table, path, row_group_size=row_group_size)
    return str(path)


def _table(n_repeat: int = 3) -> Any:
    floats = np.tile(_hard(EQUAL), n_repeat)
    n = floats.size
    ints = np.resize(
        np.array([2**53, 2**53 + 1, -(2**53) - 1, 2**62 + 3, -(2**63), 2**63 - 1, 0, -1, 3]), n
    )
    nulls = np.arange(n) % 5 == 0
    return pa.table(
        {
            "f": pa.array(floats),
            "f32": pa.array(np.clip(floats, -3e38, 3e38).astype(np.float32)),
            "i": pa.array(ints, mask=nulls),  # nullable int64: float64 NaN in pandas
            "u": pa.array(np.resize(np.array([0, 1, 2**64 - 1, 2**63], dtype=np.uint64), n)),
            "s": pa.array([str(v) for v in range(n)]),
        }
    )


def _both(obj: Any, column: str | None, bins: Bins, nan: str = "drop") -> tuple[Any, Any]:
    """The count by the row-group path and by the pandas partitions (the general path)."""
    from treedp.engines import dask as engine

    fast = engine.count_dask(obj, column, bins, nan)  # type: ignore[arg-type]
    real = engine.parquet_plan
    engine.parquet_plan = lambda o, c: None  # type: ignore[assignment]
    try:
        slow = engine.count_dask(obj, column, bins, nan)  # type: ignore[arg-type]
    finally:
        engine.parquet_plan = real
    return fast, slow


def _plan(obj: Any, column: str | None = None) -> Any:
    from treedp.engines.dask_parquet import parquet_plan

    if column is not None:
        obj = obj[column]
    return parquet_plan(obj, None)


@pytest.mark.parametrize(("column", "bins"), [("f", EQUAL), ("f32", EQUAL), ("i", BIG), ("u", BIG)])
def test_row_groups_count_as_the_pandas_partitions(
    dask_client: Any, tmp_path: Path, column: str, bins: Bins
) -> None:
    import dask.dataframe as dd

    table = _table()
    path = _write(tmp_path / "t.parquet", table)
    expected = count_chunk(np.asarray(table.to_pandas()[column], dtype=float), bins, "drop")
    for form in (
        dd.read_parquet(path),
        dd.read_parquet(path, columns=[column]),
        dd.read_parquet(path, split_row_groups=True),
        dd.read_parquet(path, dtype_backend="pyarrow"),
        dd.read_parquet(path, dtype_backend="numpy_nullable"),
    ):
        assert _plan(form, column) is not None
        fast, slow = _both(form, column, bins)
        assert fast == slow == expected
        fast, slow = _both(form[column], None, bins)
        assert fast == slow == expected
    series = dd.read_parquet(path, columns=column)  # a Series straight from the read
    assert _plan(series) is not None
    fast, slow = _both(series, None, bins)
    assert fast == slow == expected


def test_directories_partition_selections_and_missing_values(
    dask_client: Any, tmp_path: Path
) -> None:
    import dask.dataframe as dd

    table = _table(5)
    folder = tmp_path / "d"
    folder.mkdir()
    half = table.num_rows // 2
    _write(folder / "a.parquet", table.slice(0, half), 5)
    _write(folder / "b.parquet", table.slice(half), 11)
    frame = dd.read_parquet(str(folder), split_row_groups=True)
    assert frame.npartitions > 4
    assert _plan(frame.partitions[1:4], "f") is None  # a selection: the general path
    for obj in (frame, frame.partitions[1:4], frame.partitions[[0, 5]]):
        expected = count_chunk(obj["f"].compute().to_numpy(), EQUAL, "drop")
        fast, slow = _both(obj, "f", EQUAL)
        assert fast == slow == expected
        if obj is frame:
            assert fast.dropped > 0
        if fast.dropped:
            with pytest.raises(DataError) as info:  # NaN under nan="error", from row groups
                _both(obj, "f", EQUAL, "error")
            assert not any(ch.isdigit() for ch in str(info.value))


def test_anything_between_files_and_column_takes_the_general_path(
    dask_client: Any, tmp_path: Path
) -> None:
    import dask.dataframe as dd

    table = _table()
    path = _write(tmp_path / "t.parquet", table)
    hive = tmp_path / "hive"
    pq.write_to_dataset(
        pa.table({"f": table.column("f"), "k": pa.array(np.arange(table.num_rows) % 3)}),
        hive, partition_cols=["k"],
    )  # fmt: skip
    frame = dd.read_parquet(path)
    others = {
        "filters": dd.read_parquet(path, filters=[("f", ">", 0.0)])["f"],
        "persisted": frame.persist()["f"],
        "arithmetic": frame["f"] * 1.0,
        "map_partitions": frame.map_partitions(lambda d: d)["f"],
        "head rows": frame[frame["f"] > 0]["f"],
        "repartition": frame.repartition(npartitions=2)["f"],
        "hive key": dd.read_parquet(str(hive))["k"],
        "text": frame["s"],
        "two columns then one": frame[["f", "i"]]["f"],
        "renamed": frame.rename(columns={"i": "f2"})["f"],
    }
    for name, obj in others.items():
        assert _plan(obj) is None, name
    assert _plan(dd.read_parquet(str(hive))["f"]) is not None  # a file column of the dataset
    expected = count_chunk(dd.read_parquet(str(hive))["f"].compute().to_numpy(), EQUAL, "drop")
    fast, slow = _both(dd.read_parquet(str(hive)), "f", EQUAL)
    assert fast == slow == expected
    kept = np.asarray(table.column("f").to_numpy())
    assert _both(others["filters"], None, EQUAL)[0] == count_chunk(kept[kept > 0.0], EQUAL, "drop")


def test_small_plans_are_cut_into_row_group_runs(tmp_path: Path) -> None:
    """One file of 10 row groups for 8 tasks: every row group in exactly one task, once."""
    import dask.dataframe as dd

    from treedp.engines.dask_parquet import count_pieces, split_pieces

    values = np.linspace(-1.5, 1.5, 70)
    path = _write(tmp_path / "t.parquet", pa.table({"f": values}))
    plan = _plan(dd.read_parquet(path, split_row_groups=False), "f")
    assert plan is not None and plan.pieces == [(path, None)]
    tasks = split_pieces(plan, 8)
    assert len(tasks) == 8
    groups = sorted(g for task in tasks for _, rows in task for g in rows or [])
    assert groups == list(range(10))
    total = sum(count_pieces(plan.fs, task, "f", EQUAL) for task in tasks)
    assert BinCounts(total[:-1], int(total[-1])) == count_chunk(values, EQUAL)
    assert len(split_pieces(plan, 1)) == 1
