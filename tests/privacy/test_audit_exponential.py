"""Audits of the exponential-mechanism quantile on worst-case neighbours, both relations,
including the empty dataset against one record under add_remove, and mutants that must be
flagged.

The output is continuous, so the event is an interval ``[lo, hi)`` of the output chosen on a
pilot sample (the one with the largest observed ratio, either direction); the final bound
``ln(p_low(D) / p_high(D'))`` uses independent runs and Clopper–Pearson bounds at
``AUDIT_ALPHA`` (see auditor.py), so an honest mechanism fails with probability at most that.
"""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest

from tests.privacy.auditor import AUDIT_ALPHA, clopper_pearson
from treedp.noise import InsecureSeededSource
from treedp.value_methods import quantile_exponential as med
from treedp.value_methods.quantile_exponential import _quantile_exponential_draws

RUNS = 200_000
PILOT = 20_000
BOUNDS = (0.0, 10.0)


def em_bound(
    d: np.ndarray, d2: np.ndarray, q: float, neighbours: str, eps: float, seed: int
) -> float:
    """Lower confidence bound on the privacy loss of one call on the pair (d, d2)."""

    def draws(data: np.ndarray, size: int, s: int) -> np.ndarray:
        return _quantile_exponential_draws(
            data,
            q,
            bounds=BOUNDS,
            epsilon=eps,
            neighbours=neighbours,
            size=size,
            rng=InsecureSeededSource(s),
        )

    pilot1, pilot2 = draws(d, PILOT, seed), draws(d2, PILOT, seed + 1)
    grid = np.linspace(*BOUNDS, 101)
    best, event = -math.inf, None
    for lo, hi in itertools.combinations(grid, 2):
        for first in (True, False):
            a, b = (pilot1, pilot2) if first else (pilot2, pilot1)
            k1, k2 = int(((a >= lo) & (a < hi)).sum()), int(((b >= lo) & (b < hi)).sum())
            if k1 > 50 and k2 > 0 and math.log(k1 / k2) > best:
                best, event = math.log(k1 / k2), (lo, hi, first)
    assert event is not None
    lo, hi, first = event
    f1, f2 = draws(d, RUNS, seed + 2), draws(d2, RUNS, seed + 3)
    a, b = (f1, f2) if first else (f2, f1)
    k1, k2 = int(((a >= lo) & (a < hi)).sum()), int(((b >= lo) & (b < hi)).sum())
    low = clopper_pearson(k1, RUNS, AUDIT_ALPHA)[0]
    high = clopper_pearson(k2, RUNS, AUDIT_ALPHA)[1]
    return math.log(low / high)


#: (name, D, D', q, relation). The empty pair: D' adds one record near the top, so the target
#: rank of a high quantile moves by almost a full unit across most of the grid.
PAIRS = [
    ("empty vs one, q=1", np.array([]), np.array([9.9]), 1.0, "add_remove"),
    ("empty vs one, q=0.9", np.array([]), np.array([9.9]), 0.9, "add_remove"),
    ("empty vs one, q=0", np.array([]), np.array([0.1]), 0.0, "add_remove"),
    ("add at bottom", np.linspace(1, 9, 9), np.r_[np.linspace(1, 9, 9), 0.5], 0.5, "add_remove"),
    ("one vs two", np.array([5.0]), np.array([5.0, 9.9]), 1.0, "add_remove"),
    ("replace low by high", np.linspace(1, 9, 9), np.r_[np.linspace(2, 9, 8), 9.5], 0.5, "replace"),
    ("replace, n = 1", np.array([0.1]), np.array([9.9]), 1.0, "replace"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "d", "d2", "q", "neighbours"), PAIRS, ids=[p[0] for p in PAIRS])
def test_exponential_quantile_passes(name, d, d2, q, neighbours) -> None:
    eps = 1.0
    bound = em_bound(d, d2, q, neighbours, eps, seed=zlib.crc32(name.encode()) % 2**31)
    assert bound <= eps, (name, bound)
    assert bound > 0.1 * eps  # the audit sees a real loss: it is not vacuous


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_exponential_quantile_mutant_is_flagged(
    neighbours: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A score sensitivity four times too small (the rate four times too large) is caught on
    the empty-vs-one pair (add_remove) and the n = 1 replace pair."""
    right = med._score_sensitivity
    monkeypatch.setattr(med, "_score_sensitivity", lambda level, nb: right(level, nb) / 4)
    if neighbours == "add_remove":
        d, d2, q = np.array([]), np.array([9.9]), 1.0
    else:
        d, d2, q = np.array([0.1]), np.array([9.9]), 1.0
    assert em_bound(d, d2, q, neighbours, 1.0, seed=11) > 1.0
