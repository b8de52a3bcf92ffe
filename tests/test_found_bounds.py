"""Bounds found beforehand by ``treedp.private_bounds``, given to ``release_cdf`` as
``bounds=`` (``treedp.found_bounds``): the route for a zCDP release, whose intervals must hold
the records the scans leave beyond the bounds (an independent review: with ``bounds=b.value``
the 95% intervals covered 0 to 29% beyond them).

Coverage is a binomial proportion over ``REPS`` seeded releases of one data set, the bounds
found once (seeded); tolerance 4.5 standard deviations at the nominal level (false-failure
rate below 1e-4 over the three points). The mutant, the same bounds given as public numbers,
covers at most 0.3."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import treedp
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource

LEVEL, REPS = 0.9, 200
VALUES = np.random.default_rng(0).standard_cauchy(5000)
FOUND = treedp.private_bounds(VALUES, epsilon=0.1, rng=InsecureSeededSource(0))


def _release(seed: int, bounds: object = FOUND) -> treedp.Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        return treedp.release_cdf(VALUES, bounds=bounds, privacy=treedp.ZCDP(0.005), bins=64,
                                  rng=InsecureSeededSource(10_000 + seed))  # fmt: skip


def _coverage(bounds: object, reps: int) -> np.ndarray:
    points = np.array([FOUND.lo - 1.0, FOUND.hi, FOUND.hi + 1.0])
    truth = np.searchsorted(np.sort(VALUES), points, side="right")
    hits = np.zeros(points.size)
    for seed in range(reps):
        low, high = _release(seed, bounds).confidence_interval("cdf", points, level=LEVEL)
        hits += (low <= truth) & (truth <= high)
    return hits / reps


def test_intervals_hold_the_records_beyond_found_bounds() -> None:
    lo, hi = FOUND.value
    x = VALUES
    truth_beyond = int(np.sum((x < lo) | (x > hi)))
    assert truth_beyond > 2 * FOUND.allowance / 3  # the scans left records out: clamped
    tol = 4.5 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)
    assert (_coverage(FOUND, REPS) >= LEVEL - tol).all()
    assert (_coverage(FOUND.value, 30) <= 0.3).all()  # the same bounds as public numbers


def test_the_release_records_them_as_found_beforehand(tmp_path: object) -> None:
    rel = _release(1)
    step = rel.bounds_step
    assert step is not None and step["external"] is True
    assert step["stops"] == list(FOUND.stops) and step["epsilon"] == FOUND.epsilon
    assert (rel.edges[0], rel.edges[-1]) == pytest.approx(FOUND.value)
    # charged when found: not part of this release's guarantee, record or charge
    assert rel.total_guarantee == rel.guarantee == treedp.ZCDP(0.005)
    assert rel.spend() == rel.mechanism.spend()
    ledger = treedp.Accountant(treedp.ZCDP(0.005))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        treedp.release_cdf(VALUES, bounds=FOUND, privacy=treedp.ZCDP(0.005), bins=64,
                           accountant=ledger, rng=InsecureSeededSource(2))  # fmt: skip
    assert ledger.remaining == treedp.ZCDP(0.0) or float(ledger.remaining.rho) == 0.0
    path = tmp_path / "r.json"  # type: ignore[operator]
    rel.save(path)
    assert treedp.load_release(path).bounds_step == step
    low, _ = rel.quantile_interval([0.001, 0.5], simulations=200, rng=InsecureSeededSource(3))
    assert low[0] == -np.inf and np.isfinite(low[1])


def test_other_front_doors_name_what_they_take() -> None:
    frame = {"g": np.repeat(["a", "b"], 2500), "x": VALUES}
    with pytest.raises(InvalidParameterError, match=r"public bounds=\(lo, hi\) for all"):
        treedp.release_grouped(frame, column="x", by="g", keys=["a", "b"], bounds=FOUND,
                               bins=8, epsilon=1.0)  # fmt: skip
    with pytest.raises(InvalidParameterError, match="pass its result as bounds="):
        treedp.release_cdf(VALUES, bounds="private", bins=8, privacy=treedp.ZCDP(0.1))
