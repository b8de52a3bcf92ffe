"""CSV ``by`` columns whose public keys all name instants: matched as instants, not as text.

A CSV file has no column types, so the files engine reads ``by`` columns as text and matches a
key by its text, ``str(key)``. For dates that text is not unique: ``datetime(2024, 1, 1)``
renders ``"2024-01-01 00:00:00"``, a CSV written by a spreadsheet holds ``"2024-01-01"``, one
written by pandas ``"2024-01-01 00:00:00"``, another ``"2024-01-01T00:00"``; with the key
and the cells written differently no record matched and every key was released as noise, the
budget charged. Now a ``by`` column whose keys all name an instant
(:func:`treedp.engines.keys.key_instant`: a date, a naive datetime, a ``numpy.datetime64``, a
``pandas.Timestamp``, or ISO 8601 text of a whole date such as ``"2024-01-01"``) is matched as
instants, as on every engine that types its columns: each distinct cell is read as an instant
(ISO 8601, ``T`` or a space before the time; a cell with a ``Z`` or ``±hh:mm`` offset as its
UTC instant), and a key matches the cells at its instant. A cell that names no instant
(``"n/a"``, ``"2024"``, ``"Jan 1"``) matches no key: it is not an error, as the file's cells are
not public. Keys of other kinds keep text matching.

Numbers likewise: a ``by`` column whose keys are all numbers (``int``, ``float``, numpy's; not
booleans) is matched by value, each distinct cell read as a number (``"9"``, ``"9.0"``,
``" 09 "`` and ``"9e0"`` all match the key ``9`` or ``9.0``; text naming no number matches no
key). By their text, the key ``9.0`` matched no cell ``"9"`` of Adult's ``education_num``: every
key released as noise, the budget charged (a new user's run). Keys of other kinds keep text
matching.

The decision reads the public keys only; the cells are parsed one distinct value at a time
(Arrow's dictionary encoding of the batch).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._codes import Encoded
from treedp.engines.keys import key_instant, refuse_equal_instants
from treedp.timezones import aware_bound

__all__ = ["NO_INSTANT", "csv_keys", "instant_column", "key_kinds", "number_column"]

#: The instant a cell naming none becomes: one tick above ``NaT`` (missing), a year near
#: -290,000 that no key names.
NO_INSTANT = np.datetime64(np.iinfo(np.int64).min + 1, "us")


def _component(key: Any, j: int, n_by: int) -> Any:
    return key[j] if n_by > 1 else key


def _is_number(key: Any) -> bool:
    return isinstance(key, int | float | np.integer | np.floating) and not isinstance(
        key, bool | np.bool_
    )


def key_kinds(keys: tuple[Any, ...], n_by: int) -> tuple[str, ...]:
    """For each ``by`` column, how its cells are matched: ``"instant"`` when every key's
    component names an instant, ``"number"`` when every one is a number, else ``"text"``."""

    def kind(j: int) -> str:
        parts = [_component(k, j, n_by) for k in keys]
        if parts and all(key_instant(p) is not None for p in parts):
            return "instant"
        return "number" if parts and all(_is_number(p) for p in parts) else "text"

    return tuple(kind(j) for j in range(n_by))


def csv_keys(keys: tuple[Any, ...], by: Sequence[str]) -> tuple[Any, ...]:
    """The keys as the CSV matching reads them: each component of a dated column as its
    instant (``numpy.datetime64``), of a numbers column as a Python number, every other
    component as its text, ``str(component)``.

    Raises
    ------
    InvalidParameterError
        Two keys name one instant of a dated column (the records would fall in one of them);
        public parameters only, before any value is read.
    """
    n_by = len(by)
    kinds = key_kinds(keys, n_by)
    for j in (j for j in range(n_by) if kinds[j] == "instant"):
        refuse_equal_instants(by[j], [_component(k, j, n_by) for k in keys])

    def one(k: Any, j: int) -> Any:
        if kinds[j] == "instant":
            return key_instant(k)
        return k.item() if isinstance(k, np.generic) else k if kinds[j] == "number" else str(k)

    if n_by == 1:
        return tuple(one(k, 0) for k in keys)
    return tuple(tuple(one(k[j], j) for j in range(n_by)) for k in keys)


def _cell_instant(text: str) -> np.datetime64:
    """A cell's instant in microseconds, or :data:`NO_INSTANT`."""
    cell = text.strip()
    instant = key_instant(cell)
    if instant is None and cell:  # zone-aware text: its UTC instant
        try:
            with warnings.catch_warnings():  # numpy warns on some text: not data output
                warnings.simplefilter("ignore")
                wall, zone = aware_bound(cell)
        except (ValueError, OverflowError):
            zone = None
        if zone is not None and key_instant(str(wall)) is not None:
            instant = wall
    if instant is None:
        return NO_INSTANT
    try:
        micros = instant.astype("datetime64[us]")
    except (ValueError, OverflowError):
        return NO_INSTANT
    return micros if micros.astype(instant.dtype) == instant else NO_INSTANT


def instant_column(col: Encoded) -> Encoded:
    """A text column's codes (``-1``: the missing cells) with its distinct cells read as
    instants, each parsed once."""
    uniques = np.array([_cell_instant(str(t)) for t in col.uniques], dtype="datetime64[us]")
    return Encoded(col.codes, uniques)


#: What a cell naming no number becomes: an object equal to no key.
_NO_NUMBER = object()


def _cell_number(text: str) -> Any:
    """A cell's number (an ``int`` when it is written as one, else a ``float``), or
    :data:`_NO_NUMBER`."""
    cell = text.strip()
    try:
        return int(cell)
    except ValueError:
        pass
    try:
        return float(cell)
    except ValueError:
        return _NO_NUMBER


def number_column(col: Encoded) -> Encoded:
    """A text column's codes (``-1``: the missing cells) with its distinct cells read as
    numbers, each parsed once (an ``int`` and a ``float`` of one value match one key)."""
    uniques = np.empty(col.uniques.size, dtype=object)
    uniques[:] = [_cell_number(str(t)) for t in col.uniques]
    return Encoded(col.codes, uniques)
