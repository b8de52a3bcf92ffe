"""Privacy guarantees as data (measures), and what mechanisms report they spent."""

from __future__ import annotations

from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP, compose, zcdp_to_epsilon
from treedp.privacy.spend import SpendRecord

__all__ = [
    "ZCDP",
    "ApproxDP",
    "Measure",
    "PureDP",
    "SpendRecord",
    "compose",
    "zcdp_to_epsilon",
]
