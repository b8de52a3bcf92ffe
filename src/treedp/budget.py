"""Validation of privacy budgets and their split over the noised blocks of a mechanism."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, Literal

import numpy as np

from treedp._validation import check_int, check_option, check_real, must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["Neighbours", "check_epsilon", "check_neighbours", "rest_below", "split_budget"]

Neighbours = Literal["add_remove", "replace"]
#: The neighbour relations, as ``neighbours=`` takes them.
NEIGHBOURS = ("add_remove", "replace")

#: Smallest epsilon accepted: below it the noise swamps any count (and scales overflow).
MIN_EPSILON = 1e-6
#: Largest epsilon accepted: beyond it the guarantee is meaningless (exp(50) ~ 5e21).
MAX_EPSILON = 50.0


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float after checking it is finite and in the allowed range.

    Raises
    ------
    InvalidTypeError
        If it is not a real number.
    InvalidParameterError
        If it is not finite or outside ``[MIN_EPSILON, MAX_EPSILON]``.
    """
    return check_real(epsilon, name, MIN_EPSILON, MAX_EPSILON)


def check_neighbours(
    neighbours: Any, n: Any, *, require_n: bool = True
) -> tuple[Neighbours, int | None]:
    """Validate the neighbour relation and the public dataset size that goes with it.

    ``"add_remove"``: neighbouring datasets differ by adding or removing one record; the size
    is private and ``n`` must be None. ``"replace"``: neighbours differ by replacing one
    record; the size ``n`` is public and must be given (unless ``require_n`` is False: a plan
    or an error prediction does not depend on its value).
    """
    nb = check_option(neighbours, "neighbours", NEIGHBOURS)
    if nb == "add_remove":
        if n is not None:
            raise InvalidParameterError(
                "The 'n' parameter is the public dataset size used with neighbours='replace'; "
                "with neighbours='add_remove' the size is private, so n must be None. "
                f"Got n={n!r}."
            )
        return "add_remove", None
    if n is None:
        if not require_n:
            return "replace", None
        raise InvalidParameterError(
            "With neighbours='replace' the dataset size is public: the 'n' parameter must be "
            "given as an int >= 0. Got n=None instead."
        )
    return "replace", check_int(n, "n", lo=0)


def split_budget(
    epsilon: float,
    blocks: int,
    budgets: Sequence[float] | None,
    name: str = "level_budgets",
    total_name: str = "epsilon",
) -> tuple[float, ...]:
    """Per-block budgets whose exact rational sum is at most ``epsilon`` (already validated).

    ``budgets`` None splits ``epsilon`` equally over the ``blocks`` noised blocks (a tree's
    levels); explicit budgets must be positive and sum to ``epsilon`` within a relative 1e-9.
    ``name`` and ``total_name`` (``"rho"`` for zCDP budgets) name them in messages.
    """
    if blocks == 0:
        return ()
    if budgets is None:
        values = [epsilon / blocks] * blocks
    else:
        if isinstance(budgets, str) or not isinstance(budgets, Sequence | np.ndarray):
            raise InvalidTypeError(
                must(name, f"be a sequence of {blocks} positive floats. Got {budgets!r} instead.")
            )
        values = [_positive(b, name) for b in budgets]
        if len(values) != blocks:
            raise InvalidParameterError(
                must(name, f"have one budget per noised level: {blocks} values. Got {len(values)}.")
            )
        total = math.fsum(values)
        if abs(total - epsilon) > 1e-9 * epsilon:
            raise InvalidParameterError(
                must(name, f"sum to {total_name}={epsilon!r}. Got a sum of {total!r}.")
            )
        values = [v * (epsilon / total) for v in values]
    # Make the exact rational sum no larger than epsilon (float rounding may add an ulp).
    while sum(map(Fraction, values)) > Fraction(epsilon):
        values = [v * (1 - 2**-50) for v in values]
    return tuple(values)


def _positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidTypeError(must(name, f"hold positive finite floats. Got {value!r}."))
    v = float(value)
    if not math.isfinite(v) or v <= 0:
        raise InvalidParameterError(must(name, f"hold positive finite floats. Got {value!r}."))
    return v


def rest_below(total: float, first: float) -> float:
    """What a budget leaves after a first share: ``total - first``, stepped down an ulp at a
    time until ``first + rest <= total`` exactly (as rationals; ``total`` itself when
    ``first`` is 0). ``total - first`` in floats can round up by an ulp, and a release then
    stated one ulp more than its charge (an independent review)."""
    rest = total - first
    while rest > 0 and Fraction(first) + Fraction(rest) > Fraction(total):
        rest = math.nextafter(rest, 0.0)
    return rest
