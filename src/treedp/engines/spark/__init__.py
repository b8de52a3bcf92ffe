"""The Spark engine: a PySpark DataFrame counted on its cluster; only counts reach the driver.

:mod:`~treedp.engines.spark.count` counts one column into ``B`` bins;
:mod:`~treedp.engines.spark.grouped` bounds each person's rows and counts ``G × B`` (and the
key counts of private key selection). Both are Spark SQL (the bin rule as an expression:
:mod:`~treedp.engines.spark.bins_sql`), so the executors need neither treedp nor Python; only
the optional ``method="partition"`` (:mod:`~treedp.engines.spark.partition`) runs Python
there. Spark 3.5 and 4, classic and Spark Connect DataFrames.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import Engine, frame_column, frame_schema, module_root
from treedp.engines.spark.count import collect_column, count_spark, quiet_pyspark
from treedp.engines.spark.grouped import (
    bound_spark,
    count_grouped_spark,
    key_counts_spark,
    spark_secret,
)

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = [
    "ENGINE",
    "bound_spark",
    "collect_column",
    "count_grouped_spark",
    "count_spark",
    "key_counts_spark",
    "quiet_pyspark",
    "spark_secret",
]


def _count(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    return count_spark(data, column, bins, nan)


def _collect(frame: Any, column: str) -> Any:
    frame_column(frame, column)  # checks the name only (a Spark column is not data)
    return collect_column(frame, column)


ENGINE = Engine(
    "spark",
    lambda d: module_root(d) == "pyspark",
    _count,
    local=False,
    grouped=count_grouped_spark,
    key_counts=key_counts_spark,
    collect=_collect,
    schema=frame_schema,
)
