"""Estimators: from noisy blocks to prefix (CDF) estimates."""

from treedp.estimation.direct import baseline_prefix, interval_index, tree_prefix

__all__ = ["ESTIMATORS", "baseline_prefix", "interval_index", "tree_prefix"]

#: Estimators ``release_cdf`` accepts.
ESTIMATORS = ("direct",)
