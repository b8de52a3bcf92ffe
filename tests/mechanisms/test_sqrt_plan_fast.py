"""The planner's blocked figures (``sqrt_plan.scaled_prefix_figures``) against the
covariance they replace (``ScaledToeplitzCovariance``): every prefix variance and the sum of
covariances to ``1e-12`` relatively, for random inputs with few runs of equal weights, the
block edges, and the mechanisms the planner scores (normalised columns, scaled rows and
columns). Deterministic (fixed seed; no statistical test)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp.estimation.toeplitz import ScaledToeplitzCovariance
from treedp.mechanisms import sqrt_plan as sp
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism

TOL = 1e-12


def _close(var: np.ndarray, total: float, ref: ScaledToeplitzCovariance) -> None:
    m = np.arange(var.size)
    want = ref.var(m)
    assert var[0] == want[0] == 0.0
    np.testing.assert_allclose(var, want, rtol=TOL, atol=0.0)
    assert total == pytest.approx(ref.prefix_sum_covariance(), rel=TOL)


@pytest.mark.parametrize("n_bins", [1, 2, 3, 31, 32, 33, 64, 65, 200])
def test_random_inputs_match_the_covariance(n_bins: int) -> None:
    rng = np.random.default_rng(TEST_SEED + n_bins)
    h = rng.normal(size=n_bins)
    q = rng.uniform(0.5, 2.0, n_bins)
    weights = np.repeat(rng.uniform(0.1, 1.0, 5), -(-n_bins // 5))[:n_bins]  # five runs
    for w in (weights, np.ones(n_bins), rng.uniform(0.1, 1.0, n_bins)):  # every w_k its own run
        var, total = sp.scaled_prefix_figures(h, q, w)
        _close(var, total, ScaledToeplitzCovariance(h, q, 1.0, w))


@pytest.mark.parametrize(("n_bins", "rho"), [(256, 0.5), (1024, 0.5), (1024, 1e-4), (4096, 0.5)])
def test_planner_figures_match_the_mechanism_covariance(n_bins: int, rho: float) -> None:
    mech = SqrtFactorizationMechanism(n_bins, rho=rho)
    assert mech.both or mech.normalise
    fast = sp._PrefixFigures.of(mech)
    m = np.arange(n_bins + 1)
    cov = mech.covariance()
    np.testing.assert_allclose(fast.var(m), cov.var(m), rtol=TOL, atol=0.0)
    assert fast.prefix_sum_covariance() == pytest.approx(cov.prefix_sum_covariance(), rel=TOL)


def test_a_wrong_variant_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a Gram table that leaves out the last run of weights is
    caught."""
    rng = np.random.default_rng(TEST_SEED)
    h, q = rng.normal(size=100), rng.uniform(0.5, 2.0, 100)
    w = np.repeat([0.3, 1.0], 50)
    ref = ScaledToeplitzCovariance(h, q, 1.0, w)
    _close(*sp.scaled_prefix_figures(h, q, w), ref)
    right = sp._pair_gram
    monkeypatch.setattr(
        sp, "_pair_gram", lambda h, w, width: right(h, np.r_[w[:50], np.zeros(50)], width)
    )
    with pytest.raises(AssertionError):
        _close(*sp.scaled_prefix_figures(h, q, w), ref)


@pytest.mark.parametrize("n_bins", [2**15 + 3, 2**16])
def test_row_figures_match_the_row_weighted_covariance(n_bins: int) -> None:
    from treedp.estimation.toeplitz import RowWeightedToeplitzCovariance
    from treedp.mechanisms import sqrt_lattice as lat
    from treedp.mechanisms import sqrt_rows as sr

    scale = lat.choose_scale(n_bins, 0.5, "add_remove", sr.ROWS_RESOLUTION**2)
    e = sr.row_multipliers(n_bins).astype(np.float64)
    ref = RowWeightedToeplitzCovariance(lat.prefix_filter(n_bins, scale), 1.0 / (e * e), 1.0)
    var, total = sp._unit_row_figures(n_bins, scale)
    np.testing.assert_allclose(var, ref.var(np.arange(n_bins + 1)), rtol=TOL, atol=0.0)
    assert total == pytest.approx(ref.prefix_sum_covariance(), rel=TOL)
