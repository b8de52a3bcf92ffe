"""The quantile methods' table: every method ``treedp.quantiles`` takes has one row, and the
rows' facts are the ones the call checks."""

from __future__ import annotations

import numpy as np

import treedp
from treedp.quantile_methods import QUANTILE_METHODS, binned_method
from treedp.quantiles_choice import METHODS


def test_every_method_has_one_row() -> None:
    assert set(QUANTILE_METHODS) == set(METHODS) - {"auto"}
    assert all(name == row.name for name, row in QUANTILE_METHODS.items())
    assert binned_method().binned and not binned_method().selections


def test_each_row_runs_as_the_public_call_does() -> None:
    values = np.random.default_rng(3).normal(50, 10, 2000)
    for name in QUANTILE_METHODS:
        result = treedp.quantiles(
            values,
            [0.25, 0.5, 0.75],
            epsilon=1.0,
            bounds=(0, 100),
            method=name,
            rng=treedp.InsecureSeededSource(5),
        )
        assert result.method == name and np.all(np.diff(result.value) >= 0)
        assert abs(result.value[1] - 50) < 10
