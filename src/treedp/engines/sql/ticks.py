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
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from treedp.exceptions import InvalidTypeError
from treedp.timezones import check_agrees

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = [
    "FAR", "INFINITE", "Ticks", "arith_bin", "check_ticks", "coarsened", "equal_width",
    "thresholds", "tick_bin",
]  # fmt: skip

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
    div : str
        The SQL function of an integer quotient (exact for a multiple).
    """

    expr: str
    unit: str
    aware: bool
    wide: str
    div: str = "div"


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


def coarsened(ticks: Ticks, bins: Bins) -> Ticks:
    """Nanosecond ticks as microsecond ticks (their floor) where every edge is a whole
    microsecond (bins in microseconds or coarser); other ticks as they are.

    Then ``T_j = 1000·T'_j`` (``T'_j`` the thresholds in microseconds), so ``x >= T_j``
    exactly when ``floor(x/1000) >= T'_j``: the same bins. In nanoseconds the thresholds of
    far edges pass ``2^62`` (2116), and the private bounds' grid, which reaches far beyond,
    fell back from DuckDB's search to a ``CASE`` tree of every edge (a new user's run:
    80–145 s and 3.5 GB for 5 million ``TIMESTAMP_NS`` rows, 9 s as ``TIMESTAMP``).
    """
    unit = bins.datetime_unit
    if ticks.unit != "ns" or unit is None:
        return ticks
    if unit not in ("Y", "M") and _PER_SECOND[unit] > _PER_SECOND["us"]:
        return ticks
    # ±INFINITE / 1000 (about 2^80.03) stays beyond every threshold (clamped to ±FAR = 2^80):
    # a coarsening by 1024 or more would not (a re-review)
    assert INFINITE // 1000 > FAR
    x = f"({ticks.expr})"  # floor(x / 1000): the numerator below is a multiple of 1000
    return replace(ticks, expr=f"{ticks.div}({x} - (({x} % 1000) + 1000) % 1000, 1000)", unit="us")


def _tree(ts: list[int], lo: int, hi: int, wide: str) -> str:
    if lo == hi:
        return str(lo)
    mid = (lo + hi + 1) // 2
    below, above = _tree(ts, lo, mid - 1, wide), _tree(ts, mid, hi, wide)
    return f"CASE WHEN x < CAST('{ts[mid]}' AS {wide}) THEN {below} ELSE {above} END"


def tick_bin(ticks: Ticks, bins: Bins, missing: int) -> str:
    """The bin of the ticks ``x``: :func:`arith_bin` for equal-width bins, else
    :func:`tree_bin` (DuckDB counts explicit edges by
    :func:`treedp.engines.sql.search.tick_search` instead, PostgreSQL by
    :func:`treedp.engines.sql.bucket.tick_bucket`)."""
    fast = arith_bin(ticks, bins, missing, ticks.div)
    return fast if fast is not None else tree_bin(ticks, bins, missing)


def tree_bin(ticks: Ticks, bins: Bins, missing: int) -> str:
    """The bin of the ticks ``x``: ``missing`` for NULL, else the largest ``j`` with
    ``T_j <= x`` (0 below ``T_0``): a balanced tree of comparisons with public integers,
    written in the text (Python ints, no value of the data)."""
    ts = thresholds(bins, ticks.unit)
    return (
        f"CASE WHEN x IS NULL THEN {missing} ELSE {_tree(ts, 0, bins.n_bins - 1, ticks.wide)} END"
    )


def equal_width(bins: Bins) -> tuple[int, int] | None:
    """``(lo, W)`` when the edges are ``e_j = lo + floor(j·W/B)`` (datetime bins from bounds,
    checked on every edge), else None."""
    edges = [int(e) for e in bins.edges]
    lo, width, n = edges[0], edges[-1] - edges[0], bins.n_bins
    if bins.datetime_unit in (None, "Y", "M") or width <= 0:
        return None
    return (lo, width) if all(e == lo + (j * width) // n for j, e in enumerate(edges)) else None


def arith_bin(ticks: Ticks, bins: Bins, missing: int, div: str) -> str | None:
    """The bin of the ticks ``x`` for equal-width datetime bins, in O(1) exact integer
    arithmetic on BIGINT, or None (other bins, or a range where BIGINT could overflow:
    :func:`tree_bin`).

    ``x`` is first clamped to ``[T_0 - 1, T_B]`` (which keeps its bin, ``±infinity`` too);
    ``t = floor(x·u/n)`` is then the value in the bins' unit (a product, or a truncating
    division of ``x - base >= 0`` with ``base`` a multiple of ``k = n/u``: the floor); the
    largest ``j`` with ``lo + floor(j·W/B) <= t`` is ``floor(((t - lo + 1)·B - 1) / W)``
    (``floor(j·W/B) <= d`` holds exactly when ``j·W < (d + 1)·B``; ``t - lo + 1 >= 0``, so
    the division truncates as floor except at ``-1``, which the clamp maps to 0 either way),
    clamped to ``[0, B - 1]``.
    """
    found = equal_width(bins)
    assert bins.datetime_unit is not None
    if found is None:  # calendar units (no fixed length: thresholds() is exact) among them
        return None
    ratio = _PER_SECOND[bins.datetime_unit] / _PER_SECOND[ticks.unit]
    if 1 not in (ratio.numerator, ratio.denominator):
        return None
    lo, width = found
    ts = thresholds(bins, ticks.unit)
    low, high, n = ts[0] - 1, ts[-1], bins.n_bins
    m, k = ratio.numerator, ratio.denominator
    base = (low // k) * k
    t_low, t_high = (low // k, high // k) if k > 1 else (low * m, high * m)
    limit = 2**62
    if max(abs(low), abs(high), abs(t_low), abs(t_high), (t_high - lo + 1) * n) >= limit:
        return None
    xc = f"CAST(LEAST(GREATEST(x, {low}), {high}) AS BIGINT)"
    t = f"({xc} * {m})" if k == 1 else f"({div}({xc} - ({base}), {k}) + ({base // k}))"
    j = f"{div}(({t} - ({lo}) + 1) * {n} - 1, {width})"
    return (
        f"CASE WHEN x IS NULL THEN {missing} ELSE "
        f"CAST(LEAST({n - 1}, GREATEST(0, {j})) AS BIGINT) END"
    )
