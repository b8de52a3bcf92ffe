"""The privacy unit of a release made per person, without groups.

The bounded rows are noised by a record-level mechanism; one person changes those counts by at
most ``Δ1`` in L1 and ``L2²`` in squared L2
(:class:`~treedp.privacy.contribution.ContributionBounds`), so the person-level guarantee is
``Δ1`` times the mechanism's pure ε, or ``L2²`` times its zCDP ρ (a grouped release's rule
with one group). With person ids told apart by a keyed 128-bit hash (text ids on files)
:attr:`PersonUnit.collision` states the δ added to that guarantee
(:data:`treedp.privacy.collision.COLLISION`); it is stored with the unit.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from treedp.exceptions import InvalidParameterError, ReleaseFormatError
from treedp.mechanisms import Mechanism
from treedp.noise.families import float_at_least
from treedp.privacy import ZCDP, Measure, PureDP
from treedp.privacy.auto_bound import check_choice_loss, histogram_sensitivity
from treedp.privacy.auto_mass import mass_sensitivity
from treedp.privacy.collision import COLLISION
from treedp.privacy.contribution import ContributionBounds

__all__ = ["PersonUnit", "check_unit_version", "loss_factor", "unit_from"]


def loss_factor(bounds: ContributionBounds, neighbours: str, zcdp: bool) -> int:
    """How many times one person's loss is the record-level mechanism's: ``Δ1``, the L1 change
    of all the counts for one neighbour step, or with ``zcdp`` their squared L2 change."""
    return bounds.l2_squared(neighbours) if zcdp else bounds.sensitivity(neighbours)[0]


@dataclass(frozen=True)
class PersonUnit:
    """Who is protected by a release made per person: the bounds and the neighbour relation.

    Attributes
    ----------
    bounds : ContributionBounds
        The person-id column and the rows kept per person.
    neighbours : {"add_remove", "replace"}
        The person-level relation: add or remove one person with all their rows, or replace
        one person's rows by another's.
    bound_epsilon, bound_rho : float, default=0.0
        The ε (pure) or ρ (zCDP) a private choice of the bound spent
        (``max_contributions="auto"``), part of the person-level guarantee.
    bound_noise : str, default=""
        The choice's exact noise parameter (discrete Laplace scale, or discrete Gaussian σ²,
        as ``"p/q"``): a loader recomputes the choice's loss from it and refuses a file
        stating less (:func:`~treedp.privacy.auto_bound.check_choice_loss`).
    bound_histogram : str, default=""
        ``"mass"`` when the choice released the mass histogram (the bias estimated,
        :mod:`treedp.privacy.auto_mass`: ``bound_noise`` is calibrated to its sensitivity);
        empty for the count histogram (files written before session 9, or
        ``AutoBound(heterogeneity=h)``).
    collision : str, default=""
        :data:`~treedp.privacy.collision.COLLISION` when persons were told apart by a keyed
        128-bit hash (text ids on files): the guarantee is then the stated loss plus
        ``δ <= (n - 1)·2**-128``; empty when ids were compared exactly.
    """

    bounds: ContributionBounds
    neighbours: str
    bound_epsilon: float = 0.0
    bound_rho: float = 0.0
    bound_noise: str = ""
    collision: str = ""
    bound_histogram: str = ""

    def __post_init__(self) -> None:
        if self.collision not in ("", COLLISION):
            raise InvalidParameterError(
                "A privacy unit's collision statement must be treedp.privacy.collision.COLLISION "
                "or empty."
            )
        spent = (self.bound_epsilon, self.bound_rho)
        if not all(isinstance(v, int | float) and 0 <= v < float("inf") for v in spent):
            raise InvalidParameterError(
                "The budget a bound's choice spent (bound_epsilon, bound_rho) must be finite "
                "and >= 0."
            )
        if self.bounds.unit is None:
            raise InvalidParameterError(
                "A person-level release needs a privacy-unit column; without one each row is "
                "one person and the release has no unit (unit=None)."
            )
        if self.neighbours not in ("add_remove", "replace"):
            raise InvalidParameterError(
                "The 'neighbours' of a privacy unit must be 'add_remove' or 'replace'. "
                f"Got {self.neighbours!r} instead."
            )

    @property
    def label(self) -> str:
        """``"person:<column>"``."""
        return self.bounds.unit_label

    @property
    def kept(self) -> str:
        """What the release's answers and intervals describe (:meth:`ContributionBounds.kept
        <treedp.privacy.contribution.ContributionBounds.kept>`)."""
        return self.bounds.kept()

    def factor(self, mechanism: Mechanism) -> int:
        """The person-level loss over the mechanism's: ``Δ1`` (pure ε) or ``L2²`` (zCDP)."""
        return loss_factor(self.bounds, self.neighbours, mechanism.guarantee_kind == "zcdp")

    def guarantee(self, mechanism: Mechanism) -> Measure:
        """:meth:`factor` times the mechanism's exact loss, rounded up."""
        factor = Fraction(self.factor(mechanism))
        if (self.bound_rho if mechanism.guarantee_kind == "pure" else self.bound_epsilon) > 0:
            raise InvalidParameterError(
                "The budget of the bound's choice must be in the mechanism's unit (bound_epsilon "
                "for pure epsilon, bound_rho for zCDP)."
            )
        if mechanism.guarantee_kind == "zcdp":
            rho_spent = getattr(mechanism, "rho_spent", None)  # the exact ρ of its noise
            if rho_spent is None:
                raise InvalidParameterError("A zCDP mechanism must state its exact rho_spent().")
            return ZCDP(float_at_least(factor * Fraction(rho_spent()) + Fraction(self.bound_rho)))
        spent = factor * mechanism.epsilon_spent() + Fraction(self.bound_epsilon)
        return PureDP(float_at_least(spent))

    def describe(self, mechanism: Mechanism) -> dict[str, Any]:
        """The unit as a file stores it: bounds, neighbours, factor, person-level ε (or ρ)."""
        return {
            **self.bounds.describe(),
            "neighbours": self.neighbours,
            "factor": self.factor(mechanism),
            **asdict(self.guarantee(mechanism)),  # {"epsilon": ε} or {"rho": ρ}
            **({"bound_epsilon": self.bound_epsilon} if self.bound_epsilon else {}),
            **({"bound_rho": self.bound_rho} if self.bound_rho else {}),
            **({"bound_noise": self.bound_noise} if self.bound_noise else {}),
            **({"bound_histogram": self.bound_histogram} if self.bound_histogram else {}),
            **({"collision": self.collision} if self.collision else {}),
        }


def check_unit_version(unit: PersonUnit | None, has_unit: bool) -> None:
    """A person-level release is written as format version 3 / 4, and only it is."""
    if (unit is not None) != has_unit:
        raise ReleaseFormatError(
            "the format version does not match whether the release has a privacy unit"
        )


def unit_from(stored: dict[str, Any], mechanism: Mechanism) -> PersonUnit:
    """The privacy unit a file states, which must be exactly what its mechanism implies; the
    mechanism is add/remove without a public n (the person's rows are what change)."""
    column = stored.get("unit") if isinstance(stored, dict) else None
    if not isinstance(column, str):
        raise ReleaseFormatError("the privacy unit does not name its column")
    bounds = ContributionBounds.from_parameters(
        column, stored.get("max_contributions"), grouped=False
    )
    if mechanism.neighbours != "add_remove" or getattr(mechanism, "n", None) is not None:
        raise ReleaseFormatError(
            "a person-level release must be noised by an add/remove mechanism without a public n"
        )
    neighbours = stored.get("neighbours")
    if not isinstance(neighbours, str):
        raise ReleaseFormatError("the privacy unit does not state its neighbour relation")
    spent = [stored.get(key, 0.0) for key in ("bound_epsilon", "bound_rho")]
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in spent):
        raise ReleaseFormatError("the privacy unit's bound_epsilon or bound_rho is not a number")
    noise, kind = stored.get("bound_noise", ""), stored.get("bound_histogram", "")
    if not isinstance(noise, str) or kind not in ("", "mass"):
        raise ReleaseFormatError("the privacy unit's bound_noise or bound_histogram is malformed")
    for value, name in zip(spent, ("epsilon", "rho"), strict=True):
        if value:  # the stated spend covers the loss of the noise stated (one entry each)
            mass = kind == "mass"  # the bias estimated (session 9 on): the mass histogram
            choice: dict[str, Any] = {
                "noise_parameter": noise,
                "sensitivity": (mass_sensitivity if mass else histogram_sensitivity)(neighbours),
                **({"histogram": "mass"} if mass else {}),
            }
            check_choice_loss(choice, float(value), name, neighbours, 1)
    collision = stored.get("collision", "")
    if collision not in ("", COLLISION):  # absent in files of exact ids (and older files)
        raise ReleaseFormatError("the privacy unit's collision statement is not treedp's")
    unit = PersonUnit(bounds, neighbours, float(spent[0]), float(spent[1]), noise, collision, kind)
    if json.dumps(unit.describe(mechanism), sort_keys=True) != json.dumps(stored, sort_keys=True):
        raise ReleaseFormatError("the privacy unit does not match its bounds and the mechanism")
    return unit
