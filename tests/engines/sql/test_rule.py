"""The SQL bin rule is the local rule, bin for bin, on edge values (every database)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import treedp
from tests.engines.sql.helpers import KINDS, Loader, loader
from treedp.engines.dispatch import count_source, pick_engine
from treedp.engines.local import count_chunk
from treedp.exceptions import DataError


@pytest.fixture(params=KINDS)
def load(request: pytest.FixtureRequest) -> Loader:
    return loader(request.param, request)


BINS = {
    "equal": treedp.make_bins(bounds=(0, 1), bins=4),
    "equal-offset": treedp.make_bins(bounds=(-3.7, 11.1), bins=37),
    "equal-third": treedp.make_bins(bounds=(0.1, 0.7), bins=3),
    "edges": treedp.make_bins(edges=[-2.5, 0.0, 0.1, 0.3, 1e3]),
    "integers": treedp.make_bins(bounds=(0, 10), bins="integers"),
    "one-bin": treedp.make_bins(bounds=(0, 1), bins=1),
    "wide": treedp.make_bins(bounds=(-1e300, 1e300), bins=8),
}


def edge_values(bins: Any) -> list[float]:
    """Every edge, the doubles next to it, ±0.0, ±inf, just inside/outside the bounds."""
    out = [0.0, -0.0, math.inf, -math.inf, 1e308, -1e308, 5e-324, -5e-324]
    for e in bins.edges:
        e = float(e)
        out += [e, math.nextafter(e, math.inf), math.nextafter(e, -math.inf), e + 0.5, e - 0.5]
    mids = (bins.edges[:-1] + bins.edges[1:]) / 2
    return out + [float(m) for m in mids]


@pytest.mark.parametrize("name", sorted(BINS))
def test_bins_equal_local_rule(load: Loader, name: str) -> None:
    bins = BINS[name]
    values = edge_values(bins)
    data = load([("v", "double")], [(v,) for v in values])
    got = count_source(data, column="v", bins=bins)
    assert got == count_chunk(np.array(values), bins)


def test_integers_beyond_2_53_round_to_nearest_double(load: Loader) -> None:
    big = 2**53
    ints = [big - 1, big, big + 1, big + 3, -(big + 1), 2**62, 0, 1, -1]
    bins = treedp.make_bins(edges=[-float(big + 2), 0.0, float(big), float(big + 2), 2.0**62])
    data = load([("v", "bigint")], [(v,) for v in ints])
    want = count_chunk(np.array(ints, dtype=np.int64), bins)
    assert count_source(data, column="v", bins=bins) == want
    eq = treedp.make_bins(bounds=(0, float(big) * 4), bins=4)
    assert count_source(data, column="v", bins=eq) == count_chunk(np.array(ints), eq)


def test_missing_values(load: Loader) -> None:
    values = [0.5, None, 0.2, None, 0.9]
    data = load([("v", "double")], [(v,) for v in values])
    bins = BINS["equal"]
    got = count_source(data, column="v", bins=bins, nan="drop")
    arr = np.array([np.nan if v is None else v for v in values])
    assert got == count_chunk(arr, bins, "drop")
    assert got.dropped == 2
    with pytest.raises(DataError, match="missing") as info:
        count_source(data, column="v", bins=bins)
    assert "2" not in str(info.value)


def test_nan_is_missing(request: pytest.FixtureRequest) -> None:
    for kind in ("duckdb", "postgresql"):  # SQLite stores no NaN (it becomes NULL)
        load = loader(kind, request)
        data = load([("v", "double")], [(float("nan"),), (0.3,)])
        got = count_source(data, column="v", bins=BINS["equal"], nan="drop")
        assert got.dropped == 1
        assert got.counts.tolist() == [0, 1, 0, 0]


def test_engine_rows_are_registered(load: Loader) -> None:
    data = load([("v", "double")], [(1.0,)])
    assert pick_engine(data).name in ("duckdb", "sqlite", "postgresql")
    assert not pick_engine(data).local


@pytest.mark.parametrize("name", sorted(set(BINS) - {"one-bin"}))  # one bin: no edge inside
def test_edge_values_catch_a_wrong_rule(name: str) -> None:
    """The conformance values can fail: a rule with ``e_j < x <= e_{j+1}`` (a mutant) counts
    them differently."""
    bins = BINS[name]
    values = np.array(edge_values(bins))
    mutant = np.clip(np.searchsorted(bins.edges, values, side="left") - 1, 0, bins.n_bins - 1)
    assert not np.array_equal(
        np.bincount(mutant, minlength=bins.n_bins), count_chunk(values, bins).counts
    )
