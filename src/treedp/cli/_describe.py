"""What a release holds and guarantees, in words (``query --info``, the ``release`` line,
the grouped commands; shared, imports no command module)."""

from __future__ import annotations

from typing import Any

import treedp
from treedp.cli._bounds import found_side
from treedp.cli._common import SEEDED, fmt_count

__all__ = [
    "approx_reading",
    "bound_spent",
    "collision_text",
    "guarantee_text",
    "info",
    "plain",
    "target_entry",
]


def plain(value: Any) -> Any:
    """A JSON/CSV-ready scalar: float, int, str (datetimes as ISO text) or None (NaN, NaT)."""
    import datetime

    import numpy as np

    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else str(value)
    if isinstance(value, datetime.datetime):  # a time in the release's zone
        return None if value != value else value.isoformat()  # NaT is not equal to itself
    if isinstance(value, float | np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    return value


def guarantee_text(guarantee: Any) -> str:
    """A guarantee in words: pure epsilon-DP, (epsilon, delta)-DP or rho-zCDP."""
    if hasattr(guarantee, "rho"):
        return f"rho-zCDP, rho={guarantee.rho:.6g}"
    if hasattr(guarantee, "delta"):
        return f"(epsilon, delta)-DP, epsilon={guarantee.epsilon:.6g}, delta={guarantee.delta:.3g}"
    return f"pure epsilon-DP, epsilon={guarantee.epsilon:.6g}"


def collision_text(released: Any) -> str:
    """The δ of telling persons apart by a keyed hash (text ids on files), in words, or ""
    (a release or grouped release whose persons were compared exactly, or without persons)."""
    unit = getattr(released, "unit", None)
    stated = getattr(released, "collision", None) or getattr(unit, "collision", None)
    if not stated:
        return ""
    return (
        ", plus delta <= (n - 1)*2**-128 for n persons (ids told apart by a keyed 128-bit "
        "hash; docs/grouped.md)"
    )


def info(release: Any) -> dict[str, Any]:
    """What was released, as readable plain data."""
    bins = release.bins
    edges = release.edges
    lo, hi = plain(edges[0]), plain(edges[-1])
    if bins.discrete:
        described = f"{bins.n_bins} bins, one per integer {lo:g}..{hi - 1:g}"
    elif bins.integers:
        each = f"{plain(edges[1]) - lo:g} integers each" if bins.equal_width else "whole integers"
        described = f"{bins.n_bins} bins of {each}, {lo:g}..{hi - 1:g}"
    elif bins.equal_width:
        described = f"{bins.n_bins} equal-width bins over [{lo}, {hi})"
    else:
        described = f"{bins.n_bins} bins over [{lo}, {hi}) at explicit edges"
    if release.mechanism.n is not None:  # a public n (record-level replace)
        size = f"{release.mechanism.n} (public, replace neighbours)"
    elif not release.offers_intervals:
        size = f"{fmt_count(release.n)} (estimated; no standard error for this mechanism)"
    else:
        se = float(release.prefix_variance[-1]) ** 0.5
        size = f"{fmt_count(release.n)} (estimated; standard error {se:.3g})"
    randomness = release.randomness
    if release.seeded:
        source = f"seeded with {randomness.get('seed')}{SEEDED}"
    else:
        source = str(randomness.get("source", "operating system"))
    shape = release.branching
    unit = release.unit
    details = {
        "mechanism": release.mechanism.name
        + (f", branching {'×'.join(map(str, shape))}" if shape else ""),
        "guarantee": f"{guarantee_text(release.guarantee)}{collision_text(release)} "
        f"({release.neighbours.replace('_', '/')} neighbours, "
        + (
            "one record per privacy unit)"
            if unit is None
            else f"one person per privacy unit: {unit.label}, at most "
            f"{unit.bounds.max_contributions} rows each{_auto_text(unit)})"
        ),
        **target_entry(release),
    }
    step = release.bounds_step
    if step is not None and step.get("external"):  # found beforehand, charged then
        details["bounds"] = (
            f"{_found(step)} beforehand by treedp.private_bounds (epsilon={step['epsilon']:.4g},"
            " charged on its own, not in the guarantee above)"
        )
    elif step is not None:
        details["total guarantee"] = (
            f"{guarantee_text(release.total_guarantee)}, {_found(step)} from the same data "
            f"(epsilon={step['epsilon']:.4g}) included"
        )
    return details | {
        "budget per level": ", ".join(f"{e:.4g}" for e in release.level_budgets),
        "noise": str(release.metadata().get("noise", "")),
        "bins": described,
        "records": size,
        "estimator": f"{release.estimator}, post-processing {release.postprocess}"
        + (", integer counts" if release.integer else ""),
        "randomness": source,
        "made by": f"treedp {release.library_version}",
    }


def bound_spent(unit: Any) -> tuple[str, float] | None:
    """``("epsilon", 0.1)`` (or ``"rho"``) when a person-level release's contribution bound
    was chosen from the data (``max_contributions="auto"``: the unit's ``bound_epsilon`` /
    ``bound_rho``), else None."""
    for name in ("epsilon", "rho"):
        spent = float(getattr(unit, f"bound_{name}", 0.0))
        if spent > 0:
            return name, spent
    return None


def _auto_text(unit: Any) -> str:
    """``, chosen privately (auto, epsilon=0.1 of the budget)`` for :func:`bound_spent`."""
    spent = bound_spent(unit)
    return (
        ""
        if spent is None
        else f", chosen privately (auto, {spent[0]}={spent[1]:.6g} of the budget)"
    )


def target_entry(released: Any) -> dict[str, str]:
    """``{"target": ...}``: the (ε, δ) target asked for, which the zCDP guarantee implies
    (empty without one)."""
    if released.approx_target is None:
        return {}
    return {
        "target": f"{guarantee_text(released.approx_target)} (asked for; the rho above "
        "implies it by the tight conversion)"
    }


def _found(step: dict[str, Any]) -> str:
    """What a bounds step found: both bounds, or the side that was not public."""
    known = step.get("known")
    public = "" if known is None else f" ({known} bound public)"
    return f"{found_side(known)} found privately{public}"


def approx_reading(guarantee: Any, delta: float | None) -> str:
    """``; (ε, δ)-DP with ε=..., δ=...``: the tight reading of a zCDP guarantee at the
    ``--delta`` that was asked for (empty without one); the file keeps the target too
    (``Release.target``), shown by ``query --info`` and ``report``."""
    if delta is None or not isinstance(guarantee, treedp.ZCDP):
        return ""
    approx = guarantee.to_approx(delta)
    return f"; that is (epsilon, delta)-DP with epsilon={approx.epsilon:.6g}, delta={delta:.3g}"
