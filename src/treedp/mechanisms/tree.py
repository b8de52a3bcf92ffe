"""The level-uniform tree mechanism with per-level budgets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treedp.budget import Neighbours, check_epsilon, check_neighbours, split_budget
from treedp.mechanisms.base import Mechanism, check_replace_bins
from treedp.tree import TreeShape

__all__ = ["TreeMechanism"]


class TreeMechanism(Mechanism):
    """Noise every node of a level-uniform tree over the bins: pure ``epsilon``-DP.

    Parameters
    ----------
    shape : TreeShape
        The tree: ``B`` bins and the fan-out ``k_l`` of every level.
    epsilon : float
        The total budget.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation.
    n : int, optional
        The public dataset size; required with ``"replace"``, forbidden with ``"add_remove"``.
    level_budgets : sequence of float, optional
        Budget per noised level, top-down, summing to ``epsilon``: ``h + 1`` values (root
        first) under ``"add_remove"``, ``h`` values (level 1 first) under ``"replace"``.
        Default: an equal split.

    Notes
    -----
    Sensitivity derivation. Each record is counted in exactly one bin (values are clamped into
    the bins), hence in exactly one node per level: the ancestors of its leaf.

    * ``add_remove``: adding or removing one record changes one node per level by 1, so every
      level vector, the root included, has L1 sensitivity 1. Level ``l`` gets discrete Laplace
      noise of scale ``1/ε_l``. The size is private, so the root is noised too.
    * ``replace``: replacing one record's value decrements the ancestors of its old leaf and
      increments those of its new leaf. At any level below the root this is at most two
      nodes (one ``-1``, one ``+1``), so the L1 sensitivity per level is 2 (0 when both leaves
      share the node); scale ``2/ε_l``. The root count is the public ``n`` and never changes:
      sensitivity 0, released exactly.

    By composition over levels, the release is ``Σ_l ε_l <= epsilon``-DP. The exact rational
    scales are rounded up, so the loss actually spent (:meth:`epsilon_spent`) never exceeds
    ``epsilon``.

    References
    ----------
    .. [DNPR10] C. Dwork, M. Naor, T. Pitassi, G. Rothblum. "Differential privacy under
       continual observation". STOC 2010.
    .. [RTS24] V. Rameshwar, A. Tandon, A. Sharma. "Optimal tree-based mechanisms for
       differentially private approximate CDFs". arXiv:2409.18573.
    """

    name = "tree"

    def __init__(
        self,
        shape: TreeShape,
        *,
        epsilon: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        level_budgets: Sequence[float] | None = None,
    ) -> None:
        self.shape = shape
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        h = shape.height
        check_replace_bins(self.neighbours, shape.n_bins)
        if self.neighbours == "add_remove":
            self.block_epsilons = split_budget(self.epsilon, h + 1, level_budgets)
            self.block_sensitivity = (1,) * (h + 1)  # |ancestors at each level| = 1
        else:
            self.block_epsilons = (0.0, *split_budget(self.epsilon, h, level_budgets))
            self.block_sensitivity = (0,) + (2,) * h  # root = public n; -1 and +1 below
        self._set_scales()

    @property
    def level_budgets(self) -> tuple[float, ...]:
        """Budget per level, root first (0 for the exact root under ``replace``)."""
        return self.block_epsilons

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The true count of every stored node, one array per level, root first."""
        return self.shape.aggregate(counts)
