"""Build a mechanism from its name and parameters (used by the release API and by loading).

The name is looked up in :mod:`treedp.mechanisms.registry`; no name is switched on here.
"""

from __future__ import annotations

from collections.abc import Sequence

from treedp.budget import Neighbours
from treedp.mechanisms.base import Mechanism
from treedp.mechanisms.registry import MECHANISMS, mechanism_class
from treedp.tree import TreeShape

__all__ = ["MECHANISMS", "make_mechanism"]


def make_mechanism(
    name: str,
    *,
    n_bins: int,
    epsilon: float | None,
    neighbours: Neighbours,
    n: int | None,
    shape: TreeShape | None = None,
    level_budgets: Sequence[float] | None = None,
    rho: float | None = None,
) -> Mechanism:
    """Return the mechanism ``name`` built and validated for these parameters: a pure
    ``epsilon`` (Laplace noise) or, with ``rho``, ρ-zCDP (Gaussian noise)
    (:meth:`~treedp.mechanisms.base.Mechanism.from_budget`)."""
    return mechanism_class(name).from_budget(
        n_bins,
        epsilon=epsilon,
        rho=rho,
        neighbours=neighbours,
        n=n,
        shape=shape,
        level_budgets=level_budgets,
    )
