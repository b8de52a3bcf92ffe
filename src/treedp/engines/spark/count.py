"""The Spark engine: count a PySpark DataFrame column on the cluster; only B counts return.

Each partition is read as Arrow record batches (``mapInArrow``, no row-at-a-time Python UDF)
and counted by the numpy kernel :func:`treedp.engines.local.count_chunk`, so the bin rule of
:mod:`treedp.engines.base` holds bit for bit by construction (edge corrections, clamping,
±inf, ±0.0, integers beyond 2**53, saturating datetimes). A partition emits its non-zero bins
as ``(bin, count)`` rows (and its dropped missing values as bin ``-1``); Spark adds them with
``groupBy(bin).sum(count)``, and at most ``B + 1`` rows reach the driver, as Arrow. Noise,
estimation and the release happen on the driver, as for every engine.

treedp (numpy only) must be importable on the executors: install it there, or ship it with
``spark-submit --py-files``. Java 17 and ``pyspark>=3.5,<4`` are what the tests run.
"""

from __future__ import annotations

import contextlib
import gc
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy, sum_counts
from treedp.engines.entry import check_value_type, cluster_column, missing_values_error
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["DATETIME_TYPES", "NUMERIC_TYPES", "collect_column", "count_spark", "quiet_pyspark"]

#: Rows per emitted Arrow batch of (cell, count) pairs.
_EMIT_ROWS = 1 << 20
#: What a partition's counting function emits: ``(cell, count)`` rows.
CELLS = "cell long, count long"

NUMERIC_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")
DATETIME_TYPES = ("TimestampType", "TimestampNTZType", "DateType")


def count_spark(df: Any, column: str | None, bins: Bins, nan: NanPolicy = "error") -> BinCounts:
    """Count one column of a PySpark DataFrame into ``bins``, on the cluster.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data.
    column : str or None
        The column to count; ``None`` when the DataFrame has exactly one column.
    bins : Bins
        The public bins.
    nan : {"error", "drop"}, default="error"
        Missing values (null, NaN, null timestamps): an error, or left out and reported in
        :attr:`BinCounts.dropped`.

    Returns
    -------
    BinCounts
        Identical, bin for bin, to :func:`treedp.engines.local.count_chunk` on the same values.

    Raises
    ------
    InvalidTypeError
        If ``df`` is not a Spark DataFrame, or the column is neither numeric (decimals are
        read as float64) nor a timestamp / date, or does not fit the bins.
    InvalidParameterError
        If the column is not in the DataFrame.
    DataError
        On a missing value under ``nan="error"`` (the message holds no count).
    """
    check_nan_policy(nan)
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    if not isinstance(df, DataFrame):
        raise InvalidTypeError(
            f"count_spark counts a pyspark.sql.DataFrame. Got {type(df).__name__} instead."
        )
    name = cluster_column(column, [f.name for f in df.schema.fields])
    type_name = type(df.schema[name].dataType).__name__
    check_value_type(value_kind(type_name), bins, f"a column of {type_name}")
    col = F.col(f"`{name.replace('`', '``')}`")
    if type_name == "DecimalType":
        col = col.cast("double")
    with quiet_pyspark():
        cells, count = collect_cells(df.select(col.alias("v")).mapInArrow(_counter(bins), CELLS))
    counts = np.zeros(bins.n_bins, dtype=np.int64)
    counts[cells[cells >= 0]] = count[cells >= 0]
    dropped = int(count[cells < 0].sum())
    if dropped and nan == "error":
        raise missing_values_error()
    return BinCounts._trusted(counts, dropped)


@contextlib.contextmanager
def quiet_pyspark() -> Iterator[None]:
    """Silence pyspark 3.5's own noise, which says nothing about the data: its pandas version
    check uses distutils' deprecated ``LooseVersion``, and ``collect`` leaves its py4j result
    socket to the garbage collector (a ``ResourceWarning``, collected here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            yield
        finally:
            gc.collect()


def value_kind(type_name: str) -> str | None:
    """``"number"`` or ``"datetime"`` for a Spark type that treedp counts (decimals are read as
    float64), else None."""
    if type_name in DATETIME_TYPES:
        return "datetime"
    return "number" if type_name in (*NUMERIC_TYPES, "DecimalType") else None


def _counter(bins: Bins) -> Callable[[Iterable[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: count a partition's batches, emit non-zero bins."""

    def count_partition(batches: Iterable[Any]) -> Iterator[Any]:
        from treedp._inputs import as_1d_array
        from treedp.engines.local import count_chunk

        parts = (count_chunk(as_1d_array(b.column(0)), bins, "drop") for b in batches if b.num_rows)
        total = sum_counts(parts, bins.n_bins)
        return emit_cells(total.counts, [total.dropped])

    return count_partition


def emit_cells(counts: np.ndarray, missing: list[int]) -> Iterator[Any]:
    """A partition's :data:`CELLS` as Arrow batches: the non-zero ``counts`` by position, and
    each non-zero ``missing[i]`` as cell ``-1 - i``."""
    import pyarrow as pa

    lost = [i for i, m in enumerate(missing) if m]
    nonzero = np.flatnonzero(counts)
    cells = np.concatenate([np.array([-1 - i for i in lost], dtype=np.int64), nonzero])
    values = np.concatenate([np.array([missing[i] for i in lost], dtype=np.int64), counts[nonzero]])
    for start in range(0, cells.size, _EMIT_ROWS):
        part = slice(start, start + _EMIT_ROWS)
        yield pa.RecordBatch.from_arrays(
            [pa.array(cells[part]), pa.array(values[part])], names=["cell", "count"]
        )


def _pack(batches: Iterable[Any]) -> Iterator[Any]:
    """Pack summed (cell, count) rows into int64 byte strings: few rows reach the driver."""
    import pyarrow as pa

    for batch in batches:
        if batch.num_rows == 0:
            continue
        cells = np.asarray(batch.column(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        count = np.asarray(batch.column(1).to_numpy(zero_copy_only=False), dtype=np.int64)
        yield pa.RecordBatch.from_arrays(
            [pa.array([cells.tobytes()], pa.binary()), pa.array([count.tobytes()], pa.binary())],
            names=["cells", "counts"],
        )


def collect_cells(pairs: Any) -> tuple[np.ndarray, np.ndarray]:
    """The partitions' :data:`CELLS` summed by cell in Spark, at the driver as two int64
    arrays (one packed row per Arrow batch)."""
    from pyspark.sql import functions as F

    summed = pairs.groupBy("cell").agg(F.sum("count").alias("count"))
    rows = summed.mapInArrow(_pack, "cells binary, counts binary").collect()
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cells = np.concatenate([np.frombuffer(r[0], dtype=np.int64) for r in rows])
    count = np.concatenate([np.frombuffer(r[1], dtype=np.int64) for r in rows])
    return cells, count


def collect_column(frame: Any, column: str) -> np.ndarray:
    """A Spark DataFrame's column collected to the driver (numbers as float64, datetimes as
    datetime64[us]; nulls as NaN / NaT, which the ``nan`` policy then handles)."""
    import datetime

    with quiet_pyspark():  # pyspark's own deprecation and socket warnings, not the data's
        cells = [row[0] for row in frame.select(column).collect()]
    present = [c for c in cells if c is not None]
    if present and all(isinstance(c, datetime.datetime | datetime.date) for c in present):
        return np.array(
            [np.datetime64("NaT") if c is None else np.datetime64(c, "us") for c in cells],
            dtype="datetime64[us]",
        )
    try:
        return np.array([np.nan if c is None else c for c in cells], dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"The column {column!r} must hold numbers or datetimes.") from None
