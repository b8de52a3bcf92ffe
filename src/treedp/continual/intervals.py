"""Confidence intervals for a stream's running quantiles and CDF shares.

Post-processing of one step's unbiased per-bin running counts ``P̂`` (prefix sums) whose
errors are independent across bins, each of the public variance ``v`` (a linear combination
of independent discrete Laplace or Gaussian noises). For a weight ``s`` and a prefix index
``m``, the error of ``P̂[m] - s·P̂[B]`` has mean 0 and variance
``v·((1 - s)²·m + s²·(B - m))``; a one-sided bound on it misses with probability at most
``alpha/2`` at ``factor`` standard errors (:func:`treedp.release.inference.half_width_factor`)
plus one record where there is noise (the noise is integer-valued: a lattice step,
:func:`treedp.release.inference.slack`).

Each interval below rests on such a bound at **one index fixed by the truth**, so it needs no
simultaneous band and no simulation of the mechanism's noise:

* quantile ``q``: let ``m*`` be the true quantile's bin (the first ``m`` with
  ``F(m) >= q·n``). The low end is the first ``m`` whose upper bound on ``F(m) - q·n``
  reaches 0: it is past ``m*`` only if the bound at ``m*`` itself failed. The high end is one
  past the last ``m`` whose lower bound is below 0: it is before ``m*`` only if the bound at
  ``m* - 1`` failed. Each side misses with probability at most ``alpha/2``.
* CDF share at ``x`` (``F(x)/n``, between ``P[a]/n`` and ``P[b]/n`` for the bracketing edges):
  Fieller's construction. The low end is the smallest ``s`` not rejected by the one-sided test
  of ``P[a] - s·n = 0``; the truth ``P[a]/n`` is rejected only when its bound fails. The
  upper end likewise at ``b``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from treedp.release.inference import crossing_bins, slack

__all__ = ["quantile_bins", "share_bounds"]

_BISECTIONS = 60  # halves [0, 1] to below 1e-18: past float precision


def _se(variance: float, m: np.ndarray, s: np.ndarray, n_bins: int) -> np.ndarray:
    """The standard error of ``P̂[m] - s·P̂[B]``."""
    return np.asarray(np.sqrt(variance * ((1.0 - s) ** 2 * m + s**2 * (n_bins - m))))


def quantile_bins(
    prefix: np.ndarray, variance: float, qs: np.ndarray, factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Bins ``(m_lo, m_hi)``, 1-based in ``[1, B]``, holding each ``q``-quantile's bin with
    probability at least ``1 - 2·alpha/2`` (``factor`` sets ``alpha``; module docstring)."""
    n_bins = prefix.size - 1
    m = np.arange(n_bins + 1)
    lows, highs = [], []
    for q in np.asarray(qs, dtype=np.float64).ravel():
        bound = slack(factor, _se(variance, m, np.full(m.shape, q), n_bins))
        low, high = crossing_bins(prefix - q * prefix[-1], bound)  # as a release's
        lows.append(low)
        highs.append(high)
    return np.array(lows, dtype=np.int64), np.array(highs, dtype=np.int64)


def share_bounds(
    prefix: np.ndarray, variance: float, m_low: np.ndarray, m_high: np.ndarray, factor: float
) -> tuple[np.ndarray, np.ndarray]:
    """Fieller bounds in ``[0, 1]`` on the shares ``P[m_low]/n`` (from below) and
    ``P[m_high]/n`` (from above), each missing with probability at most ``alpha/2``.

    Below: ``h(s) = P̂[a] - s·P̂[B] - factor·se(a, s) - 1`` is concave in ``s``: where
    ``h(0) <= 0`` the bound is 0, else ``{h > 0}`` is an interval ``[0, r)`` and the bound, the
    smallest ``s`` not rejected, is ``r`` (bisection). Above: ``k(s) = P̂[b] - s·P̂[B] +
    factor·se(b, s) + 1`` is convex: where ``k(1) >= 0`` the bound is 1, else its rejected
    ``s`` (``k < 0``) are an interval ``(r, 1]`` and the bound is ``r``. The validity argument
    (module docstring) holds whatever the sign of ``P̂[B]``.
    """
    n_bins = prefix.size - 1
    total = prefix[-1]
    a = np.asarray(m_low, dtype=np.int64)
    b = np.asarray(m_high, dtype=np.int64)

    def h(s: np.ndarray) -> np.ndarray:
        return np.asarray(prefix[a] - s * total - slack(factor, _se(variance, a, s, n_bins)))

    def k(s: np.ndarray) -> np.ndarray:
        return np.asarray(prefix[b] - s * total + slack(factor, _se(variance, b, s, n_bins)))

    low = _boundary(lambda s: h(s) > 0, a.shape)
    high = _boundary(lambda s: k(s) >= 0, b.shape)
    return low, high


def _boundary(holds: Callable[[np.ndarray], np.ndarray], shape: tuple[int, ...]) -> np.ndarray:
    """The end ``r`` in ``[0, 1]`` of ``{s : holds(s)}``, a set of the form ``[0, r)`` or
    ``[0, r]`` (possibly empty: ``r = 0``; or all of ``[0, 1]``: ``r = 1``), by bisection,
    elementwise."""
    lo, hi = np.zeros(shape), np.ones(shape)
    at_one = holds(hi)
    at_zero = holds(lo)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        inside = holds(mid)
        lo, hi = np.where(inside, mid, lo), np.where(inside, hi, mid)
    return np.where(at_one, 1.0, np.where(at_zero, 0.5 * (lo + hi), 0.0))
