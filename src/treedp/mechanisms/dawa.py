"""DAWA: a data-aware release — a private partition into buckets, then a tree on the buckets.

Stage 1 (:mod:`treedp.mechanisms.partition`) spends ``ε1 = share · ε`` choosing buckets of
near-uniform counts; stage 2 releases the bucket counts with treedp's tree mechanism at
``ε2 = ε − ε1`` (the tree and its level budgets planned for the number of buckets, which is
public once chosen) and spreads every bucket's estimate evenly over its bins.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._validation import check_int, check_real
from treedp.budget import Neighbours, check_epsilon, check_neighbours, split_budget
from treedp.domain import MAX_BINS
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.base import Mechanism, TreePlanner
from treedp.mechanisms.partition import (
    Partition,
    choose_partition,
    noisy_block_costs,
    partition_scale,
)
from treedp.mechanisms.tree import TreeMechanism
from treedp.noise import RandomSource
from treedp.noise.families import DiscreteLaplace, float_at_least
from treedp.privacy.measures import PureDP
from treedp.privacy.spend import SpendRecord
from treedp.tree import TreeShape
from treedp.tree.heuristics import default_branching

__all__ = [
    "DEFAULT_PARTITION_SHARE",
    "NO_INTERVALS",
    "PENALTY",
    "DawaMechanism",
    "SpreadCovariance",
]

#: Share of the total epsilon spent on the partition (stage 1) by default, as in DAWA.
DEFAULT_PARTITION_SHARE = 0.25
#: The cost of one more bucket in stage 1, in units of ``1/ε2``: roughly the absolute error
#: stage 2's noise adds per bucket (DAWA's choice).
PENALTY = 1.0

#: Why a DAWA release offers no standard errors or intervals.
NO_INTERVALS = (
    "mechanism='dawa' offers no standard errors or confidence intervals: its answers carry a "
    "data-dependent bias (each bucket's count is spread evenly over its bins) that no public "
    "quantity bounds, so an interval from the noise alone would not cover. The noise-only "
    "covariance is release.mechanism.noise_covariance(); for intervals use a data-independent "
    "mechanism (mechanism='auto')."
)


class DawaMechanism(Mechanism):
    """DAWA under pure ε-DP: a private partition of the bins, then a tree on the buckets.

    Parameters
    ----------
    n_bins : int
        The number of public bins ``B``.
    epsilon : float
        The total pure-DP budget, split ``ε1 = partition_share · ε`` (stage 1) and
        ``ε2 = ε − ε1`` (stage 2), exactly (as rationals ``ε1 + ε2 <= ε``).
    neighbours : {"add_remove"}, default="add_remove"
        The neighbour relation; ``"replace"`` is not supported.
    n : None
        Must be None (the size stays private under ``add_remove``).
    partition_share : float, default=0.25
        The share of ``epsilon`` spent on the partition, in ``[0.01, 0.99]``.
    partition : Partition, optional
        The buckets chosen by stage 1. Without it the mechanism is *unbound*: it states the
        contract before any data is read (and :meth:`release_blocks` chooses the partition);
        with it, it describes a finished release (stage 2's blocks and noise).
    bucket_branching, bucket_budgets : sequence, optional
        Stage 2's tree over the buckets (fan-outs, and ε per level root first); by default
        planned with :func:`treedp.plan` for ``K`` buckets at ``ε2``. A release file stores
        them, so loading never re-plans.

    Notes
    -----
    Privacy unit: one record (one row). Neighbour relation: add/remove one record.
    Guarantee: pure ``(ε1' + ε2')``-DP with ``ε1' + ε2' <= epsilon`` (:meth:`epsilon_spent`,
    exact rationals), by adaptive sequential composition of the two stages.

    *Stage 1* releases, for every dyadic block ``I`` of size at least 2, the integer cost
    ``⌈dev(I)⌉`` (L1 deviation of the block's counts from their mean) plus discrete Laplace
    noise of scale ``t1 >= Δ1/ε1``, and keeps only the cut of the dyadic tree that minimises
    the noisy costs plus a penalty ``PENALTY/ε2`` per bucket (post-processing). A record lies
    in one block per level; one block's rounded cost moves by at most ``⌈2(1 − 1/s)⌉`` (1 for
    blocks of 2 bins, 2 above), so ``Δ1 = Σ_l ⌈2(1 − 2**-l)⌉ = 2L − 1`` for ``L >= 1`` levels
    (:func:`treedp.mechanisms.partition.cost_sensitivity`; DAWA's per-interval sensitivity 2
    is the ``s -> ∞`` limit, and the exact per-size bound saves 1). The noisy cost vector is
    ``Δ1/t1 <= ε1``-DP (Laplace mechanism, exact discrete noise), and the partition, a
    function of it, too.

    *Stage 2*: given the partition (now public), each record lies in exactly one bucket, so
    the bucket counts are a histogram of L1 sensitivity 1 and the tree over them has L1
    sensitivity 1 per level, as :class:`TreeMechanism` derives: ``ε2' <= ε2``-DP for every
    partition. By adaptive composition the pair (partition, noisy tree) is
    ``(ε1' + ε2')``-DP. The data-dependent bucket edges are part of the output:
    :attr:`partition` and ``describe()["partition"]``.

    The contract as data: :meth:`spend_parts` gives the two stages' records and
    :meth:`spend` their composition. Every estimate is the tree's (unbiased for the bucket
    counts) spread evenly inside buckets: its noise part is exact
    (:meth:`noise_covariance`), but the spreading bias depends on the data, so a release
    offers no standard errors or intervals (:data:`NO_INTERVALS`).

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_counts([0] * 12 + [5] * 4, epsilon=1.0, mechanism="dawa",
    ...                             rng=treedp.InsecureSeededSource(0))
    >>> rel.mechanism.partition.starts[0], rel.mechanism.partition.n_bins
    (0, 16)
    >>> rel.guarantee.epsilon <= 1.0
    True

    References
    ----------
    .. [LHMW14] C. Li, M. Hay, G. Miklau, Y. Wang. "A data- and workload-aware algorithm for
       range queries under differential privacy". PVLDB 7(5), 2014.
    """

    #: The efficient estimator only: the bucket tree is planned after the private partition
    #: and may switch levels off, which the direct estimator cannot read (asked for, it was
    #: refused after the charge, for some partitions: an independent budget review).
    estimators = ("efficient",)
    estimator_hint = (
        " (its bucket tree is planned after the private partition and may switch levels off, "
        "which the direct estimator cannot read); use estimator='efficient'"
    )

    name = "dawa"
    summary = "a private partition of the bins into buckets, then a tree on the buckets"
    #: Its answers carry a data-dependent spreading bias: no standard errors or intervals.
    offers_intervals = False
    per_group = False

    def __init__(
        self,
        n_bins: int,
        *,
        epsilon: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        partition_share: float = DEFAULT_PARTITION_SHARE,
        partition: Partition | None = None,
        bucket_branching: Sequence[int] | None = None,
        bucket_budgets: Sequence[float] | None = None,
        bucket_planner: TreePlanner | None = None,
    ) -> None:
        self.bucket_planner = bucket_planner
        self.n_bins = check_int(n_bins, "n_bins", lo=1, hi=MAX_BINS)
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        if self.neighbours != "add_remove":
            raise InvalidParameterError(
                "mechanism='dawa' supports neighbours='add_remove' only (the partition's cost "
                "sensitivity is derived for adding or removing one record)."
            )
        self.partition_share = check_real(partition_share, "partition_share", 0.01, 0.99)
        eps1 = self.epsilon * self.partition_share
        self.epsilon_partition, self.epsilon_buckets = split_budget(
            self.epsilon, 2, (eps1, self.epsilon - eps1), name="partition_share"
        )
        self.partition_sensitivity, self.partition_scale = partition_scale(
            self.n_bins, self.epsilon_partition
        )
        self.penalty = PENALTY / self.epsilon_buckets
        self.partition = partition
        self.bucket_tree: TreeMechanism | None = None
        if partition is None:
            if bucket_branching is not None or bucket_budgets is not None:
                raise InvalidParameterError(
                    "The stage-2 tree ('bucket_branching', 'bucket_budgets') needs a partition."
                )
            self.block_epsilons, self.block_sensitivity, self.block_l2, self.scales = (), (), (), ()
            return
        if not isinstance(partition, Partition) or partition.n_bins != self.n_bins:
            raise InvalidParameterError("The 'partition' must be a Partition over the bins.")
        tree = _bucket_tree(
            partition.n_buckets,
            self.epsilon_buckets,
            bucket_branching,
            bucket_budgets,
            bucket_planner,
        )
        self.bucket_tree = tree
        self.block_epsilons, self.block_sensitivity = tree.block_epsilons, tree.block_sensitivity
        self.block_l2, self.scales = tree.block_l2, tree.scales

    # ------------------------------------------------------------------ the two stages
    @property
    def bound(self) -> bool:
        """True once the partition is chosen (the mechanism describes a finished release)."""
        return self.partition is not None

    def noisy_costs(
        self, counts: np.ndarray, source: RandomSource, repeats: int = 1
    ) -> list[np.ndarray]:
        """Stage 1's released vector: every dyadic block's ``⌈dev⌉`` plus discrete Laplace
        noise of scale :attr:`partition_scale`, shape ``(repeats, blocks)`` per level."""
        return noisy_block_costs(counts, self.partition_scale, source, repeats)

    def _rebuilt(self, **changes: Any) -> DawaMechanism:
        """The same mechanism (budget, share, planner) with ``changes``."""
        kept = {
            "epsilon": self.epsilon,
            "partition_share": self.partition_share,
            "bucket_planner": self.bucket_planner,
        }
        return DawaMechanism(self.n_bins, **{**kept, **changes})

    def bind(self, partition: Partition) -> DawaMechanism:
        """The same mechanism with the partition chosen (stage 2 planned for its buckets)."""
        return self._rebuilt(partition=partition)

    def planned(self, planner: TreePlanner) -> DawaMechanism:
        """The same unbound mechanism, planning its bucket tree with ``planner`` (the release
        pipeline hands in the planner's best tree; without one, the equal-budget
        :func:`~treedp.tree.heuristics.default_branching` tree is used)."""
        return self if self.bound else self._rebuilt(bucket_planner=planner)

    def release_blocks(
        self, counts: np.ndarray, source: RandomSource
    ) -> tuple[DawaMechanism, list[np.ndarray]]:
        """Both stages: stage 1 (``ε1``-DP) chooses the partition from the noisy dyadic-block
        costs, then the bound mechanism measures stage 2's noisy blocks."""
        mech = self
        if not self.bound:
            partition = Partition(self.n_bins, (0,))  # one bin: nothing to choose or to noise
            if self.partition_sensitivity:
                noisy = self.noisy_costs(counts, source)
                partition = choose_partition([lv[0] for lv in noisy], self.n_bins, self.penalty)
            mech = self.bind(partition)
        return mech, Mechanism.measure(mech, counts, source)

    def measure(self, counts: np.ndarray, source: RandomSource) -> list[np.ndarray]:
        """Stage 2's noisy blocks (a bound mechanism); :meth:`release_blocks` runs both."""
        self._require_bound()
        return super().measure(counts, source)

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """Stage 2's exact blocks: the tree's nodes over the bucket counts."""
        tree, partition = self._require_bound()
        return tree.true_blocks(partition.bucket_counts(counts))

    def _require_bound(self) -> tuple[TreeMechanism, Partition]:
        if self.bucket_tree is None or self.partition is None:
            raise InvalidParameterError(
                "This DAWA mechanism has no partition yet: run both stages with "
                "release_blocks(counts, source) (release_cdf and release_counts do; group-by "
                "releases do not support mechanism='dawa')."
            )
        return self.bucket_tree, self.partition

    # ------------------------------------------------------------------ estimates
    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """The bucket tree's prefix estimates, spread uniformly inside each bucket."""
        tree, partition = self._require_bound()
        return partition.spread(tree.prefix_estimate(levels, estimator))

    def prefix_covariance(self, estimator: str) -> Any:
        """Refused: the spreading bias depends on the data (see :meth:`noise_covariance`)."""
        raise InvalidParameterError(NO_INTERVALS)

    def noise_covariance(self, estimator: str = "efficient") -> SpreadCovariance:
        """The exact covariance of the bin prefix estimates due to stage 2's noise alone,
        given the partition. It omits the spreading bias: it is no error bar."""
        tree, partition = self._require_bound()
        return SpreadCovariance(partition, tree.prefix_covariance(estimator))

    # ------------------------------------------------------------------ the contract
    def partition_epsilon_spent(self) -> Fraction:
        """Stage 1's exact loss ``Δ1/t1`` (0 with one bin: nothing is chosen)."""
        if self.partition_sensitivity == 0:
            return Fraction(0)
        return Fraction(self.partition_sensitivity) / self.partition_scale

    def _bucket_epsilon_spent(self) -> Fraction:
        """Stage 2's exact loss (its budget ``ε2`` before the tree is known)."""
        if self.bucket_tree is None:
            return Fraction(self.epsilon_buckets)
        return self.bucket_tree.epsilon_spent()

    def epsilon_spent(self) -> Fraction:
        """The exact total loss of both stages, never above :attr:`epsilon`."""
        return self.partition_epsilon_spent() + self._bucket_epsilon_spent()

    def spend_parts(self) -> tuple[SpendRecord, SpendRecord]:
        """The two stages' spend records (their composition is :meth:`spend`)."""
        base = {"n_bins": self.n_bins, "n": None, "partition_share": self.partition_share}
        first = SpendRecord(
            mechanism="dawa.partition",
            measure=PureDP(float_at_least(self.partition_epsilon_spent())),
            neighbours=self.neighbours,
            parameters={
                **base,
                "epsilon": self.epsilon_partition,
                "sensitivity": self.partition_sensitivity,
                "noise": DiscreteLaplace.name,
            },
        )
        second = SpendRecord(
            mechanism="dawa.buckets",
            measure=PureDP(float_at_least(self._bucket_epsilon_spent())),
            neighbours=self.neighbours,
            parameters={**base, "epsilon": self.epsilon_buckets, "mechanism": "tree"},
        )
        return first, second

    def _spend_parameters(self) -> dict[str, Any]:
        parts = (self.partition_epsilon_spent(), self._bucket_epsilon_spent())
        return {
            **super()._spend_parameters(),
            "partition_share": self.partition_share,
            "parts": tuple(float_at_least(p) for p in parts),
        }

    def describe(self) -> dict[str, object]:
        """The contract as plain data, with the partition chosen and stage 2's tree."""
        scale, tree = self.partition_scale, self.bucket_tree
        return {
            **super().describe(),
            "partition_share": self.partition_share,
            "epsilon_partition": self.epsilon_partition,
            "epsilon_buckets": self.epsilon_buckets,
            "partition_sensitivity": self.partition_sensitivity,
            "partition_scale": [scale.numerator, scale.denominator],
            "penalty": self.penalty,
            "partition": None if self.partition is None else list(self.partition.starts),
            "bucket_branching": None if tree is None else list(tree.shape.branching),
            "bucket_budgets": None if tree is None else list(tree.level_budgets),
        }

    @classmethod
    def from_description(
        cls, meta: Mapping[str, Any], n_bins: int, budget: float, gaussian: bool
    ) -> DawaMechanism:
        """Rebuild the bound mechanism of a release file: the stored partition and stage-2
        tree, never re-planned; every stated field of the contract must equal the rebuilt
        one's."""
        if gaussian:
            raise InvalidParameterError("DAWA is stated with Gaussian noise")
        for key, kinds in (
            ("partition", int),
            ("bucket_branching", int),
            ("bucket_budgets", int | float),
        ):
            value = meta[key]
            if not isinstance(value, list) or any(
                isinstance(v, bool) or not isinstance(v, kinds) for v in value
            ):
                raise InvalidParameterError(f"field '{key}' has the wrong type")
        share = meta["partition_share"]
        if isinstance(share, bool) or not isinstance(share, int | float):
            raise InvalidParameterError("field 'partition_share' has the wrong type")
        mech = cls(
            n_bins,
            epsilon=budget,
            neighbours=meta["neighbours"],
            partition_share=float(share),
            partition=Partition(n_bins, tuple(meta["partition"])),
            bucket_branching=meta["bucket_branching"],
            bucket_budgets=meta["bucket_budgets"],
        )
        own = mech.describe()
        for key in (
            "partition",
            "partition_sensitivity",
            "partition_scale",
            "bucket_branching",
            "epsilon_partition",
            "epsilon_buckets",
        ):
            if json.dumps(own[key]) != json.dumps(meta[key]):
                raise InvalidParameterError(f"field '{key}' does not match the mechanism")
        return mech


class SpreadCovariance:
    """``Cov(P[m1], P[m2])`` of bin prefixes interpolated linearly inside buckets, from the
    exact covariance of the bucket prefixes (noise only)."""

    def __init__(self, partition: Partition, bucket: Any) -> None:
        self.partition = partition
        self.bucket = bucket

    def cov(self, m1: np.ndarray, m2: np.ndarray) -> np.ndarray:
        """The covariance of ``P[m1]`` and ``P[m2]`` (broadcast together)."""
        a, b = np.broadcast_arrays(np.asarray(m1), np.asarray(m2))
        j1, f1 = self.partition.weights(a)
        j2, f2 = self.partition.weights(b)
        total = np.zeros(a.shape)
        for ja, wa in ((j1, 1.0 - f1), (j1 + 1, f1)):
            for jb, wb in ((j2, 1.0 - f2), (j2 + 1, f2)):
                total += wa * wb * self.bucket.cov(ja, jb)
        return total

    def var(self, m: np.ndarray) -> np.ndarray:
        """The variance of ``P[m]``."""
        return self.cov(m, m)


def _bucket_tree(
    n_buckets: int,
    epsilon: float,
    branching: Sequence[int] | None,
    budgets: Sequence[float] | None,
    planner: TreePlanner | None,
) -> TreeMechanism:
    """Stage 2's tree over ``n_buckets`` buckets: as given, else the planner's best tree, else
    the equal-budget :func:`~treedp.tree.heuristics.default_branching` tree."""
    if branching is None and planner is not None:
        branching, budgets = planner(n_buckets, epsilon)
    elif branching is None:
        branching = default_branching(n_buckets, "add_remove")
    shape = TreeShape(n_buckets, tuple(int(k) for k in branching))
    return TreeMechanism(shape, epsilon=epsilon, level_budgets=budgets)
