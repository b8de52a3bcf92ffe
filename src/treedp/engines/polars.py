"""The polars engine: a Series, a DataFrame's column, or a LazyFrame's column (streamed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import (
    Engine,
    frame_column,
    missing_column,
    module_root,
    need_column,
    no_column,
)
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.local import LocalEngine

__all__ = ["ENGINE"]


def _count(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    import polars as pl

    if isinstance(data, pl.Expr):
        raise InvalidTypeError(
            "A polars expression is not data: select from a DataFrame or LazyFrame instead, "
            "for example release_cdf(frame, column='income', ...)."
        )
    names = _schema(data)
    if names is None:
        no_column(column)
        return local.count(data, bins, nan=nan)
    what = "a LazyFrame" if isinstance(data, pl.LazyFrame) else "a DataFrame"
    name = need_column(column, what, names)
    return local.count(_checked(_read(data, name), name), bins, nan=nan)


def _checked(series: Any, column: str) -> Any:
    import polars as pl

    dtype = series.dtype
    if dtype == pl.Null:  # no type (nothing present): the public bins decide (kindless)
        return series
    if isinstance(dtype, pl.Decimal):
        return series.cast(pl.Float64)
    if (dtype.is_numeric() and dtype != pl.Boolean) or dtype.is_temporal():
        return series
    raise InvalidTypeError(
        f"The column '{column}' is not numeric or datetime (its type is {dtype}); "
        "treedp releases numeric or datetime columns only."
    )


def _lazy(data: Any) -> bool:
    return hasattr(data, "collect_schema") and hasattr(data, "collect")


def _schema(data: Any) -> list[str] | None:
    """A DataFrame's or LazyFrame's column names (no value read); None for a Series."""
    if _lazy(data):
        return list(data.collect_schema().names())
    return list(data.columns) if hasattr(data, "columns") else None


def _read(data: Any, name: str) -> Any:
    """The column ``name``: ``get_column`` of a DataFrame, or a LazyFrame's one column,
    collected by the streaming engine."""
    if _lazy(data):
        import polars as pl

        return data.select(pl.col(name)).collect(engine="streaming").to_series()
    return data.get_column(name)


def _collect(frame: Any, column: str) -> Any:
    if not _lazy(frame):
        return frame_column(frame, column)
    names = _schema(frame) or []
    if column not in names:
        raise missing_column(column, names)
    return _read(frame, column)


ENGINE = Engine(
    "polars",
    lambda d: module_root(d) == "polars",
    _count,
    collect=_collect,
    schema=_schema,
    read=_read,
)
