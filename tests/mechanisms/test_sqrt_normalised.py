"""Normalised columns of the square-root factorisation (issue 33): sensitivity with a mutant,
exact integer release, exact covariances against dense least squares, Monte Carlo, planner.

Statistical tests use ``TEST_SEED`` and the false-failure rate ``ALPHA = 1e-6`` (normal bands,
Bonferroni over the prefixes checked).
"""

from __future__ import annotations

import io
import math
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.estimation.toeplitz import ScaledToeplitzCovariance, series_inverse
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import sqrt_lattice as lat
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, plan_candidate
from treedp.noise import InsecureSeededSource


def _dense(coef: np.ndarray) -> np.ndarray:
    b = coef.size
    i, j = np.indices((b, b))
    return np.where(i >= j, coef[np.clip(i - j, 0, None)], 0)


def _rounded_up(n_bins: int, scale: int) -> np.ndarray:
    """A mutant normaliser: ``p_j`` one above the largest allowed for ``j > 0``."""
    p = lat.normaliser(n_bins, scale).copy()
    p[1:] += 1
    return p


def _worst_column(n_bins: int, scale: int, p: np.ndarray) -> tuple[int, int]:
    """``(max L1, max L2²)`` over the columns of ``Ĉ diag(p)``, in Python integers."""
    cols = _dense(lat.coefficients(n_bins, scale).astype(object)) * p.astype(object)[None, :]
    l1 = max(int(sum(cols[:, j])) for j in range(n_bins))
    return l1, max(int(sum(v * v for v in cols[:, j])) for j in range(n_bins))


@pytest.mark.parametrize("n_bins", [2, 3, 5, 8, 13, 64])
@pytest.mark.parametrize("scale", [1, 7, 100, 65536])
def test_sensitivity_every_column(n_bins: int, scale: int) -> None:
    """Every add/remove change ``±p_j Ĉ e_j``: the claimed (L1, L2²) are attained and never
    exceeded, and ``Δ₂² = R² S(B)``; the rounded-up mutant exceeds the claim."""
    claimed = lat.normalised_sensitivities(n_bins, scale)
    assert _worst_column(n_bins, scale, lat.normaliser(n_bins, scale)) == claimed
    s_b = int(np.sum(lat.coefficients(n_bins, scale).astype(object) ** 2))
    assert claimed[1] == lat.NORMALISE_RESOLUTION**2 * s_b
    assert lat.normaliser(n_bins, scale)[0] == lat.NORMALISE_RESOLUTION
    assert _worst_column(n_bins, scale, _rounded_up(n_bins, scale))[1] > claimed[1]


def test_mechanism_contract_and_noise_calibration() -> None:
    mech = SqrtFactorizationMechanism(300, rho=0.5, normalise=True)
    assert mech.normalise and not mech.equalise and not mech.both
    p = lat.normaliser(300, mech.scale)
    assert mech.block_l2_squared[0] == _worst_column(300, mech.scale, p)[1]
    assert mech.sigma2[0] >= Fraction(mech.block_l2_squared[0]) / (2 * Fraction(0.5))
    assert mech.rho_spent() <= Fraction(0.5)
    d = mech.describe()
    assert d["normalise"] is True and d["equalise"] is False
    # Calibrating to the plain factor's Δ₂² (forgetting p) would spend R² times the budget.
    plain = int(np.sum(mech.coefficients.astype(object) ** 2))
    assert Fraction(mech.block_l2_squared[0], plain) == lat.NORMALISE_RESOLUTION**2


def test_refusals() -> None:
    with pytest.raises(InvalidParameterError, match="normalise"):
        SqrtFactorizationMechanism(300, rho=0.5, neighbours="replace", n=10, normalise=True)
    with pytest.raises(InvalidParameterError, match="normalise"):
        SqrtFactorizationMechanism(64, rho=0.5, normalise=True)
    with pytest.raises(InvalidParameterError, match="At most one"):
        SqrtFactorizationMechanism(300, rho=0.5, normalise=True, equalise=True)
    assert not SqrtFactorizationMechanism(300, rho=0.5, neighbours="replace", n=10).normalise


def test_release_is_exact_and_the_estimate_unbiased() -> None:
    mech = SqrtFactorizationMechanism(256, rho=0.5, normalise=True)
    rng = np.random.default_rng(TEST_SEED)
    x = rng.integers(0, 2**20, 256)
    (block,) = mech.true_blocks(x)
    p = [int(v) for v in lat.normaliser(256, mech.scale)]
    c = [int(v) for v in mech.coefficients]
    want = [sum(c[i - j] * p[j] * int(x[j]) for j in range(i + 1)) for i in range(256)]
    assert block.tolist() == want
    est = mech.estimate_prefix([block])
    np.testing.assert_allclose(est, np.concatenate([[0], np.cumsum(x)]), rtol=1e-9, atol=1e-3)


def _dense_covariance(mech: SqrtFactorizationMechanism) -> np.ndarray:
    """``v · M Mᵀ`` for the least-squares estimator ``M = L (Ĉ diag(p))^{-1}`` (dense)."""
    b = mech.n_bins
    a = _dense(mech.coefficients.astype(np.float64)) * lat.normaliser(b, mech.scale)[None, :]
    m = np.tril(np.ones((b, b))) @ np.linalg.inv(a)
    return mech.block_variance()[0] * (m @ m.T)


def test_covariance_matches_dense_least_squares() -> None:
    mech = SqrtFactorizationMechanism(256, rho=0.7, normalise=True)
    dense = _dense_covariance(mech)
    cov = mech.covariance()
    m = np.arange(1, 257)
    np.testing.assert_allclose(cov.var(m), np.diagonal(dense), rtol=1e-9)
    rng = np.random.default_rng(TEST_SEED)
    a, b = rng.integers(0, 257, 300), rng.integers(0, 257, 300)
    full = np.zeros((257, 257))
    full[1:, 1:] = dense
    np.testing.assert_allclose(cov.cov(a, b), full[a, b], rtol=1e-8, atol=1e-9 * dense.max())
    assert cov.prefix_sum_covariance() == pytest.approx(dense.sum(), rel=1e-9)
    cand = plan_candidate(256, 5e-5, "add_remove", "gaussian", "range_mse")  # tiny ρ: normalised
    assert cand is not None and "normalised" in cand.how
    mech = SqrtFactorizationMechanism(256, rho=5e-5)
    assert mech.normalise
    full[1:, 1:] = _dense_covariance(mech)
    i, j = np.triu_indices(257, 1)
    diffs = full[i, i] + full[j, j] - 2 * full[i, j]
    assert cand.value == pytest.approx(np.mean(diffs), rel=1e-8)


@pytest.mark.parametrize("n_bins", [1, 2, 7, 40])
def test_scaled_covariance_any_diagonal(n_bins: int) -> None:
    """The class alone, on a random diagonal and ``H``, against ``L diag(q) H``."""
    rng = np.random.default_rng(n_bins)
    coef = np.concatenate([[2.0], rng.random(n_bins - 1)])
    h = series_inverse(coef)
    q = rng.random(n_bins) + 0.5
    m = np.tril(np.ones((n_bins, n_bins))) @ np.diag(q) @ _dense(h)
    cov = ScaledToeplitzCovariance(h, q, 3.0)
    idx = np.arange(n_bins + 1)
    full = np.zeros((n_bins + 1, n_bins + 1))
    full[1:, 1:] = 3.0 * m @ m.T
    np.testing.assert_allclose(cov.cov(idx[:, None], idx[None, :]), full, atol=1e-10)
    assert cov.prefix_sum_covariance() == pytest.approx(full.sum(), rel=1e-10)


def test_monte_carlo_unbiased_with_the_exact_variance() -> None:
    runs = 3000
    counts = np.random.default_rng(TEST_SEED).poisson(5, 256)
    mech = SqrtFactorizationMechanism(256, rho=0.05, normalise=True)
    noise = mech.noise_only(runs, InsecureSeededSource(TEST_SEED))[0]
    est = mech.estimate_prefix([mech.true_blocks(counts)[0][None, :] + noise])
    truth = np.concatenate([[0], np.cumsum(counts)])
    var = mech.covariance().var(np.arange(257))
    checked = np.arange(16, 257, 16)
    z = z_two_sided(ALPHA / (2 * checked.size))
    err = est[:, checked] - truth[checked]
    assert (np.abs(err.mean(axis=0)) <= z * np.sqrt(var[checked] / runs)).all()
    ratio = err.var(axis=0, ddof=1) / var[checked]
    assert (np.abs(ratio - 1) <= z * math.sqrt(2 / (runs - 1))).all()


def test_planner_default_save_and_load() -> None:
    plan = treedp.plan(1024, privacy=treedp.ZCDP(0.5))
    mech = SqrtFactorizationMechanism(1024, rho=0.5)
    assert plan.mechanism == "sqrt_factorization"
    mean = float(mech.covariance().var(np.arange(1, 1025)).mean())
    assert plan.mean_cdf_mse == pytest.approx(mean)
    values = np.random.default_rng(TEST_SEED).normal(size=3000)
    rel = treedp.release_cdf(
        values, bounds=(-4, 4), bins=1024, privacy=treedp.ZCDP(0.5), rng=InsecureSeededSource(5)
    )
    assert rel.mechanism.both  # type: ignore[attr-defined]  (since issue 33's rows and columns)
    buf = io.BytesIO()
    rel.save(buf)
    buf.seek(0)
    back = treedp.load_release(buf)
    assert back.mechanism.both  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.prefix_counts, rel.prefix_counts)
    lo, hi = rel.confidence_interval("range_count", -1.0, 1.0)
    assert float(np.asarray(lo)) < float(np.asarray(hi))


def test_tiny_budgets_keep_the_plain_factor() -> None:
    assert not lat.normalise_default(2**14, 1e-6, "add_remove", None)  # scale 87 < sqrt(πB)
    assert not SqrtFactorizationMechanism(2**14, rho=1e-6).normalise
    assert lat.normalise_default(2**14, 1e-5, "add_remove", None)
    assert lat.normalise_default(1024, 1e-6, "add_remove", None)


@pytest.mark.slow
def test_auto_picks_the_factorisation_at_2_20() -> None:
    """At 2^20 (scored by the rule since issue 33's planning goal) the planner picks the
    factorisation, well below the tree."""
    plan = treedp.plan(2**20, privacy=treedp.ZCDP(0.5))
    assert plan.mechanism == "sqrt_factorization"
    tree = min(c.value for c in plan.alternatives if not c.offered)
    assert plan.mean_cdf_mse < 0.75 * tree
