"""treedp: differentially private distributions (CDF, ranges, quantiles) from tree mechanisms.

The one call that spends privacy budget is :func:`release_cdf`; everything asked of the
:class:`Release` it returns afterwards is post-processing and free.
"""

from treedp._version import __version__
from treedp.accuracy import ErrorPrediction, predict_error
from treedp.api import release_cdf, release_counts
from treedp.config import default_branching
from treedp.domain import Bins, make_bins
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    MissingDependencyError,
    ReleaseFormatError,
    TreeDPError,
)
from treedp.mechanisms.private_bounds import private_bounds
from treedp.mechanisms.quantile_exponential import median, quantile_exponential
from treedp.mechanisms.quantiles_recursive import quantiles_recursive
from treedp.mechanisms.stable_median import stable_median
from treedp.mechanisms.subsample_aggregate import noisy_mode, subsample_and_aggregate
from treedp.noise import InsecureSeededSource, RandomSource, SystemRandomSource
from treedp.planning import Plan, PlanCache, plan
from treedp.quantiles_api import QuantilesResult, quantiles
from treedp.release import Release, load_release
from treedp.spec import ReleaseSpec
from treedp.tree import TreeShape

__all__ = [
    "Bins",
    "DataError",
    "ErrorPrediction",
    "InsecureSeededSource",
    "InvalidParameterError",
    "InvalidTypeError",
    "MissingDependencyError",
    "Plan",
    "PlanCache",
    "QuantilesResult",
    "RandomSource",
    "Release",
    "ReleaseFormatError",
    "ReleaseSpec",
    "SystemRandomSource",
    "TreeDPError",
    "TreeShape",
    "__version__",
    "default_branching",
    "load_release",
    "make_bins",
    "median",
    "noisy_mode",
    "plan",
    "predict_error",
    "private_bounds",
    "quantile_exponential",
    "quantiles",
    "quantiles_recursive",
    "release_cdf",
    "release_counts",
    "stable_median",
    "subsample_and_aggregate",
]
