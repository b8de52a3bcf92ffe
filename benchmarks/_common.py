"""Shared helpers for the benchmark scripts: timing and a machine description."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable

import numpy as np


def best_of(fn: Callable[[], object], repeats: int = 5) -> float:
    """Best wall-clock time of ``repeats`` calls, in seconds (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def machine() -> str:
    """One line describing the machine and library versions."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}"
    )


def rank_gap(x: np.ndarray, answers: np.ndarray, q: list[float]) -> float:
    """Mean over the levels of ``dist(q n, [#{x < v}, #{x <= v}])``: 0 for an answer whose
    block of ties holds the target rank."""
    xs = np.sort(x)
    below = np.searchsorted(xs, answers, side="left")
    upto = np.searchsorted(xs, answers, side="right")
    t = np.asarray(q) * x.size
    return float(np.mean(np.maximum(np.maximum(below - t, t - upto), 0.0)))
