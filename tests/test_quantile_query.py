"""quantile_query.typed_bins: integer mode from the column's declared type and the public
bounds, never from the values (privacy: the mode is a public fact of the release)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from treedp.bin_edges import MAX_BINS
from treedp.engines.schema import integer_typed
from treedp.options import PrivateBounds
from treedp.quantile_query import typed_bins


def _typed(bins: Any, bounds: Any) -> tuple[Any, Any, str | None]:
    return typed_bins(bins, bounds, lambda: True)


def test_bins_given_are_kept() -> None:
    assert _typed("integers", (0, 5)) == ("integers", (0, 5), "declared")
    assert _typed(64, (0, 5)) == (64, (0, 5), None)
    assert typed_bins(None, (0, 5), lambda: False) == (None, (0, 5), None)


@pytest.mark.parametrize(
    ("bounds", "inside"),
    [
        ((1, 5), (1, 5)),
        ((np.int64(1), np.int64(5)), (1, 5)),
        ((1.0, 5.0), (1, 5)),
        ((0.5, 5.5), (1, 5)),  # rounded inwards: integer values clamp to the same ranks
        ((-2.5, -0.5), (-2, -1)),
        ((3, 3), (3, 3)),
        ("private", "private"),
        ((0.5, "private"), (1, "private")),
        (("private", 9.9), ("private", 9)),
        ((0, MAX_BINS - 1), (0, MAX_BINS - 1)),
    ],
)
def test_integer_mode_on_the_integers_inside(bounds: Any, inside: Any) -> None:
    bins, got, mode = _typed(None, bounds)
    assert (bins, got, mode) == ("integers", inside, "column type")
    assert all(type(b) in (int, str) for b in got)


@pytest.mark.parametrize(
    "bounds",
    [
        (0.2, 0.8),  # no integer inside
        (5, 1),  # refused later, as for a float column
        (0, MAX_BINS),  # more integers than the tree's bins
        (2**52, 2**52 + 3),  # beyond the exponential method's integer grid
        (-(2**52), 0),
        (0, float("inf")),
        (np.datetime64("2024-01-01"), np.datetime64("2024-02-01")),
        ("2024-01-01", "2024-02-01"),
        (True, 5),
        (1, 2, 3),
        "everything",
        (float("nan"), "private"),
    ],
)
def test_continuous_where_integer_mode_cannot_hold_the_bounds(bounds: Any) -> None:
    assert _typed(None, bounds) == (None, bounds, None)


def test_private_bounds_objects() -> None:
    bins, got, mode = _typed(None, PrivateBounds(lower=0.5, share=0.2))
    assert (bins, mode) == ("integers", "column type")
    assert got == PrivateBounds(lower=1, share=0.2)
    both = PrivateBounds(share=0.3)
    assert _typed(None, both) == ("integers", both, "column type")
    dated = PrivateBounds(datetimes=True)
    assert _typed(None, dated) == (None, dated, None)


def test_the_type_is_read_only_when_it_can_matter() -> None:
    calls: list[int] = []

    def typed() -> bool:
        calls.append(1)
        return True

    typed_bins("integers", (0, 5), typed)
    typed_bins(None, (0.2, 0.8), typed)
    assert calls == []


def _neighbours(rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Neighbouring columns of one dtype (one record added, removed or changed), integer
    and float, whole and fractional values."""
    pairs = []
    for dtype in (np.int64, np.float64, np.int8, np.float32):
        x = rng.integers(1, 6, 50).astype(dtype)
        changed = x.copy()
        changed[0] = 2.5 if np.dtype(dtype).kind == "f" else 4
        pairs += [(x, x[1:]), (x, np.r_[x, x[:1]].astype(dtype)), (x, changed)]
    return pairs


def _mode_agrees(decide: Callable[[np.ndarray], bool]) -> bool:
    """Whether the mode (bins, bounds, reason) is the same on every neighbouring pair."""
    rng = np.random.default_rng(7)
    for a, b in _neighbours(rng):
        left = typed_bins(None, (0, 10), lambda a=a: decide(a))
        right = typed_bins(None, (0, 10), lambda b=b: decide(b))
        if left != right:
            return False
    return True


def test_the_mode_depends_on_no_record() -> None:
    """Privacy: integer mode changes what is released (integers of the domain), so it must
    be the same on neighbouring datasets: the type decides it, and neighbours share a type.
    A mode decided from the values (every value a whole number) is caught: one fractional
    record changes it."""
    assert _mode_agrees(integer_typed)

    def from_values(values: np.ndarray) -> bool:  # the deliberately wrong variant
        return bool(np.all(np.mod(values, 1) == 0))

    assert not _mode_agrees(from_values)


@pytest.mark.parametrize("bins", [np.array([0.0, 0.5, 1.0]), [0.0, 0.5, 1.0], 0, True, "edges"])
def test_bins_that_are_not_a_count_or_integers_are_refused_by_name(bins: Any) -> None:
    """An array of edges is refused with the argument's name (it compared element-wise and
    raised numpy's own ValueError before), before any budget is charged."""
    import treedp
    from treedp.exceptions import InvalidParameterError
    from treedp.privacy import PureDP

    acc = treedp.Accountant(PureDP(1.0))
    with pytest.raises(InvalidParameterError, match="'bins'"):
        treedp.quantiles(np.arange(10.0), [0.5], epsilon=1.0, bounds=(0, 10), bins=bins,
                         accountant=acc)  # fmt: skip
    assert acc.remaining == PureDP(1.0)
