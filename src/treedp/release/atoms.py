"""Point masses in a release's quantiles: answer a round value when the bin looks like an atom.

:meth:`Release.quantile` reads a quantile off the released, consistent CDF and interpolates
linearly inside the bin where it reaches ``q·n̂``. When that bin holds a point mass (a value
shared by many records: 70% zeros of an amount, 99% at one value, the 80% block of diffprivlib
issue #107) the interpolated answer lands on one side of the value, with a rank gap up to the
whole block (0.22 n at the median of 70% zeros on bounds ``(0, 1000)``: the answer 0.70 has
70% of the records below it).

:func:`snap_to_atoms` answers instead:

* **in the first or last bin**, the bound itself, whatever the level: records beyond the bounds
  are clamped onto it, and a public bound is often the block's own value (0 for a
  zero-inflated column on bounds ``(0, hi)``: rank gap 0 at every level in the block);
* **in an inner bin holding a distinguished round number** (:func:`round_value`: 0, or the
  only multiple in the bin of the largest power of ten it holds a multiple of: ``65,000`` in
  ``[64,007, 65,036)``, ``7`` in ``[6.84, 7.81)``), that number. Real point masses sit on
  round values (zeros, integers stored as floats, top codes, rounded amounts), and then every
  level in the block is answered with rank gap 0. A block elsewhere in such a bin (prices at 9.99 in
  ``[9.77, 10.74)``, answered 10) is answered on one side of its value, possibly the far one:
  a rank gap up to the block's larger side, where the nearer edge has at most its smaller
  side; the value is off by less than the bin's width either way (0.01 here);
* **in any other inner bin**, the bin's nearer edge in rank (its lower edge when ``q·n̂`` is
  nearer the released CDF at the bin's start than at its end): a rank gap of at most the
  smaller of the block's two sides, the best any answer other than the value itself can do
  (99% at 7.3 in ``[7.03, 7.42)``, which holds 7.1 .. 7.4).

Measured by ``benchmarks/release_atoms.py`` (docs/quantiles.md, "Point masses in a
release").

Post-processing of the released CDF and of the public noise only (no data, no privacy cost).
A bin counts as an atom when its released mass is at least :data:`ATOM_SHARE` of the released
total, at least :data:`ATOM_RATIO` times each neighbouring bin's, and at least
:data:`NOISE_SCALES` standard errors of its own count: smooth data spread over 1,024 or more
bins never has one bin ten times its neighbours (it would also need 2% of the records), and the
last condition is a guard against the steps that the monotone projection of a noisy CDF can
make at small ``n·ε`` (a flat run, then one bin holding a jump of the noise's size). Only the
answers' bins and their neighbours are read: ``O(len(q))``, whatever the number of bins.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "ATOM_RATIO",
    "ATOM_SHARE",
    "NOISE_SCALES",
    "bin_stderr",
    "round_value",
    "snap_to_atoms",
]

#: A bin is an atom when its released mass is at least this share of the released total...
ATOM_SHARE = 0.02
#: ... and at least this many times the released mass of each neighbouring bin.
ATOM_RATIO = 10.0
#: ... and at least this many standard errors of its count (the release's public noise).
NOISE_SCALES = 6.0


def round_value(low: float, high: float) -> float | None:
    """The bin's distinguished round number: 0 if ``[low, high)`` holds it, else the multiple of
    the largest power of ten that it holds, when it holds only one; None otherwise.

    Parameters
    ----------
    low, high : float
        A bin's edges, finite, ``low < high``.

    Returns
    -------
    float or None
        A number in ``[low, high)``, or None when the bin holds several numbers of its
        roundest kind (``[7.03, 7.42)``: 7.1 .. 7.4).

    Examples
    --------
    >>> round_value(-0.14, 0.02), round_value(64_941.4, 65_429.7), round_value(6.84, 7.81)
    (0.0, 65000.0, 7.0)
    >>> round_value(3.1396, 3.1445), round_value(-7.81, -6.84), round_value(7.03, 7.42)
    (3.14, -7.0, None)
    """
    if low <= 0.0 < high:
        return 0.0
    top = math.floor(math.log10(max(abs(low), abs(high)))) + 1
    for k in range(min(top, 308), top - 400, -1):  # down to the smallest floats' powers
        step = 10.0**k
        if step == 0.0:  # pragma: no cover - narrower than the smallest floats
            return None
        first, last = math.ceil(low / step), math.ceil(high / step) - 1
        if first > last:
            continue
        value = float(f"{first}e{k}")  # the decimal first·10^k, correctly rounded
        if first == last and low <= value < high:
            return value
        return None
    return None  # pragma: no cover - a finite bin holds a multiple of some power of ten


def bin_stderr(covariance: Any, direct: Any, bins: Any, j: np.ndarray) -> np.ndarray:
    """The standard error of a release's unbiased count of each bin ``j`` (public: its noise's).

    ``Var(P[j + 1] - P[j])`` from the prefixes' ``covariance``
    (:class:`~treedp.estimation.PrefixCovariance`), or the mechanism's own ``direct`` ranges
    when it has them (``Release._direct_ranges``): what ``Release.stderr("range_count",
    e[j], e[j + 1])`` gives, without its general query path.
    """
    j = np.asarray(j, dtype=np.int64)
    if direct is not None:
        edges = bins.edges
        ranges = np.asarray(direct.range_variance(edges[j], edges[j + 1]), dtype=np.float64)
        return np.asarray(np.sqrt(ranges), dtype=np.float64)
    var = covariance.cov(j + 1, j + 1) + covariance.cov(j, j) - 2 * covariance.cov(j, j + 1)
    return np.asarray(np.sqrt(np.maximum(np.asarray(var, dtype=np.float64), 0.0)))


def _atom(cdf: np.ndarray, total: float, j: np.ndarray) -> np.ndarray:
    """Whether each bin ``j`` passes the share and ratio conditions (its neighbours' masses
    only)."""
    n_bins = cdf.size - 1
    mass = cdf[j + 1] - cdf[j]
    left = np.where(j > 0, cdf[j] - cdf[np.maximum(j - 1, 0)], 0.0)
    right = np.where(j < n_bins - 1, cdf[np.minimum(j + 2, n_bins)] - cdf[j + 1], 0.0)
    neighbour = np.maximum(left, right)
    return np.asarray((mass >= ATOM_SHARE * total) & (mass >= ATOM_RATIO * neighbour))


def snap_to_atoms(
    edges: np.ndarray,
    cdf: np.ndarray,
    q: np.ndarray,
    answers: np.ndarray,
    bin_stderr: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The answers, each in an atom's bin moved to the bound (end bins) or the bin's round value.

    Parameters
    ----------
    edges : ndarray
        The bins' ``B + 1`` numeric edges, increasing.
    cdf : ndarray
        The released consistent CDF at the edges (``B + 1`` values, non-decreasing, from 0).
    q : ndarray
        The levels, in ``[0, 1]``, shaped like ``answers``.
    answers : ndarray
        The interpolated answers (each within ``[edges[0], edges[-1]]``).
    bin_stderr : callable, optional
        ``bin_stderr(j)``: the standard error of the released count of each bin ``j`` (the
        release's public noise). None: no noise condition.

    Returns
    -------
    ndarray
        Float answers shaped like ``answers``, non-decreasing in the level when ``answers``
        are (every answer in an atom's bin is replaced by one value of that bin, the same for
        every level).
    """
    edges = np.asarray(edges, dtype=np.float64)
    cdf = np.asarray(cdf, dtype=np.float64)
    out = np.array(answers, dtype=np.float64, copy=True)
    total = float(cdf[-1]) if cdf.size else 0.0
    n_bins = edges.size - 1
    if n_bins < 1 or not total > 0:
        return out
    flat = out.ravel()
    bins = np.clip(np.searchsorted(edges, flat, side="right") - 1, 0, n_bins - 1)
    # An answer on an inner edge belongs to the bin above it; the bin below is the one the
    # CDF reached q·n̂ in when that bin is the atom (its end).
    below = np.maximum(bins - 1, 0)
    on_edge = (flat == edges[bins]) & (bins > 0)
    bins = np.where(on_edge & _atom(cdf, total, below) & ~_atom(cdf, total, bins), below, bins)
    atom = _atom(cdf, total, bins)
    if bin_stderr is not None and bool(np.any(atom)):  # only the atoms' bins
        noise = np.asarray(bin_stderr(bins[atom]), dtype=np.float64).ravel()
        atom[atom] = cdf[bins[atom] + 1] - cdf[bins[atom]] >= NOISE_SCALES * noise
    target = np.broadcast_to(np.asarray(q, dtype=np.float64), out.shape).ravel() * total
    nearer = np.where(target - cdf[bins] <= cdf[bins + 1] - target, edges[bins], edges[bins + 1])
    rounds = np.full(bins.size, math.nan)
    rounds[atom] = [_or_nan(round_value(edges[j], edges[j + 1])) for j in bins[atom]]
    moved = np.where(np.isnan(rounds), nearer, rounds)
    # The end bins: records beyond the bounds are clamped onto them, and a lower bound such as
    # 0 is often the value of the block (zero-inflated columns): answer the bound itself.
    moved = np.where(bins == 0, edges[0], np.where(bins == n_bins - 1, edges[-1], moved))
    return np.where(atom, moved, flat).reshape(out.shape)


def _or_nan(value: float | None) -> float:
    return math.nan if value is None else value
