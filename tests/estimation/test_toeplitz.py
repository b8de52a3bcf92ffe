"""The row-weighted Toeplitz prefix covariance (:class:`RowWeightedToeplitzCovariance`, the
default zCDP release's from 2^15 bins) against dense algebra: every way its ``cov`` groups
pairs (equal prefixes, a shared lag, a shared top, scattered pairs, by dot products or one
convolution a group) gives ``v G diag(w) Gᵀ``."""

from __future__ import annotations

import numpy as np
import pytest

from treedp.estimation.toeplitz import RowWeightedToeplitzCovariance


def _dense(g: np.ndarray, w: np.ndarray, v: float) -> np.ndarray:
    n = g.size
    lower = np.zeros((n, n))
    for i in range(n):
        lower[i, : i + 1] = g[i::-1]
    full = np.zeros((n + 1, n + 1))
    full[1:, 1:] = v * lower @ np.diag(w) @ lower.T
    return full


@pytest.mark.parametrize("n", [7, 64, 300])
def test_every_grouping_of_pairs_matches_dense_algebra(n: int) -> None:
    rng = np.random.default_rng(n)
    g, w = rng.normal(size=n), rng.uniform(0.5, 2.0, n)
    cov = RowWeightedToeplitzCovariance(g, w, 1.7)
    ref = _dense(g, w, 1.7)
    m = np.arange(n + 1)
    pairs = [
        (m, np.full_like(m, n)),  # a quantile band's Cov(m, B): one top
        (m[:-1], m[1:]),  # a histogram's adjacent prefixes: one lag
        (m[:-3], m[3:]),
        (m, m),  # variances
        (rng.integers(0, n + 1, 200), rng.integers(0, n + 1, 200)),  # scattered
        (np.array([[1, 2], [3, 0]]), np.array([[n, 2], [1, 0]])),  # shaped like the inputs
    ]
    for a, b in pairs:
        got = cov.cov(a, b)
        assert got.shape == np.broadcast(a, b).shape
        np.testing.assert_allclose(got, ref[a, b], rtol=0, atol=1e-12 * np.abs(ref).max())


def _dense_scaled(h: np.ndarray, q: np.ndarray, w: np.ndarray, v: float) -> np.ndarray:
    n = h.size
    toeplitz = np.zeros((n, n))
    for i in range(n):
        toeplitz[i, : i + 1] = h[i::-1]
    m = np.tril(np.ones((n, n))) @ np.diag(q) @ toeplitz
    full = np.zeros((n + 1, n + 1))
    full[1:, 1:] = v * m @ np.diag(w) @ m.T
    return full


@pytest.mark.parametrize("n", [5, 40, 200])
def test_scaled_toeplitz_covariance_matches_dense_algebra_every_way(n: int) -> None:
    """Equal, adjacent (one bin between: a histogram's intervals), a shared top (one column by
    an FFT: a quantile band's ``Cov(m, B)``) and scattered pairs (two rows each)."""
    from treedp.estimation.toeplitz import ScaledToeplitzCovariance

    rng = np.random.default_rng(n + 1)
    h, q, w = rng.normal(size=n), rng.uniform(0.5, 2.0, n), rng.uniform(0.5, 2.0, n)
    cov = ScaledToeplitzCovariance(h, q, 1.3, weights=w)
    ref = _dense_scaled(h, q, w, 1.3)
    m = np.arange(n + 1)
    for a, b in [
        (m, np.full_like(m, n)),
        (m[:-1], m[1:]),
        (m[1:], m[:-1]),
        (m, m),
        (m[:-2], m[2:]),
        (rng.integers(0, n + 1, 300), rng.integers(0, n + 1, 300)),
        (np.array([[0, 2], [3, 0]]), np.array([[n, 2], [1, 0]])),
    ]:
        got = cov.cov(a, b)
        assert got.shape == np.broadcast(a, b).shape
        np.testing.assert_allclose(got, ref[a, b], rtol=0, atol=1e-11 * np.abs(ref).max())
