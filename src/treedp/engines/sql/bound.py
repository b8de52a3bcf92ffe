"""Per-person contribution bounding inside the database, with randomness drawn by treedp.

The rule is :func:`treedp.privacy.contribution.bound_contributions`, written as window
functions over the rows that survive the checks (value, key and person id present, key
listed), in the same three steps:

1. keep ``c`` rows per (person, group): ``row_number() OVER (PARTITION BY p, g ORDER BY
   h1, b, j) <= c``;
2. keep ``g`` groups per person: ``dense_rank() OVER (PARTITION BY p ORDER BY hg, g) <= g``;
3. keep ``m`` rows per person: ``row_number() OVER (PARTITION BY p ORDER BY h3, g, b, j) <=
   m`` (skipped when steps 1 and 2 ran and ``g·c <= m``, as locally).

Only the ``(groups ×) B`` counts of the kept rows come back (``GROUP BY g, b``).

**Which rows are kept.** ``j`` numbers the rows that share a (person, group, bin): such rows
are interchangeable for every count, so which of them gets which ``j`` does not matter, and
each person's rows become distinct tuples ``(g, b, j)``. ``h1``, ``hg``, ``h3`` are keyed
hashes of ``(person, g, b, j)`` (of ``(person, g)`` for ``hg``) under three fresh 128-bit keys
drawn from the release's random source (the OS's cryptographic generator by default; never
the database's ``random()`` or ``setseed``): ``md5_number`` in DuckDB, ``md5`` in PostgreSQL,
keyed BLAKE2b (a function registered on the connection for the one query) in SQLite. Ordering a
person's distinct tuples by a keyed pseudo-random function of them and keeping the ``k``
lowest picks a uniform random ``k``-subset, as the local rule's 64-bit random words do
(tests/engines/sql/test_bound.py checks the selection frequencies against the exact law,
and that a variant without ``j`` fails). Ties of the hash are broken by the tuple itself.

**Why the guarantee holds whatever the hash.** The privacy argument of contribution bounding
(:mod:`treedp.privacy.contribution`) needs only that each person keeps at most the bounds and
that the rows kept of a person are a function of that person's own rows and of randomness
independent of the data: for a fixed key, the kept multiset of ``(g, b)`` of a person is a
function of their own multiset (the ``j`` numbering, the hashes and the tie-breaks look at no
other person's rows), so two neighbouring datasets stay neighbours after bounding, and the
release is a mixture over keys of outputs each within the guarantee. Neither the hash's
quality nor the key's secrecy is needed for privacy (both only make the sample uniform);
which rows are kept never depends on another person's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.grouped import GroupedCounts, GroupedJob
from treedp.engines.sql.rule import (
    MISSING,
    NON_NUMBER,
    Dialect,
    Sql,
    cells_sql,
    guarded,
    refuse_cells,
    value_column,
)

if TYPE_CHECKING:
    from treedp.noise.rng import RandomSource

__all__ = ["bounded_counts", "selection_sql"]

_ALL, _KEPT = 0, 1  # the two parts of the one statement


def selection_sql(sql: Sql, cells: str, job: GroupedJob, keys: Sequence[str]) -> str:
    """``SELECT p, g, b FROM ...``: the rows kept by the three steps (module docstring).

    ``cells`` is the ``(g, b, p)`` query of every row; ``keys`` three hex strings.
    """
    d = sql.dialect
    assert d.keyed_hash is not None
    m = job.bounds.max_contributions
    gmax, c = job.bounds.max_groups, job.bounds.max_contributions_per_group
    text = (
        "SELECT p, g, b, row_number() OVER (PARTITION BY p, g, b) AS j FROM "
        f"({cells}) AS c0 WHERE b >= 0 AND g >= 0 AND p IS NOT NULL"
    )
    grouped = bool(job.by)
    ran_both = grouped and c < m and gmax < m
    if grouped and c < m:
        h1 = d.keyed_hash(sql, keys[0], ["p", "g", "b", "j"])
        text = (
            f"SELECT p, g, b, j FROM (SELECT p, g, b, j, row_number() OVER (PARTITION BY p, g "
            f"ORDER BY {h1}, b, j) AS r FROM ({text}) AS s1) AS t1 WHERE r <= {int(c)}"
        )
    if grouped and gmax < m:
        hg = d.keyed_hash(sql, keys[1], ["p", "g"])
        text = (
            f"SELECT p, g, b, j FROM (SELECT p, g, b, j, dense_rank() OVER (PARTITION BY p "
            f"ORDER BY {hg}, g) AS r FROM ({text}) AS s2) AS t2 WHERE r <= {int(gmax)}"
        )
    if not (ran_both and gmax * c <= m):
        h3 = d.keyed_hash(sql, keys[2], ["p", "g", "b", "j"])
        text = (
            f"SELECT p, g, b, j FROM (SELECT p, g, b, j, row_number() OVER (PARTITION BY p "
            f"ORDER BY {h3}, g, b, j) AS r FROM ({text}) AS s3) AS t3 WHERE r <= {int(m)}"
        )
    return f"SELECT p, g, b FROM ({text}) AS kept"


def bounded_counts(
    dialect: Dialect, data: Any, job: GroupedJob, source: RandomSource
) -> GroupedCounts:
    """The ``G × B`` counts after per-person bounding in the database (module docstring).

    One statement returns the tally of every row's cell (for the missing-value checks and
    the number dropped) and the counts of the kept rows; nothing else leaves the database.
    """
    value_column(dialect, data, job.columns, job.bins)
    keys = [source.random_bytes(16).hex() for _ in range(3)]  # drawn before any read
    sql = Sql(dialect)
    cells = cells_sql(sql, data, job)
    kept = selection_sql(sql, cells, job, keys)
    # the cells query appears twice: its parameters twice, in order of appearance
    params = list(sql.params)
    head = Sql(dialect)
    cells_again = cells_sql(head, data, job)
    text = (
        f"SELECT {_ALL} AS part, g, b, CASE WHEN p IS NULL THEN 1 ELSE 0 END AS pm, count(*) "
        f"FROM ({cells_again}) AS a GROUP BY g, b, pm "
        f"UNION ALL SELECT {_KEPT}, g, b, 0, count(*) FROM ({kept}) AS k GROUP BY g, b"
    )
    all_params = head.params + params
    with dialect.session(data, {**head.functions, **sql.functions}):
        rows = guarded(dialect, lambda: dialect.run(data, text, all_params))
    n_keys, n_bins = len(job.keys), job.bins.n_bins
    counts = np.zeros((n_keys, n_bins), dtype=np.int64)
    bad = {"type": 0, "value": 0, "key": 0, "unit": 0}
    for part, g, b, pm, n in rows:
        n = int(n)
        if int(part) == _KEPT:
            counts[int(g), int(b)] += n
            continue
        b = int(b)
        if b == NON_NUMBER:
            bad["type"] += n
        elif b == MISSING:
            bad["value"] += n
        elif g is not None and int(g) == -1:
            bad["key"] += n
        elif b >= 0 and g is not None and int(pm):
            bad["unit"] += n
    refuse_cells(bad, job.nan, job.column)
    total = sum(int(r[4]) for r in rows if int(r[0]) == _ALL)
    return GroupedCounts(job.keys, counts, total - int(counts.sum()))
