"""The value methods return at run time what their overloads claim (typed_results.py).

A value for ``details=False`` (one level: a ``float`` or ``numpy.datetime64``; several: an
array; the tz-aware median a ``datetime.datetime``, a ``pandas.Timestamp`` with pandas), the
result object for ``details=True``, and ``run_query`` one of its three results.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.mechanisms.results import MedianResult, QuantileResult
from treedp.noise import InsecureSeededSource

X = np.round(np.random.default_rng(0).normal(size=2001), 1)
B = (-5.0, 5.0)
DAYS = np.arange("2024-01-01", "2024-03-01", dtype="datetime64[D]")


def _seed() -> InsecureSeededSource:
    return InsecureSeededSource(7)


def test_median_values_and_results() -> None:
    assert isinstance(treedp.median(X, epsilon=1.0, bounds=B, rng=_seed()), float)
    assert isinstance(
        treedp.median(DAYS, epsilon=1.0, bounds=(DAYS[0], DAYS[-1]), rng=_seed()), np.datetime64
    )
    result = treedp.median(X, epsilon=1.0, bounds=B, rng=_seed(), details=True)
    assert isinstance(result, treedp.QuantilesResult)


def test_tz_aware_median_is_a_datetime() -> None:
    pd = pytest.importorskip("pandas")
    when = pd.Series(pd.date_range("2024-01-01", periods=100, freq="h", tz="Europe/Paris"))
    answer = treedp.median(when, epsilon=1.0, bounds=(when.iloc[0], when.iloc[-1]), rng=_seed())
    assert isinstance(answer, datetime.datetime) and isinstance(answer, pd.Timestamp)


@pytest.mark.parametrize("method", [treedp.quantile_exponential, treedp.quantiles_recursive])
def test_one_level_a_value_several_an_array(method: Callable[..., Any]) -> None:
    assert isinstance(method(X, 0.5, bounds=B, epsilon=1.0, rng=_seed()), float)
    several = method(X, [0.25, 0.75], bounds=B, epsilon=1.0, rng=_seed())
    assert isinstance(several, np.ndarray) and several.shape == (2,)
    day = method(DAYS, 0.5, bounds=(DAYS[0], DAYS[-1]), epsilon=1.0, rng=_seed())
    assert isinstance(day, np.datetime64)
    result = method(X, [0.5], bounds=B, epsilon=1.0, rng=_seed(), details=True)
    assert isinstance(result, QuantileResult)


def test_stable_values_are_floats_datetimes_or_none() -> None:
    stable = treedp.stable_median(X, epsilon=2.0, delta=1e-6, rng=_seed())
    assert isinstance(stable, float)  # the median of many ties is stable: released
    same_day = np.repeat(DAYS[:1], 200)
    assert isinstance(treedp.stable_median(same_day, epsilon=2.0, delta=1e-6), np.datetime64)
    assert treedp.stable_median(X[:0], epsilon=1.0, delta=1e-6) is None
    result = treedp.stable_median(X, epsilon=2.0, delta=1e-6, rng=_seed(), details=True)
    assert isinstance(result, MedianResult)


def test_subsample_and_noisy_mode() -> None:
    ties = np.zeros(1000)
    answer = treedp.subsample_and_aggregate(ties, "median", epsilon=2.0, delta=1e-6, m=10)
    assert isinstance(answer, float)
    result = treedp.subsample_and_aggregate(
        ties, "median", epsilon=2.0, delta=1e-6, m=10, details=True
    )
    assert isinstance(result, MedianResult)
    mode, delta = treedp.noisy_mode(ties, epsilon=2.0, delta=1e-6, sensitivity=1)
    assert isinstance(mode, float) and isinstance(delta, float)
    assert isinstance(
        treedp.noisy_mode(ties, epsilon=2.0, delta=1e-6, sensitivity=1, details=True), MedianResult
    )


def test_run_query_returns_one_of_its_three_results() -> None:
    cdf = treedp.build_query(X, epsilon=1.0, bounds=B, bins=64)
    assert isinstance(treedp.run_query(cdf), treedp.Release)
    keys = np.arange(X.size) % 2
    grouped = treedp.build_query(X, by=keys, keys=[0, 1], epsilon=1.0, bounds=B, bins=64)
    assert isinstance(treedp.run_query(grouped), treedp.GroupedRelease)
    levels = treedp.build_query(X, quantiles=[0.5], epsilon=1.0, bounds=B)
    assert isinstance(treedp.run_query(levels), treedp.QuantilesResult)
