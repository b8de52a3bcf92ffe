"""The files engine: Parquet, CSV (gzipped too), Arrow IPC / Feather files, directories, globs,
lists of files and pyarrow Datasets, counted in bounded memory on this machine.

:mod:`~treedp.engines.files.paths` resolves what a path names;
:mod:`~treedp.engines.files.csv_reader` reads CSV cells under one rule;
:mod:`~treedp.engines.files.count` streams one column into ``B`` bins;
:mod:`~treedp.engines.files.grouped` bounds each person's rows and counts ``G × B`` (two passes
through anonymous spill files with a privacy unit).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from treedp._inputs import join_chunks
from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import Engine, need_column
from treedp.engines.files.count import count_dataset, count_path, iter_path_chunks, read_column
from treedp.engines.files.csv_reader import NULL_CELLS
from treedp.engines.files.grouped import (
    count_grouped_files,
    file_columns,
    key_counts_files,
    person_ids_hashed,
)
from treedp.engines.files.paths import (
    BATCH_ROWS,
    FileSource,
    describe_paths,
    is_dataset,
    is_file_input,
    resolve_paths,
)
from treedp.engines.memory import count_memory

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.local import LocalEngine

__all__ = [
    "BATCH_ROWS",
    "DATASET",
    "ENGINE",
    "NULL_CELLS",
    "FileSource",
    "count_grouped_files",
    "count_path",
    "file_columns",
    "iter_path_chunks",
    "key_counts_files",
    "read_column",
    "resolve_paths",
]


def _count(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    if column is None and isinstance(data, str | list | tuple):  # values, not paths
        return count_memory(data, column, bins, nan, progress, local)
    name = need_column(column, "a file")
    options: dict[str, Any] = {"workers": local.workers, "kernel": local.kernel}
    if isinstance(data, FileSource):
        options.update(delimiter=data.delimiter, encoding=data.encoding)
        data = data.path
    return count_path(data, name, bins, nan, progress=progress, **options)


def _count_dataset(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    name = need_column(column, "a Dataset")
    return count_dataset(
        data, name, bins, nan, progress, workers=local.workers, kernel=local.kernel
    )


def _collect(data: Any, column: str) -> Any:
    """The column of a file, a :class:`FileSource` or a list of files, in memory."""
    options: dict[str, Any] = {}
    if isinstance(data, FileSource):
        options = {"delimiter": data.delimiter, "encoding": data.encoding}
        data = data.path
    if isinstance(data, list | tuple):
        return join_chunks([read_column(p, column, **options) for p in data])
    return read_column(data, column, **options)


_TABLES: dict[str, Any] = {
    "grouped": count_grouped_files,
    "key_counts": key_counts_files,
    "schema": file_columns,
    "auto_bound": True,
    "person_hash": person_ids_hashed,
}
ENGINE = Engine(
    "files", is_file_input, _count, collect=_collect, describe=describe_paths, **_TABLES
)
DATASET = Engine("pyarrow_dataset", is_dataset, _count_dataset, **_TABLES)
