"""Count one column of files in bounded memory: Parquet, CSV (gzipped too), Arrow IPC / Feather,
directories, globs, partitioned datasets and pyarrow Datasets.

Only the requested column is read, in chunks of at most :data:`BATCH_ROWS` rows. Each chunk is
counted with :func:`treedp.engines.local.count_chunk` on a small thread pool while the next
chunk is decoded (pyarrow decodes on its own threads), and the :class:`BinCounts` are added. At
most a few chunks are in flight at once, so memory does not grow with the number of rows: the
cost is ``O(rows)`` time and ``O(B + workers * BATCH_ROWS)`` memory. CSV cells follow the rule
of :mod:`treedp.engines.files.csv_reader`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._inputs import arrow_to_numpy, check_arrow_type, join_chunks
from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy, sum_counts
from treedp.engines.entry import missing_column
from treedp.engines.files.column_types import check_exact, exact_dataset, unified_schema
from treedp.engines.files.csv_reader import csv_chunks_arrow, csv_chunks_plain
from treedp.engines.files.paths import BATCH_ROWS, missing_in, pyarrow_or_none, resolve_paths
from treedp.engines.local import Kernel, count_chunk, count_chunks, pooled
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    MissingDependencyError,
)

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["READAHEAD", "count_dataset", "count_path", "iter_path_chunks", "read_column"]

#: Record batches pyarrow decodes ahead of the counting.
READAHEAD = 2


def count_path(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    column: str,
    bins: Bins,
    nan: NanPolicy = "error",
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
    progress: bool | None = None,
    workers: int = 2,
    kernel: Kernel = "auto",
) -> BinCounts:
    """Count ``column`` of a file, directory, glob, list of files, or ``"-"`` (CSV on stdin).

    Parameters
    ----------
    path : str, path or list of them
        A ``.parquet``/``.pq``, ``.csv``/``.csv.gz``/``.tsv``, ``.arrow``/``.feather`` file; a
        directory (every such file below it, hidden and ``_``-prefixed files skipped; Hive
        partitions for Parquet); a glob pattern; or ``"-"`` for CSV on standard input.
    column : str
        The column to count; only it is read.
    bins : Bins
        The public bins.
    nan : {"error", "drop"}, default="error"
        The missing-value policy.
    delimiter, encoding : str, optional
        CSV field delimiter (default ``,``; tab for ``.tsv``) and text encoding (default
        UTF-8, a byte-order mark skipped).
    progress : bool, optional
        Show a progress bar (None: on an interactive terminal only, never in CI).
    workers : int, default=2
        Counting threads.
    kernel : {"auto", "numpy", "numba"}, default="auto"
        The counting kernel for each chunk (:class:`treedp.engines.LocalEngine`).

    Returns
    -------
    BinCounts

    Raises
    ------
    InvalidTypeError, InvalidParameterError, DataError, MissingDependencyError
        As :func:`treedp.io.read_column`, and :class:`DataError` from counting.
    """
    from treedp.engines.progress import progress_bar

    files, kind = resolve_paths(path)
    check_nan_policy(nan)
    with progress_bar(progress, total=_total_rows(files, kind)) as tick:
        if kind == "parquet" and pyarrow_or_none() is not None and _parquet_has(files, column):
            _one_type(files, column)  # one column type, as the scanner's paths have
            return _count_parquet(files, column, bins, nan, workers, tick, kernel)
        aware = None if bins.datetime_unit is None else bins.timezone is not None
        chunks = iter_path_chunks(
            files, kind, column, delimiter=delimiter, encoding=encoding, resolved=True,
            expect_aware=aware,
        )  # fmt: skip
        return count_chunks(chunks, bins, nan, workers=workers, progress=tick, kernel=kernel)


def _one_type(files: list[str], column: str) -> None:
    """Refuse Parquet files whose ``column`` has no one exact type (from every footer,
    :mod:`treedp.engines.files.column_types`); a footer that cannot be read is a
    :class:`DataError` naming the input, as the dataset path reports it."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    try:
        unified_schema(ds.dataset(files, format="parquet"), [column])
    except (pa.ArrowInvalid, OSError) as exc:
        where = files[0] if len(files) == 1 else f"{len(files)} files"
        read = f"The input '{where}' could not be read as parquet: {_first(exc)}"
        raise DataError(read) from None


def _parquet_has(files: list[str], column: str) -> bool:
    """Whether the first file holds ``column`` (else a Hive partition key, or missing: the
    dataset path reports it)."""
    import pyarrow.parquet as pq

    try:
        return column in pq.read_schema(files[0]).names
    except Exception:  # the dataset path reports a broken file with its own error
        return False


def _count_parquet(
    files: list[str],
    column: str,
    bins: Bins,
    nan: NanPolicy,
    workers: int,
    tick: Callable[[int], None] | None,
    kernel: Kernel = "auto",
) -> BinCounts:
    """Parquet row groups read and counted on ``workers`` threads, each reading its own row
    group batch by batch: at most ``2 * workers`` row groups are in flight, so memory is
    bounded by the row-group size, never by the file size."""
    import pyarrow.parquet as pq

    local = threading.local()

    def count(batch: Any) -> BinCounts:
        part = count_chunk(arrow_to_numpy(batch.column(0)), bins, nan, kernel=kernel)
        if tick is not None:
            tick(batch.num_rows)
        return part

    def task(item: tuple[str, int]) -> BinCounts:
        path, group = item
        cache = getattr(local, "files", None)
        if cache is None:
            cache = local.files = {}
        pf = cache.get(path)
        if pf is None:
            cache.clear()
            pf = cache[path] = pq.ParquetFile(path, pre_buffer=False)
        batches = pf.iter_batches(
            batch_size=BATCH_ROWS, row_groups=[group], columns=[column], use_threads=False
        )
        return sum_counts(map(count, batches), bins.n_bins)

    def groups() -> Iterator[tuple[str, int]]:
        for path in files:
            schema = pq.read_schema(path)
            if column not in schema.names:
                raise missing_in(column, path, list(schema.names))
            check_arrow_type(schema.field(column).type, column)
            for group in range(pq.read_metadata(path).num_row_groups):
                yield path, group

    return sum_counts(pooled(task, groups(), workers), bins.n_bins)


def _total_rows(files: list[str], kind: str) -> int | None:
    """Rows in the files when the metadata says so cheaply (Parquet), for the progress bar."""
    if kind != "parquet" or pyarrow_or_none() is None:
        return None
    import pyarrow.parquet as pq

    try:
        return sum(int(pq.read_metadata(f).num_rows) for f in files)
    except Exception:  # the reader reports a broken file with its own error
        return None


def iter_path_chunks(
    path: Any,
    kind: str | None,
    column: str,
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
    use_pyarrow: bool | None = None,
    resolved: bool = False,
    expect_aware: bool | None = None,
) -> Iterator[np.ndarray]:
    """The column of ``path`` as 1-D numpy chunks (numbers or datetime64; NaN/NaT missing).

    Checks (column present, numeric or datetime type) run before the first chunk is yielded
    where the format has a schema (Parquet, Arrow); CSV columns are typed by their first
    non-missing chunk. CSV times with a UTC offset come as UTC instants; ``expect_aware``
    (tz-aware bins or naive ones) refuses cells written the other way.
    """
    if not isinstance(column, str):
        raise InvalidTypeError(
            f"The 'column' argument must be a str. Got {type(column).__name__} instead."
        )
    if delimiter is not None and (not isinstance(delimiter, str) or len(delimiter) != 1):
        raise InvalidParameterError("The delimiter must be a single character.")
    if encoding is not None:
        if not isinstance(encoding, str):
            raise InvalidTypeError("The encoding must be a str such as 'utf-8' or 'latin-1'.")
        import codecs

        try:
            codecs.lookup(encoding)
        except LookupError:
            raise InvalidParameterError(f"The encoding '{encoding}' is not known.") from None
    files, kind = (path, kind) if resolved else resolve_paths(path)
    arrow = pyarrow_or_none() is not None if use_pyarrow is None else use_pyarrow
    if kind == "csv":
        for f in files:
            read = csv_chunks_arrow if arrow else csv_chunks_plain
            yield from read(f, column, delimiter, encoding, expect_aware)
        return
    if not arrow:
        raise MissingDependencyError(
            f"Reading {'Parquet' if kind == 'parquet' else 'Arrow'} files needs pyarrow: "
            "install treedp[parquet] (pip install pyarrow)."
        )
    yield from _dataset_chunks(files, str(kind), column)


def _dataset_chunks(files: list[str], kind: str, column: str) -> Iterator[np.ndarray]:
    import pyarrow as pa
    import pyarrow.dataset as ds

    where = files[0] if len(files) == 1 else f"{len(files)} files"
    try:
        if kind == "parquet":
            # pre_buffer=False: pyarrow's pre-buffering reads ahead whole column chunks of
            # every row group of a file (memory grows with the file); without it memory is
            # bounded by the batch readahead below, and it was also faster here.
            fmt: Any = ds.ParquetFileFormat(
                default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False)
            )
            dataset = exact_dataset(files, fmt, [column], partitioning="hive")
        else:
            dataset = exact_dataset(files, "ipc", [column])
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"The input '{where}' could not be read as {kind}: {_first(exc)}") from None
    names = dataset.schema.names
    if column not in names:
        raise missing_in(column, where, names)
    check_arrow_type(dataset.schema.field(column).type, column)
    scanner = dataset.scanner(
        columns=[column],
        batch_size=BATCH_ROWS,
        use_threads=True,
        batch_readahead=READAHEAD,
        fragment_readahead=1,
    )
    for batch in scanner.to_batches():
        if batch.num_rows:
            yield arrow_to_numpy(batch.column(0))


def _first(exc: BaseException) -> str:
    """The first line of a reader's message, without anything after a colon-quoted value."""
    return str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__


def count_dataset(
    data: Any, column: str, bins: Bins, nan: NanPolicy, progress: bool | None, **options: Any
) -> BinCounts:
    """Count ``column`` of a pyarrow Dataset, streamed: only that column is read."""
    import pyarrow.dataset as ds

    from treedp.engines.progress import progress_bar

    if column not in data.schema.names:
        raise missing_column(column, data.schema.names)
    check_arrow_type(data.schema.field(column).type, column)
    check_exact(data, [column])
    scan: dict[str, Any] = {}
    if isinstance(getattr(data, "format", None), ds.ParquetFileFormat):
        scan["fragment_scan_options"] = ds.ParquetFragmentScanOptions(pre_buffer=False)
    scanner = data.scanner(
        columns=[column], use_threads=True, batch_readahead=2, fragment_readahead=1, **scan
    )
    with progress_bar(progress, total=None) as tick:
        chunks = (arrow_to_numpy(b.column(0)) for b in scanner.to_batches() if b.num_rows)
        return count_chunks(chunks, bins, nan, progress=tick, **options)


def read_column(
    path: str | os.PathLike[str],
    column: str,
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
    offsets: bool | None = None,
) -> np.ndarray:
    """Return ``column`` of the file(s) at ``path`` as one numpy array.

    ``path`` is a CSV (optionally gzipped), Parquet or Arrow / Feather file, a directory, a glob
    or ``"-"`` (CSV on standard input). Parquet and Arrow need pyarrow
    (``pip install treedp[parquet]``); CSV uses pyarrow when it is installed and Python's csv
    module otherwise, with the same cell rules (:mod:`treedp.engines.files.csv_reader`).
    Missing cells become NaN (or NaT); decimals become float64. CSV datetime cells with a UTC
    offset (``Z``, ``+01:00``) come back as naive UTC instants; ``offsets=True`` requires every
    such cell to carry one and ``offsets=False`` none (the check ``treedp release`` makes
    against naive or tz-aware bounds), None takes either if the whole column agrees.

    Raises
    ------
    InvalidTypeError
        If ``path`` is not a str or path, or ``column`` is not a str.
    InvalidParameterError
        If the file does not exist, its format is unknown, or the column is missing.
    DataError
        If the column is neither numeric nor datetime, or the CSV is malformed.
    InvalidTypeError
        If CSV datetime cells mix offsets and none, or disagree with ``offsets``.
    MissingDependencyError
        For Parquet or Arrow without pyarrow.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidTypeError(
            f"The 'path' argument must be a str or a path. Got {type(path).__name__} instead."
        )
    if not isinstance(column, str):
        raise InvalidTypeError(
            f"The 'column' argument must be a str. Got {type(column).__name__} instead."
        )
    if offsets is not None and not isinstance(offsets, bool):
        raise InvalidTypeError(
            f"The 'offsets' argument must be True, False or None. Got {type(offsets).__name__}."
        )
    files, kind = resolve_paths(path)
    chunks = list(
        iter_path_chunks(
            files,
            kind,
            column,
            delimiter=delimiter,
            encoding=encoding,
            resolved=True,
            expect_aware=offsets,
        )
    )
    # no rows, or CSV cells all empty: kindless (the public bounds or bins give the kind; an
    # empty file was float, refused under datetime bins where a one-row file was released)
    return join_chunks(chunks)
