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
