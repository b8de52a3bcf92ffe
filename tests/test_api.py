"""release_cdf: every argument's bad values give a clear error before any data is touched."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from treedp import (
    DataError,
    InsecureSeededSource,
    InvalidParameterError,
    InvalidTypeError,
    TreeDPError,
    release_cdf,
)

VALUES = np.arange(100, dtype=float)
OK = {"bounds": (0, 100), "bins": 16, "epsilon": 1.0}


@pytest.mark.parametrize(
    ("changes", "err", "match"),
    [
        ({"epsilon": 0}, InvalidParameterError, "'epsilon'.*finite and positive"),
        ({"epsilon": -1.0}, InvalidParameterError, "'epsilon'"),
        ({"epsilon": float("nan")}, InvalidParameterError, "'epsilon'"),
        ({"epsilon": float("inf")}, InvalidParameterError, "'epsilon'"),
        ({"epsilon": 1e9}, InvalidParameterError, "'epsilon'"),
        ({"epsilon": "1"}, InvalidTypeError, "'epsilon'.*str"),
        ({"epsilon": None}, InvalidTypeError, "'epsilon'"),
        ({"bounds": (5, 5)}, InvalidParameterError, "lo < hi"),
        ({"bounds": None}, InvalidParameterError, "Public bins are required"),
        ({"bins": 0}, InvalidParameterError, "'bins'"),
        ({"bins": 2**40}, InvalidParameterError, "'bins'"),
        ({"edges": [0, 1, 2]}, InvalidParameterError, "not both"),
        ({"neighbours": "swap"}, InvalidParameterError, "'neighbours'"),
        ({"neighbours": "replace"}, InvalidParameterError, "'n'"),
        ({"n": 100}, InvalidParameterError, "'n'.*add_remove"),
        ({"neighbours": "replace", "n": -1}, InvalidParameterError, "'n'"),
        ({"neighbours": "replace", "n": 99}, DataError, "differs from it"),
        ({"mechanism": "laplace"}, InvalidParameterError, "'mechanism'"),
        ({"branching": 1}, InvalidParameterError, "'branching'"),
        ({"branching": [2, 2]}, InvalidParameterError, "product 4"),
        ({"branching": 4, "mechanism": "histogram"}, InvalidParameterError, "tree. only"),
        ({"level_budgets": [1.0]}, InvalidParameterError, "one budget per noised level"),
        ({"branching": 4, "level_budgets": [0.5, 0.5, 0.5]}, InvalidParameterError, "sum"),
        ({"level_budgets": [0.5], "mechanism": "threshold"}, InvalidParameterError, "tree. only"),
        ({"estimator": "magic"}, InvalidParameterError, "'estimator'"),
        ({"nan": "ignore"}, InvalidParameterError, "'nan'"),
        ({"nan": "drop", "neighbours": "replace", "n": 100}, InvalidParameterError, "nan='drop'"),
        ({"rng": 42}, InvalidParameterError, "InsecureSeededSource"),
        ({"rng": np.random.default_rng(1)}, InvalidParameterError, "RandomSource"),
        ({"mechanism": "all_intervals", "bins": 5000}, InvalidParameterError, "B <= 2048"),
    ],
)
def test_bad_arguments(changes: dict, err: type, match: str) -> None:
    kwargs = {**OK, **changes}
    with pytest.raises(err, match=match) as info:
        release_cdf(VALUES, **kwargs)
    assert isinstance(info.value, TreeDPError)


@pytest.mark.parametrize(
    ("values", "err", "match"),
    [
        ([1.0, np.nan, 3.0], DataError, r"contains NaN \(missing\) values.*nan='drop'"),
        ("abc", InvalidTypeError, "scalar"),
        (np.ones((3, 3)), InvalidTypeError, "one-dimensional"),
        ([True, False], InvalidTypeError, "booleans"),
        (["x", "y"], InvalidTypeError, "dtype"),
        (np.array(["2024-01-01"], "datetime64[D]"), InvalidTypeError, "datetimes"),
    ],
)
def test_bad_values(values: object, err: type, match: str) -> None:
    with pytest.raises(err, match=match):
        release_cdf(values, **OK)


def test_parameters_are_checked_before_the_data() -> None:
    """A bad parameter is reported even when the data is bad too: nothing is read first."""
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        release_cdf("not data", bounds=(0, 1), bins=4, epsilon=-1)


def test_edge_cases_of_data() -> None:
    src = InsecureSeededSource(0)
    empty = release_cdf([], **OK, rng=src)
    assert abs(empty.n) < 100
    one = release_cdf([42.0], **OK, rng=src)
    q = one.quantile(0.5)  # a number, or NaN when the estimated count is not positive
    assert np.isnan(q) or 0 <= q <= 100
    same = release_cdf([7.0] * 1000, bounds=(0, 100), bins=16, epsilon=5.0, rng=src)
    assert 0 <= same.quantile(0.5) <= 12.5
    far = release_cdf([-1e300, 1e300], **OK, rng=src)
    assert far.bins.count([-1e300, 1e300])[0][[0, -1]].tolist() == [1, 1]
    dropped = release_cdf([1.0, np.nan, 50.0], **OK, nan="drop", rng=src)
    assert dropped.neighbours == "add_remove"


def test_single_bin_and_default_branching() -> None:
    rel = release_cdf(VALUES, bounds=(0, 100), bins=1, epsilon=1.0, rng=InsecureSeededSource(1))
    assert rel.branching == ()
    assert treedp.default_branching(2**20, "add_remove") == (16,) * 5
    assert treedp.default_branching(100, "replace") == (10, 10)
    assert treedp.default_branching(2, "replace") == (2,)
