"""The Spark engine on a real local session: many partitions, B = 2**24, the column forms."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from treedp import make_bins
from treedp.engines import count_chunk
from treedp.exceptions import InvalidParameterError, InvalidTypeError

pytestmark = pytest.mark.slow


def test_large_b_and_many_partitions(spark: Any) -> None:
    """2**24 bins, data over 5 partitions generated inside Spark: only B counts come back."""
    from treedp.engines.spark import count_spark

    bins = make_bins(bounds=(0.0, 1.0), bins=1 << 24)
    n = 200_000
    frame = spark.range(0, n, 1, 5).selectExpr("id", "(id * 7919 % 200000) / 200000.0 AS x")
    got = count_spark(frame, "x", bins)
    values = (np.arange(n, dtype=np.int64) * 7919 % 200_000) / 200_000.0
    expected = count_chunk(values, bins)
    assert got == expected
    assert got.n_bins == 1 << 24 and int(got.counts.sum()) == n


def test_single_column_default_and_decimals(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    bins = make_bins(bounds=(-3, 4), bins="integers")
    frame = spark.range(-5, 9, 1, 3).selectExpr("CAST(id AS DECIMAL(10, 2)) AS d")
    expected = count_chunk(np.arange(-5.0, 9.0), bins)
    assert count_spark(frame, None, bins) == expected
    dates = spark.range(0, 3).selectExpr("date_add(DATE'2020-01-01', CAST(id AS INT)) AS day")
    day_bins = make_bins(edges=np.array(["2019-12-31", "2020-01-02", "2020-01-10"], "M8[D]"))
    assert count_spark(dates, None, day_bins).counts.tolist() == [1, 2]


def test_bad_forms(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    bins = make_bins(bounds=(0, 1), bins=2)
    two = spark.range(0, 2).selectExpr("id", "id > 0 AS flag")
    with pytest.raises(InvalidParameterError):
        count_spark(two, None, bins)  # which column?
    with pytest.raises(InvalidTypeError):
        count_spark(two, "flag", bins)  # booleans, as in memory
    with pytest.raises(InvalidTypeError):
        count_spark([0.5], None, bins)
    with pytest.raises(InvalidTypeError):
        count_spark(two, "id", bins, nan=1)  # type: ignore[arg-type]
