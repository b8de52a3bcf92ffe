"""The planner of a stream: level budgets and the mechanism, from public parameters only.

Every score is the exact mean over the steps ``t = 1..T`` of the per-step variance of the
running count: for a tree ``Σ_l a_l·w_l`` with ``a_l`` the mean base-``k`` digit of level ``l``
(:func:`mean_digits`, exact integer arithmetic) and ``w_l`` Honaker's online variances; for the
square root the mean of its exact ``Var(t)``. Level budgets are tuned on the families' smooth
proxy variances (``2m²/ε_l²``, ``m²/(2ρ_l)``), starting from the closed-form rule
``b_l ∝ a_l**rule_power``; the chosen mechanism is then scored with the exact discrete
variances. Nothing here reads data.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import minimize

from treedp.continual.tree import TreeCounter, levels_for, online_variances
from treedp.noise.families import NOISES
from treedp.noise.rational import float_at_least

__all__ = ["FANOUTS", "classic_tree", "mean_digits", "mean_variance", "planned_tree"]

#: The fan-outs the planner tries.
FANOUTS = tuple(range(2, 17))
#: A level whose tuned share falls below this is switched off (level 0 never is).
_OFF = 1e-3


def mean_digits(horizon: int, k: int) -> list[float]:
    """``a_l``: the mean over ``t = 1..T`` of the ``l``-th base-``k`` digit of ``t`` (exact)."""
    out = []
    for level in range(levels_for(horizon, k)):
        p, q = k**level, k ** (level + 1)
        n = horizon + 1  # t = 0..T (t = 0 adds nothing)
        full, rem = divmod(n, q)
        total = full * p * k * (k - 1) // 2
        d, r = divmod(rem, p)
        total += p * d * (d - 1) // 2 + r * d
        out.append(float(Fraction(total, horizon)))
    return out


def mean_variance(counter: Any) -> float:
    """The exact mean over ``t = 1..T`` of the counter's per-step variance (one bin)."""
    if isinstance(counter, TreeCounter):
        a = np.asarray(mean_digits(counter.horizon, counter.k))
        w = np.asarray(online_variances(counter.k, counter.node_variances()))
        return float(a @ w)
    return float(np.mean(counter.variances(np.arange(1, counter.horizon + 1))))


def _exact_tree(
    horizon: int, k: int, noise: str, shares: np.ndarray, budget: float, m: int
) -> TreeCounter:
    """The tree with these budget shares, its exact loss at most ``budget``."""
    cls = NOISES[noise]
    shrink = 1.0 - 1e-9
    while True:
        params = tuple(
            None if s == 0 else cls.calibrated(m, m * m, float(s) * budget * shrink).parameter
            for s in shares
        )
        tree = TreeCounter(horizon, k, noise, params, m)
        if float_at_least(tree.loss()) <= budget:
            return tree
        shrink *= 1.0 - 1e-6  # pragma: no cover - float rounding of the shares


def classic_tree(horizon: int, noise: str, budget: float, m: int = 1) -> TreeCounter:
    """The seeds' binary tree: ``log2 T + 1`` levels, equal budgets."""
    levels = levels_for(horizon, 2)
    return _exact_tree(horizon, 2, noise, np.full(levels, 1.0 / levels), budget, m)


def _proxy_mean(shares: np.ndarray, a: np.ndarray, k: int, noise: str, m: int) -> float:
    cls = NOISES[noise]
    weight = cls.weight(m, m * m)
    v = [cls.proxy_variance(weight, float(s)) if s > 1e-12 else np.inf for s in shares]
    return float(a @ np.asarray(online_variances(k, v)))


def _tuned_shares(horizon: int, k: int, noise: str, m: int) -> np.ndarray:
    a = np.asarray(mean_digits(horizon, k))
    start = a ** NOISES[noise].rule_power
    start /= start.sum()

    def objective(theta: np.ndarray) -> float:
        e = np.exp(theta - theta.max())
        return _proxy_mean(e / e.sum(), a, k, noise, m)

    res = minimize(objective, np.log(start), method="L-BFGS-B")
    theta = res.x if res.fun <= objective(np.log(start)) else np.log(start)
    shares = np.exp(theta - theta.max())
    shares /= shares.sum()
    shares[1:][shares[1:] < _OFF] = 0.0
    return np.asarray(shares / shares.sum())


def planned_tree(
    horizon: int, noise: str, budget: float, m: int = 1, k: int | None = None
) -> TreeCounter:
    """The k-ary tree (``k`` given, or the best of :data:`FANOUTS`) with tuned level budgets."""
    fanouts = (k,) if k is not None else tuple(f for f in FANOUTS if f <= max(2, horizon))
    best: TreeCounter | None = None
    best_score = np.inf
    for f in fanouts:
        tree = _exact_tree(horizon, f, noise, _tuned_shares(horizon, f, noise, m), budget, m)
        score = mean_variance(tree)
        if score < best_score:
            best, best_score = tree, score
    assert best is not None
    return best
