"""Read one column of a CSV or Parquet file into a numpy array (numbers or datetimes)."""

from __future__ import annotations

import csv
import gzip
import os
from pathlib import Path
from typing import Any

import numpy as np

from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    MissingDependencyError,
)

__all__ = ["read_column"]


def _pyarrow() -> Any:
    try:
        import pyarrow
    except ImportError:
        return None
    return pyarrow


def read_column(path: str | Path, column: str) -> Any:
    """Return ``column`` of the CSV (optionally gzipped) or Parquet file at ``path``.

    Parquet needs pyarrow (``pip install treedp[parquet]``); CSV uses pyarrow when it is
    installed and Python's csv module otherwise. Empty cells become NaN (or NaT).

    Raises
    ------
    InvalidTypeError
        If ``path`` is not a str or path, or ``column`` is not a str.
    InvalidParameterError
        If the file does not exist, its format is unknown, or the column is missing.
    DataError
        If the column is neither numeric nor datetime.
    MissingDependencyError
        For Parquet without pyarrow.
    """
    if not isinstance(path, str | os.PathLike):
        raise InvalidTypeError(
            f"The 'path' argument must be a str or a path. Got {type(path).__name__} instead."
        )
    if not isinstance(column, str):
        raise InvalidTypeError(
            f"The 'column' argument must be a str. Got {type(column).__name__} instead."
        )
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"The input file '{p}' does not exist.")
    name = p.name.lower()
    if name.endswith((".parquet", ".pq")):
        pa = _pyarrow()
        if pa is None:
            raise MissingDependencyError(
                "Reading Parquet needs pyarrow: install treedp[parquet] (pip install pyarrow)."
            )
        import pyarrow.parquet as pq

        schema = pq.read_schema(p)
        if column not in schema.names:
            raise InvalidParameterError(
                f"The column '{column}' is not in '{p}'. Columns: {', '.join(schema.names)}."
            )
        return _check_arrow(pq.read_table(p, columns=[column]).column(column), column)
    if not name.endswith((".csv", ".csv.gz")):
        raise InvalidParameterError(f"The input file '{p}' must end in .csv, .csv.gz or .parquet.")
    if _pyarrow() is not None:
        from pyarrow import csv as pacsv

        header = _csv_header(p)
        if column not in header:
            raise InvalidParameterError(
                f"The column '{column}' is not in '{p}'. Columns: {', '.join(header)}."
            )
        table = pacsv.read_csv(p, convert_options=pacsv.ConvertOptions(include_columns=[column]))
        return _check_arrow(table.column(column), column)
    return _read_csv_plain(p, column)


def _csv_header(p: Path) -> list[str]:
    opener = gzip.open if p.name.lower().endswith(".gz") else open
    with opener(p, "rt", encoding="utf-8", newline="") as handle:
        return next(csv.reader(handle), [])


def _check_arrow(col: Any, column: str) -> Any:
    import pyarrow as pa

    t = col.type
    if (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_timestamp(t)
        or (pa.types.is_date(t))
    ):
        return col
    if pa.types.is_null(t):
        return np.full(len(col), np.nan)
    raise DataError(
        f"The column '{column}' is not numeric or datetime (its type is {t}); "
        "treedp releases numeric or datetime columns only."
    )


def _read_csv_plain(p: Path, column: str) -> np.ndarray:
    opener = gzip.open if p.name.lower().endswith(".gz") else open
    with opener(p, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        if column not in header:
            raise InvalidParameterError(
                f"The column '{column}' is not in '{p}'. Columns: {', '.join(header)}."
            )
        idx = header.index(column)
        cells = [row[idx] if idx < len(row) else "" for row in reader]
    try:
        return np.array([float(c) if c.strip() else np.nan for c in cells], dtype=np.float64)
    except ValueError:
        pass
    try:
        return np.array(
            [np.datetime64(c.strip()) if c.strip() else np.datetime64("NaT") for c in cells],
            dtype="datetime64[ns]",
        )
    except ValueError:
        raise DataError(
            f"The column '{column}' holds values that are neither numbers nor datetimes."
        ) from None
