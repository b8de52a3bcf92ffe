"""Mechanisms: what is noised, with which sensitivity and budget."""

from treedp.mechanisms.base import Mechanism
from treedp.mechanisms.baselines import (
    AllIntervalsMechanism,
    HistogramMechanism,
    ThresholdMechanism,
    all_intervals_sensitivity,
)
from treedp.mechanisms.results import (
    Contract,
    MechanismResult,
    MedianResult,
    QuantileResult,
    SpendRecord,
)
from treedp.mechanisms.tree import TreeMechanism

__all__ = [
    "AllIntervalsMechanism",
    "Contract",
    "HistogramMechanism",
    "Mechanism",
    "MechanismResult",
    "MedianResult",
    "QuantileResult",
    "SpendRecord",
    "ThresholdMechanism",
    "TreeMechanism",
    "all_intervals_sensitivity",
]
