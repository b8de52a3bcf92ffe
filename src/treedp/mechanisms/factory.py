"""Build a mechanism from its name and parameters (used by the release API and by loading)."""

from __future__ import annotations

from collections.abc import Sequence

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.base import Mechanism
from treedp.mechanisms.baselines import (
    AllIntervalsMechanism,
    HistogramMechanism,
    ThresholdMechanism,
)
from treedp.mechanisms.tree import TreeMechanism
from treedp.tree import TreeShape

__all__ = ["MECHANISMS", "make_mechanism"]

#: Mechanism names ``release_cdf`` accepts.
MECHANISMS = ("tree", "histogram", "threshold", "all_intervals")


def make_mechanism(
    name: str,
    *,
    n_bins: int,
    epsilon: float,
    neighbours: Neighbours,
    n: int | None,
    shape: TreeShape | None = None,
    level_budgets: Sequence[float] | None = None,
) -> Mechanism:
    """Return the mechanism ``name`` built and validated for these parameters."""
    if name == "tree":
        if shape is None:  # pragma: no cover - the API always passes a shape
            raise InvalidParameterError("mechanism='tree' needs a tree shape.")
        return TreeMechanism(
            shape, epsilon=epsilon, neighbours=neighbours, n=n, level_budgets=level_budgets
        )
    if name not in MECHANISMS:
        raise InvalidParameterError(
            f"The 'mechanism' parameter must be one of {', '.join(map(repr, MECHANISMS))}. "
            f"Got {name!r} instead."
        )
    if level_budgets is not None:
        raise InvalidParameterError(
            f"The 'level_budgets' parameter applies to mechanism='tree' only, not {name!r}."
        )
    cls = {
        "histogram": HistogramMechanism,
        "threshold": ThresholdMechanism,
        "all_intervals": AllIntervalsMechanism,
    }[name]
    return cls(n_bins, epsilon=epsilon, neighbours=neighbours, n=n)
