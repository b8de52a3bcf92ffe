"""Continual release: the running count and the running distribution of a stream.

``treedp.continual(horizon=T, ...)`` starts a stream (charged once); ``s.step(batch)`` returns
the running answer after each step; ``s.save`` / ``treedp.load_continual`` keep its state.
Modules: ``stream`` (the object and front door), ``answer`` (a step's answer), ``mechanisms``
(the table), ``tree`` and ``sqrt`` (the mechanisms), ``planner`` (exact variances, budgets),
``state`` (the state file). docs/continual.md has the guarantee and measured figures.
"""

from treedp.continual.answer import StepAnswer
from treedp.continual.mechanisms import MECHANISMS
from treedp.continual.stream import ContinualStream, continual, load_continual

__all__ = ["MECHANISMS", "ContinualStream", "StepAnswer", "continual", "load_continual"]
