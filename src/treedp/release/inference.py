"""Inference from a release: interval half-widths and simultaneous quantile bands, from the
public noise distribution only (no privacy cost)."""

from __future__ import annotations

import math
import threading
import weakref
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from treedp._validation import check_level, check_simulations
from treedp.estimation import PrefixCovariance, critical_value, estimate_prefix, live_se
from treedp.mechanisms import Mechanism
from treedp.noise import RandomSource, resolve_source

__all__ = [
    "LATTICE",
    "band_may_narrow",
    "band_ses",
    "bracket_interval",
    "check_level",
    "check_simulations",
    "crossing_bins",
    "half_width_factor",
    "quantile_band",
    "quantile_pointwise",
    "slack",
]


def half_width_factor(level: float, *, gaussian: bool = False) -> float:
    """``max(normal quantile, Laplace quantile)`` for a two-sided ``level`` interval, in se.

    The error is a linear combination of independent discrete Laplace noises; one Laplace
    variable is the heaviest-tailed case, so the larger quantile is exact or conservative for
    ``level`` above ~0.85. With ``gaussian`` (discrete Gaussian noise) the normal one alone.
    """
    return tail_factor(1.0 - level, gaussian=gaussian)


def tail_factor(alpha: float, *, gaussian: bool = False) -> float:
    """:func:`half_width_factor` for a two-sided miss probability ``alpha`` (which may be
    below float precision of ``1 - level``)."""
    # the standard library's inverse normal CDF (relative error ~1e-16) spares scipy.stats
    z = -NormalDist().inv_cdf(alpha / 2.0)
    return z if gaussian else max(z, math.log(1.0 / alpha) / math.sqrt(2.0))


#: One record of slack on every one-sided bound: the noise is integer-valued, and where one
#: draw dominates a small standard error a continuous quantile falls between lattice points
#: (an independent review, session 26: one discrete Laplace draw exceeded ``c·sd`` with 3.4
#: times the allowed probability at 95%, a discrete Gaussian 5 times; a lattice step of slack
#: keeps each at most ``0.97·(1 - level)/2``).
LATTICE = 1.0


def slack(factor: float, se: np.ndarray | float) -> np.ndarray:
    """A one-sided bound's distance from its estimate: ``factor·se`` and, where there is noise
    (``se > 0``), one :data:`LATTICE` step (an exact count, such as ``P[0]`` or a public ``n``,
    takes none)."""
    se = np.asarray(se, dtype=np.float64)
    return np.asarray(factor * se + np.where(se > 0, LATTICE, 0.0))


def bracket_interval(
    low: tuple[np.ndarray, np.ndarray],
    high: tuple[np.ndarray, np.ndarray],
    level: float,
    cap: float | None,
    *,
    gaussian: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """A ``level`` interval for a count known to lie between two estimable counts.

    ``low`` and ``high`` are ``(estimate, se)`` of counts ``L <= truth <= H`` (the bracketing
    edges of a point inside a bin; equal at an exact point). The interval
    ``[L̂ - c·se_L - 1, Ĥ + c·se_H + 1]`` (``c`` of :func:`half_width_factor`, one record of
    :data:`LATTICE` slack) misses only if ``L̂`` errs upward by more than ``c·se_L + 1`` or
    ``Ĥ`` downward by more than ``c·se_H + 1``; the noise is symmetric, so each has probability
    at most ``(1 - level)/2`` and by the union bound it covers with probability at least
    ``level``, whatever the spread inside the bin. Clipping at 0 and at ``cap`` (the public
    ``n``) cannot lose coverage.
    """
    factor = half_width_factor(level, gaussian=gaussian)
    lower = np.maximum(low[0] - slack(factor, low[1]), 0.0)
    upper = high[0] + slack(factor, high[1])
    if cap is not None:
        upper = np.minimum(upper, float(cap))
    return lower, np.maximum(upper, lower)


#: Simulated noise errors kept per mechanism (``rng=None`` only): the bands of every key of a
#: grouped release share one mechanism, and a report asks for its CDF and its quantile bands.
_SIMULATED: weakref.WeakKeyDictionary[Mechanism, dict[tuple[object, ...], np.ndarray]] = (
    weakref.WeakKeyDictionary()
)
_SIMULATED_LOCK = threading.Lock()
#: At most this many simulations are kept per mechanism (the oldest is dropped first).
_KEPT_PER_MECHANISM = 4
#: At most this many simulated prefix errors are held at once (a batch of draws).
_BATCH_VALUES = 2**22


def noise_errors(
    mechanism: Mechanism,
    estimator: str,
    simulations: int,
    rng: RandomSource | None,
    index: np.ndarray,
    batch: int = 256,
) -> np.ndarray:
    """The errors of the prefix estimates at ``index`` in ``simulations`` draws of the public
    noise alone, drawn in batches that bound the memory.

    The draws depend on the mechanism's public noise only, never on data. With ``rng=None``
    (fresh randomness of the operating system) the result is kept per mechanism, estimator,
    ``simulations`` and ``index`` and returned (read-only) to later calls: the 16 keys of a
    grouped release then share one simulation instead of drawing 16, each band as valid as
    before (each is calibrated on ``simulations`` independent draws of the noise; only bands
    of the same mechanism share them). A ``RandomSource`` given as ``rng`` always draws anew,
    so seeded results stay reproducible call by call.
    """
    key = ("errors", estimator, simulations, batch, index.dtype.str, index.tobytes())
    return simulated(mechanism, estimator, simulations, rng, key, batch, lambda err: err[:, index])


def simulated(
    mechanism: Mechanism,
    estimator: str,
    simulations: int,
    rng: RandomSource | None,
    key: tuple[object, ...],
    batch: int,
    reduce: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """``reduce`` of the prefix errors ``P̂[0..B] - P[0..B]`` of ``simulations`` draws of the
    public noise alone, one row per draw, drawn ``batch`` draws at a time: only a batch of
    whole error vectors is ever held (``reduce`` keeps what a caller needs of each row).

    With ``rng=None`` the rows are kept per mechanism under ``key`` (which must name
    everything ``reduce`` depends on) and returned read-only to later calls
    (:func:`noise_errors`).
    """
    if rng is None:
        with _SIMULATED_LOCK:
            kept = _SIMULATED.get(mechanism, {}).get(key)
        if kept is not None:
            return kept
    source = resolve_source(rng)
    rows: list[np.ndarray] = []
    for start in range(0, simulations, batch):
        blocks = mechanism.noise_only(min(batch, simulations - start), source)
        rows.append(reduce(estimate_prefix(mechanism, blocks, estimator)))
    out = np.concatenate(rows, axis=0)
    if rng is None:
        out.flags.writeable = False
        with _SIMULATED_LOCK:
            kept_all = _SIMULATED.setdefault(mechanism, {})
            kept_all[key] = out
            while len(kept_all) > _KEPT_PER_MECHANISM:
                del kept_all[next(iter(kept_all))]
    return out


def quantile_band(
    *,
    mechanism: Mechanism,
    estimator: str,
    covariance: PrefixCovariance,
    prefix: np.ndarray,
    qs: np.ndarray,
    level: float,
    simulations: int,
    rng: RandomSource | None,
    ses: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Prefix indices ``(m_lo, m_hi)`` in ``[1, B]`` bracketing each ``q``-quantile with
    probability ``level`` (:meth:`Release.quantile_interval`; ``ses``: :func:`band_ses`, when
    the caller has them).

    Each draw of the noise is reduced at once to its ``max_m |e[m] - q·e[B]| / se[m]`` for
    every ``q`` (the statistic of :func:`~treedp.estimation.band_critical_value`), so the
    memory is one batch of ``B + 1`` errors (at most :data:`_BATCH_VALUES` values) and one
    statistic per draw and ``q``, for any number of bins.
    """
    n_bins = prefix.size - 1
    ses = band_ses(covariance, n_bins, qs) if ses is None else ses
    lives = [live_se(se) for se in ses]

    def sup(err: np.ndarray) -> np.ndarray:
        out = np.zeros((err.shape[0], len(ses)))
        for j, (q, se, live) in enumerate(zip(qs, ses, lives, strict=True)):
            if live.any():
                dev = np.abs(err[:, live] - q * err[:, -1:]) / se[live]
                out[:, j] = dev.max(axis=1)
        return out

    batch = max(1, min(256, _BATCH_VALUES // (n_bins + 1)))
    key = ("quantile_band", estimator, simulations, batch, np.asarray(qs, float).tobytes())
    stats = simulated(mechanism, estimator, simulations, rng, key, batch, sup)
    crits = [critical_value(stats[:, j], level) if lives[j].any() else 0.0 for j in range(len(ses))]
    return _band_crossings(prefix, qs, ses, crits)


def _band_crossings(
    prefix: np.ndarray, qs: np.ndarray, ses: list[np.ndarray], crits: list[float]
) -> tuple[np.ndarray, np.ndarray]:
    """The band ``Ĝ[m] ± crit·se[m]`` tightened by monotonicity: for each ``q``, the first
    ``m`` whose (suffix-minimum) upper bound reaches 0 and the first whose (prefix-maximum)
    lower bound does, each at least 1. Both move outwards as ``crit`` grows."""
    n_bins = prefix.size - 1
    lows, highs = [], []
    for qi, se, crit in zip(qs, ses, crits, strict=True):
        g_hat = prefix - qi * prefix[-1]
        upper = np.minimum.accumulate((g_hat + crit * se)[::-1])[::-1]
        lower = np.maximum.accumulate(g_hat - crit * se)
        m_lo = int(np.argmax(upper >= 0)) if (upper >= 0).any() else n_bins
        m_hi = int(np.argmax(lower >= 0)) if (lower >= 0).any() else n_bins
        lows.append(max(m_lo, 1))
        highs.append(max(m_hi, 1))
    return np.array(lows, dtype=np.int64), np.array(highs, dtype=np.int64)


def band_may_narrow(
    covariance: PrefixCovariance,
    prefix: np.ndarray,
    qs: np.ndarray,
    bounds_bins: tuple[np.ndarray, np.ndarray],
    band_alpha: float,
    ses: list[np.ndarray] | None = None,
) -> np.ndarray:
    """For each ``q``, whether a simultaneous band at miss probability ``band_alpha`` could
    narrow the one-sided bounds' bins ``bounds_bins`` at all: decided without simulation, so
    a band is simulated only where it can change the interval.

    The band's factor is at least ``z``, the normal two-sided quantile at ``band_alpha``: its
    statistic is a maximum over indices, at least the one at any single index, whose
    standardised error is a sum of independent discrete Gaussian noises (close to normal) or
    of Laplace noises (a scale mixture of normals, whose tails past ``sqrt(3)`` are at least
    the normal's). The band's crossings move outwards as its factor grows
    (:func:`_band_crossings`), so where the band at ``z`` already holds the bounds' bins, the
    simulated band would too, and the intersection is the bounds' bins: skipping it changes
    nothing. (Were ``z`` ever above the simulated factor, a skip would only leave the bounds'
    bins, which cover at their own share of the miss probability: coverage never depends on
    this test, only the width.) It reads the release alone: post-processing. ``ses``:
    :func:`band_ses`, when the caller has them."""
    ses = band_ses(covariance, prefix.size - 1, qs) if ses is None else ses
    z = -NormalDist().inv_cdf(band_alpha / 2.0)
    b_lo, b_hi = _band_crossings(prefix, qs, ses, [z] * len(ses))
    m_lo, m_hi = bounds_bins
    return np.asarray((b_lo > m_lo) | (b_hi < m_hi))


def band_ses(covariance: PrefixCovariance, n_bins: int, qs: np.ndarray) -> list[np.ndarray]:
    """The exact standard errors of ``P̂[m] - q·P̂[B]``, ``m = 0..B``, for each ``q``."""
    m = np.arange(n_bins + 1)
    var_m = covariance.cov(m, m)
    cov_mb = covariance.cov(m, np.full_like(m, n_bins))
    var_b = float(var_m[-1])
    return [np.sqrt(np.maximum(var_m + q**2 * var_b - 2 * q * cov_mb, 0.0)) for q in qs]


def crossing_bins(g: np.ndarray, bound: np.ndarray) -> tuple[int, int]:
    """Bins ``(m_lo, m_hi)`` in ``[1, B]`` from one-sided bounds ``g ± bound`` on a
    non-decreasing ``G[m] = F(m) - q·n`` (``m = 0..B``) whose first ``m`` with ``G[m] >= 0``
    is the ``q``-quantile's bin ``m*``: ``m_lo`` is the first ``m >= 1`` whose upper bound
    reaches 0, ``m_hi`` one past the last ``m < B`` whose lower bound is below 0.

    Each side rests on **one** bound, at an index the truth fixes: ``m_lo > m*`` only if the
    upper bound at ``m*`` fails, ``m_hi < m*`` only if the lower bound at ``m* - 1`` does. So
    bounds that each fail with probability at most ``alpha/2`` give an interval that covers
    with probability at least ``1 - alpha``, with no simultaneous band: the first crossing
    cannot be moved later by noise elsewhere, only earlier (wider)."""
    n_bins = g.size - 1
    reach = np.flatnonzero(g[1:] + bound[1:] >= 0)  # upper bounds at m = 1..B
    below = np.flatnonzero(g[:-1] - bound[:-1] < 0)  # lower bounds at m = 0..B-1
    m_lo = 1 + int(reach[0]) if reach.size else n_bins
    m_hi = max(1 + int(below[-1]), 1) if below.size else 1
    return m_lo, m_hi


def quantile_pointwise(
    covariance: PrefixCovariance,
    prefix: np.ndarray,
    qs: np.ndarray,
    factor: float,
    ses: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Prefix indices ``(m_lo, m_hi)`` bracketing each ``q``-quantile's bin, from one-sided
    bounds at ``factor`` exact standard errors and one record (:data:`LATTICE`;
    :func:`crossing_bins`; ``factor`` from :func:`tail_factor` at the miss probability): no
    simulation. The estimate is linear in independent discrete Laplace or Gaussian noises,
    whose tails the factor bounds (``ses``: :func:`band_ses`, when the caller has them)."""
    ses = band_ses(covariance, prefix.size - 1, qs) if ses is None else ses
    pairs = [
        crossing_bins(prefix - q * prefix[-1], slack(factor, se))
        for q, se in zip(qs, ses, strict=True)
    ]
    lows, highs = zip(*pairs, strict=True) if pairs else ((), ())
    return np.array(lows, dtype=np.int64), np.array(highs, dtype=np.int64)
