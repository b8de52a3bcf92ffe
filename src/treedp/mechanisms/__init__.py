"""Mechanisms: what is noised, with which sensitivity and budget."""

from treedp.mechanisms.base import Block, Mechanism
from treedp.mechanisms.baselines import (
    AllIntervalsMechanism,
    HistogramMechanism,
    ThresholdMechanism,
    all_intervals_sensitivity,
)
from treedp.mechanisms.registry import MECHANISMS, REGISTRY, register
from treedp.mechanisms.results import (
    Contract,
    MechanismResult,
    MedianResult,
    QuantileResult,
    SpendRecord,
)
from treedp.mechanisms.sqrt_factorization import SqrtFactorizationMechanism
from treedp.mechanisms.tree import TreeMechanism

__all__ = [
    "MECHANISMS",
    "REGISTRY",
    "AllIntervalsMechanism",
    "Block",
    "Contract",
    "HistogramMechanism",
    "Mechanism",
    "MechanismResult",
    "MedianResult",
    "QuantileResult",
    "SpendRecord",
    "SqrtFactorizationMechanism",
    "ThresholdMechanism",
    "TreeMechanism",
    "all_intervals_sensitivity",
    "register",
]
