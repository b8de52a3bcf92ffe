"""Estimators: from noisy blocks to prefix (CDF) estimates and their exact covariances."""

from treedp.estimation.covariance import PrefixCovariance
from treedp.estimation.direct import baseline_prefix, interval_index, tree_prefix
from treedp.estimation.dispatch import (
    ESTIMATORS,
    check_estimator,
    estimate_prefix,
    prefix_covariance,
)
from treedp.estimation.efficient import VariancePlan, efficient_tree

__all__ = [
    "ESTIMATORS",
    "PrefixCovariance",
    "VariancePlan",
    "baseline_prefix",
    "check_estimator",
    "efficient_tree",
    "estimate_prefix",
    "interval_index",
    "prefix_covariance",
    "tree_prefix",
]
