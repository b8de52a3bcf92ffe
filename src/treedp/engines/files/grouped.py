"""Grouped counting and per-person bounding on files: Parquet, CSV, Arrow, directories, globs,
and pyarrow Tables and Datasets, in bounded memory.

Only the needed columns (value, ``by``, person id) are read, in record batches of at most
:data:`treedp.engines.files.paths.BATCH_ROWS` rows (Parquet files one row group at a time; a
dataset scanner reads ahead several and its memory followed the file). For bounding and
counting, text ``by`` and id columns are dictionary-encoded by Arrow in each batch (no Python
string per row).

* **Without a privacy unit** every batch is counted as it arrives
  (:func:`treedp.engines.grouped.count_bounded`) and the ``(G × B)`` counts are added: memory
  ``O(G·B + BATCH_ROWS)``.
* **With a privacy unit** a person's rows must be together before they are sampled, and a file
  is in no order. Two passes, an external hash partition: pass 1 reads the batches, turns each
  row into ``(person words, key position, bin)`` (24 bytes; rows of unlisted keys or, under
  ``nan="drop"``, with a missing value, key or id are left out here) and appends it to spill
  file ``p mod P`` (``p``: the first person word, as unsigned) in a temporary directory; pass
  2 loads one spill file at a time, bounds its persons
  (:func:`treedp.privacy.contribution.bound_contributions`) and counts them. Every
  person is in exactly one spill file, so the bounding is the in-memory one. Memory is that of
  one batch and one spill file: about ``rows/P`` rows of 24 bytes and a few arrays of 8 bytes
  per row of it (measured: ``docs/benchmarks.md``, "Per-person bounding at agency scale");
  ``P = max(16, ⌈input bytes / 64 MiB⌉, ⌈Parquet rows / 2^20⌉)`` (at most 1024) or the
  ``partitions`` argument.
  Disk: 24 bytes per kept row, removed afterwards. With an ``"auto"`` bound
  (:class:`~treedp.engines.auto_pass.AutoPass`) the spill files are read once more before
  pass 2, one at a time, for the histogram of rows per person (or per (person, key) pair after
  each person's ``max_groups`` keys are drawn; the file then keeps only those rows): the input
  is read once, memory stays that of one spill file, and the spill is read twice.

Person ids (:mod:`treedp.engines.files.person_words`): integer ids are exact (zigzagged to
distinct 64-bit words: no two persons ever merge, no δ). Any other id is hashed: BLAKE2b of its
text keyed with a fresh 32-byte key from the release's random source, truncated to 128 bits
(two words per spilled row; persons equal iff both are). A collision of the added person with
another would let neighbouring inputs differ by up to ``2m`` kept rows, so with text ids the
guarantee is the stated loss **plus** ``δ <= (n - 1)·2**-128`` for ``n`` distinct persons
(:data:`treedp.privacy.collision.COLLISION`; the continual module's statement). Whether ids
are hashed is decided before any value is read, from public information only
(:func:`person_ids_hashed`: the input kind and the id column's schema type), and the release
records the δ (``collision_delta_per_person`` in its spend, ``collision`` in its guarantee).
Every file's id column has the first file's type (``person_words.check_id_types``, from the
schemas, before any value is read); integer id columns with missing ids are dictionary-encoded
(never read as float64 and hashed), and a batch whose ids are not integers when the schema
said integers is refused.

CSV cells: the value column follows the file engine's rule (whitespace stripped, the cells of
:data:`treedp.engines.files.csv_reader.NULL_CELLS` missing, numbers else ISO datetimes); ``by`` and
person-id columns are read as text (the same null cells are missing), so public keys are matched
by their text, ``str(key)``, except in a ``by`` column whose keys all name instants or are all
numbers, matched as instants or numbers (:mod:`treedp.engines.files.csv_instants`).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from typing import IO, Any

import numpy as np

from treedp._codes import Encoded
from treedp._inputs import arrow_to_numpy, check_arrow_type
from treedp.engines.files.column_types import check_exact, unified_schema
from treedp.engines.files.csv_instants import (
    csv_keys,
    instant_column,
    key_kinds,
    number_column,
)
from treedp.engines.files.csv_reader import CellKind, convert_arrow_cells, csv_cells, csv_header
from treedp.engines.files.paths import (
    BATCH_ROWS,
    FileSource,
    columns_text,
    is_dataset,
    resolve_paths,
)
from treedp.engines.files.person_words import PersonWords, check_id_types, person_codes
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    column_array,
    count_bounded,
    count_keys,
    counted_rows,
    missing_keys,
    present_rows,
)
from treedp.engines.keys import candidate_keys, unique_pairs
from treedp.exceptions import DataError, InvalidParameterError, MissingDependencyError
from treedp.noise import RandomSource
from treedp.privacy.auto_mass import mass_counts
from treedp.privacy.contribution import ContributionBounds, bound_contributions

__all__ = [
    "SPILL_DTYPE",
    "count_grouped_files",
    "file_columns",
    "file_schema",
    "key_counts_files",
    "person_ids_hashed",
]

#: One spilled row: the person's two words (:mod:`~treedp.engines.files.person_words`), key
#: position, bin.
SPILL_DTYPE = np.dtype([("p", "<i8"), ("q", "<i8"), ("k", "<i4"), ("b", "<i4")])
_SPILL_BYTES = 64 << 20
_SPILL_ROWS = 1 << 20
#: Rows per batch of a Parquet row group here: three columns and the per-row arrays of
#: bounding (about 150 bytes a row) stay near 40 MB.
_GROUPED_BATCH = 1 << 18
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
            self.names = csv_header(self.files[0], self.delimiter, self.encoding)
            for f in self.files[1:]:
                if csv_header(f, self.delimiter, self.encoding) != self.names:
                    raise InvalidParameterError("The input CSV files have different headers.")
        else:
            fmt: Any
            if self.kind == "parquet":
                fmt = ds.ParquetFileFormat(
                    default_fragment_scan_options=ds.ParquetFragmentScanOptions(pre_buffer=False)
                )
            else:
                fmt = "ipc"
            self._format = fmt
            try:  # the first file's schema; check() gives the job's columns their exact types
                self.dataset = ds.dataset(self.files, format=fmt, partitioning="hive")
            except (OSError, ValueError, TypeError) as exc:  # ArrowTypeError is a TypeError
                hint = (
                    ": its files and its partition directories give a column different types"
                    if isinstance(exc, TypeError)
                    else ""
                )
                raise DataError(
                    f"The input could not be read as {self.kind} ({type(exc).__name__}){hint}."
                ) from None
            self.names = list(self.dataset.schema.names)

    def batches(
        self, job: GroupedJob, encode: bool = False
    ) -> Iterator[tuple[np.ndarray, list[Any], Any]]:
        """``(values, by columns, person ids or None)`` per batch; with ``encode``, text key
        and id columns as :class:`treedp._codes.Encoded` (Arrow's dictionary encoding: no
        Python string per row)."""
        if self.dataset is not None:
            check_arrow_type(self.dataset.schema.field(job.column).type, job.column)
            if self.kind == "parquet" and self.files:
                yield from self._row_groups(job, encode)
                return
            scanner = self.dataset.scanner(
                columns=job.columns, batch_size=BATCH_ROWS, use_threads=True, batch_readahead=2
            )
            for batch in scanner.to_batches():
                if batch.num_rows:
                    yield _split(batch, arrow_to_numpy(batch[job.column]), job, encode)
            return
        kinds = key_kinds(job.keys, len(job.by))  # by cells read as instants, numbers or text
        for f in self.files:
            dated = job.bins.datetime_unit is not None
            kind = CellKind(job.column, job.bins.timezone is not None if dated else None)
            for cells in csv_cells(f, job.columns, self.delimiter, self.encoding):
                values = convert_arrow_cells(cells[job.column], kind)
                yield _split(cells, values, job, encode, kinds)

    def _row_groups(
        self, job: GroupedJob, encode: bool
    ) -> Iterator[tuple[np.ndarray, list[Any], Any]]:
        """Parquet files read one row group at a time (a dataset scanner holds several: its
        memory followed the file's size), or through the scanner for hive partition columns
        that no file holds."""
        import pyarrow.parquet as pq

        # Decided for every file before any is read: deciding at the first file without a
        # column read the files before it twice (an independent review: each of their rows
        # counted twice, twice the stated loss without a privacy unit).
        wanted = set(job.columns)  # each file's footer read once, shared with check_id_types
        if any(not wanted <= set(f.physical_schema.names) for f in self.dataset.get_fragments()):
            scanner = self.dataset.scanner(columns=job.columns, batch_size=BATCH_ROWS)
            for batch in scanner.to_batches():
                if batch.num_rows:
                    yield _split(batch, arrow_to_numpy(batch[job.column]), job, encode)
            return
        for path in self.files:
            pf = pq.ParquetFile(path, pre_buffer=False)
            for group in range(pf.num_row_groups):
                for batch in pf.iter_batches(
                    batch_size=_GROUPED_BATCH,
                    row_groups=[group],
                    columns=job.columns,
                    use_threads=False,
                ):
                    if batch.num_rows:
                        yield _split(batch, arrow_to_numpy(batch[job.column]), job, encode)

    def check(self, job: GroupedJob) -> _Input:
        """This input, after checking that it has the job's columns, each in a type that
        holds every file's exactly (:mod:`treedp.engines.files.column_types`; the person-id
        column is checked more strictly by ``check_id_types``)."""
        missing = [c for c in job.columns if c not in self.names]
        if missing:
            raise InvalidParameterError(
                f"The column '{missing[0]}' is not in the input. {columns_text(self.names)}"
            )
        if self.dataset is not None:
            typed = [c for c in job.columns if c != job.unit]
            if self.files:  # refuses a column without an exact type
                schema = unified_schema(self.dataset, typed)
                if not schema.equals(self.dataset.schema):
                    import pyarrow.dataset as ds

                    self.dataset = ds.dataset(
                        self.files, format=self._format, partitioning="hive", schema=schema
                    )
            else:
                check_exact(self.dataset, typed)  # a user's Dataset: its schema as given
        return self

    def partitions(self, given: int | None) -> int:
        """Spill files: ``given``, or one per 64 MiB of input and, for Parquet, one per
        :data:`_SPILL_ROWS` rows of its metadata (16 to 1024): a spill file, and the memory of
        bounding it, stay small however well the file compresses."""
        if given is not None:
            return given
        try:
            size = sum(os.path.getsize(f) for f in self.files)
        except OSError:
            size = 0
        rows = 0
        if self.kind == "parquet" and self.files:
            import pyarrow.parquet as pq

            try:
                rows = sum(pq.read_metadata(f).num_rows for f in self.files)
            except (OSError, ValueError):
                rows = 0
        wanted = max(math.ceil(size / _SPILL_BYTES), math.ceil(rows / _SPILL_ROWS))
        return min(_MAX_PARTITIONS, max(16, wanted))


def file_columns(data: Any) -> list[str]:
    """The column names of a file input (a header or a schema is read, no values)."""
    return _Input(data).names


def file_schema(data: Any) -> Any:
    """The pyarrow schema of a file input (no values read), or None for CSV read without
    pyarrow."""
    inp = _Input(data)
    return None if inp.dataset is None else inp.dataset.schema


def person_ids_hashed(data: Any, unit: str) -> bool:
    """Whether a release of ``data`` per person ``unit`` hashes the ids (then it carries the
    collision δ), decided from public information only: CSV ids are read as text, so always;
    an Arrow or Parquet id column unless its schema type (or dictionary value type) is an
    integer type. No value is read; a missing column answers True (the release then stops at
    the column check, before any charge)."""
    return _hashes(_Input(data), unit)


def _integer_type(schema: Any, name: str) -> bool:
    import pyarrow as pa

    if name not in schema.names:
        return False
    kind = schema.field(name).type
    kind = kind.value_type if pa.types.is_dictionary(kind) else kind
    return bool(pa.types.is_integer(kind))


def _split(
    cols: Any,
    values: np.ndarray,
    job: GroupedJob,
    encode: bool = False,
    kinds: tuple[str, ...] = (),
) -> tuple[np.ndarray, list[Any], Any]:
    """``(values, by, person ids or None)`` of one batch (``cols``: its Arrow columns by name);
    the ``by`` columns of kind ``"instant"`` or ``"number"`` in ``kinds`` (CSV text) encoded,
    their distinct cells read as instants or numbers
    (:func:`~treedp.engines.files.csv_instants.instant_column`, ``number_column``)."""
    readers = {"instant": instant_column, "number": number_column}
    by = [
        readers[k](_key_column(cols[b], b, True))
        if k in readers
        else _key_column(cols[b], b, encode)
        for b, k in zip(job.by, kinds or ("text",) * len(job.by), strict=True)
    ]
    unit = None if job.unit is None else _key_column(cols[job.unit], "privacy_unit", encode)
    return values, by, unit


def _key_column(col: Any, name: str, encode: bool = False) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    text = pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    value_type = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    # integer ids with nulls: encoded (to_numpy would give float64 ids, hashed as text)
    exact = name == "privacy_unit" and pa.types.is_integer(value_type) and col.null_count > 0
    if exact or (encode and (text or pa.types.is_dictionary(col.type))):
        enc = col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)
        codes = pc.fill_null(enc.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
        uniques = column_array(enc.dictionary.to_numpy(zero_copy_only=False), name)
        return Encoded(codes.astype(np.int64, copy=False), uniques)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    return column_array(col.to_numpy(zero_copy_only=False), name)


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
    inp = _Input(data).check(job)
    keys, g, n_bins = job.keys, len(job.keys), job.bins.n_bins
    if inp.kind == "csv" and job.by:  # by cells are text: keys as text, instants or numbers
        job = replace(job, keys=csv_keys(job.keys, job.by))
    counts = np.zeros(g * n_bins, dtype=np.int64)
    dropped = 0
    if job.unit is None:
        for values, by, _ in inp.batches(job):
            part = count_bounded(values, by, None, job, None)
            counts += part.counts.ravel()
            dropped += part.dropped
        return GroupedCounts(keys, counts.reshape(g, n_bins), dropped)
    if source is None:
        raise InvalidParameterError("Contribution bounding needs a random source.")
    words = PersonWords(source, may_hash=_hashes(inp, job.unit))
    with _spill_files(inp.partitions(partitions), spill_dir) as handles:
        for values, by, person in inp.batches(job, encode=True):
            bin_idx, codes, idx = counted_rows(values, by, person, job)
            dropped += values.size - idx.size
            rows = np.empty(idx.size, dtype=SPILL_DTYPE)
            rows["p"], rows["q"] = words(person[idx])
            rows["k"], rows["b"] = codes[idx], bin_idx[idx]
            _spill(rows, handles)
        if job.auto is not None:  # "auto": the bound chosen between the passes
            job, drawn_out = _auto_pass(handles, job, source, words.hashed)
            dropped += drawn_out
        for rows in _read_back(handles):
            codes = rows["k"].astype(np.int64)
            person_code = person_codes(rows, words.hashed)
            kept = bound_contributions(
                person_code, codes if job.by else None, job.bounds, source, g
            )
            dropped += rows.size - kept.size
            counts += np.bincount(codes[kept] * n_bins + rows["b"][kept], minlength=g * n_bins)
    return GroupedCounts(keys, counts.reshape(g, n_bins), dropped)


def _auto_pass(
    handles: list[IO[bytes]], job: GroupedJob, source: RandomSource, hashed: bool
) -> tuple[GroupedJob, int]:
    """``"auto"``: one more pass over the spill files (not the input), one at a time, adding
    up each file's histogram of rows per person (every person is in one file); per group,
    each file is rewritten with the rows of its persons' drawn keys only. Then the job's
    hook charges and chooses once; the job at the bounds chosen, and the rows the draw left
    out."""
    assert job.auto is not None
    hist = np.zeros(job.auto.grid.size, dtype=np.int64)
    # the mass histogram starts at zeros (not None): spill files left empty by the filters
    # (no key listed, every value missing) give the empty table's histogram, as in memory,
    # and no refusal after the charge (privacy review R7, F1)
    no_rows = np.zeros(0, dtype=np.int64)
    mass = None if job.auto.n_bins is None else mass_counts(no_rows, no_rows, job.auto.grid)
    out = 0
    for handle in handles:
        handle.flush()
        handle.seek(0)
        rows = np.fromfile(handle, dtype=SPILL_DTYPE)
        if not rows.size:
            continue
        part, part_mass, kept = job.auto.histogram(
            person_codes(rows, hashed),
            rows["k"].astype(np.int64),
            rows["b"].astype(np.int64),
            source,
            len(job.keys),
        )
        hist += part
        if part_mass is not None:
            mass = part_mass if mass is None else mass + part_mass
        if kept is not None:
            out += rows.size - kept.size
            handle.seek(0)
            handle.truncate()
            np.take(rows, kept).tofile(handle)
    return replace(job, bounds=job.auto.choose(hist, mass), auto=None), out


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
    ``(person words, key id)`` per kept row by ``p mod P`` (the key id indexes a table of the
    distinct keys met so far, held here); pass 2 loads one spill file at a time, keeps each
    (person, key) pair once, cuts each person to ``max_groups`` keys by uniform sampling and
    counts the persons per key (:func:`treedp.engines.grouped.key_counts`'s rule).
    """
    inp = _Input(data).check(job)
    if job.unit is None:
        return KeyCounts.merge(count_keys(v, by, None, job, None) for v, by, _ in inp.batches(job))
    if source is None:
        raise InvalidParameterError("Contribution bounding needs a random source.")
    key_ids: dict[Any, int] = {}
    g = job.bounds.max_groups
    one = ContributionBounds(job.unit, g, g, 1)
    words = PersonWords(source, may_hash=_hashes(inp, job.unit))
    with _spill_files(inp.partitions(partitions), spill_dir) as handles:
        for values, by, person in inp.batches(job):
            _, keep = present_rows(values, person, job)
            idx = np.flatnonzero(keep & ~missing_keys(by, job.nan, values.size))
            rows = np.zeros(idx.size, dtype=SPILL_DTYPE)
            if idx.size:
                local, found = candidate_keys([np.asarray(c[idx]) for c in by])
                ids = [key_ids.setdefault(k, len(key_ids)) for k in found]
                rows["p"], rows["q"] = words(person[idx])
                rows["k"] = np.asarray(ids)[local]
            _spill(rows, handles)
        counts = np.zeros(len(key_ids), dtype=np.int64)
        for rows in _read_back(handles):
            pairs = unique_pairs(person_codes(rows, words.hashed), rows["k"].astype(np.int64))
            kept = bound_contributions(pairs[0], pairs[1], one, source)
            counts += np.bincount(pairs[1][kept], minlength=len(key_ids))
    return KeyCounts.merge([KeyCounts(tuple(key_ids), counts)])


def _hashes(inp: _Input, unit: str | None) -> bool:
    """:func:`person_ids_hashed` of a resolved input (the decision the release records), after
    :func:`~treedp.engines.files.person_words.check_id_types` (one id type in every file)."""
    if unit is None:
        return False
    if inp.dataset is None:
        return True
    check_id_types(inp.dataset, unit, scanned=inp.kind != "parquet")
    return not _integer_type(inp.dataset.schema, unit)


@contextlib.contextmanager
def _spill_files(partitions: int, spill_dir: str | None) -> Iterator[list[IO[bytes]]]:
    """``partitions`` anonymous temporary files: private rows that no signal can leave behind.

    Each is unnamed from the start (``O_TMPFILE``) or unlinked as soon as it is created
    (:class:`tempfile.TemporaryFile` on POSIX), so no path to the spilled (person words, key,
    bin) rows exists while they are written or read, and the kernel frees them when the
    handles close or the process ends: on return, an exception, Ctrl-C, SIGTERM, SIGHUP or
    ``kill -9`` alike.
    """
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(tempfile.TemporaryFile(prefix="treedp-spill-", dir=spill_dir))
            for _ in range(partitions)
        ]


def _read_back(handles: list[IO[bytes]]) -> Iterator[np.ndarray]:
    """The rows spilled to each handle in turn (none empty); each file's space is given back
    once it is read (truncated)."""
    for handle in handles:
        handle.flush()
        handle.seek(0)
        rows = np.fromfile(handle, dtype=SPILL_DTYPE)
        handle.seek(0)
        handle.truncate()
        if rows.size:
            yield rows


def _spill(rows: np.ndarray, handles: list[Any]) -> None:
    """Append each row to the spill file of its person (``p mod P``, ``p`` as unsigned)."""
    part = (rows["p"].view(np.uint64) % np.uint64(len(handles))).astype(np.int64)
    order = np.argsort(part, kind="stable")
    rows, part = np.take(rows, order), part[order]  # take: 24-byte rows, no slow copy
    cuts = np.searchsorted(part, np.arange(len(handles) + 1))
    for i, handle in enumerate(handles):
        if cuts[i + 1] > cuts[i]:
            rows[cuts[i] : cuts[i + 1]].tofile(handle)
