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

**A wide integer range** (:func:`plan_wide_range`, :func:`wide_range`). On public integer
bounds ``method="auto"`` takes the recursion instead of the tree below
:data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels when the bounds hold more than
:data:`~treedp.quantiles_choice.WIDE_INTEGER_RANGE` integers (one bin per integer makes the
tree too deep). Found bounds now get the same rule: the released bounds are a public function
of the stops, so reading the rule off them is post-processing, and the recursion (integer
mode, on the found bounds) gets the same rest, ``ε − ε_b``, as the tree would: the call is
ε-DP by the argument above, the charged record naming the plan in
``parameters["if_wide_integer_range"]``. Planned like the fallback (``auto``, pure ε, no
private count, a usable rest, integer bins, fewer levels than the tree's threshold).
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
    "fallback_warning",
    "plan_fallback",
    "plan_wide_range",
    "wide_range",
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


def plan_wide_range(
    req: QuantilesRequest,
    chosen: str,
    *,
    unbounded: bool,
    counted: bool,
    rest: float,
    m: int,
) -> str | None:
    """The method to run instead of the tree if the found integer bounds are wide, else None.

    Public parameters only: ``method="auto"`` with the tree chosen on integer bins
    (``bins="integers"``) after a bounds step (``unbounded`` False), pure ε, no private count
    (``counted``), fewer than :data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels and a
    ``rest`` usable by ``m`` selections.
    """
    row = QUANTILE_METHODS[FALLBACK_METHOD]
    plain = req.method == "auto" and req.privacy is None and not counted
    searched = req.request is not None and not unbounded and req.bins == "integers"
    if not (plain and searched and chosen == "tree" and row.integer_mode and m < TREE_MIN_LEVELS):
        return None
    return FALLBACK_METHOD if rest_usable(rest, m, row.selections) else None


def wide_range(m: int, bounds: tuple[Any, Any]) -> bool:
    """Whether ``auto`` on these (released) integer bounds takes the recursion, as on public
    ones (:func:`~treedp.quantiles_choice.choose_method`: more than
    :data:`~treedp.quantiles_choice.WIDE_INTEGER_RANGE` integers, fewer than
    :data:`~treedp.quantiles_choice.TREE_MIN_LEVELS` levels), and the recursion's integer mode
    holds them (magnitude below ``2**52``). Post-processing of the bounds."""
    from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

    pair = (float(bounds[0]), float(bounds[1]))
    if choose_method(m, epsilon=1.0, bins="integers", bounds=pair) != FALLBACK_METHOD:
        return False  # the rule reads the bounds and m only; the ε is not used on integers
    return max(abs(pair[0]), abs(pair[1]) + 1) < INTEGER_LIMIT


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
) -> tuple[np.ndarray, tuple[float | None, float | None]]:
    """The fallback's answers clamped into the public side of ``request`` (``(lo, None)``
    or ``(None, hi)``; ``(None, None)``: unchanged), and that side (rounded inwards on
    ``integers``: the answers are integers) for the reported bounds. Monotone: sorted answers
    stay sorted."""
    out = np.asarray(values, dtype=np.float64)
    lo, hi = request
    low = None if lo is None else float(math.ceil(lo) if integers else lo)
    high = None if hi is None else float(math.floor(hi) if integers else hi)
    if low is not None:
        out = np.maximum(out, low)
    if high is not None:
        out = np.minimum(out, high)
    return out, (low, high)
