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
from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.local import LocalEngine
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["count_source"]

_LOCAL = LocalEngine(workers=2)


def count_source(
    data: Any,
    *,
    column: str | None,
    bins: Bins,
    nan: NanPolicy = "error",
    progress: bool | None = None,
    engine: LocalEngine | None = None,
) -> BinCounts:
    """Count ``data`` (or its ``column``) into ``bins``, choosing the engine by type.

    Parameters
    ----------
    data : array-like, DataFrame, LazyFrame, Table, Dataset, path, Spark or Dask DataFrame
        See the module's table.
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
    if engine is None:
        engine = _LOCAL
    elif not isinstance(engine, LocalEngine):
        raise InvalidTypeError(
            "The 'engine' parameter must be a treedp.engines.LocalEngine. "
            f"Got {type(engine).__name__} instead."
        )
    elif (type(data).__module__ or "").split(".")[0] in ("pyspark", "dask"):
        raise InvalidParameterError(
            "The 'engine' parameter applies to data counted on this machine; a Spark or Dask "
            "DataFrame is counted on its cluster."
        )
    return _count(data, column, bins, nan, progress, engine)


def _chunk_options(engine: LocalEngine) -> dict[str, Any]:
    """The engine's threads and kernel, for the chunked (streamed) paths."""
    return {"workers": engine.workers, "kernel": engine.kernel}


def _count(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    engine: LocalEngine,
) -> BinCounts:
    if column is not None and not isinstance(column, str):
        raise InvalidTypeError(
            f"The 'column' parameter must be a str. Got {type(column).__name__} instead."
        )
    if isinstance(data, os.PathLike) or (isinstance(data, str) and column is not None):
        from treedp.engines.files import count_path

        _need_column(column, "a file")
        assert column is not None
        return count_path(data, column, bins, nan, progress=progress, **_chunk_options(engine))
    from treedp.engines.files import FileSource

    if isinstance(data, FileSource):
        from treedp.engines.files import count_path

        _need_column(column, "a file")
        assert column is not None
        return count_path(
            data.path,
            column,
            bins,
            nan,
            delimiter=data.delimiter,
            encoding=data.encoding,
            progress=progress,
            **_chunk_options(engine),
        )
    module = type(data).__module__ or ""
    root = module.split(".")[0]
    if root == "pyspark":
        from treedp.engines import spark  # type: ignore[attr-defined,unused-ignore]

        return spark.count_spark(data, column, bins, nan)  # type: ignore[no-any-return]
    if root == "dask":
        from treedp.engines import dask  # type: ignore[attr-defined,unused-ignore]

        return dask.count_dask(data, column, bins, nan)  # type: ignore[no-any-return]
    if root == "pandas":
        return _pandas(data, column, bins, nan, engine)
    if root == "polars":
        return _polars(data, column, bins, nan, engine)
    if root == "pyarrow":
        return _pyarrow(data, column, bins, nan, progress, engine)
    if isinstance(data, dict):
        raise InvalidTypeError(
            "The 'values' argument must be a column or a table, not a dict; pass a DataFrame "
            "with column=..., or the column itself."
        )
    _no_column(column)
    return engine.count(data, bins, nan=nan)


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
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, engine: LocalEngine
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
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, engine: LocalEngine
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
