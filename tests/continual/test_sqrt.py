"""The streamed square root against dense linear algebra: variances, outputs, sensitivity."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import toeplitz

from treedp.continual.sqrt import SqrtCounter, lattice, lattice_sensitivity
from treedp.noise import InsecureSeededSource


def dense(horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """``Ĉ`` (integer lower-triangular Toeplitz) and the decoder ``A Ĉ⁻¹``."""
    c = lattice(horizon).astype(float)
    chat = np.tril(toeplitz(c))
    a = np.tril(np.ones((horizon, horizon)))
    return chat, a @ np.linalg.inv(chat)


@pytest.mark.parametrize("horizon", [1, 5, 32, 100])
def test_variances_and_outputs_match_dense_algebra(horizon: int) -> None:
    counter = SqrtCounter.for_budget(horizon, 0.5, 1)
    chat, decoder = dense(horizon)
    var_z = counter.variances(np.array([1]))[0]  # g_0 = 1/s: Var(1) = Var(Z)/s²
    var_z *= counter.scale**2
    t = np.arange(1, horizon + 1)
    np.testing.assert_allclose(counter.variances(t), var_z * (decoder**2).sum(axis=1), rtol=1e-9)
    x = np.random.default_rng(5).integers(0, 50, horizon)
    state = counter.initial_state(1, InsecureSeededSource(2))
    for step in t:
        state, est = counter.step(
            state, int(step), np.array([x[step - 1]]), InsecureSeededSource(int(step))
        )
        y = state["y"][:step, 0].astype(float)
        assert est[0] == pytest.approx((decoder[step - 1, :step] @ y), rel=1e-9, abs=1e-6)
    z = state["y"][:, 0] - (chat @ x).astype(np.int64)
    assert np.all(np.abs(z) < 50 * np.sqrt(float(counter.sigma2)))  # integer noise, in range


@pytest.mark.parametrize("horizon", [1, 8, 50])
def test_sensitivity_is_the_largest_column_norm(horizon: int) -> None:
    chat, _ = dense(horizon)
    assert lattice_sensitivity(horizon) == round((chat**2).sum(axis=0).max())
    counter = SqrtCounter.for_budget(horizon, 0.25, 1)
    assert counter.loss() <= Fraction(0.25)
    assert counter.sensitivity() == {"l2_squared": lattice_sensitivity(horizon)}


@dataclass(frozen=True)
class _LastColumn(SqrtCounter):
    """Mutant: it states the sensitivity of the last column (one record at the last step)."""

    def sensitivity(self) -> dict[str, int]:
        return {"l2_squared": int(lattice(self.horizon)[0]) ** 2}


def test_the_dense_audit_catches_a_mutant_sensitivity() -> None:
    horizon = 16
    chat, _ = dense(horizon)
    audited = round((chat**2).sum(axis=0).max())
    mutant = _LastColumn(horizon, Fraction(1), 1)
    assert mutant.sensitivity()["l2_squared"] < audited
