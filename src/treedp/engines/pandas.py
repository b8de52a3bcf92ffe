"""The pandas engine: a Series, or a DataFrame's column, counted in memory."""

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
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

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
    import pandas as pd

    if not isinstance(data, pd.DataFrame):
        no_column(column)
        return local.count(data, bins, nan=nan)
    name = need_column(column, "a DataFrame")
    if name not in data.columns:
        raise missing_column(name, data.columns)
    series = data[name]
    if isinstance(series, pd.DataFrame):
        raise InvalidParameterError(f"The column '{name}' appears twice in the DataFrame.")
    checked = _checked(series, name)
    if checked.dtype.kind == "O":
        from treedp._inputs import as_1d_array

        try:
            checked = as_1d_array(checked)
        except InvalidTypeError:
            raise DataError(
                f"The column '{name}' is not numeric or datetime (it holds other "
                "objects); treedp releases numeric or datetime columns only."
            ) from None
    return local.count(checked, bins, nan=nan)


def _checked(series: Any, column: str) -> Any:
    import pandas as pd

    dtype = series.dtype
    if (
        pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
    ) or pd.api.types.is_datetime64_any_dtype(dtype):
        return series
    if dtype.kind == "O" or str(dtype).startswith("decimal"):
        return series  # numbers, decimals or datetimes as objects: checked value by value
    raise DataError(
        f"The column '{column}' is not numeric or datetime (its type is {dtype}); "
        "treedp releases numeric or datetime columns only."
    )


def _schema(data: Any) -> list[str] | None:
    """A DataFrame's column names; None for a Series."""
    return [str(c) for c in data.columns] if hasattr(data, "columns") else None


def _read(data: Any, name: str) -> Any:
    return data[name]


ENGINE = Engine(
    "pandas",
    lambda d: module_root(d) == "pandas",
    _count,
    collect=frame_column,
    schema=_schema,
    read=_read,
)
