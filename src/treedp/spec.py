"""The parameters of one release as a frozen value, validated once.

:class:`ReleaseSpec` is what :func:`treedp.release_cdf`, :func:`treedp.release_counts`,
:func:`treedp.plan` and :func:`treedp.predict_error` build from their keywords, and what every
layer below reads: no parameter is checked twice. Checks that need the data (the public ``n``
against the counted records, the counts themselves) are made where the data is.

Budget convention, in and out: ``level_budgets`` are root first, one per level of the tree
(``h + 1`` values), with 0 for the exact root under ``replace``; this is what
:attr:`treedp.Plan.level_budgets` and ``Release.level_budgets`` report, so they can be passed
back. (Under ``replace`` the ``h`` values below the root alone are accepted too.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp._validation import check_bool, check_int, check_option, check_real
from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.domain import MAX_BINS, Bins
from treedp.estimation import POSTPROCESS, check_estimator
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.base import check_replace_bins
from treedp.mechanisms.registry import MECHANISMS

__all__ = ["ALL_MECHANISMS", "NAN_POLICIES", "ReleaseSpec"]

#: What ``mechanism=`` accepts: ``"auto"`` lets the planner choose; the rest is the registry.
ALL_MECHANISMS: tuple[str, ...] = ("auto", *MECHANISMS)
#: What ``nan=`` accepts.
NAN_POLICIES = ("error", "drop")


@dataclass(frozen=True)
class ReleaseSpec:
    """Everything public about a release, validated at construction.

    Parameters
    ----------
    bins : int or Bins
        The number of bins ``B`` (planning, prediction, releasing from counts) or the public
        bins themselves.
    epsilon : float
        The total budget, in ``[1e-6, 50]``.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation.
    n : int, optional
        The public size under ``replace`` (may be left out for planning and error
        prediction, which do not depend on it); must be None under ``add_remove``.
    mechanism : str, default="auto"
        ``"auto"`` or a registered mechanism name.
    branching : int or tuple of int, optional
        Tree fan-out (trees only).
    level_budgets : tuple of float, optional
        Budget per level, root first (trees only; see the module docstring).
    estimator : {"efficient", "direct"}, optional
        None picks the best one for the mechanism.
    postprocess : {"monotone", "monotone_l1", "none"}, default="monotone"
    integer : bool, default=False
    nan : {"error", "drop"}, default="error"

    Raises
    ------
    InvalidTypeError
        A parameter has the wrong type.
    InvalidParameterError
        A parameter has a wrong value, or two parameters contradict each other.
    """

    bins: int | Bins
    epsilon: float
    neighbours: Neighbours = "add_remove"
    n: int | None = None
    mechanism: str = "auto"
    branching: int | tuple[int, ...] | None = None
    level_budgets: tuple[float, ...] | None = None
    estimator: str | None = None
    postprocess: str = "monotone"
    integer: bool = False
    nan: str = "error"

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not isinstance(self.bins, Bins):
            put(self, "bins", check_int(self.bins, "bins", lo=1, hi=MAX_BINS))
        put(self, "epsilon", check_epsilon(self.epsilon))
        nb, n = check_neighbours(self.neighbours, self.n, require_n=False)
        put(self, "neighbours", nb)
        put(self, "n", n)
        nan = check_option(self.nan, "nan", NAN_POLICIES)
        if nan == "drop" and nb == "replace":
            raise InvalidParameterError(
                "nan='drop' is not allowed with neighbours='replace': dropping would make the "
                "number of counted records private while replace treats it as the public n. "
                "Clean the column first, or use neighbours='add_remove'."
            )
        mech = check_option(self.mechanism, "mechanism", ALL_MECHANISMS)
        tree_like = mech in ("auto", "tree")
        if self.branching is not None:
            if not tree_like:
                raise InvalidParameterError(
                    f"The 'branching' parameter applies to mechanism='tree' only, not {mech!r}."
                )
            put(self, "branching", _branching(self.branching))
        if self.level_budgets is not None:
            if not tree_like:
                raise InvalidParameterError(
                    f"The 'level_budgets' parameter applies to mechanism='tree' only, not {mech!r}."
                )
            put(self, "level_budgets", _budgets(self.level_budgets))
        if self.estimator is not None:
            check_option(self.estimator, "estimator", ("efficient", "direct"))
        check_estimator(self.estimator, "tree" if mech == "auto" else mech)
        check_option(self.postprocess, "postprocess", POSTPROCESS)
        check_bool(self.integer, "integer")
        put(self, "integer", bool(self.integer))
        if self.integer and self.postprocess == "none":
            raise InvalidParameterError(
                "integer=True makes a consistent integer CDF: it needs postprocess='monotone' "
                "or 'monotone_l1', not 'none'."
            )
        check_replace_bins(nb, self.n_bins)

    @property
    def n_bins(self) -> int:
        """The number of bins ``B``."""
        return self.bins.n_bins if isinstance(self.bins, Bins) else int(self.bins)

    @property
    def estimator_name(self) -> str:
        """The estimator used: the one given, else the best for the mechanism."""
        mech = self.mechanism if self.mechanism != "auto" else "tree"
        return check_estimator(self.estimator, mech)

    def require_n(self) -> int | None:
        """The public ``n`` (None under ``add_remove``); refuses a missing ``n`` under
        ``replace``, which a release (not a plan) needs."""
        if self.neighbours == "replace" and self.n is None:
            raise InvalidParameterError(
                "With neighbours='replace' the dataset size is public: the 'n' parameter must "
                "be given as an int >= 0. Got n=None instead."
            )
        return self.n


def _branching(value: Any) -> int | tuple[int, ...]:
    if isinstance(value, bool):
        raise InvalidTypeError("The 'branching' parameter must be an int or a sequence of ints.")
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidTypeError(
            "The 'branching' parameter must be an int or a sequence of ints. "
            f"Got {type(value).__name__} instead."
        )
    return tuple(check_int(k, "branching") for k in value)


def _budgets(value: Any) -> tuple[float, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidTypeError(
            "The 'level_budgets' parameter must be a sequence of floats. "
            f"Got {type(value).__name__} {value!r} instead."
        )
    return tuple(check_real(b, "level_budgets", lo=0.0) for b in value)
