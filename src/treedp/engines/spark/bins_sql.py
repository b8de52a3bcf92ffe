"""The bin rule as a Spark SQL expression: counting needs no Python on the executors.

The rule of :mod:`treedp.engines.base`, written with Spark's own column functions (the JVM
evaluates them; no UDF, no ``mapInArrow``):

* numbers become float64 (``CAST(v AS DOUBLE)``: integers round to nearest, as numpy's
  ``astype``; decimals are read as float64, as on every other engine);
* equal-width bins: ``t = (v - lo)·inv`` clamped to ``[0, B - 1/2]`` and truncated, the
  arithmetic of :func:`treedp.engines.local.count_chunk` in the same IEEE binary64 operations,
  then corrected against the edges themselves (``v < e_j`` moves one bin down, ``v >= e_{j+1}``
  one up), so rounding cannot put a value on the wrong side of an edge; the correction is left
  out when the local kernel's proof
  (:func:`treedp.engines.edge_exactness._arithmetic_is_exact`) shows the arithmetic alone is
  exact for these edges (e.g. ``B`` a power of two over ``(0, 1)``).
  When the edges are bit for bit ``lo + (hi - lo)·(j / B)`` (what :func:`treedp.make_bins`
  builds) the correction computes them in the same expression; otherwise they are read from
  an array;
* explicit edges and datetimes: a binary search over the inner edges (Spark's
  ``aggregate`` over the public step sizes: ``log2 B`` comparisons), giving the number of
  inner edges ``<= v``, which clamps by construction;
* datetimes: microseconds since the epoch (``unix_micros``; dates as days; a timestamp
  without time zone by its wall clock, as Arrow reads it), floored to the bins' unit (``D``,
  ``W``, ``M``, ``Y`` by the calendar in UTC), or, for finer units, multiplied with the same
  saturation as :func:`treedp.engines.local.datetime_ticks`.

Spark compares doubles with ``-0.0 == 0.0``; NaN and null never reach the expression (the
callers map missing values to their own cell first). Edges too many for an expression travel
as one array in a one-row DataFrame, broadcast to the executors (:func:`edges_frame`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.bin_edges import blocks

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["EDGES", "bin_expression", "edges_frame", "formula_edges", "needs_edges", "ticks"]

#: The column of the broadcast edges array.
EDGES = "__treedp_edges"
_INT64_MAX = int(np.iinfo(np.int64).max)
_US = {"D": 86_400_000_000, "h": 3_600_000_000, "m": 60_000_000, "s": 1_000_000, "ms": 1_000}
_FINER = {"us": 1, "ns": 1_000, "ps": 1_000_000, "fs": 1_000_000_000, "as": 1_000_000_000_000}


def formula_edges(bins: Bins) -> bool:
    """Whether the inner edges are bit for bit ``lo + (hi - lo)·(j / B)``: then the SQL
    expression computes each edge it compares with, and no edges array is needed."""
    if bins.datetime_unit is not None or not bins.equal_width or bins._inv_width <= 0.0:
        return False
    edges = bins.edges
    lo, hi, n = float(edges[0]), float(edges[-1]), edges.size - 1
    width = hi - lo
    if not np.isfinite(width):
        return False
    with np.errstate(all="ignore"):
        for part in blocks(edges.size):
            j = np.arange(part.start, part.stop, dtype=np.float64)
            inner = (j > 0) & (j < n)
            if not np.array_equal((lo + width * (j / n))[inner], edges[part][inner]):
                return False
    return True


def needs_edges(bins: Bins) -> bool:
    """Whether :func:`bin_expression` reads the edges array :data:`EDGES`."""
    return bins.n_bins > 1 and not formula_edges(bins)


def edges_frame(spark: Any, bins: Bins) -> Any:
    """A one-row DataFrame holding the edges as one array column :data:`EDGES` (float64, or
    int64 ticks for datetime bins), to ``crossJoin(broadcast(...))`` with the rows."""
    kind = "bigint" if bins.datetime_unit is not None else "double"
    return spark.createDataFrame([(bins.edges.tolist(),)], f"{EDGES} array<{kind}>")


def ticks(name: str, type_name: str, unit: str) -> Any:
    """The Spark timestamp / date column ``name`` as int64 ticks of ``unit`` (floor; finer
    units saturate at the int64 range instead of wrapping), in exact int64 arithmetic."""
    from pyspark.sql import functions as F

    v = "`" + name.replace("`", "``") + "`"
    date_days = f"CAST(unix_date({v}) AS BIGINT)" if type_name == "DateType" else None
    if date_days is not None:  # a date holds ±5.8 million years: coarse units come from its
        # days exactly; finer ones clamp the days to the microseconds' range first (two
        # reviews, session 27: under ANSI mode the product overflowed for one far date and
        # failed the query; bins wider than ±292,277 years need the days themselves)
        if unit in _US and unit not in _FINER:
            return F.expr(f"({date_days} * {_US['D'] // _US[unit]})")
        limit = _INT64_MAX // _US["D"]
        micros = f"(least(greatest({date_days}, {-limit}), {limit}) * {_US['D']})"
    elif type_name == "TimestampNTZType":  # wall-clock time, with no time zone involved
        # a day before 1970 is counted from its end: (days + 1)·D + (time − D), so that no
        # partial product leaves int64 within a day of either end (a review, session 27)
        days = f"CAST(unix_date(CAST({v} AS DATE)) AS BIGINT)"
        early = f"CAST({days} < 0 AS BIGINT)"
        time = (
            f"(CAST(hour({v}) AS BIGINT) * {_US['h']} + CAST(minute({v}) AS BIGINT) * {_US['m']}"
            f" + CAST(date_part('SECOND', {v}) * 1000000 AS BIGINT))"
        )
        micros = f"(({days} + {early}) * {_US['D']} + ({time} - {early} * {_US['D']}))"
    else:
        micros = f"unix_micros({v})"
    if unit in _FINER:
        factor = _FINER[unit]
        if factor == 1:
            return F.expr(micros)
        limit = _INT64_MAX // factor
        # the ELSE operand is clamped too: Spark may evaluate it for every row, and under ANSI
        # mode (Spark 4's default) an overflowing product is an error, not a wrap
        return F.expr(
            f"CASE WHEN {micros} > {limit} THEN {_INT64_MAX} WHEN {micros} < {-limit} "
            f"THEN {-_INT64_MAX} ELSE least(greatest({micros}, {-limit}), {limit}) * {factor} END"
        )
    if unit in _US:
        return F.expr(_floor_div(micros, _US[unit]))
    days = date_days if date_days is not None else _floor_div(micros, _US["D"])
    if unit == "W":
        return F.expr(_floor_div(days, 7))
    day = f"date_from_unix_date(CAST({days} AS INT))"
    years = f"(CAST(year({day}) AS BIGINT) - 1970)"
    if unit == "Y":
        return F.expr(years)
    return F.expr(f"({years} * 12 + CAST(month({day}) AS BIGINT) - 1)")  # "M"


def _floor_div(sql: str, n: int) -> str:
    """``floor(sql / n)`` in exact int64 arithmetic: the truncated quotient, less one for a
    negative remainder (``sql - pmod(sql, n)`` left int64 for a value within ``n`` of its
    lower end: an ANSI overflow for one row; a review, session 27)."""
    return f"(({sql} div {n}) - CAST(({sql} % {n}) < 0 AS BIGINT))"


def bin_expression(value: Any, bins: Bins, edges: Any | None = None) -> Any:
    """The bin (0 … B-1, an int) of a non-missing value column: float64 numbers, or int64
    ticks for datetime bins. ``edges`` is the :data:`EDGES` column when
    :func:`needs_edges`."""
    from pyspark.sql import functions as F

    n = bins.n_bins
    if n == 1:
        return F.lit(0)
    if formula_edges(bins):
        lo, hi = float(bins.edges[0]), float(bins.edges[-1])
        width = hi - lo

        def edge(j: Any) -> Any:
            return F.lit(lo) + F.lit(width) * (j.cast("double") / F.lit(float(n)))

        return _arithmetic(value, bins, edge)
    if edges is None:
        raise ValueError("these bins need the edges array")
    if bins.datetime_unit is None and bins.equal_width and bins._inv_width > 0.0:
        return _arithmetic(value, bins, lambda j: F.element_at(edges, j + 1))
    return _search(value, n, edges)


def _arithmetic(value: Any, bins: Bins, edge: Any) -> Any:
    """The equal-width index, with its correction unless the arithmetic alone is proven to be
    the bin rule for these edges; ``edge(j)`` is edge ``j`` (1 <= j < B).

    The proof is the local kernel's (:func:`treedp.engines.edge_exactness._arithmetic_is_exact`, an
    ``O(B)`` check of the public edges): ``floor(clip((v - lo)·inv, 0, B - 1/2))`` is
    non-decreasing in ``v``, so it is the bin rule for every ``v`` when each inner edge gets
    index ``>= j`` and the double just below it ``<= j - 1``. Spark evaluates the same IEEE
    binary64 subtraction and product (Java's double arithmetic is strict IEEE 754), clamps
    with ``greatest`` / ``least`` and truncates with the cast to int, as numpy does; so the
    check made in numpy holds for Spark's values too, and the correction (two edge
    computations and comparisons per row) is left out.
    """
    from pyspark.sql import functions as F

    from treedp.engines.edge_exactness import _arithmetic_is_exact

    n = bins.n_bins
    lo = float(bins.edges[0])
    t = (value - F.lit(lo)) * F.lit(float(bins._inv_width))
    idx = F.least(F.greatest(t, F.lit(0.0)), F.lit(n - 0.5)).cast("int")
    if _arithmetic_is_exact(bins.edges, float(bins._inv_width)):
        return idx
    down = (idx > 0) & (value < edge(idx))
    up = (idx < n - 1) & (value >= edge(idx + 1))
    return F.when(down, idx - 1).when(up, idx + 1).otherwise(idx)


def _search(value: Any, n: int, edges: Any) -> Any:
    """The number of inner edges ``<= value``: a binary search by descending powers of two
    over ``edges`` (1-based ``element_at``; inner edge ``i`` is element ``i + 1``)."""
    from pyspark.sql import functions as F

    steps = [1 << k for k in range((n - 1).bit_length() - 1, -1, -1)]

    def step(pos: Any, k: Any) -> Any:
        fits = (pos + k <= n - 1) & (F.element_at(edges, pos + k + 1) <= value)
        return pos + F.when(fits, k).otherwise(F.lit(0))

    return F.aggregate(F.array(*[F.lit(k) for k in steps]), F.lit(0), step)
