"""Private bounds as the first stage of a release: a share of its budget, the rest after.

The guarantee is the basic composition of the two stages, ``PureDP(bounds.epsilon_spent +
remaining)``, at most ε, with the release's neighbours and privacy unit.
"""

from __future__ import annotations

import math
from typing import Any

from treedp._validation import must
from treedp.budget import check_epsilon
from treedp.domain import MAX_BINS
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.privacy.spend import SpendRecord
from treedp.value_methods._column import check_neighbours, float_up
from treedp.value_methods.private_bounds import NEIGHBOURS, BoundsResult, bounds_loss, find_bounds

__all__ = [
    "DEFAULT_SHARE",
    "check_share",
    "cut_integer_range",
    "integer_cut_warning",
    "private_request",
    "remaining_epsilon",
    "split_private_bounds",
]

#: The default share of a budget spent on private bounds by ``bounds="private"``.
DEFAULT_SHARE = 0.1


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
    lower: float | None = None,
    upper: float | None = None,
    max_bins: int | None = MAX_BINS,
) -> tuple[tuple[float, float], float, BoundsResult]:
    """Spend ``share · ε`` on :func:`treedp.private_bounds`; return the bounds and the rest of ε.

    ``integers``: integer bounds (:func:`treedp.private_bounds`), cut to at most ``max_bins``
    integers (the counting mechanism's public limit; None for methods without bins) by
    :func:`cut_integer_range`. ``lower``/``upper``: one public side. With an ``accountant``,
    ``charge`` (the caller's record of the whole release; by default ``PureDP(epsilon)``) is
    charged once, after every check and the data read and before any noise is drawn; the
    caller then releases with the remaining budget without charging again.

    Returns
    -------
    bounds : (float, float)
    remaining : float
        ``epsilon`` minus what the bounds spent, rounded down.
    result : BoundsResult
    """
    check_share(share)
    eps = check_epsilon(epsilon)
    if accountant is not None and charge is None:
        charge = SpendRecord(
            "split_private_bounds",
            PureDP(eps),
            check_neighbours(neighbours, NEIGHBOURS),
            "record",
            {"epsilon": eps, "bounds_share": share, "nan": nan},
        )
    result = find_bounds(
        values, eps * share, neighbours, nan, None, rng, accountant, charge, integers, lower, upper
    )
    lo, hi = result.lo, result.hi
    if integers and max_bins is not None:
        lo, hi = cut_integer_range(lo, hi, result.known, max_bins)
    remaining = math.nextafter(eps - result.epsilon_spent, 0.0)
    return (lo, hi), remaining, result


def cut_integer_range(
    lo: float, hi: float, known: str | None, max_bins: int
) -> tuple[float, float]:
    """Integer bounds ``[lo, hi]`` cut to at most ``max_bins`` integers (post-processing).

    A range of more integers keeps the ``max_bins`` integers around its middle (next to the
    public side ``known`` when one is public), rather than refuse after the budget was spent;
    :func:`integer_cut_warning` says so (the release then also flags clamped end bins).
    """
    if hi - lo + 1 <= max_bins:
        return lo, hi
    if known == "lower":
        return lo, lo + max_bins - 1
    if known == "upper":
        return hi - max_bins + 1, hi
    middle = math.floor((lo + hi) / 2)
    lo = float(middle - max_bins // 2)
    return lo, lo + max_bins - 1


def integer_cut_warning(max_bins: int) -> str:
    """The warning for integer bounds cut by :func:`cut_integer_range` (no data value)."""
    return (
        f"The privately found integer range was wider than the {max_bins} integers the "
        "mechanism can count one bin each, so the release kept that many integers around its "
        "middle (next to the public side when one was given): values outside were clamped "
        "into the end bins. Give public bounds, or a mechanism that takes more bins."
    )


def check_share(share: Any) -> None:
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
        raise InvalidParameterError(must("bounds_share", f"be a float in (0, 1). Got {share!r}."))


def remaining_epsilon(
    epsilon: float,
    share: float = DEFAULT_SHARE,
    neighbours: str = "add_remove",
    one_sided: bool = False,
) -> float:
    """The ε :func:`split_private_bounds` leaves for the release, from public parameters only
    (checked before any budget is spent); ``one_sided``: one bound public (one scan)."""
    check_share(share)
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, NEIGHBOURS)
    loss = bounds_loss(check_epsilon(eps * share), relation, one_sided)
    return math.nextafter(eps - float_up(loss), 0.0)


def private_request(bounds: Any) -> tuple[Any, Any] | None:
    """Read a ``bounds`` argument that asks for private bounds: ``"private"`` → ``(None,
    None)``, ``(lo, "private")`` → ``(lo, None)``, ``("private", hi)`` → ``(None, hi)``;
    anything else → None (public bounds, or an invalid value the caller reports). The public
    side is validated by :func:`~treedp.value_methods.private_bounds.check_known_bound`.
    """
    if isinstance(bounds, str):
        return (None, None) if bounds == "private" else None
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        return None
    private = [isinstance(b, str) and b == "private" for b in bounds]
    if not any(private):
        return None
    return (None if private[0] else bounds[0], None if private[1] else bounds[1])
