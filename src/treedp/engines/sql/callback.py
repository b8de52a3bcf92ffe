"""SQLite's bins: a Python ``bisect`` over the public edges, registered for one query.

SQLite has no list type, and the balanced ``CASE`` tree of :mod:`treedp.engines.sql.rule`
grows with the edges: over 16,001 edges it took 77× SQLite's own ``GROUP BY`` (minutes
under load; docs/databases.md). The ``bisect`` rule registers a deterministic function of
one argument on the connection for the one counting query (``create_function``, removed
afterwards; one name per thread, as the query is built and run in one thread and a
connection may serve several)::

    f(x) = bisect_right([e_1, ..., e_{B-1}], x)

the number of inner edges ``<= x``: for a double ``x`` (SQLite's ``REAL``; integers are
converted by ``CAST(v AS REAL)`` in SQL first) that is the largest ``j`` with ``e_j <= x``,
clamped to ``[0, B - 1]`` (``-inf`` and everything below ``e_1`` in bin 0, ``+inf`` and
everything at or above ``e_{B-1}`` in bin ``B - 1``): the local rule, by exact comparisons
of two doubles (``-0.0 == 0.0`` in Python as in numpy). NULL is decided in SQL before the
call (missing); SQLite stores no NaN, and the function would return the missing code for
one. The function runs in the Python
process, on the rows of the query inside SQLite; only the bin of each row goes back to
SQLite, and only the ``B`` counts leave the database query.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.sql.rule import Sql

__all__ = ["bisect_bin", "bisect_function"]

#: The search's side; the tests replace it by ``bisect_left`` and see the counts change.
_SEARCH: Callable[[list[float], float], int] = bisect.bisect_right


def bisect_function(bins: Bins, missing: int) -> Callable[[Any], int]:
    """``f(x)``: the bin of the double ``x`` (module docstring); ``missing`` for NaN or
    None."""
    inner = [float(e) for e in bins.edges[1:-1]]
    search = _SEARCH

    def bin_of(x: Any) -> int:
        if x is None or x != x:
            return missing
        return search(inner, float(x))

    return bin_of


def bisect_bin(sql: Sql, bins: Bins, x: str, missing: int) -> str:
    """The SQL call of this thread's function for ``bins`` on ``x``, registered in ``sql``."""
    name = f"treedp_bin_{threading.get_ident()}"
    sql.functions[name] = bisect_function(bins, missing)
    return f"{name}({x})"
