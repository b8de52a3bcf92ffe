"""In-memory tables through the engine table: each engine's ``schema(data)`` (column names, no
value read; None for a single column) and ``read(data, name)`` (one column, any type)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from treedp.engines.dispatch import pick_engine

COLUMNS = {"v": [1.0, 2.0, 3.0], "k": ["a", "b", "a"]}


def _names(data: object) -> list[str] | None:
    schema = pick_engine(data).schema
    assert schema is not None
    return schema(data)


def _read(data: object, name: str) -> np.ndarray:
    read = pick_engine(data).read
    assert read is not None
    return np.asarray(read(data, name))


@pytest.mark.parametrize(
    "table",
    [
        COLUMNS,
        pd.DataFrame(COLUMNS),
        pl.DataFrame(COLUMNS),
        pl.LazyFrame(COLUMNS),
        pa.table(COLUMNS),
    ],
    ids=["mapping", "pandas", "polars", "polars_lazy", "pyarrow"],
)
def test_tables_have_a_schema_and_a_reader(table: object) -> None:
    assert _names(table) == ["v", "k"]
    assert _read(table, "v").tolist() == [1.0, 2.0, 3.0]
    assert _read(table, "k").tolist() == ["a", "b", "a"]


@pytest.mark.parametrize(
    "column",
    [np.arange(3.0), [1.0, 2.0], pd.Series([1.0]), pl.Series([1.0]), pa.array([1.0])],
    ids=["numpy", "list", "pandas", "polars", "pyarrow"],
)
def test_a_single_column_has_no_schema(column: object) -> None:
    assert _names(column) is None


def test_pyarrow_dictionary_and_nullable_integer_columns() -> None:
    table = pa.table(
        {
            "k": pa.array(["x", "y", "x"]).dictionary_encode(),
            "i": pa.array([1, None, 3], pa.int64()),
            "j": pa.array([1, 2, 3], pa.int32()),
        }
    )
    assert _read(table, "k").tolist() == ["x", "y", "x"]
    nullable = _read(table, "i")
    assert nullable.dtype == np.float64 and np.isnan(nullable[1])
    assert nullable[[0, 2]].tolist() == [1.0, 3.0]
    assert _read(table, "j").dtype == np.int32  # no nulls: kept as it is
    batch = table.to_batches()[0]
    assert _names(batch) == ["k", "i", "j"]
    assert _read(batch, "k").tolist() == ["x", "y", "x"]


def test_polars_reads_by_get_column() -> None:
    frame = pl.DataFrame({"v": [1, None, 3]})
    got = pick_engine(frame).read(frame, "v")  # type: ignore[misc]
    assert isinstance(got, pl.Series) and got.null_count() == 1


def test_cluster_engines_have_a_schema_and_no_reader() -> None:
    dd = pytest.importorskip("dask.dataframe")
    frame = dd.from_pandas(pd.DataFrame(COLUMNS), npartitions=1)
    assert _names(frame) == ["v", "k"]
    assert pick_engine(frame).read is None


def test_a_polars_lazy_frame_runs_every_front_door(tmp_path: object) -> None:
    """``release_cdf``, private bounds, ``release_grouped``, a per-person release, a datetime
    column in its zone and ``profile`` read a ``LazyFrame`` as they read its ``DataFrame``
    (``timezones.data_zone`` indexed it, a raw ``TypeError``; a new user's run), with no
    polars ``PerformanceWarning`` (the schema is collected once)."""
    import warnings

    import treedp

    rng = np.random.default_rng(0)
    start = pl.datetime(2024, 1, 1, time_zone="UTC")
    frame = pl.DataFrame(
        {"v": rng.lognormal(3, 1, 600), "g": ["a", "b", "c"] * 200, "pid": np.arange(600) % 150}
    ).with_columns(d=pl.datetime_range(start, start + pl.duration(seconds=599), "1s", eager=True))
    lazy = frame.lazy()
    calls = {
        "cdf": lambda t: treedp.release_cdf(t, column="v", bounds=(0, 500), bins=16, epsilon=1.0),
        "private": lambda t: treedp.release_cdf(
            t, column="v", bounds="private", bins=16, epsilon=1.0
        ),
        "grouped": lambda t: treedp.release_grouped(
            t, column="v", by="g", keys=["a", "b"], bounds=(0, 500), bins=16, epsilon=1.0
        ),
        "person": lambda t: treedp.release_cdf(
            t,
            column="v",
            privacy_unit=treedp.PrivacyUnit("pid", max_contributions=4),
            bounds=(0, 500),
            bins=16,
            epsilon=1.0,
        ),
        "zoned": lambda t: treedp.release_cdf(
            t, column="d", bounds=("2024-01-01T00:00Z", "2024-01-01T00:10Z"), bins=10, epsilon=1.0
        ),
        "profile": lambda t: treedp.profile(t, epsilon=2.0),
    }
    for name, call in calls.items():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            got, want = call(lazy), call(frame)
        assert type(got) is type(want), name
    zoned = calls["zoned"](lazy)
    assert zoned.bins.timezone == "UTC"
