"""Explicit edges in DuckDB: a grid hint, then a branch-free binary search over the edges
(numbers; datetimes over their integer ticks, :func:`tick_search`).

The ``case`` tree of :mod:`treedp.engines.sql.rule` cost 69× DuckDB's own ``GROUP BY`` on
1,024 explicit edges (230–440× under load); this rule 4.1–4.3× (docs/databases.md). Cheap
predicates come first, as in the local rule: NULL or NaN is missing, ``x < e_1`` (``-inf``
and everything below ``e_0`` too) is bin 0, ``x >= e_{B-1}`` (``+inf`` too) bin ``B - 1``.
Only for ``x`` in ``[e_1, e_{B-1})`` is the result of the search used; its bin ``j`` is in
``[1, B - 2]``.

**The hint.** ``c(x) = floor(min(max((x - e_1)·s, 0), M - 1))``, ``M = 4B`` cells, ``s =
M/(e_{B-1} - e_1)`` a finite positive double: one rounded subtraction and one rounded product
by ``s > 0`` (each monotone), clamps and ``floor``, so ``c`` is non-decreasing in ``x``
(overflow gives ``+inf``, clamped; no NaN for an in-range ``x``). numpy computes ``c(e_j)``
for every edge with the same double operations. For ``e_j <= x < e_{j+1}``, ``c(e_j) <= c(x)
<= c(e_{j+1})``, so the bin of a value in cell ``c`` lies in ``[lo_c, hi_c]``: ``lo_c`` the
least ``j`` with ``c(e_{j+1}) >= c``, ``hi_c`` the greatest with ``c(e_j) <= c``. The list
``lo`` (``M`` integers) is read at ``c(x)``.

**The search.** The edges ``e_0 .. e_{B-1}``, padded with ``+inf``, are one constant list ``a``
(exact literals: DuckDB parses decimal strings correctly rounded), cross-joined once; with
``L`` the bit length of the widest ``hi_c - lo_c``, ``L`` chained subqueries, one lookup and
one comparison each::

    l_0 = lo[c(x)]
    l_{k+1} = l_k + s_k·[x >= a[l_k + s_k]]          s_k = 2^(L-1), .., 2, 1  (0-based a)

Since ``a_{l_0} <= x`` (``lo_c`` is at most the bin) and the bin is at most ``l_0 + 2^L - 1``,
``l_L`` is the largest ``j`` there with ``a_j <= x``: the bin, by exact comparisons of two
doubles (``+inf`` is above every finite ``x``). Without a finite scale (edges a few
subnormals apart) ``l_0 = 0`` and ``L`` covers all ``B`` edges. Rows outside ``[e_1,
e_{B-1})`` run the same arithmetic harmlessly (``-inf`` clamps to cell 0, ``+inf`` and NaN to
``M - 1``, NULL stays NULL); ``-0.0`` and ``0.0`` compare equal in DuckDB, as in numpy.

An ``ASOF LEFT JOIN`` against a ``VALUES`` list of the edges (in-range rows only, by an
equality key; ``benchmarks/databases.py`` times it and checks its counts) is exact with the
same predicates but measured 24–31× the baseline, and its sort took the process to 1.1 GB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from treedp.engines.sql.ticks import thresholds

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.sql.rule import Sql
    from treedp.engines.sql.ticks import Ticks

__all__ = ["search_bin", "search_levels", "tick_search", "uses_search"]

#: The comparison of the search, and the side of ``lo_c``'s ``searchsorted``; the tests
#: replace them by ``>`` and ``"right"`` and see the counts change.
_GE = ">="
_LO_SIDE: Literal["left", "right"] = "left"


def uses_search(sql: Sql, bins: Bins) -> bool:
    """Whether the bins are counted by this rule (the dialect asked for it, ``B >= 3``)."""
    return sql.dialect.rule(bins) == "search" and bins.n_bins >= 3


def _hint(ce: np.ndarray, m: int, n: int) -> tuple[list[int], int]:
    """``lo_c`` of each of the ``m`` cells and the widest ``hi_c - lo_c``, from the cells
    ``ce[j]`` of ``e_j``, ``j = 1 .. B - 1`` (``ce[0]`` unused)."""
    cells = np.arange(m)
    lo = np.minimum(1 + np.searchsorted(ce[2:n], cells, _LO_SIDE), n - 2)
    hi = np.searchsorted(ce[1 : n - 1], cells, "right")
    return [int(v) for v in lo], int(np.max(np.maximum(hi - lo, 0)))


def _cells(sql: Sql, bins: Bins, x: str) -> tuple[str, list[int], int] | None:
    """The hint: the SQL cell ``c`` of ``x`` on a grid of ``M = 4B`` cells over ``[e_1,
    e_{B-1}]``, the least bin ``lo_c`` of each cell, and the widest ``hi_c - lo_c``; None when
    the grid's scale is not a finite positive double (edges a few subnormals apart)."""
    e, n = bins.edges, bins.n_bins
    e1, m = float(e[1]), min(4 * n, 1 << 20)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        scale = np.float64(m) / (np.float64(e[n - 1]) - np.float64(e1))
        ce = np.floor(np.minimum(np.maximum((e[1:n] - e1) * scale, 0.0), m - 1.0))
    if not (np.isfinite(scale) and scale > 0):
        return None
    ce = np.concatenate([[0], ce.astype(np.int64)])  # ce[j]: the cell of e_j, j = 1 .. B - 1
    lo, width = _hint(ce, m, n)
    y = f"({x} - {sql.value(e1)}) * {sql.value(float(scale))}"
    cell = f"CAST(floor(LEAST(GREATEST({y}, {sql.value(0.0)}), {sql.value(m - 1.0)})) AS BIGINT)"
    return cell, lo, width


def _levels(x: str, start: str, consts: str, a: str, inner: str, levels: int) -> str:
    """The chained subqueries of the search: ``l`` from ``start``, ``levels`` halvings."""
    text = f"SELECT *, {start} AS l FROM ({inner}) AS s_in, (SELECT {a} AS a{consts}) AS s_a"
    for level in range(levels):  # 1-based lists: a_j is a[j + 1]
        step = 1 << (levels - 1 - level)
        found = f"CAST({x} {_GE} a[l + {step + 1}] AS INTEGER)"
        text = f"SELECT * REPLACE (l + {step} * {found} AS l) FROM ({text}) AS s_{level}"
    return text


def search_levels(sql: Sql, inner: str, bins: Bins, x: str) -> str:
    """``inner`` (a query with the double column ``x``) with one more column ``l``: the
    largest ``j`` with ``e_j <= x`` for ``x`` in ``[e_1, e_{B-1})`` (else meaningless)."""
    n = bins.n_bins
    hint = _cells(sql, bins, x)
    if hint is None:
        start, levels, consts = "0", (n - 1).bit_length(), ""
    else:
        cell, lo, width = hint
        start, levels = f"h[{cell} + 1]", width.bit_length()
        consts = ", CAST('[" + ", ".join(map(str, lo)) + "]' AS BIGINT[]) AS h"
    size = n - 1 + (1 << levels)  # every a[l + s] the search reads, +inf past e_{B-1}
    a = [float(v) for v in bins.edges[:n]] + [float("inf")] * (size - n)
    return _levels(x, start, consts, sql.array(a), inner, levels)


def search_bin(sql: Sql, bins: Bins, x: str, missing: str, missing_code: int) -> str:
    """The bin of ``x`` from the column ``l`` of :func:`search_levels` and the cheap
    predicates of the module docstring; missing values ``missing_code``."""
    low, high = sql.value(float(bins.edges[1])), sql.value(float(bins.edges[-2]))
    top = bins.n_bins - 1
    return (
        f"CASE WHEN {missing} THEN {missing_code} WHEN {x} < {low} THEN 0 "
        f"WHEN {x} >= {high} THEN {top} ELSE CAST(l AS BIGINT) END"
    )


def tick_search(inner: str, bins: Bins, ticks: Ticks, missing: int) -> tuple[str, str] | None:
    """Datetime bins in DuckDB by the same search over the integer thresholds ``T_j`` of
    :mod:`treedp.engines.sql.ticks`: ``(inner with the column l, the bin of x)``, or None
    (fewer than 3 bins, or an inner threshold beyond ``±2^62``: the ``CASE`` tree then).

    The ticks ``x`` are clamped to ``xt`` in ``[T_1, T_{B-1}]`` (a BIGINT); the hint is exact
    integer arithmetic, ``c = (xt - T_1) // w`` with ``w = ceil((T_{B-1} - T_1 + 1)/M)``, so
    ``c`` is in ``[0, M - 1]``, non-decreasing in ``x``, and Python computes ``c(T_j)`` as
    DuckDB does; thresholds may repeat (a column coarser than the bins), which leaves "the
    largest ``j`` with ``T_j <= x``" and the proof of the module docstring as they are. The
    list ``a`` holds ``T_0' = T_1 - 1`` (never read), ``T_1 .. T_{B-1}`` and ``2^62`` past
    them (above every clamped ``xt``).
    """
    n = bins.n_bins
    ts = thresholds(bins, ticks.unit)
    if n < 3 or max(abs(t) for t in ts[1:n]) >= 1 << 62:
        return None
    t1, tb = ts[1], ts[n - 1]
    m = min(4 * n, 1 << 20)
    w = -(-(tb - t1 + 1) // m)
    lo, width = _hint(np.array([0] + [(t - t1) // w for t in ts[1:n]], dtype=np.int64), m, n)
    levels = width.bit_length()
    low, high = f"CAST('{t1}' AS {ticks.wide})", f"CAST('{tb}' AS {ticks.wide})"
    with_xt = f"SELECT *, CAST(LEAST(GREATEST(x, {low}), {high}) AS BIGINT) AS xt FROM ({inner})"
    start = f"h[(xt - ({t1})) // {w} + 1]"
    consts = ", CAST('[" + ", ".join(map(str, lo)) + "]' AS BIGINT[]) AS h"
    a = [t1 - 1, *ts[1:n]] + [1 << 62] * ((1 << levels) - 1)
    a_sql = "CAST('[" + ", ".join(map(str, a)) + "]' AS BIGINT[])"
    text = _levels("xt", start, consts, a_sql, f"{with_xt} AS s_t", levels)
    b = (
        f"CASE WHEN x IS NULL THEN {missing} WHEN x < {low} THEN 0 WHEN x >= {high} THEN {n - 1} "
        "ELSE CAST(l AS BIGINT) END"
    )
    return text, b
