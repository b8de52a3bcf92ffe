"""The Dask engine on a real local two-process cluster: partitions, tree sum, large B."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from treedp import make_bins
from treedp.engines import count_chunk
from treedp.exceptions import InvalidParameterError, InvalidTypeError

pd = pytest.importorskip("pandas")
pytestmark = pytest.mark.slow


def test_many_partitions_tree_sum_and_large_b(dask_client: Any) -> None:
    """20 blocks (a two-level tree of fan-in 8) over 2**22 bins, computed on the workers."""
    import dask.array as da

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(0.0, 1.0), bins=1 << 22)
    values = np.random.default_rng(5).random(100_000)
    arr = da.from_array(values, chunks=5_000)
    assert arr.numblocks[0] == 20
    assert count_dask(arr, None, bins) == count_chunk(values, bins)


def test_dataframe_forms_and_engine(dask_client: Any) -> None:
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(-3, 4), bins="integers")
    ints = pd.array([-5, 0, None, 2, 9, 4], dtype="Int64")  # nullable: None is missing
    frame = dd.from_pandas(pd.DataFrame({"n": ints}), npartitions=2)
    expected = count_chunk(np.array([-5.0, 0, np.nan, 2, 9, 4]), bins, "drop")
    assert count_dask(frame, None, bins, "drop") == expected
    assert count_dask(frame, "n", bins, "drop") == expected


def test_bad_forms(dask_client: Any) -> None:
    import dask.array as da
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    bins = make_bins(bounds=(0, 1), bins=2)
    frame = dd.from_pandas(pd.DataFrame({"a": [0.5], "b": [True]}), npartitions=1)
    with pytest.raises(InvalidParameterError):
        count_dask(frame, None, bins)
    with pytest.raises(InvalidTypeError):
        count_dask(frame, "b", bins)
    with pytest.raises(InvalidParameterError):
        count_dask(frame["a"], "a", bins)
    with pytest.raises(InvalidTypeError):
        count_dask(da.zeros((2, 2), chunks=1), None, bins)


def test_per_person_compaction_missing_records_and_hashed_ids(
    dask_client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a privacy unit each partition is compacted (hashed id, cell), a slice at a time,
    into buckets by id hash: the counts equal the in-memory ones when the bound does not bind,
    and a missing value, id or key raises the in-memory error (the same message, no count)."""
    import dask.dataframe as dd

    from treedp import InsecureSeededSource
    from treedp.engines import dask_persons
    from treedp.engines.dask import count_grouped_dask
    from treedp.engines.grouped import GroupedJob, count_bounded
    from treedp.exceptions import DataError
    from treedp.privacy.contribution import ContributionBounds

    monkeypatch.setattr(dask_persons, "SLICE", 333)  # several slices per partition
    rng = np.random.default_rng(3)
    n = 4000
    table = pd.DataFrame(
        {
            "v": rng.integers(-2, 12, n),
            "g": pd.array(rng.choice(["a", "b", "c", "z"], n), dtype="string"),
            "p": pd.array([f"id{i}" for i in rng.integers(0, 500, n)], dtype="string"),
        }
    )
    bins = make_bins(bounds=(0, 9), bins="integers")
    bounds = ContributionBounds.from_parameters("p", 10_000)
    job = GroupedJob("v", ("g",), ("a", "b", "c"), "p", bounds, bins, "error")
    frame = dd.from_pandas(table, npartitions=3)
    got = count_grouped_dask(frame, job, InsecureSeededSource(1))
    expected = count_bounded(
        table["v"].to_numpy(), [_objects(table["g"])], _objects(table["p"]), job,
        InsecureSeededSource(1),
    )  # fmt: skip
    assert np.array_equal(got.counts, expected.counts)
    for column, hole, message in [
        ("v", np.nan, "missing"),
        ("p", None, "privacy_unit"),
        ("g", None, "missing keys"),
    ]:
        holed = table.astype({"v": "float64"}).copy()
        holed.loc[7, column] = hole
        with pytest.raises(DataError, match=message) as info:
            count_grouped_dask(dd.from_pandas(holed, npartitions=2), job, InsecureSeededSource(1))
        assert not any(ch.isdigit() for ch in str(info.value))
        drop = GroupedJob("v", ("g",), job.keys, "p", bounds, bins, "drop")
        kept = count_grouped_dask(
            dd.from_pandas(holed, npartitions=2), drop, InsecureSeededSource(1)
        )
        local = count_bounded(
            holed["v"].to_numpy(), [_objects(holed["g"])], _objects(holed["p"]), drop,
            InsecureSeededSource(1),
        )  # fmt: skip
        assert np.array_equal(kept.counts, local.counts)


def _objects(series: Any) -> np.ndarray:
    """A string column as an object array with None for the missing entries."""
    out = series.to_numpy(dtype=object)
    out[np.asarray(series.isna())] = None
    return out


@pytest.mark.parametrize("unit", [None, "p"])
@pytest.mark.parametrize("select", [False, True])
def test_grouped_value_type_read_from_the_schema(dask_client: Any, unit: Any, select: bool) -> None:
    """A text value column (Dask reads text as ``string[pyarrow]``) is refused by its type,
    with or without rows, on the grouped, per-person and key-selection paths: an empty frame
    was released where its neighbour with one row was refused (an independent review)."""
    import pandas as pd
    from dask import dataframe as dd

    import treedp

    for rows in ([], ["1.0"]):
        frame = pd.DataFrame(
            {
                "v": pd.Series(rows, dtype="string"),
                "k": pd.Series(["a"] * len(rows), dtype="string"),
                "p": pd.Series(range(len(rows)), dtype="int64"),
            }
        )
        acc = treedp.Accountant(treedp.ApproxDP(2.0, 1e-5))
        extra: dict[str, Any] = {"privacy_unit": unit, "max_contributions": 1} if unit else {}
        extra.update({"max_groups": 1} if select and unit else {})
        keys: dict[str, Any] = {"delta": 1e-6} if select else {"keys": ["a"]}
        with pytest.raises(InvalidTypeError, match="must hold numbers or datetimes"):
            treedp.release_grouped(
                dd.from_pandas(frame, npartitions=1), column="v", by="k", bounds=(0, 10),
                bins=4, epsilon=1.0, accountant=acc, **keys, **extra,
            )  # fmt: skip
        assert acc.spent.epsilon == 0.0
