"""CSV columns as numpy chunks, by pyarrow's streaming reader or, without pyarrow, Python's
csv module, under one rule.

Surrounding whitespace is stripped; the cells in :data:`NULL_CELLS` are missing values; the
column holds numbers if its first non-missing chunk parses as numbers (every later cell must
then be a number), else datetimes (ISO 8601), else it is not numeric. A UTF-8 byte-order mark
is skipped; a row with a different number of fields than the header, or bytes that are not
valid text in the encoding, is an error. No error message holds a value, a count or a line
number of the data.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import re
import sys
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from treedp._inputs import as_1d_array, kindless
from treedp.engines.files.paths import BATCH_ROWS, missing_in
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.timezones import aware_bound

__all__ = [
    "NULL_CELLS",
    "CellKind",
    "convert_arrow_cells",
    "csv_cells",
    "csv_chunks_arrow",
    "csv_chunks_plain",
    "csv_header",
]

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

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|infinity)")
_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?")
#: An ISO 8601 time with a UTC offset (``Z``, ``+05:30``, ``+0530``, ``-04``).
_DATETIME_TZ = re.compile(
    r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:[Zz]|[+-]\d{2}(?::?\d{2})?)"
)


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


class CellKind:
    """The column's kind, decided by its first chunk with a non-missing cell; for datetimes
    whether the cells carry a UTC offset (``aware``), which every cell must then share and
    which must match the bins (``expect_aware``: tz-aware bins, naive bins, or None when no
    bins are known). A cell's offset only places it on the UTC timeline: the zone of the
    answers is the bins' (:mod:`treedp.timezones`)."""

    def __init__(self, column: str, expect_aware: bool | None = None) -> None:
        self.column = column
        self.kind: str | None = None
        self.aware: bool | None = None
        self.expect_aware = expect_aware

    def settle(self, aware: bool) -> None:
        """Record whether a chunk's datetimes carry offsets; refuse a mix or a mismatch."""
        if self.aware is not None and self.aware != aware:
            raise self.mixed()
        self.aware = aware
        if self.expect_aware is not None and aware != self.expect_aware:
            raise InvalidTypeError(
                f"The column '{self.column}' holds times with a UTC offset (such as 'Z' or "
                "'+00:00') but the bounds are naive: give bounds with a zone (ending in Z "
                "or an offset such as +01:00) or, in the CLI, --tz."
                if aware
                else f"The column '{self.column}' holds times without a UTC offset but the "
                "bounds carry a time zone: give naive bounds (and, for private bounds, no "
                "time zone)."
            )

    def mixed(self) -> InvalidTypeError:
        return InvalidTypeError(
            f"The column '{self.column}' mixes times with a UTC offset and times without one; "
            "write every cell with its offset (or none)."
        )

    def not_numeric(self) -> InvalidTypeError:
        return InvalidTypeError(
            f"The column '{self.column}' is not numeric or datetime: it holds cells that are "
            "neither numbers nor datetimes (or mixes them)."
        )


def csv_header(path: str, delimiter: str | None, encoding: str | None) -> list[str]:
    """The column names in the header of a CSV file."""
    delim, enc = _csv_options(path, delimiter, encoding)
    with _open_binary(path) as handle:
        return _csv_header(handle, enc, delim, path)


def csv_cells(
    path: str, columns: list[str], delimiter: str | None, encoding: str | None
) -> Iterator[dict[str, Any]]:
    """The cells of ``columns`` (each in the header once) of a CSV file or ``"-"``, per batch
    read by pyarrow: ``{name: strings}``, whitespace stripped, :data:`NULL_CELLS` null."""
    import pyarrow as pa

    delim, enc = _csv_options(path, delimiter, encoding)
    where = "standard input" if path == "-" else path
    with _open_binary(path) as handle:
        header = _csv_header(handle, enc, delim, where)
        for column in columns:
            _check_header(header, column, where)
        common: dict[str, Any] = {"header": header, "columns": columns, "enc": enc}
        common.update(delim=delim, where=where)
        gz = isinstance(handle, gzip.GzipFile)
        if path == "-":  # the header line is consumed; pyarrow reads the rest, on this thread
            yield from _arrow_batches(pa.PythonFile(handle, mode="r"), 0, False, **common)
            return
    # A file is read natively (decompressed and parsed on pyarrow's threads), header skipped.
    stream = pa.input_stream(path, compression="gzip" if gz else None)
    try:
        yield from _arrow_batches(stream, 1, True, **common)
    finally:
        stream.close()


def _check_header(header: list[str], column: str, where: str) -> None:
    if column not in header:
        raise missing_in(column, where, header)
    if header.count(column) > 1:
        raise InvalidParameterError(f"The column '{column}' appears twice in '{where}'.")


def csv_chunks_arrow(
    path: str,
    column: str,
    delimiter: str | None,
    encoding: str | None,
    expect_aware: bool | None = None,
) -> Iterator[np.ndarray]:
    state = CellKind(column, expect_aware)
    for cells in csv_cells(path, [column], delimiter, encoding):
        yield convert_arrow_cells(cells[column], state)


def _arrow_batches(
    source: Any,
    skip: int,
    threads: bool,
    *,
    header: list[str],
    columns: list[str],
    delim: str,
    enc: str,
    where: str,
) -> Iterator[dict[str, Any]]:
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
                include_columns=columns,
                column_types={c: pa.string() for c in columns},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except StopIteration:
        return
    except pa.ArrowInvalid as exc:
        raise _arrow_csv_error(exc, where, enc) from None
    nulls = pa.array(list(NULL_CELLS))
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid as exc:
            raise _arrow_csv_error(exc, where, enc) from None
        cells = {}
        for name, col in zip(batch.schema.names, batch.columns, strict=True):
            col = pc.utf8_trim_whitespace(col)
            cells[name] = pc.if_else(pc.is_in(col, value_set=nulls), pa.scalar(None, col.type), col)
        yield cells


def _arrow_csv_error(exc: BaseException, where: str, enc: str) -> DataError:
    text = str(exc)
    if "columns, got" in text or "Expected" in text:
        return _ragged_error(where)
    if "UTF8" in text or "utf8" in text.lower() or "decode" in text.lower():
        return _encoding_error(where, _enc_name(enc))
    return DataError(f"The input '{where}' could not be read as CSV.")


def convert_arrow_cells(cells: Any, state: CellKind) -> np.ndarray:
    import pyarrow as pa

    if state.kind is None:
        if cells.null_count == len(cells):  # no kind yet: the public bounds or bins decide
            return kindless(len(cells))
        try:
            out = cells.cast(pa.float64())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            state.kind = "datetime"  # or neither: the datetime casts tell
            try:
                return _arrow_datetimes(cells, state)
            except InvalidTypeError:  # neither numbers nor datetimes, or mixed offsets
                state.kind = None
                raise
        state.kind = "number"
        return as_1d_array(out)
    if state.kind == "datetime":
        return _arrow_datetimes(cells, state)
    try:
        return as_1d_array(cells.cast(pa.float64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise state.not_numeric() from None


def _arrow_datetimes(cells: Any, state: CellKind) -> np.ndarray:
    """Cells as naive datetimes, or as UTC instants when they carry offsets (every one)."""
    import pyarrow as pa

    failed = (pa.ArrowInvalid, pa.ArrowNotImplementedError)
    results = []
    # Microseconds: the years 1 to 9999, placeholder dates such as 0001-01-01 and 9999-12-31
    # included (nanoseconds stop at 1677 and 2262; a cell there was refused after the read,
    # privacy review of datetime bounds F2). A cell's digits below a microsecond are floored:
    # exact against edges in whole microseconds, as every bound treedp builds is.
    targets = [(False, pa.timestamp("us")), (True, pa.timestamp("us", "UTC"))]
    if state.aware:  # the first chunk decided: try its kind first
        targets.reverse()
    for aware, target in targets:
        try:
            results.append((aware, cells.cast(target)))
        except failed:
            continue
        break
    if not results:
        import pyarrow.compute as pc

        either = pc.match_substring_regex(
            cells, f"^(?:{_DATETIME.pattern}|{_DATETIME_TZ.pattern})$"
        )
        if pc.all(either).as_py() is not False:
            raise state.mixed()
        raise state.not_numeric()
    aware, out = results[0]
    if cells.null_count == len(cells):
        return as_1d_array(out)
    state.settle(aware)
    return as_1d_array(out)


def csv_chunks_plain(
    path: str,
    column: str,
    delimiter: str | None,
    encoding: str | None,
    expect_aware: bool | None = None,
) -> Iterator[np.ndarray]:
    delim, enc = _csv_options(path, delimiter, encoding)
    where = "standard input" if path == "-" else path
    with _open_binary(path) as raw:
        header = _csv_header(raw, enc, delim, where)
        _check_header(header, column, where)
        # Bytes that are not text in the encoding are an error in the requested column only
        # (as for pyarrow, which decodes only the columns it converts): they are kept as
        # surrogates while splitting, and the column's cells are checked.
        text = io.TextIOWrapper(raw, encoding=enc, errors="surrogateescape", newline="")
        try:
            reader = csv.reader(text, delimiter=delim)
            idx, width = header.index(column), len(header)
            state = CellKind(column, expect_aware)
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


def _convert_plain_cells(cells: list[str], state: CellKind) -> np.ndarray:
    stripped = [c.strip() for c in cells]
    present = [c for c in stripped if c not in _NULL_SET]
    if state.kind is None:
        if not present:
            return np.full(len(cells), np.nan)
        if all(_NUMBER.fullmatch(c.lower()) for c in present):
            state.kind = "number"
        elif all(_DATETIME.fullmatch(c) or _DATETIME_TZ.fullmatch(c) for c in present):
            state.kind = "datetime"
        else:
            raise state.not_numeric()
    if state.kind == "number":
        if not all(_NUMBER.fullmatch(c.lower()) for c in present):
            raise state.not_numeric()
        return np.array(
            [np.nan if c in _NULL_SET else float(c) for c in stripped], dtype=np.float64
        )
    naive = [bool(_DATETIME.fullmatch(c)) for c in present]
    if not all(naive) and not all(_DATETIME_TZ.fullmatch(c) for c in present):
        if all(ok or _DATETIME_TZ.fullmatch(c) for ok, c in zip(naive, present, strict=True)):
            raise state.mixed()
        raise state.not_numeric()
    if present:
        state.settle(not naive[0])
    try:
        return np.array(
            [np.datetime64("NaT") if c in _NULL_SET else aware_bound(c)[0] for c in stripped],
            dtype="datetime64[us]",
        )
    except ValueError:
        raise state.not_numeric() from None
