"""Pick the estimator for a mechanism: prefix estimates and their exact covariances."""

from __future__ import annotations

import math

import numpy as np

from treedp.estimation.covariance import (
    DirectTreeCovariance,
    EfficientTreeCovariance,
    HistogramCovariance,
    IndependentPrefixCovariance,
    PrefixCovariance,
)
from treedp.estimation.direct import baseline_prefix, tree_prefix
from treedp.estimation.efficient import VariancePlan, efficient_tree
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import Mechanism, SqrtFactorizationMechanism, TreeMechanism
from treedp.mechanisms.dawa import NO_INTERVALS, DawaMechanism
from treedp.mechanisms.strategy import StrategyMechanism
from treedp.strategy.model import StrategyCovariance
from treedp.tree import TreeShape

__all__ = ["ESTIMATORS", "check_estimator", "estimate_prefix", "prefix_covariance"]

#: Estimators ``release_cdf`` accepts.
ESTIMATORS = ("efficient", "direct")


def check_estimator(estimator: str | None, mechanism_name: str) -> str:
    """Validate ``estimator`` for a mechanism; None picks the best available one.

    ``"efficient"`` is the BLUE for trees and histograms; for the threshold baseline (one
    independent noisy value per prefix) it is the same as ``"direct"``; the strategy
    mechanism always uses least squares (both names give it). The all-intervals
    baseline supports ``"direct"`` only.
    """
    if estimator is None:
        return "direct" if mechanism_name == "all_intervals" else "efficient"
    if estimator not in ESTIMATORS:
        raise InvalidParameterError(
            f"The 'estimator' parameter must be one of {', '.join(map(repr, ESTIMATORS))}. "
            f"Got {estimator!r} instead."
        )
    if estimator == "efficient" and mechanism_name == "all_intervals":
        raise InvalidParameterError(
            "estimator='efficient' is not available for mechanism='all_intervals' (it would "
            "need least squares over B(B+1)/2 counts); use estimator='direct'."
        )
    return estimator


def _histogram_tree(mechanism: Mechanism) -> tuple[TreeShape, tuple[float, float]]:
    """A noisy histogram as a one-level tree whose root is exact (n public) or unobserved."""
    b = mechanism.n_bins
    root_var = 0.0 if mechanism.n is not None else math.inf
    return TreeShape(b, (b,)), (root_var, mechanism.block_variance()[0])


def _check_direct(mechanism: TreeMechanism) -> None:
    """The direct estimator sums covering nodes: it needs every level measured."""
    if mechanism.off_levels:
        raise InvalidParameterError(
            "estimator='direct' needs every tree level measured; this tree has levels switched "
            "off (budget 0): use estimator='efficient'."
        )


def prefix_covariance(mechanism: Mechanism, estimator: str) -> PrefixCovariance:
    """The exact covariance of the prefix estimates (public parameters only)."""
    if isinstance(mechanism, DawaMechanism):  # the spreading bias is data-dependent
        raise InvalidParameterError(NO_INTERVALS)
    variances = mechanism.block_variance()
    if isinstance(mechanism, StrategyMechanism):  # least squares (GLS), exact covariances
        return StrategyCovariance(mechanism.strategy, variances[0], mechanism.n is not None)
    if isinstance(mechanism, SqrtFactorizationMechanism):  # one unbiased linear estimator
        sqrt_cov: PrefixCovariance = mechanism.covariance()
        return sqrt_cov
    if isinstance(mechanism, TreeMechanism):
        if estimator == "efficient":
            return EfficientTreeCovariance(VariancePlan(mechanism.shape, variances))
        _check_direct(mechanism)
        return DirectTreeCovariance(mechanism.shape, variances)
    n_bins = mechanism.n_bins
    public = mechanism.n is not None
    if mechanism.name == "histogram":
        if estimator == "efficient" and n_bins >= 2:
            shape, tree_var = _histogram_tree(mechanism)
            return EfficientTreeCovariance(VariancePlan(shape, tree_var))
        return HistogramCovariance(n_bins, variances[0], public)
    return IndependentPrefixCovariance(n_bins, variances[0], public)


def estimate_prefix(mechanism: Mechanism, levels: list[np.ndarray], estimator: str) -> np.ndarray:
    """Prefix estimates ``P[m]``, ``m = 0..B``, from the noisy blocks.

    The blocks may carry leading batch axes (for simulating many releases at once).
    """
    if isinstance(mechanism, DawaMechanism):  # the tree over the buckets, spread in buckets
        return mechanism.spread(estimate_prefix(mechanism._require_bound(), levels, estimator))
    variances = mechanism.block_variance()
    if isinstance(mechanism, StrategyMechanism):  # least squares, n imposed when public
        cov = StrategyCovariance(mechanism.strategy, variances[0], mechanism.n is not None)
        return cov.estimate(np.asarray(levels[0]), mechanism.n)
    if isinstance(mechanism, SqrtFactorizationMechanism):
        return mechanism.estimate_prefix(levels)
    if isinstance(mechanism, TreeMechanism):
        if estimator == "efficient":
            return efficient_tree(mechanism.shape, levels, variances).prefix(mechanism.shape.n_bins)
        _check_direct(mechanism)
        return tree_prefix(mechanism.shape, levels, variances)[0]
    n_bins = mechanism.n_bins
    n = mechanism.n
    if mechanism.name == "histogram" and estimator == "efficient" and n_bins >= 2:
        shape, tree_var = _histogram_tree(mechanism)
        leaves = np.asarray(levels[0])
        root = np.full((*leaves.shape[:-1], 1), 0 if n is None else n, dtype=np.int64)
        return efficient_tree(shape, [root, leaves], tree_var).prefix(n_bins)
    return baseline_prefix(mechanism.name, levels, variances, n_bins, n)[0]
