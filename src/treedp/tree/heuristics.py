"""A good tree shape from public parameters alone, without the planner.

:func:`default_branching` picks the common fan-out for equal level budgets; the planner
(:func:`treedp.plan`) chooses shapes and budgets together and usually does better. Used when a
tree's budgets are given without its shape, and by DAWA's bucket tree when it is built without
a planner.
"""

from __future__ import annotations

import numpy as np

from treedp.noise.families import DiscreteLaplace, noise_family
from treedp.tree.shape import shape_for

__all__ = ["default_branching"]


def default_branching(
    n_bins: int, neighbours: str, noise: str = DiscreteLaplace.key
) -> tuple[int, ...]:
    """A good common fan-out for equal level budgets (the direct estimator's error).

    Used when a tree's level budgets are given without its shape; otherwise the planner
    (:func:`treedp.plan`) chooses both.

    Tries every common fan-out ``k`` from 2 to 64 (height ``ceil(log_k B)``) and the flat
    tree, and returns the one with the smallest mean prefix variance: the mean covering size
    ``Σ_l E[d_l]`` times the per-level variance, which grows as the square of the number of
    noised levels for Laplace noise (``(L/ε)²``) and as the number itself for Gaussian noise
    (``L/(2ρ)``: the L2² sensitivity of ``L`` levels is ``L``). This depends only on public
    parameters. The noise family says how fast (its ``exponent``).
    """
    exponent = noise_family(noise).exponent
    if n_bins == 1:
        return () if neighbours == "add_remove" else (2,)
    m = np.unique(np.linspace(0, n_bins - 1, num=min(n_bins, 4096)).astype(np.int64))
    best: tuple[float, tuple[int, ...]] | None = None
    for k in [*range(2, min(n_bins, 64) + 1), n_bins]:
        shape = shape_for(n_bins, k)
        noised = shape.height + (1 if neighbours == "add_remove" else 0)
        digits = shape.prefix_digits(m)[:, 1:].sum(axis=1).mean()
        cost = float(digits) * noised**exponent
        if best is None or cost < best[0] - 1e-12:
            best = (cost, shape.branching)
    assert best is not None
    return best[1]
