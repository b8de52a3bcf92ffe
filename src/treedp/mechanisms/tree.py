"""The level-uniform tree mechanism with per-level budgets (discrete Laplace or Gaussian)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import Neighbours, check_neighbours, split_budget
from treedp.estimation.covariance import (
    DirectTreeCovariance,
    EfficientTreeCovariance,
    PrefixCovariance,
)
from treedp.estimation.direct import tree_prefix
from treedp.estimation.efficient import VariancePlan, efficient_prefix
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.base import CalibratedMechanism, check_replace_bins, zcdp_description
from treedp.noise.families import (
    MAX_RHO,
    MIN_RHO,
    DiscreteGaussian,
    DiscreteLaplace,
    budgeted,
    check_rho,
)
from treedp.tree import TreeShape

__all__ = [
    "MAX_RHO",
    "MIN_RHO",
    "TreeMechanism",
    "check_rho",
    "level_l2_squared",
    "level_sensitivities",
]


def level_sensitivities(height: int, neighbours: Neighbours) -> tuple[tuple[int, float], ...]:
    """``(L1, L2)`` sensitivity of each level vector, root first (see :class:`TreeMechanism`).

    ``add_remove``: ``(1, 1)`` at every level. ``replace``: ``(0, 0)`` at the exact root and
    ``(2, sqrt(2))`` below it. The planner reads these instead of re-deriving them.
    """
    return tuple((l1, math.sqrt(sq)) for l1, sq in _sensitivity_data(height, neighbours))


def level_l2_squared(height: int, neighbours: Neighbours) -> tuple[int, ...]:
    """The exact squared L2 sensitivity of each level vector, root first (integers).

    ``add_remove``: 1 at every level; ``replace``: 0 at the exact root and 2 below it.
    """
    return tuple(sq for _, sq in _sensitivity_data(height, neighbours))


def _sensitivity_data(height: int, neighbours: Neighbours) -> tuple[tuple[int, int], ...]:
    """``(L1, L2²)`` per level, root first: the one place the derivation is encoded."""
    if neighbours == "add_remove":
        return ((1, 1),) * (height + 1)  # |ancestors at each level| = 1, changed by 1
    return ((0, 0),) + ((2, 2),) * height  # root = public n; -1 and +1 below


class TreeMechanism(CalibratedMechanism):
    """Noise every node of a level-uniform tree over the bins: pure ε-DP or ρ-zCDP.

    Parameters
    ----------
    shape : TreeShape
        The tree: ``B`` bins and the fan-out ``k_l`` of every level.
    epsilon : float, optional
        The total pure-DP budget: discrete Laplace noise. Exactly one of ``epsilon`` and
        ``rho`` is given.
    rho : float, optional
        The total zCDP budget: discrete Gaussian noise.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation.
    n : int, optional
        The public dataset size; required with ``"replace"``, forbidden with ``"add_remove"``.
    level_budgets : sequence of float, optional
        Budget per level (ε_l, or ρ_l with ``rho``), top-down, summing to the total: ``h + 1``
        values, root first, the convention :attr:`level_budgets` and
        :attr:`treedp.Plan.level_budgets` return. Under ``"replace"`` the root is exact, so
        its entry must be 0 (the ``h`` values of the levels below the root alone are accepted
        too). Default: an equal split.

    Notes
    -----
    Sensitivity derivation. Each record is counted in exactly one bin (values are clamped into
    the bins), hence in exactly one node per level: the ancestors of its leaf.

    * ``add_remove``: adding or removing one record changes one node per level by 1, so every
      level vector, the root included, has L1 sensitivity 1 and L2 sensitivity 1 (L2² = 1).
      The size is private, so the root is noised too. Over the whole release of ``L = h + 1``
      noised levels the L2² sensitivity is ``L``: one changed node per level.
    * ``replace``: replacing one record's value decrements the ancestors of its old leaf and
      increments those of its new leaf. At a level where the two leaves have different
      ancestors this is two nodes (one ``-1``, one ``+1``): L1 = 2 and L2² = 1² + 1² = 2
      (L2 = sqrt(2)); where they share the ancestor nothing changes. The worst case (leaves in
      different children of the root) differs at every level below the root, so the per-level
      maxima are attained together: L1 = 2, L2² = 2 per level, L2² = 2h over the release. The
      root count is the public ``n`` and never changes: sensitivity 0, released exactly.

    These per-level values are data: :attr:`block_sensitivity` (L1), :attr:`block_l2` and
    :attr:`block_l2_squared` (exact integers), and ``tests/mechanisms/test_gaussian_tree.py``
    enumerates every neighbouring pair of small trees to check they are attained and never
    exceeded.

    *Laplace* (``epsilon``): level ``l`` gets discrete Laplace noise of scale
    ``t_l >= Δ1_l/ε_l``, which is ``Δ1_l/t_l <= ε_l``-DP; by composition over levels the
    release is ``Σ_l ε_l <= epsilon``-DP (:meth:`epsilon_spent`, exact).

    *Gaussian* (``rho``): level ``l`` gets discrete Gaussian noise with rational variance
    parameter ``σ_l² >= Δ2_l²/(2ρ_l)`` (rounded up to a denominator ``2**20``), which is
    ``ρ'_l = Δ2_l²/(2σ_l²) <= ρ_l``-zCDP (Canonne, Kamath & Steinke 2020, Thm 14); zCDP
    composes additively, so the release is ``Σ_l ρ'_l <= rho``-zCDP (:meth:`rho_spent`,
    exact). :attr:`epsilon` is then ``inf``: Gaussian noise has no finite pure-ε bound; the
    tight (ε, δ) statement is ``guarantee.to_approx(delta)``.

    *Levels switched off.* A ``level_budgets`` entry of exactly 0 on a noised level (the root
    under ``add_remove``, or any level between the root and the leaves; the leaves must be
    measured) switches that level off: it is not
    measured, its entries are published as 0 whatever the data (a constant: sensitivity 0,
    no budget), and the estimators treat its variance as ``inf`` (no information; the root's
    ``n`` is then estimated from the levels below). A middle level switched off is the same
    linear model as merging its fan-out with the next one's. :attr:`off_levels` lists them.

    References
    ----------
    .. [DNPR10] C. Dwork, M. Naor, T. Pitassi, G. Rothblum. "Differential privacy under
       continual observation". STOC 2010.
    .. [RTS24] V. Rameshwar, A. Tandon, A. Sharma. "Optimal tree-based mechanisms for
       differentially private approximate CDFs". arXiv:2409.18573.
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for differential
       privacy". NeurIPS 2020.
    """

    name = "tree"
    summary = "a tree over the bins, every node of each released level noised"
    sigma2: tuple[Fraction | None, ...]

    def __init__(
        self,
        shape: TreeShape,
        *,
        epsilon: float | None = None,
        rho: float | None = None,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        level_budgets: Sequence[float] | None = None,
    ) -> None:
        if (epsilon is None) == (rho is None):
            raise InvalidParameterError(
                "The tree needs exactly one budget: 'epsilon' (pure DP, discrete Laplace noise) "
                "or 'rho' (zCDP, discrete Gaussian noise)."
            )
        family, value = budgeted(epsilon, rho)
        self.shape = shape
        self.n_bins = shape.n_bins
        #: The noise family's class and key (``ReleaseSpec.noise``).
        self.noise_family = family
        self.noise = family.key
        self.guarantee_kind = family.guarantee_kind  # type: ignore[assignment]
        unit = family.budget_name
        total = family.check_budget(value, unit)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        h = shape.height
        check_replace_bins(self.neighbours, shape.n_bins)
        sens = _sensitivity_data(h, self.neighbours)
        if self.neighbours == "add_remove":
            budgets = _split_with_off(total, h + 1, level_budgets, unit)
        else:
            below = _strip_exact_root(level_budgets, h)
            budgets = (0.0, *_split_with_off(total, h, below, unit))
        #: Noised levels switched off by a budget of 0: published as 0, sensitivity 0.
        self.off_levels = tuple(
            lv
            for lv, (b, (l1, _)) in enumerate(zip(budgets, sens, strict=True))
            if l1 > 0 and b == 0
        )
        sens = tuple((0, 0) if lv in self.off_levels else s for lv, s in enumerate(sens))
        self.block_sensitivity, self.block_l2_squared = (tuple(v) for v in zip(*sens, strict=True))
        self.block_l2 = tuple(math.sqrt(sq) for sq in self.block_l2_squared)
        if family.keeps_given:
            budgets = _keep_given(budgets, level_budgets, total)
        pure = unit == "epsilon"
        self.epsilon = total if pure else math.inf
        self.rho: float | None = None if pure else total
        self.block_epsilons = (
            budgets if pure else tuple(math.inf if b > 0 else 0.0 for b in budgets)
        )
        self.block_rhos = None if pure else budgets
        self.scales: tuple[Fraction | None, ...] = (None,) * (h + 1)
        # the exact parameter of each level's family, stored under its file key
        levels = zip(sens, budgets, strict=True)
        params = [family.calibrated(l1, sq, b).parameter if l1 else None for (l1, sq), b in levels]
        setattr(self, family.field, tuple(params))

    @classmethod
    def from_parameters(
        cls,
        n_bins: int,
        *,
        epsilon: float | None = None,
        neighbours: Neighbours,
        n: int | None,
        shape: TreeShape | None = None,
        level_budgets: Sequence[float] | None = None,
        rho: float | None = None,
    ) -> TreeMechanism:
        """Build from the registry's common parameters (``shape`` is required)."""
        if shape is None or shape.n_bins != n_bins:
            raise InvalidParameterError("mechanism='tree' needs a tree shape over the bins.")
        return cls(
            shape,
            epsilon=epsilon,
            rho=rho,
            neighbours=neighbours,
            n=n,
            level_budgets=level_budgets,
        )

    @property
    def level_budgets(self) -> tuple[float, ...]:
        """Budget per level, root first (0 for the exact root under ``replace``): ε_l for
        Laplace noise, ρ_l for Gaussian noise."""
        return self.block_budgets

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The true count of every stored node, one array per level, root first (zeros for a
        level switched off: it is not measured)."""
        blocks = self.shape.aggregate(counts)
        for lv in self.off_levels:
            blocks[lv] = np.zeros_like(blocks[lv])
        return blocks

    def _block_sizes(self) -> list[int]:
        """The stored nodes per level, from the shape: the sizes of :meth:`true_blocks`
        without aggregating an empty column of ``B`` zeros (an ``O(B)`` pass per release)."""
        return self.shape.level_sizes()

    def block_variance(self) -> tuple[float, ...]:
        """The noise variance of one entry of each level: 0 for an exact level, ``inf`` for a
        level switched off (it carries no information)."""
        own = super().block_variance()
        return tuple(math.inf if lv in self.off_levels else v for lv, v in enumerate(own))

    exact_root = True
    noises = (DiscreteLaplace.key, DiscreteGaussian.key)
    takes_shape = True

    @classmethod
    def from_description(
        cls, meta: Mapping[str, Any], n_bins: int, budget: float, gaussian: bool
    ) -> TreeMechanism:
        """The stored shape and level budgets (without the exact root's under ``replace``);
        a Gaussian tree's stored ``sigma2`` must be the rebuilt one's."""
        branching = meta["branching"]
        if not isinstance(branching, list) or any(
            isinstance(k, bool) or not isinstance(k, int) for k in branching
        ):
            raise InvalidParameterError("field 'branching' has the wrong type")
        budgets = [float(b) for b in meta["block_rhos" if gaussian else "block_epsilons"]]
        mechanism = cls(
            TreeShape(n_bins, tuple(branching)),
            neighbours=meta["neighbours"],
            n=meta.get("n_public"),
            level_budgets=budgets[1:] if meta["neighbours"] == "replace" else budgets,
            **{"rho" if gaussian else "epsilon": budget},
        )
        if gaussian and mechanism.describe()["sigma2"] != meta["sigma2"]:
            raise InvalidParameterError("the stored noise variances do not match the budgets")
        return mechanism

    def _check_direct(self) -> None:
        """The direct estimator sums covering nodes: it needs every level measured."""
        if self.off_levels:
            raise InvalidParameterError(
                "estimator='direct' needs every tree level measured; this tree has levels "
                "switched off (budget 0): use estimator='efficient'."
            )

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """``"efficient"``: the BLUE over all nodes (Honaker); ``"direct"``: covering nodes."""
        variances = self.block_variance()
        if estimator == "efficient":
            return efficient_prefix(self.shape, levels, variances, self.n_bins)
        self._check_direct()
        prefix = tree_prefix(self.shape, levels, variances)[0]
        return prefix

    def prefix_covariance(self, estimator: str) -> PrefixCovariance:
        variances = self.block_variance()
        if estimator == "efficient":
            return EfficientTreeCovariance(VariancePlan(self.shape, variances))
        self._check_direct()
        return DirectTreeCovariance(self.shape, variances)

    def _spend_parameters(self) -> dict[str, object]:
        out = {**super()._spend_parameters(), "branching": self.shape.branching}
        if self.rho is not None:
            out["rho"] = self.rho
            out["block_rhos"] = self.block_rhos
        return out

    def describe(self) -> dict[str, object]:
        """The contract as plain data; Gaussian trees add ``rho``, ``block_rhos``,
        ``block_l2_squared`` and the exact ``sigma2`` per level (no ε fields: none is finite)."""
        if self.rho is None:
            return super().describe()
        return zcdp_description(self, self.rho, self.block_l2_squared, self.sigma2)


def _as_list(level_budgets: Sequence[float] | None) -> list[float] | None:
    """The budgets as a list, or None when :func:`split_budget` judges them as given."""
    if isinstance(level_budgets, str) or not isinstance(level_budgets, Sequence | np.ndarray):
        return None
    return list(level_budgets)


def _is_real(value: object) -> bool:
    """A real number (bools and other types are refused later, by :func:`split_budget`)."""
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)


def _split_with_off(
    total: float, blocks: int, level_budgets: Sequence[float] | None, total_name: str = "epsilon"
) -> tuple[float, ...]:
    """:func:`split_budget`, except that entries of exactly 0 (levels switched off) stay 0
    and the positive ones are split and validated as usual (the leaves' must be positive)."""
    values = _as_list(level_budgets)
    zero = [_is_real(v) and v == 0 for v in values or ()]
    if values is None or len(values) != blocks or not any(zero) or zero[-1]:
        # nothing switched off, or the leaves: they must be measured (refused as not positive)
        return split_budget(total, blocks, level_budgets, total_name=total_name)
    kept = [v for v, z in zip(values, zero, strict=True) if not z]
    positive = iter(split_budget(total, blocks - sum(zero), kept, total_name=total_name))
    return tuple(0.0 if z else next(positive) for z in zero)


def _keep_given(
    split: tuple[float, ...], given: Sequence[float] | None, total: float
) -> tuple[float, ...]:
    """The given budgets themselves when they already add up to at most ``total`` exactly
    (as rationals), else the validated split: a release file's budgets then rebuild the
    same mechanism (re-normalising could move them by an ulp)."""
    if given is None:
        return split
    values = tuple(float(v) for v in given)
    if len(values) == len(split) - 1:
        values = (0.0, *values)
    if len(values) != len(split) or any(
        (v == 0) != (w == 0) or abs(v - w) > 1e-9 * total
        for v, w in zip(values, split, strict=True)
    ):
        return split
    return values if sum(map(Fraction, values)) <= Fraction(total) else split


def _strip_exact_root(level_budgets: Sequence[float] | None, height: int) -> Sequence[float] | None:
    """Under ``replace``: accept ``h + 1`` budgets with a 0 root (the output convention)."""
    values = _as_list(level_budgets)
    if values is None or len(values) != height + 1 or not _is_real(values[0]):
        return level_budgets  # split_budget judges them, with the usual messages
    if values[0] != 0:
        raise InvalidParameterError(
            "With neighbours='replace' the root count is the public n and is released "
            "exactly: the first of the h + 1 'level_budgets' (the root's) must be 0. "
            f"Got {values[0]!r}."
        )
    return values[1:]
