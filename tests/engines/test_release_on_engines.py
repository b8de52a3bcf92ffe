"""release_cdf on a Spark and a Dask DataFrame: dispatch, counting inside the engine, the
same counts (hence, with the same seed, the same release) as in memory."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treedp

VALUES = np.random.default_rng(3).lognormal(3, 1, size=5_000)


def _release(data: Any, **kwargs: Any) -> treedp.Release:
    return treedp.release_cdf(
        data,
        bounds=(0.0, 200.0),
        bins=256,
        epsilon=1.0,
        rng=treedp.InsecureSeededSource(7),
        **kwargs,
    )


def test_release_on_spark_equals_in_memory(spark: Any) -> None:
    df = spark.createDataFrame([(float(v),) for v in VALUES], ["income"]).repartition(3)
    on_spark = _release(df, column="income")
    in_memory = _release(VALUES)
    for a, b in zip(on_spark.noisy_levels, in_memory.noisy_levels, strict=True):
        np.testing.assert_array_equal(a, b)


def test_release_on_dask_equals_in_memory(dask_client: Any) -> None:
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    df = dd.from_pandas(pd.DataFrame({"income": VALUES}), npartitions=4)
    on_dask = _release(df, column="income")
    in_memory = _release(VALUES)
    for a, b in zip(on_dask.noisy_levels, in_memory.noisy_levels, strict=True):
        np.testing.assert_array_equal(a, b)


def _private(data: Any, **kwargs: Any) -> treedp.Release:
    return treedp.release_cdf(
        data,
        bounds="private",
        bins=256,
        epsilon=1.0,
        rng=treedp.InsecureSeededSource(8),
        **kwargs,
    )


def _same(a: treedp.Release, b: treedp.Release) -> None:
    assert a.bounds_step == b.bounds_step
    np.testing.assert_array_equal(a.edges, b.edges)
    for x, y in zip(a.noisy_levels, b.noisy_levels, strict=True):
        np.testing.assert_array_equal(x, y)


def test_private_bounds_on_spark_equal_in_memory(spark: Any) -> None:
    """bounds='private' on a Spark DataFrame: the scans read one counting pass over the
    public COUNT_EDGES inside Spark; the same seed gives the same bounds and release."""
    df = spark.createDataFrame([(float(v),) for v in VALUES], ["income"]).repartition(3)
    _same(_private(df, column="income"), _private(VALUES))


def test_private_bounds_on_dask_equal_in_memory(dask_client: Any) -> None:
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    df = dd.from_pandas(pd.DataFrame({"income": VALUES}), npartitions=4)
    _same(_private(df, column="income"), _private(VALUES))


def test_quantiles_take_a_spark_or_dask_column(spark: Any, dask_client: Any) -> None:
    """treedp.quantiles(frame, q, column=...) on Spark and Dask collects the column (the
    exponential and recursive methods hold it in memory): the same seed gives the same
    answers as the numpy column (the order of the rows does not matter to any method)."""
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    frames = [
        spark.createDataFrame([(float(v),) for v in VALUES], ["income"]).repartition(3),
        dd.from_pandas(pd.DataFrame({"income": VALUES}), npartitions=4),
    ]
    for q in (0.5, [0.1, 0.5, 0.9], np.linspace(0.01, 0.99, 99)):
        want = np.asarray(
            treedp.quantiles(
                VALUES, q, epsilon=1.0, bounds=(0, 200), rng=treedp.InsecureSeededSource(4)
            )
        )
        for frame in frames:
            got = treedp.quantiles(
                frame,
                q,
                epsilon=1.0,
                bounds=(0, 200),
                column="income",
                rng=treedp.InsecureSeededSource(4),
            )
            np.testing.assert_array_equal(np.asarray(got), want)
    with pytest.raises(treedp.InvalidParameterError, match="is not in the data"):
        treedp.quantiles(frames[1], 0.5, epsilon=1.0, bounds=(0, 200), column="nope")
