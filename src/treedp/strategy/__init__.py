"""Optimised linear strategies (p-Identity) beyond trees: optimisation, exact error, cache."""

from treedp.strategy.model import DEFAULT_LATTICE, Strategy, StrategyCovariance, quantise
from treedp.strategy.optimize import WORKLOADS, Workload, optimise_pidentity, pidentity_error
from treedp.strategy.store import (
    MAX_STRATEGY_BINS,
    StrategyCache,
    get_strategy,
    load_strategy_file,
    make_strategy,
    save_strategy_file,
    shipped_strategy,
)

__all__ = [
    "DEFAULT_LATTICE",
    "MAX_STRATEGY_BINS",
    "WORKLOADS",
    "Strategy",
    "StrategyCache",
    "StrategyCovariance",
    "Workload",
    "get_strategy",
    "load_strategy_file",
    "make_strategy",
    "optimise_pidentity",
    "pidentity_error",
    "quantise",
    "save_strategy_file",
    "shipped_strategy",
]
