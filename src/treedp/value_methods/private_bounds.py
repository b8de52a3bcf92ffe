"""Private bounds: ``(lo, hi)`` for a numeric column found with a share of the budget.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``add_remove`` or ``replace``
neighbours, privacy unit one record; the derivation is in :func:`private_bounds`.

The method is AboveThreshold (the sparse vector technique; Dwork and Roth 2014, Lyu, Su and
Li 2017) on a public, data-independent signed geometric grid (:data:`SIGNED_GRID`, in
:mod:`.bounds_grid`), as in Durfee's unbounded quantile estimation (2023): the upper bound
scans it upwards to the first point where the noisy number of records above falls to the
allowance ``k``, the lower bound downwards, independently. The grid is scale-free above 1 and
starts at 0 (Durfee's ``β^j - 1``), so few grid points lie inside a tail (each is a chance to
stop early); a range of data of magnitude far below 1 is at least about 0.19 wide.

The stops are moved outwards (post-processing): :data:`MARGIN` grid steps, and for
real-valued data a further :data:`WIDTH_MARGIN` of the width on each side. On equal-width bins
a wider range costs little (a few percent of CDF error for 1.5 times the width) and clamping
much (``c`` records clamped at a tail add about ``c**3 / (3 n)`` to the sum of squared CDF
errors at the data's quantiles). Integer data (``bins="integers"``) get no width margin (every
extra integer is one more bin); their bounds are rounded inwards, which clamps no integer more
and keeps a stop just below 0 (one or two steps of overshoot, 0.19 and 0.41) at 0, and then lie
at least one integer beyond their stops' integers (near 0, where the grid's steps are narrower
than one integer), except that a lower stop in ``(-1, 0]`` keeps 0 (:func:`_past_the_stops`).

Accuracy and failure probability (one scan; ``t_ρ``, ``t_ν`` the scales, ``Q = 8,001``
candidates; ``P(DLap(t) >= s) <= e^{-s/t}`` for ``s >= 0``):

* clamping: for any ``a > 0`` the scan stops where more than ``k + a`` records lie beyond
  the stop with probability at most ``Q e^{-a/(2 t_ν)} + e^{-a/(2 t_ρ)}`` (some ``ν_j`` or
  ``-ρ`` exceeds ``a/2``); the bound released lies at or beyond the stop, so no more
  records are clamped by it. Example: ``ε = 0.1`` (10% of ``ε = 1``):
  ``t_ν = 60``, ``t_ρ = 30``, ``k = 120``; more than ``k + 2,000`` records beyond a stop
  has probability below ``1e-3`` (union bound over all ``Q``; the points inside a tail are
  far fewer, and the margins move the bound past most of the ``k``);
* overshoot: for any ``0 <= b < k`` it runs at least ``s`` grid points past the first with
  no record beyond it with probability at most ``e^{-b/t_ρ} + e^{-s (k - b)/t_ν}`` (either
  ``ρ >= b``, or ``s`` independent ``ν_j < b - k``). With the defaults (``k = 2 t_ν``,
  ``t_ρ = t_ν/2``) and ``b = 1.5 t_ν``: ``e^{-3} + e^{-s/2}``, and ``b = 1.8 t_ν``:
  ``e^{-3.6} + e^{-s/5}``. A grid step is 19% (0.19 to 0.6 near 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import Contract, MechanismResult
from treedp.noise import RandomSource, resolve_source
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.noise.rational import noise_scale
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import Call, float_up, open_call, read_column
from treedp.value_methods.bounds_grid import GRID, SIGNED_GRID, GridCounts

__all__ = [
    "CONTRACT",
    "NEIGHBOURS",
    "BoundsResult",
    "bounds_loss",
    "check_known_bound",
    "find_bounds",
    "private_bounds",
]

NEIGHBOURS: tuple[str, ...] = ("add_remove", "replace")
#: Grid steps added beyond each scan's stop (post-processing).
MARGIN = 1
#: For real-valued data: each bound moves out by this share of the width ``hi - lo`` found
#: (after :data:`MARGIN`; post-processing). Not for integer data (``integers=True``).
WIDTH_MARGIN = 0.25
#: The threshold ``k`` in units of the query noise scale ``t_ν``.
ALLOWANCE_SCALES = 2
#: The index of 0 in :data:`SIGNED_GRID`: where the upper scan starts when both sides are
#: searched (the lower scan then starts at the upper stop).
ZERO_INDEX = (SIGNED_GRID.size - 1) // 2
#: Integer bounds are kept within what float64 edges can tell apart.
_INTEGER_LIMIT = 2**53 - 1
CONTRACT = Contract(
    name="private_bounds",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "each query #{x > c} (#{x < c} for the lower bound) changes by at most 1, and under "
        "both add_remove and replace all queries of a neighbour move in the same direction "
        "(adding x raises #{y > c} for c < x; replacing a by b > a raises it for c in [a, b)): "
        "monotone AboveThreshold, threshold noise scale 1.5/eps_side, query noise 3/eps_side; "
        "half of the budget per side (the whole budget for the one scan when one side is "
        "public)"
    ),
)


@dataclass(frozen=True, repr=False, kw_only=True)
class BoundsResult(MechanismResult):
    """The result of :func:`private_bounds`: ``value = (lo, hi)``.

    Attributes
    ----------
    allowance : float
        The threshold ``k``: each scan stops where about ``k`` records lie beyond the point.
    scales : tuple of float
        The discrete Laplace scales of the threshold and the query noise.
    stops : tuple of float
        The two scans' stops ``(lower, upper)``, points of :data:`SIGNED_GRID`, before the
        margins (``value`` is derived from them by post-processing); on a public side
        (``known``), the caller's bound.
    known : str or None
        ``"lower"`` or ``"upper"`` when that bound was the caller's public one (one scan).
    """

    allowance: float
    scales: tuple[float, float]
    stops: tuple[float, float]
    known: str | None = None
    _labels = ("lower", "upper")  # the rows of to_arrays / to_frame: column "bound"

    @property
    def lo(self) -> float:
        """The lower bound."""
        return float(self.value[0])

    @property
    def hi(self) -> float:
        """The upper bound."""
        return float(self.value[1])


def scan_scales(epsilon_side: float, relation: str) -> tuple[Fraction, Fraction, Fraction]:
    """Threshold scale, query scale and the exact loss of one scan of budget ``ε_side``.

    AboveThreshold with threshold noise ``DLap(t_ρ)`` and query noise ``DLap(t_ν)`` on
    sensitivity-1 queries is ``(1/t_ρ + c/t_ν)``-DP, ``c = 1`` when the queries of neighbours
    all move in the same direction, as they do here under both relations (see
    :func:`private_bounds`), else 2 (Lyu, Su, Li 2017, Alg. 1 and Thm. 4; the proof shifts
    by integers, so discrete noise keeps it). The threshold gets the smaller scale, ``t_ρ =
    1.5/ε``, ``t_ν = 3/ε`` (``2ε/3 + ε/3``): a large ``ρ`` makes the scan run on far past the
    data, a large ``ν`` only stops it one point early.
    """
    del relation  # both relations are monotone (above)
    t_rho = noise_scale(3, 2 * epsilon_side)  # >= 1.5/ε_side
    t_nu = noise_scale(3, epsilon_side)
    return t_rho, t_nu, 1 / t_rho + 1 / t_nu


def first_crossing(
    beyond: np.ndarray, t_rho: Fraction, t_nu: Fraction, allowance: float, source: RandomSource
) -> int:
    """AboveThreshold in scan order: the first ``j`` with ``-beyond[j] + ν_j >= -k + ρ``.

    ``beyond[j]`` is the number of records beyond candidate ``j``; no stop: the last index.
    """
    rho = int(sample_discrete_laplace(t_rho, 1, source)[0])
    nu = sample_discrete_laplace(t_nu, beyond.size, source)
    hits = np.flatnonzero(-beyond + nu >= -allowance + rho)
    return int(hits[0]) if hits.size else beyond.size - 1


def _scan_up(
    x: np.ndarray | GridCounts,
    t_rho: Fraction,
    t_nu: Fraction,
    allowance: float,
    source: RandomSource,
    first: int = 0,
) -> int:
    """The upper scan (``#{x > c}``, ``x`` sorted) from the public index ``first`` upwards;
    the index of the stop in :data:`SIGNED_GRID`."""
    if isinstance(x, GridCounts):
        above = x.above[first:]
    else:
        above = x.size - np.searchsorted(x, SIGNED_GRID[first:], side="right")
    return first + first_crossing(above, t_rho, t_nu, allowance, source)


def _scan_down(
    x: np.ndarray | GridCounts,
    t_rho: Fraction,
    t_nu: Fraction,
    allowance: float,
    source: RandomSource,
    last: int = SIGNED_GRID.size - 1,
) -> int:
    """The lower scan (``#{x < c}``) from the public index ``last`` downwards; the index of
    the stop in :data:`SIGNED_GRID`."""
    if isinstance(x, GridCounts):
        below = x.below[last::-1]
    else:
        below = np.searchsorted(x, SIGNED_GRID[last::-1], side="left")
    return last - first_crossing(below, t_rho, t_nu, allowance, source)


def _outwards(stop: int, step: int, margin: int) -> float:
    """The grid point ``margin`` points beyond the stop in direction ``step``."""
    return float(SIGNED_GRID[min(max(stop + step * margin, 0), SIGNED_GRID.size - 1)])


def _released(
    lo: float,
    hi: float,
    integers: bool,
    known: str | None = None,
    stops: tuple[float, float] | None = None,
) -> tuple[float, float]:
    """The width margin, or the inward rounding of integers (then at least one integer past
    each of the ``stops``, :func:`_past_the_stops`), then a non-empty range; a public side
    (``known``: ``"lower"`` or ``"upper"``) stays as it is."""
    limit = _INTEGER_LIMIT
    if integers:
        # Inwards: no integer lies strictly between a bound and its rounding, so integer
        # data clamped by the rounded bound are exactly those clamped by the bound.
        if known != "lower":
            lo = float(min(max(math.ceil(lo), -limit), limit))
        if known != "upper":
            hi = float(max(min(math.floor(hi), limit), -limit))
        if stops is not None:
            lo, hi = _past_the_stops(lo, hi, stops, known)
        if lo >= hi:  # no or very few records: a non-empty range that keeps a public side
            lo = min(lo, hi)
            lo, hi = (lo - 1.0, lo) if known == "upper" or lo >= limit else (lo, lo + 1.0)
        return lo, hi
    if lo >= hi:  # only when both sides were searched
        lo, hi = min(lo, hi), max(lo, hi) + float(GRID[1])
    width = hi - lo
    return (
        lo if known == "lower" else lo - WIDTH_MARGIN * width,
        hi if known == "upper" else hi + WIDTH_MARGIN * width,
    )


def _past_the_stops(
    lo: float, hi: float, stops: tuple[float, float], known: str | None
) -> tuple[float, float]:
    """Integer bounds at least one integer beyond their stops' integers (post-processing).

    Near 0 the grid's steps are narrower than one integer (0.19 to 0.9 below 4.3), so the
    margin of one step, rounded inwards, often moved no integer: a lower stop at 1.83 released
    2 and clamped every record at 1, the stop's allowance ``k`` records. A lower stop in ``(-1,
    0]`` keeps 0: the lower scan reached it through the data from above, as a column of
    non-negative integers (counts, amounts) makes it, and a bin at -1 below a block at 0 costs
    that block's every prefix. An upper stop at 0 gets 1: when both sides are searched 0 is the
    upper scan's first point, where up to about ``k`` records may lie above (data mostly
    below 0).
    """
    limit = float(_INTEGER_LIMIT)
    if known != "lower" and math.ceil(stops[0]) != 0:
        lo = max(min(lo, float(math.ceil(stops[0]) - 1)), -limit)
    if known != "upper":
        hi = min(max(hi, float(math.floor(stops[1]) + 1)), limit)
    return lo, hi


def _bounds(
    x: np.ndarray | GridCounts,
    epsilon: float,
    relation: str,
    allowance: float | None,
    source: RandomSource,
    integers: bool,
    lower: float | None = None,
    upper: float | None = None,
) -> tuple[tuple[float, float], tuple[float, float], Fraction, Fraction, Fraction, float]:
    """``hi`` by the upward scan from 0, then ``lo`` by the downward scan from ``hi``'s stop
    (sequential composition: its start is a public function of the first release), then the
    margins. A public ``lower`` (``upper``) is released as it is, and only the other scan runs,
    with the whole ``epsilon``, over the grid points strictly beyond it."""
    known = "lower" if lower is not None else "upper" if upper is not None else None
    t_rho, t_nu, _ = scan_scales(epsilon if known else epsilon / 2, relation)
    loss = bounds_loss(epsilon, relation, known is not None)
    k = ALLOWANCE_SCALES * float(t_nu) if allowance is None else float(allowance)
    lo = hi = stop_lo = stop_hi = 0.0
    # A public side starts the other scan past it (the audits' mutants take no start). With
    # both sides searched the upper scan starts at 0 (the middle of the grid) and the lower
    # scan at the upper stop: the stops cannot cross, and a scan passes only the grid points
    # between 0 and the data, not the thousands beyond (each a chance to stop early).
    up = ZERO_INDEX
    if upper is None:
        first = ZERO_INDEX if lower is None else int(np.searchsorted(SIGNED_GRID, lower, "right"))
        up = _scan_up(x, t_rho, t_nu, k, source, first)
        stop_hi, hi = float(SIGNED_GRID[up]), _outwards(up, 1, MARGIN)
    if lower is None:
        last = up if upper is None else int(np.searchsorted(SIGNED_GRID, upper, "left")) - 1
        down = _scan_down(x, t_rho, t_nu, k, source, last)
        stop_lo, lo = float(SIGNED_GRID[down]), _outwards(down, -1, MARGIN)
    if lower is not None:
        stop_lo = lo = float(lower)
    if upper is not None:
        stop_hi = hi = float(upper)
    # Post-processing of the stops only.
    stops = (stop_lo, stop_hi)
    return _released(lo, hi, integers, known, stops), stops, t_rho, t_nu, loss, k


@accepts_aliases
def private_bounds(
    values: Any,
    *,
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    allowance: float | None = None,
    integers: bool = False,
    lower: float | None = None,
    upper: float | None = None,
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
) -> BoundsResult:
    """Bounds ``(lo, hi)`` of a numeric column under pure ε-DP, from a public grid.

    Two AboveThreshold scans over the public signed grid :data:`SIGNED_GRID` (``±(2**(j/4)
    - 1)``, ``j = 0..4000``, about ``-1e301`` to ``1e301``), each with ``ε/2``. The upper
    stop: for ``c`` ascending from 0, the first point where ``-#{x > c} + ν``, ``ν ~
    DLap(t_ν)``, is not below ``-k + ρ``, ``ρ ~ DLap(t_ρ)``. The lower stop: the same for
    ``-#{x < c}`` with ``c`` descending from the upper stop and fresh noise, so ``lo <= hi``
    always (data all negative get ``hi`` at or just above 0). Nothing else of the data is
    read: not its minimum, maximum or size. The stops are moved outwards by post-processing
    (module docstring).

    Guarantee: ``PureDP(ε_spent)``, ``ε_spent <= ε`` (exact rational scales rounded up),
    privacy unit one record. Sensitivity: each query has sensitivity 1, and under both
    neighbour relations all queries of a neighbour move in the same direction
    (``add_remove``: adding ``a`` raises ``#{x > c}`` for every ``c < a``; ``replace``:
    moving a record from ``a`` up to ``b`` raises it for ``c`` in ``[a, b)`` only), so
    monotone AboveThreshold applies: ``t_ρ = 1.5/(ε/2)``, ``t_ν = 3/(ε/2)`` give ``1/t_ρ +
    1/t_ν = ε/2`` per scan; basic composition of the two scans.

    One side known: a public ``lower`` (e.g. 0 for incomes) or ``upper`` (e.g. 100 for
    percentages), never read from the data, is released as it is and only the other scan
    runs, with the whole ``ε`` (``t_ρ = 1.5/ε``, ``t_ν = 3/ε``: half the noise and half the
    allowance, so about half as many records clamped), over the grid points strictly beyond
    it; the width margin moves the found side only. Same derivation, one scan. Records
    beyond the public bound are clamped by the release.

    The default ``k = 2 t_ν`` (:data:`ALLOWANCE_SCALES`) and the margins were chosen by
    measurement (docs/quantiles.md, "Private bounds"); accuracy and failure probability: the
    module docstring.

    Parameters
    ----------
    values : array-like or GridCounts
        Numbers (``±inf`` count as beyond every grid point), or their :class:`GridCounts`
        (the same release; ``nan`` then names the policy the counting pass used).
    epsilon : float
        The budget of the bounds.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
    allowance : float, optional
        The threshold ``k`` (public). Default ``2 t_ν``, twice the query noise scale.
    integers : bool, default=False
        Integer data (for ``bins="integers"``): no width margin; the bounds are rounded
        inwards to integers (within ``±(2**53 - 1)``), then moved to at least one integer
        beyond each stop's (a lower stop in ``(-1, 0]`` keeps 0; post-processing).
    lower, upper : float, optional
        A public bound on one side (at most one of the two; an integer when ``integers``),
        known to the user: only the other side is searched, with the whole ``epsilon``.
    rng : RandomSource, optional
    accountant : Accountant, optional
        Charged ``PureDP(ε_spent)`` after every check and the data read, before any noise is
        drawn; an overspend raises :class:`~treedp.exceptions.BudgetExceededError`.

    Returns
    -------
    BoundsResult
        ``value = (lo, hi)``, ``lo < hi``, with the scans' stops, the guarantee and the spend
        record.

    References
    ----------
    .. [Dur23] D. Durfee. "Unbounded Differentially Private Quantile and Maximum Estimation".
       NeurIPS 2023.
    .. [LSL17] M. Lyu, D. Su, N. Li. "Understanding the Sparse Vector Technique for
       Differential Privacy". PVLDB 2017.
    """
    return find_bounds(
        values, epsilon, neighbours, nan, allowance, rng, accountant, None, integers, lower, upper
    )


def find_bounds(
    values: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    allowance: Any,
    rng: RandomSource | None,
    accountant: Accountant | None,
    charge: SpendRecord | None,
    integers: Any,
    lower: Any = None,
    upper: Any = None,
) -> BoundsResult:
    """Validate, read the data, charge (``charge``, else this call's own spend), then scan."""
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    if allowance is not None and (
        isinstance(allowance, bool)
        or not isinstance(allowance, int | float)
        or not math.isfinite(allowance)
    ):
        raise InvalidParameterError(must("allowance", f"be a finite number. Got {allowance!r}."))
    if not isinstance(integers, bool):
        raise InvalidTypeError(
            must("integers", f"be a bool. Got {type(integers).__name__} instead.")
        )
    known = check_known_bound(lower, upper, integers)
    source = resolve_source(rng)
    x: np.ndarray | GridCounts
    if isinstance(values, GridCounts):  # counted already (missing values under the policy)
        x = values
    else:
        data, unit = read_column(values, policy, relation)
        if unit is not None:
            raise InvalidTypeError("private_bounds takes numbers, not datetimes.")
        x = np.sort(np.asarray(data, dtype=np.float64))
    parameters: dict[str, Any] = {
        "epsilon": eps,
        "allowance": allowance,
        "nan": policy,
        "integers": integers,
    }
    if known is not None:
        parameters[known] = lower if known == "lower" else upper
    if accountant is not None:  # committed before any noise is drawn (fail closed)
        loss = PureDP(float_up(bounds_loss(eps, relation, known is not None)))
        own = SpendRecord(CONTRACT.name, loss, relation, "record", parameters)
        accountant.charge(own if charge is None else charge)
    value, stops, t_rho, t_nu, spent, k = _bounds(
        x, eps, relation, allowance, source, integers, lower, upper
    )
    call = Call(CONTRACT.name, relation, eps, {**parameters, "allowance": k}, source)
    return call.result(
        BoundsResult,
        value,
        PureDP(float_up(spent)),
        (1, 1),
        allowance=k,
        scales=(float(t_rho), float(t_nu)),
        stops=stops,
        known=known,
    )


def bounds_loss(epsilon: float, relation: str, one_sided: bool) -> Fraction:
    """The exact loss of :func:`private_bounds` at ``epsilon``: two scans of ``ε/2``, or one
    scan of ``ε`` when one bound is public."""
    if one_sided:
        return scan_scales(epsilon, relation)[2]
    return 2 * scan_scales(epsilon / 2, relation)[2]


def check_known_bound(
    lower: Any, upper: Any, integers: bool, argument: str | None = None
) -> str | None:
    """Validate the public side of a one-sided search: ``"lower"``, ``"upper"`` or None.

    ``argument``: the caller's parameter that held the bound (e.g. ``"bounds"``), for the
    messages.

    Raises
    ------
    InvalidTypeError
        If the bound is not a real number.
    InvalidParameterError
        If both are given, the bound is not finite or lies at or beyond the grid's end, or
        is not an integer within ``±(2**53 - 1)`` with ``integers``.
    """
    if lower is not None and upper is not None:
        raise InvalidParameterError(
            "Give at most one of 'lower' and 'upper' (with both known, pass public bounds "
            "and spend no budget on them)."
        )
    if lower is None and upper is None:
        return None
    side, value = ("lower", lower) if lower is not None else ("upper", upper)
    name = f"'{side}' parameter" if argument is None else f"public {side} bound in '{argument}'"
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        hint = " (private bounds take numbers, not datetimes)" if isinstance(value, str) else ""
        raise InvalidTypeError(
            f"The {name} must be a real number{hint}. Got {type(value).__name__} instead."
        )
    limit = _INTEGER_LIMIT if integers else float(SIGNED_GRID[-1])
    try:
        value = float(value)  # a float32 or int64 bound compared as a Python float
    except OverflowError:  # an int beyond float64
        raise InvalidParameterError(
            f"The {name} must be finite and within ±{limit:.4g}; got an integer beyond the "
            "float64 range."
        ) from None
    if not math.isfinite(value) or not -limit < value < limit:
        raise InvalidParameterError(
            f"The {name} must be finite and within ±{limit:.4g}. Got {value!r}."
        )
    if integers and value != math.floor(value):
        raise InvalidParameterError(
            f"With integer data the {name} must be an integer. Got {value!r}."
        )
    return side
