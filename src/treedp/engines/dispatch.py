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
PySpark / Dask DataFrame + ``column=``     on the cluster (``treedp.engines.spark`` /
                                           ``treedp.engines.dask``); only B counts return
=========================================  =================================================

Every path follows the one bin rule of :mod:`treedp.engines.base` and gives the same counts,
bin for bin, as the in-memory path on the same values; a missing column, a non-numeric column
or a missing value under ``nan="error"`` gets the same error class everywhere.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.local import LocalEngine
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.grouped import GroupedCounts, GroupedJob, KeyCounts
    from treedp.noise.rng import RandomSource

__all__ = ["ENGINES", "Engine", "count_source", "pick_engine", "register_engine"]

_LOCAL = LocalEngine(workers=2)

#: How an engine counts: ``(data, column, bins, nan, progress, local) -> BinCounts``, where
#: ``local`` is the :class:`LocalEngine` (threads, kernel) for data counted on this machine.
Counter = Callable[[Any, "str | None", "Bins", NanPolicy, "bool | None", LocalEngine], BinCounts]


@dataclass(frozen=True)
class Engine:
    """One kind of input and how it is counted into bins: an entry of :data:`ENGINES`.

    Attributes
    ----------
    name : str
        A unique name (``"files"``, ``"spark"``, ...).
    accepts : callable
        ``accepts(data)``: whether this engine counts ``data``. Cheap and import-free: it must
        not import an optional package the data does not come from.
    count : callable
        ``count(data, column, bins, nan, progress, local)`` → :class:`BinCounts`, following
        the one bin rule of :mod:`treedp.engines.base` (the engine conformance tests check it).
    local : bool
        Whether the data is counted on this machine (then ``engine=LocalEngine(...)`` sets
        threads and kernel); False for a cluster (Spark, Dask).
    grouped, key_counts : callable, optional
        ``grouped(data, job, source)`` → the bounded ``(G × B)``
        :class:`~treedp.engines.grouped.GroupedCounts` of a group-by or per-person release,
        and ``key_counts(data, job, source)`` → the pre-noise
        :class:`~treedp.engines.grouped.KeyCounts` of private key selection, counted where
        the data lives; None: the columns are read into memory and counted there.
    columns : callable, optional
        ``columns(data)`` → the column names, read from the schema without any value (for
        inputs with no ``columns`` attribute, such as files).
    collect : callable, optional
        ``collect(data, column)`` → that column in memory (numbers or datetimes), for the
        methods that hold the values (the exponential and recursive quantiles); None: the
        input is one column already, or cannot be collected.
    """

    name: str
    accepts: Callable[[Any], bool]
    count: Counter
    local: bool = True
    grouped: Callable[[Any, GroupedJob, RandomSource], GroupedCounts] | None = None
    key_counts: Callable[[Any, GroupedJob, RandomSource], KeyCounts] | None = None
    columns: Callable[[Any], list[str]] | None = None
    collect: Callable[[Any, str], Any] | None = None


#: The engine table, asked in order; the first that accepts the data counts it. Plug-ins
#: (:func:`register_engine`) go before the built-ins; the in-memory engine, last, takes any
#: column. Nothing else in treedp switches on the input's type.
ENGINES: list[Engine] = []


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
            "The 'engine' parameter must be a treedp.engines.LocalEngine. "
            f"Got {type(engine).__name__} instead."
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
        raise InvalidTypeError(
            f"The 'column' parameter must be a str. Got {type(column).__name__} instead."
        )
    return pick_engine(data).count(data, column, bins, nan, progress, local)


def _chunk_options(engine: LocalEngine) -> dict[str, Any]:
    """The engine's threads and kernel, for the chunked (streamed) paths."""
    return {"workers": engine.workers, "kernel": engine.kernel}


def _root(data: Any) -> str:
    return (type(data).__module__ or "").split(".")[0]


def _is_file(data: Any) -> bool:
    """A path, a list of paths or a :class:`~treedp.engines.files.FileSource`."""
    if isinstance(data, os.PathLike | str):
        return True
    if isinstance(data, list | tuple) and data:
        return all(isinstance(x, str | os.PathLike) for x in data)
    from treedp.engines.files import FileSource

    return isinstance(data, FileSource)


def _is_dataset(data: Any) -> bool:
    return (type(data).__module__ or "").startswith("pyarrow._dataset")


def _files_grouped(data: Any, job: GroupedJob, source: RandomSource) -> GroupedCounts:
    from treedp.engines.grouped_files import count_grouped_files

    return count_grouped_files(data, job, source)


def _files_keys(data: Any, job: GroupedJob, source: RandomSource) -> KeyCounts:
    from treedp.engines.grouped_files import key_counts_files

    return key_counts_files(data, job, source)


def _files_columns(data: Any) -> list[str]:
    from treedp.engines.grouped_files import file_columns

    return file_columns(data)


def _spark_grouped(data: Any, job: GroupedJob, source: RandomSource) -> GroupedCounts:
    from treedp.engines.grouped_spark import count_grouped_spark

    return count_grouped_spark(data, job, source)


def _spark_keys(data: Any, job: GroupedJob, source: RandomSource) -> KeyCounts:
    from treedp.engines.grouped_spark import key_counts_spark

    return key_counts_spark(data, job, source)


def _dask_grouped(data: Any, job: GroupedJob, source: RandomSource) -> GroupedCounts:
    from treedp.engines.grouped_dask import count_grouped_dask

    return count_grouped_dask(data, job, source)


def _dask_keys(data: Any, job: GroupedJob, source: RandomSource) -> KeyCounts:
    from treedp.engines.grouped_dask import key_counts_dask

    return key_counts_dask(data, job, source)


def _count_file(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    from treedp.engines.files import FileSource, count_path

    if column is None and isinstance(data, str | list | tuple):  # values, not paths
        return _count_memory(data, column, bins, nan, progress, local)
    _need_column(column, "a file")
    assert column is not None
    if isinstance(data, FileSource):
        return count_path(
            data.path,
            column,
            bins,
            nan,
            delimiter=data.delimiter,
            encoding=data.encoding,
            progress=progress,
            **_chunk_options(local),
        )
    return count_path(data, column, bins, nan, progress=progress, **_chunk_options(local))


def _count_spark(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    from treedp.engines import spark  # type: ignore[attr-defined,unused-ignore]

    return spark.count_spark(data, column, bins, nan)  # type: ignore[no-any-return]


def _count_dask(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    from treedp.engines import dask  # type: ignore[attr-defined,unused-ignore]

    return dask.count_dask(data, column, bins, nan)  # type: ignore[no-any-return]


def _count_memory(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    if isinstance(data, dict):
        raise InvalidTypeError(
            "The 'values' argument must be a column or a table, not a dict; pass a DataFrame "
            "with column=..., or the column itself."
        )
    _no_column(column)
    counts: BinCounts = local.count(data, bins, nan=nan)
    return counts


def _need_column(column: str | None, what: str) -> None:
    if column is None:
        raise InvalidParameterError(
            f"The 'column' parameter is required when the data is {what}: name the column to "
            "release."
        )


def _no_column(column: str | None) -> None:
    if column is not None:
        raise InvalidParameterError(
            "The 'column' parameter applies to tables, DataFrames and files; the data given is "
            "already one column."
        )


def _missing(column: str, names: Any) -> InvalidParameterError:
    return InvalidParameterError(
        f"The column '{column}' is not in the data. Columns: {', '.join(map(str, names))}."
    )


def _pandas(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    engine: LocalEngine,
) -> BinCounts:
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        _need_column(column, "a DataFrame")
        if column not in data.columns:
            raise _missing(str(column), data.columns)
        series = data[column]
        if isinstance(series, pd.DataFrame):
            raise InvalidParameterError(f"The column '{column}' appears twice in the DataFrame.")
        checked = _checked_pandas(series, str(column))
        if checked.dtype.kind == "O":
            from treedp._inputs import as_1d_array
            from treedp.exceptions import DataError

            try:
                checked = as_1d_array(checked)
            except InvalidTypeError:
                raise DataError(
                    f"The column '{column}' is not numeric or datetime (it holds other "
                    "objects); treedp releases numeric or datetime columns only."
                ) from None
        return engine.count(checked, bins, nan=nan)
    _no_column(column)
    return engine.count(data, bins, nan=nan)


def _checked_pandas(series: Any, column: str) -> Any:
    import pandas as pd

    dtype = series.dtype
    if (
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    ) or pd.api.types.is_datetime64_any_dtype(dtype):
        return series
    if dtype.kind == "O" or str(dtype).startswith("decimal"):
        return series  # numbers, decimals or datetimes as objects: checked value by value
    from treedp.exceptions import DataError

    raise DataError(
        f"The column '{column}' is not numeric or datetime (its type is {dtype}); "
        "treedp releases numeric or datetime columns only."
    )


def _polars(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    engine: LocalEngine,
) -> BinCounts:
    import polars as pl

    if isinstance(data, pl.Expr):
        raise InvalidTypeError(
            "A polars expression is not data: select from a DataFrame or LazyFrame instead, "
            "for example release_cdf(frame, column='income', ...)."
        )
    if isinstance(data, pl.LazyFrame):
        _need_column(column, "a LazyFrame")
        names = data.collect_schema().names()
        if column not in names:
            raise _missing(str(column), names)
        series = data.select(pl.col(str(column))).collect(engine="streaming").to_series()
        return engine.count(_checked_polars(series, str(column)), bins, nan=nan)
    if isinstance(data, pl.DataFrame):
        _need_column(column, "a DataFrame")
        if column not in data.columns:
            raise _missing(str(column), data.columns)
        return engine.count(
            _checked_polars(data.get_column(str(column)), str(column)), bins, nan=nan
        )
    _no_column(column)
    return engine.count(data, bins, nan=nan)


def _checked_polars(series: Any, column: str) -> Any:
    import polars as pl

    from treedp.exceptions import DataError

    dtype = series.dtype
    if isinstance(dtype, pl.Decimal):
        return series.cast(pl.Float64)
    if (dtype.is_numeric() and dtype != pl.Boolean) or dtype.is_temporal() or dtype == pl.Null:
        if dtype == pl.Null:
            return series.cast(pl.Float64)
        return series
    raise DataError(
        f"The column '{column}' is not numeric or datetime (its type is {dtype}); "
        "treedp releases numeric or datetime columns only."
    )


def _pyarrow(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    engine: LocalEngine,
) -> BinCounts:
    import pyarrow as pa

    from treedp.engines.files import arrow_to_numpy, check_arrow_type, count_chunks
    from treedp.engines.progress import progress_bar

    if isinstance(data, pa.Table | pa.RecordBatch):
        _need_column(column, "a Table")
        if column not in data.schema.names:
            raise _missing(str(column), data.schema.names)
        check_arrow_type(data.schema.field(column).type, str(column))
        col = data.column(column)
        chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        return count_chunks(
            (arrow_to_numpy(c) for c in chunks), bins, nan, **_chunk_options(engine)
        )
    if isinstance(data, pa.ChunkedArray):
        _no_column(column)
        return count_chunks(
            (arrow_to_numpy(c) for c in data.chunks), bins, nan, **_chunk_options(engine)
        )
    if isinstance(data, pa.Array):
        _no_column(column)
        return engine.count(arrow_to_numpy(data), bins, nan=nan)
    import pyarrow.dataset as ds

    if isinstance(data, ds.Dataset):
        _need_column(column, "a Dataset")
        if column not in data.schema.names:
            raise _missing(str(column), data.schema.names)
        check_arrow_type(data.schema.field(column).type, str(column))
        options: dict[str, Any] = {}
        if isinstance(getattr(data, "format", None), ds.ParquetFileFormat):
            options["fragment_scan_options"] = ds.ParquetFragmentScanOptions(pre_buffer=False)
        scanner = data.scanner(
            columns=[column], use_threads=True, batch_readahead=2, fragment_readahead=1, **options
        )
        with progress_bar(progress, total=None) as tick:
            return count_chunks(
                (arrow_to_numpy(b.column(0)) for b in scanner.to_batches() if b.num_rows),
                bins,
                nan,
                progress=tick,
                **_chunk_options(engine),
            )
    raise InvalidTypeError(
        f"The 'values' argument is a pyarrow {type(data).__name__}, which treedp does not "
        "count; pass an Array, ChunkedArray, Table, RecordBatch or Dataset."
    )


def _frame_column(frame: Any, column: str) -> Any:
    """A pandas or polars DataFrame's column (its name checked first)."""
    lazy = hasattr(frame, "collect_schema") and hasattr(frame, "collect")  # polars LazyFrame
    if not lazy and not hasattr(frame, "columns"):  # a Series or an array: one column
        raise InvalidTypeError(
            "The 'column' parameter applies to a DataFrame or a file; a "
            f"{type(frame).__name__} is one column already: drop 'column'."
        )
    names = frame.collect_schema().names() if lazy else frame.columns
    if column not in list(names):
        raise InvalidParameterError(f"The 'column' parameter names no column: {column!r}.")
    if lazy:  # that one column, streamed
        import polars as pl

        return frame.select(pl.col(column)).collect(engine="streaming").to_series()
    return frame[column]


def _arrow_column(table: Any, column: str) -> Any:
    """A pyarrow Table's or RecordBatch's column as numpy (its name and type checked)."""
    from treedp.engines.files import arrow_to_numpy, check_arrow_type

    if not hasattr(table, "schema") or not hasattr(table, "column"):
        raise InvalidTypeError(
            "The 'column' parameter applies to a Table or a file; a "
            f"{type(table).__name__} is one column already: drop 'column'."
        )
    if column not in table.schema.names:
        raise InvalidParameterError(f"The 'column' parameter names no column: {column!r}.")
    check_arrow_type(table.schema.field(column).type, column)
    col = table.column(column)
    chunks = col.chunks if hasattr(col, "chunks") else [col]
    import numpy as np

    return np.concatenate([arrow_to_numpy(c) for c in chunks]) if chunks else np.zeros(0)


def _dask_column(frame: Any, column: str) -> Any:
    return _frame_column(frame, column).compute()  # collected: these methods hold it


def _spark_column(frame: Any, column: str) -> Any:
    from treedp.engines.spark import collect_column

    _frame_column(frame, column)  # checks the name only (a Spark column is not data)
    return collect_column(frame, column)


def _file_column(data: Any, column: str) -> Any:
    """The column of a file, a :class:`FileSource` or a list of files, in memory."""
    import numpy as np

    from treedp.engines.files import FileSource
    from treedp.io import read_column

    options: dict[str, Any] = {}
    if isinstance(data, FileSource):
        options = {"delimiter": data.delimiter, "encoding": data.encoding}
        data = data.path
    if isinstance(data, list | tuple):
        return np.concatenate([read_column(p, column, **options) for p in data])
    return read_column(data, column, **options)


_FILES = (_files_grouped, _files_keys, _files_columns)
for _engine in (
    Engine("files", _is_file, _count_file, True, *_FILES, _file_column),
    Engine("pyarrow_dataset", _is_dataset, _pyarrow, True, *_FILES),
    Engine(
        "spark",
        lambda d: _root(d) == "pyspark",
        _count_spark,
        False,
        _spark_grouped,
        _spark_keys,
        collect=_spark_column,
    ),
    Engine(
        "dask",
        lambda d: _root(d) in ("dask", "dask_expr"),
        _count_dask,
        False,
        _dask_grouped,
        _dask_keys,
        collect=_dask_column,
    ),
    Engine("pandas", lambda d: _root(d) == "pandas", _pandas, collect=_frame_column),
    Engine("polars", lambda d: _root(d) == "polars", _polars, collect=_frame_column),
    Engine("pyarrow", lambda d: _root(d) == "pyarrow", _pyarrow, collect=_arrow_column),
    Engine("memory", lambda d: True, _count_memory),
):
    ENGINES.append(_engine)
