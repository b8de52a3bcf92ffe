"""A tree's levels as the planner sees them: weights, smooth and exact variances, budgets
(every noise-dependent number from the :class:`~treedp.noise.families.BudgetedFamily`), and
the searches for free level budgets (:mod:`treedp.planning` has the method): the
stationarity iteration on a smooth (:func:`tune_free`) or exact (:func:`exact_polish`)
objective, and a compass search for the non-smooth worst prefix. No scipy."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.tree import level_l2_squared, level_sensitivities
from treedp.noise.families import BudgetedFamily, noise_family
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "TUNE_TOLERANCE",
    "budgets_from",
    "compass",
    "exact_polish",
    "level_variances",
    "level_variances_or_none",
    "level_weights",
    "proxy_variances",
    "rule_budgets",
    "smooth_variances",
    "tune_free",
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


#: The tuner stops when a step improves the objective by less than this, relatively.
TUNE_TOLERANCE = 1e-6


def _active(budgets: list[float], weights: list[float]) -> list[int]:
    """The tuned levels: a positive budget and sensitivity (the others are exact or off)."""
    return [lv for lv, (b, d) in enumerate(zip(budgets, weights, strict=True)) if b > 0 and d > 0]


def _scaled(values: list[float], total: float) -> list[float]:
    norm = math.fsum(values)
    return [total * v / norm for v in values]


def tune_free(
    start: list[float],
    total: float,
    weights: list[float],
    family: Family,
    objective: Callable[[tuple[float, ...]], float],
    iterations: int,
    step: float = 1.0,
) -> tuple[float, tuple[float, ...]]:
    """Free level budgets by the stationarity condition: the best iterate and its value.

    Each step sets
    ``b_l ∝ (d_l ∂f/∂σ_l²)^p``, normalised to ``total`` (derivatives by forward differences,
    relative step 1e-6); its fixed point is the KKT point. Undamped it converges in a few
    steps; ``step < 1`` moves part of the way in logs (for non-smooth objectives). It stops
    when a step gains less than :data:`TUNE_TOLERANCE` relatively.
    """
    power = family.rule_power
    active = _active(start, weights)
    budgets = _scaled(start, total)
    variances = proxy_variances(budgets, weights, family)
    current = objective(variances)
    best = (current, tuple(budgets))
    if len(active) < 2:
        return best
    for _ in range(iterations):
        targets = [0.0] * len(budgets)
        for lv in active:
            up = list(variances)
            delta = 1e-6 * variances[lv]
            up[lv] += delta
            grad = (objective(tuple(up)) - current) / delta
            targets[lv] = (weights[lv] * max(grad, 1e-300)) ** power
        norm = math.fsum(targets)
        if not math.isfinite(norm) or norm <= 0:
            break
        if step == 1.0:
            budgets = _scaled(targets, total)
        else:  # geometrically part of the way
            moved = [
                b ** (1 - step) * (total * t / norm) ** step if t > 0 else 0.0
                for b, t in zip(budgets, targets, strict=True)
            ]
            budgets = _scaled(moved, total)
        variances = proxy_variances(budgets, weights, family)
        value = objective(variances)
        gain = current - value
        current = value
        if value < best[0]:
            best = (value, tuple(budgets))
        if gain < TUNE_TOLERANCE * value:
            break
    return best


def exact_polish(
    candidate: PlanCandidate,
    total: float,
    weights: list[float],
    family: Family,
    exact_score: Callable[[tuple[float, ...]], float],
    iterations: int = 3,
) -> tuple[float, tuple[float, ...]]:
    """A few steps ``b_l ← b_l (-∂f/∂b_l)^p`` on the exact objective, normalised (the map of
    :func:`tune_free`), by forward differences with relative step 1e-5 (the exact noise
    scales have denominators up to 2^20, far finer): the best iterate."""
    power = family.rule_power
    budgets = list(candidate.level_budgets)
    active = _active(budgets, weights)
    best = (candidate.value, tuple(budgets))
    if len(active) < 2:
        return best
    current = candidate.value
    for _ in range(iterations):
        moved = list(budgets)
        for lv in active:
            up = list(budgets)
            delta = 1e-5 * budgets[lv]
            up[lv] += delta
            slope = (current - exact_score(tuple(up))) / delta
            if not slope > 0:
                return best
            moved[lv] = budgets[lv] * slope**power
        budgets = _scaled(moved, total)
        current = exact_score(tuple(budgets))
        if current < best[0]:
            best = (current, tuple(budgets))
        else:
            break
    return best


def compass(
    start: list[float],
    total: float,
    weights: list[float],
    family: Family,
    objective: Callable[[tuple[float, ...]], float],
    max_evals: int,
) -> tuple[float, tuple[float, ...]]:
    """Compass search for a non-smooth objective: each trial multiplies one level's budget by
    ``e^{±s}`` and renormalises; ``s`` halves (0.5 down to 1/64) after a round without gain."""
    active = _active(start, weights)
    budgets = _scaled(start, total)
    best = objective(proxy_variances(budgets, weights, family))
    evals, size = 1, 0.5
    while evals < max_evals and size >= 1 / 64 and len(active) >= 2:
        improved = False
        for lv in active:
            for sign in (1.0, -1.0):
                trial = list(budgets)
                trial[lv] *= math.exp(sign * size)
                trial = _scaled(trial, total)
                value = objective(proxy_variances(trial, weights, family))
                evals += 1
                if value < best:
                    best, budgets, improved = value, trial, True
                    break
            if evals >= max_evals:
                break
        if not improved:
            size /= 2
    return best, tuple(budgets)
