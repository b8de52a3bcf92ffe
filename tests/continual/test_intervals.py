"""A stream's quantile and CDF-share intervals (``StepAnswer.quantile_interval`` /
``cdf_interval``, :mod:`treedp.continual.intervals`): coverage where records sit at their bins'
ends (so a bracket that ignored the bins would miss), mutants that miss, the bisection's
algebra, and the checks of their arguments."""

from __future__ import annotations

import numpy as np
import pytest

from treedp.continual import continual
from treedp.continual.intervals import quantile_bins, share_bounds
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource as SEED
from treedp.release.inference import half_width_factor

# every bin's records at one end of it: the left edge, or just below the right one
PARTS = [np.full(20 + 7 * (j % 3), j * 10.0 + (0.0 if j % 2 else 9.99)) for j in range(10)]
DATA = np.concatenate(PARTS)
SORTED = np.sort(DATA)
# levels at a bin's cumulative share (the quantile at a bin's end) and between them
QS = np.array([0.08, np.sum(DATA < 30) / DATA.size, 0.5, np.sum(DATA < 70) / DATA.size, 0.93])
XS = np.array([5.0, 9.995, 30.0, 44.0, 69.995, 95.0])


def _true_quantile(q: float) -> float:
    return float(SORTED[max(int(np.ceil(q * SORTED.size)), 1) - 1])


def test_quantile_and_cdf_intervals_cover_with_records_at_bin_ends() -> None:
    """300 streams (binary tree, ε = 1, 10 bins on (0, 100)), the data given over two steps,
    90%: every level's and point's coverage at both steps at least 0.9 − 4.5 binomial standard
    deviations (false failure below 1e-5 each). Two mutants miss: the bin where the noisy CDF
    crosses ``q`` as the interval (no allowance for noise), and the share ``cdf(x)`` ± the
    count's half-width over the count (no brackets for ``x`` inside a bin, no noise in the
    total)."""
    truth_q = np.array([_true_quantile(q) for q in QS])
    halves = [DATA[::2], DATA[1::2]]
    reps = 300
    hits_q, hits_c = np.zeros((2, QS.size)), np.zeros((2, XS.size))
    mutant_q, mutant_c = np.zeros(QS.size), np.zeros(XS.size)
    factor = half_width_factor(0.9)
    for seed in range(reps):
        s = continual(horizon=4, epsilon=1.0, bins=10, bounds=(0, 100), mechanism="binary",
                      rng=SEED(seed))  # fmt: skip
        for t, part in enumerate(halves):
            a = s.step(part)
            seen = np.sort(np.concatenate(halves[: t + 1]))
            tq = np.array([seen[max(int(np.ceil(q * seen.size)), 1) - 1] for q in QS])
            tc = np.array([np.mean(seen <= x) for x in XS])
            low, high = a.quantile_interval(QS, level=0.9)
            hits_q[t] += (low <= tq) & (tq <= high)
            low, high = a.cdf_interval(XS, level=0.9)
            hits_c[t] += (low <= tc) & (tc <= high)
        prefix = np.concatenate([[0.0], np.cumsum(a.raw_histogram)])
        m_hat = np.array([np.argmax(prefix - q * prefix[-1] >= 0) for q in QS])
        edges = np.asarray(a.bins.edges)
        mutant_q += (edges[np.maximum(m_hat, 1) - 1] <= truth_q) & (truth_q <= edges[m_hat])
        point = a.cdf(XS, consistent=False)
        half = factor * a.stderr / a.count
        mutant_c += np.abs(point - tc) <= half  # tc: all the data, as at step 2
    tol = 4.5 * np.sqrt(0.9 * 0.1 / reps)
    assert (hits_q / reps >= 0.9 - tol).all(), hits_q / reps
    assert (hits_c / reps >= 0.9 - tol).all(), hits_c / reps
    assert (mutant_q / reps < 0.9 - tol).any()
    assert (mutant_c / reps < 0.9 - tol).any()


def test_integer_bins_give_integer_ends_holding_the_point() -> None:
    s = continual(horizon=4, epsilon=1.0, bins="integers", bounds=(0, 20), rng=SEED(3))
    a = s.step(np.random.default_rng(0).poisson(3, 400))
    qs = np.array([0.1, 0.5, 0.9])
    low, high = a.quantile_interval(qs)
    point = a.quantile(qs)
    assert np.all(low == np.round(low)) and np.all(high == np.round(high))
    assert np.all((low <= point) & (point <= high)) and np.all((low >= 0) & (high <= 20))
    clo, chi = a.cdf_interval([1, 2.5, 3])
    assert np.all((clo >= 0) & (clo <= a.cdf([1, 2.5, 3])) & (a.cdf([1, 2.5, 3]) <= chi))
    assert clo[1] == a.cdf_interval(2)[0]  # <= 2.5 is <= 2 on integers
    assert (
        a.to_dict()["quartiles_interval_95"][1][0]
        <= a.quantile(0.5)
        <= (a.to_dict()["quartiles_interval_95"][1][1])
    )


def test_noiseless_bins_bracket_the_true_quantile_bin_within_the_continuity_half() -> None:
    """Variance 0: each side misses by at most the half record's slack (one bin)."""
    counts = np.array([3.0, 0.0, 5.0, 2.0, 10.0])
    prefix = np.concatenate([[0.0], np.cumsum(counts)])
    for q in np.linspace(0.01, 1.0, 23):
        m_star = int(np.argmax(prefix >= q * prefix[-1]))
        (m_lo,), (m_hi,) = quantile_bins(prefix, 0.0, np.array([q]), 1.645)
        assert m_lo <= max(m_star, 1) <= m_hi and m_hi - m_lo <= 2


def test_share_bounds_solve_their_one_sided_tests() -> None:
    """The low end makes ``P̂[a] − s·P̂[B] − c·se(a, s) − 1`` zero (an interior root), the
    high end ``P̂[b] − s·P̂[B] + c·se(b, s) + 1``: checked against the closed-form quadratic."""
    prefix = np.array([0.0, 12.0, 40.0, 41.0, 77.0, 100.0])
    v, c, n_bins, total = 4.0, 1.96, 5, 100.0
    a = np.array([1, 2, 3, 4])
    low, high = share_bounds(prefix, v, a, a, c)
    for m, lo, hi in zip(a, low, high, strict=True):
        for s, sign in ((lo, -1.0), (hi, 1.0)):
            se = np.sqrt(v * ((1 - s) ** 2 * m + s**2 * (n_bins - m)))
            assert prefix[m] - s * total + sign * (c * se + 1.0) == pytest.approx(0, abs=1e-9)
        assert lo < prefix[m] / total < hi


@pytest.mark.parametrize("method", ["quantile_interval", "cdf_interval"])
def test_bad_arguments_name_what_is_allowed(method: str) -> None:
    a = continual(horizon=2, epsilon=1.0, bins=4, bounds=(0, 4), rng=SEED(1)).step([1.0, 2.0])
    with pytest.raises(InvalidParameterError, match="level"):
        getattr(a, method)(0.5, level=1.5)
    if method == "quantile_interval":
        with pytest.raises(InvalidParameterError, match="'q'"):
            a.quantile_interval(1.5)
    count = continual(horizon=2, epsilon=1.0, rng=SEED(1)).step(3)
    with pytest.raises(InvalidParameterError, match="bins"):
        getattr(count, method)(0.5)
