"""Turn the inputs users pass (numpy, sequences, pandas, polars, pyarrow) into 1-D numpy arrays;
Arrow columns (of tables, datasets, files) checked and read as numpy."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Any, Literal

import numpy as np

from treedp.exceptions import InvalidTypeError
from treedp.timezones import objects_zone, utc_naive

__all__ = [
    "Kind",
    "KindlessArray",
    "arrow_to_numpy",
    "as_1d_array",
    "check_arrow_type",
    "is_missing",
    "join_chunks",
    "kindless",
    "with_kind",
]

Kind = Literal["datetime", "number"]
"""A column's kind known from public inputs (bounds or bins), for untyped columns."""


class KindlessArray(np.ndarray):
    """An untyped column (a list, a tuple, an object array or Series, CSV text, an Arrow or
    polars null column) with no value present (empty, or every value missing): its values
    cannot tell its kind, so the public inputs do (:func:`with_kind`). float64 NaN meanwhile;
    mixed with a plain array (``np.concatenate`` of chunks) the plain type wins. Refusing it
    as "numbers" under datetime bins told an empty or all-missing column from its neighbour
    with one record (an independent review, session 26)."""

    __array_priority__ = -1000.0


def kindless(size: int) -> np.ndarray:
    """A :class:`KindlessArray` of ``size`` missing values."""
    return np.full(size, np.nan).view(KindlessArray)


def with_kind(arr: np.ndarray, datetime: bool) -> np.ndarray:
    """``arr`` as it is, or a kindless column as missing values of the public kind: NaT for
    datetime bounds or bins, NaN for numbers (a plain array either way)."""
    if not isinstance(arr, KindlessArray):
        return arr
    if datetime:
        return np.full(arr.shape, np.datetime64("NaT"), dtype="datetime64[us]")
    return np.asarray(arr.view(np.ndarray), dtype=np.float64)


def join_chunks(chunks: list[np.ndarray]) -> np.ndarray:
    """One column from its chunks (files, CSV blocks): kindless when every chunk is (or there
    is none); else the kindless chunks take the others' kind (NaT beside datetimes)."""
    if all(isinstance(c, KindlessArray) for c in chunks):
        return kindless(sum(c.size for c in chunks))
    dated = any(c.dtype.kind == "M" for c in chunks)
    return np.concatenate([with_kind(c, dated) for c in chunks])


def _resolved(arr: np.ndarray, kind: Kind | None) -> np.ndarray:
    return arr if kind is None else with_kind(arr, kind == "datetime")


def is_missing(value: Any) -> bool:
    """Whether one Python or numpy scalar is a missing value: ``None``, a float or Decimal NaN,
    a NaT (numpy or pandas), ``pd.NA`` (checked without importing pandas)."""
    if value is None:
        return True
    if isinstance(value, float | np.floating):
        return bool(value != value)
    if isinstance(value, Decimal):
        return value.is_nan()
    if isinstance(value, np.datetime64 | np.timedelta64):
        return bool(np.isnat(value))
    pd = sys.modules.get("pandas")
    return pd is not None and (value is pd.NA or value is pd.NaT)


_SERIES = (
    "The 'values' argument must be one column (a Series), not a DataFrame: pass column='...' "
    "to pick one."
)


def _from_dataframe_libraries(values: Any, name: str = "values") -> np.ndarray | None:
    """A pandas, polars or pyarrow column as numpy (numeric nulls NaN), else None."""
    module = type(values).__module__.split(".")[0]
    if module == "pandas":
        import pandas as pd

        if isinstance(values, pd.DataFrame):
            raise InvalidTypeError(_SERIES)
        if not isinstance(values, pd.Series):  # an Index or array (IntegerArray): as a Series
            values = pd.Series(values, copy=False)
        dtype = values.dtype
        _check_pandas_type(pd, dtype, name)
        if pd.api.types.is_datetime64_any_dtype(dtype) and getattr(dtype, "tz", None) is not None:
            values = values.dt.tz_convert("UTC").dt.tz_localize(None)
        # Datetimes keep pandas' own unit: forcing nanoseconds wraps dates beyond 2262 silently.
        numeric = pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
        if numeric and values.hasnans:
            return np.asarray(values.to_numpy(dtype="float64", na_value=np.nan))
        return np.asarray(values.to_numpy())
    if module == "polars":
        import polars as pl

        if isinstance(values, pl.DataFrame):
            raise InvalidTypeError(_SERIES)
        if values.dtype == pl.Null:  # no type: the public bounds or bins decide
            return kindless(len(values))
        _check_polars_type(pl, values.dtype, name)
        if values.dtype.is_numeric() and values.null_count() > 0:
            return np.asarray(values.cast(pl.Float64).fill_null(float("nan")).to_numpy())
        return np.asarray(values.to_numpy())
    if module == "pyarrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(values, pa.Table):
            raise InvalidTypeError(
                "The 'values' argument must be one column (an Array), not a Table."
            )
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_null(values.type):  # no type: the public bounds or bins decide
            return kindless(len(values))
        if not _arrow_kind_ok(pa, values.type):
            raise _typed_refusal(values.type, name)
        if pa.types.is_timestamp(values.type) or pa.types.is_date(values.type):
            if pa.types.is_date(values.type):
                values = values.cast(pa.timestamp("s"))
            if values.type.tz is not None:
                values = values.cast(pa.timestamp(values.type.unit))
            return np.asarray(values.to_numpy(zero_copy_only=False))
        if (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)) and (
            values.null_count > 0
        ):
            # safe=False: integers beyond 2**53 round to nearest, as numpy's astype (a safe
            # cast refuses them, naming the value)
            values = pc.fill_null(values.cast(pa.float64(), safe=False), float("nan"))
        return np.asarray(values.to_numpy(zero_copy_only=False))
    return None


def _typed_refusal(dtype: Any, name: str) -> InvalidTypeError:
    """A typed column of another kind: refused by its type, whatever its values (an empty
    string column was released where one with a value was refused: an independent review)."""
    return InvalidTypeError(
        f"{_subject(name)} must hold numbers or datetimes; its type is {dtype} (treedp "
        "releases numeric or datetime columns only)."
    )


def _arrow_kind_ok(pa: Any, t: Any) -> bool:
    """Numbers, decimals, timestamps, dates or null (:func:`check_arrow_type`'s rule)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return bool(
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        or pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_null(t)
    )  # fmt: skip


def _check_pandas_type(pd: Any, dtype: Any, name: str) -> None:
    """Numbers (not booleans), datetimes, or plain objects (untyped: read value by value)."""
    api = pd.api.types
    if dtype == np.dtype("O") or api.is_datetime64_any_dtype(dtype):
        return
    if api.is_numeric_dtype(dtype) and not api.is_bool_dtype(dtype):
        return
    raise _typed_refusal(dtype, name)


def _check_polars_type(pl: Any, dtype: Any, name: str) -> None:
    """Numbers (not booleans), temporal types, decimals, or Python objects (untyped)."""
    if dtype == pl.Object or dtype.is_temporal() or isinstance(dtype, pl.Decimal):
        return
    if dtype.is_numeric() and dtype != pl.Boolean:
        return
    raise _typed_refusal(dtype, name)


def _subject(name: str) -> str:
    """An argument's name as a message's subject: ``"The 'values' argument"``, or a
    description such as ``"column 'age'"`` as it is (``"The column 'age'"``)."""
    return f"The {name}" if " " in name else f"The '{name}' argument"


def as_1d_array(values: Any, name: str = "values", kind: Kind | None = None) -> np.ndarray:
    """Return ``values`` as a 1-D numpy array of a numeric or datetime64 dtype (``name``: the
    argument's name in messages, or a description with a space such as ``"column 'age'"``).

    An untyped column (a list, a tuple, an object array or Series, an Arrow or polars null
    column) takes its kind from its values. When nothing in it is present (empty, or only
    ``None``, NaN, NaT, ``pd.NA``) its values cannot tell: with ``kind`` (``"datetime"`` or
    ``"number"``, from public bounds or bins) it is missing values of that kind, without it a
    :class:`KindlessArray` that :func:`with_kind` resolves later. Otherwise whether a column
    is refused would tell an empty or all-missing column from one with a record. A typed
    column of another kind (text, booleans, categories) is refused by its type alone.

    Raises
    ------
    InvalidTypeError
        For strings, booleans, objects that are not numbers, mixed datetimes and numbers, or
        arrays that are not one-dimensional.
    """
    if isinstance(values, KindlessArray):
        return _resolved(values, kind)
    arr = _from_dataframe_libraries(values, name)
    if isinstance(arr, KindlessArray):  # an Arrow or polars null column
        return _resolved(arr, kind)
    if arr is None:
        if isinstance(values, str | bytes) or np.isscalar(values):
            raise InvalidTypeError(
                f"{_subject(name)} must be a 1-D array-like of numbers or datetimes "
                f"(numpy array, list, pandas/polars Series, pyarrow Array). Got a scalar "
                f"{type(values).__name__} instead."
            )
        try:
            arr = np.asarray(values)
            if isinstance(values, list | tuple) and arr.ndim == 1 and _none_present(arr):
                return _resolved(kindless(arr.size), kind)  # [], [nan], [NaT]: no kind
        except (ValueError, TypeError, OverflowError):
            # numpy's message can describe the data (its shape); ours names none of it.
            raise InvalidTypeError(
                f"{_subject(name)} could not be read as a 1-D array of numbers or "
                "datetimes (ragged or nested sequences are not columns)."
            ) from None
    if arr.ndim != 1:
        raise InvalidTypeError(
            f"{_subject(name)} must be one-dimensional (one column); flatten it or pick "
            "one column (column='...' for a DataFrame)."
        )
    if arr.dtype.kind in "iufM":
        return arr
    if arr.dtype.kind == "b":
        raise InvalidTypeError(
            f"{_subject(name)} must hold numbers or datetimes. Got booleans; convert them "
            "to 0/1 integers explicitly if that is what you mean."
        )
    if arr.dtype.kind == "O":
        return _from_objects(arr, name, kind)
    if arr.dtype.kind in "US":  # named by kind only: the dtype's width is the longest value
        raise InvalidTypeError(
            f"{_subject(name)} must hold numbers or datetimes. Got text (a string "
            "dtype). A list of file paths is read with column='NAME' (the column to release); "
            "text data must be converted to numbers or datetimes first."
        )
    raise InvalidTypeError(
        f"{_subject(name)} must hold numbers or datetimes. Got dtype {arr.dtype} instead."
    )


def _from_objects(arr: np.ndarray, name: str, kind: Kind | None = None) -> np.ndarray:
    """An object array's values as numbers or datetimes. Missing values of any marker (None,
    NaN, NaT, ``pd.NA``) are missing whatever the column's kind (a NaN among datetimes, a NaT
    among numbers), so that the missing-value policy, not the marker, decides about them."""
    import datetime as _dt

    missing = np.fromiter((is_missing(v) for v in arr), dtype=bool, count=arr.size)
    kinds = {
        "datetime"
        if isinstance(v, _dt.date | np.datetime64)
        else "number"
        if isinstance(v, int | float | np.integer | np.floating | Decimal)
        and not isinstance(v, bool)
        else "other"
        for v in arr[~missing]
    }
    if "other" in kinds:
        raise InvalidTypeError(
            f"{_subject(name)} must hold numbers or datetimes only. Got other objects "
            "(for example strings or booleans)."
        )
    if {"datetime", "number"} <= kinds:
        raise InvalidTypeError(
            f"{_subject(name)} mixes datetimes and numbers; it must hold one kind only."
        )
    if not kinds:  # nothing present: the public inputs decide
        return _resolved(kindless(arr.size), kind)
    if "datetime" in kinds:
        return _datetimes_from_objects(arr, missing)
    if any(isinstance(v, Decimal) for v in arr):  # decimals are numbers (NaN decimals missing)
        return np.array([np.nan if m else _to_float(v) for v, m in zip(arr, missing, strict=True)])
    try:
        return np.array(
            [np.nan if m else v for v, m in zip(arr, missing, strict=True)], dtype=np.float64
        )
    except OverflowError:
        # A Python int beyond the float range is an ordered value beyond every bound: it
        # becomes ±inf and is clamped like any out-of-range value (no data-dependent error).
        return np.array([np.nan if m else _to_float(v) for v, m in zip(arr, missing, strict=True)])


def _none_present(arr: np.ndarray) -> bool:
    """A float or datetime array holding nothing but NaN / NaT (or nothing)."""
    if arr.dtype.kind == "f":
        return not np.any(arr == arr)
    if arr.dtype.kind == "M":
        return bool(np.isnat(arr).all())
    return arr.size == 0


def _to_float(v: Any) -> float:
    if v is None:
        return float("nan")
    try:
        return float(v)
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def _datetimes_from_objects(arr: np.ndarray, missing: np.ndarray) -> np.ndarray:
    """Python / numpy datetimes (and None) as one datetime64 array without wrapping; aware
    ones (all in one zone) as their UTC instants.

    Python datetimes are exact in microseconds, whose int64 range spans ±290,000 years;
    nanoseconds (only for numpy datetimes given in ns) are used when every value fits them.
    """
    objects_zone(arr[~missing])  # one zone (or all naive), else refused
    scalars = [
        np.datetime64("NaT") if m else np.datetime64(utc_naive(v))
        for v, m in zip(arr, missing, strict=True)
    ]
    micro = np.array([s.astype("datetime64[us]") for s in scalars], dtype="datetime64[us]")
    finest = [np.datetime_data(s.dtype)[0] for s in scalars if not np.isnat(s)]
    if not any(u in ("ns", "ps", "fs", "as") for u in finest):
        return micro
    ok = micro[~np.isnat(micro)]
    ns_min, ns_max = np.datetime64(-(2**63) + 1, "ns"), np.datetime64(2**63 - 1, "ns")
    if ok.size and (
        ok.min() < ns_min.astype("datetime64[us]") or ok.max() > ns_max.astype("datetime64[us]")
    ):
        return micro
    return np.array([s.astype("datetime64[ns]") for s in scalars], dtype="datetime64[ns]")


def check_arrow_type(t: Any, column: str) -> None:
    """Raise :class:`InvalidTypeError` unless the Arrow type ``t`` is numeric, decimal or
    temporal."""
    import pyarrow as pa

    if _arrow_kind_ok(pa, t):
        return
    raise InvalidTypeError(
        f"The column '{column}' is not numeric or datetime (its type is {t}); "
        "treedp releases numeric or datetime columns only."
    )


def arrow_to_numpy(col: Any) -> np.ndarray:
    """One Arrow column (Array or ChunkedArray) as a numpy array: decimals and integers with
    nulls become float64 (nulls NaN), nulls in datetimes NaT, a null column all NaN."""
    import pyarrow as pa

    t = col.type
    if isinstance(col, pa.Array) and col.null_count == 0:
        direct = _primitive_view(col, t)
        if direct is not None:
            return direct
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = t.value_type
    if pa.types.is_null(t):  # no type: the public bounds or bins decide
        return kindless(len(col))
    if pa.types.is_decimal(t):
        import pyarrow.compute as pc  # imported only when needed: slow to import

        col = pc.fill_null(col.cast(pa.float64()), float("nan"))
    return as_1d_array(col)


def _primitive_view(col: Any, t: Any) -> np.ndarray | None:
    """A null-free integer or floating Arrow Array as a numpy view of its data buffer (no copy,
    and no import of pandas, which ``Array.to_numpy`` may trigger); ``None`` for other types."""
    import pyarrow as pa

    if pa.types.is_floating(t):
        kind = "f"
    elif pa.types.is_signed_integer(t):
        kind = "i"
    elif pa.types.is_unsigned_integer(t):
        kind = "u"
    else:
        return None
    width = t.bit_width // 8
    dtype = np.dtype(f"<{kind}{width}")
    data = col.buffers()[1]
    if data is None:
        return None
    view: np.ndarray = np.frombuffer(data, dtype=dtype, count=len(col) + col.offset)
    return view[col.offset :]
