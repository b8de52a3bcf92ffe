"""Exceptions raised by treedp.

Every error that treedp raises on purpose derives from :class:`TreeDPError`, and also from the
matching builtin, so callers may catch either::

    TreeDPError
    ├── InvalidParameterError (ValueError)   a parameter is outside what is allowed
    │   └── DataError                         the data breaks a stated policy (NaN, empty, ...)
    ├── InvalidTypeError (TypeError)          a parameter or the data has the wrong type
    ├── ReleaseFormatError (ValueError)       a release file is corrupt, truncated or foreign
    ├── BudgetExceededError (ValueError)      a spend would exceed an accountant's total
    ├── LedgerError (ValueError)              a ledger file is foreign, inconsistent or missing
    └── MissingDependencyError (ImportError)  an optional extra is needed
"""

from __future__ import annotations

__all__ = [
    "BoundsWarning",
    "BudgetExceededError",
    "DataError",
    "InvalidParameterError",
    "InvalidTypeError",
    "LedgerError",
    "MissingDependencyError",
    "ReleaseFormatError",
    "TreeDPError",
]


class TreeDPError(Exception):
    """Base class of every error treedp raises on purpose."""


class InvalidParameterError(TreeDPError, ValueError):
    """A parameter value is outside the allowed set; the message names both."""


class DataError(InvalidParameterError):
    """The data violates a stated policy, for example NaN values with ``nan="error"``."""


class InvalidTypeError(TreeDPError, TypeError):
    """A parameter or the data has a type treedp does not accept."""


class ReleaseFormatError(TreeDPError, ValueError):
    """A release file cannot be read: corrupt, truncated, foreign or from a future version."""


class BudgetExceededError(TreeDPError, ValueError):
    """A spend would take an accountant past its total: refused before any noise is drawn."""


class LedgerError(TreeDPError, ValueError):
    """A ledger file is not a treedp ledger, was edited inconsistently, or lacks the dataset."""


class MissingDependencyError(TreeDPError, ImportError):
    """An optional dependency is needed; the message names the extra to install."""


class BoundsWarning(UserWarning):
    """The bounds may be wrong for the data: an end bin holds much of the released mass
    (values clamped into it, a point mass at the bound, or bounds much wider than the data:
    the released counts cannot tell which; public or private bounds), or a private bounds
    scan ran off the public grid, stopped at once or had too few records for its allowance.
    Emitted by :func:`treedp.release_cdf` and :func:`treedp.release_counts` whenever
    ``Release.bounds_warning()`` says so (what the command line prints), and by
    :func:`treedp.quantiles` with private bounds (``QuantilesResult.bounds_warning``), at
    the user's call (from :func:`treedp.profile` too, whose columns run on threads).
    Decided from the released (noisy) counts and stops only: post-processing, no privacy
    cost, and no data value in its text."""
