"""The quantile methods' table: every method ``treedp.quantiles`` takes has one row, and the
rows' facts are the ones the call checks."""

from __future__ import annotations

import numpy as np
import pytest

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
        integers = QUANTILE_METHODS[name].max_integers is not None  # integer data only
        result = treedp.quantiles(
            np.round(values).astype(int) if integers else values,
            [0.25, 0.5, 0.75],
            epsilon=1.0,
            bounds=(0, 100),
            method=name,
            rng=treedp.InsecureSeededSource(5),
        )
        assert result.method == name and np.all(np.diff(result.value) >= 0)
        assert abs(result.value[1] - 50) < 10


@pytest.mark.parametrize(
    ("bounds", "bins", "match"),
    [
        ("private", "integers", "needs public bounds"),
        ((0, 2**20), "integers", "at most 1048576"),
        ((0, 100), None, "needs bins='integers'"),
        ((0, 100), 64, "needs bins='integers'"),
    ],
)
def test_permute_and_flip_refuses_before_the_charge(
    bounds: object, bins: object, match: str
) -> None:
    acct = treedp.Accountant(treedp.PureDP(1.0))
    with pytest.raises(treedp.InvalidParameterError, match=match):
        treedp.quantiles(
            np.arange(10.0), 0.5, bounds=bounds, bins=bins, epsilon=0.5,
            method="permute_and_flip", accountant=acct,
        )  # fmt: skip
    assert acct.spent.epsilon == 0
