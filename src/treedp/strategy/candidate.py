"""The strategy as a planner candidate: exact error from public parameters, no optimisation.

:func:`plan_candidate` is what :class:`treedp.mechanisms.strategy.StrategyMechanism` offers the
planner (:meth:`~treedp.mechanisms.base.Mechanism.plan_candidate`). It only scores
strategies shipped with treedp (planning must stay fast: it never optimises), pure ε-DP
(Laplace noise) and ``add_remove``. Under ``replace`` the shipped (add/remove-optimised)
strategies lose to the planner's tree at every shipped ``B`` (mean prefix MSE at ε = 1:
177.6 vs 158.6 at B = 256, 240.9 vs 229.8 at 512, 316.9 vs 314.6 at 1024, 427.7 vs 412.0 at
2048, 585.3 vs 526.3 at 4096: moving a record changes two identity rows, doubling the
sensitivity, while the tree's root is exact), and their exact replace sensitivity costs up to
0.4 s (a search over pairs of bins), so the planner does not score them there;
``mechanism="strategy"`` still releases under ``replace``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.noise import noise_scale
from treedp.noise.families import DiscreteLaplace, noise_family
from treedp.strategy.model import Strategy, StrategyCovariance
from treedp.strategy.store import padded_strategy, shipped_size, shipped_strategy
from treedp.tree.candidate import PlanCandidate

__all__ = ["plan_candidate", "strategy_errors", "workload_error"]

_PLURAL = {"prefix": "prefixes", "range": "ranges"}


def strategy_errors(strategy: Strategy, epsilon: float, neighbours: str) -> dict[str, float]:
    """Exact ``mean_cdf_mse`` (mean of ``Var(P[m])``, ``m = 1..B``), ``max_cdf_variance`` and
    ``range_mse`` (mean of ``Var(P[b] - P[a])``, ``0 <= a < b <= B``) of a strategy release.
    """
    cov = _covariance(strategy, epsilon, neighbours)
    variance, b = cov.variance, strategy.n_bins
    var = cov.prefix_variances()
    # Var(Σ_m P[m]) over m = 0..B, from the factorised covariance (O(B p))
    u, h = strategy._factors()[:2]
    m = np.arange(b + 1)
    total = float(np.sum(u * (2 * (b - m) + 1))) - float(np.sum(h.sum(axis=0) ** 2))
    c = cov._c
    if c is not None:
        total -= float(c.sum()) ** 2 / float(c[-1])
    var_sum = variance * total
    pairs = b * (b + 1) / 2
    return {
        "mean_cdf_mse": float(var[1:].mean()),
        "max_cdf_variance": float(var.max()),
        "range_mse": float(((b + 1) * var.sum() - var_sum) / pairs),
    }


def workload_error(strategy: Strategy, epsilon: float, neighbours: str, workload: Any) -> float:
    """Exact mean of ``Var(P[hi] - P[lo])`` over an explicit workload's ranges
    (:class:`treedp.planning.Workload`) for a strategy release: ``O(p)`` per range from
    :class:`StrategyCovariance`."""
    return float(workload.mean_variance(_covariance(strategy, epsilon, neighbours)))


def _covariance(strategy: Strategy, epsilon: float, neighbours: str) -> StrategyCovariance:
    """The exact prefix covariance of a strategy release at ``epsilon`` (Laplace noise)."""
    l1, _ = strategy.sensitivity(neighbours)
    variance = DiscreteLaplace(noise_scale(l1, epsilon)).variance()
    return StrategyCovariance(strategy, variance, neighbours == "replace")


def plan_candidate(
    n_bins: int,
    budget: float,
    neighbours: str,
    noise: str,
    objective: str,
    *,
    workload: Any = None,
    padded: bool = False,
) -> PlanCandidate | None:
    """A :class:`treedp.planning.PlanCandidate` for the best shipped strategy, or None.

    Both shipped workloads (``"strategy"``: all prefixes, ``"strategy_range"``: all ranges)
    are scored exactly for ``objective`` and the better one is returned. With an explicit
    ``workload`` (a :class:`treedp.planning.Workload`) both are scored exactly on its ranges
    instead (:func:`workload_error`) and ``value`` is that error. ``padded``: instead, where no
    strategy ships for ``B``, the next shipped size's prefix strategy on its first ``B`` bins
    (``"strategy_padded"``, :func:`treedp.strategy.store.padded_strategy`).
    """
    if noise_family(noise) is not DiscreteLaplace or neighbours != "add_remove":
        return None
    key = {"cdf_mse": "mean_cdf_mse", "range_mse": "range_mse", "max_variance": "max_cdf_variance"}
    offers = []
    kinds: tuple[tuple[str, str], ...] = (("strategy", "prefix"), ("strategy_range", "range"))
    if padded:
        kinds = () if shipped_size(n_bins) == n_bins else (("strategy_padded", "padded"),)
    for name, kind in kinds:
        strategy = padded_strategy(n_bins) if padded else shipped_strategy(n_bins, kind)
        if strategy is not None:
            errors = strategy_errors(strategy, budget, neighbours)
            if workload is None:
                value = errors[key[objective]]
            else:
                value = workload_error(strategy, budget, neighbours, workload)
            offers.append((value, name, strategy, errors))
    if not offers:
        return None
    value, name, strategy, errors = min(offers, key=lambda offer: offer[0])  # ties: the first
    rows, what = strategy.aggregates.shape[0], _PLURAL[strategy.workload]
    how = f"optimised p-Identity strategy for all {what} (p={rows}, least squares)"
    if padded:
        how = f"shipped p-Identity strategy on the first {n_bins} of its bins (p={rows})"
    return PlanCandidate(
        name, (n_bins,), (budget,), value, how, errors["mean_cdf_mse"], errors["max_cdf_variance"]
    )
