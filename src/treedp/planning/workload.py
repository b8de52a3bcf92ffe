"""An explicit workload: the ranges of bins a plan is made for, and their exact error."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treedp._validation import must
from treedp.estimation.covariance import (
    DirectTreeCovariance,
    EfficientTreeCovariance,
    PrefixCovariance,
)
from treedp.estimation.efficient import VariancePlan
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.tree import TreeShape

__all__ = ["MAX_WORKLOAD_RANGES", "Workload", "workload_name"]

#: The most ranges an explicit workload may hold.
MAX_WORKLOAD_RANGES = 10**6


@dataclass(frozen=True, eq=False)
class Workload:
    """An explicit workload: ranges ``[lo_i, hi_i)`` of bins whose counts will be asked; its
    error is the exact mean of ``Var(P[hi] - P[lo])`` (build it with :meth:`from_ranges`)."""

    n_bins: int
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_ranges(cls, ranges: object, n_bins: int) -> Workload:
        """Validate a sequence of ``(lo, hi)`` pairs of bin indices, ``0 <= lo < hi <= B``,
        or of ints ``m`` (the prefix ``[0, m)``, ``1 <= m <= B``)."""
        if isinstance(ranges, str | bytes) or not isinstance(ranges, Sequence | np.ndarray):
            raise InvalidTypeError(
                must(
                    "workload",
                    "be 'cdf', 'ranges' or a sequence of (lo, hi) "
                    f"bin-index pairs. Got {type(ranges).__name__} instead.",
                )
            )
        pairs = []
        for item in ranges:
            if isinstance(item, int | np.integer) and not isinstance(item, bool):
                pairs.append((0, int(item)))
                continue
            if (
                isinstance(item, str | bytes)
                or not isinstance(item, Sequence | np.ndarray)
                or len(item) != 2
                or any(isinstance(v, bool) or not isinstance(v, int | np.integer) for v in item)
            ):
                raise InvalidTypeError(
                    "Every entry of 'workload' must be a (lo, hi) pair of ints or an int."
                )
            pairs.append((int(item[0]), int(item[1])))
        if not 1 <= len(pairs) <= MAX_WORKLOAD_RANGES:
            raise InvalidParameterError(
                must("workload", f"hold 1 to {MAX_WORKLOAD_RANGES} ranges.")
            )
        arr = np.array(pairs, dtype=np.int64)
        if np.any(arr[:, 0] < 0) or np.any(arr[:, 0] >= arr[:, 1]) or np.any(arr[:, 1] > n_bins):
            raise InvalidParameterError(
                f"Every range of 'workload' must satisfy 0 <= lo < hi <= bins ({n_bins})."
            )
        return cls(n_bins, arr[:, 0].copy(), arr[:, 1].copy())

    def __len__(self) -> int:
        return int(self.lo.size)

    def subset(self, size: int) -> Workload:
        """At most ``size`` of the ranges, evenly spaced in ``(lo, hi)`` order."""
        if len(self) <= size:
            return self
        order = np.lexsort((self.hi, self.lo))
        pick = order[np.linspace(0, len(self) - 1, size).round().astype(np.int64)]
        return Workload(self.n_bins, self.lo[pick].copy(), self.hi[pick].copy())

    def mean_variance(self, cov: PrefixCovariance) -> float:
        """Mean of ``Var(P[hi] - P[lo])`` under a prefix covariance."""
        lo, hi = self.lo, self.hi
        weights = None
        if lo.size > 4096:  # repeated ranges are scored once, weighted by their count
            keys, weights = np.unique(lo * (self.n_bins + 1) + hi, return_counts=True)
            lo, hi = np.divmod(keys, self.n_bins + 1)
        n = lo.size
        # one call (a covariance's cost is mostly per call): Cov(hi,hi), Cov(lo,lo), Cov(lo,hi)
        c = cov.cov(np.concatenate([hi, lo, lo]), np.concatenate([hi, lo, hi]))
        var = c[:n] + c[n : 2 * n] - 2 * c[2 * n :]
        return float(np.average(var, weights=weights))

    def tree_variance(
        self, shape: TreeShape, level_variance: tuple[float, ...], estimator: str
    ) -> float:
        """The workload's exact mean variance for a tree configuration."""
        if estimator == "direct":
            return self.mean_variance(DirectTreeCovariance(shape, level_variance))
        return self.mean_variance(EfficientTreeCovariance(VariancePlan(shape, level_variance)))

    def independent_variance(self, variance: float, n_public: bool) -> float:
        """For leaves with independent noise: a range of ``L`` bins has ``L·σ²``, or
        ``σ² L (B - L)/B`` when n is public."""
        length = (self.hi - self.lo).astype(np.float64)
        if n_public:
            return float(np.mean(variance * length * (self.n_bins - length) / self.n_bins))
        return float(np.mean(variance * length))


def workload_name(objective: str, workload: Workload | None) -> str:
    """What a plan was made for, for :attr:`Plan.workload`."""
    if workload is not None:
        return f"{len(workload)} given ranges"
    return {"cdf_mse": "cdf", "range_mse": "ranges"}.get(objective, "cdf (worst prefix)")
