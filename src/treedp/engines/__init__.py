"""Counting engines: turn a column into bin counts under one bin rule.

:mod:`treedp.engines.base` states the bin rule and the interface (:class:`CountEngine`, the
additive :class:`BinCounts`); :mod:`treedp.engines.local` holds the numpy kernel
(:func:`count_chunk`) and the in-memory, threaded :class:`LocalEngine`.
"""

from __future__ import annotations

from treedp.engines.base import BinCounts, CountEngine, NanPolicy, sum_counts
from treedp.engines.local import LocalEngine, count_chunk

__all__ = ["BinCounts", "CountEngine", "LocalEngine", "NanPolicy", "count_chunk", "sum_counts"]
