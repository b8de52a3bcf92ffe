"""Turn the inputs users pass (numpy, sequences, pandas, polars, pyarrow) into 1-D numpy arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.exceptions import InvalidTypeError

__all__ = ["as_1d_array"]


def _from_dataframe_libraries(values: Any) -> np.ndarray | None:
    module = type(values).__module__.split(".")[0]
    if module == "pandas":
        import pandas as pd

        if isinstance(values, pd.DataFrame):
            raise InvalidTypeError(
                "The 'values' argument must be one column (a Series), not a DataFrame."
            )
        dtype = values.dtype
        if pd.api.types.is_datetime64_any_dtype(dtype):
            if getattr(dtype, "tz", None) is not None:
                values = values.dt.tz_convert("UTC").dt.tz_localize(None)
            return values.to_numpy(dtype="datetime64[ns]", na_value=np.datetime64("NaT"))
        if pd.api.types.is_bool_dtype(dtype):
            return np.asarray(values.to_numpy())
        if pd.api.types.is_numeric_dtype(dtype):
            if values.hasnans:
                return values.to_numpy(dtype="float64", na_value=np.nan)
            return values.to_numpy()
        return np.asarray(values.to_numpy())
    if module == "polars":
        import polars as pl

        if isinstance(values, pl.DataFrame):
            raise InvalidTypeError(
                "The 'values' argument must be one column (a Series), not a DataFrame."
            )
        if values.dtype.is_numeric() and values.null_count() > 0:
            return values.cast(pl.Float64).fill_null(float("nan")).to_numpy()
        return values.to_numpy()
    if module == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(values, pa.Table):
            raise InvalidTypeError(
                "The 'values' argument must be one column (an Array), not a Table."
            )
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_timestamp(values.type) or pa.types.is_date(values.type):
            if pa.types.is_date(values.type):
                values = values.cast(pa.timestamp("s"))
            if values.type.tz is not None:
                values = values.cast(pa.timestamp(values.type.unit))
            out = values.to_numpy(zero_copy_only=False)
            return out
        if (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)) and (
            values.null_count > 0
        ):
            values = pc.fill_null(values.cast(pa.float64()), float("nan"))
        return values.to_numpy(zero_copy_only=False)
    return None


def as_1d_array(values: Any, name: str = "values") -> np.ndarray:
    """Return ``values`` as a 1-D numpy array of a numeric or datetime64 dtype.

    Raises
    ------
    InvalidTypeError
        For strings, booleans, objects that are not numbers, mixed datetimes and numbers, or
        arrays that are not one-dimensional.
    """
    arr = _from_dataframe_libraries(values)
    if arr is None:
        if isinstance(values, str | bytes) or np.isscalar(values):
            raise InvalidTypeError(
                f"The '{name}' argument must be a 1-D array-like of numbers or datetimes "
                f"(numpy array, list, pandas/polars Series, pyarrow Array). Got a scalar "
                f"{type(values).__name__} instead."
            )
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError) as exc:
            raise InvalidTypeError(
                f"The '{name}' argument could not be read as a 1-D array: {exc}"
            ) from None
    if arr.ndim != 1:
        raise InvalidTypeError(
            f"The '{name}' argument must be one-dimensional. Got an array of shape {arr.shape}."
        )
    kind = arr.dtype.kind
    if kind in "iuf":
        return arr
    if kind == "M":
        return arr
    if kind == "b":
        raise InvalidTypeError(
            f"The '{name}' argument must hold numbers or datetimes. Got booleans; convert them "
            "to 0/1 integers explicitly if that is what you mean."
        )
    if kind == "O":
        return _from_objects(arr, name)
    raise InvalidTypeError(
        f"The '{name}' argument must hold numbers or datetimes. Got dtype {arr.dtype} instead."
    )


def _from_objects(arr: np.ndarray, name: str) -> np.ndarray:
    import datetime as _dt

    kinds = {
        "datetime"
        if isinstance(v, _dt.date | np.datetime64)
        else "number"
        if isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        else "none"
        if v is None
        else "other"
        for v in arr
    }
    if "other" in kinds:
        raise InvalidTypeError(
            f"The '{name}' argument must hold numbers or datetimes only. Got other objects "
            "(for example strings or booleans)."
        )
    if {"datetime", "number"} <= kinds:
        raise InvalidTypeError(
            f"The '{name}' argument mixes datetimes and numbers; it must hold one kind only."
        )
    if "datetime" in kinds:
        return np.array(
            [np.datetime64("NaT") if v is None else v for v in arr], dtype="datetime64[ns]"
        )
    return np.array([np.nan if v is None else v for v in arr], dtype=np.float64)
