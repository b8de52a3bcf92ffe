"""Read one column of a file into a numpy array (numbers or datetimes).

For counting, prefer :func:`treedp.release_cdf` with a path and ``column=``: it streams the file
in bounded memory (:mod:`treedp.engines.files`). :func:`read_column` materialises the whole
column, for mechanisms that need the values themselves (the medians).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from treedp.exceptions import InvalidTypeError

__all__ = ["read_column"]


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def read_column(
    path: str | Path,
    column: str,
    *,
    delimiter: str | None = None,
    encoding: str | None = None,
) -> np.ndarray:
    """Return ``column`` of the file(s) at ``path`` as one numpy array.

    ``path`` is a CSV (optionally gzipped), Parquet or Arrow / Feather file, a directory, a glob
    or ``"-"`` (CSV on standard input). Parquet and Arrow need pyarrow
    (``pip install treedp[parquet]``); CSV uses pyarrow when it is installed and Python's csv
    module otherwise, with the same cell rules (:mod:`treedp.engines.files`). Missing cells
    become NaN (or NaT); decimals become float64.

    Raises
    ------
    InvalidTypeError
        If ``path`` is not a str or path, or ``column`` is not a str.
    InvalidParameterError
        If the file does not exist, its format is unknown, or the column is missing.
    DataError
        If the column is neither numeric nor datetime, or the CSV is malformed.
    MissingDependencyError
        For Parquet or Arrow without pyarrow.
    """
    from treedp.engines.files import iter_path_chunks, resolve_paths

    if not isinstance(path, str | os.PathLike):
        raise InvalidTypeError(
            f"The 'path' argument must be a str or a path. Got {type(path).__name__} instead."
        )
    if not isinstance(column, str):
        raise InvalidTypeError(
            f"The 'column' argument must be a str. Got {type(column).__name__} instead."
        )
    files, kind = resolve_paths(path)
    chunks = list(
        iter_path_chunks(
            files,
            kind,
            column,
            delimiter=delimiter,
            encoding=encoding,
            use_pyarrow=_pyarrow() is not None,
            resolved=True,
        )
    )
    if not chunks:
        return np.empty(0, dtype=np.float64)
    if len({c.dtype.kind for c in chunks}) > 1:  # an all-missing first chunk, then datetimes
        kinds = {c.dtype.kind for c in chunks}
        if kinds == {"f", "M"}:
            chunks = [
                np.full(c.size, np.datetime64("NaT", "ns")) if c.dtype.kind == "f" else c
                for c in chunks
            ]
    return np.concatenate(chunks)
