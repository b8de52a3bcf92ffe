"""The one name → class map of mechanisms, used by the API, the loader and the planner, and
:func:`make_mechanism`, which builds one by name.

Adding a mechanism is one module with a :class:`~treedp.mechanisms.base.Mechanism` subclass
plus one :func:`register` line below.
"""

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
from treedp.mechanisms.dawa import DawaMechanism
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism
from treedp.mechanisms.strategy import RangeStrategyMechanism, StrategyMechanism
from treedp.mechanisms.strategy_padded import PaddedStrategyMechanism
from treedp.mechanisms.strategy_tree import StrategyTreeMechanism
from treedp.mechanisms.tree import TreeMechanism
from treedp.tree import TreeShape

__all__ = ["MECHANISMS", "REGISTRY", "make_mechanism", "mechanism_class", "register"]

#: Registered mechanisms, by name.
REGISTRY: dict[str, type[Mechanism]] = {}


def register(cls: type[Mechanism]) -> type[Mechanism]:
    """Register ``cls`` under ``cls.name`` (refuses a name taken by another class)."""
    if REGISTRY.get(cls.name, cls) is not cls:
        raise InvalidParameterError(f"A mechanism named {cls.name!r} is already registered.")
    REGISTRY[cls.name] = cls
    return cls


for _cls in (TreeMechanism, HistogramMechanism, ThresholdMechanism, AllIntervalsMechanism):
    register(_cls)
register(DawaMechanism)  # data-aware (DAWA); never chosen by "auto"
register(StrategyMechanism)
register(RangeStrategyMechanism)
register(SqrtFactorizationMechanism)  # discrete Gaussian only (built with rho; config.py)
register(StrategyTreeMechanism)  # a strategy over block sums, tree levels inside blocks
register(PaddedStrategyMechanism)  # a shipped strategy on its first B bins (B up to 4096)

#: Mechanism names ``release_cdf`` accepts (besides ``"auto"``), derived from the registry.
MECHANISMS: tuple[str, ...] = tuple(REGISTRY)


def mechanism_class(name: object) -> type[Mechanism]:
    """The class registered as ``name``.

    Raises
    ------
    InvalidTypeError, InvalidParameterError
        If ``name`` is not a string, or not a registered name.
    """
    from treedp._validation import check_option

    return REGISTRY[check_option(name, "mechanism", tuple(REGISTRY))]


def make_mechanism(
    name: str,
    *,
    n_bins: int,
    epsilon: float | None,
    neighbours: Neighbours,
    n: int | None,
    shape: TreeShape | None = None,
    level_budgets: Sequence[float] | None = None,
    rho: float | None = None,
) -> Mechanism:
    """Return the mechanism ``name`` built and validated for these parameters: a pure
    ``epsilon`` (Laplace noise) or, with ``rho``, ρ-zCDP (Gaussian noise)
    (:meth:`~treedp.mechanisms.base.Mechanism.from_budget`)."""
    return mechanism_class(name).from_budget(
        n_bins,
        epsilon=epsilon,
        rho=rho,
        neighbours=neighbours,
        n=n,
        shape=shape,
        level_budgets=level_budgets,
    )
