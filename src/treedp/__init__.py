"""treedp: differentially private distributions (CDF, ranges, quantiles) from tree mechanisms.

Every release call (:func:`release_cdf`, :func:`release_counts`, :func:`release_grouped`)
builds one validated :class:`Query` (:func:`build_query`) and spends budget in one run of it
(:func:`run_query`); everything asked of the :class:`Release` it returns afterwards is
post-processing and free. Public names are imported on first use (PEP 562), so ``import
treedp`` and ``treedp --version`` stay fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from treedp import _views
from treedp._version import __version__
from treedp.exceptions import (
    BoundsWarning,
    BudgetExceededError,
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    LedgerError,
    MissingDependencyError,
    ReleaseFormatError,
    TreeDPError,
)

if TYPE_CHECKING:  # the names below are imported on first use (PEP 562)
    from treedp.accuracy import ErrorPrediction, predict_error
    from treedp.api import release_cdf, release_counts
    from treedp.api_grouped import release_grouped
    from treedp.config import default_branching
    from treedp.continual import ContinualStream, continual, load_continual
    from treedp.domain import Bins, make_bins
    from treedp.engines.files import FileSource
    from treedp.engines.local import LocalEngine
    from treedp.engines.sql import SqlSource
    from treedp.io import read_column
    from treedp.median_request import check_median
    from treedp.noise import InsecureSeededSource, RandomSource, SystemRandomSource
    from treedp.options import MechanismOptions, PrivacyUnit, PrivateBounds
    from treedp.parameters import PARAMETERS
    from treedp.planning import Plan, PlanCache, plan
    from treedp.privacy.accountant import Accountant
    from treedp.privacy.auto_bound import AutoBound
    from treedp.privacy.ledger import Ledger, init_ledger, list_datasets, open_ledger
    from treedp.privacy.measures import ZCDP, ApproxDP, PureDP
    from treedp.profiling.front import profile
    from treedp.profiling.result import TableProfile
    from treedp.quantiles_api import QuantilesResult, median, quantiles
    from treedp.query import Query, build_query
    from treedp.release import Release, load_release
    from treedp.release.grouped import GroupedRelease, is_grouped_file, load_grouped_release
    from treedp.report import write_report
    from treedp.run import run as run_query
    from treedp.sources import check_files, convert_keys
    from treedp.spec import ReleaseSpec
    from treedp.subject import noting
    from treedp.tree import TreeShape
    from treedp.value_methods.private_bounds import private_bounds
    from treedp.value_methods.quantile_exponential import quantile_exponential
    from treedp.value_methods.quantiles_recursive import quantiles_recursive
    from treedp.value_methods.stable_median import stable_median
    from treedp.value_methods.subsample_aggregate import noisy_mode, subsample_and_aggregate

#: public name -> the module that defines it, imported on first access
_LAZY = {
    "ErrorPrediction": "treedp.accuracy",
    "predict_error": "treedp.accuracy",
    "release_cdf": "treedp.api",
    "release_counts": "treedp.api",
    "release_grouped": "treedp.api_grouped",
    "default_branching": "treedp.config",
    "continual": "treedp.continual",
    "load_continual": "treedp.continual",
    "ContinualStream": "treedp.continual",
    "Bins": "treedp.domain",
    "make_bins": "treedp.domain",
    "FileSource": "treedp.engines.files",
    "read_column": "treedp.io",
    "private_bounds": "treedp.value_methods.private_bounds",
    "median": "treedp.quantiles_api",
    "quantile_exponential": "treedp.value_methods.quantile_exponential",
    "quantiles_recursive": "treedp.value_methods.quantiles_recursive",
    "stable_median": "treedp.value_methods.stable_median",
    "noisy_mode": "treedp.value_methods.subsample_aggregate",
    "subsample_and_aggregate": "treedp.value_methods.subsample_aggregate",
    "check_median": "treedp.median_request",
    "InsecureSeededSource": "treedp.noise",
    "RandomSource": "treedp.noise",
    "SystemRandomSource": "treedp.noise",
    "PARAMETERS": "treedp.parameters",
    "Plan": "treedp.planning",
    "PlanCache": "treedp.planning",
    "plan": "treedp.planning",
    "noting": "treedp.subject",
    "Accountant": "treedp.privacy.accountant",
    "Ledger": "treedp.privacy.ledger",
    "init_ledger": "treedp.privacy.ledger",
    "list_datasets": "treedp.privacy.ledger",
    "open_ledger": "treedp.privacy.ledger",
    "ZCDP": "treedp.privacy.measures",
    "ApproxDP": "treedp.privacy.measures",
    "PureDP": "treedp.privacy.measures",
    "profile": "treedp.profiling.front",
    "TableProfile": "treedp.profiling.result",
    "QuantilesResult": "treedp.quantiles_api",
    "quantiles": "treedp.quantiles_api",
    "Release": "treedp.release",
    "load_release": "treedp.release",
    "GroupedRelease": "treedp.release.grouped",
    "is_grouped_file": "treedp.release.grouped",
    "load_grouped_release": "treedp.release.grouped",
    "write_report": "treedp.report",
    "check_files": "treedp.sources",
    "convert_keys": "treedp.sources",
    "ReleaseSpec": "treedp.spec",
    "TreeShape": "treedp.tree",
    "LocalEngine": "treedp.engines.local",
    "SqlSource": "treedp.engines.sql",
    "Query": "treedp.query",
    "build_query": "treedp.query",
    "run_query": "treedp.run",  # treedp.run.run, under a name that says what it runs
    "MechanismOptions": "treedp.options",
    "PrivacyUnit": "treedp.options",
    "AutoBound": "treedp.privacy.auto_bound",
    "PrivateBounds": "treedp.options",
}

__all__ = [
    "PARAMETERS",
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "AutoBound",
    "Bins",
    "BoundsWarning",
    "BudgetExceededError",
    "ContinualStream",
    "DataError",
    "ErrorPrediction",
    "FileSource",
    "GroupedRelease",
    "InsecureSeededSource",
    "InvalidParameterError",
    "InvalidTypeError",
    "Ledger",
    "LedgerError",
    "LocalEngine",
    "MechanismOptions",
    "MissingDependencyError",
    "Plan",
    "PlanCache",
    "PrivacyUnit",
    "PrivateBounds",
    "PureDP",
    "QuantilesResult",
    "Query",
    "RandomSource",
    "Release",
    "ReleaseFormatError",
    "ReleaseSpec",
    "SqlSource",
    "SystemRandomSource",
    "TableProfile",
    "TreeDPError",
    "TreeShape",
    "__version__",
    "build_query",
    "check_files",
    "check_median",
    "continual",
    "convert_keys",
    "default_branching",
    "init_ledger",
    "is_grouped_file",
    "list_datasets",
    "load_continual",
    "load_grouped_release",
    "load_release",
    "make_bins",
    "median",
    "noisy_mode",
    "noting",
    "open_ledger",
    "plan",
    "predict_error",
    "private_bounds",
    "profile",
    "quantile_exponential",
    "quantiles",
    "quantiles_recursive",
    "read_column",
    "release_cdf",
    "release_counts",
    "release_grouped",
    "run_query",
    "stable_median",
    "subsample_and_aggregate",
    "write_report",
]

# A release's plot, HTML, tables and warnings live in treedp.report, which the release layer
# never imports: its methods call them through this hook table, loaded on first use.
_views.set_loader(lambda: importlib.import_module("treedp.report"))


def __getattr__(name: str) -> Any:
    """Import a public name on first use, so ``import treedp`` stays light (PEP 562)."""
    if name in ("datasets", "interrupts"):  # the vendored example data; a front end's signals
        return importlib.import_module(f"treedp.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'treedp' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), "run" if name == "run_query" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, the version and the submodules (not the module's own imports)."""
    names = set(__all__) | {"__version__", "datasets", "interrupts"}
    names |= {k for k, v in globals().items() if type(v).__name__ == "module" and k[0] != "_"}
    return sorted(names - {"importlib"})
