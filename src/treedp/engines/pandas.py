"""The pandas engine: a Series, or a DataFrame's column, counted in memory."""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import (
    Engine,
    frame_column,
    frame_schema,
    module_root,
    need_column,
    no_column,
)
from treedp.exceptions import InvalidParameterError, InvalidTypeError

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
    name = need_column(column, "a DataFrame", data.columns)
    series = data[name]
    if isinstance(series, pd.DataFrame):
        raise InvalidParameterError(f"The column '{name}' appears twice in the DataFrame.")
    if not _is_numeric(series.dtype):
        raise InvalidTypeError(
            f"The column '{name}' is not numeric or datetime (its type is {series.dtype}); "
            "treedp releases numeric or datetime columns only."
        )
    if series.dtype.kind == "O":  # numbers, decimals or datetimes as objects: value by value
        from treedp._inputs import as_1d_array

        try:
            series = as_1d_array(series)
        except InvalidTypeError:
            raise InvalidTypeError(
                f"The column '{name}' is not numeric or datetime (it holds other "
                "objects); treedp releases numeric or datetime columns only."
            ) from None
    return local.count(series, bins, nan=nan)


def _is_numeric(dtype: Any) -> bool:
    from pandas.api import types

    if types.is_bool_dtype(dtype):
        return False
    if types.is_numeric_dtype(dtype) or types.is_datetime64_any_dtype(dtype):
        return True
    return dtype.kind == "O" or str(dtype).startswith("decimal")


ENGINE = Engine(
    "pandas",
    lambda d: module_root(d) == "pandas",
    _count,
    collect=frame_column,
    schema=frame_schema,
    read=operator.getitem,
)
