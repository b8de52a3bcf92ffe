"""One entry of the engine table (:class:`Engine`), and the column checks every engine shares.

Each engine module (``engines/files``, ``engines/spark``, ``engines/dask.py``,
``engines/pandas.py``, ``engines/polars.py``, ``engines/arrow.py``, ``engines/memory.py``)
defines its own ``ENGINE`` here; :mod:`treedp.engines.dispatch` lists them in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.grouped import GroupedCounts, GroupedJob, KeyCounts
    from treedp.engines.local import LocalEngine
    from treedp.noise.rng import RandomSource

__all__ = [
    "Counter",
    "Engine",
    "frame_column",
    "missing_column",
    "module_root",
    "need_column",
    "no_column",
]

#: How an engine counts: ``(data, column, bins, nan, progress, local) -> BinCounts``, where
#: ``local`` is the :class:`LocalEngine` (threads, kernel) for data counted on this machine.
Counter = Callable[[Any, "str | None", "Bins", NanPolicy, "bool | None", "LocalEngine"], BinCounts]


@dataclass(frozen=True)
class Engine:
    """One kind of input and how it is counted into bins: an entry of the engine table.

    Attributes
    ----------
    name : str
        A unique name (``"files"``, ``"spark"``, ...).
    accepts : callable
        ``accepts(data)``: whether this engine counts ``data``. Cheap and import-free: it must
        not import an optional package the data does not come from.
    count : callable
        ``count(data, column, bins, nan, progress, local)`` → :class:`BinCounts`, following
        the one bin rule of :mod:`treedp.engines.base` (the engine conformance tests check it).
    local : bool
        Whether the data is counted on this machine (then ``engine=LocalEngine(...)`` sets
        threads and kernel); False for a cluster (Spark, Dask).
    grouped, key_counts : callable, optional
        ``grouped(data, job, source)`` → the bounded ``(G × B)``
        :class:`~treedp.engines.grouped.GroupedCounts` of a group-by or per-person release,
        and ``key_counts(data, job, source)`` → the pre-noise
        :class:`~treedp.engines.grouped.KeyCounts` of private key selection, counted where
        the data lives; None: the columns are read into memory (``read``) and counted there.
    columns : callable, optional
        ``columns(data)`` → the column names of a file input (a header or a schema is read).
        The files engine's ``schema``, kept for the callers that still ask for it.
    collect : callable, optional
        ``collect(data, column)`` → that column in memory (numbers or datetimes), for the
        methods that hold the values (the exponential and recursive quantiles); None: the
        input is one column already, or cannot be collected.
    schema : callable, optional
        ``schema(data)`` → the column names of a table, read from its schema without any
        value; None when ``data`` is a single column. None (the field): the engine takes no
        tables.
    read : callable, optional
        ``read(data, name)`` → one column of an in-memory table (its name checked by the
        caller against ``schema``), as numpy or a column ``as_1d_array`` reads: any type (keys
        and person ids are read too), integers with nulls as float64 NaN. None: the table is
        not in memory (files, clusters: ``grouped`` counts it where it lives).
    """

    name: str
    accepts: Callable[[Any], bool]
    count: Counter
    local: bool = True
    grouped: Callable[[Any, GroupedJob, RandomSource], GroupedCounts] | None = None
    key_counts: Callable[[Any, GroupedJob, RandomSource], KeyCounts] | None = None
    columns: Callable[[Any], list[str]] | None = None
    collect: Callable[[Any, str], Any] | None = None
    schema: Callable[[Any], list[str] | None] | None = None
    read: Callable[[Any, str], Any] | None = None


def module_root(data: Any) -> str:
    """The top-level package that ``data``'s type comes from (``"pandas"``, ``"pyspark"``)."""
    return (type(data).__module__ or "").split(".")[0]


def need_column(column: str | None, what: str) -> str:
    """``column``, which a table (``what``) needs."""
    if column is None:
        raise InvalidParameterError(
            f"The 'column' parameter is required when the data is {what}: name the column to "
            "release."
        )
    return column


def no_column(column: str | None) -> None:
    """Refuse ``column`` for data that is one column already."""
    if column is not None:
        raise InvalidParameterError(
            "The 'column' parameter applies to tables, DataFrames and files; the data given is "
            "already one column."
        )


def missing_column(column: str, names: Any) -> InvalidParameterError:
    """The error for a column the data does not have (its columns named)."""
    return InvalidParameterError(
        f"The column '{column}' is not in the data. Columns: {', '.join(map(str, names))}."
    )


def frame_column(frame: Any, column: str) -> Any:
    """``frame[column]`` of a DataFrame (pandas, polars, Dask), its name checked first."""
    if not hasattr(frame, "columns"):  # a Series or an array: one column
        raise InvalidTypeError(
            "The 'column' parameter applies to a DataFrame or a file; a "
            f"{type(frame).__name__} is one column already: drop 'column'."
        )
    if column not in list(frame.columns):
        raise InvalidParameterError(f"The 'column' parameter names no column: {column!r}.")
    return frame[column]
