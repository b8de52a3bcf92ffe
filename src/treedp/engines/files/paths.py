"""The files a path names: a file, a directory (Hive partitions too), a glob, a list of them,
or ``"-"`` (CSV on standard input); their one format (Parquet, CSV, Arrow IPC / Feather)."""

from __future__ import annotations

import glob
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "BATCH_ROWS",
    "FileSource",
    "describe_paths",
    "is_dataset",
    "is_file_input",
    "missing_in",
    "resolve_paths",
]

#: Rows per chunk read from a file (8 MB of float64).
BATCH_ROWS = 1 << 20

_PARQUET = (".parquet", ".pq")
_ARROW = (".arrow", ".feather", ".ipc", ".arrows")
_CSV = (".csv", ".csv.gz", ".tsv", ".tsv.gz")
_GLOB = re.compile(r"[*?\[]")


def pyarrow_or_none() -> Any:
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


def missing_in(column: str, where: str, header: list[str]) -> InvalidParameterError:
    """The error for a column that the file(s) ``where`` do not have (their columns named)."""
    return InvalidParameterError(
        f"The column '{column}' is not in '{where}'. {columns_text(header)}"
    )


def columns_text(names: Any) -> str:
    """The columns a file has, for a message (its header: public); an empty file says so."""
    listed = [str(n) for n in names]
    if not listed:
        return "It has no columns: the file is empty (not even a header row)."
    return f"Columns: {', '.join(listed)}."


def is_dataset(data: Any) -> bool:
    """A pyarrow Dataset: an instance of the public ``pyarrow.dataset.Dataset``, checked only
    when the caller has imported ``pyarrow.dataset`` (which makes every Dataset; no import)."""
    module = sys.modules.get("pyarrow.dataset")
    return module is not None and isinstance(data, module.Dataset)


def describe_paths(data: Any, shown: int = 5) -> str:
    """A file input as the user gave it (paths, a directory or a pattern, not the files it
    matched), the first ``shown`` of a list and how many more, for the record of a charge."""
    path = data.path if isinstance(data, FileSource) else data
    items = [path] if isinstance(path, str | os.PathLike) else list(path)
    text = ", ".join(os.fspath(p) for p in items[:shown])
    more = len(items) - shown
    return text if more <= 0 else f"{text} and {more} more"


def is_file_input(data: Any) -> bool:
    """A path, a non-empty list of paths or a :class:`FileSource`."""
    if isinstance(data, os.PathLike | str | FileSource):
        return True
    return (
        isinstance(data, list | tuple)
        and bool(data)
        and all(isinstance(x, str | os.PathLike) for x in data)
    )
