"""Quantile results as frames: ``to_arrays``, ``to_frame`` (pandas), ``to_polars``."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import polars as pl
import pytest

import treedp
from treedp.noise import InsecureSeededSource

VALUES = np.random.default_rng(0).normal(size=2_000)


@pytest.mark.parametrize("method", ["exponential", "recursive", "tree"])
def test_a_quantiles_result_is_a_frame_of_its_levels_and_values(method: str) -> None:
    q = [0.1, 0.5, 0.9]
    result = treedp.quantiles(
        VALUES, q, bounds=(-4.0, 4.0), epsilon=1.0, method=method, rng=InsecureSeededSource(1)
    )
    arrays = result.to_arrays()
    assert arrays["q"].tolist() == q
    assert np.array_equal(arrays["value"], np.asarray(result))
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["q", "value"]
    assert frame["value"].tolist() == np.asarray(result).tolist()
    polars_frame = result.to_polars()
    assert isinstance(polars_frame, pl.DataFrame)
    assert polars_frame["value"].to_list() == np.asarray(result).tolist()


def test_a_scalar_level_is_one_row() -> None:
    result = treedp.quantiles(
        VALUES, 0.5, bounds=(-4.0, 4.0), epsilon=1.0, rng=InsecureSeededSource(2)
    )
    assert np.asarray(result).shape == ()
    assert result.to_frame().shape == (1, 2)
    assert result.to_polars().shape == (1, 2)


def test_without_pandas_or_polars_the_error_names_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result = treedp.quantiles(
        VALUES, [0.5], bounds=(-4.0, 4.0), epsilon=1.0, rng=InsecureSeededSource(3)
    )
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setitem(sys.modules, "polars", None)
    with pytest.raises(treedp.MissingDependencyError, match="pandas"):
        result.to_frame()
    with pytest.raises(treedp.MissingDependencyError, match="polars"):
        result.to_polars()


def test_a_99_quantile_repr_fits_a_few_short_lines() -> None:
    """The repr shows the first and last values and says where the rest are."""
    q = np.linspace(0.01, 0.99, 99)
    result = treedp.quantiles(
        VALUES, q, bounds=(-4.0, 4.0), epsilon=1.0, rng=InsecureSeededSource(4)
    )
    text = repr(result)
    lines = text.splitlines()
    assert len(lines) <= 4 and max(len(line) for line in lines) <= 110
    assert "99 quantiles" in text and ".to_frame()" in text and "…" in text
    values = np.asarray(result)
    assert f"{values[0]:.6g}" in text and f"{values[-1]:.6g}" in text
    assert f"{values[50]:.6g}" not in text
    assert "PureDP" in text and "add_remove" in text
    assert text.endswith("[SEEDED: not for publication]")
    # the details stay on demand
    assert len(result.to_frame()) == 99 and result.parameters["epsilon"] == 1.0
    html = result._repr_html_()
    assert "99 quantiles" in html and "PureDP" in html and len(html) < 2000


def test_a_few_quantiles_show_every_value() -> None:
    result = treedp.quantiles(
        VALUES, [0.25, 0.5, 0.75], bounds=(-4.0, 4.0), epsilon=1.0, rng=InsecureSeededSource(5)
    )
    text = repr(result)
    assert "q=[0.25, 0.5, 0.75]" in text and "…" not in text
    assert all(f"{v:.6g}" in text for v in np.asarray(result))


def test_every_mechanism_result_has_frames_and_a_display() -> None:
    """MedianResult, BoundsResult, CountResult: one row per released value, column ``value``."""
    from treedp.value_methods.private_count import private_count

    rng = InsecureSeededSource(6)
    median = treedp.stable_median(
        np.full(2000, 3.0), epsilon=1.0, delta=1e-6, rng=rng, details=True
    )
    bounds = treedp.private_bounds(VALUES, epsilon=1.0, rng=rng)
    count = private_count(VALUES, epsilon=1.0, rng=rng)
    assert median.to_frame()["value"].tolist() == [median.value]
    assert bounds.to_frame().to_dict("list") == {
        "bound": ["lower", "upper"],
        "value": [bounds.lo, bounds.hi],
    }
    assert bounds.to_polars().to_dict(as_series=False) == bounds.to_frame().to_dict("list")
    assert count.to_polars()["value"].to_list() == [count.value]
    for result in (median, bounds, count):
        text = repr(result)
        lines = text.splitlines()
        assert len(lines) <= 3 and max(len(line) for line in lines) <= 110
        assert type(result).__name__ in result._repr_html_()
        assert "SEEDED" in result._repr_html_()


def test_a_refusal_is_a_frame_without_rows() -> None:
    refused = treedp.stable_median(
        VALUES, epsilon=0.1, delta=1e-9, rng=InsecureSeededSource(7), details=True
    )
    assert refused.refused
    assert refused.to_frame().shape == (0, 1) and refused.to_polars().shape == (0, 1)
    assert "refused" in repr(refused) and "refused" in refused._repr_html_()
