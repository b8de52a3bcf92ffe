"""Turn the user's parameters into a validated mechanism and estimator (no data involved)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.estimation import check_estimator
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import Mechanism
from treedp.mechanisms.factory import MECHANISMS, make_mechanism
from treedp.planning import Plan, plan
from treedp.tree import TreeShape, shape_for

__all__ = ["ALL_MECHANISMS", "cached_plan", "configure", "default_branching"]

#: What ``release_cdf(mechanism=...)`` accepts: ``"auto"`` lets the planner choose.
ALL_MECHANISMS = ("auto", *MECHANISMS)


@lru_cache(maxsize=64)
def cached_plan(n_bins: int, epsilon: float, neighbours: str, estimator: str) -> Plan:
    """The planner's choice for these public parameters (cached: it depends on nothing else)."""
    return plan(n_bins, epsilon=epsilon, neighbours=neighbours, estimator=estimator)  # type: ignore[arg-type]


def default_branching(n_bins: int, neighbours: Neighbours) -> tuple[int, ...]:
    """A good common fan-out for equal level budgets (the direct estimator's error).

    Used when a tree's level budgets are given without its shape; otherwise the planner
    (:func:`treedp.plan`) chooses both.

    Tries every common fan-out ``k`` from 2 to 64 (height ``ceil(log_k B)``) and the flat
    tree, and returns the one with the smallest mean prefix variance: the mean covering size
    ``Σ_l E[d_l]`` times the per-level variance, which grows as the square of the number of
    noised levels. This depends only on public parameters.
    """
    if n_bins == 1:
        return () if neighbours == "add_remove" else (2,)
    m = np.unique(np.linspace(0, n_bins - 1, num=min(n_bins, 4096)).astype(np.int64))
    best: tuple[float, tuple[int, ...]] | None = None
    for k in [*range(2, min(n_bins, 64) + 1), n_bins]:
        shape = shape_for(n_bins, k)
        noised = shape.height + (1 if neighbours == "add_remove" else 0)
        digits = shape.prefix_digits(m)[:, 1:].sum(axis=1).mean()
        cost = float(digits) * noised**2
        if best is None or cost < best[0] - 1e-12:
            best = (cost, shape.branching)
    assert best is not None
    return best[1]


def configure(
    n_bins: int,
    *,
    epsilon: float,
    neighbours: Neighbours,
    n: int | None,
    mechanism: str,
    branching: int | Sequence[int] | None,
    level_budgets: Sequence[float] | None,
    estimator: str | None,
) -> tuple[Mechanism, str]:
    """Validate every parameter and build the mechanism; returns it and the estimator name."""
    eps = check_epsilon(epsilon)
    nb, n_public = check_neighbours(neighbours, n)
    if mechanism not in ALL_MECHANISMS:
        raise InvalidParameterError(
            f"The 'mechanism' parameter must be one of {', '.join(map(repr, ALL_MECHANISMS))}. "
            f"Got {mechanism!r} instead."
        )
    if mechanism == "auto" and (branching is not None or level_budgets is not None):
        mechanism = "tree"  # an explicit shape or budget split means a tree
    est = check_estimator(estimator, "tree" if mechanism == "auto" else mechanism)
    shape: TreeShape | None = None
    if mechanism in ("auto", "tree") and branching is None and level_budgets is None:
        if nb == "replace" and n_bins == 1:
            shape = shape_for(1, 2)  # refused below with the single-bin message
        else:
            chosen_plan = cached_plan(n_bins, eps, nb, est)
            if mechanism == "auto" and chosen_plan.mechanism == "histogram":
                mechanism = "histogram"
            else:
                mechanism = "tree"
                best = next(c for c in chosen_plan.alternatives if c.mechanism == "tree")
                shape = TreeShape(n_bins, best.branching)
                level_budgets = best.level_budgets[1:] if nb == "replace" else best.level_budgets
    elif mechanism in ("auto", "tree"):
        mechanism = "tree"
        chosen = default_branching(n_bins, nb) if branching is None else branching
        shape = shape_for(n_bins, chosen)
    elif branching is not None:
        raise InvalidParameterError(
            f"The 'branching' parameter applies to mechanism='tree' only, not {mechanism!r}."
        )
    mech = make_mechanism(
        mechanism,
        n_bins=n_bins,
        epsilon=eps,
        neighbours=nb,
        n=n_public,
        shape=shape,
        level_budgets=level_budgets,
    )
    return mech, est
