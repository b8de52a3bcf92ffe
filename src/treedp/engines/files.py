"""Count one column of files in bounded memory: Parquet, CSV (gzipped too), Arrow IPC / Feather,
directories, globs and partitioned datasets.

Only the requested column is read, in chunks of at most :data:`BATCH_ROWS` rows. Each chunk is
counted with :func:`treedp.engines.local.count_chunk` on a small thread pool while the next
chunk is decoded (pyarrow decodes on its own threads), and the :class:`BinCounts` are added. At
most a few chunks are in flight at once, so memory does not grow with the number of rows: the
cost is ``O(rows)`` time and ``O(B + workers * BATCH_ROWS)`` memory.

CSV cells follow one rule whichever reader runs (pyarrow's streaming reader, or Python's csv
module when pyarrow is not installed): surrounding whitespace is stripped; the cells in
:data:`NULL_CELLS` are missing values; the column holds numbers if its first non-missing chunk
parses as numbers (every later cell must then be a number), else datetimes (ISO 8601), else it
is not numeric. A UTF-8 byte-order mark is skipped; a row with a different number of fields
than the header, or bytes that are not valid text in the encoding, is an error. No error
message holds a value, a count or a line number of the data.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import io
import os
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from treedp._inputs import as_1d_array
from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.local import Kernel, count_chunk
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    MissingDependencyError,
)

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = [
    "BATCH_ROWS",
    "NULL_CELLS",
    "FileSource",
    "count_chunks",
    "count_path",
    "iter_path_chunks",
    "resolve_paths",
]

#: Rows per chunk read from a file (8 MB of float64).
BATCH_ROWS = 1 << 20
#: Record batches pyarrow decodes ahead of the counting.
READAHEAD = 2

#: CSV cells that are missing values (after stripping whitespace): pyarrow's default list.
NULL_CELLS: tuple[str, ...] = (
    "",
    "#N/A",
    "#N/A N/A",
    "#NA",
    "-1.#IND",
    "-1.#QNAN",
    "-NaN",
    "-nan",
    "1.#IND",
    "1.#QNAN",
    "N/A",
    "NA",
    "NULL",
    "NaN",
    "n/a",
    "nan",
    "null",
)

_PARQUET = (".parquet", ".pq")
_ARROW = (".arrow", ".feather", ".ipc", ".arrows")
_CSV = (".csv", ".csv.gz", ".tsv", ".tsv.gz")
_GLOB = re.compile(r"[*?\[]")
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|infinity)")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?")


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


@dataclass(frozen=True)
class FileSource:
    """A file input with its CSV options, for :func:`treedp.release_cdf` (with ``column=``).

    Attributes
    ----------
    path : str, path or sequence of them
        As :func:`count_path` takes it (file, directory, glob, list of files or ``"-"``).
    delimiter, encoding : str, optional
        CSV field delimiter and text encoding.
    """

    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
    delimiter: str | None = None
    encoding: str | None = None


# ------------------------------------------------------------------------------- counting
def count_chunks(
    chunks: Iterable[np.ndarray],
    bins: Bins,
    nan: NanPolicy = "error",
    *,
    workers: int = 2,
    progress: Callable[[int], None] | None = None,
    kernel: Kernel = "auto",
) -> BinCounts:
    """Count a stream of 1-D numpy chunks on ``workers`` threads and add the counts.

    At most ``2 * workers`` chunks are held at once; the result is the same, bin for bin, as
    counting the concatenated column in one call. ``progress`` is called with the length of
    each chunk once it is counted. On an error (a missing value under ``nan="error"``) the
    chunks not yet counted are abandoned and the error is raised.
    """
    check_nan_policy(nan)
    total = np.zeros(bins.n_bins, dtype=np.int64)
    dropped = 0
    pending: deque[tuple[Future[BinCounts], int]] = deque()

    def collect() -> None:
        nonlocal dropped
        future, size = pending.popleft()
        part = future.result()
        total.__iadd__(part.counts)
        dropped += part.dropped
        if progress is not None:
            progress(size)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for chunk in chunks:
                job = pool.submit(count_chunk, chunk, bins, nan, kernel=kernel)
                pending.append((job, int(chunk.size)))
                while len(pending) >= 2 * workers:
                    collect()
            while pending:
                collect()
        except BaseException:
            for future, _ in pending:
                future.cancel()
            raise
    return BinCounts._trusted(total, dropped)


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
        if kind == "parquet" and _pyarrow() is not None and _parquet_has(files, column):
            return _count_parquet(files, column, bins, nan, workers, tick, kernel)
        chunks = iter_path_chunks(
            files, kind, column, delimiter=delimiter, encoding=encoding, resolved=True
        )
        return count_chunks(chunks, bins, nan, workers=workers, progress=tick, kernel=kernel)


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

    def task(path: str, group: int) -> BinCounts:
        cache = getattr(local, "files", None)
        if cache is None:
            cache = local.files = {}
        pf = cache.get(path)
        if pf is None:
            cache.clear()
            pf = cache[path] = pq.ParquetFile(path, pre_buffer=False)
        total = np.zeros(bins.n_bins, dtype=np.int64)
        dropped = 0
        for batch in pf.iter_batches(
            batch_size=BATCH_ROWS, row_groups=[group], columns=[column], use_threads=False
        ):
            part = count_chunk(arrow_to_numpy(batch.column(0)), bins, nan, kernel=kernel)
            total += part.counts
            dropped += part.dropped
            if tick is not None:
                tick(batch.num_rows)
        return BinCounts._trusted(total, dropped)

    def groups() -> Iterator[tuple[str, int]]:
        for path in files:
            schema = pq.read_schema(path)
            if column not in schema.names:
                raise _missing_column(column, path, list(schema.names))
            check_arrow_type(schema.field(column).type, column)
            for group in range(pq.read_metadata(path).num_row_groups):
                yield path, group

    total = np.zeros(bins.n_bins, dtype=np.int64)
    dropped = 0
    pending: deque[Future[BinCounts]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for path, group in groups():
                pending.append(pool.submit(task, path, group))
                while len(pending) >= 2 * workers:
                    part = pending.popleft().result()
                    total += part.counts
                    dropped += part.dropped
            while pending:
                part = pending.popleft().result()
                total += part.counts
                dropped += part.dropped
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return BinCounts._trusted(total, dropped)


# ------------------------------------------------------------------------------- paths
def resolve_paths(
    path: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
) -> tuple[list[str], str]:
    """The files ``path`` names and their common format (``parquet``, ``csv`` or ``arrow``).

    ``"-"`` is standard input (CSV). Raises :class:`InvalidParameterError` for a path that does
    not exist, a glob or directory without data files, or mixed formats.
    """
    if isinstance(path, str | os.PathLike):
        items = [path]
    elif isinstance(path, Iterable) and not isinstance(path, bytes):
        items = list(path)
        if not items:
            raise InvalidParameterError("The list of input files is empty.")
    else:
        raise InvalidTypeError(
            f"The 'path' argument must be a str or a path. Got {type(path).__name__} instead."
        )
    files: list[str] = []
    for item in items:
        if not isinstance(item, str | os.PathLike):
            raise InvalidTypeError(
                f"The 'path' argument must be a str or a path. Got {type(item).__name__} instead."
            )
        text = os.fspath(item)
        if text == "-":
            if len(items) > 1:
                raise InvalidParameterError("Standard input ('-') cannot be mixed with files.")
            return ["-"], "csv"
        p = Path(text)
        if p.is_dir():
            found = sorted(
                str(f)
                for f in p.rglob("*")
                if f.is_file()
                and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
                and _kind(f.name) is not None
            )
            if not found:
                raise InvalidParameterError(
                    f"The input directory '{p}' holds no .parquet, .csv, .csv.gz or .arrow files."
                )
            files.extend(found)
        elif p.is_file():
            if _kind(p.name) is None:
                raise InvalidParameterError(
                    f"The input file '{p}' must end in .csv, .csv.gz, .parquet, .arrow or .feather."
                )
            files.append(str(p))
        elif _GLOB.search(text):
            found = sorted(f for f in glob.glob(text, recursive=True) if Path(f).is_file())
            found = [f for f in found if _kind(Path(f).name) is not None]
            if not found:
                raise InvalidParameterError(f"The pattern '{text}' matches no data files.")
            files.extend(found)
        else:
            raise InvalidParameterError(f"The input file '{p}' does not exist.")
    kinds = {_kind(Path(f).name) for f in files}
    if len(kinds) != 1:
        raise InvalidParameterError(
            "The input files mix formats (Parquet, CSV, Arrow); give files of one format."
        )
    return files, str(kinds.pop())


def _kind(name: str) -> str | None:
    low = name.lower()
    if low.endswith(_PARQUET):
        return "parquet"
    if low.endswith(_CSV):
        return "csv"
    if low.endswith(_ARROW):
        return "arrow"
    return None


def _total_rows(files: list[str], kind: str) -> int | None:
    """Rows in the files when the metadata says so cheaply (Parquet), for the progress bar."""
    if kind != "parquet" or _pyarrow() is None:
        return None
    import pyarrow.parquet as pq

    try:
        return sum(int(pq.read_metadata(f).num_rows) for f in files)
    except Exception:  # the reader reports a broken file with its own error
        return None


# ------------------------------------------------------------------------------- chunks
def iter_path_chunks(
    path: Any,
    kind: str | None,
    column: str,
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
    use_pyarrow: bool | None = None,
    resolved: bool = False,
) -> Iterator[np.ndarray]:
    """The column of ``path`` as 1-D numpy chunks (numbers or datetime64; NaN/NaT missing).

    Checks (column present, numeric or datetime type) run before the first chunk is yielded
    where the format has a schema (Parquet, Arrow); CSV columns are typed by their first
    non-missing chunk.
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
    arrow = _pyarrow() is not None if use_pyarrow is None else use_pyarrow
    if kind == "csv":
        for f in files:
            if arrow:
                yield from _csv_chunks_arrow(f, column, delimiter, encoding)
            else:
                yield from _csv_chunks_plain(f, column, delimiter, encoding)
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
            dataset = ds.dataset(files, format=fmt, partitioning="hive")
        else:
            dataset = ds.dataset(files, format="ipc")
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"The input '{where}' could not be read as {kind}: {_first(exc)}") from None
    names = dataset.schema.names
    if column not in names:
        raise InvalidParameterError(
            f"The column '{column}' is not in '{where}'. Columns: {', '.join(names)}."
        )
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


def check_arrow_type(t: Any, column: str) -> None:
    """Raise :class:`DataError` unless the Arrow type ``t`` is numeric, decimal or temporal."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_date(t)
        or pa.types.is_null(t)
    ):
        return
    raise DataError(
        f"The column '{column}' is not numeric or datetime (its type is {t}); "
        "treedp releases numeric or datetime columns only."
    )


def arrow_to_numpy(col: Any) -> np.ndarray:
    """One Arrow column (Array or ChunkedArray) as a numpy array: decimals and integers with
    nulls become float64 (nulls NaN), nulls in datetimes NaT, a null column all NaN."""
    import pyarrow as pa

    t = col.type
    if isinstance(col, pa.Array) and col.null_count == 0:
        direct = _primitive_view(col, t)
        if direct is not None:
            return direct
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = t.value_type
    if pa.types.is_null(t):
        return np.full(len(col), np.nan)
    if pa.types.is_decimal(t):
        import pyarrow.compute as pc  # imported only when needed: slow to import

        col = pc.fill_null(col.cast(pa.float64()), float("nan"))
    return as_1d_array(col)


def _primitive_view(col: Any, t: Any) -> np.ndarray | None:
    """A null-free integer or floating Arrow Array as a numpy view of its data buffer (no copy,
    and no import of pandas, which ``Array.to_numpy`` may trigger); ``None`` for other types."""
    import pyarrow as pa

    if pa.types.is_floating(t):
        kind = "f"
    elif pa.types.is_signed_integer(t):
        kind = "i"
    elif pa.types.is_unsigned_integer(t):
        kind = "u"
    else:
        return None
    width = t.bit_width // 8
    dtype = np.dtype(f"<{kind}{width}")
    data = col.buffers()[1]
    if data is None:
        return None
    view: np.ndarray = np.frombuffer(data, dtype=dtype, count=len(col) + col.offset)
    return view[col.offset :]


# ------------------------------------------------------------------------------- CSV
def _csv_header(handle: IO[bytes], encoding: str, delimiter: str, where: str) -> list[str]:
    line = handle.readline()
    try:
        text = line.decode(encoding)
    except UnicodeDecodeError:
        raise _encoding_error(where, _enc_name(encoding)) from None
    return next(csv.reader([text], delimiter=delimiter), [])


def _enc_name(enc: str) -> str:
    return "UTF-8" if enc == "utf-8-sig" else enc


def _encoding_error(where: str, encoding: str) -> DataError:
    return DataError(
        f"The input '{where}' is not valid {encoding} text; pass its encoding (for example "
        "encoding='latin-1')."
    )


def _ragged_error(where: str) -> DataError:
    return DataError(
        f"The CSV input '{where}' has rows whose number of fields differs from its header; "
        "fix the file (or check --delimiter)."
    )


def _missing_column(column: str, where: str, header: list[str]) -> InvalidParameterError:
    return InvalidParameterError(
        f"The column '{column}' is not in '{where}'. Columns: {', '.join(header)}."
    )


def _csv_options(path: str, delimiter: str | None, encoding: str | None) -> tuple[str, str]:
    low = path.lower()
    delim = delimiter or ("\t" if low.endswith((".tsv", ".tsv.gz")) else ",")
    enc = encoding or "utf-8"
    if enc.lower().replace("_", "-") in ("utf-8", "utf8"):
        enc = "utf-8-sig"
    return delim, enc


@contextlib.contextmanager
def _open_binary(path: str) -> Iterator[IO[bytes]]:
    if path == "-":
        yield sys.stdin.buffer
        return
    raw = open(path, "rb")  # noqa: SIM115 (closed below)
    try:
        magic = raw.peek(2)[:2]
        if magic == b"\x1f\x8b":
            with gzip.GzipFile(fileobj=raw) as handle:
                yield handle  # type: ignore[misc]
        else:
            yield raw
    finally:
        raw.close()


class _Kind:
    """The column's kind, decided by its first chunk with a non-missing cell."""

    def __init__(self, column: str) -> None:
        self.column = column
        self.kind: str | None = None

    def not_numeric(self) -> DataError:
        return DataError(
            f"The column '{self.column}' is not numeric or datetime: it holds cells that are "
            "neither numbers nor datetimes (or mixes them)."
        )


def _csv_chunks_arrow(
    path: str, column: str, delimiter: str | None, encoding: str | None
) -> Iterator[np.ndarray]:
    import pyarrow as pa

    delim, enc = _csv_options(path, delimiter, encoding)
    where = "standard input" if path == "-" else path
    header: list[str] = []
    common: dict[str, Any] = {}
    with _open_binary(path) as handle:
        header = _csv_header(handle, enc, delim, where)
        common = {"header": header, "column": column, "delim": delim, "enc": enc, "where": where}
        gz = isinstance(handle, gzip.GzipFile)
        if column not in header:
            raise _missing_column(column, where, header)
        if header.count(column) > 1:
            raise InvalidParameterError(f"The column '{column}' appears twice in '{where}'.")
        if path == "-":  # the header line is consumed; pyarrow reads the rest, on this thread
            yield from _arrow_batches(pa.PythonFile(handle, mode="r"), 0, False, **common)
            return
    # A file is read natively (decompressed and parsed on pyarrow's threads), header skipped.
    stream = pa.input_stream(path, compression="gzip" if gz else None)
    try:
        yield from _arrow_batches(stream, 1, True, **common)
    finally:
        stream.close()


def _arrow_batches(
    source: Any,
    skip: int,
    threads: bool,
    *,
    header: list[str],
    column: str,
    delim: str,
    enc: str,
    where: str,
) -> Iterator[np.ndarray]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    arrow_enc = "utf8" if enc == "utf-8-sig" else enc
    try:
        reader = pacsv.open_csv(
            source,
            read_options=pacsv.ReadOptions(
                column_names=header,
                skip_rows=skip,
                encoding=arrow_enc,
                block_size=8 << 20,
                use_threads=threads,
            ),
            parse_options=pacsv.ParseOptions(delimiter=delim),
            convert_options=pacsv.ConvertOptions(
                include_columns=[column],
                column_types={column: pa.string()},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except StopIteration:
        return
    except pa.ArrowInvalid as exc:
        raise _arrow_csv_error(exc, where, enc) from None
    nulls = pa.array(list(NULL_CELLS))
    state = _Kind(column)
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            raise _arrow_csv_error(exc, where, enc) from None
        cells = pc.utf8_trim_whitespace(batch.column(0))
        cells = pc.if_else(pc.is_in(cells, value_set=nulls), pa.scalar(None, pa.string()), cells)
        yield _convert_arrow_cells(cells, state)


def _arrow_csv_error(exc: BaseException, where: str, enc: str) -> DataError:
    text = str(exc)
    if "columns, got" in text or "Expected" in text:
        return _ragged_error(where)
    if "UTF8" in text or "utf8" in text.lower() or "decode" in text.lower():
        return _encoding_error(where, _enc_name(enc))
    return DataError(f"The input '{where}' could not be read as CSV.")


def _convert_arrow_cells(cells: Any, state: _Kind) -> np.ndarray:
    import pyarrow as pa

    if state.kind is None:
        if cells.null_count == len(cells):
            return np.full(len(cells), np.nan)
        for kind, target in (("number", pa.float64()), ("datetime", pa.timestamp("ns"))):
            try:
                out = cells.cast(target)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                continue
            state.kind = kind
            return as_1d_array(out)
        raise state.not_numeric()
    target = pa.float64() if state.kind == "number" else pa.timestamp("ns")
    try:
        return as_1d_array(cells.cast(target))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise state.not_numeric() from None


def _csv_chunks_plain(
    path: str, column: str, delimiter: str | None, encoding: str | None
) -> Iterator[np.ndarray]:
    delim, enc = _csv_options(path, delimiter, encoding)
    where = "standard input" if path == "-" else path
    with _open_binary(path) as raw:
        header = _csv_header(raw, enc, delim, where)
        if column not in header:
            raise _missing_column(column, where, header)
        if header.count(column) > 1:
            raise InvalidParameterError(f"The column '{column}' appears twice in '{where}'.")
        # Bytes that are not text in the encoding are an error in the requested column only
        # (as for pyarrow, which decodes only the columns it converts): they are kept as
        # surrogates while splitting, and the column's cells are checked.
        text = io.TextIOWrapper(raw, encoding=enc, errors="surrogateescape", newline="")
        try:
            reader = csv.reader(text, delimiter=delim)
            idx, width = header.index(column), len(header)
            state = _Kind(column)
            cells: list[str] = []
            for row in reader:
                if not row:
                    continue
                if len(row) != width:
                    raise _ragged_error(where)
                cell = row[idx]
                if not cell.isascii():
                    _check_text(cell, where, enc)
                cells.append(cell)
                if len(cells) >= BATCH_ROWS:
                    yield _convert_plain_cells(cells, state)
                    cells = []
            if cells:
                yield _convert_plain_cells(cells, state)
        finally:
            text.detach()


def _check_text(cell: str, where: str, enc: str) -> None:
    if any("\udc80" <= ch <= "\udcff" for ch in cell):
        raise _encoding_error(where, _enc_name(enc))


_NULL_SET = frozenset(NULL_CELLS)


def _convert_plain_cells(cells: list[str], state: _Kind) -> np.ndarray:
    stripped = [c.strip() for c in cells]
    present = [c for c in stripped if c not in _NULL_SET]
    if state.kind is None:
        if not present:
            return np.full(len(cells), np.nan)
        if all(_NUMBER.fullmatch(c.lower()) for c in present):
            state.kind = "number"
        elif all(_DATETIME.fullmatch(c) for c in present):
            state.kind = "datetime"
        else:
            raise state.not_numeric()
    if state.kind == "number":
        if not all(_NUMBER.fullmatch(c.lower()) for c in present):
            raise state.not_numeric()
        return np.array(
            [np.nan if c in _NULL_SET else float(c) for c in stripped], dtype=np.float64
        )
    if not all(_DATETIME.fullmatch(c) for c in present):
        raise state.not_numeric()
    try:
        return np.array(
            [
                np.datetime64("NaT") if c in _NULL_SET else np.datetime64(c.replace(" ", "T"))
                for c in stripped
            ],
            dtype="datetime64[ns]",
        )
    except ValueError:
        raise state.not_numeric() from None
