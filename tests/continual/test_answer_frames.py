"""A stream's step answer as a table (to_arrays / to_frame / to_polars) and its short repr."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treedp


def _binned() -> Any:
    return treedp.continual(
        horizon=8, epsilon=1.0, bins=4, bounds=(0, 4), rng=treedp.InsecureSeededSource(1)
    )


def test_frames_of_a_binned_step_hold_every_bin() -> None:
    pd = pytest.importorskip("pandas")
    answer = _binned().step(np.array([0.5, 1.5, 2.5, 3.5, 1.2]))
    frame = answer.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == [
        "step",
        "bin_low",
        "bin_high",
        "count",
        "count_raw",
        "count_stderr",
    ]
    np.testing.assert_allclose(frame["count"], answer.histogram)
    np.testing.assert_allclose(frame["count_raw"], answer.raw_histogram)
    assert (frame["step"] == 1).all() and frame["bin_low"].iloc[0] == 0


def test_frame_of_a_count_is_one_row_with_its_interval() -> None:
    pytest.importorskip("pandas")
    s = treedp.continual(horizon=8, epsilon=1.0, rng=treedp.InsecureSeededSource(1))
    answer = s.step(5)
    frame = answer.to_frame(level=0.9)
    assert len(frame) == 1
    lo, hi = answer.interval(0.9)
    assert frame["count_low"].iloc[0] == pytest.approx(lo)
    assert frame["count_high"].iloc[0] == pytest.approx(hi)


def test_polars_frame_has_the_same_columns() -> None:
    pytest.importorskip("polars")
    answer = _binned().step(np.array([0.5, 1.5]))
    assert answer.to_polars().columns == list(answer.to_arrays())


def test_repr_is_short_with_many_bins() -> None:
    s = treedp.continual(
        horizon=4, epsilon=1.0, bins=4096, bounds=(0, 1), rng=treedp.InsecureSeededSource(2)
    )
    text = repr(s.step(np.random.default_rng(0).random(100)))
    assert len(text) < 120 and "4096 bins" in text


def test_a_step_reads_integer_bins_as_a_release_does() -> None:
    """Integer bins (one integer each, or whole integers) read integer data: ``cdf(x)`` the
    share ``<= floor(x)``, integer quantiles, the same answers as a ``Release`` of the same
    counts (a stream read "below x" and interpolated: ``cdf(9)·n`` 195 for 217, quantiles
    97.56; an independent review)."""
    x = np.random.default_rng(1).integers(0, 1000, 20_000)
    for bins in (
        treedp.Bins(np.arange(0.0, 1001.0, 10.0), equal_width=True, integers=True),
        treedp.make_bins(bounds=(0, 999), bins="integers"),
    ):
        stream = treedp.continual(horizon=4, epsilon=50.0, bins=bins,
                                  rng=treedp.InsecureSeededSource(1))  # fmt: skip
        answer = stream.step(x)
        n = answer.histogram.sum()
        assert abs(answer.cdf(9) * n - (x <= 9).sum()) < 25
        assert abs(answer.cdf(9.5) - answer.cdf(9)) < 1e-12
        q = answer.quantile([0.1, 0.5])
        assert np.array_equal(q, np.floor(q)) and np.all(np.abs(q - [99, 499]) <= 3)
        assert abs(answer.range_count(0.5, 10) - ((x >= 1) & (x <= 9)).sum()) < 25
