"""Shared by the ``strategy_tree`` tests: the dense matrix of a structure, its exact per-part
sensitivities by brute force, the checks of the covariance against dense least squares and of
the claimed sensitivities against the brute force, and the Laplace kurtosis used by the
simulation tests."""

from __future__ import annotations

import itertools

import numpy as np

from tests.stats import TEST_SEED
from treedp.mechanisms.strategy_tree import StrategyTreeMechanism
from treedp.strategy.blocked import BlockedCovariance, BlockedStrategy

__all__ = ["brute", "check_dense_least_squares", "check_sensitivities", "dense", "kurtosis"]


def dense(structure: BlockedStrategy) -> np.ndarray:
    """The dense matrix of every released row (top, the levels, the inner strategy)."""
    b, k = structure.block, structure.n_blocks
    rows = [structure.top.matrix() @ np.kron(np.eye(k), np.ones((1, b)))]
    for c in structure.levels:
        rows.append(np.kron(np.eye(k * b // c), np.ones((1, c))))
    if structure.inner is not None:  # block after block: [diag(d) x_k; A x_k]
        rows.append(np.kron(np.eye(k), structure.inner.matrix()))
    return np.vstack(rows)


def brute(structure: BlockedStrategy, relation: str) -> list[int]:
    """The largest L1 change of each part over every dataset of at most two records and
    each of its neighbours."""
    b = structure.n_bins
    worst = [0] * len(structure.fractions)
    for size in range(3):
        for bins in itertools.combinations_with_replacement(range(b), size):
            x = np.bincount(np.array(bins, dtype=np.int64), minlength=b)
            moves = (
                [(None, k) for k in range(b)]
                if relation == "add_remove"
                else [(j, k) for j, k in itertools.permutations(range(b), 2) if x[j] > 0]
            )
            for j, k in moves:
                y = x.copy()
                y[k] += 1
                if j is not None:
                    y[j] -= 1
                for i, (p, q) in enumerate(
                    zip(structure.parts(x), structure.parts(y), strict=True)
                ):
                    worst[i] = max(worst[i], int(np.abs(q - p).sum()))
    return worst


def check_dense_least_squares(structure: BlockedStrategy, n_public: bool, n_bins: int) -> None:
    """The exact covariance, variances and least-squares estimate of ``structure`` (the first
    ``n_bins`` of its bins real, the rest padding) equal the dense computation (1e-10 / 1e-9),
    with and without a public ``n``, and with leading batch axes."""
    rng = np.random.default_rng(TEST_SEED)
    variances = [5.0, 2.0, 3.0, 1.5][: len(structure.fractions)]
    cov = BlockedCovariance(structure, variances, n_public, n_bins)
    full = structure.n_bins
    x = np.concatenate([rng.integers(0, 10, n_bins), np.zeros(full - n_bins, np.int64)])
    exact = structure.parts(x)
    w = dense(structure)
    assert np.array_equal(np.concatenate(exact), w @ x)  # the parts are the dense rows
    parts = [p + rng.normal(0, np.sqrt(v), p.size) for p, v in zip(exact, variances, strict=True)]
    weights = np.concatenate(
        [np.full(p.size, 1 / v) for p, v in zip(exact, variances, strict=True)]
    )
    inv = np.linalg.inv(w.T @ (weights[:, None] * w))
    pm = np.vstack([np.zeros(full), np.tril(np.ones((full, full)))])[: n_bins + 1]
    dense_cov = pm @ inv @ pm.T
    dense_est = pm @ inv @ (w.T @ (weights * np.concatenate(parts)))
    n = int(x.sum()) if n_public else None
    if n_public:
        c = dense_cov[:, -1]
        dense_cov = dense_cov - np.outer(c, c) / c[-1]
        dense_est = dense_est - c / c[-1] * (dense_est[-1] - n)
    m = np.arange(n_bins + 1)
    assert np.allclose(cov.cov(m[:, None], m[None, :]), dense_cov, atol=1e-10)
    assert np.allclose(cov.prefix_variances(), np.diag(dense_cov), atol=1e-10)
    assert np.allclose(cov.var(m), np.diag(dense_cov), atol=1e-10)
    assert np.allclose(cov.estimate(parts, n), dense_est, atol=1e-9)
    batch = [np.stack([p, 2 * p]) for p in parts]  # leading batch axes
    assert np.allclose(cov.estimate(batch, n)[0], dense_est, atol=1e-9)


def check_sensitivities(structure: BlockedStrategy, relation: str) -> None:
    """Each part's claimed sensitivity is the brute force's exact maximum, and the mechanism
    built on ``structure`` uses that claim."""
    claim = structure.part_sensitivities(relation)
    assert list(claim) == brute(structure, relation)
    n = 3 if relation == "replace" else None
    mech = StrategyTreeMechanism(
        structure.n_bins, epsilon=1.0, neighbours=relation, n=n, structure=structure
    )
    assert mech.block_sensitivity == claim


def kurtosis(scale: float) -> float:
    k = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61, dtype=np.float64)
    p = np.exp(-np.abs(k) / scale)
    p /= p.sum()
    return float((p * k**4).sum() / (p * k**2).sum() ** 2)
