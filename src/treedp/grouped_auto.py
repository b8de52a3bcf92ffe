"""The ``"auto"`` bound stage of a per-person query (in memory, or in a file engine's pass
through :func:`engine_pass`).

After every column was read and the query charged, the rows each person has (after the public
filters) choose the bound privately (:mod:`treedp.privacy.auto_bound`, ``share·ε`` or
``share·ρ``, the noise family the budget's); the trees are then planned at the rest over
``Δ1(m)`` (or ``Δ2²(m)``) per record for the chosen bound. ``max_contributions="auto"``
takes persons; ``max_contributions_per_group="auto"`` first draws each person's
``max_groups`` keys (uniformly, as :func:`bound_contributions` does) and takes the
(person, key) pairs. By default the choice releases the mass histogram of their rows' bins
(:mod:`treedp.privacy.auto_mass`: the bias of each bound estimated); with
``AutoBound(heterogeneity=h)`` the count histogram of their row counts. The choice's noise
unit, ``G·R`` (``G`` keys, ``R`` the exact RMSE of one key's CDF at bound 1), is computed from
public parameters before any data is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.engines.auto_pass import AutoPass
from treedp.estimation import prefix_covariance
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.noise.families import BudgetedFamily, budgeted, float_at_least
from treedp.privacy.auto_bound import (
    auto_split,
    candidates,
    choice_noises,
    choose_from_histogram,
    entry_histograms,
)
from treedp.privacy.contribution import ContributionBounds, scaled_budget
from treedp.privacy.measures import ZCDP
from treedp.query import Grouping
from treedp.release.unit import PersonUnit, loss_factor
from treedp.spec import ReleaseSpec

__all__ = [
    "Chosen",
    "auto_of",
    "auto_target",
    "bound_record",
    "choose_auto",
    "engine_pass",
    "key_top",
    "person_unit",
    "with_bound",
]

#: The chosen bounds and the exact budget (ε or ρ) the choice spent.
Chosen = tuple[ContributionBounds, Fraction]


def auto_of(grouping: Grouping) -> dict[str, Any]:
    """The choice's public settings, as a spend record and a release file state them (the
    bound chosen, and ``max_contributions`` it implies, marked ``"auto"``)."""
    assert grouping.auto is not None and grouping.auto_name is not None
    return {
        "max_contributions": "auto",
        grouping.auto_name: "auto",
        "auto_share": grouping.auto.share,
        "auto_cap": grouping.auto.cap,
    }


def auto_target(mech: Any, est: str, grouping: Grouping) -> float:
    """``G·R``: the keys times the exact RMSE of one key's CDF at bound 1 (public: the
    record-level mechanism at the stand-in bound, before any data is read)."""
    n_bins = int(mech.n_bins)
    m = np.arange(n_bins + 1)
    variance = prefix_covariance(mech, est).cov(m, m)[1:]
    n_keys = 1 if grouping.keys is None else len(grouping.keys)
    return float(n_keys * np.sqrt(variance.mean()))


def _budgets(grouping: Grouping) -> tuple[type[BudgetedFamily], float, float]:
    """The noise family of the person's budget, the choice's share and the trees' rest."""
    family, total = budgeted(grouping.epsilon, grouping.rho)
    assert grouping.auto is not None and total is not None
    first, rest = auto_split(total, grouping.auto.share)
    return family, first, rest


def _bounds_at(grouping: Grouping, bound: int) -> ContributionBounds:
    """The contribution bounds with ``bound`` in the place of the ``"auto"`` one (alone, or
    with the fixed ``max_groups``: ``m = max_groups·c``)."""
    limits: tuple[int | None, ...] = (bound, None, None)
    if grouping.auto_name == "max_contributions_per_group":
        limits = (None, grouping.bounds.max_groups, bound)
    return ContributionBounds.from_parameters(grouping.unit, *limits, grouped=bool(grouping.by))


def _largest(grouping: Grouping, family: type[BudgetedFamily], rest: float) -> int:
    """The largest candidate whose trees' budget, the rest over the person's loss factor,
    is still valid (public), so that no choice is refused after the charge."""
    assert grouping.auto is not None
    zcdp = family.guarantee_kind == "zcdp"
    largest = 1
    for b in candidates(grouping.auto.cap):
        factor = loss_factor(_bounds_at(grouping, int(b)), grouping.neighbours, zcdp)
        try:
            family.check_budget(scaled_budget(rest, factor), "budget")
        except InvalidParameterError:
            break
        largest = int(b)
    return largest


def _grid(grouping: Grouping) -> np.ndarray:
    """The public candidates: up to the cap and the largest bound the trees can take."""
    assert grouping.auto is not None
    family, _, rest = _budgets(grouping)
    return candidates(max(1, min(grouping.auto.cap, _largest(grouping, family, rest))))


def _max_groups(grouping: Grouping) -> int | None:
    """The per-group variant's ``max_groups`` (its pairs are counted); None: persons."""
    per_group = grouping.auto_name == "max_contributions_per_group"
    return grouping.bounds.max_groups if per_group else None


def _choose(
    grouping: Grouping,
    hist: np.ndarray,
    mass: np.ndarray | None,
    target: float,
    source: RandomSource,
) -> Chosen:
    """The bounds chosen from the histograms on :func:`_grid`, and the budget spent."""
    family, first, _ = _budgets(grouping)
    assert grouping.auto is not None
    bound, spent = choose_from_histogram(
        hist,
        _grid(grouping),
        grouping.auto,
        target,
        first,
        grouping.neighbours,
        source,
        family=family,
        weight=_max_groups(grouping) or 1,
        mass=mass,
        keys=1 if grouping.keys is None else len(grouping.keys),
    )
    return _bounds_at(grouping, bound), spent


def choose_auto(
    person: np.ndarray,
    group: np.ndarray | None,
    bins: np.ndarray,
    n_bins: int,
    grouping: Grouping,
    target: float,
    source: RandomSource,
    n_groups: int,
) -> tuple[Chosen, np.ndarray]:
    """The bound chosen from each person's rows (``person``, ``group``, ``bins``: codes per
    kept row, ``group`` in ``[0, n_groups)``, ``bins`` in ``[0, n_bins)``), and the rows still
    kept (per group: those of each person's ``max_groups`` keys drawn here; otherwise all)."""
    assert grouping.auto is not None
    hist, mass, rows = entry_histograms(
        person,
        group,
        bins if grouping.auto.estimated else None,
        n_bins,
        _max_groups(grouping),
        source,
        n_groups,
        _grid(grouping),
    )
    chosen = _choose(grouping, hist, mass, target, source)
    return chosen, np.arange(len(person)) if rows is None else rows


def key_top(group: np.ndarray | None, n_rows: int) -> int:
    """The largest key's rows before any bounding (``group``: key codes; None: one key). It
    bounds every key's total after bounding, so the mechanism's domain is checked on it
    before the charge (no refusal that depends on the data comes after the charge)."""
    if group is None:
        return int(n_rows)
    return int(np.bincount(np.asarray(group, dtype=np.int64)).max(initial=0))


def engine_pass(
    grouping: Grouping,
    target: float,
    source: RandomSource,
    commit: Callable[[int], None],
    n_bins: int,
) -> tuple[AutoPass, Callable[[], Chosen]]:
    """The hook an engine runs between its passes (:class:`AutoPass`), and a getter of what
    it chose: the hook checks the mechanism's domain on the largest key's rows before
    bounding and charges the query (``commit``: every value was read), then noises the
    histograms and chooses (``n_bins``: the release's bins, for the mass histogram)."""
    chosen: list[Chosen] = []
    assert grouping.auto is not None

    def choose(hist: np.ndarray, mass: np.ndarray | None) -> ContributionBounds:
        if chosen:
            raise RuntimeError("an engine asked for the 'auto' bound twice")  # pragma: no cover
        commit(auto.key_top())
        chosen.append(_choose(grouping, hist, mass, target, source))
        return chosen[0][0]

    def result() -> Chosen:
        if not chosen:
            raise RuntimeError("the engine did not run the 'auto' pass")  # pragma: no cover
        return chosen[0]

    n_mass = n_bins if grouping.auto.estimated else None
    auto = AutoPass(_grid(grouping), _max_groups(grouping), choose, n_mass)
    return auto, result


def with_bound(
    grouping: Grouping, spec: ReleaseSpec, bounds: ContributionBounds
) -> tuple[Grouping, ReleaseSpec]:
    """The grouping and record-level spec at the chosen bound (the rest of ε over ``Δ1``, or
    of ρ over ``Δ2²``)."""
    _, _, rest = _budgets(grouping)
    grouping = replace(grouping, bounds=bounds)
    if grouping.rho is None:
        return grouping, replace(
            spec, epsilon=scaled_budget(rest, bounds.sensitivity(grouping.neighbours)[0])
        )
    zcdp = ZCDP(scaled_budget(rest, bounds.l2_squared(grouping.neighbours)))
    return grouping, replace(spec, privacy=zcdp)


def _noise(grouping: Grouping) -> tuple[BudgetedFamily, int, int]:
    """The choice's noise and sensitivity (public: what :func:`_choose` calibrates): the
    mass histogram's when the bias is estimated, else the count histogram's."""
    family, first, _ = _budgets(grouping)
    assert grouping.auto is not None
    weight = _max_groups(grouping) or 1
    return choice_noises(family, grouping.neighbours, weight, first, grouping.auto.estimated)


def bound_record(grouping: Grouping, spent: Fraction) -> dict[str, Any]:
    """How the bound was chosen, as a release states it (``epsilon_spent`` or
    ``rho_spent``: the exact loss rounded up; the noise's exact parameter and the
    sensitivity, from which a loader recomputes the loss; ``histogram: "mass"`` when the
    bias was estimated, :mod:`treedp.privacy.auto_mass`)."""
    family, _, _ = _budgets(grouping)
    noise, l1, l2_squared = _noise(grouping)
    assert grouping.auto is not None
    return {
        **auto_of(grouping),
        f"{family.budget_name}_spent": float_at_least(spent),
        "noise_parameter": str(noise.parameter),
        "sensitivity": [l1, l2_squared],
        **({"histogram": "mass"} if grouping.auto.estimated else {}),
    }


def person_unit(grouping: Grouping, chosen: Chosen | None) -> PersonUnit:
    """The privacy unit of a per-person release without ``by``: its bounds, and the budget
    the choice of the bound spent (part of the person's guarantee)."""
    if chosen is None:
        return PersonUnit(grouping.bounds, grouping.neighbours)
    family, _, _ = _budgets(grouping)
    assert grouping.auto is not None
    spent = float_at_least(chosen[1])
    noise = str(_noise(grouping)[0].parameter)
    eps, rho = (spent, 0.0) if family.budget_name == "epsilon" else (0.0, spent)
    kind = "mass" if grouping.auto.estimated else ""
    return PersonUnit(
        grouping.bounds, grouping.neighbours, eps, rho, bound_noise=noise, bound_histogram=kind
    )
