"""One entry of the engine table (:class:`Engine`), and the column checks every engine shares.

Each engine module (``engines/files``, ``engines/spark``, ``engines/dask.py``,
``engines/pandas.py``, ``engines/polars.py``, ``engines/arrow.py``, ``engines/memory.py``)
defines its own ``ENGINE`` here; :mod:`treedp.engines.dispatch` lists them in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from treedp._validation import must
from treedp.engines.base import BinCounts, NanPolicy
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.grouped import GroupedCounts, GroupedJob, KeyCounts
    from treedp.engines.local import LocalEngine
    from treedp.noise.rng import RandomSource

__all__ = [
    "Counter",
    "Engine",
    "check_value_type",
    "cluster_column",
    "frame_column",
    "frame_schema",
    "missing_column",
    "missing_values_error",
    "module_root",
    "need_column",
    "no_column",
    "type_name",
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
    person_hash : callable, optional
        ``person_hash(data, unit)`` → whether ``grouped``/``key_counts`` tell persons apart by
        a keyed 128-bit hash (the release then states the collision δ,
        :mod:`treedp.privacy.collision`), decided from public information only (input kind,
        schema types), before the charge. None: persons are told apart exactly.
    auto_bound : bool, default=False
        Whether ``grouped`` runs a job's :class:`~treedp.engines.auto_pass.AutoPass` (an
        ``"auto"`` contribution bound chosen between its passes); in-memory tables always can.
    describe : callable, optional
        ``describe(data)`` → the input in public words for the record of a charge (the paths
        as given, a database query's text): what the user passed, never a value, count or
        shape of the data. None: the input's type (:func:`type_name`).
    """

    name: str
    accepts: Callable[[Any], bool]
    count: Counter
    local: bool = True
    grouped: Callable[[Any, GroupedJob, RandomSource], GroupedCounts] | None = None
    key_counts: Callable[[Any, GroupedJob, RandomSource], KeyCounts] | None = None
    collect: Callable[[Any, str], Any] | None = None
    schema: Callable[[Any], list[str] | None] | None = None
    read: Callable[[Any, str], Any] | None = None
    auto_bound: bool = False
    person_hash: Callable[[Any, str], bool] | None = None
    describe: Callable[[Any], str] | None = None

    def source(self, data: Any) -> str:
        """``data`` in public words (:attr:`describe`, else its type)."""
        return type_name(data) if self.describe is None else self.describe(data)


def type_name(data: Any) -> str:
    """``data``'s type as ``package.Type`` (``"numpy.ndarray"``, ``"pandas.DataFrame"``)."""
    root = module_root(data)
    name = type(data).__name__
    return name if root in ("", "builtins") else f"{root}.{name}"


def module_root(data: Any) -> str:
    """The top-level package that ``data``'s type comes from (``"pandas"``, ``"pyspark"``)."""
    return (type(data).__module__ or "").split(".")[0]


def need_column(column: str | None, what: str, names: Any = None) -> str:
    """``column``, which a table (``what``) needs, checked against its ``names`` if given."""
    if column is None:
        raise InvalidParameterError(
            f"The 'column' parameter is required when the data is {what}: name the column to "
            "release."
        )
    if names is not None and column not in names:
        raise missing_column(column, names)
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
    listed = ", ".join(map(str, names))
    have = f"Columns: {listed}." if listed else "It has no columns."
    return InvalidParameterError(f"The column '{column}' is not in the data. {have}")


def frame_schema(data: Any) -> list[str] | None:
    """A DataFrame's column names; None for a Series (one column)."""
    return [str(c) for c in data.columns] if hasattr(data, "columns") else None


def frame_column(frame: Any, column: str) -> Any:
    """``frame[column]`` of a DataFrame (pandas, polars, Dask), its name checked first."""
    if not hasattr(frame, "columns"):  # a Series or an array: one column
        raise InvalidTypeError(
            "The 'column' parameter applies to a DataFrame or a file; a "
            f"{type(frame).__name__} is one column already: drop 'column'."
        )
    if column not in list(frame.columns):
        raise missing_column(column, frame.columns)
    return frame[column]


def cluster_column(column: Any, names: list[str]) -> str:
    """The column of a cluster DataFrame (Spark, Dask) to count: ``column``, checked against
    ``names``, or the one column when ``column`` is None."""
    if column is None:
        if len(names) != 1:
            raise InvalidParameterError(
                "The 'column' parameter is needed for a DataFrame with several columns."
            )
        return names[0]
    if not isinstance(column, str):
        raise InvalidTypeError(must("column", f"be a str. Got {type(column).__name__} instead."))
    if names.count(need_column(column, "a DataFrame", names)) > 1:
        raise InvalidParameterError(f"The column '{column}' appears twice in the DataFrame.")
    return column


def check_value_type(kind: str | None, bins: Bins, got: str) -> None:
    """Check a column's type, read from a schema (``kind``: ``"number"``, ``"datetime"`` or
    None for neither), against ``bins``; ``got`` names the type in the message."""
    if kind is None:
        raise InvalidTypeError(f"The column must hold numbers or datetimes. Got {got} instead.")
    if kind == "datetime" and bins.datetime_unit is None:
        raise InvalidTypeError(
            "The 'values' argument holds datetimes but the bins are numeric; give "
            "datetime bounds or edges."
        )
    if kind == "number" and bins.datetime_unit is not None:
        raise InvalidTypeError(
            f"The 'values' argument must hold datetimes for datetime bins. Got {got} instead."
        )


def missing_values_error() -> DataError:
    """The error for missing values counted on a cluster under ``nan="error"`` (no count)."""
    return DataError(
        "The column contains missing (null, NaN or NaT) values. Pass nan='drop' to leave them "
        "out (a per-record filter that keeps the add/remove guarantee; see the docs), or clean "
        "the column first."
    )
