"""The estimator of a release: each mechanism brings its own (no switch on its kind here).

These two functions only call the mechanism's hooks, ``Mechanism.prefix_estimate`` and
``Mechanism.prefix_covariance``; estimation never imports a mechanism.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from treedp.estimation.covariance import PrefixCovariance

if TYPE_CHECKING:
    from treedp.mechanisms.base import Mechanism

__all__ = ["ESTIMATORS", "estimate_prefix", "prefix_covariance"]

#: Estimators ``release_cdf`` accepts (each mechanism offers some of them).
ESTIMATORS = ("efficient", "direct")


def prefix_covariance(mechanism: Mechanism, estimator: str) -> PrefixCovariance:
    """The exact covariance of the prefix estimates (public parameters only)."""
    cov: PrefixCovariance = mechanism.prefix_covariance(estimator)
    return cov


def estimate_prefix(mechanism: Mechanism, levels: list[np.ndarray], estimator: str) -> np.ndarray:
    """Prefix estimates ``P[m]``, ``m = 0..B``, from the noisy blocks.

    The blocks may carry leading batch axes (for simulating many releases at once).
    """
    return mechanism.prefix_estimate(levels, estimator)
