"""The level-uniform tree mechanism with per-level budgets."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from treedp.budget import Neighbours, check_epsilon, check_neighbours, split_budget
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.base import Mechanism, check_replace_bins
from treedp.tree import TreeShape

__all__ = ["TreeMechanism", "level_sensitivities"]


def level_sensitivities(height: int, neighbours: Neighbours) -> tuple[tuple[int, float], ...]:
    """``(L1, L2)`` sensitivity of each level vector, root first (see :class:`TreeMechanism`).

    ``add_remove``: ``(1, 1)`` at every level. ``replace``: ``(0, 0)`` at the exact root and
    ``(2, sqrt(2))`` below it. The planner reads these instead of re-deriving them.
    """
    if neighbours == "add_remove":
        return ((1, 1.0),) * (height + 1)  # |ancestors at each level| = 1, changed by 1
    return ((0, 0.0),) + ((2, math.sqrt(2.0)),) * height  # root = public n; -1 and +1 below


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
        Budget per level, top-down, summing to ``epsilon``: ``h + 1`` values, root first,
        the convention :attr:`level_budgets` and :attr:`treedp.Plan.level_budgets` return.
        Under ``"replace"`` the root is exact, so its entry must be 0 (the ``h`` values of
        the levels below the root alone are accepted too). Default: an equal split.

    Notes
    -----
    Sensitivity derivation. Each record is counted in exactly one bin (values are clamped into
    the bins), hence in exactly one node per level: the ancestors of its leaf.

    * ``add_remove``: adding or removing one record changes one node per level by 1, so every
      level vector, the root included, has L1 sensitivity 1 and L2 sensitivity 1. Level
      ``l`` gets discrete Laplace noise of scale ``1/ε_l``. The size is private, so the root
      is noised too.
    * ``replace``: replacing one record's value decrements the ancestors of its old leaf and
      increments those of its new leaf. At any level below the root this is at most two
      nodes (one ``-1``, one ``+1``), so the L1 sensitivity per level is 2 and the L2
      sensitivity ``sqrt(1² + 1²) = sqrt(2)`` (both 0 when both leaves share the node);
      scale ``2/ε_l``. The root count is the public ``n`` and never changes:
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
        self.n_bins = shape.n_bins
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        h = shape.height
        check_replace_bins(self.neighbours, shape.n_bins)
        sens = level_sensitivities(h, self.neighbours)
        self.block_sensitivity = tuple(l1 for l1, _ in sens)
        self.block_l2 = tuple(l2 for _, l2 in sens)
        if self.neighbours == "add_remove":
            self.block_epsilons = split_budget(self.epsilon, h + 1, level_budgets)
        else:
            below = _strip_exact_root(level_budgets, h)
            self.block_epsilons = (0.0, *split_budget(self.epsilon, h, below))
        self._set_scales()

    @classmethod
    def from_parameters(
        cls,
        n_bins: int,
        *,
        epsilon: float,
        neighbours: Neighbours,
        n: int | None,
        shape: TreeShape | None = None,
        level_budgets: Sequence[float] | None = None,
    ) -> TreeMechanism:
        """Build from the registry's common parameters (``shape`` is required)."""
        if shape is None or shape.n_bins != n_bins:
            raise InvalidParameterError("mechanism='tree' needs a tree shape over the bins.")
        return cls(shape, epsilon=epsilon, neighbours=neighbours, n=n, level_budgets=level_budgets)

    @property
    def level_budgets(self) -> tuple[float, ...]:
        """Budget per level, root first (0 for the exact root under ``replace``)."""
        return self.block_epsilons

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The true count of every stored node, one array per level, root first."""
        return self.shape.aggregate(counts)

    def _spend_parameters(self) -> dict[str, object]:
        return {**super()._spend_parameters(), "branching": self.shape.branching}


def _strip_exact_root(level_budgets: Sequence[float] | None, height: int) -> Sequence[float] | None:
    """Under ``replace``: accept ``h + 1`` budgets with a 0 root (the output convention)."""
    if level_budgets is None or isinstance(level_budgets, str):
        return level_budgets
    try:
        values = list(level_budgets)
    except TypeError:
        return level_budgets
    if len(values) == height + 1:
        root = values[0]
        if isinstance(root, bool) or not isinstance(root, int | float | np.integer | np.floating):
            return values  # refused by split_budget with the usual message
        if root != 0:
            raise InvalidParameterError(
                "With neighbours='replace' the root count is the public n and is released "
                "exactly: the first of the h + 1 'level_budgets' (the root's) must be 0. "
                f"Got {root!r}."
            )
        return values[1:]
    return values
