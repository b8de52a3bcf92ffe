"""The seeds' simpler mechanisms, kept as baselines for comparison.

* :class:`HistogramMechanism` — noise on every bin; prefixes are sums of noisy bins.
* :class:`ThresholdMechanism` — noise on every prefix (threshold) count directly.
* :class:`AllIntervalsMechanism` — noise on every interval count (small ``B`` only).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._validation import check_int
from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.estimation.covariance import (
    EfficientTreeCovariance,
    HistogramCovariance,
    PrefixCovariance,
)
from treedp.estimation.direct import cumulative_prefix
from treedp.estimation.efficient import VariancePlan, efficient_tree
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.all_intervals_queries import AllIntervalsQueries
from treedp.mechanisms.base import Mechanism, check_replace_bins
from treedp.tree import TreeShape
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "MAX_INTERVAL_BINS",
    "AllIntervalsMechanism",
    "HistogramMechanism",
    "ThresholdMechanism",
    "all_intervals_sensitivity",
    "histogram_variance",
]

#: Largest ``B`` for the all-intervals baseline (``B(B+1)/2`` noisy counts).
MAX_INTERVAL_BINS = 2048


class _SingleBlockMechanism(Mechanism):
    """A mechanism that noises one block of counts at the whole ``epsilon``.

    Subclasses give the block's L1 sensitivity (:meth:`_sensitivity`) and, when their size is
    limited, check it in :meth:`_check_size`. In every baseline here a neighbouring dataset
    changes each entry of the block by 0 or 1, so the L2 sensitivity is ``sqrt(L1)``.
    """

    def __init__(
        self,
        n_bins: int,
        *,
        epsilon: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
    ) -> None:
        self.n_bins = check_int(n_bins, "n_bins", lo=1)
        self._check_size()
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        check_replace_bins(self.neighbours, self.n_bins)
        self.block_epsilons = (self.epsilon,)
        self.block_sensitivity = (self._sensitivity(),)
        self.block_l2 = (math.sqrt(self.block_sensitivity[0]),)  # entries change by 0 or 1
        self._set_scales()

    def _check_size(self) -> None:
        """Refuse an ``n_bins`` the mechanism cannot serve (every size is fine by default)."""

    @abstractmethod
    def _sensitivity(self) -> int:
        """The L1 sensitivity of the block under ``self.neighbours``."""


class HistogramMechanism(_SingleBlockMechanism):
    """Noisy histogram: every bin count plus discrete Laplace noise. Pure ``epsilon``-DP.

    Notes
    -----
    Sensitivity derivation. A record adds one to exactly one bin. ``add_remove``: the bin
    vector changes by one in one bin, L1 = L2 sensitivity 1, scale ``1/ε``. ``replace``: one
    bin loses one and another gains one, L1 sensitivity 2 (L2 ``sqrt(2)``), scale ``2/ε``;
    the total is the public ``n``, so the last prefix is ``n`` exactly (Lemma III.2 of
    [RTS24]).
    """

    name = "histogram"
    summary = "a flat histogram: every bin count noised"

    def _sensitivity(self) -> int:
        return 1 if self.neighbours == "add_remove" else 2

    def _as_tree(self) -> tuple[TreeShape, tuple[float, float]]:
        """The histogram as a one-level tree whose root is exact (n public) or unobserved."""
        b = self.n_bins
        root_var = 0.0 if self.n is not None else math.inf
        return TreeShape(b, (b,)), (root_var, self.block_variance()[0])

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """``"efficient"``: the BLUE of the one-level tree (the total is imposed when public);
        ``"direct"``: cumulative sums."""
        if estimator == "efficient" and self.n_bins >= 2:
            shape, tree_var = self._as_tree()
            leaves = np.asarray(levels[0])
            n = 0 if self.n is None else self.n
            root = np.full((*leaves.shape[:-1], 1), n, dtype=np.int64)
            prefix: np.ndarray = efficient_tree(shape, [root, leaves], tree_var).prefix(self.n_bins)
            return prefix
        direct = cumulative_prefix(levels, self.block_variance(), self.n_bins, self.n)[0]
        return np.asarray(direct)

    def prefix_covariance(self, estimator: str) -> PrefixCovariance:
        if estimator == "efficient" and self.n_bins >= 2:
            shape, tree_var = self._as_tree()
            return EfficientTreeCovariance(VariancePlan(shape, tree_var))
        return HistogramCovariance(self.n_bins, self.block_variance()[0], self.n is not None)

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(counts, dtype=np.int64)]

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
        """The noisy histogram under ``add_remove`` (under ``replace`` it is the planner's flat
        tree with the public total): exact prefix variances ``m σ²``."""
        if neighbours != "add_remove":
            return None
        var = histogram_variance(n_bins, budget)
        mean, worst = (n_bins + 1) / 2 * var, n_bins * var
        errors = {"cdf_mse": mean, "range_mse": (n_bins + 2) / 3 * var, "max_variance": worst}
        if workload is not None:
            value = workload.independent_variance(var, n_public=False)
        else:
            value = errors[objective]
        return PlanCandidate(
            cls.name, (n_bins,), (budget,), value, "noisy histogram", mean, max_cdf_variance=worst
        )


def histogram_variance(n_bins: int, epsilon: float) -> float:
    """Per-bin variance of the noisy histogram under ``add_remove``, from the mechanism."""
    return HistogramMechanism(n_bins, epsilon=epsilon).block_variance()[0]


class ThresholdMechanism(_SingleBlockMechanism):
    """Noisy threshold (prefix) counts ``#{x < e_t}``. Pure ``epsilon``-DP.

    Notes
    -----
    Sensitivity derivation. ``add_remove``: a record in the first bin is counted in all ``B``
    prefixes ``[0, t)``, ``t = 1..B``: L1 sensitivity ``B`` (L2 ``sqrt(B)``). ``replace``: the
    last prefix is the public ``n`` and is not released with noise; moving a record from the
    first to the last bin changes the ``B - 1`` others by one each: L1 sensitivity ``B - 1``
    (L2 ``sqrt(B - 1)``; Lemma III.1 of [RTS24]).
    """

    name = "threshold"
    summary = "every prefix count noised"

    def _sensitivity(self) -> int:
        return self.n_bins if self.neighbours == "add_remove" else self.n_bins - 1

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        prefix = np.cumsum(np.asarray(counts, dtype=np.int64))
        return [prefix if self.neighbours == "add_remove" else prefix[:-1]]


def all_intervals_sensitivity(n_bins: int, neighbours: Neighbours) -> int:
    """L1 sensitivity of the vector of all ``B(B+1)/2`` interval counts ``[s, t)``.

    A record in bin ``j`` lies in ``c_j = (j + 1)(B - j)`` intervals. ``add_remove``:
    ``max_j c_j``. ``replace`` (bin ``i`` to bin ``j``, ``i < j``): the intervals holding exactly
    one of the two bins change, ``c_i + c_j - 2(i + 1)(B - j)``; maximised over all pairs.
    """
    j = np.arange(n_bins, dtype=np.int64)
    c = (j + 1) * (n_bins - j)
    if neighbours == "add_remove":
        return int(c.max())
    if n_bins == 1:
        return 0
    i = j[:, None]
    jj = j[None, :]
    both = (np.minimum(i, jj) + 1) * (n_bins - np.maximum(i, jj))
    moved = c[:, None] + c[None, :] - 2 * both
    return int(moved.max())


class AllIntervalsMechanism(_SingleBlockMechanism):
    """Noise on every interval count ``[s, t)``, ``0 <= s < t <= B``. Pure ``epsilon``-DP.

    The seeds' first baseline: its sensitivity grows as ``B**2 / 4``, so it is only offered for
    ``B <=`` :data:`MAX_INTERVAL_BINS`. The block is the upper triangle, row-major by ``s``.

    Notes
    -----
    Sensitivity derivation: see :func:`all_intervals_sensitivity`. Each interval count
    changes by at most one, so the L2 sensitivity is the square root of the L1 one.
    """

    name = "all_intervals"
    summary = "every interval count noised"
    max_bins = MAX_INTERVAL_BINS
    estimators = ("direct",)

    estimator_hint = " (it would need least squares over B(B+1)/2 counts); use estimator='direct'"

    def direct_ranges(
        self, bins: Any, levels: list[np.ndarray], level_variance: Sequence[float]
    ) -> AllIntervalsQueries:
        """Unbiased ranges read from the interval counts (at most three noisy counts each)."""
        return AllIntervalsQueries(bins, levels[0], level_variance[0], self.n)

    def _check_size(self) -> None:
        if self.n_bins > MAX_INTERVAL_BINS:
            raise InvalidParameterError(
                f"The all-intervals baseline releases B(B+1)/2 counts with sensitivity about "
                f"B**2/4 and is limited to B <= {MAX_INTERVAL_BINS}. Got B={self.n_bins}; use "
                "mechanism='tree'."
            )

    def _sensitivity(self) -> int:
        return all_intervals_sensitivity(self.n_bins, self.neighbours)

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        prefix = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])
        s, t = np.triu_indices(self.n_bins + 1, k=1)
        return [prefix[t] - prefix[s]]
