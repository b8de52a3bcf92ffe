"""Public bins: construction, exact counting with clamping, NaN policy, input types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treedp.domain import MAX_BINS, make_bins
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError


@settings(max_examples=100, deadline=None)
@given(
    st.floats(-1e6, 1e6),
    st.floats(1e-3, 1e6),
    st.integers(1, 5000),
    st.lists(st.floats(-2e6, 2e6), min_size=1, max_size=300),
)
def test_equal_width_counts_match_edge_search(lo, width, n_bins, values) -> None:
    bins = make_bins(bounds=(lo, lo + width), bins=n_bins)
    x = np.array(values)
    counts, dropped = bins.count(x)
    idx = np.clip(np.searchsorted(bins.edges, x, side="right") - 1, 0, n_bins - 1)
    assert dropped == 0
    assert (counts == np.bincount(idx, minlength=n_bins)).all()


def test_values_on_edges_and_outside_are_clamped() -> None:
    bins = make_bins(bounds=(0.0, 1.0), bins=10)
    counts, _ = bins.count([0.0, 0.1, 0.3, 0.7, 0.9999, 1.0, 5.0, -3.0])
    assert counts.tolist() == [2, 1, 0, 1, 0, 0, 0, 1, 0, 3]
    assert counts.sum() == 8


def test_large_inputs_use_both_threads_and_agree() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=2_000_000)
    bins = make_bins(bounds=(-3.0, 3.0), bins=1000)
    explicit = make_bins(edges=bins.edges)
    assert (bins.count(x)[0] == explicit.count(x)[0]).all()


def test_integer_domain() -> None:
    bins = make_bins(bounds=(17, 20), bins="integers")
    assert bins.n_bins == 4 and bins.discrete
    counts, _ = bins.count([17, 18, 18, 20, 25, 3])
    assert counts.tolist() == [2, 2, 0, 2]


def test_datetime_bins() -> None:
    bins = make_bins(bounds=("2024-01-01", "2024-01-11"), bins=10)
    assert bins.is_datetime and bins.datetime_unit == "s"
    values = np.array(["2024-01-01T12", "2024-01-05", "2023-06-01", "2025-01-01"], "datetime64[s]")
    counts, _ = bins.count(values)
    assert counts.tolist() == [2, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    with pytest.raises(InvalidTypeError, match="datetimes"):
        bins.count([1.0, 2.0])
    with pytest.raises(InvalidTypeError, match="numeric"):
        make_bins(bounds=(0, 1), bins=2).count(values)


def test_nan_policy() -> None:
    bins = make_bins(bounds=(0, 1), bins=4)
    with pytest.raises(DataError, match=r"contains NaN \(missing\) values.*nan='drop'") as info:
        bins.count([0.1, np.nan, np.nan, 0.5])
    assert not any(ch.isdigit() for ch in str(info.value))  # no count of the data
    counts, dropped = bins.count([0.1, np.nan, -np.inf, 0.5], nan="drop")
    assert counts.tolist() == [2, 0, 1, 0] and dropped == 1  # -inf is clamped, not missing
    dt = make_bins(bounds=("2024-01-01", "2024-02-01"), bins=4)
    with pytest.raises(DataError, match="NaT"):
        dt.count(np.array(["2024-01-02", "NaT"], "datetime64[s]"))


def test_input_types() -> None:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    bins = make_bins(bounds=(0, 10), bins=5)
    expected = [1, 1, 0, 0, 1]
    for values in (
        [1, 3, 9],
        (1.0, 3.0, 9.0),
        np.array([1, 3, 9], dtype=np.int32),
        pd.Series([1, 3, 9]),
        pl.Series([1, 3, 9]),
        pa.array([1, 3, 9]),
        pa.chunked_array([[1], [3, 9]]),
    ):
        assert bins.count(values)[0].tolist() == expected
    with pytest.raises(DataError):
        bins.count(pd.Series([1, None, 9], dtype="Int64"))
    assert bins.count(pl.Series([1, None, 9]), nan="drop")[0].tolist() == [1, 0, 0, 0, 1]
    assert bins.count(pa.array([1, None, 9]), nan="drop")[0].tolist() == [1, 0, 0, 0, 1]
    for bad, match in [
        ("abc", "scalar"),
        (5, "scalar"),
        (np.zeros((2, 2)), "one-dimensional"),
        ([True, False], "booleans"),
        (["a", "b"], "dtype"),
        (np.array([1, "x"], dtype=object), "other objects"),
        (np.array([1.0, np.datetime64("2024-01-01")], dtype=object), "mixes"),
        (pd.DataFrame({"a": [1]}), "DataFrame"),
    ]:
        with pytest.raises(InvalidTypeError, match=match):
            bins.count(bad)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({}, InvalidParameterError, "never derives bins from the data"),
        ({"bounds": (0, 1)}, InvalidParameterError, "Public bins are required"),
        ({"bounds": (1, 1), "bins": 3}, InvalidParameterError, "lo < hi"),
        ({"bounds": (2, 1), "bins": 3}, InvalidParameterError, "lo < hi"),
        ({"bounds": (0, float("nan")), "bins": 3}, InvalidParameterError, "finite"),
        ({"bounds": (0, float("inf")), "bins": 3}, InvalidParameterError, "finite"),
        ({"bounds": (0,), "bins": 3}, InvalidParameterError, "pair"),
        ({"bounds": (0, "2024-01-01"), "bins": 3}, InvalidTypeError, "mixes"),
        ({"bounds": (0, 1), "bins": 0}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": -5}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": MAX_BINS + 1}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": 2.5}, InvalidTypeError, "'bins'"),
        ({"bounds": (0, 1), "bins": True}, InvalidTypeError, "'bins'"),
        ({"bounds": (0.5, 3), "bins": "integers"}, InvalidParameterError, "integer bounds"),
        ({"bounds": (1.0, 1.0 + 1e-12), "bins": 10**6}, InvalidParameterError, "float resolution"),
        ({"edges": [0, 1, 1]}, InvalidParameterError, "strictly increasing"),
        ({"edges": [0]}, InvalidParameterError, "at least 2"),
        ({"edges": [0, np.nan, 2]}, InvalidParameterError, "finite"),
        ({"edges": [0, 1], "bins": 3}, InvalidParameterError, "not both"),
        ({"edges": ["a", "b"]}, InvalidTypeError, "edges"),
    ],
)
def test_bad_bins(kwargs: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        make_bins(**kwargs)


def test_round_trip_dict() -> None:
    for bins in (
        make_bins(bounds=(0, 1), bins=7),
        make_bins(edges=[0, 1, 5, 100]),
        make_bins(bounds=(3, 9), bins="integers"),
        make_bins(edges=np.array(["2024-01-01", "2024-03-01", "2025-01-01"], "datetime64[D]")),
    ):
        again = type(bins).from_dict(bins.to_dict())
        assert (again.edges == bins.edges).all()
        assert (again.discrete, again.equal_width, again.datetime_unit) == (
            bins.discrete,
            bins.equal_width,
            bins.datetime_unit,
        )
