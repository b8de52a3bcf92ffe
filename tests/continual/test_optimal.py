"""The optimised lower-triangular factorisation against dense linear algebra: variances,
outputs, the exact lattice sensitivity (brute force over every placement of ``m`` records) with
a mutant, the planner's ratio, and the reproducibility check of a resumed stream."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from treedp.continual.optimal import OptCounter, factor, optimise
from treedp.continual.planner import mean_variance
from treedp.noise import InsecureSeededSource


def dense(counter: OptCounter) -> tuple[np.ndarray, np.ndarray]:
    """``M`` as floats (recomputed here from ``v``) and the decoder ``A·M⁻¹`` by dense inverse."""
    m = factor(counter.v)[0].astype(float)
    a = np.tril(np.ones(m.shape))
    return m, a @ np.linalg.inv(m)


@pytest.mark.parametrize("horizon", [1, 5, 33, 100])
def test_variances_outputs_and_sensitivity_match_dense_algebra(horizon: int) -> None:
    counter = OptCounter.for_budget(horizon, 0.5, 1)
    m, decoder = dense(counter)
    assert np.allclose(m, np.tril(m))  # lower-triangular: it streams
    assert counter.sensitivity()["l2_squared"] == round((m**2).sum(axis=0).max())
    assert counter.loss() <= Fraction(0.5)
    t = np.arange(1, horizon + 1)
    var_z = counter.variances(t) / (decoder**2).sum(axis=1)
    np.testing.assert_allclose(var_z, var_z[0], rtol=1e-9)
    x = np.random.default_rng(6).integers(0, 30, horizon)
    state = counter.initial_state(1, InsecureSeededSource(1))
    for step in t:
        state, est = counter.step(
            state, int(step), np.array([x[step - 1]]), InsecureSeededSource(7)
        )
        y = state["y"][:step, 0]
        assert est[0] == pytest.approx(decoder[step - 1, :step] @ y, rel=1e-9, abs=1e-6)
    noise = state["y"][:, 0] - m @ x
    assert np.abs(noise).max() < 50 * math.sqrt(float(counter.sigma2))
    # unbiased: the decoder applied to the noiseless release gives the prefix sums
    np.testing.assert_allclose(decoder @ (m @ x), np.cumsum(x), rtol=1e-9)


def audited_l2(counter: OptCounter, m_records: int) -> int:
    """The largest ``||M·Δx||²`` over every placement of ``m`` records (brute force)."""
    mat = [[int(v) for v in row] for row in factor(counter.v)[0]]
    n = counter.horizon
    worst = 0
    for steps in itertools.combinations_with_replacement(range(n), m_records):
        moved = [sum(mat[i][j] for j in steps) for i in range(n)]
        worst = max(worst, sum(v * v for v in moved))
    return worst


@dataclass(frozen=True)
class _ForgetsK(OptCounter):
    """Mutant: built for ``m`` records but states the one-record sensitivity."""

    def sensitivity(self) -> dict[str, Any]:
        m = factor(self.v)[0]
        return {"l2_squared": int((m.astype(object) ** 2).sum(axis=0).max())}


@pytest.mark.parametrize("k", [1, 2])
def test_stated_sensitivity_covers_the_brute_force_audit_and_catches_a_mutant(k: int) -> None:
    counter = OptCounter.for_budget(7, 0.5, k)
    assert audited_l2(counter, k) <= counter.sensitivity()["l2_squared"]
    if k > 1:
        mutant = _ForgetsK(counter.horizon, counter.sigma2, counter.v, k)
        assert audited_l2(mutant, k) > mutant.sensitivity()["l2_squared"]


def test_near_the_lower_bound_and_better_than_the_column_normalised_root() -> None:
    from treedp.continual.sqrt_norm import NormSqrtCounter

    horizon = 256
    lower = (0.701 + math.log(horizon) / math.pi) ** 2 / (2 * 0.5)
    opt = mean_variance(OptCounter.for_budget(horizon, 0.5, 1))
    assert opt / lower <= 1.05
    assert opt < mean_variance(NormSqrtCounter.for_budget(horizon, 0.5, 1))


def test_a_factor_that_does_not_reproduce_is_refused() -> None:
    d = OptCounter.for_budget(9, 0.5, 1).describe()
    assert OptCounter.from_description(d).matrices[2] == d["m_sha256"]
    with pytest.raises(ValueError, match="reproduce"):
        OptCounter.from_description({**d, "m_sha256": "0" * 64})
    other = np.frombuffer(optimise(9, 3), dtype="<f8").tobytes().hex()
    with pytest.raises(ValueError, match="reproduce"):
        OptCounter.from_description({**d, "v": other})
