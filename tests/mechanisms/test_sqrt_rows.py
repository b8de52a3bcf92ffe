"""Scaled rows of the square-root factorisation (issue 33): the exact maximum correlation, the
sensitivity by enumeration with a mutant, exact release, covariances against dense least
squares, Monte Carlo, planner and files.

Statistical tests use ``TEST_SEED`` and the false-failure rate ``ALPHA = 1e-6`` (normal bands,
Bonferroni over the prefixes checked).
"""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import treedp
from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import sqrt_rows as sr
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism, plan_candidate
from treedp.noise import InsecureSeededSource


@pytest.fixture
def small_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scaled rows for every ``B >= 2`` (add_remove), so small cases can be enumerated."""
    monkeypatch.setattr(sr, "rows_apply", lambda n_bins, nb: nb == "add_remove" and n_bins > 1)


def _dense(mech: SqrtFactorizationMechanism) -> np.ndarray:
    """The released integer matrix ``diag(e) Ĉ`` as Python integers."""
    b = mech.n_bins
    c = mech.coefficients.astype(object)
    e = sr.row_multipliers(b).astype(object)
    i, j = np.indices((b, b))
    return np.where(i >= j, c[np.clip(i - j, 0, None)], 0) * e[:, None]


@pytest.mark.parametrize("n", [1, 2, 3, 17, 200])
def test_exact_max_correlation(n: int) -> None:
    rng = np.random.default_rng(n)
    for a_top, b_top in ((2**32, 2**16), (2**16, 2**8), (3, 2)):
        a, b = rng.integers(0, a_top, n), rng.integers(0, b_top, n)
        brute = max(sum(int(a[t]) * int(b[j + t]) for t in range(n - j)) for j in range(n))
        assert sr.exact_max_correlation(a, b) == brute


@pytest.mark.parametrize("n_bins", [2, 5, 13, 40, 130])
@pytest.mark.parametrize("scale", [1, 100, 65536])
@pytest.mark.usefixtures("small_rows")
def test_sensitivity_every_column(n_bins: int, scale: int) -> None:
    """Every add/remove change (a column of ``diag(e) Ĉ``): the claimed (L1, L2²) are attained
    and never exceeded. The mutant that keeps the plain factor's argument (column 0 is the
    largest) understates L2² once the rows are scaled, and is caught."""
    mech = SqrtFactorizationMechanism(n_bins, rho=0.5, scale=scale, rows=True)
    assert mech.rows
    cols = _dense(mech)
    l1 = max(int(sum(cols[:, j])) for j in range(n_bins))
    l2 = max(int(sum(v * v for v in cols[:, j])) for j in range(n_bins))
    assert (mech.block_sensitivity[0], mech.block_l2_squared[0]) == (l1, l2)
    column_zero = int(sum(v * v for v in cols[:, 0]))
    if n_bins >= 13:  # the scaled rows move the largest column away from j = 0
        assert column_zero < l2


@pytest.mark.usefixtures("small_rows")
def test_release_exact_estimate_and_dense_covariance() -> None:
    mech = SqrtFactorizationMechanism(40, rho=0.7, rows=True)
    x = np.random.default_rng(TEST_SEED).integers(0, 2**30, 40)
    (block,) = mech.true_blocks(x)
    assert block.tolist() == [int(v) for v in _dense(mech) @ x.astype(object)]
    np.testing.assert_allclose(
        mech.estimate_prefix([block]), np.concatenate([[0], np.cumsum(x)]), rtol=1e-9
    )
    a = _dense(mech).astype(np.float64)
    m = np.tril(np.ones((40, 40))) @ np.linalg.inv(a)
    full = np.zeros((41, 41))
    full[1:, 1:] = mech.block_variance()[0] * m @ m.T
    idx = np.arange(41)
    cov = mech.covariance()
    np.testing.assert_allclose(cov.cov(idx[:, None], idx[None, :]), full, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cov.var(idx), np.diagonal(full), rtol=1e-9, atol=1e-12)
    assert cov.prefix_sum_covariance() == pytest.approx(full.sum(), rel=1e-9)


@pytest.mark.usefixtures("small_rows")
def test_monte_carlo_unbiased_with_the_exact_variance() -> None:
    runs = 3000
    counts = np.random.default_rng(TEST_SEED).poisson(5, 64)
    mech = SqrtFactorizationMechanism(64, rho=0.05, rows=True)
    noise = mech.noise_only(runs, InsecureSeededSource(TEST_SEED))[0]
    est = mech.estimate_prefix([mech.true_blocks(counts)[0][None, :] + noise])
    truth = np.concatenate([[0], np.cumsum(counts)])
    var = mech.covariance().var(np.arange(65))
    checked = np.arange(4, 65, 4)
    z = z_two_sided(ALPHA / (2 * checked.size))
    err = est[:, checked] - truth[checked]
    assert (np.abs(err.mean(axis=0)) <= z * np.sqrt(var[checked] / runs)).all()
    ratio = err.var(axis=0, ddof=1) / var[checked]
    assert (np.abs(ratio - 1) <= z * math.sqrt(2 / (runs - 1))).all()


def test_default_above_2_14_planner_and_files() -> None:
    n_bins = 2**15
    mech = SqrtFactorizationMechanism(n_bins, rho=0.5)
    assert mech.rows and not mech.normalise and not mech.equalise
    cand = plan_candidate(n_bins, 0.5, "add_remove", "gaussian", "cdf_mse")
    assert cand is not None and "scaled rows" in cand.how
    var = mech.covariance().var(np.arange(1, n_bins + 1))
    assert cand.value == pytest.approx(float(var.mean()))
    counts = np.random.default_rng(TEST_SEED).poisson(3, n_bins)
    rel = treedp.release_counts(
        counts, privacy=treedp.ZCDP(0.5), rng=InsecureSeededSource(TEST_SEED)
    )
    assert rel.mechanism.name == "sqrt_factorization" and rel.mechanism.rows  # type: ignore[attr-defined]
    buf = io.BytesIO()
    rel.save(buf)
    buf.seek(0)
    back = treedp.load_release(buf)
    assert back.mechanism.rows  # type: ignore[attr-defined]
    np.testing.assert_array_equal(back.prefix_counts, rel.prefix_counts)
    assert not SqrtFactorizationMechanism(n_bins, rho=0.5, neighbours="replace", n=9).rows


def test_tiny_budgets_keep_the_plain_factor() -> None:
    """At ρ = 1e-6 the rows' factor R² would push the lattice scale below sqrt(πB): the
    default keeps the plain factor (s = 2^16) there; explicitly, rows are still allowed."""
    assert not sr.rows_default(2**20, 1e-6, "add_remove", None)
    mech = SqrtFactorizationMechanism(2**20, rho=1e-6)
    assert not mech.rows and mech.scale == 2**16
    assert sr.rows_default(2**20, 1e-4, "add_remove", None)
    assert not sr.rows_default(2**15, 0.5, "add_remove", 100)  # 7·100² < 22·2^15
    assert SqrtFactorizationMechanism(2**15, rho=0.5, scale=100, rows=True).rows


def test_refusals() -> None:
    with pytest.raises(InvalidParameterError, match="rows"):
        SqrtFactorizationMechanism(1024, rho=0.5, rows=True)
    with pytest.raises(InvalidParameterError, match="rows"):
        SqrtFactorizationMechanism(2**15, rho=0.5, neighbours="replace", n=9, rows=True)
