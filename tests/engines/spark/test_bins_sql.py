"""The bin rule as Spark SQL: every path of :func:`bin_expression` equals the numpy kernel.

``count_spark`` picks one path per bins; here each path is forced on the hard inputs of the
engine conformance tests (edges and the doubles either side, ±0.0, subnormals, ±inf,
clamping, integers beyond 2**53), and datetimes are counted in every unit from years to
attoseconds, from timestamps, timestamps without time zone and dates.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from tests.engines.test_conformance import BIG_INT_BINS, BIG_INTS, FLOAT_CASES, _py
from treedp import make_bins
from treedp.domain import Bins
from treedp.engines import count_chunk
from treedp.engines.spark.bins_sql import (
    EDGES,
    _arithmetic,
    _search,
    edges_frame,
    formula_edges,
    needs_edges,
    ticks,
)
from treedp.engines.spark.count import quiet_pyspark

pytestmark = pytest.mark.slow


def _bins_of(spark: Any, values: np.ndarray, kind: str, bins: Bins, path: str) -> np.ndarray:
    """Each value's bin by the SQL path ``path`` ("formula", "array" or "search")."""
    from pyspark.sql import functions as F

    rows = [(i, _py(v)) for i, v in enumerate(values)]
    frame = spark.createDataFrame(rows, f"i long, v {kind}")
    frame = frame.crossJoin(F.broadcast(edges_frame(spark, bins)))
    v = F.col("v").cast("double")
    n = bins.n_bins
    if path == "formula":
        lo, width = float(bins.edges[0]), float(bins.edges[-1] - bins.edges[0])
        expr = _arithmetic(
            v, bins, lambda j: F.lit(lo) + F.lit(width) * (j.cast("double") / F.lit(float(n)))
        )
    elif path == "array":
        expr = _arithmetic(v, bins, lambda j: F.element_at(F.col(EDGES), j + 1))
    else:
        expr = _search(v, n, F.col(EDGES))
    with quiet_pyspark():
        got = frame.select("i", expr.alias("b")).orderBy("i").collect()
    return np.array([r[1] for r in got], dtype=np.int64)


def _local_bins(values: np.ndarray, bins: Bins) -> np.ndarray:
    """Each value's bin by the numpy kernel (one value at a time)."""
    return np.array(
        [int(np.argmax(count_chunk(values[i : i + 1], bins).counts)) for i in range(values.size)]
    )


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_every_path_equals_the_kernel(spark: Any, case: str) -> None:
    values, bins = FLOAT_CASES[case]
    expected = _local_bins(values, bins)
    paths = ["search"] + (["array"] if bins.equal_width else [])
    paths += ["formula"] if formula_edges(bins) else []
    for path in paths:
        assert np.array_equal(_bins_of(spark, values, "double", bins, path), expected), path


def test_integers_beyond_2_53(spark: Any) -> None:
    expected = _local_bins(BIG_INTS, BIG_INT_BINS)
    assert np.array_equal(_bins_of(spark, BIG_INTS, "bigint", BIG_INT_BINS, "search"), expected)
    ints = make_bins(bounds=(-3, 4), bins="integers")
    small = BIG_INTS[-6:]
    for path in ("search", "array"):
        assert np.array_equal(
            _bins_of(spark, small, "bigint", ints, path), _local_bins(small, ints)
        )


def test_path_choice() -> None:
    """make_bins' equal-width edges need no array; explicit and datetime edges do."""
    assert formula_edges(make_bins(bounds=(-1.0, 1.0), bins=7))
    assert not needs_edges(make_bins(bounds=(0.0, 1.0), bins=1 << 20))
    assert needs_edges(make_bins(edges=[0.0, 1.0, 5.0]))
    day = np.datetime64("2020-01-01")
    assert needs_edges(make_bins(bounds=(day, day + 10), bins=5))
    assert not needs_edges(make_bins(edges=[0.0, 1.0]))  # one bin: no expression at all


_INSTANTS = [
    dt.datetime(1969, 12, 31, 23, 59, 59, 999_999),
    dt.datetime(1970, 1, 1),
    dt.datetime(1970, 1, 7, 12),
    dt.datetime(1899, 2, 28, 1, 2, 3, 4),
    dt.datetime(2020, 2, 29, 23, 0, 0, 1),
    dt.datetime(2262, 4, 12),  # beyond datetime64[ns]: saturates in "ns" and finer
    dt.datetime(1677, 9, 20),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999_999),
    dt.datetime(1, 1, 1),
]


@pytest.mark.parametrize("unit", ["Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "as"])
def test_datetime_ticks_every_unit(spark: Any, unit: str) -> None:
    """Ticks of timestamps (UTC session), timestamps without zone and dates equal
    :func:`treedp.engines.local.datetime_ticks` of the same wall-clock values."""
    from treedp.engines.local import datetime_ticks

    rows = [(i, t.replace(tzinfo=dt.UTC), t, t.date()) for i, t in enumerate(_INSTANTS)]
    frame = spark.createDataFrame(rows, "i long, ts timestamp, ntz timestamp_ntz, d date")
    with quiet_pyspark():
        got = (
            frame.select(
                "i",
                ticks("ts", "TimestampType", unit).alias("a"),
                ticks("ntz", "TimestampNTZType", unit).alias("b"),
                ticks("d", "DateType", unit).alias("c"),
            )
            .orderBy("i")
            .collect()
        )
    stamps = np.array(_INSTANTS, dtype="datetime64[us]")
    days = np.array([t.date() for t in _INSTANTS], dtype="datetime64[D]")
    assert [r[1] for r in got] == datetime_ticks(stamps, unit).tolist()
    assert [r[2] for r in got] == datetime_ticks(stamps, unit).tolist()
    if unit not in ("ps", "as"):  # numpy has no factor from days to these (it overflows)
        assert [r[3] for r in got] == datetime_ticks(days, unit).tolist()


def test_datetime_bins_without_time_zone_and_dates(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    bins = make_bins(
        edges=np.array(["1900-01-01", "1970-01-01", "1970-01-01T00:00:01", "2020-03-01"], "M8[s]")
    )
    rows = [(t, t.date()) for t in _INSTANTS]
    frame = spark.createDataFrame(rows, "ntz timestamp_ntz, d date")
    stamps = np.array(_INSTANTS, dtype="datetime64[us]")
    days = np.array([t.date() for t in _INSTANTS], dtype="datetime64[D]")
    assert count_spark(frame, "ntz", bins) == count_chunk(stamps, bins)
    assert count_spark(frame, "d", bins) == count_chunk(days, bins)
