"""Explicit edges in DuckDB: a branch-free binary search over a list of the edges.

The ``case`` tree of :mod:`treedp.engines.sql.rule` costs 230–440× DuckDB's own ``GROUP BY``
on explicit edges (measured, docs/benchmarks.md); this rule costs about a tenth of that. The
edges ``e_0 .. e_{B-1}``, padded with ``+inf`` to a power of two ``P >= B``, are one constant
list ``a`` (exact literals: DuckDB parses the decimal strings correctly rounded), cross-joined
to the rows once; then ``log2 P`` chained subqueries, each one comparison and one lookup::

    l_0 = 0
    l_{k+1} = l_k + s·[x >= a[l_k + s]]          s = P/2, P/4, .., 1  (0-based a)

so that ``l`` is the largest ``j`` with ``a_j <= x`` whenever ``a_0 <= x``: every comparison
is exact (two doubles), and the padding ``+inf`` is above every finite ``x``. The search runs
on every row (no branch), but only its result for ``x`` in ``[e_1, e_{B-1})`` is used; the rest
is decided by cheap predicates first, as the local rule does: NULL or NaN is missing, ``x <
e_1`` (``-inf`` and everything below ``e_0`` too) is bin 0, ``x >= e_{B-1}`` (``+inf`` too) is
bin ``B - 1``. For ``x`` in ``[e_1, e_{B-1})``, ``a_0 = e_0 <= x``, so ``l`` is the ``j`` with
``e_j <= x < e_{j+1}``, ``1 <= j <= B - 2``: the local bin. ``-0.0`` and ``0.0`` compare
equal in DuckDB, as in numpy. NaN compares above every number in DuckDB and NULL makes the
comparison NULL; neither raises, and both are decided before ``l`` is read.

An ``ASOF LEFT JOIN`` against a table of the edges (the in-range rows only, by an equality key)
was measured too: exact with the same predicates, but about twice this rule's time (it sorts
the rows), and a table to create and drop per count.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.sql.rule import Sql

__all__ = ["search_bin", "search_levels", "uses_search"]

#: The comparison of the search; the tests replace it by ``>`` and see the counts change.
_GE = ">="


def uses_search(sql: Sql, bins: Bins) -> bool:
    """Whether the bins are counted by this rule (the dialect asked for it, ``B >= 3``)."""
    return sql.dialect.rule(bins) == "search" and bins.n_bins >= 3


def _padded(bins: Bins) -> list[float]:
    n = bins.n_bins
    size = 1 << (n - 1).bit_length()
    return [float(e) for e in bins.edges[:n]] + [float("inf")] * (size - n)


def search_levels(sql: Sql, inner: str, bins: Bins, x: str) -> str:
    """``inner`` (a query with the double column ``x``) with one more column ``l``: the
    largest ``j`` with ``e_j <= x`` for ``x`` in ``[e_0, e_{B-1}]`` (else meaningless)."""
    a = _padded(bins)
    text = f"SELECT *, 0 AS l FROM ({inner}) AS s_in, (SELECT {sql.array(a)} AS a) AS s_a"
    step = len(a) // 2
    level = 0
    while step >= 1:  # 1-based lists: a_j is a[j + 1]
        found = f"CAST({x} {_GE} a[l + {step + 1}] AS INTEGER)"
        text = f"SELECT * REPLACE (l + {step} * {found} AS l) FROM ({text}) AS s_{level}"
        step //= 2
        level += 1
    return text


def search_bin(sql: Sql, bins: Bins, x: str, missing: str, missing_code: int) -> str:
    """The bin of ``x`` from the column ``l`` of :func:`search_levels` and the cheap
    predicates of the module docstring; missing values ``missing_code``."""
    low, high = sql.value(float(bins.edges[1])), sql.value(float(bins.edges[-2]))
    top = bins.n_bins - 1
    return (
        f"CASE WHEN {missing} THEN {missing_code} WHEN {x} < {low} THEN 0 "
        f"WHEN {x} >= {high} THEN {top} ELSE CAST(l AS BIGINT) END"
    )
