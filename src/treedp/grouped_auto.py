"""The ``max_contributions="auto"`` stage of a per-person query (in-memory tables).

After every column was read and the query charged, the rows each person has (after the public
filters) choose the bound privately (:mod:`treedp.privacy.auto_bound`, ``share·ε``); the trees
are then planned at ``(1 - share)·ε / Δ(m)`` per record for the chosen ``m``. The choice's
noise unit, ``G·R`` (``G`` keys, ``R`` the exact RMSE of one key's CDF at one record per
person), is computed from public parameters before any data is read.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import MIN_EPSILON
from treedp.estimation import prefix_covariance
from treedp.noise import RandomSource
from treedp.noise.families import float_at_least
from treedp.privacy.auto_bound import auto_split, choose_bound
from treedp.privacy.contribution import ContributionBounds, scaled_budget
from treedp.query import Grouping
from treedp.spec import ReleaseSpec

__all__ = ["Chosen", "auto_of", "auto_target", "bound_record", "choose_auto", "with_bound"]

#: The chosen bounds and the exact ε the choice spent.
Chosen = tuple[ContributionBounds, Fraction]


def auto_of(grouping: Grouping) -> dict[str, Any]:
    """The choice's public settings, as a spend record and a release file state them."""
    assert grouping.auto is not None
    return {"auto_share": grouping.auto.share, "auto_cap": grouping.auto.cap}


def auto_target(mech: Any, est: str, grouping: Grouping) -> float:
    """``G·R``: the keys times the exact RMSE of one key's CDF at one record per person
    (public: the record-level mechanism at bound 1, before any data is read)."""
    n_bins = int(mech.n_bins)
    m = np.arange(n_bins + 1)
    variance = prefix_covariance(mech, est).cov(m, m)[1:]
    n_keys = 1 if grouping.keys is None else len(grouping.keys)
    return float(n_keys * np.sqrt(variance.mean()))


def choose_auto(
    person: np.ndarray, grouping: Grouping, target: float, source: RandomSource
) -> Chosen:
    """The bound chosen from each person's rows (``person``: a code per kept row)."""
    assert grouping.auto is not None and grouping.epsilon is not None
    rows = np.bincount(np.asarray(person, dtype=np.int64)) if person.size else np.zeros(0, int)
    first, rest = auto_split(grouping.epsilon, grouping.auto.share)
    per_row = 2 if grouping.neighbours == "replace" else 1  # Δ(m) = m, or 2m under replace
    largest = int(rest / MIN_EPSILON) // per_row  # the trees' ε/Δ(m) stays a valid budget
    bound, spent = choose_bound(
        rows[rows > 0], grouping.auto, target, first, grouping.neighbours, source, largest
    )
    bounds = ContributionBounds.from_parameters(grouping.unit, bound, grouped=bool(grouping.by))
    return bounds, spent


def with_bound(
    grouping: Grouping, spec: ReleaseSpec, bounds: ContributionBounds
) -> tuple[Grouping, ReleaseSpec]:
    """The grouping and record-level spec at the chosen bound (the rest of ε over ``Δ``)."""
    assert grouping.auto is not None and grouping.epsilon is not None
    _, rest = auto_split(grouping.epsilon, grouping.auto.share)
    eps = scaled_budget(rest, bounds.sensitivity(grouping.neighbours)[0])
    return replace(grouping, bounds=bounds), replace(spec, epsilon=eps)


def bound_record(grouping: Grouping, spent: Fraction) -> dict[str, Any]:
    """How the bound was chosen, as a release states it."""
    return {**auto_of(grouping), "epsilon_spent": float_at_least(spent)}
