"""Private bounds: contract, grid, accuracy on typical data, inputs."""

from __future__ import annotations

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError, InvalidTypeError
from treedp.mechanisms import private_bounds as pb
from treedp.mechanisms.private_bounds import (
    CONTRACT,
    GRID,
    private_bounds,
    split_private_bounds,
)
from treedp.privacy import PureDP


def test_grid_is_public_and_ascending() -> None:
    assert GRID[0] == 0 and np.all(np.diff(GRID) > 0) and np.isfinite(GRID).all()
    assert GRID[-1] > 1e300 and not GRID.flags.writeable


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_guarantee_within_budget(relation: str) -> None:
    res = private_bounds([1.0, 2.0], epsilon=0.3, neighbours=relation, rng=InsecureSeededSource(1))
    assert isinstance(res.guarantee, PureDP)
    assert 0.3 * (1 - 1e-5) <= res.epsilon_spent <= 0.3
    assert res.lo < res.hi and res.hi >= 0
    assert res.mechanism == CONTRACT.name and res.seeded
    t_rho, _t_nu, loss = pb._scales(0.15, relation)
    assert loss <= 0.15 and t_rho >= 2 / 0.15


def test_bounds_cover_typical_data() -> None:
    """n = 10**4 at eps = 1 (scales t = 4, k = 8), seeded.

    Clamping (docstring bound with a = 150): more than k + 150 = 158 records beyond a bound
    has probability at most 2·(4001 + 1)·e^{-150/8} < 1e-4 over both ends. The looser check on
    the width (at most twice the data's range, about four grid steps) holds at this seed; its
    failure bound (overshoot, b = k/2) is about e^{-1}, so it is a regression check only.
    """
    rng = np.random.default_rng(TEST_SEED)
    for x in (rng.lognormal(10, 1, 10**4), rng.normal(-50, 20, 10**4), rng.integers(17, 91, 10**4)):
        res = private_bounds(x, epsilon=1.0, rng=InsecureSeededSource(2))
        assert (x > res.hi).sum() <= 158 and (x < res.lo).sum() <= 158
        assert res.hi <= max(x.max(), 0) * 2 + 2 and res.lo >= min(x.min(), 0) * 2 - 2


def test_split_and_integers() -> None:
    x = np.arange(17, 91)
    (lo, hi), rest, res = split_private_bounds(
        np.repeat(x, 100), epsilon=1.0, share=0.1, integers=True, rng=InsecureSeededSource(3)
    )
    assert float(lo).is_integer() and float(hi).is_integer() and lo < hi
    assert rest + res.epsilon_spent <= 1.0
    with pytest.raises(InvalidParameterError, match="bounds_share"):
        split_private_bounds(x, epsilon=1.0, share=1.0)


def test_inputs() -> None:
    with pytest.raises(InvalidTypeError):
        private_bounds(np.array(["2024-01-01"], dtype="datetime64[D]"), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="allowance"):
        private_bounds([1.0], epsilon=1.0, allowance=float("nan"))
    res = private_bounds([], epsilon=1.0, rng=InsecureSeededSource(4))
    assert res.lo < res.hi
    res = private_bounds([1.0, np.nan], epsilon=1.0, nan="drop", rng=InsecureSeededSource(5))
    assert res.lo < res.hi
