"""A p-Identity strategy over block sums, tree levels or a strategy inside the blocks (pure ε).

Beyond trees for many bins: the ``B`` bins are cut into ``K`` blocks of ``b`` bins; the
optimised integer p-Identity strategy shipped for ``K`` bins is released on the block sums
and, inside every block, a few tree levels or an integer strategy optimised for that role
(:mod:`treedp.strategy.inner`), each part with its own share of ε and exact discrete Laplace
noise; the prefixes are estimated by least squares over the whole structure
(:mod:`treedp.strategy.blocked`, exact covariances). The shares and shapes for ``B = 2^13``
to ``2^20`` were optimised offline on the exact error (``benchmarks/pure_large.py``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.base import Mechanism, check_replace_bins
from treedp.mechanisms.results import Contract
from treedp.noise import noise_scale
from treedp.noise.families import DiscreteLaplace, noise_family
from treedp.privacy.measures import PureDP
from treedp.strategy.blocked import BlockedCovariance, BlockedStrategy
from treedp.strategy.store import get_strategy, shipped_strategy
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "CONFIGS",
    "CONTRACT",
    "StrategyTreeMechanism",
    "configured_size",
    "default_structure",
    "split_epsilon",
]

#: The privacy contract as data.
CONTRACT = Contract(
    name="strategy_tree",
    measure=PureDP,
    neighbours=("add_remove", "replace"),
    sensitivity=(
        "parts: W_T (S x), S the block sums, W_T an integer p-Identity strategy (its own L1 "
        "sensitivity, add_remove or replace), one count per node of each level inside "
        "the blocks (L1 1, replace 2), and W_I x_k for every block k, W_I an integer "
        "strategy (its largest column L1; replace: the larger of its own replace "
        "sensitivity and twice its largest column L1); each part its own discrete Laplace scale "
        "t_i >= L1_i/epsilon_i, sum of epsilon_i <= epsilon"
    ),
)

#: The structures the planner scores: ``B -> (K, levels, budget shares, top, inner)``,
#: optimised offline on the exact mean prefix variance at ε = 1 (``benchmarks/pure_large.py``).
#: ``top`` names the shipped ``K``-bin strategy: ``"prefix"`` (the one
#: ``mechanism="strategy"`` uses, ``p = 64`` at most) or ``"top"``
#: (``pidentity_top_4096.npz``: ``p = 256``, written by ``benchmarks/pure_large.py
#: --write-top``). ``inner`` names a shipped strategy over a block's bins (``None``: levels
#: only), e.g. ``"inner20"`` (``pidentity_inner20_256.npz``, optimised for its role under
#: the 2^20 top by :mod:`treedp.strategy.inner`, written by ``pure_large.py --write-inner``).
#: The shares are the top's, one per level, then the inner strategy's.
CONFIGS: dict[int, tuple[int, tuple[int, ...], tuple[float, ...], str, str | None]] = {
    2**13: (1024, (1,), (0.7546, 0.2454), "prefix", None),
    2**14: (1024, (1,), (0.7121, 0.2879), "prefix", None),
    2**15: (256, (), (0.5582, 0.4418), "prefix", "inner15"),
    2**16: (256, (), (0.5303, 0.4697), "prefix", "inner16"),
    2**17: (1024, (), (0.6019, 0.3981), "prefix", "inner17"),
    2**18: (1024, (), (0.5748, 0.4252), "prefix", "inner18"),
    2**19: (4096, (), (0.6421, 0.3579), "top", "inner19"),
    2**20: (4096, (), (0.616, 0.384), "top", "inner20"),
}

#: Largest ``B`` (a fallback structure's block must stay a small dense matrix).
MAX_BLOCKED_BINS = 2**22


def configured_size(n_bins: int) -> int | None:
    """The configured size (:data:`CONFIGS`) whose structure releases ``B`` bins: ``B``
    itself, or the next power of two above it (padded with empty bins), or None.

    Padding costs little: the exact mean prefix variance at ε = 1 over the first ``B``
    prefixes of the padded structure is 0.83–0.98× the planned tree's from ``B = 4,097`` to
    ``10^6`` (e.g. 385.8 against 446.8 at ``B = 100,000``; docs/strategies.md).
    """
    if n_bins in CONFIGS:
        return n_bins
    size = 1 << max(0, int(n_bins) - 1).bit_length()
    return size if size in CONFIGS else None


def default_structure(n_bins: int) -> BlockedStrategy:
    """The structure released for ``B`` bins (public parameters only).

    A configured ``B`` (:data:`CONFIGS`) gets its optimised structure. Any other ``B`` gets a
    configured structure of the next power of two when there is one (:func:`configured_size`;
    the ``P - B`` padding bins are always empty), else a valid fallback: ``K`` the largest
    power of two with ``2K <= B`` (at most 4096), ``b`` the smallest power of two with
    ``K b >= B``, levels of 1 and 16 bins and shares 0.6 / 0.4. ``K`` is at least 2: one
    block's sum is the public ``n`` under ``replace`` (no sensitivity, no information), and
    its covariance was singular (``B <= 3`` charged, then failed: an independent review).
    """
    size = configured_size(n_bins)
    if size is not None:
        k, levels, shares, name, inner_name = CONFIGS[size]
        top = shipped_strategy(k, name) if name != "prefix" else get_strategy(k)
        b = size // k
        inner = None if inner_name is None else shipped_strategy(b, inner_name)
        if top is None or (inner_name is not None and inner is None):  # pragma: no cover
            raise InvalidParameterError(f"A shipped strategy for {n_bins} bins is missing.")
        return BlockedStrategy(top, b, levels, shares, inner)
    k = 1 << max(1, min(12, (max(n_bins, 2) // 2).bit_length() - 1))
    b = 1 << max(1, (-(-n_bins // k) - 1).bit_length())
    levels = (1, 16) if b > 16 else (1,)
    shares = (0.6, 0.2, 0.2) if b > 16 else (0.6, 0.4)
    return BlockedStrategy(get_strategy(k), b, levels, shares)


class StrategyTreeMechanism(Mechanism):
    """A strategy over block sums plus tree levels and/or a strategy inside the blocks: pure
    ``epsilon``-DP.

    Parameters
    ----------
    n_bins : int
        ``B``.
    epsilon : float
        The pure-DP budget, split between the parts by the structure's shares.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation.
    n : int, optional
        The public size (``replace`` only).
    structure : BlockedStrategy, optional
        The structure to release (``K b >= B``); default :func:`default_structure`.

    Notes
    -----
    Guarantee: pure ``ε``-DP (``PureDP(Σ_i Δ_i / t_i)`` exactly, each ``t_i`` the rational
    scale rounded up from ``Δ_i / ε_i``, ``Σ ε_i = ε``). Privacy unit: one record; every
    record is counted in exactly one bin (out-of-range values are clamped into the end bins by
    the public bin rule); padding bins past ``B`` are always empty. Neighbour relations:
    ``add_remove`` (``n`` private) and ``replace`` (``n`` public).

    Sensitivity derivation. The parts are ``y_T = W_T S x`` (``S`` the ``K × Kb`` block-sum
    matrix, ``W_T = [diag(d); A]`` a non-negative integer strategy), for each level of
    node size ``c``, the node counts ``N_c x``, and, with an inner strategy
    ``W_I = [diag(d_I); A_I]`` (non-negative integers, ``b`` bins), ``y_I = (I_K ⊗ W_I) x``.
    ``add_remove``: a record in bin ``j = k b + r`` changes ``S x`` by ``±e_k``, so ``y_T``
    by ``±W_T e_k``, of L1 norm at most the strategy's ``max_k (d_k + Σ_i A_ik)``,
    ``N_c x`` by ``±1`` in one node, and ``y_I`` by ``±W_I e_r`` in block ``k`` (at most
    ``W_I``'s largest column L1 norm). ``replace``: moving a record from bin ``j`` to ``j'``
    changes ``S x`` by ``e_{k'} − e_k`` (zero inside one block), so ``y_T`` by at most the
    strategy's exact ``replace`` sensitivity, each level by ``±1`` in two nodes (or
    nothing), and ``y_I`` by ``W_I (e_{r'} − e_r)`` inside one block (``W_I``'s exact
    ``replace`` sensitivity) or by ``−W_I e_r`` and ``+W_I e_{r'}`` in two blocks (at most
    twice the largest column, reached with both ``r`` its column). Each part's
    entries are integers with independent discrete Laplace noise of scale ``t_i``, so for
    neighbours the likelihood ratio is at most ``exp(Σ_i |Δy_i|_1 / t_i) <= exp(Σ_i Δ_i/t_i)``
    ``<= exp(ε)``. ``tests/mechanisms/test_strategy_tree.py`` enumerates neighbouring
    datasets on small ``B`` and checks each part's claim is the exact maximum.
    """

    name = "strategy_tree"
    least_squares_only = True  # one estimator: least squares, whichever name is given
    summary = "a strategy over block sums, with tree levels or a strategy inside the blocks"
    max_bins = MAX_BLOCKED_BINS

    def __init__(
        self,
        n_bins: int,
        *,
        epsilon: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        structure: BlockedStrategy | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        if not isinstance(n_bins, int | np.integer) or not 1 <= n_bins <= MAX_BLOCKED_BINS:
            raise InvalidParameterError(
                f"mechanism='strategy_tree' takes 1 to {MAX_BLOCKED_BINS} bins."
            )
        self.n_bins = int(n_bins)
        check_replace_bins(self.neighbours, self.n_bins)
        if structure is None:
            structure = default_structure(self.n_bins)
        if not isinstance(structure, BlockedStrategy) or structure.n_bins < self.n_bins:
            raise InvalidParameterError(
                "The 'structure' parameter must be a BlockedStrategy covering n_bins bins."
            )
        self.structure = structure
        self.block_epsilons = split_epsilon(self.epsilon, structure.fractions)
        self.block_sensitivity = structure.part_sensitivities(self.neighbours)
        self._set_scales()

    def max_records(self) -> int:
        """The guarantee's domain: at most the top's and the inner strategy's exact int64
        total (the levels' node counts are at most the total), refused before anything is
        charged or drawn."""
        return self.structure.max_total()

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The exact parts for the bin counts, padded with empty bins to ``K b``."""
        x = np.asarray(counts, dtype=np.int64)
        pad = self.structure.n_bins - x.shape[-1]
        return self.structure.parts(np.concatenate([x, np.zeros(pad, dtype=np.int64)]))

    def prefix_covariance(self, estimator: str) -> BlockedCovariance:
        """The exact covariance (public parameters only; built once per mechanism)."""
        if getattr(self, "_covariance", None) is None:
            self._covariance = BlockedCovariance(
                self.structure, self.block_variance(), self.n is not None, self.n_bins
            )
        return self._covariance

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """Least squares (GLS) whatever the estimator's name; ``n`` imposed when public."""
        return self.prefix_covariance(estimator).estimate(levels, self.n)

    @classmethod
    def plan_candidate(
        cls,
        n_bins: int,
        budget: float,
        neighbours: str,
        noise: str,
        objective: str,
        *,
        workload: Any = None,
    ) -> PlanCandidate | None:
        """The configured structure for ``B`` (:data:`CONFIGS`, padded to the next power of
        two: :func:`configured_size`), scored exactly over the ``B`` prefixes (discrete
        Laplace, ``add_remove``), or None."""
        if (
            configured_size(n_bins) is None
            or noise_family(noise) is not DiscreteLaplace
            or neighbours != "add_remove"
        ):
            return None
        structure = default_structure(n_bins)
        cov = structure_covariance(structure, budget, n_bins)
        var = cov.prefix_variances()
        mean, worst = float(var[1:].mean()), float(var.max())
        if workload is not None:
            value = float(workload.mean_variance(cov))
        elif objective == "cdf_mse":
            value = mean
        elif objective == "max_variance":
            value = worst
        else:
            return None  # range_mse: not scored
        inside = [f"levels {list(structure.levels)}"] if structure.levels else []
        if structure.inner is not None:
            inside.append(f"a strategy (p={structure.inner.aggregates.shape[0]})")
        how = (
            f"p-Identity strategy over {structure.n_blocks} block sums (p="
            f"{structure.top.aggregates.shape[0]}) with {' and '.join(inside)} "
            f"inside blocks of {structure.block} bins, least squares"
        )
        return PlanCandidate(cls.name, (n_bins,), (budget,), value, how, mean, worst)

    def _spend_parameters(self) -> dict[str, Any]:
        out = {**super()._spend_parameters(), "strategy": self.structure.top.digest}
        if self.structure.inner is not None:
            out["inner_strategy"] = self.structure.inner.digest
        return out

    def describe(self) -> dict[str, object]:
        """The contract as plain data; adds the structure and its strategies' digests."""
        out = super().describe()
        inner = self.structure.inner
        out["strategy"] = {
            "kind": "p_identity_blocks",
            "blocks": self.structure.n_blocks,
            "block": self.structure.block,
            "levels": list(self.structure.levels),
            "aggregates": int(self.structure.top.aggregates.shape[0]),
            "sha256": self.structure.top.digest,
            **(
                {}
                if inner is None
                else {
                    "inner_aggregates": int(inner.aggregates.shape[0]),
                    "inner_sha256": inner.digest,
                }
            ),
        }
        return out


def split_epsilon(epsilon: float, fractions: tuple[float, ...]) -> tuple[float, ...]:
    """The parts' budgets ``ε f_i / Σ f``, lowered by a float step at a time (largest first)
    until their exact rational sum is at most ``ε``: each part's scale is rounded up from
    ``Δ_i / ε_i``, so the spend ``Σ Δ_i / t_i`` never exceeds ``ε``."""
    total = sum(fractions)
    parts = [epsilon * f / total for f in fractions]
    while sum(Fraction(p) for p in parts) > Fraction(epsilon):
        i = max(range(len(parts)), key=parts.__getitem__)
        parts[i] = math.nextafter(parts[i], 0.0)
    return tuple(parts)


def structure_covariance(
    structure: BlockedStrategy, epsilon: float, n_bins: int, neighbours: str = "add_remove"
) -> BlockedCovariance:
    """The exact prefix covariance of a release of ``structure`` at ``epsilon``."""
    sens = structure.part_sensitivities(neighbours)
    variances = [
        DiscreteLaplace(noise_scale(d, eps)).variance()
        for d, eps in zip(sens, split_epsilon(epsilon, structure.fractions), strict=True)
    ]
    return BlockedCovariance(structure, variances, neighbours == "replace", n_bins)
