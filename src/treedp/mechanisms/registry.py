"""The one name → class map of mechanisms, used by the API, the loader and the CLI.

Adding a mechanism is one module with a :class:`~treedp.mechanisms.base.Mechanism` subclass
plus one :func:`register` line below.
"""

from __future__ import annotations

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
from treedp.mechanisms.tree import TreeMechanism

__all__ = ["MECHANISMS", "REGISTRY", "mechanism_class", "register"]

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
