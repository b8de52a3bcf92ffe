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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treedp._validation import check_bool, check_int, check_option, check_real, must
from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.domain import MAX_BINS, Bins
from treedp.estimation import POSTPROCESS
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.base import check_replace_bins
from treedp.mechanisms.registry import MECHANISMS, REGISTRY, mechanism_class
from treedp.mechanisms.tree import check_rho
from treedp.noise.families import budgeted, noise_family
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP, zcdp_to_epsilon

__all__ = [
    "ALL_MECHANISMS",
    "MAX_DELTA",
    "NAN_POLICIES",
    "ReleaseSpec",
    "check_target",
    "make_spec",
    "rho_for_approx_dp",
]

#: Largest δ accepted for an (ε, δ) target: δ must be (much) smaller than 1/n to mean anything.
MAX_DELTA = 1e-3

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
    epsilon : float, optional
        The total pure-DP budget, in ``[1e-6, 50]``: exact discrete Laplace noise.
    privacy : PureDP, ZCDP or ApproxDP, optional
        The target guarantee instead of ``epsilon`` (exactly one of the two is given):
        ``PureDP(ε)`` is ``epsilon=ε``; ``ZCDP(ρ)`` releases a tree with exact discrete
        Gaussian noise at ``ρ`` (``ρ`` in ``[1e-6, 1250]``); ``ApproxDP(ε, δ)``, with ``δ`` in
        ``(0, 1e-3]``, the same at the largest ``ρ`` whose tight conversion
        (:func:`treedp.privacy.measures.zcdp_to_epsilon`) gives at most ``ε`` at ``δ``
        (:func:`rho_for_approx_dp`). Gaussian noise is for trees (``mechanism`` ``"auto"`` or
        ``"tree"``).
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
    epsilon: float | None = None
    neighbours: Neighbours = "add_remove"
    n: int | None = None
    mechanism: str = "auto"
    branching: int | tuple[int, ...] | None = None
    level_budgets: tuple[float, ...] | None = None
    estimator: str | None = None
    postprocess: str = "monotone"
    integer: bool = False
    nan: str = "error"
    privacy: Measure | None = None
    _rho: float | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not isinstance(self.bins, Bins):
            put(self, "bins", check_int(self.bins, "bins", lo=1, hi=MAX_BINS))
        if self.privacy is None:
            put(self, "epsilon", check_epsilon(self.epsilon))
        else:
            if self.epsilon is not None:
                raise InvalidParameterError(
                    "Give the budget once: either 'epsilon' (pure DP) or 'privacy' (a target "
                    "guarantee such as treedp.ZCDP(rho) or treedp.ApproxDP(epsilon, delta)), "
                    "not both."
                )
            put(self, "privacy", check_target(self.privacy))
            if isinstance(self.privacy, PureDP):
                put(self, "epsilon", check_epsilon(self.privacy.epsilon))
            elif isinstance(self.privacy, ZCDP):
                put(self, "_rho", self.privacy.rho)
            elif isinstance(self.privacy, ApproxDP):
                put(self, "_rho", rho_for_approx_dp(self.privacy.epsilon, self.privacy.delta))
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
        mech = check_option(self.mechanism, "mechanism", ("auto", *REGISTRY))  # plug-ins too
        kind = None if mech == "auto" else mechanism_class(mech)
        tree_like = kind is None or kind.takes_shape
        if kind is not None and self.noise not in kind.noises:
            given = noise_family(self.noise)
            adds = noise_family(kind.noises[0])
            raise InvalidParameterError(
                f"mechanism={mech!r} adds {adds.label} noise, not the {given.label} noise of "
                f"{'epsilon=' if given.budget_name == 'epsilon' else 'privacy=ZCDP/ApproxDP'}: "
                + (
                    "give privacy=treedp.ZCDP(rho) or treedp.ApproxDP(epsilon, delta)."
                    if adds.budget_name == "rho"
                    else "use epsilon= for it."
                )
            )
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
        mechanism_class("tree" if mech == "auto" else mech).check_estimator(self.estimator)
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
    def noise(self) -> str:
        """The key of the noise family the budget calls for (:func:`treedp.noise.families
        .budgeted`: the family whose budget is ε for ``epsilon`` / ``PureDP``, ρ for a zCDP
        or (ε, δ) target)."""
        return budgeted(self.epsilon, self._rho)[0].key

    @property
    def rho(self) -> float | None:
        """The zCDP budget of a Gaussian release (None for Laplace); for an ``ApproxDP``
        target, :func:`rho_for_approx_dp` of it."""
        return self._rho

    @property
    def budget(self) -> float:
        """The total the level budgets add up to: ``epsilon`` (Laplace) or ``rho``."""
        rho = self.rho
        if rho is not None:
            return rho
        assert self.epsilon is not None  # validated: one of the two is set
        return self.epsilon

    @property
    def estimator_name(self) -> str:
        """The estimator used: the one given, else the best for the mechanism."""
        mech = self.mechanism if self.mechanism != "auto" else "tree"
        return mechanism_class(mech).check_estimator(self.estimator)

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
        raise InvalidTypeError(must("branching", "be an int or a sequence of ints."))
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidTypeError(
            must(
                "branching", f"be an int or a sequence of ints. Got {type(value).__name__} instead."
            )
        )
    return tuple(check_int(k, "branching") for k in value)


def _budgets(value: Any) -> tuple[float, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence | np.ndarray):
        raise InvalidTypeError(
            must(
                "level_budgets",
                f"be a sequence of floats. Got {type(value).__name__} {value!r} instead.",
            )
        )
    return tuple(check_real(b, "level_budgets", lo=0.0) for b in value)


def check_target(value: Any) -> Measure:
    """A target guarantee: type, ``ρ`` (named 'rho') in ``[MIN_RHO, MAX_RHO]``, ``ε`` and
    ``δ`` in ``(0, MAX_DELTA]`` checked: the one rule of every entry point's ``privacy=``."""
    if not isinstance(value, PureDP | ZCDP | ApproxDP):
        raise InvalidTypeError(
            must(
                "privacy",
                "be a guarantee: treedp.PureDP(epsilon), "
                "treedp.ZCDP(rho) or treedp.ApproxDP(epsilon, delta). "
                f"Got {type(value).__name__} instead.",
            )
        )
    if isinstance(value, ZCDP):
        check_rho(value.rho)
    elif isinstance(value, ApproxDP):
        if not 0.0 < value.delta <= MAX_DELTA:
            raise InvalidParameterError(
                f"The 'delta' of an ApproxDP target must be in (0, {MAX_DELTA:g}]. "
                f"Got {value.delta!r} instead."
            )
        check_epsilon(value.epsilon)
    return value


def rho_for_approx_dp(epsilon: float, delta: float) -> float:
    """The largest ``ρ`` (to a relative ``1e-12``) with ``zcdp_to_epsilon(ρ, δ) <= ε``.

    ``zcdp_to_epsilon`` is the tight conversion of Canonne, Kamath & Steinke (2020, Cor. 13),
    increasing in ``ρ``; bisection keeps the invariant ``zcdp_to_epsilon(lo, δ) <= ε`` and
    returns ``lo``, so a ``ρ``-zCDP release is (ε, δ)-DP by the same conversion.

    Examples
    --------
    >>> from treedp.spec import rho_for_approx_dp
    >>> round(rho_for_approx_dp(1.0, 1e-6), 5)
    0.02436
    """
    eps = check_epsilon(epsilon)
    lo, hi = 0.0, eps * eps / 2.0 + eps  # pure ε gives ε²/2; the conversion is above ρ
    while zcdp_to_epsilon(hi, delta) <= eps:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi) or hi - lo <= 1e-12 * hi:
            break
        if zcdp_to_epsilon(mid, delta) <= eps:
            lo = mid
        else:
            hi = mid
    if lo <= 0.0:
        raise InvalidParameterError(
            "No positive rho meets this (epsilon, delta) target: raise epsilon or delta."
        )
    return lo


def make_spec(
    the_bins: Bins,
    epsilon: float | None,
    neighbours: Neighbours,
    n: int | None,
    mechanism: str,
    branching: Any,
    level_budgets: Any,
    estimator: str | None,
    postprocess: str,
    integer: bool,
    *,
    nan: str = "error",
    privacy: Measure | None = None,
) -> ReleaseSpec:
    """The one validated spec of every entry point (lists become tuples: the spec is frozen)."""

    def frozen(value: Any) -> Any:
        return tuple(value) if isinstance(value, list) else value

    return ReleaseSpec(
        bins=the_bins,
        epsilon=epsilon,
        neighbours=neighbours,
        n=n,
        mechanism=mechanism,
        branching=frozen(branching),
        level_budgets=frozen(level_budgets),
        estimator=estimator,
        postprocess=postprocess,
        integer=integer,
        nan=nan,
        privacy=privacy,
    )
