"""The public checks of a quantile query, made before anything is charged.

:func:`treedp.quantiles_run.plan_steps` calls them with the method that will run (or, with a
private count still to choose it, the strictest one): the bounds and the tree's number of
bins as the methods will check them, the column's kind against the bounds', and the budget
left for the quantiles after the bounds', count's and gate's shares.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise.families import check_rho
from treedp.privacy.measures import ApproxDP
from treedp.quantile_methods import QUANTILE_METHODS, inside_integer_limit, integer_bounds
from treedp.quantiles_choice import tree_bins
from treedp.spec import rho_for_approx_dp
from treedp.value_methods._column import is_datetime_like

__all__ = [
    "calibrated_epsilon",
    "check_bounds",
    "check_kinds",
    "check_private_bounds",
    "check_rest",
    "check_selection_records",
    "rest_usable",
]


def check_kinds(method: str, bounds: Any, unit: str | None) -> None:
    """Datetime bounds need datetime values (every method); datetime values need datetime
    bounds for the tree (the other methods read numeric bounds as ticks of the data's unit)."""
    dated = is_datetime_like(bounds[0]) or is_datetime_like(bounds[1])
    if dated and unit is None:
        raise InvalidTypeError("The 'bounds' parameter holds datetimes but 'values' holds numbers.")
    if QUANTILE_METHODS[method].binned and not dated and unit is not None:
        raise InvalidTypeError(
            "The 'values' argument holds datetimes but the bounds are numbers; give datetime "
            f"bounds for method={method!r}."
        )


def check_bounds(method: str, bounds: Any, bins: Any, eps: float, n: int | None) -> None:
    """The bounds (and the tree's number of bins) as the chosen method will check them, before
    anything is charged. A binned method's ``bins``, when given, are built once here to check
    that the bounds can hold them (two floats a few ulps apart, or a datetime span of fewer
    microseconds than bins, were refused after the charge: an independent review); bins the
    rule picks (:func:`tree_bins`) are halved until the bounds hold them, so one is checked."""
    from treedp.domain import MAX_BINS, make_bins

    pair = (bounds[0], bounds[1])
    _check_integers(method, bins)
    if bins == "integers":
        lo, hi = integer_bounds(pair)
        count = hi - lo + 1
    else:
        count = tree_bins(eps, n=n) if bins is None else bins
        given = bins is not None and QUANTILE_METHODS[method].binned and count <= MAX_BINS
        make_bins(bounds=pair, bins=count if given else 1)
    if bins == "integers" and QUANTILE_METHODS[method].integer_mode:
        from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

        if max(abs(lo), abs(hi) + 1) >= INTEGER_LIMIT:
            raise InvalidParameterError(
                f"With bins='integers' the {method} method needs bounds of magnitude below "
                f"2**52. Got {bounds!r}."
            )
    limit = QUANTILE_METHODS[method].max_integers
    if limit is not None and count > limit:
        raise InvalidParameterError(
            f"The {method} method selects among the integers of the bounds, at most {limit} "
            f"of them (one coin each); got {count}: give narrower 'bounds' or another method."
        )
    if QUANTILE_METHODS[method].binned and count > MAX_BINS:
        raise InvalidParameterError(
            f"The tree would need {count} bins; at most {MAX_BINS} (give fewer 'bins' or "
            "narrower 'bounds')."
        )


def check_rest(rest: float, m: int, selections: bool) -> None:
    """The budget left for the quantiles (after the bounds', count's and gate's shares) and, for
    the exponential and recursive methods (``selections``), the budget of one selection
    (at least ``rest / m``) must be usable: refused before anything is charged, from public
    parameters only, instead of after the charge with nothing released."""
    from treedp.budget import MIN_EPSILON

    if not rest_usable(rest, m, selections):
        raise InvalidParameterError(
            f"The budget left for the quantiles ({'each selection gets' if selections else 'it'}"
            f" at most {rest / max(m, 1) if selections else rest:.3g}) is below the smallest "
            f"usable epsilon, {MIN_EPSILON:g}: give a larger 'epsilon', smaller shares or "
            "fewer levels."
        )


def rest_usable(rest: float, m: int, selections: bool) -> bool:
    """Whether :func:`check_rest` accepts ``rest`` (public parameters only)."""
    from treedp.budget import MIN_EPSILON

    return not (rest < MIN_EPSILON or (selections and rest / max(m, 1) < MIN_EPSILON))


def check_selection_records(size: int) -> None:
    """The selection methods (exponential, recursive, over a grid or the float lattice) state
    their guarantee for fewer than ``2**32`` records: a call that may run one (chosen, picked
    later by a private count, or the fallback after collapsed bounds) is refused before
    anything is charged, as each method refuses on its own (privacy review, session 17: the
    fallback reached the check after the charge). The message holds no count."""
    from treedp.value_methods import (
        quantile_exponential,
        quantile_permute_flip,
        quantiles_recursive,
        unbounded_quantiles,
    )
    from treedp.value_methods.exponential_core import check_domain

    for module in (quantile_exponential, quantile_permute_flip, quantiles_recursive,
                   unbounded_quantiles):  # fmt: skip
        check_domain(size, module.CONTRACT)


def _check_integers(method: str, bins: Any) -> None:
    if QUANTILE_METHODS[method].max_integers is not None and bins != "integers":
        raise InvalidParameterError(
            f"The {method} method selects among integers: it needs bins='integers' (integer "
            f"data){'' if bins is None else f', not bins={bins!r}'}."
        )


def check_private_bounds(
    method: str, bins: Any, eps: float, n: int | None, side: tuple[Any, Any] = (None, None)
) -> None:
    """What the method checks of private bounds before the charge: a method over the integers
    of public bounds refuses them; the tree's number of bins on stand-in bounds; a method in
    integer mode after a bounds step, a public ``side`` beyond its range (the found bounds are
    moved inside it, a public side would be moved too; over every float no step runs)."""
    _check_integers(method, bins)
    if bins == "integers" and QUANTILE_METHODS[method].integer_mode:
        for v in (v for v in side if v is not None):  # integers (checked with the request)
            if inside_integer_limit((v, v)) != (int(v), int(v)):  # the step would move it
                raise InvalidParameterError(
                    "With bins='integers' and a bounds step the public side in 'bounds' must "
                    "lie within ±(2**52 - 3) (leave out n='private': over every float no step "
                    "runs)."
                )
    if QUANTILE_METHODS[method].max_integers is not None:
        raise InvalidParameterError(
            f"The {method} method needs public bounds (it flips one coin per integer of "
            "them); with bounds='private' use method='exponential' or 'auto'."
        )
    if bins != "integers":  # integer ranges are cut to MAX_BINS by the bounds step
        check_bounds(method, (0, 1), bins, eps, n)


def calibrated_epsilon(req: Any, chosen: str, unbounded: bool, m: int) -> float:
    """For a zCDP or (ε, δ) target (``req``: a :class:`~treedp.quantile_query.QuantilesRequest`):
    refuse a bounds step (pure ε only), and return the ε the ``chosen`` method runs with so
    that its tightest cost meets the target (:func:`treedp.quantile_privacy.calibrate`).
    Public parameters only, before the charge: a calibrated ε the method would refuse (outside
    ``[MIN_EPSILON, MAX_EPSILON]``, or a selection's share below ``MIN_EPSILON``) is refused
    here (privacy review F6: it was refused by the method after the charge, the whole target
    spent and nothing released), and so is a tree's ρ below the smallest (session 26's
    review: the release refused it after the charge)."""
    from treedp.budget import MAX_EPSILON, MIN_EPSILON
    from treedp.quantile_privacy import calibrate

    if req.request is not None and not unbounded:
        raise InvalidParameterError(
            f"bounds='private' with a 'privacy' target needs a method that takes no bounds "
            f"('exponential' or 'recursive'); the {chosen} method would need a "
            "pure-epsilon bounds step. Give public bounds, or method='recursive'."
        )
    if QUANTILE_METHODS[chosen].binned and isinstance(req.privacy, ApproxDP):
        check_rho(rho_for_approx_dp(req.privacy.epsilon, req.privacy.delta))  # as release_cdf
    levels = np.unique(req.qa)
    eps = calibrate(req.privacy, levels, req.relation, chosen)
    if not MIN_EPSILON <= eps <= MAX_EPSILON:
        raise InvalidParameterError(
            f"The 'privacy' target {req.privacy!r} would run the {chosen} method at "
            f"epsilon {eps:.6g} (its tightest cost for {levels.size} levels), outside the "
            f"allowed [{MIN_EPSILON:g}, {MAX_EPSILON:g}]: give a "
            f"{'smaller target or fewer levels' if eps > MAX_EPSILON else 'larger target'}."
        )
    check_rest(eps, m, QUANTILE_METHODS[chosen].selections)
    return float(eps)
