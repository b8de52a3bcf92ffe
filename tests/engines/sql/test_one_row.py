"""One row never fails a database query where its neighbour without it succeeds: values the
database cannot convert saturate as in memory, keys are compared without casting the column,
and missing markers are missing (an independent review of the engines, session 27)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.dispatch import count_source
from treedp.engines.local import count_chunk

#: numerics at and past the double range, exact (2^1024 - 2^970 rounds to inf; 2^-1075 to 0)
EXTREME = [
    "1",
    "2.5",
    "1e400",
    "-1e400",
    "1e-400",
    "-1e-400",
    str(2**1024 - 2**970),
    str(2**1024 - 2**970 - 1),
    "0." + str(5**1075).zfill(1075),
    "4.9406564584124654e-324",
    "NaN",
]


def _pg_table(pg: Any, ddl: str, rows: list[tuple[Any, ...]]) -> treedp.SqlSource:
    pg.execute(f"CREATE TABLE v ({ddl})")
    with pg.cursor() as cur:
        marks = ", ".join(["%s"] * len(rows[0]))
        cur.executemany(f"INSERT INTO v VALUES ({marks})", rows)
    return treedp.SqlSource(pg, "SELECT * FROM v")


def test_postgres_numeric_saturates_like_python(pg: Any) -> None:
    """A ``numeric`` past the double range counts where Python's float puts the same Decimal
    (±inf clamped, ±0.0), instead of failing the query for that row."""
    data = _pg_table(pg, "x numeric", [(Decimal(v),) for v in EXTREME])
    bins = treedp.make_bins(edges=[-1.0, -1e-300, 0.0, 5e-324, 2.0, 10.0])
    values = np.array([float(Decimal(v)) for v in EXTREME])
    want = count_chunk(values, bins, nan="drop")
    assert count_source(data, column="x", bins=bins, nan="drop") == want
    assert want.counts.tolist() == [1, 0, 3, 2, 4] and want.dropped == 1
    kept = treedp.quantiles(data, [0.5], column="x", bounds=(0, 10), epsilon=1.0, nan="drop")
    assert np.isfinite(kept.values).all()


def test_postgres_numeric_neighbours(pg: Any) -> None:
    """The review's pair: a release on ``[1, 2]`` and on ``[1, 2, 1e400]`` both succeed and both
    charge."""
    data = _pg_table(pg, "x numeric", [(Decimal("1"),), (Decimal("2"),), (Decimal("1e400"),)])
    acc = treedp.Accountant(treedp.PureDP(2.0))
    treedp.release_cdf(data, column="x", bounds=(0, 10), bins=4, epsilon=1.0, accountant=acc)
    assert acc.spent == treedp.PureDP(1.0)
