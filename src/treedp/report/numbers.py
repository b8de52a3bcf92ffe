"""How the report pages write numbers: shares that round to zero, switched-off levels, round
table points, and the name of the released column on the axes.

All of it is presentation of public parameters or released values (post-processing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from treedp.release import Release

__all__ = ["axis_name", "chosen_bound", "chosen_text", "level_texts", "nice_points", "percent"]

#: The table of CDF values aims at about this many round points (at least 3).
_TARGET_POINTS = 11


def percent(share: float) -> str:
    """A share as a percentage with two decimals, ``"< 0.01%"`` (not ``"0.00%"``) when a
    positive share rounds to zero, and ``"—"`` when it is not a number."""
    if not math.isfinite(share):
        return "—"
    if 0 < abs(share) < 5e-5:
        return "< 0.01%" if share > 0 else "> -0.01%"
    return f"{share:.2%}"


def level_texts(values: Sequence[float], budgets: Sequence[float], spec: str = ".4g") -> str:
    """Per-level numbers, with ``"off"`` for a level that is not released (budget 0, whose
    noise variance is infinite), never ``"inf"`` or ``"0"``."""
    if len(budgets) != len(values):  # no budget per value: an infinite value is still "off"
        budgets = [1.0] * len(values)
    return ", ".join(
        "off" if b == 0 or not math.isfinite(v) else format(v, spec)
        for v, b in zip(values, budgets, strict=True)
    )


def nice_points(values: np.ndarray, target: int = _TARGET_POINTS) -> np.ndarray:
    """The indices of the roundest values among ``values`` (sorted public points): those that
    are multiples of the smallest 1-2-5 step giving 3 to ``target + 1`` of them; ``None``-like
    empty array when no step does (the caller then spaces points evenly).

    Examples
    --------
    >>> v = np.arange(-60, 301).astype(float)
    >>> v[nice_points(v)].tolist()
    [-50.0, 0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0]
    """
    v = np.asarray(values, dtype=np.float64)
    if v.size < 3 or not np.all(np.isfinite(v)):
        return np.array([], dtype=np.int64)
    span = float(v[-1] - v[0])
    if span <= 0:
        return np.array([], dtype=np.int64)
    start = math.floor(math.log10(span / (target + 1)))
    for power in range(start, start + 4):
        for mult in (1, 2, 5):
            step = mult * 10.0**power
            ratio = v / step
            hit = np.abs(ratio - np.round(ratio)) <= 1e-9 * np.maximum(np.abs(ratio), 1.0)
            count = int(hit.sum())
            if count <= target + 1:
                return np.flatnonzero(hit) if count >= 3 else np.array([], dtype=np.int64)
    return np.array([], dtype=np.int64)


def axis_name(release: Release | Any, column: str | None) -> str:
    """The name on a value axis: the column given, else the column the release records (a
    release that records one), else ``"value"`` (``"date"`` for datetime bins)."""
    if column is not None:
        return str(column)
    recorded = getattr(release, "column", None)
    if isinstance(recorded, str) and recorded:
        return recorded
    bins = getattr(release, "bins", None)
    return "date" if bins is not None and bins.is_datetime else "value"


def chosen_text(epsilon: float, rho: float) -> str:
    """``, chosen privately (max_contributions="auto", ε = 0.1 of the budget)`` when the
    contribution bound was chosen from the data (its spend, part of the guarantee), else
    empty."""
    spent = f"ε = {epsilon:g}" if epsilon > 0 else f"ρ = {rho:g}" if rho > 0 else None
    if spent is None:
        return ""
    return f', chosen privately (max_contributions="auto", {spent} of the budget)'


def chosen_bound(choice: dict[str, Any] | None) -> str:
    """:func:`chosen_text` for a grouped release's ``bound_choice`` record."""
    if choice is None:
        return ""
    return chosen_text(float(choice.get("epsilon_spent", 0.0)), float(choice.get("rho_spent", 0.0)))
