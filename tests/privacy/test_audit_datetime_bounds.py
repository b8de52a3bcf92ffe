"""Privacy audit of the private bounds of datetime columns (the scans on the day grid).

The exact law of each scan's stop (AboveThreshold with discrete Laplace noise, summed over the
threshold noise: ``_stop_law`` of the numeric audit) is computed on the counts the
implementation reads (:func:`treedp.value_methods.datetime_bounds.in_scan_order`), over a
prefix of the public grid (a scan restricted to a prefix, whose last point takes "no stop", is
itself a mechanism of the same loss), for neighbouring pairs under both relations; its largest
log-likelihood ratio must stay within the claimed per-scan loss, and reach it under add/remove
(the claim is not loose). A mutant with half the noise under the same claim exceeds it, and a
mutant that starts the lower scan at the data's last day (instead of the released upper stop)
is caught. A chi-square test (false-failure rate ``ALPHA``) ties the implementation's
upper stops to the exact law.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import logsumexp

from tests.privacy.test_audit_quantiles import _stop_law
from tests.stats import ALPHA, TEST_SEED
from treedp.noise import InsecureSeededSource
from treedp.value_methods import datetime_bounds as db
from treedp.value_methods.private_bounds import scan_scales

DAY = db.DAY_SECONDS
PREFIX = 80  #: grid points of the audited prefix
START = 60  #: the lower scan's public start (a stop of the upper scan)


def _day(i: int) -> int:
    return int(db.DAY_GRID[i])


BASE = np.array([_day(10), _day(10) + 5, _day(11) + 100])
PAIRS = {
    "add_remove": [
        (BASE, np.r_[BASE, _day(30)]),
        (BASE, np.r_[BASE, _day(2) - 1]),
        (BASE, np.r_[BASE, _day(0) - 10 * DAY]),  # before the grid: below every point
    ],
    "replace": [
        (BASE, np.array([_day(10), _day(30), _day(11) + 100])),
        (BASE, np.array([_day(2), _day(10) + 5, _day(11) + 100])),
        (BASE, np.array([_day(10), _day(10) + 5, _day(79)])),
    ],
}


def _law(x: np.ndarray, side: int, t_rho: float, t_nu: float, k: float) -> np.ndarray:
    counts = db.DayCounts.from_seconds(x)
    beyond = db.in_scan_order(counts, side, 0 if side == 1 else START)
    return _stop_law(beyond[:PREFIX].astype(float), t_rho, t_nu, k)


def _worst(relation: str, halve: bool = False) -> tuple[float, float]:
    t_rho, t_nu, loss = scan_scales(0.5, relation)  # one scan of epsilon = 1
    scale = 0.5 if halve else 1.0
    worst = 0.0
    for (d, d2), side, k in itertools.product(PAIRS[relation], (0, 1), (0.0, 2 * float(t_nu))):
        a = _law(d, side, float(t_rho) * scale, float(t_nu) * scale, k)
        b = _law(d2, side, float(t_rho) * scale, float(t_nu) * scale, k)
        assert abs(logsumexp(a)) < 1e-9 and abs(logsumexp(b)) < 1e-9  # laws sum to 1
        worst = max(worst, float(np.max(np.abs(a - b))))
    return worst, float(loss)


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_exact_stop_law_within_the_claimed_loss(relation: str) -> None:
    worst, loss = _worst(relation)
    assert worst <= loss + 1e-9
    if relation == "add_remove":  # the claim is reached: it is not loose
        assert worst >= loss - 1e-6


def test_mutant_with_half_the_noise_is_caught() -> None:
    worst, loss = _worst("add_remove", halve=True)
    assert worst > 1.5 * loss


def test_mutant_starting_the_lower_scan_at_the_datas_last_day_is_caught() -> None:
    """The lower scan must start at the upper stop (a released value). A mutant that starts it
    the day after the data's last record (read from the data) puts mass on grid points the
    neighbour's law cannot reach: an unbounded likelihood ratio."""
    t_rho, t_nu, loss = scan_scales(0.5, "add_remove")

    def law_by_point(x: np.ndarray) -> np.ndarray:
        counts = db.DayCounts.from_seconds(x)
        start = int(np.searchsorted(db.DAY_GRID, x.max(), side="right"))  # the mutant's start
        law = _stop_law(db.in_scan_order(counts, 0, start).astype(float), t_rho, t_nu, 0.0)
        out = np.full(PREFIX, -np.inf)
        out[start - np.arange(law.size)] = law
        return out

    d, d2 = PAIRS["add_remove"][0]
    with np.errstate(invalid="ignore"):
        gap = np.abs(law_by_point(d) - law_by_point(d2))
    assert float(np.nanmax(gap)) > 10 * float(loss)


@pytest.mark.slow
def test_the_implementations_upper_stops_follow_the_exact_law() -> None:
    """Chi-square (``ALPHA``) of 1,500 upper stops of :func:`datetime_bounds` against the exact
    law on a tail of 4 records a day for 20 days (the stop spreads over several days)."""
    x = np.repeat(np.asarray(db.DAY_GRID[20:40]) + 3600, 4)
    counts = db.DayCounts.from_seconds(x)
    t_rho, t_nu, _ = scan_scales(0.5, "add_remove")
    k = 2 * float(t_nu)
    law = np.exp(
        _stop_law(
            db.in_scan_order(counts, 1, 0)[:PREFIX].astype(float), float(t_rho), float(t_nu), k
        )
    )
    source = InsecureSeededSource(TEST_SEED)
    runs = 1500
    draws = np.empty(runs, dtype=np.int64)
    for i in range(runs):
        res = db.datetime_bounds(counts, epsilon=1.0, neighbours="add_remove", rng=source)
        draws[i] = min(int(np.searchsorted(db.DAY_GRID, int(res.stops[1]))), PREFIX - 1)
    cells = law * runs >= 20
    obs = np.r_[np.bincount(draws, minlength=law.size)[cells], np.sum(~cells[draws])]
    exp = np.r_[law[cells], law[~cells].sum()] * runs
    assert cells.sum() >= 3
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > ALPHA
