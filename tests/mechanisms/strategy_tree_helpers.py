"""Shared by the ``strategy_tree`` tests: the dense matrix of a structure, its exact per-part
sensitivities by brute force, and the Laplace kurtosis used by the simulation tests."""

from __future__ import annotations

import itertools

import numpy as np

from treedp.strategy.blocked import BlockedStrategy

__all__ = ["brute", "dense", "kurtosis"]


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


def kurtosis(scale: float) -> float:
    k = np.arange(-int(60 * scale) - 60, int(60 * scale) + 61, dtype=np.float64)
    p = np.exp(-np.abs(k) / scale)
    p /= p.sum()
    return float((p * k**4).sum() / (p * k**2).sum() ** 2)
