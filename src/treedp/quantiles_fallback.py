"""After a private bounds step, what runs instead of the tree: the recursion, without bounds
when the step said nothing, or on the found bounds when they hold a wide integer range.

With ``bounds="private"`` on both sides and ``method="auto"``, the tree (chosen for integer
columns, or for many levels) runs on bounds found by two private scans. With too few records
beyond the scans' threshold for the ε (``n·ε`` below a few hundred), the scans meet, cross,
stop at neighbouring grid points or run off the public grid
(:func:`treedp.value_methods.bounds_warnings.grid_end_warning`), and
a tree on such bounds answers one value for every level: its answers say nothing. Then the
rest of the budget goes to :data:`FALLBACK_METHOD`, the recursive exponential mechanism over
the lattice of every float (:mod:`treedp.value_methods.unbounded_quantiles`), which needs no
bounds. Measured in ``benchmarks/unknown_bounds.py`` (``--integers``) and
``docs/private_bounds.md``.

Privacy. The bounds step is ``ε_b``-DP (two AboveThreshold scans, audited in
``tests/privacy/test_audit_quantiles.py``); whether the scans collapsed is a function of their
released stops alone, so the choice between the tree and the recursion is post-processing;
whichever runs gets the budget left, ``ε − ε_b`` (rounded down), and is ``(ε − ε_b)``-DP under
the same neighbour relation and privacy unit (one record). By adaptive sequential composition
the call is ε-DP, the ε charged once before any randomness; the record charged names the
planned method and, in ``parameters["if_bounds_collapse"]``, the method that would replace it.

Planned from public parameters only (:func:`plan_fallback`), before the charge: pure ε (a
zCDP or (ε, δ) target refuses a bounds step), no private count spent (a count chooses the
method itself), numbers (the lattice holds numbers, not datetimes), and a rest the recursion
accepts (:func:`treedp.quantile_checks.rest_usable`): where any fails, the tree's answer and
its warning stand. With one public side (``bounds=(0, "private")``) the one scan collapses
when it stops beside the public bound; the recursion's answers are then clamped into the
public side (:func:`within_public_side`, post-processing by a public bound, as every method
clamps the data into it).

**Found integer bounds read like public ones** (:func:`plan_found_range`,
:func:`found_range_takes`). On public integer bounds ``method="auto"`` takes the recursion
instead of the tree below :data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels when the
bounds hold more than :data:`~treedp.quantiles_choice.WIDE_INTEGER_RANGE` integers (one bin per
integer makes the tree too deep), and permute-and-flip instead of the exponential mechanism at
one level when they hold at most :data:`~treedp.quantiles_choice.PERMUTE_AND_FLIP_INTEGERS`.
Found bounds get the same rules: the released bounds are a public function of the stops, so
reading a rule off them is post-processing, and the method taken instead (the recursion in
integer mode, or permute-and-flip over the found integers) gets the same rest, ``ε − ε_b``, as
the planned one would: the call is ε-DP by the argument above, the charged record naming the
plan in ``parameters["if_wide_integer_range"]`` or ``parameters["if_narrow_integer_range"]``
(:data:`FOUND_RANGE_KEYS`). Planned like the fallback (``auto``, pure ε, no private count, a
usable rest, integer bins; the recursion below the tree's threshold of levels, permute-and-flip
at one level).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from treedp.quantile_checks import rest_usable
from treedp.quantile_methods import QUANTILE_METHODS
from treedp.quantile_query import QuantilesRequest
from treedp.quantiles_choice import TREE_MIN_LEVELS, choose_method

__all__ = [
    "FALLBACK_METHOD",
    "FOUND_RANGE_KEYS",
    "fallback_warning",
    "found_range_takes",
    "plan_fallback",
    "plan_found_range",
    "within_public_side",
]

#: The method run with the rest of the budget when the bounds step collapsed.
FALLBACK_METHOD = "recursive"

#: The tail the bounds warnings of two searched sides end with (a useless release).
_USELESS = "and the release is not useful. Give public bounds, or more epsilon or more records."


def plan_fallback(
    req: QuantilesRequest,
    chosen: str,
    *,
    unit: str | None,
    unbounded: bool,
    counted: bool,
    rest: float,
    m: int,
) -> str | None:
    """The method to run instead of ``chosen`` if the bounds step collapses, else None.

    Public parameters only: ``method="auto"``, bounds private (one public side at most),
    numbers (``unit`` None),
    pure ε (``req.privacy`` None), no private count (``counted``), a bounds step planned
    (``unbounded`` False), ``chosen`` not the fallback itself, and ``rest`` (the budget after
    the bounds step) usable by ``m`` selections.
    """
    row = QUANTILE_METHODS[FALLBACK_METHOD]
    plain = req.method == "auto" and req.privacy is None and not counted
    searched = req.request is not None and unit is None and not unbounded
    if not (plain and searched and row.unbounded and chosen != FALLBACK_METHOD):
        return None
    return FALLBACK_METHOD if rest_usable(rest, m, row.selections) else None


#: The charged record's key naming the method a found integer range may call for instead.
FOUND_RANGE_KEYS = {
    FALLBACK_METHOD: "if_wide_integer_range",
    "permute_and_flip": "if_narrow_integer_range",
}


def plan_found_range(
    req: QuantilesRequest,
    chosen: str,
    *,
    unbounded: bool,
    counted: bool,
    rest: float,
    m: int,
) -> str | None:
    """The method to run instead of ``chosen`` if the found integer bounds call for it, else
    None: the recursion instead of the tree (fewer than
    :data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels; the bounds wide), or
    permute-and-flip instead of the exponential mechanism (one level; the bounds narrow).

    Public parameters only: ``method="auto"`` on integer bins (``bins="integers"``) after a
    bounds step (``unbounded`` False), pure ε, no private count (``counted``) and a ``rest``
    usable by ``m`` selections.
    """
    plain = req.method == "auto" and req.privacy is None and not counted
    searched = req.request is not None and not unbounded and req.bins == "integers"
    if not (plain and searched):
        return None
    if chosen == "tree" and m < TREE_MIN_LEVELS:
        instead = FALLBACK_METHOD
    elif chosen == "exponential" and m == 1:
        instead = "permute_and_flip"
    else:
        return None
    row = QUANTILE_METHODS[instead]
    usable = row.integer_mode and rest_usable(rest, m, row.selections)
    return instead if usable else None


def found_range_takes(m: int, bounds: tuple[Any, Any], instead: str) -> bool:
    """Whether ``auto`` on these (released) integer bounds takes ``instead``, as on public
    ones (:func:`~treedp.quantiles_choice.choose_method`: the recursion on more than
    :data:`~treedp.quantiles_choice.WIDE_INTEGER_RANGE` integers below
    :data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels; permute-and-flip at one level on
    at most :data:`~treedp.quantiles_choice.PERMUTE_AND_FLIP_INTEGERS` integers below
    ``2**53``), and the recursion's integer mode holds them (magnitude below ``2**52``).
    Post-processing of the bounds."""
    from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

    pair = (float(bounds[0]), float(bounds[1]))
    if choose_method(m, epsilon=1.0, bins="integers", bounds=pair) != instead:
        return False  # the rule reads the bounds and m only; the ε is not used on integers
    return instead != FALLBACK_METHOD or max(abs(pair[0]), abs(pair[1]) + 1) < INTEGER_LIMIT


def fallback_warning(off: str) -> str:
    """The bounds warning ``off`` (:func:`~treedp.value_methods.bounds_warnings.grid_end_warning`
    of two searched sides) restated for a call that ran :data:`FALLBACK_METHOD` instead:
    the answers are the recursion's, not a useless tree's. Post-processing: no data value."""
    instead = (
        "the quantiles were released by the recursive method instead (method='auto'), which "
        "needs no bounds, on the budget left after the bounds step; at such a budget it may "
        "answer far outside the data (its candidates are every float). Give public bounds, or "
        "more epsilon or more records."
    )
    if _USELESS not in off:  # every both-sided warning ends so (tested); kept whole if not
        return f"{off} {instead[0].upper()}{instead[1:]}"
    return f"{off.split(_USELESS)[0].rstrip().rstrip(',')}; {instead}"


def within_public_side(
    values: Any, request: tuple[Any, Any], integers: bool
) -> tuple[np.ndarray, tuple[float, float], str | None]:
    """Answers over the float lattice (no bounds step, or the fallback's) clamped into the
    public side of ``request`` (``(lo, None)`` or ``(None, hi)``; ``(None, None)``:
    unchanged), the bounds to report (that side, rounded inwards on ``integers``, else the
    lattice's end) and a warning when every answer lies at or beyond the side (the records
    clamped onto it hold every level asked: a block at the bound, or a bound on the wrong side
    of the data), else None. Monotone: sorted answers stay sorted. Post-processing of the
    answers and the public side."""
    from treedp.value_methods.float_lattice import TOTAL_CELLS, cell_value

    out = np.asarray(values, dtype=np.float64)
    lo, hi = request
    low = None if lo is None else float(math.ceil(lo) if integers else lo)
    high = None if hi is None else float(math.floor(hi) if integers else hi)
    beyond = out.size > 0 and (
        (low is not None and bool(np.all(out <= low)))
        or (high is not None and bool(np.all(out >= high)))
    )
    if low is not None:
        out = np.maximum(out, low)
    if high is not None:
        out = np.minimum(out, high)
    ends = cell_value(np.array([0, TOTAL_CELLS - 1]))
    bounds = (float(ends[0] if low is None else low), float(ends[1] if high is None else high))
    side = "lower" if low is not None else "upper"
    warning = (
        f"Every answer equals the public {side} bound: the records at or beyond it, clamped "
        "onto it, hold every level asked. If that is not a block of the data at the bound, "
        "the bound lies on the wrong side of the data: check the public bound in 'bounds'."
    )
    return out, bounds, warning if beyond else None
