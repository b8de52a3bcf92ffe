"""Private bounds of a datetime column: the scans of :mod:`.private_bounds` on a grid of days.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``), ``add_remove`` or ``replace``
neighbours, privacy unit one record, exactly as :func:`treedp.private_bounds`: two monotone
AboveThreshold scans of ``ε/2`` each (basic composition) over a public, data-independent grid.

The grid (:data:`DAY_GRID`) is every midnight from 1678-01-01 to 2261-12-31 (213,301 points,
the span of pandas' nanosecond datetimes), in seconds since 1970-01-01 on the timeline the
column is counted on: UTC instants for datetimes with a zone or UTC offsets, wall times for
naive ones. A geometric grid like the numbers' would be scale-free about 1970, which is no
place of datetimes (2013 lies 16,000 days from it, where the numbers' steps are 19% wide);
days are a public resolution fine enough for a column spanning weeks or more.

Sensitivity derivation. The upper scan reads ``#{x >= c}`` for ``c`` ascending from the first
grid point; the lower scan ``#{x < c}`` for ``c`` descending from the upper stop (a public
function of the first scan's release: sequential composition). Each query has sensitivity 1,
and all queries of a neighbour move in the same direction (adding ``a`` raises ``#{x >= c}``
for every ``c <= a``; replacing ``a`` by ``b > a`` raises it for ``c`` in ``(a, b]`` only, and
lowers nothing), so the monotone scales of :func:`.private_bounds.scan_scales` apply. Values
before the first point count below every point, values after the last at or above every
point, as the counting pass's clamping puts them (:data:`DAY_EDGES`).

Release (post-processing of the stops only): each stop moved :data:`MARGIN` days outwards,
then :data:`WIDTH_MARGIN` of the width on each side (whole seconds), as for real numbers.
Accuracy: the failure bounds of :mod:`.private_bounds` hold with ``Q = 213,301`` candidates
instead of 8,001 (``a`` grows by ``2 t_ν ln 26.7``, about 400 records at ``ε = 0.1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.results import Contract
from treedp.noise import RandomSource
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import Call, float_up
from treedp.value_methods.private_bounds import (
    ALLOWANCE_SCALES,
    MARGIN,
    NEIGHBOURS,
    WIDTH_MARGIN,
    BoundsResult,
    bounds_loss,
    first_crossing,
    scan_scales,
)

__all__ = [
    "CONTRACT",
    "DAY_EDGES",
    "DAY_GRID",
    "DAY_SECONDS",
    "DayCounts",
    "datetime_bounds",
    "in_scan_order",
    "split_datetime_bounds",
]

#: Seconds per grid step.
DAY_SECONDS = 86_400
_FIRST = int(np.datetime64("1678-01-01", "s").astype(np.int64))
_LAST = int(np.datetime64("2261-12-31", "s").astype(np.int64))


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


#: The public candidates, ascending: every midnight from 1678-01-01 to 2261-12-31, as int64
#: seconds since 1970-01-01 (213,301 points).
DAY_GRID = _frozen(np.arange(_FIRST, _LAST + 1, DAY_SECONDS, dtype=np.int64))
#: The edges of the one counting pass (``datetime64[s]``): one day before the first grid
#: point, every grid point, one day after the last. Bin ``j + 1`` starts at point ``j``, so
#: ``#{x < c_j}`` is the sum of bins ``0..j``; values outside are clamped into the end bins,
#: which lie below (above) every point as the scans count them.
DAY_EDGES = _frozen(
    np.concatenate([[_FIRST - DAY_SECONDS], DAY_GRID, [_LAST + DAY_SECONDS]]).astype(
        "datetime64[s]"
    )
)
#: Its ``bounds_step["grid"]`` in a release (the stops are seconds on this grid).
GRID_NAME = "days"
CONTRACT = Contract(
    name="private_bounds[datetime]",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "each query #{x >= c} (upper scan) or #{x < c} (lower scan) on the public day grid "
        "changes by at most 1, and under both add_remove and replace all queries of a "
        "neighbour move in the same direction: monotone AboveThreshold, threshold noise "
        "scale 1.5/eps_side, query noise 3/eps_side, half of the budget per side"
    ),
)


@dataclass(frozen=True, repr=False)
class DayCounts:
    """What the scans read: ``below[j] = #{x < DAY_GRID[j]}`` and the number of records.

    Made by :meth:`from_counts` from one counting pass over :data:`DAY_EDGES` (any engine),
    or :meth:`from_seconds` (tests, values in memory).
    """

    below: np.ndarray
    total: int

    def __post_init__(self) -> None:
        arr = self.below
        if not isinstance(arr, np.ndarray) or arr.shape != DAY_GRID.shape or arr.dtype.kind != "i":
            raise InvalidParameterError(
                "DayCounts.below must hold one int64 count per point of DAY_GRID; make it "
                "with DayCounts.from_counts or DayCounts.from_seconds."
            )

    @classmethod
    def from_counts(cls, counts: Any) -> DayCounts:
        """From the ``DAY_EDGES.size - 1`` bin counts of a pass over :data:`DAY_EDGES`."""
        arr = np.asarray(counts)
        if arr.shape != (DAY_EDGES.size - 1,) or arr.dtype.kind not in "iu":
            raise InvalidParameterError(
                "DayCounts.from_counts takes the integer counts of the bins of DAY_EDGES."
            )
        total = np.cumsum(arr.astype(np.int64))
        return cls(_frozen(total[: DAY_GRID.size].copy()), int(total[-1]) if total.size else 0)

    @classmethod
    def from_seconds(cls, seconds: Any) -> DayCounts:
        """From int64 seconds since 1970-01-01 (no missing values)."""
        x = np.sort(np.asarray(seconds, dtype=np.int64).ravel())
        below = np.searchsorted(x, DAY_GRID, side="left").astype(np.int64)
        return cls(_frozen(below), int(x.size))


def in_scan_order(counts: DayCounts, side: int, start: int) -> np.ndarray:
    """The counts a scan reads, in its order: the upper scan (``side`` 1) ``#{x >= c}`` for
    the points from index ``start`` upwards; the lower scan (``side`` 0) ``#{x < c}`` from
    index ``start`` downwards."""
    if side == 1:
        out: np.ndarray = counts.total - counts.below[start:]
        return out
    down: np.ndarray = counts.below[start::-1]
    return down


def _stops(
    counts: DayCounts, epsilon: float, relation: str, source: RandomSource
) -> tuple[int, int, Fraction, Fraction, float]:
    """The two scans: the upper from the first point, the lower from the upper stop."""
    t_rho, t_nu, _ = scan_scales(epsilon / 2, relation)
    k = ALLOWANCE_SCALES * float(t_nu)
    up = first_crossing(in_scan_order(counts, 1, 0), t_rho, t_nu, k, source)
    down = up - first_crossing(in_scan_order(counts, 0, up), t_rho, t_nu, k, source)
    return down, up, t_rho, t_nu, k


def released_seconds(down: int, up: int) -> tuple[int, int]:
    """The bounds from the stops' indices (post-processing): :data:`MARGIN` days outwards,
    then :data:`WIDTH_MARGIN` of the width on each side, rounded outwards to seconds."""
    lo = int(DAY_GRID[max(down - MARGIN, 0)])
    hi = int(DAY_GRID[min(up + MARGIN, DAY_GRID.size - 1)])
    if lo >= hi:  # stops at the grid's ends
        hi = lo + DAY_SECONDS
    margin = math.ceil(Fraction(WIDTH_MARGIN) * (hi - lo))
    return lo - margin, hi + margin


def datetime_bounds(
    counts: DayCounts,
    *,
    epsilon: float,
    neighbours: str,
    rng: RandomSource,
    accountant: Accountant | None = None,
    charge: SpendRecord | None = None,
) -> BoundsResult:
    """Bounds of a datetime column, from its :class:`DayCounts` (module docstring).

    ``epsilon`` and ``neighbours`` are checked by the caller. With an ``accountant``,
    ``charge`` (the caller's record of the whole release; by default this step's own) is
    charged before any noise is drawn.

    Returns
    -------
    BoundsResult
        ``value = (lo, hi)`` and ``stops`` in seconds since 1970-01-01 on the counted
        timeline (UTC instants, or wall times for naive data), ``lo < hi``.
    """
    parameters: dict[str, Any] = {"epsilon": epsilon, "grid": GRID_NAME}
    loss = PureDP(float_up(bounds_loss(epsilon, neighbours, False)))  # two scans of ε/2
    if accountant is not None:  # committed before any noise is drawn (fail closed)
        own = SpendRecord(CONTRACT.name, loss, neighbours, "record", parameters)
        accountant.charge(own if charge is None else charge)
    down, up, t_rho, t_nu, k = _stops(counts, epsilon, neighbours, rng)
    lo, hi = released_seconds(down, up)
    call = Call(CONTRACT.name, neighbours, epsilon, {**parameters, "allowance": k}, rng)
    return call.result(
        BoundsResult,
        (float(lo), float(hi)),
        loss,
        (1, 1),
        allowance=k,
        scales=(float(t_rho), float(t_nu)),
        stops=(float(DAY_GRID[down]), float(DAY_GRID[up])),
    )


def split_datetime_bounds(
    counts: DayCounts,
    *,
    epsilon: float,
    share: float,
    neighbours: str,
    rng: RandomSource,
    accountant: Accountant | None = None,
    charge: SpendRecord | None = None,
) -> tuple[BoundsResult, float]:
    """:func:`datetime_bounds` with ``share · epsilon`` as the first stage of a release, and the
    epsilon left for it (``epsilon`` minus the bounds' spend, rounded down), as
    :func:`treedp.value_methods.bounds_split.split_private_bounds` does for numbers."""
    from treedp.budget import check_epsilon

    found = datetime_bounds(
        counts,
        epsilon=check_epsilon(epsilon * share),
        neighbours=neighbours,
        rng=rng,
        accountant=accountant,
        charge=charge,
    )
    return found, math.nextafter(epsilon - found.epsilon_spent, 0.0)
