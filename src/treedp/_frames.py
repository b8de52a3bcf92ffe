"""Tables of results as data frames: pandas and polars are optional, imported on first use.

Every result type's ``to_frame`` (pandas) and ``to_polars`` build their frame here from the same
dict of equal-length columns (its ``to_arrays`` or ``to_records``), so both frames of one result
have the same columns, in the same order. A missing package raises
:class:`~treedp.MissingDependencyError` naming the extra that installs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.exceptions import MissingDependencyError

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["pandas_frame", "pandas_module", "polars_frame", "polars_module"]


def pandas_module(what: str) -> ModuleType:
    """pandas, or :class:`~treedp.MissingDependencyError` naming ``what`` and the extra (a
    caller that computes its table first asks before computing)."""
    try:
        return importlib.import_module("pandas")
    except ImportError:
        raise MissingDependencyError(
            f"{what} needs pandas: pip install 'treedp[pandas]'."
        ) from None


def polars_module(what: str) -> ModuleType:
    """polars, or :class:`~treedp.MissingDependencyError` naming ``what`` and the extra."""
    try:
        return importlib.import_module("polars")
    except ImportError:
        raise MissingDependencyError(
            f"{what} needs polars: pip install 'treedp[polars]'."
        ) from None


def pandas_frame(
    columns: Mapping[str, Any] | Sequence[Mapping[str, Any]], what: str
) -> pd.DataFrame:
    """``columns`` (a dict of columns or a list of rows) as a :class:`pandas.DataFrame`.

    Raises
    ------
    MissingDependencyError
        If pandas is not installed; the message names ``what`` (the method) and the extra.
    """
    frame: pd.DataFrame = pandas_module(what).DataFrame(columns)
    return frame


def polars_frame(
    columns: Mapping[str, Any] | Sequence[Mapping[str, Any]], what: str
) -> pl.DataFrame:
    """``columns`` (a dict of columns or a list of rows) as a :class:`polars.DataFrame`.

    Raises
    ------
    MissingDependencyError
        If polars is not installed; the message names ``what`` (the method) and the extra.
    """
    polars = polars_module(what)
    frame: pl.DataFrame
    if isinstance(columns, Mapping):
        frame = polars.DataFrame({name: _polars_ready(col) for name, col in columns.items()})
    else:
        frame = polars.DataFrame(list(columns))
    return frame


#: The datetime64 units polars reads (besides days); coarser ones are widened to milliseconds.
_POLARS_UNITS = ("D", "ms", "us", "ns")


def _polars_ready(column: Any) -> Any:
    """A datetime64 array in a unit polars reads: seconds, minutes, hours, weeks, months or
    years become milliseconds (exact: every such instant is a whole number of them)."""
    if isinstance(column, np.ndarray) and column.dtype.kind == "M":
        unit = np.datetime_data(column.dtype)[0]
        if unit not in _POLARS_UNITS and unit not in ("ps", "fs", "as"):
            return column.astype("datetime64[ms]")
    return column
