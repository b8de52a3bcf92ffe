"""Private bounds: ``(lo, hi)`` for a numeric column found with a share of the budget.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``add_remove`` or ``replace``
neighbours, privacy unit one record; the derivation is in :func:`private_bounds`.

The method is AboveThreshold (the sparse vector technique; Dwork and Roth 2014, Lyu, Su and
Li 2017) on a public, data-independent geometric grid over the representable range, as in
Durfee's unbounded quantile estimation (2023). The grid is signed and symmetric
(:data:`SIGNED_GRID`: ``±(2**(j/4) - 1)`` for ``j`` in ``0..4000``, from about ``-1e301``
to ``1e301``; steps of 0.19 near 0, then 19% apart), so the range found fits data of either
sign. The upper bound scans the grid upwards and stops at the first point ``c`` where the
noisy number of records above ``c`` falls to the allowance ``k``; the lower bound scans it
downwards, independently, and stops where the noisy number of records below falls to ``k``.
Both use exact discrete Laplace noise (:mod:`treedp.noise`).

Each stop lies where about ``k`` records (plus the noise's maximum over the grid points in the
tail) lie beyond it; the released bounds are then moved outwards (post-processing):
:data:`MARGIN` grid steps beyond each stop, and for real-valued data (``integers=False``) a
further :data:`WIDTH_MARGIN` of the found width on each side. On equal-width bins a wider range
costs little (a few percent of CDF error for 1.5 times the width) and clamping costs much
(``c`` records clamped at a tail add about ``c**3 / (3 n)`` to the sum of squared CDF errors
at the data's quantiles). Integer data (``bins="integers"``) get no width margin: every extra
integer is one more bin. Their bounds are rounded inwards to integers, which clamps no
integer more than the unrounded bound (none lies between them) and keeps a stop just below 0
(one or two steps of overshoot past 0, 0.19 and 0.41) at 0.

The grid is scale-free above 1 and starts at 0 (as Durfee's ``β^j - 1``): it is not dense
near 0, which keeps the number of grid points inside a tail small (each is a chance to stop
early). A range of data of magnitude far below 1 is at least about 0.19 wide. The grid and
the one-pass counts lie in :mod:`.bounds_grid`, the warnings read from a result in
:mod:`.bounds_warnings`, and the split of a release's budget in :mod:`.bounds_split`.

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

from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import Contract, MechanismResult
from treedp.noise import RandomSource, resolve_source
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.noise.rational import noise_scale
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import (
    check_nan,
    check_neighbours,
    describe,
    float_up,
    read_column,
)
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

    @property
    def lo(self) -> float:
        """The lower bound."""
        return float(self.value[0])

    @property
    def hi(self) -> float:
        """The upper bound."""
        return float(self.value[1])


def _scales(epsilon_side: float, relation: str) -> tuple[Fraction, Fraction, Fraction]:
    """Threshold scale, query scale and the exact loss of one scan.

    AboveThreshold with threshold noise ``ρ ~ DLap(t_ρ)`` and query noise ``ν ~ DLap(t_ν)``
    on sensitivity-1 queries is ``(1/t_ρ + c/t_ν)``-DP, ``c = 1`` when the queries of
    neighbouring datasets all move in the same direction (monotone), else ``c = 2`` (Lyu, Su,
    Li 2017, Alg. 1 and Thm. 4; the shifts of the proof are by integers, so discrete noise
    keeps it). Both relations are monotone here: adding a record ``a`` raises ``#{x > c}`` by 1
    for ``c < a`` and by 0 elsewhere; replacing ``a`` by ``b > a`` raises it by 1 for ``c`` in
    ``[a, b)`` and by 0 elsewhere (``b < a``: lowers it on ``[b, a)``); the same holds for
    ``#{x < c}``. (The exact law of the stop, ``tests/privacy/test_audit_quantiles.py``,
    reaches the claim under add_remove and stays within it under replace.) The split gives
    the threshold the smaller scale, ``t_ρ = t_ν / 2``: a large ``ρ`` makes the scan run on
    far past the data (every point beyond it then stops with probability ``P(ν >= ρ - k)``
    only), a large ``ν`` stops it one point early: ``t_ρ = 1.5/ε``, ``t_ν = 3/ε``
    (``2ε/3 + ε/3``), ``ε`` the scan's budget. ``relation`` is validated by the caller and
    does not change the scales.
    """
    del relation  # both relations are monotone (above)
    t_rho = noise_scale(3, 2 * epsilon_side)  # >= 1.5/ε_side
    t_nu = noise_scale(3, epsilon_side)
    return t_rho, t_nu, 1 / t_rho + 1 / t_nu


def _scan(
    beyond: np.ndarray, t_rho: Fraction, t_nu: Fraction, allowance: float, source: RandomSource
) -> int:
    """AboveThreshold over the candidates in scan order: the index of the first stop.

    ``beyond[j]`` is the number of records beyond candidate ``j`` (non-increasing along the
    scan); query ``j`` is ``-beyond[j]``, threshold ``-k``; stop at the first ``j`` with
    ``-beyond[j] + ν_j >= -k + ρ``. No stop: the last index.
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
    """The upper scan on sorted ``x``: :data:`SIGNED_GRID` ascending from index ``first`` (a
    public start), ``#{x > c}``; the index of the stop in :data:`SIGNED_GRID`."""
    if isinstance(x, GridCounts):
        above = x.above[first:]
    else:
        above = x.size - np.searchsorted(x, SIGNED_GRID[first:], side="right")
    return first + _scan(above, t_rho, t_nu, allowance, source)


def _scan_down(
    x: np.ndarray | GridCounts,
    t_rho: Fraction,
    t_nu: Fraction,
    allowance: float,
    source: RandomSource,
    last: int = SIGNED_GRID.size - 1,
) -> int:
    """The lower scan on sorted ``x``: :data:`SIGNED_GRID` descending from index ``last`` (a
    public start), ``#{x < c}``; the index of the stop in :data:`SIGNED_GRID` (counted from
    its start)."""
    if isinstance(x, GridCounts):
        below = x.below[last::-1]
    else:
        below = np.searchsorted(x, SIGNED_GRID[last::-1], side="left")
    return last - _scan(below, t_rho, t_nu, allowance, source)


def _outwards(stop: int, step: int, margin: int) -> float:
    """The grid point ``margin`` points beyond the stop in direction ``step``."""
    return float(SIGNED_GRID[min(max(stop + step * margin, 0), SIGNED_GRID.size - 1)])


def _released(
    lo: float, hi: float, integers: bool, known: str | None = None
) -> tuple[float, float]:
    """Post-processing of the margins' output: width margin or integer rounding, then a
    non-empty range. ``known`` (``"lower"`` or ``"upper"``): that bound is the caller's
    public one and stays as it is (the width margin moves the other side only)."""
    if known is not None:
        return _released_one_sided(lo, hi, integers, known)
    if integers:
        # Inwards: no integer lies strictly between a bound and its rounding, so integer
        # data clamped by the rounded bound are exactly those clamped by the bound.
        lo = float(min(max(math.ceil(lo), -_INTEGER_LIMIT), _INTEGER_LIMIT))
        hi = float(max(min(math.floor(hi), _INTEGER_LIMIT), -_INTEGER_LIMIT))
        if lo >= hi:  # no or very few records: a non-empty range
            lo = min(lo, hi)
            lo, hi = (lo, lo + 1.0) if lo < _INTEGER_LIMIT else (lo - 1.0, lo)
        return lo, hi
    if lo >= hi:
        lo, hi = min(lo, hi), max(lo, hi) + float(GRID[1])
    width = hi - lo
    return lo - WIDTH_MARGIN * width, hi + WIDTH_MARGIN * width


def _released_one_sided(lo: float, hi: float, integers: bool, known: str) -> tuple[float, float]:
    """:func:`_released` when one bound is public: the width margin (real-valued data) or
    the inward rounding (integers) on the found side only, then a non-empty range that keeps
    the public bound."""
    width = hi - lo  # > 0: the scan's candidates lie strictly beyond the public bound
    if known == "lower":
        if integers:
            return lo, float(max(min(math.floor(hi), _INTEGER_LIMIT), lo + 1))
        return lo, hi + WIDTH_MARGIN * width
    if integers:
        return float(min(max(math.ceil(lo), -_INTEGER_LIMIT), hi - 1)), hi
    return lo - WIDTH_MARGIN * width, hi


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
    """``hi`` by the upward scan, ``lo`` by the downward scan (independent), then margins.

    With a public ``lower`` (``upper``), only the upward (downward) scan runs, with the whole
    ``epsilon``, over the grid points strictly above ``lower`` (below ``upper``), and the
    public bound is released as it is."""
    one_sided = lower is not None or upper is not None
    t_rho, t_nu, _ = _scales(epsilon if one_sided else epsilon / 2, relation)
    loss = bounds_loss(epsilon, relation, one_sided)
    k = ALLOWANCE_SCALES * float(t_nu) if allowance is None else float(allowance)
    if lower is not None:
        first = int(np.searchsorted(SIGNED_GRID, lower, side="right"))  # public
        up = _scan_up(x, t_rho, t_nu, k, source, first)
        stops = (float(lower), float(SIGNED_GRID[up]))
        value = _released(float(lower), _outwards(up, 1, MARGIN), integers, "lower")
    elif upper is not None:
        last = int(np.searchsorted(SIGNED_GRID, upper, side="left")) - 1  # public
        down = _scan_down(x, t_rho, t_nu, k, source, last)
        stops = (float(SIGNED_GRID[down]), float(upper))
        value = _released(_outwards(down, -1, MARGIN), float(upper), integers, "upper")
    else:
        up = _scan_up(x, t_rho, t_nu, k, source)
        down = _scan_down(x, t_rho, t_nu, k, source)
        # Post-processing of the two stops only.
        stops = (float(SIGNED_GRID[down]), float(SIGNED_GRID[up]))
        value = _released(_outwards(down, -1, MARGIN), _outwards(up, 1, MARGIN), integers)
    return value, stops, t_rho, t_nu, loss, k


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
    bound: for ``c`` ascending, the query ``-#{x > c}`` plus ``ν ~ DLap(t_ν)`` is compared
    with ``-k + ρ``, ``ρ ~ DLap(t_ρ)``; the first point where it is not below is the upper
    stop. The lower stop: the same for ``-#{x < c}`` with ``c`` descending, with fresh noise.
    Nothing of the data but these counts is read: not its minimum, maximum or size. The
    bounds are the stops moved outwards by post-processing: :data:`MARGIN` grid points,
    then, unless ``integers``, :data:`WIDTH_MARGIN` times the width on each side; with
    ``integers`` they are rounded inwards to integers instead (this clamps no integer more).

    Guarantee: ``PureDP(ε_spent)``, ``ε_spent <= ε`` (exact rational scales rounded up).
    Each query has sensitivity 1 (one record changes a count by at most 1), and under both
    relations all queries of a neighbour move in the same direction (``add_remove``: adding
    ``a`` raises ``#{x > c}`` for every ``c < a``; ``replace``: moving a record from ``a`` up
    to ``b`` raises it for ``c`` in ``[a, b)`` only), so monotone AboveThreshold applies:
    ``t_ρ = 1.5/(ε/2)``, ``t_ν = 3/(ε/2)`` give ``1/t_ρ + 1/t_ν = ε/2`` per scan. Basic
    composition of the two scans.

    One side known: a public ``lower`` (for example 0 for incomes or counts) or ``upper``
    (for example 100 for percentages), given by the user and never read from the data, is
    released as it is and only the other scan runs, with the whole ``ε`` (``t_ρ = 1.5/ε``,
    ``t_ν = 3/ε``: half the noise and half the allowance ``k`` of a two-sided scan, so it
    clamps about half as many records), over the grid points strictly beyond the public
    bound; the width margin then moves the found side only. Same derivation, one scan:
    ``1/t_ρ + 1/t_ν = ε``. Records beyond the public bound are clamped by the release.

    Accuracy and failure probability: the module docstring.

    The default ``k = 2 t_ν`` (:data:`ALLOWANCE_SCALES`) and the margins were chosen by
    measurement (docs/quantiles.md, "Private bounds"). Values beyond the bounds are clamped
    by the release that uses them.

    Parameters
    ----------
    values : array-like or GridCounts
        Numbers (``±inf`` allowed: they count as beyond every grid point), or their
        :class:`GridCounts` from one counting pass over :data:`COUNT_EDGES` (how
        ``treedp.release_cdf`` scans files, tables, Spark and Dask in bounded memory; the
        release is the same; ``nan`` then only names the policy the pass used).
    epsilon : float
        The budget of the bounds.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
    allowance : float, optional
        The threshold ``k`` (public). Default ``2 t_ν``, twice the query noise scale.
    integers : bool, default=False
        Integer data (for ``bins="integers"``): no width margin; the bounds are rounded
        inwards to integers (within ``±(2**53 - 1)``).
    lower, upper : float, optional
        A public bound on one side (at most one of the two; an integer when ``integers``),
        known to the user: only the other side is searched, with the whole ``epsilon``.
    rng : RandomSource, optional
    accountant : Accountant, optional
        A budget (:class:`treedp.Accountant` or a file ledger) charged ``PureDP(ε_spent)``
        after every check (the data read included) and before any noise is drawn; a charge
        past its total raises :class:`~treedp.exceptions.BudgetExceededError` and nothing is
        drawn or released.

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
    check_accountant(accountant)
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, NEIGHBOURS)
    policy = check_nan(nan, relation)
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
        own = SpendRecord(
            CONTRACT.name,
            PureDP(float_up(bounds_loss(eps, relation, known is not None))),
            relation,
            "record",
            parameters,
        )
        accountant.charge(own if charge is None else charge)
    value, stops, t_rho, t_nu, spent, k = _bounds(
        x, eps, relation, allowance, source, integers, lower, upper
    )
    return BoundsResult(
        value=value,
        guarantee=PureDP(float_up(spent)),
        neighbours=relation,
        mechanism=CONTRACT.name,
        epsilon=eps,
        sensitivity=(1.0, 1.0),
        parameters={**parameters, "allowance": k},
        randomness=describe(source),
        allowance=k,
        scales=(float(t_rho), float(t_nu)),
        stops=stops,
        known=known,
    )


def bounds_loss(epsilon: float, relation: str, one_sided: bool) -> Fraction:
    """The exact loss of :func:`private_bounds` at ``epsilon``: two scans of ``ε/2``, or one
    scan of ``ε`` when one bound is public."""
    if one_sided:
        return _scales(epsilon, relation)[2]
    return 2 * _scales(epsilon / 2, relation)[2]


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
