"""The planner's fast objective paths agree with the general code they replace: the lean
from-below pass is bit-identical to :class:`VariancePlan`'s, the mean is the brute-force mean."""

from __future__ import annotations

import random

import numpy as np
import pytest

from treedp.estimation import objectives
from treedp.estimation.covariance import EfficientTreeCovariance
from treedp.estimation.efficient import VariancePlan
from treedp.planning.shapes import candidate_shapes as _candidate_shapes
from treedp.tree import TreeShape


def _variances(rng: random.Random, height: int) -> tuple[float, ...]:
    root = rng.choice([0.0, 2.0, rng.uniform(0.5, 500.0)])
    return (root, *(rng.choice([2.0, rng.uniform(0.5, 500.0)]) for _ in range(height)))


@pytest.mark.parametrize("n_bins", [2, 3, 10, 17, 97, 255, 1000, 4097, 65537, 10**6 + 3])
def test_below_pass_and_mean_match_the_full_variance_plan(n_bins: int) -> None:
    rng = random.Random(n_bins)
    shapes = [*_candidate_shapes(n_bins), (2,) * max(1, (n_bins - 1).bit_length())]
    for branching in shapes:
        shape = TreeShape(n_bins, branching)
        for _ in range(2):
            var = _variances(rng, shape.height)
            full = VariancePlan(shape, var)
            lean = objectives._BelowPlan(shape, var)
            for level in range(shape.height + 1):
                assert lean.var_below[level].starts == full.var_below[level].starts.tolist()
                assert lean.var_below[level].values == full.var_below[level].values.tolist()
            assert lean.root_variance == full.root_variance
            assert objectives._efficient_mean(lean) == objectives._efficient_mean(full)


@pytest.mark.parametrize("n_bins", [5, 30, 100, 257])
def test_mean_prefix_variance_is_the_brute_force_mean(n_bins: int) -> None:
    rng = random.Random(n_bins)
    for branching in _candidate_shapes(n_bins)[:12]:
        shape = TreeShape(n_bins, branching)
        var = _variances(rng, shape.height)
        cov = EfficientTreeCovariance(VariancePlan(shape, var))
        brute = float(cov.var(np.arange(1, n_bins + 1)).mean())
        assert objectives.mean_prefix_variance(shape, var) == pytest.approx(brute, rel=1e-10)
