"""treedp: differentially private distributions (CDF, ranges, quantiles) from tree mechanisms.

The one call that spends privacy budget is :func:`release_cdf`; everything asked of the
:class:`Release` it returns afterwards is post-processing and free.
"""

from treedp._version import __version__
from treedp.accuracy import ErrorPrediction, predict_error
from treedp.api import release_cdf, release_counts
from treedp.api_grouped import release_grouped
from treedp.config import default_branching
from treedp.domain import Bins, make_bins
from treedp.exceptions import (
    BudgetExceededError,
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    LedgerError,
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
from treedp.privacy.accountant import Accountant
from treedp.privacy.ledger import Ledger, init_ledger, open_ledger
from treedp.privacy.measures import ZCDP, ApproxDP, PureDP
from treedp.quantiles_api import QuantilesResult, quantiles
from treedp.release import Release, load_release
from treedp.release.grouped import GroupedRelease, load_grouped_release
from treedp.spec import ReleaseSpec
from treedp.tree import TreeShape

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "Bins",
    "BudgetExceededError",
    "DataError",
    "ErrorPrediction",
    "GroupedRelease",
    "InsecureSeededSource",
    "InvalidParameterError",
    "InvalidTypeError",
    "Ledger",
    "LedgerError",
    "MissingDependencyError",
    "Plan",
    "PlanCache",
    "PureDP",
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
    "init_ledger",
    "load_grouped_release",
    "load_release",
    "make_bins",
    "median",
    "noisy_mode",
    "open_ledger",
    "plan",
    "predict_error",
    "private_bounds",
    "quantile_exponential",
    "quantiles",
    "quantiles_recursive",
    "release_cdf",
    "release_counts",
    "release_grouped",
    "stable_median",
    "subsample_and_aggregate",
]
