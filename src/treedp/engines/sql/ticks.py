"""Datetime columns in SQL: the value as integer ticks, and the bin rule on those ticks.

Datetime bins hold int64 edges ``e_0 < ... < e_B`` in a unit ``u`` (seconds or finer from
bounds; any numpy unit from explicit edges) of the naive wall-clock timeline, or of the UTC
timeline for bins with a time zone
(:mod:`treedp.timezones`). The local engines convert a value to ``u`` as numpy does,
``t = floor(x·u/n)`` for a value ``x`` in its own unit ``n`` (days, seconds, ..., ns; for
months and years, the calendar: a month's first tick in ``n`` is exact), and take the
``j`` with ``e_j <= t < e_{j+1}``, clamped to ``[0, B - 1]``.

In the database the value stays in its own exact integer ticks (DuckDB ``epoch_us``/
``epoch_ns``, PostgreSQL's numeric ``EXTRACT(EPOCH ...)`` times 10^6, days for a DATE), and
each edge is moved to that unit instead: ``floor(x·u/n) >= e`` holds exactly when ``x >=
ceil(e·n/u)`` (``e`` is an integer), so comparing ``x`` with the thresholds ``T_j =
ceil(e_j·n/u)`` (Python integers, exact) is the local rule with no division in SQL. The
thresholds are compared in a wide integer type (``HUGEINT``, ``numeric``); ``+infinity`` and
``-infinity`` timestamps become ``±2^90``, beyond every threshold, so they are clamped into
the last and first bins as ``±inf`` numbers are. A threshold beyond any value a database
can hold is clamped to ``±2^80``, which keeps its order with every value.

The column's type comes from the query's description, never from its values; which types
each database accepts is in docs/databases.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from treedp.exceptions import InvalidTypeError
from treedp.timezones import check_agrees

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["FAR", "INFINITE", "Ticks", "check_ticks", "thresholds", "tick_bin"]

#: Ticks per second of each unit (a DATE counts days).
_PER_SECOND = {
    "W": Fraction(1, 604800), "D": Fraction(1, 86400), "h": Fraction(1, 3600),
    "m": Fraction(1, 60), "s": Fraction(1), "ms": Fraction(10**3), "us": Fraction(10**6),
    "ns": Fraction(10**9), "ps": Fraction(10**12), "fs": Fraction(10**15),
    "as": Fraction(10**18),
}  # fmt: skip
#: ``±infinity`` timestamps as ticks, and the clamp of thresholds: ``FAR < INFINITE``, and
#: every finite value of every supported type lies strictly inside ``±FAR``.
INFINITE, FAR = 2**90, 2**80


@dataclass(frozen=True)
class Ticks:
    """A datetime column as integer ticks in SQL.

    Attributes
    ----------
    expr : str
        SQL of the ticks (NULL for NULL, ``±INFINITE`` for ``±infinity``).
    unit : str
        The ticks' unit (``"D"``, ``"s"``, ``"ms"``, ``"us"``, ``"ns"``).
    aware : bool
        Instants on the UTC timeline (``TIMESTAMPTZ``), else naive wall-clock time.
    wide : str
        The SQL integer type the ticks and thresholds are compared in.
    """

    expr: str
    unit: str
    aware: bool
    wide: str


def thresholds(bins: Bins, unit: str) -> list[int]:
    """``T_j = ceil(e_j·n/u)``: the edges in the ticks of ``unit`` (exact), clamped to
    ``±FAR``."""
    assert bins.datetime_unit is not None
    if bins.datetime_unit in ("Y", "M"):  # calendar units start on whole days: exact
        starts = bins.edges.astype(f"datetime64[{bins.datetime_unit}]")
        return [int(t) for t in starts.astype(f"datetime64[{unit}]").view(np.int64)]
    scale = _PER_SECOND[unit] / _PER_SECOND[bins.datetime_unit]
    return [max(-FAR, min(FAR, math.ceil(int(e) * scale))) for e in bins.edges]


def check_ticks(dialect_name: str, ticks: Ticks | None, type_name: str, bins: Bins) -> Ticks:
    """The ticks of a supported datetime type, or one clear error (naive against aware bins
    too); nothing read from the data."""
    if ticks is None:
        raise InvalidTypeError(
            f"The {dialect_name} engine counts datetime columns of the types listed in "
            f"docs/databases.md; the column's SQL type {type_name} is not one of them."
        )
    check_agrees("UTC" if ticks.aware else None, bins)
    return ticks


def _tree(ts: list[int], lo: int, hi: int, wide: str) -> str:
    if lo == hi:
        return str(lo)
    mid = (lo + hi + 1) // 2
    below, above = _tree(ts, lo, mid - 1, wide), _tree(ts, mid, hi, wide)
    return f"CASE WHEN x < CAST('{ts[mid]}' AS {wide}) THEN {below} ELSE {above} END"


def tick_bin(ticks: Ticks, bins: Bins, missing: int) -> str:
    """The bin of the ticks ``x``: ``missing`` for NULL, else the largest ``j`` with
    ``T_j <= x`` (0 below ``T_0``): a balanced tree of comparisons with public integers,
    written in the text (Python ints, no value of the data)."""
    ts = thresholds(bins, ticks.unit)
    return (
        f"CASE WHEN x IS NULL THEN {missing} ELSE {_tree(ts, 0, bins.n_bins - 1, ticks.wide)} END"
    )
