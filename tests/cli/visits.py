"""A small per-person CSV (age, state, pid) for the grouped CLI tests."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from tests.stats import TEST_SEED


def write_visits(path: Path, pids: np.ndarray | None = None, n: int = 3000) -> Path:
    """``n`` rows of ages 18–89 in states CA / NY (seeded); ``pids`` (default: 400 persons
    drawn at random) as the person-id column."""
    rng = np.random.default_rng(TEST_SEED)
    ages, states = rng.integers(18, 90, n), rng.choice(["CA", "NY"], n)
    if pids is None:
        pids = rng.integers(0, 400, n)
    with path.open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(["age", "state", "pid"])
        w.writerows(zip(ages, states, pids, strict=True))
    return path
