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
