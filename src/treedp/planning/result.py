"""The planner's answer: the chosen configuration, its exact predicted error, the others."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from treedp._validation import must
from treedp.estimation.objectives import max_prefix_variance
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.registry import mechanism_class
from treedp.noise.families import DiscreteLaplace, noise_family
from treedp.planning.levels import level_variances
from treedp.tree import TreeShape
from treedp.tree.candidate import PlanCandidate

__all__ = ["PLAN_FORMAT", "Plan"]

#: Marks :meth:`Plan.to_dict`'s output.
PLAN_FORMAT = "treedp-plan/1"
_TUPLES = ("branching", "level_budgets")


def _plain(value: Any) -> Any:
    """JSON-able: tuples as lists, an infinite float (a Gaussian plan's ε) as None."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _unplain(name: str, value: Any) -> Any:
    """:func:`_plain` undone for the field ``name``."""
    if name in _TUPLES:
        return tuple(value)
    if name == "epsilon" and value is None:
        return math.inf
    return value


@dataclass(frozen=True)
class Plan:
    """The chosen configuration and its exact predicted error.

    Attributes
    ----------
    mechanism : str
        ``"tree"``, or another mechanism that offered itself (``plan_candidate``) and won.
    branching : tuple of int
        Fan-out per level (``(B,)`` for a histogram).
    level_budgets : tuple of float
        Budget per level, root first (0 for the exact root under ``replace`` or a root
        switched off, :attr:`root_off`), as ``release_cdf(level_budgets=...)`` takes them.
    padded_leaves : int
        ``Π k_l``; the leaves past ``B`` are always empty.
    objective : str
        What was minimised; ``predicted`` is its value (records²).
    mean_cdf_mse : float
        The chosen plan's mean prefix variance (records²).
    max_cdf_variance : float or None
        Its worst prefix variance, when the objective is ``"max_variance"``
        (else :meth:`worst_prefix_variance`).
    alternatives : tuple of PlanCandidate
        The configurations compared, best first.
    noise : str
        The noise family's key; Gaussian plans have ``epsilon = inf``, their total ``rho``
        and ``level_budgets`` in ρ.
    rho : float or None
        The zCDP budget of a Gaussian plan.
    workload : str
        ``"cdf"``, ``"ranges"``, ``"cdf (worst prefix)"`` or ``"<n> given ranges"``.
    """

    bins: int
    epsilon: float
    neighbours: str
    estimator: str
    objective: str
    mechanism: str
    branching: tuple[int, ...]
    level_budgets: tuple[float, ...]
    padded_leaves: int
    predicted: float
    mean_cdf_mse: float
    max_cdf_variance: float | None
    alternatives: tuple[PlanCandidate, ...] = field(repr=False)
    noise: str = DiscreteLaplace.key
    rho: float | None = None
    workload: str = "cdf"

    @property
    def shaped(self) -> bool:
        """Whether the plan is a tree shape with level budgets (the mechanism ``takes_shape``)."""
        return mechanism_class(self.mechanism).takes_shape

    @property
    def root_off(self) -> bool:
        """Whether the root is switched off (add_remove: n is estimated from the levels)."""
        return (
            self.shaped
            and self.neighbours == "add_remove"
            and bool(self.level_budgets)
            and self.level_budgets[0] == 0
        )

    @property
    def budget(self) -> float:
        """The total the level budgets add up to: ``epsilon``, or ``rho`` for Gaussian."""
        return self.epsilon if self.rho is None else self.rho

    def worst_prefix_variance(self) -> float:
        """The largest prefix variance of the plan (records²), exactly."""
        if self.max_cdf_variance is not None:
            return self.max_cdf_variance
        shape = TreeShape(self.bins, self.branching)
        variances = level_variances(self.level_budgets, self.neighbours, noise_family(self.noise))
        return max_prefix_variance(shape, variances, self.estimator)

    @property
    def cdf_rmse(self) -> float:
        """Typical error of a CDF value (or of a quantile's rank), in records."""
        return math.sqrt(self.mean_cdf_mse)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON-able data, alternatives included (:meth:`from_dict` reads it
        back): to archive with an experiment, or to pass to ``release_cdf(plan=...)`` later.

        Examples
        --------
        >>> import json, treedp
        >>> p = treedp.plan(100, epsilon=1.0)
        >>> treedp.Plan.from_dict(json.loads(json.dumps(p.to_dict()))) == p
        True
        """
        out: dict[str, Any] = {"format": PLAN_FORMAT}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "alternatives":
                value = [{k: _plain(v) for k, v in vars(c).items()} for c in value]
            out[f.name] = _plain(value)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Plan:
        """A plan written by :meth:`to_dict`. Its figures are as saved; a release made with it
        is still checked against its own parameters, and its mechanism validates the shape and
        budgets (a plan never changes what a release costs).

        Raises
        ------
        InvalidParameterError
            If ``data`` is not a plan written by :meth:`to_dict`.
        """
        bad = InvalidParameterError(must("data", "be a plan written by Plan.to_dict()."))
        if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
            raise bad
        try:
            values = {f.name: _unplain(f.name, data[f.name]) for f in fields(cls)}
            values["alternatives"] = tuple(
                PlanCandidate(**{k: _unplain(k, v) for k, v in c.items()})
                for c in data["alternatives"]
            )
            plan = cls(**values)
        except (KeyError, TypeError, AttributeError) as exc:
            raise bad from exc
        mechanism_class(plan.mechanism)  # a registered name
        return plan

    def describe(self) -> str:
        """A few lines for people."""
        shape = "×".join(map(str, self.branching)) if self.branching else "root only"
        total = f"epsilon={self.epsilon:.6g}" if self.rho is None else f"rho={self.rho:.6g}"
        noise = noise_family(self.noise).label
        lines = [
            f"plan for B={self.bins}, {total}, {noise} noise ({self.neighbours}, "
            f"{self.estimator} estimator, objective {self.objective}, "
            f"workload {self.workload}):",
            *self._mechanism_lines(shape),
            f"  expected CDF error: ±{self.cdf_rmse:.3g} records (RMSE over prefixes), "
            f"worst prefix ±{math.sqrt(self.worst_prefix_variance()):.3g}",
            f"  expected quantile error: about ±{self.cdf_rmse:.3g} records in rank",
            f"  objective {self.objective} = {self.predicted:.6g} records²",
        ]
        return "\n".join(lines)

    def _mechanism_lines(self, shape: str) -> list[str]:
        if self.shaped:
            return [
                f"  mechanism {self.mechanism}, branching {shape}"
                + (f" (padded to {self.padded_leaves})" if self.padded_leaves > self.bins else ""),
                "  level budgets " + ", ".join(f"{e:.4g}" for e in self.level_budgets),
                *self._level_lines(),
            ]
        # a candidate a mechanism offered itself: its own description
        how = next((c.how for c in self.alternatives if c.mechanism == self.mechanism), "")
        return [f"  mechanism {self.mechanism}: {how}"]

    def _level_lines(self) -> list[str]:
        """One line per tree level: its block size and budget, or how it is switched off."""
        if not self.branching:
            return []
        shape = TreeShape(self.bins, self.branching)
        out = []
        for level, budget in enumerate(self.level_budgets):
            span = shape.span(level)
            what = "root" if level == 0 else ("leaves" if level == shape.height else "level")
            head = f"    {what} {level} (blocks of {span} bins): "
            if budget > 0:
                out.append(head + f"budget {budget:.4g}")
            elif self.neighbours == "replace" and level == 0:
                out.append(head + "exact (n is public)")
            else:
                out.append(head + "OFF (not released; estimated from the levels below)")
        return out
