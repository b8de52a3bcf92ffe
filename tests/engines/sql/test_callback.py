"""SQLite's bins by a registered ``bisect`` (``engines/sql/callback.py``): the local rule on
edge values for any edges (16,000 geometric ones too, which the CASE tree could not take), the
function gone after the query, and a wrong search caught."""

from __future__ import annotations

import bisect
import sqlite3
import threading
from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import loader
from treedp.engines.dispatch import count_source
from treedp.engines.local import count_chunk
from treedp.engines.sql import callback

_RNG = np.random.default_rng(5)
EDGES = {
    "geometric-16000": np.concatenate([-np.geomspace(1e9, 1e-6, 8000), [0.0],
                                       np.geomspace(1e-6, 1e9, 8000)]),
    "five": np.array([-2.5, -0.0, 0.1, 0.3, 1e3, 1e4]),
    "huge": np.array([-1.7e308, -1.0, 5e-324, 1.0, 1.7e308]),
    "tiny": np.array([-5e-324, 0.0, 5e-324, 1e-323, 1.5e-323]),
    "two": np.array([0.0, 0.3, 1.0]),
    "one": np.array([0.0, 1.0]),
    "1000-uneven": np.unique(_RNG.standard_normal(1001)),
}  # fmt: skip


def _values(edges: np.ndarray) -> list[float | None]:
    with np.errstate(over="ignore"):
        near = [edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)]
    extra = [0.0, -0.0, np.inf, -np.inf, 1e308, -1e308, 5e-324, -5e-324]
    return [*(float(v) for v in np.concatenate([*near, extra])), None]


def _want(bins: Any, values: list[float | None]) -> Any:
    arr = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
    return count_chunk(arr, bins, "drop")


@pytest.mark.parametrize("name", sorted(EDGES))
def test_bisect_equals_the_local_rule(request: pytest.FixtureRequest, name: str) -> None:
    bins = treedp.make_bins(edges=EDGES[name])
    values = _values(bins.edges)
    data = loader("sqlite", request)([("v", "double")], [(v,) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") == _want(bins, values)


def test_integers_and_equal_width_bins(request: pytest.FixtureRequest) -> None:
    """Integer values (converted to the nearest double in SQL) and equal-width bins."""
    data = loader("sqlite", request)([("v", "bigint")], [(v,) for v in range(-3, 104)])
    ints = np.arange(-3, 104)
    for bins in (treedp.make_bins(bounds=(0, 100), bins=100),
                 treedp.make_bins(bounds=(0, 100), bins="integers")):  # fmt: skip
        assert count_source(data, column="v", bins=bins) == count_chunk(ints, bins)


def test_the_function_is_removed_after_the_query() -> None:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(0.5,), (2.5,)])
    bins = treedp.make_bins(edges=[0.0, 1.0, 2.0, 3.0])
    got = count_source(treedp.SqlSource(con, "SELECT v FROM t"), column="v", bins=bins)
    assert got.counts.tolist() == [1, 0, 1]
    with pytest.raises(sqlite3.Error):  # unregistered: no working function of that name
        con.execute(f"SELECT treedp_bin_{threading.get_ident()}(0.5)").fetchall()


def test_a_wrong_search_is_caught(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bisect_left`` (``e_j < x <= e_{j+1}``) counts the edge values differently."""
    monkeypatch.setattr(callback, "_SEARCH", bisect.bisect_left)
    bins = treedp.make_bins(edges=EDGES["five"])
    values = _values(bins.edges)
    data = loader("sqlite", request)([("v", "double")], [(v,) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") != _want(bins, values)
