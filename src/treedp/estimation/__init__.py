"""Estimators: from noisy blocks to prefix (CDF) estimates and their exact covariances."""

from treedp.estimation.consistency import (
    POSTPROCESS,
    band_critical_value,
    check_postprocess,
    consistent_prefix,
    critical_value,
    live_se,
    trellis,
)
from treedp.estimation.covariance import PrefixCovariance
from treedp.estimation.direct import (
    cumulative_prefix,
    independent_prefix,
    interval_index,
    tree_prefix,
)
from treedp.estimation.dispatch import (
    ESTIMATORS,
    estimate_prefix,
    prefix_covariance,
)
from treedp.estimation.efficient import VariancePlan, efficient_tree

__all__ = [
    "ESTIMATORS",
    "POSTPROCESS",
    "PrefixCovariance",
    "VariancePlan",
    "band_critical_value",
    "check_postprocess",
    "consistent_prefix",
    "critical_value",
    "cumulative_prefix",
    "efficient_tree",
    "estimate_prefix",
    "independent_prefix",
    "interval_index",
    "live_se",
    "prefix_covariance",
    "tree_prefix",
    "trellis",
]
