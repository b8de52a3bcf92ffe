"""Continual release: the running count and the running distribution of a stream.

``treedp.continual(horizon=T, ...)`` starts a stream (charged once); ``s.step(batch)`` returns
the running answer after each step; ``s.save`` / ``treedp.load_continual`` keep its state.
Modules: ``stream`` (the object and front door), ``answer`` (a step's answer), ``mechanisms``
(the table), ``tree``, ``full_tree``, ``sqrt``, ``sqrt_norm``, ``optimal`` and ``blt``
(the mechanisms; ``blt_design`` and ``blt_digits`` hold ``blt``'s public design and exact
arithmetic), ``planner`` (exact variances, budgets), ``state`` (the state file).
docs/continual.md has the guarantee and measured figures.
"""

import sys
import types
from typing import Any

from treedp.continual.answer import StepAnswer
from treedp.continual.mechanisms import MECHANISMS
from treedp.continual.stream import ContinualStream, continual, load_continual

__all__ = ["MECHANISMS", "ContinualStream", "StepAnswer", "continual", "load_continual"]


class _CallableModule(types.ModuleType):
    """``treedp.continual`` is both this package and the front door: once the package has been
    imported, ``treedp.continual`` names the package (Python sets it), so the package itself
    calls :func:`continual`."""

    def __call__(self, **kwargs: Any) -> ContinualStream:
        return continual(**kwargs)


sys.modules[__name__].__class__ = _CallableModule
