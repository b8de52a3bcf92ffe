"""Private bounds: ``(lo, hi)`` for a numeric column found with a share of the budget.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``add_remove`` or ``replace``
neighbours, privacy unit one record; the derivation is in :func:`private_bounds`.

The method is AboveThreshold (the sparse vector technique; Dwork and Roth 2014, Lyu, Su and
Li 2017) on a public, data-independent geometric grid over the representable range, as in
Durfee's unbounded quantile estimation (2023): the grid is ``2**(j/4) - 1`` for ``j`` in
``0..4000`` (from 0 up to about ``1e301``: steps of 0.19 near 0, then 19% apart). The upper
bound scans the grid upwards from 0 and stops at the first point ``c`` where the noisy number
of records above ``c`` falls to the allowance ``k``; the lower bound then scans downwards from
the released ``hi`` (``hi · 2**(-j/4)``, then 0 and the negative grid, :func:`lower_candidates`)
and stops where the noisy number of records below falls to ``k``. Both use exact discrete
Laplace noise (:mod:`treedp.noise`).

The grid is scale-free above 1 and starts at 0 (as Durfee's ``β^j - 1``): it is not dense near
0, which keeps the number of grid points inside the data's tail small (each is a chance to
stop early). The price: ``hi >= 0`` always, so negative data far from 0 (say all in
``[-1000, -500]``) get the range ``[~-1000, 0.19]``, and an upper bound of data of magnitude
far below 1 is at least 0.19. The lower scan, relative to ``hi``, finds positive lower
bounds (Adult age: about 13 for a minimum of 17).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms._column import (
    check_nan,
    check_neighbours,
    describe,
    float_up,
    read_column,
)
from treedp.mechanisms.results import Contract, MechanismResult
from treedp.noise import RandomSource, resolve_source
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.noise.rational import noise_scale
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.spend import SpendRecord

__all__ = [
    "CONTRACT",
    "GRID",
    "NEIGHBOURS",
    "BoundsResult",
    "lower_candidates",
    "private_bounds",
    "split_private_bounds",
]

#: Grid points per doubling of the magnitude.
STEPS_PER_OCTAVE = 4
#: Largest exponent (in octaves) of the grid: |grid| lies in [2**-1000, 2**1000] or is 0.
MAX_OCTAVE = 1000
NEIGHBOURS: tuple[str, ...] = ("add_remove", "replace")
#: Grid steps added beyond each scan's stop (post-processing).
MARGIN = 1
#: The same for integer data (``split_private_bounds(integers=True)``): none. Integer columns
#: often end in a top-coded point mass (Adult ``age`` 90, ``capital_gain`` 99999) that the
#: stop lies just inside of, and the bounds are rounded outwards to integers anyway; one more
#: 19% step only adds empty bins (Adult age: [13, 107] instead of [15, 90]).
INTEGER_MARGIN = 0
#: The default share of a budget spent on private bounds by ``bounds="private"``.
DEFAULT_SHARE = 0.1
CONTRACT = Contract(
    name="private_bounds",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "each query #{x > c} (#{x < c} for the lower bound) changes by at most 1; under "
        "add_remove all queries move in the same direction (monotone AboveThreshold: threshold "
        "and query noise scale 2/eps_side), under replace not (query noise 4/eps_side); half "
        "of the budget per side"
    ),
)


def _make_grid() -> np.ndarray:
    j = np.arange(0, MAX_OCTAVE * STEPS_PER_OCTAVE + 1)
    grid = np.exp2(j / STEPS_PER_OCTAVE) - 1.0
    grid.setflags(write=False)
    return grid


#: The public candidate magnitudes, ascending from 0: ``2**(j/4) - 1``, ``j = 0..4000``.
GRID = _make_grid()


@dataclass(frozen=True, repr=False, kw_only=True)
class BoundsResult(MechanismResult):
    """The result of :func:`private_bounds`: ``value = (lo, hi)``.

    Attributes
    ----------
    allowance : float
        The threshold ``k``: each scan stops where about ``k`` records lie beyond the point.
    scales : tuple of float
        The discrete Laplace scales of the threshold and the query noise.
    """

    allowance: float
    scales: tuple[float, float]

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
    keeps it). Adding a record raises every ``#{x > c}`` by 0 or 1: monotone; replacing one may
    raise some and lower others: not.
    """
    t_rho = noise_scale(2, epsilon_side)
    if relation == "add_remove":
        t_nu = noise_scale(2, epsilon_side)
        return t_rho, t_nu, 1 / t_rho + 1 / t_nu
    t_nu = noise_scale(4, epsilon_side)
    return t_rho, t_nu, 1 / t_rho + 2 / t_nu


def _scan_up(
    x: np.ndarray, t_rho: Fraction, t_nu: Fraction, allowance: float, source: RandomSource
) -> int:
    """AboveThreshold upwards over :data:`GRID` on sorted ``x``: the index of the first stop.


    Query ``j``: ``g_j = -#{x > GRID[j]}`` (non-decreasing in ``j``), threshold ``-k``; stop
    at the first ``j`` with ``g_j + ν_j >= -k + ρ``. No stop: the last index.
    """
    above = x.size - np.searchsorted(x, GRID, side="right")
    rho = int(sample_discrete_laplace(t_rho, 1, source)[0])
    nu = sample_discrete_laplace(t_nu, GRID.size, source)
    hits = np.flatnonzero(-above + nu >= -allowance + rho)
    return int(hits[0]) if hits.size else GRID.size - 1


#: Steps (of a quarter octave) the lower scan takes down from ``hi`` before it reaches 0.
DOWN_STEPS = 240


def lower_candidates(hi: float) -> np.ndarray:
    """The lower scan's public candidates, descending, given the released ``hi``.

    ``hi · 2**(-j/4)`` for ``j = 1..240`` (when ``hi > 0``: down to ``hi · 2**-60``), then 0,
    then ``-GRID[1:]`` (the negative grid, outwards). Data-independent given ``hi``.
    """
    top: np.ndarray = np.empty(0)
    if hi > 0:
        top = hi * np.exp2(-np.arange(1, DOWN_STEPS + 1) / STEPS_PER_OCTAVE)
    return np.concatenate([top, [0.0], -GRID[1:]])


def _scan_down(
    x: np.ndarray,
    candidates: np.ndarray,
    t_rho: Fraction,
    t_nu: Fraction,
    allowance: float,
    source: RandomSource,
) -> int:
    """AboveThreshold over descending ``candidates``: query ``-#{x < c}`` (non-decreasing
    along the scan), threshold ``-k``; the index of the first stop (the last if none)."""
    below = np.searchsorted(x, candidates, side="left")
    rho = int(sample_discrete_laplace(t_rho, 1, source)[0])
    nu = sample_discrete_laplace(t_nu, candidates.size, source)
    hits = np.flatnonzero(-below + nu >= -allowance + rho)
    return int(hits[0]) if hits.size else candidates.size - 1


def _bounds(
    x: np.ndarray,
    epsilon: float,
    relation: str,
    allowance: float | None,
    source: RandomSource,
    margin: int = MARGIN,
) -> tuple[float, float, Fraction, Fraction, Fraction, float]:
    """``hi`` by the upward scan from 0, then ``lo`` by the downward scan from ``hi``."""
    t_rho, t_nu, loss = _scales(epsilon / 2, relation)
    k = 2 * float(t_nu) if allowance is None else float(allowance)
    # Post-processing of each stop: ``margin`` candidates further out.
    hi = float(GRID[min(_scan_up(x, t_rho, t_nu, k, source) + margin, GRID.size - 1)])
    down = lower_candidates(hi)
    lo = float(down[min(_scan_down(x, down, t_rho, t_nu, k, source) + margin, down.size - 1)])
    if lo >= hi:  # post-processing (no or very few records): a non-empty range
        lo, hi = min(lo, hi), max(lo, hi) + float(GRID[1])
    return lo, hi, t_rho, t_nu, 2 * loss, k


def private_bounds(
    values: Any,
    *,
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    allowance: float | None = None,
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
) -> BoundsResult:
    """Bounds ``(lo, hi)`` of a numeric column under pure ε-DP, from a public grid.

    Two AboveThreshold scans over the public grid :data:`GRID` (``2**(j/4) - 1``, ``j =
    0..4000``, from 0 to about ``1e301``), each with ``ε/2``. The upper bound:
    for ``c`` ascending, the query ``-#{x > c}`` plus ``ν ~ DLap(t_ν)`` is compared with
    ``-k + ρ``, ``ρ ~ DLap(t_ρ)``; the first point where it is not below is ``hi``. The lower
    bound is the same on ``-x``. Nothing of the data but these counts is read: not its
    minimum, maximum or size.

    Guarantee: ``PureDP(ε_spent)``, ``ε_spent <= ε`` (exact rational scales rounded up).
    Each query has sensitivity 1 (one record changes a count by at most 1). ``add_remove``:
    all queries of a neighbour move in the same direction, so ``t_ρ = t_ν = 2/(ε/2)`` gives
    ``ε/2`` per scan (monotone AboveThreshold). ``replace``: ``t_ν = 4/(ε/2)``. Basic
    composition of the two scans.

    Accuracy and failure probability (one scan; ``t_ρ``, ``t_ν`` the scales, ``Q <= 4,241``
    candidates; ``P(DLap(t) >= s) <= e^{-s/t}`` for ``s >= 0``):

    * clamping: for any ``a > 0`` the scan stops where more than ``k + a`` records lie beyond
      the stop with probability at most ``Q e^{-a/(2 t_ν)} + e^{-a/(2 t_ρ)}`` (some ``ν_j`` or
      ``-ρ`` exceeds ``a/2``);
    * overshoot: for any ``0 <= b < k`` it runs at least ``s`` grid points past the first with
      no record beyond it with probability at most ``e^{-b/t_ρ} + e^{-s (k - b)/t_ν}`` (either
      ``ρ >= b``, or ``s`` independent ``ν_j < b - k``). A grid step is 19% (0.19 to 0.6 near 0).

    With the default ``k = 2 t_ν`` a typical stop has about ``2 t_ν`` records beyond it, and the
    bound returned is one grid step further out (:data:`MARGIN`, post-processing), which in a
    decaying tail clamps far fewer. Values beyond the bounds are clamped by the release that
    uses them.

    Parameters
    ----------
    values : array-like
        Numbers (``±inf`` allowed: they count as beyond every grid point).
    epsilon : float
        The budget of the bounds.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
    allowance : float, optional
        The threshold ``k`` (public). Default ``2 t_ν``, twice the query noise scale.
    rng : RandomSource, optional
    accountant : Accountant, optional
        A budget (:class:`treedp.Accountant` or a file ledger) charged ``PureDP(ε_spent)``
        after every check (the data read included) and before any noise is drawn; a charge
        past its total raises :class:`~treedp.exceptions.BudgetExceededError` and nothing is
        drawn or released.

    Returns
    -------
    BoundsResult
        ``value = (lo, hi)``, ``lo < hi``, ``hi >= 0`` a point of :data:`GRID`, with the
        guarantee and the spend record.

    References
    ----------
    .. [Dur23] D. Durfee. "Unbounded Differentially Private Quantile and Maximum Estimation".
       NeurIPS 2023.
    .. [LSL17] M. Lyu, D. Su, N. Li. "Understanding the Sparse Vector Technique for
       Differential Privacy". PVLDB 2017.
    """
    return _private_bounds(
        values, epsilon, neighbours, nan, allowance, rng, accountant, None, MARGIN
    )


def _private_bounds(
    values: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    allowance: Any,
    rng: RandomSource | None,
    accountant: Accountant | None,
    charge: SpendRecord | None,
    margin: int,
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
        raise InvalidParameterError(
            f"The 'allowance' parameter must be a finite number. Got {allowance!r}."
        )
    source = resolve_source(rng)
    data, unit = read_column(values, policy, relation)
    if unit is not None:
        raise InvalidTypeError("private_bounds takes numbers, not datetimes.")
    x = np.sort(np.asarray(data, dtype=np.float64))
    if accountant is not None:  # committed before any noise is drawn (fail closed)
        loss = _scales(eps / 2, relation)[2]
        own = SpendRecord(
            CONTRACT.name,
            PureDP(float_up(2 * loss)),
            relation,
            "record",
            {"epsilon": eps, "allowance": allowance, "nan": policy},
        )
        accountant.charge(own if charge is None else charge)
    lo, hi, t_rho, t_nu, spent, k = _bounds(x, eps, relation, allowance, source, margin)
    return BoundsResult(
        value=(lo, hi),
        guarantee=PureDP(float_up(spent)),
        neighbours=relation,
        mechanism=CONTRACT.name,
        epsilon=eps,
        sensitivity=(1.0, 1.0),
        parameters={"epsilon": eps, "allowance": k, "nan": policy},
        randomness=describe(source),
        allowance=k,
        scales=(float(t_rho), float(t_nu)),
    )


def split_private_bounds(
    values: Any,
    *,
    epsilon: float,
    share: float = DEFAULT_SHARE,
    integers: bool = False,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    charge: SpendRecord | None = None,
) -> tuple[tuple[float, float], float, BoundsResult]:
    """Spend ``share · ε`` on :func:`private_bounds`; return the bounds and the rest of ε.

    With ``integers=True`` the scans' stops are taken without the extra grid step
    (:data:`INTEGER_MARGIN`) and rounded outwards to integers (post-processing), for
    ``bins="integers"``. The caller releases with the returned remaining budget; the total
    is ``PureDP(bounds.epsilon_spent + remaining)``, at most ``epsilon``.

    With an ``accountant``, ``charge`` (the caller's record of the whole release, bounds and
    rest; by default ``PureDP(epsilon)``) is charged once, after every check and the data read
    and before any noise is drawn; the caller then releases without charging again.

    Returns
    -------
    bounds : (float, float)
    remaining : float
        ``(1 - share) · epsilon``, rounded down.
    result : BoundsResult
    """
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise InvalidParameterError(
            f"The 'bounds_share' parameter must be a float in (0, 1). Got {share!r}."
        )
    eps = check_epsilon(epsilon)
    if accountant is not None and charge is None:
        charge = SpendRecord(
            "split_private_bounds",
            PureDP(eps),
            check_neighbours(neighbours, NEIGHBOURS),
            "record",
            {"epsilon": eps, "bounds_share": share, "nan": nan},
        )
    margin = INTEGER_MARGIN if integers else MARGIN
    result = _private_bounds(
        values, eps * share, neighbours, nan, None, rng, accountant, charge, margin
    )
    lo, hi = result.lo, result.hi
    if integers:
        lo, hi = float(math.floor(lo)), float(math.ceil(hi))
    remaining = math.nextafter(eps - result.epsilon_spent, 0.0)
    return (lo, hi), remaining, result
