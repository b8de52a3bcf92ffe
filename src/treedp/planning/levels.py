"""A tree's levels as the planner sees them: weights, smooth and exact variances, budgets
(every noise-dependent number from the :class:`~treedp.noise.families.BudgetedFamily`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.tree import level_l2_squared, level_sensitivities
from treedp.noise.families import BudgetedFamily, noise_family

__all__ = [
    "budgets_from",
    "level_variances",
    "level_variances_or_none",
    "level_weights",
    "proxy_variances",
    "rule_budgets",
    "smooth_variances",
]

Family = type[BudgetedFamily]


def _sensitivities(height: int, neighbours: str) -> list[tuple[int, int]]:
    """``(L1, L2²)`` per level, root first (the tree's own derivation)."""
    nb: Neighbours = "replace" if neighbours == "replace" else "add_remove"
    l1 = [d for d, _ in level_sensitivities(height, nb)]
    return list(zip(l1, level_l2_squared(height, nb), strict=True))


def level_weights(height: int, neighbours: str, family: Family) -> list[float]:
    """Per level, root first, the family's weight (``L1²`` Laplace, ``L2²`` Gaussian); 0 for
    an exact level."""
    return [family.weight(l1, sq) for l1, sq in _sensitivities(height, neighbours)]


def proxy_variances(
    budgets: Sequence[float], weights: Sequence[float], family: Family
) -> tuple[float, ...]:
    """The smooth variance of each level (``2 L1²/ε_l²`` Laplace, ``L2²/(2ρ_l)`` Gaussian); 0
    for an exact level, ``inf`` for a level switched off."""
    return tuple(
        (family.proxy_variance(d, b) if b > 0 else math.inf) if d != 0 else 0.0
        for b, d in zip(budgets, weights, strict=True)
    )


def level_variances(budgets: Sequence[float], neighbours: str, family: Family) -> tuple[float, ...]:
    """Exact per-level variances: the tree's sensitivities, the noise family's variance."""
    return tuple(
        (family.calibrated(l1, sq, b).variance() if b > 0 else math.inf) if l1 > 0 else 0.0
        for (l1, sq), b in zip(_sensitivities(len(budgets) - 1, neighbours), budgets, strict=True)
    )


def level_variances_or_none(
    budgets: Sequence[float], neighbours: str, family: Family
) -> tuple[float, ...] | None:
    """:func:`level_variances`, or None where a level's budget is too small for exact noise."""
    try:
        return level_variances(budgets, neighbours, family)
    except InvalidParameterError:
        return None


def smooth_variances(budgets: np.ndarray, neighbours: str, noise: str) -> tuple[float, ...]:
    """The smooth variances of ``noise``'s family (by key) for a tree's level budgets."""
    family = noise_family(noise)
    weights = level_weights(len(budgets) - 1, neighbours, family)
    return proxy_variances([float(b) for b in budgets], weights, family)


def budgets_from(weights: np.ndarray, epsilon: float, neighbours: str) -> np.ndarray:
    """Budgets ``∝ weights`` adding up to ``epsilon`` (the root's 0 under ``replace``)."""
    w = np.asarray(weights, dtype=np.float64).copy()
    if neighbours == "replace":
        w[0] = 0.0
    budgets: np.ndarray = epsilon * w / w.sum()
    return budgets


def rule_budgets(branching: tuple[int, ...], eps: float, nb: str, power: float) -> np.ndarray:
    """Budgets ``∝ (k_l - 1)^power`` below the root (the root gets their mean)."""
    below = [(k - 1) ** power for k in branching]
    return budgets_from(np.array([float(np.mean(below or [1.0])), *below]), eps, nb)
