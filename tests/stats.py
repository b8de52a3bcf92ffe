"""Statistical helpers for the tests: every check states its false-failure rate ``ALPHA``."""

from __future__ import annotations

import math
import os

import numpy as np
from scipy import stats

#: False-failure rate of every statistical test in the suite (per test).
ALPHA = 1e-6
#: Fixed seed of the Monte-Carlo tests. The contract: they pass for any seed, so a nightly
#: run may set TREEDP_TEST_SEED to explore others; CI uses the default.
TEST_SEED = int(os.environ.get("TREEDP_TEST_SEED", "20261122"))


def z_two_sided(alpha: float = ALPHA) -> float:
    """The two-sided normal critical value for ``alpha``."""
    return float(stats.norm.isf(alpha / 2))


def chi_square_pvalue(samples: np.ndarray, pmf, min_expected: float = 20.0) -> float:
    """Pearson chi-square p-value of integer ``samples`` against ``pmf``.

    Cells are the integers ``lo..hi`` whose expected count is at least ``min_expected``; the
    mass below ``lo`` is folded into cell ``lo`` and the mass above ``hi`` into cell ``hi``, so
    every cell keeps an expectation of at least ``min_expected`` (a separate tail cell could
    expect almost nothing, and one legitimate draw there would fail the test).
    """
    n = samples.size
    lo, hi = 0, 0
    while pmf(np.array([lo - 1]))[0] * n >= min_expected:
        lo -= 1
    while pmf(np.array([hi + 1]))[0] * n >= min_expected:
        hi += 1
    support = np.arange(lo, hi + 1)
    probs = pmf(support).astype(float)
    left = float(pmf(np.arange(lo - 2000, lo)).sum())
    right = max(0.0, 1.0 - probs.sum() - left)
    probs[0] += left
    probs[-1] += right
    observed = np.bincount(np.clip(samples, lo, hi) - lo, minlength=hi - lo + 1)
    expected = probs * n
    stat = float(((observed - expected) ** 2 / expected).sum())
    return float(stats.chi2.sf(stat, support.size - 1))


def binomial_ok(successes: int, trials: int, p: float, alpha: float = ALPHA) -> bool:
    """Whether ``successes`` is inside the two-sided exact binomial acceptance region."""
    return float(stats.binomtest(successes, trials, p).pvalue) > alpha


def mean_within(values: np.ndarray, expected: float, sd: float, alpha: float = ALPHA) -> bool:
    """Whether the sample mean is within ``z·sd/sqrt(n)`` of ``expected``."""
    return abs(float(values.mean()) - expected) <= z_two_sided(alpha) * sd / math.sqrt(values.size)
