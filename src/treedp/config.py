"""Turn the user's parameters into a validated mechanism and estimator (no data involved)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.estimation import check_estimator
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import Mechanism
from treedp.mechanisms.factory import MECHANISMS, make_mechanism
from treedp.tree import TreeShape, shape_for

__all__ = ["configure", "default_branching"]


def default_branching(n_bins: int, neighbours: Neighbours) -> tuple[int, ...]:
    """A good common fan-out for equal level budgets (the direct estimator's error).

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
    if mechanism not in MECHANISMS:
        raise InvalidParameterError(
            f"The 'mechanism' parameter must be one of {', '.join(map(repr, MECHANISMS))}. "
            f"Got {mechanism!r} instead."
        )
    est = check_estimator(estimator, mechanism)
    shape: TreeShape | None = None
    if mechanism == "tree":
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
