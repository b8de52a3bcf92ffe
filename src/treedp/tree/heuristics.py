"""A good tree shape from public parameters alone, without the planner (:func:`treedp.plan`,
which chooses shapes and budgets together and usually does better)."""

from __future__ import annotations

import numpy as np

from treedp._aliases import accepts_aliases
from treedp.noise.families import DiscreteLaplace, noise_family
from treedp.tree.shape import shape_for

__all__ = ["default_branching"]


@accepts_aliases
def default_branching(
    n_bins: int, neighbours: str, noise: str = DiscreteLaplace.key
) -> tuple[int, ...]:
    """A good common fan-out for equal level budgets (the direct estimator's error).

    Used when a tree's level budgets are given without its shape, and by DAWA's bucket tree
    built without a planner; otherwise the planner (:func:`treedp.plan`) chooses both.

    Parameters
    ----------
    n_bins : int
        The number of bins ``B``.
    neighbours : {"add_remove", "replace"}
        The neighbour relation (under ``replace`` the root is exact, not noised).
    noise : str, default="laplace"
        The noise family's key: how fast the per-level variance grows with the number of
        noised levels ``L`` (its ``exponent``: ``(L/ε)²`` for Laplace, ``L/(2ρ)`` for
        Gaussian noise).

    Returns
    -------
    tuple of int
        Among every common fan-out ``k`` from 2 to 64 (height ``ceil(log_k B)``) and the flat
        tree, the one with the smallest mean prefix variance (the mean covering size
        ``Σ_l E[d_l]`` times the per-level variance), from public parameters only.
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
