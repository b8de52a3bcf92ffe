"""What ``mypy --strict`` infers for the public results: checked by tests/typecheck/test_types.py.

Nothing here runs (the functions are never called); every ``assert_type`` line is a claim
about the overloads of :mod:`treedp.release` and the result types, which mypy verifies.
"""

from __future__ import annotations

import datetime
from typing import Any, assert_type

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from numpy.typing import NDArray

import treedp
from treedp.continual import StepAnswer
from treedp.mechanisms.results import MedianResult, QuantileResult
from treedp.query import Query
from treedp.release.queries import QuantileValue
from treedp.value_methods.private_bounds import BoundsResult
from treedp.value_methods.private_count import CountResult

Floats = NDArray[np.float64]


def release_queries(rel: treedp.Release, xs: Floats, when: datetime.datetime) -> None:
    """Scalars in, floats out; lists and arrays in, float64 arrays out."""
    assert_type(rel.cdf(1.0), float)
    assert_type(rel.cdf(3), float)
    assert_type(rel.cdf(np.float64(1.0)), float)
    assert_type(rel.cdf(when), float)
    assert_type(rel.cdf("2024-01-01"), float)
    assert_type(rel.cdf([1.0, 2.0]), Floats)
    assert_type(rel.cdf(xs), Floats)
    assert_type(rel.cdf(xs, consistent=False), Floats)
    assert_type(rel.range_count(0.0, 1.0), float)
    assert_type(rel.range_count(xs, 1.0), Floats)
    assert_type(rel.range_count(0.0, [1.0, 2.0]), Floats)
    assert_type(rel.quantile(0.5), QuantileValue)
    assert_type(rel.quantile([0.25, 0.75]), NDArray[Any])
    assert_type(rel.median(), QuantileValue)
    assert_type(rel.histogram(), tuple[Floats, NDArray[Any]])
    assert_type(rel.n, float)
    assert_type(rel.stderr("cdf", 1.0), float)
    assert_type(rel.stderr("cdf", xs), Floats)
    assert_type(rel.stderr("range_count", 0.0, 1.0), float)
    assert_type(rel.stderr("range_count", xs, 1.0), Floats)
    assert_type(rel.confidence_interval("cdf", 1.0), tuple[float, float])
    assert_type(rel.confidence_interval("cdf", xs, level=0.9), tuple[Floats, Floats])
    assert_type(rel.confidence_interval("range_count", 0.0, 1.0), tuple[float, float])
    assert_type(rel.quantile_interval(0.5), tuple[QuantileValue, QuantileValue])
    assert_type(rel.quantile_interval([0.5]), tuple[NDArray[Any], NDArray[Any]])
    assert_type(rel.to_polars(), pl.DataFrame)
    assert_type(rel.plot(), tuple[Figure, dict[str, Axes]])


def grouped_queries(gr: treedp.GroupedRelease, xs: Floats) -> None:
    """The same overloads, one answer per key."""
    assert_type(gr.cdf(1.0), dict[Any, float])
    assert_type(gr.cdf(xs), dict[Any, Floats])
    assert_type(gr.range_count(0.0, 1.0), dict[Any, float])
    assert_type(gr.quantile(0.5), dict[Any, QuantileValue])
    assert_type(gr.quantile([0.5, 0.9]), dict[Any, NDArray[Any]])
    assert_type(gr[1], treedp.Release)
    assert_type(gr.to_polars([0.5]), pl.DataFrame)
    assert_type(gr.plot(), tuple[Figure, dict[Any, Axes]])


def entry_points(values: Floats, keys: Floats) -> None:
    """Each front door returns its own result type, not ``Any``."""
    rel = treedp.release_cdf(values, bounds=(0.0, 1.0), epsilon=1.0)
    assert_type(rel, treedp.Release)
    assert_type(treedp.release_counts([1, 2], bounds=(0, 2), bins=2, epsilon=1.0), treedp.Release)
    by_key = treedp.release_grouped(values, by=keys, keys=[0.0, 1.0], epsilon=1.0, bounds=(0, 1))
    assert_type(by_key, treedp.GroupedRelease)
    assert_type(
        treedp.release_grouped({"x": values}, column="x", by="g", keys=["a"], epsilon=1.0),
        treedp.GroupedRelease,
    )
    person = treedp.release_grouped(values, privacy_unit=keys, max_contributions=2, epsilon=1.0)
    assert_type(person, treedp.Release)
    result = treedp.quantiles(values, [0.1, 0.9], bounds=(0.0, 1.0), epsilon=1.0)
    assert_type(result, treedp.QuantilesResult)
    assert_type(result.values, NDArray[Any])
    assert_type(result.to_polars(), pl.DataFrame)
    assert_type(treedp.profile({"x": values}, epsilon=1.0), treedp.TableProfile)
    assert_type(treedp.profile({"x": values}, epsilon=1.0).to_polars(), pl.DataFrame)
    assert_type(treedp.private_bounds(values, epsilon=1.0), BoundsResult)
    assert_type(treedp.load_release("r.json"), treedp.Release)
    assert_type(treedp.load_grouped_release("g.zip"), treedp.GroupedRelease)
    prediction = treedp.predict_error(16, epsilon=1.0)
    assert_type(prediction.to_polars(), pl.DataFrame)


def mechanism_results(median: MedianResult, bounds: BoundsResult, count: CountResult) -> None:
    """Every result of the mechanisms' family has both frames and a notebook display."""
    assert_type(median.to_polars(), pl.DataFrame)
    assert_type(bounds.to_polars(), pl.DataFrame)
    assert_type(count.to_polars(), pl.DataFrame)
    assert_type(median.to_arrays(), dict[str, np.ndarray])
    assert_type(count._repr_html_(), str)


def value_methods(values: Floats, levels: Floats, flag: bool) -> None:
    """A value, or with ``details=True`` the result; one level a value, several an array."""
    pair = (0.0, 1.0)
    assert_type(treedp.median(values, epsilon=1.0, bounds=pair), QuantileValue)
    assert_type(
        treedp.median(values, epsilon=1.0, bounds=pair, details=True), treedp.QuantilesResult
    )
    assert_type(
        treedp.median(values, epsilon=1.0, bounds=pair, details=flag),
        QuantileValue | treedp.QuantilesResult,
    )
    assert_type(
        treedp.median(values, epsilon=1.0, bounds=pair, neighbours="replace"), QuantileValue
    )
    stable = treedp.stable_median(values, epsilon=1.0, delta=1e-6)
    assert_type(stable, float | np.datetime64 | None)
    assert_type(treedp.stable_median(values, epsilon=1.0, delta=1e-6, details=True), MedianResult)
    one = treedp.quantile_exponential(values, 0.5, bounds=pair, epsilon=1.0)
    assert_type(one, float | np.datetime64)
    assert_type(
        treedp.quantile_exponential(values, [0.1, 0.9], bounds=pair, epsilon=1.0), NDArray[Any]
    )
    assert_type(treedp.quantile_exponential(values, levels, bounds=pair, epsilon=1.0), NDArray[Any])
    assert_type(
        treedp.quantile_exponential(values, 0.5, bounds=pair, epsilon=1.0, details=True),
        QuantileResult,
    )
    assert_type(
        treedp.quantiles_recursive(values, 0.5, bounds=pair, epsilon=1.0), float | np.datetime64
    )
    assert_type(treedp.quantiles_recursive(values, levels, bounds=pair, epsilon=1.0), NDArray[Any])
    assert_type(
        treedp.quantiles_recursive(values, [0.5], bounds=pair, epsilon=1.0, details=True),
        QuantileResult,
    )
    sa = treedp.subsample_and_aggregate(values, "median", epsilon=1.0, delta=1e-6, m=10)
    assert_type(sa, float | np.datetime64 | None)
    assert_type(
        treedp.subsample_and_aggregate(
            values, np.mean, epsilon=1.0, delta=1e-6, m=10, details=True
        ),
        MedianResult,
    )
    assert_type(
        treedp.noisy_mode(values, epsilon=1.0, delta=1e-6, sensitivity=1),
        tuple[float | None, float],
    )
    assert_type(
        treedp.noisy_mode(values, epsilon=1.0, delta=1e-6, sensitivity=1, details=True),
        MedianResult,
    )


def run_query(query: Query) -> None:
    """One query type for every kind: the union of the three results."""
    assert_type(
        treedp.run_query(query), treedp.Release | treedp.GroupedRelease | treedp.QuantilesResult
    )


def stream_answers(answer: StepAnswer, xs: Floats) -> None:
    """A stream's step answers as a release's: scalars in, floats out (an adopter's run found
    0-d arrays); lists and arrays in, float64 arrays out."""
    assert_type(answer.count_below(3.0), float)
    assert_type(answer.count_below(xs), Floats)
    assert_type(answer.cdf(3.0), float)
    assert_type(answer.cdf([1.0, 2.0]), Floats)
    assert_type(answer.range_count(0.0, 1.0), float)
    assert_type(answer.range_count(xs, 1.0), Floats)
    assert_type(answer.quantile(0.5), float)
    assert_type(answer.quantile([0.25, 0.75]), Floats)
    assert_type(answer.quantile_interval(0.5), tuple[float, float])
    assert_type(answer.quantile_interval(xs), tuple[Floats, Floats])
    assert_type(answer.cdf_interval(3.0), tuple[float, float])
    assert_type(answer.range_interval(0.0, 1.0), tuple[float, float])
