"""Scaled rows and columns of the square-root factorisation (issue 33): exact sensitivity by
enumeration with mutants, exact integer release, exact covariances against dense least
squares, Monte Carlo, the default at 2^10 and 2^11 (at most 1.05× the SVD bound), planner.

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
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import sqrt_both as sb
from treedp.mechanisms import sqrt_lattice as lat
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, plan_candidate
from treedp.noise import InsecureSeededSource


def _dense(coef: np.ndarray) -> np.ndarray:
    b = coef.size
    i, j = np.indices((b, b))
    return np.where(i >= j, coef[np.clip(i - j, 0, None)], 0)


def _matrix(n_bins: int, scale: int, p: np.ndarray) -> np.ndarray:
    """``diag(e) Ĉ diag(p)`` in Python integers."""
    c = _dense(lat.coefficients(n_bins, scale).astype(object))
    e = sb.row_weights(n_bins).astype(object)
    return e[:, None] * c * p.astype(object)[None, :]


def _worst_column(a: np.ndarray) -> tuple[int, int]:
    cols = range(a.shape[1])
    return max(int(sum(a[:, j])) for j in cols), max(int(sum(v * v for v in a[:, j])) for j in cols)


def _svd_bound(n_bins: int, rho: float) -> float:
    k = np.arange(1, n_bins + 1, dtype=np.float64)
    nuclear = float(np.sum(1.0 / (2.0 * np.sin((2 * k - 1) * np.pi / (4 * n_bins + 2)))))
    return nuclear**2 / (2 * rho * n_bins**2)


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lift the size limits so small releases can be enumerated."""
    monkeypatch.setattr(sb, "both_apply", lambda n_bins, nb: nb == "add_remove")


def test_column_sums_are_exact() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for n in (1, 2, 9, 300):
        coef = rng.integers(0, 2**34, n)
        w = rng.integers(0, 2**10, n)
        got = sb._column_sums(coef, w)
        want = [sum(int(w[j + t]) * int(coef[t]) for t in range(n - j)) for j in range(n)]
        assert got.tolist() == want


@pytest.mark.parametrize("n_bins", [2, 3, 5, 8, 13, 64])
@pytest.mark.parametrize("scale", [1, 7, 100, 65536])
def test_sensitivity_every_column(n_bins: int, scale: int) -> None:
    """Every add/remove change ``±p_j e ∘ Ĉ e_j``: the claimed (L1, L2²) are attained and never
    exceeded, ``Δ₂² = R_p² max_j N_j``; rounding a multiplier up is caught."""
    claimed = sb.sensitivities(n_bins, scale)
    p = sb.column_multipliers(n_bins, scale)
    assert _worst_column(_matrix(n_bins, scale, p)) == claimed
    norms = sb.column_norms(n_bins, scale)
    assert claimed[1] == lat.NORMALISE_RESOLUTION**2 * int(norms.max())
    assert p.min() == p[int(np.argmax(norms))] == lat.NORMALISE_RESOLUTION
    worst = int(np.argmax(norms))
    for j in range(n_bins):  # the mutant p_j + 1 at any column not holding the maximum
        if norms[j] < norms[worst]:
            up = p.copy()
            up[j] += 1
            assert _worst_column(_matrix(n_bins, scale, up))[1] > claimed[1]
            break


def test_row_weights_profile() -> None:
    e = sb.row_weights(1024)
    assert e.min() >= 1 and e.max() == sb.ROW_RESOLUTION
    assert e[-1] < e[0] < e[512]  # smallest at the end, largest in the middle


def test_mechanism_contract_and_noise_calibration() -> None:
    mech = SqrtFactorizationMechanism(300, rho=0.5)
    assert mech.both and not mech.normalise and not mech.equalise and not mech.rows
    p = sb.column_multipliers(300, mech.scale)
    assert (mech.block_sensitivity[0], mech.block_l2_squared[0]) == _worst_column(
        _matrix(300, mech.scale, p)
    )
    assert mech.sigma2[0] >= Fraction(mech.block_l2_squared[0]) / (2 * Fraction(0.5))
    assert mech.rho_spent() <= Fraction(0.5)
    assert mech.describe()["both"] is True
    # Calibrating to normalised columns' Δ₂² (forgetting e) would spend up to R_e² times ρ.
    normalised = lat.normalised_sensitivities(300, mech.scale)[1]
    assert mech.block_l2_squared[0] > 100 * normalised


def test_refusals_and_tiny_budgets() -> None:
    with pytest.raises(InvalidParameterError, match="both"):
        SqrtFactorizationMechanism(300, rho=0.5, neighbours="replace", n=10, both=True)
    with pytest.raises(InvalidParameterError, match="both"):
        SqrtFactorizationMechanism(64, rho=0.5, both=True)
    with pytest.raises(InvalidParameterError, match="At most one"):
        SqrtFactorizationMechanism(300, rho=0.5, both=True, normalise=True)
    assert not SqrtFactorizationMechanism(300, rho=0.5, neighbours="replace", n=10).both
    assert SqrtFactorizationMechanism(300, rho=0.5, normalise=True).normalise
    tiny = SqrtFactorizationMechanism(1024, rho=1e-4)  # its scale would be below 2 sqrt(B)
    assert not tiny.both and tiny.normalise
    assert not sb.both_default(1024, 1e-4, "add_remove", None)
    assert SqrtFactorizationMechanism(1024, rho=0.01).both  # scale 320 >= 64


def test_release_is_exact_and_the_estimate_unbiased() -> None:
    mech = SqrtFactorizationMechanism(256, rho=0.5)
    x = np.random.default_rng(TEST_SEED).integers(0, 2**20, 256)
    (block,) = mech.true_blocks(x)
    a = _matrix(256, mech.scale, sb.column_multipliers(256, mech.scale))
    assert block.tolist() == [int(v) for v in a @ x.astype(object)]
    est = mech.estimate_prefix([block])
    np.testing.assert_allclose(est, np.concatenate([[0], np.cumsum(x)]), rtol=1e-9, atol=1e-3)
    big = np.zeros(256, dtype=np.int64)
    big[0] = mech.max_records() + 1
    with pytest.raises(treedp.DataError):
        mech.true_blocks(big)


def test_release_exact_at_the_count_cap() -> None:
    """Counts summing to ``max_records()`` (spikes where the multipliers are largest and at
    the longest column): the released integers equal Python-integer products below 2^62."""
    mech = SqrtFactorizationMechanism(256, rho=50.0)
    assert mech.both
    cap = mech.max_records()
    p = sb.column_multipliers(256, mech.scale)
    x = np.zeros(256, dtype=np.int64)
    x[int(np.argmax(p))] = cap // 2
    x[int(np.argmax(sb.column_norms(256, mech.scale)))] += cap // 4
    x[-1] += cap - int(x.sum())
    assert int(x.sum()) == cap
    (block,) = mech.true_blocks(x)
    want = [int(v) for v in _matrix(256, mech.scale, p) @ x.astype(object)]
    assert block.tolist() == want and max(want) < 2**62


def test_covariance_matches_dense_least_squares(small: None) -> None:
    mech = SqrtFactorizationMechanism(40, rho=0.7, both=True)
    a = _matrix(40, mech.scale, sb.column_multipliers(40, mech.scale)).astype(np.float64)
    m = np.tril(np.ones((40, 40))) @ np.linalg.inv(a)
    dense = mech.block_variance()[0] * (m @ m.T)
    full = np.zeros((41, 41))
    full[1:, 1:] = dense
    cov = mech.covariance()
    idx = np.arange(41)
    np.testing.assert_allclose(cov.var(idx), np.diagonal(full), rtol=1e-9)
    np.testing.assert_allclose(
        cov.cov(idx[:, None], idx[None, :]), full, rtol=1e-8, atol=1e-9 * dense.max()
    )
    assert cov.prefix_sum_covariance() == pytest.approx(dense.sum(), rel=1e-9)


def test_monte_carlo_unbiased_with_the_exact_variance() -> None:
    runs = 3000
    counts = np.random.default_rng(TEST_SEED).poisson(5, 256)
    mech = SqrtFactorizationMechanism(256, rho=0.5)
    assert mech.both
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


@pytest.mark.parametrize("n_bins", [1024, 2048])
def test_default_within_1_05_of_the_svd_bound(n_bins: int) -> None:
    """Issue 33: the default's exact mean prefix MSE at most 1.05× the SVD bound (1.0354× at
    2^10, 1.0312× at 2^11; normalised columns alone: 1.0580×, 1.0526×), and the planner's."""
    plan = treedp.plan(n_bins, privacy=treedp.ZCDP(0.5))
    mech = SqrtFactorizationMechanism(n_bins, rho=0.5)
    assert mech.both and plan.mechanism == "sqrt_factorization"
    mean = float(mech.covariance().var(np.arange(1, n_bins + 1)).mean())
    assert plan.mean_cdf_mse == pytest.approx(mean, rel=1e-12)
    assert mean <= 1.05 * _svd_bound(n_bins, 0.5)
    cand = plan_candidate(n_bins, 0.5, "add_remove", "gaussian", "cdf_mse")
    assert cand is not None and "scaled rows and columns" in cand.how


def test_release_save_and_load() -> None:
    values = np.random.default_rng(TEST_SEED).normal(size=3000)
    rel = treedp.release_cdf(
        values, bounds=(-4, 4), bins=1024, privacy=treedp.ZCDP(0.5), rng=InsecureSeededSource(5)
    )
    assert rel.mechanism.both  # type: ignore[attr-defined]
    buf = io.BytesIO()
    rel.save(buf)
    buf.seek(0)
    back = treedp.load_release(buf)
    assert back.mechanism.both  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.prefix_counts, rel.prefix_counts)
