"""The column-normalised square root against dense linear algebra."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy.linalg import toeplitz

from treedp.continual.sqrt import lattice
from treedp.continual.sqrt_norm import NormSqrtCounter, column_scales, norm_sensitivity
from treedp.noise import InsecureSeededSource


def dense(horizon: int, target: int) -> tuple[np.ndarray, np.ndarray]:
    """The released matrix ``Ĉ D̃`` and the decoder ``A (Ĉ D̃)⁻¹``."""
    chat = np.tril(toeplitz(lattice(horizon).astype(float)))
    released = chat @ np.diag(column_scales(horizon, target).astype(float))
    a = np.tril(np.ones((horizon, horizon)))
    return released, a @ np.linalg.inv(released)


@pytest.mark.parametrize("horizon", [1, 6, 40, 129])
def test_variances_outputs_and_sensitivity_match_dense_algebra(horizon: int) -> None:
    counter = NormSqrtCounter.for_budget(horizon, 0.5, 1)
    released, decoder = dense(horizon, counter.target)
    assert norm_sensitivity(horizon, counter.target) == round((released**2).sum(axis=0).max())
    assert counter.loss() <= Fraction(0.5)
    t = np.arange(1, horizon + 1)
    var_z = counter.variances(t) / (decoder**2).sum(axis=1)
    np.testing.assert_allclose(var_z, var_z[0], rtol=1e-9)
    assert var_z[0] == pytest.approx(float(counter.sigma2), rel=1e-9)
    x = np.random.default_rng(6).integers(0, 30, horizon)
    state = counter.initial_state(1, InsecureSeededSource(1))
    for step in t:
        state, est = counter.step(
            state, int(step), np.array([x[step - 1]]), InsecureSeededSource(7)
        )
        y = state["y"][:step, 0].astype(float)
        assert est[0] == pytest.approx(decoder[step - 1, :step] @ y, rel=1e-9, abs=1e-6)
    noise = state["y"][:, 0] - np.rint(released @ x).astype(np.int64)
    assert np.abs(noise).max() < 50 * np.sqrt(float(counter.sigma2))


def test_columns_are_equalised_and_beat_the_plain_square_root() -> None:
    from treedp.continual.planner import mean_variance
    from treedp.continual.sqrt import SqrtCounter

    horizon = 512
    released, _ = dense(horizon, 1024)
    norms = np.sqrt((released**2).sum(axis=0))
    assert norms.max() / norms.min() < 1.01
    plain = SqrtCounter.for_budget(horizon, 0.5, 1)
    assert mean_variance(NormSqrtCounter.for_budget(horizon, 0.5, 1)) < 0.95 * mean_variance(plain)


class _TrustsTheScaling(NormSqrtCounter):
    """Mutant: states ``(D·s)²``, as if rounding had left every column at norm ``D·s``."""

    def sensitivity(self) -> dict[str, int]:
        return {"l2_squared": (self.target * self.scale) ** 2}


@pytest.mark.parametrize("horizon", [16, 100])
def test_the_dense_audit_catches_a_mutant_that_trusts_the_scaling(horizon: int) -> None:
    released, _ = dense(horizon, 1024)
    audited = round((released**2).sum(axis=0).max())
    mutant = _TrustsTheScaling(horizon, Fraction(1), 1024)
    assert mutant.sensitivity()["l2_squared"] < audited == norm_sensitivity(horizon, 1024)
