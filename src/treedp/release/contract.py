"""The privacy contract of a release (a base of :class:`~treedp.release.Release`): its
guarantee, neighbour relation and budget, the whole cost with a private bounds step, and the
spend record an accountant composes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from treedp.privacy import ApproxDP, Measure, PureDP, compose
from treedp.privacy.spend import PRIVATE_BOUNDS_RECORD, SpendRecord

if TYPE_CHECKING:
    from treedp.mechanisms import Mechanism
    from treedp.release.unit import PersonUnit

__all__ = ["PrivacyContract", "stored_target"]


def stored_target(target: dict[str, float] | None) -> ApproxDP | None:
    """A stored ``(epsilon, delta)`` target as a guarantee."""
    return None if target is None else ApproxDP(float(target["epsilon"]), float(target["delta"]))


class PrivacyContract:
    """:attr:`guarantee`, :attr:`total_guarantee`, :attr:`epsilon`, :attr:`neighbours`,
    :attr:`approx_target` and :meth:`spend` of a :class:`~treedp.release.Release`."""

    if TYPE_CHECKING:  # what they read of the release
        mechanism: Mechanism
        unit: PersonUnit | None
        bounds_step: dict[str, Any] | None
        target: dict[str, float] | None

    @property
    def epsilon(self) -> float:
        """The pure budget of the release (the person's with a :attr:`unit`; ``inf`` under
        zCDP); the record-level mechanism's is ``mechanism.epsilon``."""
        if self.unit is None:
            return float(self.mechanism.epsilon)
        guarantee = self.guarantee
        return float(guarantee.epsilon) if isinstance(guarantee, PureDP) else math.inf

    @property
    def neighbours(self) -> str:
        """The neighbour relation of the guarantee (the person's with a :attr:`unit`)."""
        return self.mechanism.neighbours if self.unit is None else self.unit.neighbours

    @property
    def guarantee(self) -> Measure:
        """The guarantee of the noisy counts (``PureDP`` with the ε spent, ``ZCDP`` with the ρ
        spent for Gaussian noise); with a :attr:`unit`, the person-level one. With
        ``bounds="private"`` the bounds step spent more: :attr:`total_guarantee` is the whole
        release's cost (what an accountant is charged)."""
        if self.unit is None:
            return self.mechanism.guarantee
        return self.unit.guarantee(self.mechanism)

    @property
    def approx_target(self) -> ApproxDP | None:
        """The ``(epsilon, delta)`` target asked for, as a guarantee (None without one)."""
        return stored_target(self.target)

    @property
    def _charged_step(self) -> dict[str, Any] | None:
        """The private bounds step this release charged (None for bounds found beforehand by
        :func:`treedp.private_bounds`, charged when they were found: ``"external"``)."""
        step = self.bounds_step
        return None if step is None or step.get("external") else step

    @property
    def total_guarantee(self) -> Measure:
        """What the whole release cost (what an accountant is charged): :attr:`guarantee` plus
        the private bounds step's pure ε, if any (basic composition); bounds found beforehand
        and given as ``bounds=`` were charged on their own."""
        step = self._charged_step
        if step is None:
            return self.guarantee
        return compose([self.guarantee, PureDP(float(step["epsilon"]))])

    def spend(self) -> SpendRecord:
        """The record of the whole release's spend, for an accountant to compose: the
        mechanism, unit and neighbours :func:`treedp.release_cdf` charged, with the measure
        :attr:`total_guarantee` (the bounds step included), the exact spend, which can lie a
        rounding below the budget charged (``PureDP(0.9999999999995)`` for ``epsilon=1``);
        the unit is ``"record"`` or ``"person:<column>"`` with the contribution bounds in its
        parameters. ``mechanism.spend()`` is the noise's alone, per record."""
        noise = self.mechanism.spend()
        step = self._charged_step
        if self.unit is None and step is None:
            return noise
        extra: dict[str, Any] = {}
        if step is not None:
            extra["bounds_epsilon"] = float(step["epsilon"])
        if self.unit is not None:
            extra.update(self.unit.describe(self.mechanism))
        name = noise.mechanism if self.unit is None else f"person_{noise.mechanism}"
        if step is not None:
            name = PRIVATE_BOUNDS_RECORD  # the name of the bounds step's one charge
        return SpendRecord(
            mechanism=name,
            measure=self.total_guarantee,
            neighbours=self.neighbours,
            unit="record" if self.unit is None else self.unit.label,
            parameters={**noise.parameters, **extra},
        )
