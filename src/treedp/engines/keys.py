"""Public keys and key values: checks, one label per equal key, sorting, codes.

Which keys a column holds is data: nothing here raises on it (unorderable mixed types sort by
type name, then text). :func:`check_keys` checks the public keys a caller gives.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = [
    "Key",
    "candidate_keys",
    "canonical_key",
    "check_keys",
    "is_null",
    "key_instant",
    "key_micros_text",
    "key_ticks",
    "person_codes",
    "py_scalar",
    "refuse_equal_instants",
    "sorted_keys",
    "unique_inverse",
    "unique_pairs",
]

#: A key: a scalar for one ``by`` column, a tuple for several.
Key = Any


def is_null(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(x != x)  # NaN, NaT
    except (TypeError, ValueError):
        return False


def _scalar(x: Any, name: str) -> Any:
    if isinstance(x, np.generic) and not isinstance(x, np.datetime64):
        x = x.item()
    if is_null(x):
        raise InvalidParameterError(
            f"The '{name}' parameter holds a null key (None, NaN or NaT): public keys must be "
            "actual values (records with a missing key follow the 'nan' policy)."
        )
    if isinstance(x, datetime.datetime) and x.tzinfo is not None:
        raise InvalidParameterError(
            must(name, "hold naive datetimes (instants on the column's stored timeline, UTC "
                 f"for a zone-aware column). Got {x!r}.")
        )  # fmt: skip
    if not isinstance(x, str | int | float | bool | datetime.date | np.datetime64):
        raise InvalidTypeError(
            must(
                name,
                "hold str, int, float, bool or date/datetime keys. Got "
                f"{type(x).__name__} instead.",
            )
        )
    return x


#: ISO 8601 text of a whole date, with a time of day to the minute, second or a fraction.
_ISO_INSTANT = re.compile(r"-?\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?")


def key_instant(key: Any) -> np.datetime64 | None:
    """The instant a key names for a ``by`` column of a date or datetime type: a
    ``datetime.date`` / ``datetime.datetime`` (naive; ``pandas.Timestamp`` too), a
    ``numpy.datetime64`` or ISO 8601 text of a whole date (``"2024-01-31"``,
    ``"2024-01-31T06:30"``, ``"2024-01-31 06:30:00.5"``); None for anything else (numbers,
    booleans, other text: ``"2024"`` or ``"2024-01"`` name no single day)."""
    if isinstance(key, bool | int | float):
        return None
    if isinstance(key, np.datetime64):
        return None if np.isnat(key) else key
    if isinstance(key, str):
        if not _ISO_INSTANT.fullmatch(key.strip()):  # "2024" or "5" would parse as years
            return None
        try:
            value = np.datetime64(key.strip())
        except ValueError:
            return None
        return None if np.isnat(value) else value
    if hasattr(key, "to_datetime64"):  # pandas.Timestamp: to the nanosecond
        return np.datetime64(key.to_datetime64())
    if isinstance(key, datetime.datetime):
        return np.datetime64(key, "us")
    if isinstance(key, datetime.date):
        return np.datetime64(key, "D")
    return None


#: Attoseconds per tick of each datetime64 unit an instant key can have.
_ATTOSECONDS = {
    "D": 86_400 * 10**18, "h": 3_600 * 10**18, "m": 60 * 10**18, "s": 10**18,
    "ms": 10**15, "us": 10**12, "ns": 10**9, "ps": 10**6, "fs": 10**3, "as": 1,
}  # fmt: skip


def refuse_equal_instants(name: str, parts: Sequence[Any]) -> None:
    """Refuse two keys of a datetime ``by`` column (or a CSV column matched as instants) that
    name one instant (compared in microseconds, or nanoseconds when a key has them)."""
    seen: dict[int, Any] = {}
    for k in parts:
        instant = key_instant(k)
        assert instant is not None  # checked by the caller
        unit = np.datetime_data(instant.dtype)[0]
        if unit not in _ATTOSECONDS:  # years, months, weeks: their first day, exactly
            instant, unit = instant.astype("datetime64[D]"), "D"
        # exact attoseconds in Python ints: a cast to one unit wrapped far keys (2**62 s in
        # microseconds is 0 mod 2**64: "the same instant" as 1970; a docs check, session 27)
        tick = int(instant.astype(np.int64)) * _ATTOSECONDS[unit]
        if tick in seen:
            raise InvalidParameterError(
                f"The 'keys' parameter holds {seen[tick]!r} and {k!r}, which name the same "
                f"instant of the datetime 'by' column '{name}': give each instant once."
            )
        seen[tick] = k


def key_ticks(key: Any, unit: str) -> int | None:
    """The key's instant (:func:`key_instant`) in ticks of ``unit`` (a ``datetime64`` unit),
    or None when no value of that unit can equal it (not an instant, finer than the unit,
    or beyond its range)."""
    instant = key_instant(key)
    if instant is None:
        return None
    try:
        ticks = instant.astype(f"datetime64[{unit}]")
        if ticks.astype(instant.dtype) != instant:  # finer than the unit, or wrapped
            return None
    except (OverflowError, ValueError):
        return None
    return int(ticks.astype(np.int64))


def check_keys(keys: Any, n_by: int, name: str = "keys") -> tuple[Key, ...]:
    """The public keys as a tuple of Python scalars (one ``by``) or tuples (several).

    Raises
    ------
    InvalidTypeError, InvalidParameterError
        If ``keys`` is not a non-empty sequence of unique, non-null keys of the right arity.
    """
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence | np.ndarray):
        raise InvalidTypeError(
            must(name, f"be a list of public keys. Got {type(keys).__name__} instead.")
        )
    out: list[Key] = []
    for k in keys:
        if n_by == 1:
            if isinstance(k, tuple) and len(k) == 1:
                k = k[0]
            out.append(_scalar(k, name))
        else:
            if not isinstance(k, tuple | list) or len(k) != n_by:
                raise InvalidParameterError(
                    f"With {n_by} 'by' columns each key must be a tuple of {n_by} values."
                )
            out.append(tuple(_scalar(v, name) for v in k))
    if not out:
        raise InvalidParameterError(must(name, "hold at least one key."))
    if len(set(out)) != len(out):
        raise InvalidParameterError(must(name, "hold unique keys."))
    return tuple(out)


def py_scalar(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


def canonical_key(key: Any) -> Any:
    """One label per equality class of keys: ``True``, ``1``, ``1.0`` and ``np.int64(1)`` are
    equal keys (they fall in one group), and a privately selected key is released as ``1``
    whichever of them the data held first (the label must not depend on the records).
    Booleans and integral finite floats become ints, numpy scalars Python ones, tuples
    element-wise; anything else is kept."""
    if isinstance(key, tuple):
        return tuple(canonical_key(k) for k in key)
    if isinstance(key, np.datetime64):  # .item() would give an int of nanoseconds
        return key
    if isinstance(key, np.generic):
        key = key.item()
    if isinstance(key, bool):
        return int(key)
    if isinstance(key, float) and math.isfinite(key) and key.is_integer():
        return int(key)
    return key


def sorted_keys(keys: Iterable[Key]) -> list[Key]:
    """Keys sorted by value, or when their types do not compare (``5`` and ``"CA"``) by type
    name, then text: never an error, since which types a column holds is data."""
    items = list(keys)
    try:
        return sorted(items)
    except TypeError:  # mixed types: by type name, then value
        return sorted(items, key=lambda k: (type(k).__name__, str(k)))


def unique_inverse(arr: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct values of ``arr`` (sorted; unorderable mixed objects such as ``5`` and
    ``"CA"`` by type name, then text, as :func:`sorted_keys`) and each element's index among
    them. Never raises on mixed types: which types a column holds is data."""
    try:
        uniq, inverse = np.unique(arr, return_inverse=True)
        return [py_scalar(x) for x in uniq], inverse.ravel().astype(np.int64)
    except TypeError:  # unorderable mixed objects: codes by first appearance, then sorted
        first: dict[Any, int] = {}
        codes = np.fromiter(
            (first.setdefault(py_scalar(x), len(first)) for x in arr),
            dtype=np.int64,
            count=arr.size,
        )
        seen = list(first)
        ordered = sorted_keys(seen)
        rank = {id(k): i for i, k in enumerate(ordered)}
        position = np.fromiter((rank[id(k)] for k in seen), dtype=np.int64, count=len(seen))
        return ordered, position[codes]


def candidate_keys(columns: Sequence[np.ndarray]) -> tuple[np.ndarray, list[Key]]:
    """Codes of the keys present among ``columns`` (no nulls) and the keys, sorted.

    Data-dependent: used only for private key selection.
    """
    codes_per: list[np.ndarray] = []
    uniq_per: list[list[Any]] = []
    for c in columns:
        u, inv = unique_inverse(c.astype(object) if c.dtype.kind == "O" else c)
        codes_per.append(inv)
        uniq_per.append(u)
    if len(columns) == 1:
        return codes_per[0], uniq_per[0]
    stacked = np.stack(codes_per)
    uniq, inv = np.unique(stacked, axis=1, return_inverse=True)
    keys = [
        tuple(uniq_per[j][int(uniq[j, i])] for j in range(len(columns)))
        for i in range(uniq.shape[1])
    ]
    return inv.ravel().astype(np.int64), keys


def person_codes(ids: np.ndarray) -> np.ndarray:
    """Integer codes of person ids (integers as they are, anything else by ``np.unique``)."""
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64, copy=False)
    _, out = unique_inverse(ids)
    return out


def unique_pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The distinct ``(first, second)`` pairs, sorted lexicographically, as a ``(2, k)`` array
    (what ``np.unique(np.stack([first, second]), axis=1)`` returns, by one ``lexsort``)."""
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    new = np.ones(a.size, dtype=bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return np.stack([a[new], b[new]]).astype(np.int64, copy=False)


def key_micros_text(key: Any) -> str | None:
    """The key's instant as ISO text to the microsecond (``2024-01-31T06:30:00.000000``), how
    the SQL and Spark engines compare date and datetime columns; None when no microsecond
    equals it (not an instant, or finer)."""
    ticks = key_ticks(key, "us")
    return None if ticks is None else str(np.datetime64(ticks, "us"))
