"""Bounds found beforehand by :func:`treedp.private_bounds`, given to a release.

``release_cdf(x, bounds=b, ...)`` with ``b`` a :class:`~treedp.value_methods.private_bounds.
BoundsResult` releases on ``b.value`` as on public bounds (the release's budget is its own:
``b`` was charged when it was found, to its own accountant) and keeps the scans' record, marked
``"external"``, so that the release knows its sides were found from the records: the scans
leave records beyond them, clamped into the end bins, and its intervals hold them
(:meth:`treedp.Release.confidence_interval`), as they do for ``bounds="private"``. This is the
route for a zCDP or (ε, δ) release, whose budget the bounds' pure-ε step cannot share. Numbers
only: :func:`treedp.private_bounds` takes no datetimes.
"""

from __future__ import annotations

from typing import Any

from treedp._validation import must
from treedp.exceptions import InvalidParameterError

__all__ = ["split_found"]


def split_found(bounds: Any) -> tuple[Any, dict[str, Any] | None]:
    """``(bounds, None)`` for anything but a ``BoundsResult``; for one, its ``(lo, hi)`` and
    the record a release keeps (:attr:`treedp.Release.bounds_step`, ``"external": True``).
    Public facts only: the result's released stops, allowance and spend."""
    from treedp.value_methods.private_bounds import BoundsResult

    if not isinstance(bounds, BoundsResult):
        return bounds, None
    if bounds.value is None:  # pragma: no cover - private_bounds always answers
        raise InvalidParameterError(must("bounds", "be found bounds, not a refusal."))
    lo, hi = (float(v) for v in bounds.value)
    step: dict[str, Any] = {
        "method": "private_bounds",
        "external": True,  # found and charged before this release, by treedp.private_bounds
        "stops": [float(v) for v in bounds.stops],
        "epsilon": float(bounds.epsilon),  # the scans' pure ε, charged when they ran
        "allowance": float(bounds.allowance),
        "lo": lo,
        "hi": hi,
    }
    if bounds.known is not None:
        step["known"] = bounds.known
    return (lo, hi), step
