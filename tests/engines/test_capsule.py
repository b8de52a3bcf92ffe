"""The Arrow PyCapsule engine: a table from any library that speaks ``__arrow_c_stream__``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import treedp
from treedp import make_bins
from treedp.engines.dispatch import count_source, pick_engine
from treedp.noise import InsecureSeededSource


class Producer:
    """A table of another library: it exposes only the Arrow C stream protocol (like a
    DataFusion or ibis table), in record batches of 1,000 rows."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        batches = self._table.to_batches(max_chunksize=1000)
        reader = pa.RecordBatchReader.from_batches(self._table.schema, batches)
        return reader.__arrow_c_stream__(requested_schema)


class ColumnProducer:
    """One column of another library (a stream of plain arrays, not of a table)."""

    def __init__(self, column: pa.ChunkedArray) -> None:
        self._column = column

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        return self._column.__arrow_c_stream__(requested_schema)


VALUES = np.random.default_rng(4).normal(0.0, 2.0, 5_000)
KEYS = np.array(["a", "b", "c"])[np.random.default_rng(5).integers(0, 3, VALUES.size)]
TABLE = pa.table({"x": VALUES, "region": KEYS, "name": ["n"] * VALUES.size})
BINS = make_bins(bounds=(-5.0, 5.0), bins=64)


def test_a_pycapsule_table_is_counted_by_column_as_in_memory() -> None:
    data = Producer(TABLE)
    assert pick_engine(data).name == "arrow-pycapsule"
    got = count_source(data, column="x", bins=BINS)
    want = count_source(VALUES, column=None, bins=BINS)
    assert np.array_equal(got.counts, want.counts) and got.dropped == want.dropped


def test_a_pycapsule_column_is_counted_without_column() -> None:
    data = ColumnProducer(pa.chunked_array([VALUES[:100], VALUES[100:]]))
    got = count_source(data, column=None, bins=BINS)
    assert np.array_equal(got.counts, count_source(VALUES, column=None, bins=BINS).counts)
    with pytest.raises(treedp.InvalidParameterError, match="column"):
        count_source(data, column="x", bins=BINS)


def test_bad_columns_name_the_argument() -> None:
    data = Producer(TABLE)
    with pytest.raises(treedp.InvalidParameterError, match="'column'"):
        count_source(data, column=None, bins=BINS)
    with pytest.raises(treedp.InvalidParameterError, match="nope"):
        count_source(data, column="nope", bins=BINS)
    with pytest.raises(treedp.InvalidTypeError, match="not numeric"):
        count_source(data, column="name", bins=BINS)


def test_releases_and_value_quantiles_read_a_pycapsule_table() -> None:
    rel = treedp.release_cdf(
        Producer(TABLE),
        column="x",
        bounds=(-5.0, 5.0),
        bins=64,
        epsilon=1.0,
        rng=InsecureSeededSource(1),
    )
    same = treedp.release_cdf(
        VALUES, bounds=(-5.0, 5.0), bins=64, epsilon=1.0, rng=InsecureSeededSource(1)
    )
    assert np.array_equal(rel.prefix_counts, same.prefix_counts)
    grouped = treedp.release_grouped(
        Producer(TABLE),
        column="x",
        by="region",
        keys=["a", "b", "c"],
        bounds=(-5.0, 5.0),
        bins=16,
        epsilon=1.0,
        rng=InsecureSeededSource(2),
    )
    assert sorted(grouped.keys) == ["a", "b", "c"]
    q = treedp.quantiles(
        Producer(TABLE),
        [0.5],
        column="x",
        bounds=(-5.0, 5.0),
        epsilon=1.0,
        method="exponential",
        rng=InsecureSeededSource(3),
    )
    assert -5.0 <= float(np.asarray(q)[0]) <= 5.0
