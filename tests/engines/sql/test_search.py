"""Explicit edges in DuckDB (``engines/sql/search.py``): the binary search over a list of the
edges is the local rule, bin for bin, and the edge values catch a wrong comparison."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import Loader, loader
from treedp.api_grouped import grouped_counts
from treedp.engines.dispatch import count_source
from treedp.engines.grouped import GroupedJob
from treedp.engines.local import count_chunk
from treedp.engines.sql import search
from treedp.engines.sql.duck import DIALECT
from treedp.engines.sql.rule import Sql
from treedp.privacy.contribution import ContributionBounds

pytest.importorskip("duckdb")

_RNG = np.random.default_rng(31)
EDGES = {
    "three": [0.0, 0.5, 1.0, 2.0],
    "five": [-2.5, -0.0, 0.1, 0.3, 1e3, 1e4],
    "power-of-two": [-1.0, 0.0, 1.0, 2.0, 3.0],
    "huge": [-1.7e308, -1.0, 5e-324, 1.0, 1.7e308],
    "tiny": [-5e-324, 0.0, 5e-324, 1e-323, 1.5e-323],
    "1000-uneven": sorted(set(_RNG.standard_normal(1001).tolist())),
    "integers-2^53": [-(2.0**53) - 2, 0.0, 2.0**53, 2.0**53 + 2, 2.0**62],
}  # fmt: skip


def _values(edges: np.ndarray) -> np.ndarray:
    """Every edge, its neighbouring doubles, ±0.0, ±inf, ±1e308, ±5e-324, NaN, the middles
    and random values over (and beyond) the range."""
    with np.errstate(over="ignore"):
        mids = edges[:-1] / 2 + edges[1:] / 2
    spread = _RNG.uniform(max(edges[0], -1e300), min(edges[-1], 1e300), 2000)
    return np.concatenate(
        [edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf), mids, spread,
         [0.0, -0.0, np.inf, -np.inf, 1e308, -1e308, 5e-324, -5e-324, np.nan, 2.0**1000]]
    )  # fmt: skip


@pytest.fixture(params=["duckdb", "duckdb-relation"])
def load(request: pytest.FixtureRequest) -> Loader:
    return loader(request.param, request)


def _bins(name: str) -> Any:
    bins = treedp.make_bins(edges=EDGES[name])
    assert search.uses_search(Sql(DIALECT), bins)  # the rule under test
    return bins


@pytest.mark.parametrize("name", sorted(EDGES))
def test_search_equals_the_local_rule(load: Loader, name: str) -> None:
    bins = _bins(name)
    values = _values(bins.edges)
    data = load([("v", "double")], [(float(v),) for v in values] + [(None,)])
    got = count_source(data, column="v", bins=bins, nan="drop")
    want = count_chunk(np.append(values, np.nan), bins, "drop")
    assert got == want
    assert got.dropped == 2  # NaN and NULL


def _levels(name: str) -> int | None:
    """The hint's widest cell (None: no hint, the full search)."""
    hint = search._cells(Sql(DIALECT), _bins(name), "x")
    return None if hint is None else hint[2]


#: every set but "three", whose hint cells each hold one bin (no comparison left to mutate)
SEARCHED = sorted(set(EDGES) - {"three"})
HINTED = sorted(set(EDGES) - {"tiny"})  # "tiny": edges subnormals apart, no finite scale
#: the hint mutant's sets: in "three" and "power-of-two" its least bins are the same
LO_MUTANT = sorted(set(HINTED) - {"three", "power-of-two"})


def test_the_sets_cover_both_forms() -> None:
    assert _levels("three") == 0 and _levels("tiny") is None
    assert all((_levels(n) or 1) > 0 for n in SEARCHED)
    assert all(_levels(n) is not None for n in HINTED)
    assert (_levels("1000-uneven") or 0) > 2


@pytest.mark.parametrize(("name", "attr", "wrong"), [
    *((n, "_GE", ">") for n in SEARCHED), *((n, "_LO_SIDE", "right") for n in LO_MUTANT)
])  # fmt: skip
def test_a_wrong_variant_is_caught(
    load: Loader, name: str, attr: str, wrong: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deliberately wrong variants (``>`` for ``>=`` in the search; the least bin of a
    hint cell one too high) count the edge values differently, so the test above can fail."""
    bins = _bins(name)
    values = _values(bins.edges)
    data = load([("v", "double")], [(float(v),) for v in values])
    monkeypatch.setattr(search, attr, wrong)
    assert count_source(data, column="v", bins=bins, nan="drop") != count_chunk(
        values, bins, "drop"
    )


def test_grouped_and_bounded_counts_use_the_search(load: Loader) -> None:
    """Keys and a privacy unit ride through the search's subqueries: the counts equal the
    in-memory ones."""
    bins = _bins("five")
    values = _values(bins.edges)
    keys = np.array(["a", "b", "c"])[np.arange(len(values)) % 3]
    rows = [(float(v), str(k), i % 7) for i, (v, k) in enumerate(zip(values, keys, strict=True))]
    data = load([("v", "double"), ("k", "text"), ("p", "bigint")], rows)
    job = GroupedJob("v", ("k",), ("a", "b"), None, ContributionBounds(None, 1, 1, 1), bins, "drop")
    table = {"v": values, "k": keys}
    assert grouped_counts(data, job) == grouped_counts(table, job)
    unit = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 1, 1, 1), bins, "drop")
    got = grouped_counts(data, unit, treedp.InsecureSeededSource(3))
    assert int(got.counts.sum()) == 7  # one row of each of the seven persons


def test_two_bins_take_the_case_tree() -> None:
    bins = treedp.make_bins(edges=[0.0, 0.3, 1.0])
    assert not search.uses_search(Sql(DIALECT), bins)


@pytest.mark.parametrize("seed", range(6))
def test_search_on_random_edge_sets(request: pytest.FixtureRequest, seed: int) -> None:
    """Edges of very uneven spacing (geometric, clustered, lognormal; 3 to 16,000 bins),
    hinted or not, against ``count_chunk`` on their edge values."""
    rng = np.random.default_rng(seed)
    n = int(rng.choice([3, 7, 64, 1000, 16_000]))
    pick = [
        lambda: np.geomspace(1e-6, 1e9, n + 1) * rng.choice([-1, 1]),
        lambda: np.concatenate([rng.uniform(0, 1e-9, n // 2), rng.uniform(1, 2, n - n // 2 + 1)]),
        lambda: rng.lognormal(0, 3, n + 1),
    ][seed % 3]
    edges = np.unique(pick())
    bins = treedp.make_bins(edges=edges.tolist())
    assert search.uses_search(Sql(DIALECT), bins)
    values = _values(bins.edges)
    data = loader("duckdb", request)([("v", "double")], [(float(v),) for v in values])
    assert count_source(data, column="v", bins=bins, nan="drop") == count_chunk(
        values, bins, "drop"
    )
