"""Grouped counting and per-person bounding on files: Parquet, CSV, Arrow, directories, globs,
and pyarrow Tables and Datasets, in bounded memory.

Only the needed columns (value, ``by``, person id) are read, in record batches of at most
:data:`treedp.engines.files.paths.BATCH_ROWS` rows.

* **Without a privacy unit** every batch is counted as it arrives
  (:func:`treedp.engines.grouped.count_bounded`) and the ``(G × B)`` counts are added: memory
  ``O(G·B + BATCH_ROWS)``.
* **With a privacy unit** a person's rows must be together before they are sampled, and a file
  is in no order. Two passes, an external hash partition: pass 1 reads the batches, turns each
  row into ``(person hash, key position, bin)`` (16 bytes; rows of unlisted keys or, under
  ``nan="drop"``, with a missing value, key or id are left out here) and appends it to spill
  file ``hash mod P`` in a temporary directory; pass 2 loads one spill file at a time, bounds
  its persons (:func:`treedp.privacy.contribution.bound_contributions`) and counts them. Every
  person is in exactly one spill file, so the bounding is the in-memory one. Memory is that of
  one spill file: about ``rows/P`` rows of 16 bytes plus the sort (about 5× that);
  ``P = max(16, ⌈input bytes / 64 MiB⌉)`` (at most 1024) or the ``partitions`` argument.
  Disk: 16 bytes per kept row, removed afterwards.

Person ids: integer ids are used as they are; any other id is hashed to 64 bits (BLAKE2b of its
text). Two persons whose hashes collide are bounded as one, which only drops more rows: each of
them still keeps within the bounds, so the guarantee is unchanged; hashes are 63 bits, so among
``N`` distinct ids some pair collides with probability about ``N²/2^64`` (``5·10^-8`` for
``10^6`` ids), which costs accuracy only.

CSV cells: the value column follows the file engine's rule (whitespace stripped, the cells of
:data:`treedp.engines.files.csv_reader.NULL_CELLS` missing, numbers else ISO datetimes); ``by`` and
person-id columns are read as text (the same null cells are missing), so public keys are matched
by their text, ``str(key)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from treedp._inputs import arrow_to_numpy, check_arrow_type
from treedp.engines.files.csv_reader import NULL_CELLS, CellKind, convert_arrow_cells
from treedp.engines.files.paths import BATCH_ROWS, FileSource, is_dataset, resolve_paths
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    bin_index,
    column_array,
    count_bounded,
    count_keys,
    encode_keys,
    missing_key_error,
    missing_mask,
    person_missing_error,
)
from treedp.engines.keys import candidate_keys, py_scalar, unique_pairs
from treedp.exceptions import DataError, InvalidParameterError, MissingDependencyError
from treedp.noise import RandomSource
from treedp.privacy.contribution import ContributionBounds, bound_contributions

__all__ = [
    "SPILL_DTYPE",
    "count_grouped_files",
    "file_columns",
    "file_schema",
    "key_counts_files",
]

#: One spilled row: person hash, key position, bin.
SPILL_DTYPE = np.dtype([("p", "<i8"), ("k", "<i4"), ("b", "<i4")])
_SPILL_BYTES = 64 << 20
_MAX_PARTITIONS = 1024


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        raise MissingDependencyError(
            "Grouped releases of files need pyarrow: install treedp[parquet] (pip install pyarrow)."
        ) from None
    return pyarrow


class _Input:
    """Files (or a dataset) resolved, with their column names; nothing read beyond a header."""

    def __init__(self, data: Any) -> None:
        _pyarrow()
        import pyarrow.dataset as ds

        self.delimiter: str | None = None
        self.encoding: str | None = None
        self.dataset: Any = None
        self.files: list[str] = []
        self.kind = "dataset"
        if is_dataset(data):
            self.dataset = data
            self.names = list(data.schema.names)
            return
        path = data
        if isinstance(data, FileSource):
            path, self.delimiter, self.encoding = data.path, data.delimiter, data.encoding
        self.files, self.kind = resolve_paths(path)
        if self.files == ["-"]:
            raise InvalidParameterError(
                "A grouped release reads files, not standard input: give the file's path."
            )
        if self.kind == "csv":
            self.names = _csv_header(self.files[0], self.delimiter, self.encoding)
            for f in self.files[1:]:
                if _csv_header(f, self.delimiter, self.encoding) != self.names:
                    raise InvalidParameterError("The input CSV files have different headers.")
        else:
            fmt: Any
            if self.kind == "parquet":
                fmt = ds.ParquetFileFormat(
                    default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False)
                )
            else:
                fmt = "ipc"
            try:
                self.dataset = ds.dataset(self.files, format=fmt, partitioning="hive")
            except (OSError, ValueError) as exc:
                raise DataError(
                    f"The input could not be read as {self.kind} ({type(exc).__name__})."
                ) from None
            self.names = list(self.dataset.schema.names)

    def size_bytes(self) -> int:
        try:
            return sum(os.path.getsize(f) for f in self.files)
        except OSError:
            return 0

    def batches(self, job: GroupedJob) -> Iterator[tuple[np.ndarray, list[np.ndarray], Any]]:
        """``(values, by columns, person ids or None)`` per batch."""
        cols = job.columns
        if self.dataset is not None:
            check_arrow_type(self.dataset.schema.field(job.column).type, job.column)
            scanner = self.dataset.scanner(
                columns=cols, batch_size=BATCH_ROWS, use_threads=True, batch_readahead=2
            )
            for batch in scanner.to_batches():
                if batch.num_rows:
                    yield _split(batch, job, text=False)
            return
        for f in self.files:
            yield from _csv_batches(f, job, self.delimiter, self.encoding)


def file_columns(data: Any) -> list[str]:
    """The column names of a file input (a header or a schema is read, no values)."""
    return _Input(data).names


def file_schema(data: Any) -> Any:
    """The pyarrow schema of a file input (no values read), or None for CSV read without
    pyarrow."""
    inp = _Input(data)
    return None if inp.dataset is None else inp.dataset.schema


def _split(batch: Any, job: GroupedJob, text: bool) -> tuple[np.ndarray, list[np.ndarray], Any]:
    names = list(batch.schema.names)
    values = arrow_to_numpy(batch.column(names.index(job.column)))
    by = [_key_column(batch.column(names.index(b)), b) for b in job.by]
    person = None
    if job.unit is not None:
        person = _key_column(batch.column(names.index(job.unit)), "privacy_unit")
    return values, by, person


def _key_column(col: Any, name: str) -> np.ndarray:
    import pyarrow as pa

    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return column_array(col.to_numpy(zero_copy_only=False), name)


def _csv_header(path: str, delimiter: str | None, encoding: str | None) -> list[str]:
    import csv
    import gzip

    enc = encoding or "utf-8-sig"
    delim = delimiter or ("\t" if path.lower().endswith((".tsv", ".tsv.gz")) else ",")
    with open(path, "rb") as raw:
        gz = raw.peek(2)[:2] == b"\x1f\x8b"
    opener: Any = gzip.open if gz else open
    try:
        with opener(path, "rt", encoding=enc, newline="") as handle:
            return next(csv.reader(handle, delimiter=delim), [])
    except UnicodeDecodeError:
        raise DataError(f"The input '{path}' is not valid {enc} text; pass its encoding.") from None


def _csv_batches(
    path: str, job: GroupedJob, delimiter: str | None, encoding: str | None
) -> Iterator[tuple[np.ndarray, list[np.ndarray], Any]]:
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv as pacsv

    enc = encoding or "utf8"
    if enc.lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig"):
        enc = "utf8"
    delim = delimiter or ("\t" if path.lower().endswith((".tsv", ".tsv.gz")) else ",")
    cols = job.columns
    nulls = pa.array(list(NULL_CELLS))
    kind = CellKind(job.column)
    try:
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(encoding=enc, block_size=8 << 20),
            parse_options=pacsv.ParseOptions(delimiter=delim),
            convert_options=pacsv.ConvertOptions(
                include_columns=cols,
                column_types={c: pa.string() for c in cols},
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except StopIteration:
        return
    except pa.ArrowInvalid:
        raise DataError(f"The input '{path}' could not be read as CSV.") from None
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except pa.ArrowInvalid:
            raise DataError(f"The input '{path}' could not be read as CSV.") from None
        cleaned = []
        for i in range(batch.num_columns):
            cells = pc.utf8_trim_whitespace(batch.column(i))
            cleaned.append(
                pc.if_else(pc.is_in(cells, value_set=nulls), pa.scalar(None, pa.string()), cells)
            )
        names = list(batch.schema.names)
        values = convert_arrow_cells(cleaned[names.index(job.column)], kind)
        by = [
            column_array(cleaned[names.index(b)].to_numpy(zero_copy_only=False), b) for b in job.by
        ]
        person = None
        if job.unit is not None:
            person = column_array(
                cleaned[names.index(job.unit)].to_numpy(zero_copy_only=False), "privacy_unit"
            )
        yield values, by, person


# ---------------------------------------------------------------------- counting
def count_grouped_files(
    data: Any,
    job: GroupedJob,
    source: RandomSource | None,
    *,
    partitions: int | None = None,
    spill_dir: str | None = None,
) -> GroupedCounts:
    """Bound and count a file input (see the module docstring for the two designs).

    Parameters
    ----------
    data : path, list of paths, FileSource or pyarrow Dataset
        The input; its columns are checked against ``job`` before any value is read.
    job : GroupedJob
        The columns, public keys, bounds, bins and ``nan`` policy.
    source : RandomSource or None
        The sampling randomness (needed with a privacy unit).
    partitions : int, optional
        Spill files with a privacy unit (default from the input's size on disk).
    spill_dir : str, optional
        Where the temporary spill directory goes (default: the system's temporary directory).

    Returns
    -------
    GroupedCounts
        The bounded ``(G × B)`` counts; ``dropped`` counts every row left out (never released).
    """
    inp = _Input(data)
    missing = [c for c in job.columns if c not in inp.names]
    if missing:
        raise InvalidParameterError(
            f"The column '{missing[0]}' is not in the input. Columns: {', '.join(inp.names)}."
        )
    csv_text = inp.kind == "csv"
    keys = tuple(str(k) if not isinstance(k, tuple) else tuple(map(str, k)) for k in job.keys)
    match_job = job if not csv_text or not job.by else _with_keys(job, keys)
    if job.unit is None:
        total = GroupedCounts.zero(job.keys, job.bins.n_bins)
        for values, by, _ in inp.batches(job):
            part = count_bounded(values, by, None, match_job, None)
            total = GroupedCounts(
                job.keys, total.counts + part.counts, total.dropped + part.dropped
            )
        return total
    if source is None:
        raise InvalidParameterError("Contribution bounding needs a random source.")
    if partitions is None:
        partitions = min(_MAX_PARTITIONS, max(16, math.ceil(inp.size_bytes() / _SPILL_BYTES)))
    return _spill_and_count(inp, job, match_job, source, partitions, spill_dir)


def key_counts_files(
    data: Any,
    job: GroupedJob,
    source: RandomSource | None,
    *,
    partitions: int | None = None,
    spill_dir: str | None = None,
) -> KeyCounts:
    """The selection counts of a file input for private key selection (``job.keys`` unused).

    Without a privacy unit each batch's keys are counted as it arrives (memory: the distinct
    keys). With one, the same two passes as :func:`count_grouped_files`: pass 1 spills
    ``(person hash, key id)`` per kept row by ``hash mod P`` (the key id indexes a table of the
    distinct keys met so far, held here); pass 2 loads one spill file at a time, keeps each
    (person, key) pair once, cuts each person to ``max_groups`` keys by uniform sampling and
    counts the persons per key (:func:`treedp.engines.grouped.key_counts`'s rule).
    """
    inp = _Input(data)
    missing = [c for c in job.columns if c not in inp.names]
    if missing:
        raise InvalidParameterError(
            f"The column '{missing[0]}' is not in the input. Columns: {', '.join(inp.names)}."
        )
    if job.unit is None:
        parts = [count_keys(values, by, None, job, None) for values, by, _ in inp.batches(job)]
        return KeyCounts.merge(parts)
    if source is None:
        raise InvalidParameterError("Contribution bounding needs a random source.")
    if partitions is None:
        partitions = min(_MAX_PARTITIONS, max(16, math.ceil(inp.size_bytes() / _SPILL_BYTES)))
    key_ids: dict[Any, int] = {}
    with _spill_files(partitions, spill_dir) as handles:
        for values, by, person in inp.batches(job):
            assert person is not None
            rows = _prepare_keys(values, by, person, job, key_ids)
            _spill(rows, rows["p"] % partitions, handles)
        g = job.bounds.max_groups
        one = ContributionBounds(job.unit, g, g, 1)
        counts = np.zeros(len(key_ids), dtype=np.int64)
        for handle in handles:
            rows = _read_back(handle)
            if not rows.size:
                continue
            pairs = unique_pairs(rows["p"], rows["k"].astype(np.int64))
            kept = bound_contributions(pairs[0], pairs[1], one, source)
            counts += np.bincount(pairs[1][kept], minlength=len(key_ids))
    return KeyCounts.merge([KeyCounts(tuple(key_ids), counts)])


def _prepare_keys(
    values: np.ndarray,
    by: list[np.ndarray],
    person: np.ndarray,
    job: GroupedJob,
    key_ids: dict[Any, int],
) -> np.ndarray:
    """The spill rows ``(person hash, key id, 0)`` of one batch's kept rows; new keys get the
    next id in ``key_ids``."""
    keep = bin_index(values, job.bins, job.nan) >= 0
    gone = missing_mask(person)
    if job.nan == "error" and gone.any():
        raise person_missing_error()
    keep &= ~gone
    key_gone = np.zeros(values.size, dtype=bool)
    for c in by:
        key_gone |= missing_mask(c)
    if job.nan == "error" and key_gone.any():
        raise missing_key_error()
    idx = np.flatnonzero(keep & ~key_gone)
    rows = np.zeros(idx.size, dtype=SPILL_DTYPE)
    if not idx.size:
        return rows
    local, found = candidate_keys([np.asarray(c[idx]) for c in by])
    lookup = np.fromiter(
        (key_ids.setdefault(k, len(key_ids)) for k in found), dtype=np.int64, count=len(found)
    )
    rows["p"] = person_hash(person[idx])
    rows["k"] = lookup[local]
    return rows


def _with_keys(job: GroupedJob, keys: tuple[Any, ...]) -> GroupedJob:
    return GroupedJob(job.column, job.by, keys, job.unit, job.bounds, job.bins, job.nan)


def _spill_and_count(
    inp: _Input,
    job: GroupedJob,
    match_job: GroupedJob,
    source: RandomSource,
    partitions: int,
    spill_dir: str | None,
) -> GroupedCounts:
    g, n_bins = len(job.keys), job.bins.n_bins
    dropped = 0
    with _spill_files(partitions, spill_dir) as handles:
        for values, by, person in inp.batches(job):
            assert person is not None
            rows, hashed = _prepare(values, by, person, match_job)
            dropped += values.size - rows["b"].size
            part = (hashed % partitions).astype(np.int64) if rows.size else hashed
            rows["p"] = hashed
            _spill(rows, part, handles)
        counts = np.zeros(g * n_bins, dtype=np.int64)
        for handle in handles:
            rows = _read_back(handle)
            if not rows.size:
                continue
            kept = bound_contributions(
                rows["p"], rows["k"].astype(np.int64) if job.by else None, job.bounds, source, g
            )
            dropped += rows.size - kept.size
            flat = rows["k"][kept].astype(np.int64) * n_bins + rows["b"][kept]
            counts += np.bincount(flat, minlength=g * n_bins)
    return GroupedCounts(job.keys, counts.reshape(g, n_bins), dropped)


def _prepare(
    values: np.ndarray, by: list[np.ndarray], person: np.ndarray, job: GroupedJob
) -> tuple[np.ndarray, np.ndarray]:
    """The spill rows of one batch (kept records only) and their persons' 64-bit hashes
    (non-negative, so that ``hash mod P`` picks the spill file)."""
    bin_idx = bin_index(values, job.bins, job.nan)
    keep = bin_idx >= 0
    gone = missing_mask(person)
    if job.nan == "error" and gone.any():
        raise person_missing_error()
    keep &= ~gone
    codes = encode_keys(by, job.keys, job.nan) if by else np.zeros(values.size, dtype=np.int64)
    keep &= codes >= 0
    idx = np.flatnonzero(keep)
    rows = np.empty(idx.size, dtype=SPILL_DTYPE)
    rows["k"] = codes[idx]
    rows["b"] = bin_idx[idx]
    hashed = person_hash(person[idx])
    return rows, hashed


def person_hash(ids: np.ndarray) -> np.ndarray:
    """A non-negative int64 per person id: integers as they are (their absolute value mixed with
    the sign), anything else BLAKE2b of its text (one hash per distinct id of the batch)."""
    if ids.dtype.kind in "iu":
        as64 = ids.astype(np.int64, copy=False)
        out: np.ndarray = np.where(as64 >= 0, 2 * as64, -2 * as64 - 1) & np.int64(
            np.iinfo(np.int64).max
        )
        return out
    if ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    try:
        uniq, inverse = np.unique(ids, return_inverse=True)
    except TypeError:  # mixed types: one by one
        uniq, inverse = np.asarray(ids, dtype=object), np.arange(ids.size)
    mask = np.int64(np.iinfo(np.int64).max)
    table = np.fromiter(
        (
            int.from_bytes(
                hashlib.blake2b(str(py_scalar(u)).encode(), digest_size=8).digest(), "little"
            )
            & int(mask)
            for u in uniq
        ),
        dtype=np.int64,
        count=len(uniq),
    )
    hashed: np.ndarray = table[np.asarray(inverse).ravel()]
    return hashed


@contextlib.contextmanager
def _spill_files(partitions: int, spill_dir: str | None) -> Iterator[list[IO[bytes]]]:
    """``partitions`` anonymous temporary files: private rows that no signal can leave behind.

    Each is unnamed from the start (``O_TMPFILE``) or unlinked as soon as it is created
    (:class:`tempfile.TemporaryFile` on POSIX), so no path to the spilled (person hash, key,
    bin) rows exists while they are written or read, and the kernel frees them when the
    handles close or the process ends: on return, an exception, Ctrl-C, SIGTERM, SIGHUP or
    ``kill -9`` alike.
    """
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(tempfile.TemporaryFile(prefix="treedp-spill-", dir=spill_dir))
            for _ in range(partitions)
        ]


def _read_back(handle: IO[bytes]) -> np.ndarray:
    """The rows spilled to ``handle``; its space is given back at once (truncated)."""
    handle.flush()
    handle.seek(0)
    rows = np.fromfile(handle, dtype=SPILL_DTYPE)
    handle.seek(0)
    handle.truncate()
    return rows


def _spill(rows: np.ndarray, part: np.ndarray, handles: list[Any]) -> None:
    """Append each row to the spill file of its partition (``part``: one index per row)."""
    order = np.argsort(part, kind="stable")
    rows, part = rows[order], part[order]
    cuts = np.searchsorted(part, np.arange(len(handles) + 1))
    for i, handle in enumerate(handles):
        if cuts[i + 1] > cuts[i]:
            rows[cuts[i] : cuts[i + 1]].tofile(handle)
