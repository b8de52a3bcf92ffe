"""One entry point from whatever the user passes to bin counts: :func:`count_source`.

=========================================  =================================================
input                                      how it is counted
=========================================  =================================================
numpy array, sequence, pandas / polars     in memory (:class:`~treedp.engines.local.LocalEngine`)
Series, pyarrow Array
pandas / polars DataFrame + ``column=``    that column, in memory
polars LazyFrame + ``column=``             streaming collect of that one column
pyarrow Table / RecordBatch + ``column=``  chunk by chunk on two threads
pyarrow ChunkedArray                       chunk by chunk
pyarrow Dataset + ``column=``              streamed, only that column read
str / path + ``column=``                   a file, directory, glob or ``"-"``: streamed
                                           (:func:`~treedp.engines.files.count_path`)
other ``__arrow_c_stream__`` table         read by record batch through pyarrow
+ ``column=`` (DataFusion, ibis, ...)      (:mod:`~treedp.engines.capsule`)
PySpark / Dask DataFrame + ``column=``     on the cluster (``treedp.engines.spark`` /
                                           ``treedp.engines.dask``); only B counts return
=========================================  =================================================

Every path follows the one bin rule of :mod:`treedp.engines.base` and gives the same counts,
bin for bin, as the in-memory path on the same values; a missing column, a non-numeric column
or a missing value under ``nan="error"`` gets the same error class everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from treedp._validation import must
from treedp.engines import arrow, capsule, dask, files, memory, pandas, polars, spark, sql
from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.entry import Counter, Engine
from treedp.engines.local import LocalEngine
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["ENGINES", "Counter", "Engine", "count_source", "pick_engine", "register_engine"]

_LOCAL = LocalEngine(workers=2)

#: The engine table, asked in order; the first that accepts the data counts it. Plug-ins
#: (:func:`register_engine`) go before the built-ins; the in-memory engine, last, takes any
#: column. Nothing else in treedp switches on the input's type. Each engine is defined in its
#: own module (:class:`~treedp.engines.entry.Engine`).
ENGINES: list[Engine] = [
    files.ENGINE,
    files.DATASET,
    sql.DUCKDB,
    sql.SQLITE,
    sql.POSTGRESQL,
    spark.ENGINE,
    dask.ENGINE,
    pandas.ENGINE,
    polars.ENGINE,
    arrow.ENGINE,
    capsule.ENGINE,  # any other Arrow PyCapsule (__arrow_c_stream__) table
    memory.ENGINE,
]


def register_engine(engine: Engine) -> Engine:
    """Add ``engine`` to :data:`ENGINES`, ahead of the built-ins (a name may be used once)."""
    if any(e.name == engine.name for e in ENGINES):
        raise InvalidParameterError(f"An engine named {engine.name!r} is already registered.")
    ENGINES.insert(0, engine)
    return engine


def pick_engine(data: Any) -> Engine:
    """The first engine of :data:`ENGINES` that accepts ``data``."""
    return next(e for e in ENGINES if e.accepts(data))


def check_local_engine(engine: Any, data: Any) -> LocalEngine:
    """``engine`` (default: two threads) after checking its type and that ``data`` is counted
    on this machine."""
    if engine is None:
        return _LOCAL
    if not isinstance(engine, LocalEngine):
        raise InvalidTypeError(
            must("engine", f"be a treedp.engines.LocalEngine. Got {type(engine).__name__} instead.")
        )
    if not pick_engine(data).local:
        raise InvalidParameterError(
            "The 'engine' parameter applies to data counted on this machine; a Spark or Dask "
            "DataFrame is counted on its cluster."
        )
    return engine


def count_source(
    data: Any,
    *,
    column: str | None,
    bins: Bins,
    nan: NanPolicy = "error",
    progress: bool | None = None,
    engine: LocalEngine | None = None,
) -> BinCounts:
    """Count ``data`` (or its ``column``) into ``bins`` with the engine that accepts it.

    Parameters
    ----------
    data : array-like, DataFrame, LazyFrame, Table, Dataset, path, Spark or Dask DataFrame
        See the module's table; any kind a registered engine accepts.
    column : str, optional
        The column to count; required for tables, DataFrames and files, refused for a single
        column.
    bins : Bins
        The public bins.
    nan : {"error", "drop"}, default="error"
        The missing-value policy.
    progress : bool, optional
        A progress bar for streamed inputs (None: on an interactive terminal only).
    engine : LocalEngine, optional
        Threads and counting kernel for data counted on this machine (in-memory columns,
        pyarrow tables and datasets, files): for example ``LocalEngine(workers=4,
        kernel="numba")``. Refused for Spark and Dask DataFrames (counted on the cluster).

    Returns
    -------
    BinCounts

    Raises
    ------
    InvalidTypeError
        For an input of no supported kind, a polars expression, or ``column`` of a wrong type.
    InvalidParameterError
        For a missing ``column`` (or one given for a single column), or a file that does not
        exist.
    DataError
        For a non-numeric column, or a missing value under ``nan="error"``.
    """
    from treedp.engines.progress import wants_progress

    check_nan_policy(nan)
    wants_progress(progress)  # checks its type
    local = check_local_engine(engine, data)
    if column is not None and not isinstance(column, str):
        raise InvalidTypeError(must("column", f"be a str. Got {type(column).__name__} instead."))
    return pick_engine(data).count(data, column, bins, nan, progress, local)
