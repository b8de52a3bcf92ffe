"""Explicit edges in PostgreSQL: ``width_bucket(x, thresholds)``, numbers and datetime ticks.

PostgreSQL's ``width_bucket(operand, thresholds anyarray)`` is a binary search in the server
over a sorted array with the element type's own exact comparison (``float8``: ``-0.0 = 0.0``,
NaN above every number; ``int8`` / ``numeric``: exact integers); it returns the number of
thresholds ``<= operand`` (an upper-bound search, right for repeated thresholds too). The
cheap predicates come first, as in the local rule::

    CASE WHEN <missing> THEN -1          -- NULL, or NaN for numbers
         WHEN x < e_1 THEN 0             -- everything below e_1 (-inf, -infinity too)
         WHEN x >= e_{B-1} THEN B - 1    -- everything at or above e_{B-1} (+inf too)
         ELSE width_bucket(x, ARRAY[e_1 .. e_{B-1}]) END

so the search runs only for ``x`` in ``[e_1, e_{B-1})``, where the number of inner edges
``<= x`` is the ``j`` with ``e_j <= x < e_{j+1}``: the local rule with clamping. The edges
travel inside the one wrapped query (numbers as one bound ``float8[]`` parameter, exact
doubles; datetime thresholds as an integer array literal, public Python integers), nothing
left behind in the database.

Datetimes use the integer thresholds ``T_j`` of :mod:`treedp.engines.sql.ticks` compared
with the column's exact ticks; when every inner threshold lies within ``±2^62`` the in-range
ticks are searched as ``int8`` (an array of fixed-width elements: the server reads the middle
element directly), else as ``numeric``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from treedp.engines.sql.ticks import thresholds

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.sql.rule import Sql
    from treedp.engines.sql.ticks import Ticks

__all__ = ["bucket_bin", "tick_bucket"]

#: The thresholds moved by this many doubles (numbers) or ticks (datetimes); the tests set
#: ``-1`` (a mutant: a value one below an edge counted in the bin above) and see counts change.
_SHIFT = 0
#: Settle missing and out-of-range values before the search (module docstring); False: the
#: bare ``width_bucket`` behind the missing test only (the previous numeric rule, timed
#: against this one by ``benchmarks/databases.py``; the same bins, as the tests check).
_PREDICATES = True


def _shifted(edges: np.ndarray) -> list[float]:
    out = np.asarray(edges, dtype=np.float64)
    for _ in range(abs(_SHIFT)):
        out = np.nextafter(out, np.inf if _SHIFT > 0 else -np.inf)
    return [float(v) for v in out]


def bucket_bin(sql: Sql, bins: Bins, x: str, missing: str, missing_code: int) -> str:
    """The bin of the double ``x`` (module docstring); missing values ``missing_code``."""
    n = bins.n_bins
    if n == 1:
        return f"CASE WHEN {missing} THEN {missing_code} ELSE 0 END"
    inner = _shifted(bins.edges[1:-1])
    if not _PREDICATES:
        found = f"width_bucket({x}, {sql.array(inner)})"
        return f"CASE WHEN {missing} THEN {missing_code} ELSE {found} END"
    low, high = sql.value(inner[0]), sql.value(inner[-1])
    found = f"width_bucket({x}, {sql.array(inner)})"
    return (
        f"CASE WHEN {missing} THEN {missing_code} WHEN {x} < {low} THEN 0 "
        f"WHEN {x} >= {high} THEN {n - 1} ELSE {found} END"
    )


def tick_bucket(ticks: Ticks, bins: Bins, missing: int) -> str:
    """The bin of the integer ticks ``x`` (NULL: ``missing``) against the thresholds ``T_j``
    (module docstring); every number in the text is a public Python integer."""
    n = bins.n_bins
    if n == 1:
        return f"CASE WHEN x IS NULL THEN {missing} ELSE 0 END"
    ts = [t + _SHIFT for t in thresholds(bins, ticks.unit)[1:n]]
    narrow = max(abs(t) for t in ts) < 1 << 62
    kind = "int8" if narrow else ticks.wide
    operand = "CAST(x AS int8)" if narrow else "x"
    array = "CAST('{" + ",".join(map(str, ts)) + "}' AS " + kind + "[])"
    low, high = f"CAST('{ts[0]}' AS {ticks.wide})", f"CAST('{ts[-1]}' AS {ticks.wide})"
    return (
        f"CASE WHEN x IS NULL THEN {missing} WHEN x < {low} THEN 0 WHEN x >= {high} THEN "
        f"{n - 1} ELSE width_bucket({operand}, {array}) END"
    )
