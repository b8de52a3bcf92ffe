"""What a mechanism offers the planner: one scored configuration.

A mechanism class that the planner cannot score from a tree shape scores itself
(:meth:`treedp.mechanisms.base.Mechanism.plan_candidate`) and returns a :class:`PlanCandidate`;
the planner asks every registered mechanism (:mod:`treedp.mechanisms.registry`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PlanCandidate"]


@dataclass(frozen=True)
class PlanCandidate:
    """One configuration the planner scored."""

    mechanism: str
    branching: tuple[int, ...]
    level_budgets: tuple[float, ...]
    value: float
    how: str
    #: For candidates a mechanism offers itself (non-tree mechanisms): their exact mean and
    #: worst prefix variance (records²), which the planner cannot derive from a tree shape.
    mean_cdf_mse: float | None = None
    max_cdf_variance: float | None = None

    @property
    def offered(self) -> bool:
        """Whether a mechanism offered it itself (its own exact errors), rather than being a
        tree the planner built and scored from its shape and level budgets."""
        return self.mean_cdf_mse is not None
