"""A release's answers have the types its overloads claim, and its tables come as pandas or
polars frames with the same columns (docs/results.md)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource

RELEASE_COLUMNS = [
    "left",
    "right",
    "count",
    "count_low",
    "count_high",
    "cdf",
    "cdf_low",
    "cdf_high",
]


@pytest.fixture(scope="module")
def rel() -> treedp.Release:
    values = np.random.default_rng(TEST_SEED).normal(50, 10, 2000)
    return treedp.release_cdf(
        values, bounds=(0, 100), bins=64, epsilon=1.0, rng=InsecureSeededSource(TEST_SEED)
    )


@pytest.fixture(scope="module")
def when() -> treedp.Release:
    days = np.datetime64("2024-01-01") + np.arange(200).astype("timedelta64[D]")
    return treedp.release_cdf(
        days,
        bounds=(np.datetime64("2024-01-01"), np.datetime64("2025-01-01")),
        bins=32,
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )


def _is_floats(x: object, shape: tuple[int, ...]) -> bool:
    return isinstance(x, np.ndarray) and x.dtype == np.float64 and x.shape == shape


def test_scalar_queries_answer_floats_and_array_queries_float64_arrays(
    rel: treedp.Release,
) -> None:
    """What the overloads claim (``float`` / ``NDArray[np.float64]``), at run time."""
    for scalar in (40.0, 40, np.float64(40.0), np.int64(40)):
        assert type(rel.cdf(scalar)) is float
        assert type(rel.stderr("cdf", scalar)) is float
        low, high = rel.confidence_interval("cdf", scalar)
        assert type(low) is float and type(high) is float
    assert type(rel.range_count(10.0, 60.0)) is float
    assert type(rel.stderr("range_count", 10.0, 60.0)) is float
    assert type(rel.quantile(0.5)) is float and type(rel.median()) is float
    assert _is_floats(rel.cdf([10.0, 60.0]), (2,))
    assert _is_floats(rel.cdf(np.array([10, 60])), (2,))
    assert _is_floats(rel.cdf(pd.Series([10.0, 60.0, 70.0])), (3,))
    assert _is_floats(rel.range_count([0.0, 10.0], 60.0), (2,))
    assert _is_floats(rel.range_count(0.0, [10.0, 60.0]), (2,))
    assert _is_floats(rel.stderr("cdf", [10.0]), (1,))
    low, high = rel.confidence_interval("range_count", [0.0, 10.0], 60.0)
    assert _is_floats(low, (2,)) and _is_floats(high, (2,))
    assert _is_floats(rel.quantile([0.25, 0.75]), (2,))
    low, high = rel.quantile_interval(0.5, simulations=200, rng=InsecureSeededSource(1))
    assert type(low) is float and type(high) is float
    counts, edges = rel.histogram()
    assert _is_floats(counts, (64,)) and edges.shape == (65,)


def test_datetime_quantiles_are_datetime64(when: treedp.Release) -> None:
    """The other half of ``QuantileValue``: a datetime release answers ``numpy.datetime64``."""
    assert isinstance(when.quantile(0.5), np.datetime64)
    assert when.quantile([0.5]).dtype.kind == "M"
    assert type(when.cdf(np.datetime64("2024-03-01"))) is float
    assert type(when.cdf("2024-03-01")) is float
    assert _is_floats(when.cdf(["2024-03-01", "2024-04-01"]), (2,))


def test_release_frames_have_the_same_columns(rel: treedp.Release) -> None:
    frame, polars_frame = rel.to_frame(), rel.to_polars()
    assert isinstance(frame, pd.DataFrame) and isinstance(polars_frame, pl.DataFrame)
    assert list(frame.columns) == RELEASE_COLUMNS == polars_frame.columns
    assert polars_frame.shape == frame.shape == (64, 8)
    for name in RELEASE_COLUMNS:
        assert np.array_equal(polars_frame[name].to_numpy(), frame[name].to_numpy())


def test_datetime_release_frames(when: treedp.Release) -> None:
    polars_frame = when.to_polars(level=0.9)
    assert polars_frame["left"].dtype.is_temporal()
    assert polars_frame["left"].to_list() == when.to_frame()["left"].tolist()
    assert polars_frame.shape == when.to_frame(level=0.9).shape


def test_grouped_frames_have_the_same_columns() -> None:
    rng = np.random.default_rng(TEST_SEED)
    ages, states = rng.integers(17, 91, 1000), rng.choice(["CA", "NY"], 1000)
    gr = treedp.release_grouped(
        ages,
        by=states,
        keys=["CA", "NY"],
        bounds=(17, 90),
        bins="integers",
        epsilon=1.0,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert isinstance(gr, treedp.GroupedRelease)
    frame, polars_frame = gr.to_frame([0.5, 0.9]), gr.to_polars([0.5, 0.9])
    assert list(frame.columns) == polars_frame.columns  # by, q, value, n_hat, low_signal
    assert polars_frame.shape == frame.shape == (4, 5)
    assert polars_frame["value"].to_list() == frame["value"].tolist()
    assert type(gr.cdf(40)["CA"]) is float and _is_floats(gr.cdf([40])["CA"], (1,))


def test_without_polars_the_error_names_the_extra(
    rel: treedp.Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(
        treedp.MissingDependencyError, match=r"Release\.to_polars.*treedp\[polars\]"
    ):
        rel.to_polars()
