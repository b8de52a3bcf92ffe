"""Tree shapes: node counts, the prefix covering (Lemma IV.1) and range decompositions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treedp.exceptions import InvalidParameterError
from treedp.tree import TreeShape, shape_for


@st.composite
def shapes_and_counts(draw: st.DrawFn) -> tuple[TreeShape, np.ndarray]:
    branching = tuple(draw(st.lists(st.integers(2, 6), min_size=1, max_size=4)))
    product = math.prod(branching)
    low = product // branching[0] + 1 if len(branching) > 1 else 1
    n_bins = draw(st.integers(min(low, product), product))
    counts = np.array(draw(st.lists(st.integers(0, 9), min_size=n_bins, max_size=n_bins)))
    return TreeShape(n_bins, branching), counts


def _node_sum(levels: list[np.ndarray], nodes: list[tuple[int, int]]) -> int:
    return sum(int(levels[lvl][idx]) for lvl, idx in nodes)


@settings(max_examples=150, deadline=None)
@given(shapes_and_counts())
def test_aggregate_levels_are_consistent(case: tuple[TreeShape, np.ndarray]) -> None:
    shape, counts = case
    levels = shape.aggregate(counts)
    assert [lv.size for lv in levels] == shape.level_sizes()
    assert levels[0][0] == counts.sum()
    assert (levels[-1] == counts).all()
    for level in range(1, shape.height + 1):
        assert levels[level].sum() == counts.sum()


@settings(max_examples=150, deadline=None)
@given(shapes_and_counts())
def test_prefix_covering_sums_to_the_prefix(case: tuple[TreeShape, np.ndarray]) -> None:
    shape, counts = case
    levels = shape.aggregate(counts)
    digits = shape.prefix_digits(np.arange(shape.n_bins + 1))
    for m in range(shape.n_bins + 1):
        nodes = shape.prefix_nodes(m)
        assert _node_sum(levels, nodes) == counts[:m].sum()
        per_level = np.bincount([lvl for lvl, _ in nodes], minlength=shape.height + 1)
        assert (per_level == digits[m]).all()
        # Lemma IV.1: at most k_l - 1 nodes per level below the root
        for level in range(1, shape.height + 1):
            assert per_level[level] <= shape.branching[level - 1] - 1


@settings(max_examples=150, deadline=None)
@given(shapes_and_counts(), st.data())
def test_range_decomposition(case: tuple[TreeShape, np.ndarray], data: st.DataObject) -> None:
    shape, counts = case
    levels = shape.aggregate(counts)
    start = data.draw(st.integers(0, shape.n_bins))
    stop = data.draw(st.integers(start, shape.n_bins))
    nodes = shape.range_nodes(start, stop)
    assert len(set(nodes)) == len(nodes)
    assert _node_sum(levels, nodes) == counts[start:stop].sum()
    per_level = np.bincount([lvl for lvl, _ in nodes], minlength=shape.height + 1)
    for level in range(1, shape.height + 1):
        assert per_level[level] <= 2 * (shape.branching[level - 1] - 1)
    for lvl, idx in nodes:
        assert 0 <= idx < shape.level_sizes()[lvl]


def test_examples() -> None:
    s = shape_for(10, [2, 3, 2])
    assert s.level_sizes() == [1, 2, 5, 10]
    assert s.prefix_nodes(7) == [(1, 0), (3, 6)]
    assert s.prefix_nodes(10) == [(0, 0)]
    assert s.range_nodes(1, 10) == [(3, 1), (2, 1), (2, 2), (1, 1)]
    assert shape_for(1000, 10).branching == (10, 10, 10)
    assert shape_for(1001, 10).branching == (10, 10, 10, 10)
    assert shape_for(1, 2).branching == ()


@pytest.mark.parametrize(
    ("n_bins", "branching", "match"),
    [
        (10, [2, 2], "product 4"),
        (10, [1, 20], "ints >= 2"),
        (10, 1, "int >= 2"),
        (10, "16", "int >= 2"),
        (0, [2], "n_bins"),
        (10, [2**21, 2**21], "above the limit"),
    ],
)
def test_bad_shapes(n_bins: int, branching: object, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        shape_for(n_bins, branching)  # type: ignore[arg-type]
