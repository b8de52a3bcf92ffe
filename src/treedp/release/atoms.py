"""Point masses in a release's quantiles: answer the bound, 0 or the nearer edge in an atom's bin.

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
* **in an inner bin holding 0** (:func:`round_value`), 0: zero-inflated amounts whose found
  lower bound lies below 0 are answered exactly at every level in the block;
* **in any other inner bin**, the bin's nearer edge in rank (its lower edge when ``q·n̂`` is
  nearer the released CDF at the bin's start than at its end): a rank gap of at most the
  smaller of the block's two sides, the best any answer other than the value itself can do
  (99% at 7.0 in ``[6.84, 7.81)``).

Measured by ``benchmarks/release_atoms.py`` (docs/quantiles.md, "Point masses in a
release").

Post-processing of the released CDF and of the public noise only (no data, no privacy cost).
A bin counts as an atom when its released mass is at least :data:`ATOM_SHARE` of the released
total, its density (count over width) at least :data:`ATOM_RATIO` times each neighbouring
bin's and, on a side with two bins, :data:`ATOM_RATIO` times the trend those two make
(``d_j · d_{j±2} >= 10 · d_{j±1}²``), and its count at least :data:`NOISE_SCALES` standard
errors: smooth data spread over 1,024 or more bins never has one bin ten times its neighbours
(it would also need 2% of the records); a log-concave density falling steeply over coarse bins
(exponential data on 32 bins: each bin 20 times the next) or one wide bin among narrow ones
(all adults in one bin) is not a block (an independent review, session 24); and the last
condition is a guard against the steps that the monotone projection of a noisy CDF can make at
small ``n·ε`` (a flat run, then one bin holding a jump of the noise's size). Only the answers'
bins and two bins on each side are read: ``O(len(q))``, whatever the number of bins.

:func:`point_masses` / :func:`below_points` give the counts the same reading
(``Release.cdf``, ``range_count``, ``stderr``): such a bin's whole count at the value its
quantiles are answered by (0 in a bin holding it, else the bound in an end bin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from treedp.release.queries import quantile_from

__all__ = [
    "ATOM_RATIO",
    "ATOM_SHARE",
    "NOISE_SCALES",
    "below_points",
    "bin_stderr",
    "block_value",
    "point_masses",
    "release_quantiles",
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
    """0 if ``[low, high)`` holds it, else None: the one value a bin's block is answered by.

    A wider rule (the bin's only multiple of the largest power of ten it holds) answered
    65,000 and 7.0 exactly, but also blocks at 12.50 by 10, at 2.5 by 2 and at 19.99 by 20,
    worse than the nearer edge (a new user's run, session 18): blocks away from 0 take the
    nearer edge.

    Examples
    --------
    >>> round_value(-0.14, 0.02), round_value(6.84, 7.81)
    (0.0, None)
    """
    return 0.0 if low <= 0.0 < high else None


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


def block_value(edges: np.ndarray, j: int, integers: bool) -> float | None:
    """The value a block in bin ``j`` is answered by: 0 when the bin holds it (a found bound
    below a block of zeros answered every level -75), else an end bin's bound (records beyond
    the bounds are clamped onto it, and a bound such as 0 is often the block's own value; the
    last integer ``e_B - 1`` on integers bins), else None (an inner block away from 0: the
    quantiles take its nearer edge in rank, the counts stay interpolated)."""
    if round_value(float(edges[j]), float(edges[j + 1])) is not None:
        return 0.0
    if j == 0:
        return float(edges[0])
    if j == edges.size - 2:
        return float(edges[-1]) - (1.0 if integers else 0.0)
    return None


def _density(edges: np.ndarray, cdf: np.ndarray, j: np.ndarray) -> np.ndarray:
    """The released count of each bin ``j`` over its width (0 outside the bins)."""
    n_bins = cdf.size - 1
    inside = (j >= 0) & (j < n_bins)
    k = np.clip(j, 0, n_bins - 1)
    count = np.maximum(cdf[k + 1] - cdf[k], 0.0)  # an unfitted CDF can step down
    return np.where(inside, count / (edges[k + 1] - edges[k]), 0.0)


def _atom(edges: np.ndarray, cdf: np.ndarray, total: float, j: np.ndarray) -> np.ndarray:
    """Whether each bin ``j`` passes the share and ratio conditions: at least
    :data:`ATOM_SHARE` of the total, and a density (count over width: bins of unequal widths,
    such as one wide bin for all adults, are not blocks) at least :data:`ATOM_RATIO` times each
    neighbour's."""
    mass = cdf[j + 1] - cdf[j]
    neighbour = np.maximum(_density(edges, cdf, j - 1), _density(edges, cdf, j + 1))
    dense = _density(edges, cdf, j) >= ATOM_RATIO * neighbour
    return np.asarray((mass >= ATOM_SHARE * total) & dense)


def _beyond_trend(
    edges: np.ndarray,
    cdf: np.ndarray,
    j: np.ndarray,
    noise: Callable[[np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """Whether each bin ``j`` stands :data:`ATOM_RATIO` times above the trend of the two bins
    on each side that has them (``d_j · d_{j±2} >= ATOM_RATIO · d_{j±1}²``): a smooth
    log-concave density that merely falls steeply over coarse bins (exponential data on wide
    bins: each bin 20 times the next) is not a block; a block over a flat neighbourhood is.
    A neighbour whose count is within ``NOISE_SCALES`` standard errors (``noise``) shows no
    trend (the monotone fit of a noisy CDF makes steps there); a bin with no side of two bins
    (fewer than three bins) is no block."""
    d = _density(edges, cdf, j)
    ok = np.ones(j.size, dtype=bool)
    tested = np.zeros(j.size, dtype=bool)
    n_bins = cdf.size - 1
    for side in (-1, 1):
        has = (j + 2 * side >= 0) & (j + 2 * side < n_bins)
        near, far = _density(edges, cdf, j + side), _density(edges, cdf, j + 2 * side)
        falls = has & (d * far < ATOM_RATIO * near**2)
        if noise is not None and bool(falls.any()):  # only a neighbour above its noise
            k = j[falls] + side
            se = np.asarray(noise(k), dtype=np.float64).ravel()
            falls[falls] = cdf[k + 1] - cdf[k] >= NOISE_SCALES * se
        ok &= ~falls
        tested |= has
    return ok & tested


def snap_to_atoms(
    edges: np.ndarray,
    cdf: np.ndarray,
    q: np.ndarray,
    answers: np.ndarray,
    bin_stderr: Callable[[np.ndarray], np.ndarray] | None = None,
    integers: bool = False,
) -> np.ndarray:
    """The answers, each in an atom's bin moved to the bound (end bins), 0 or the nearer edge.

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
    integers : bool, default=False
        Bins of whole integers (``Bins.integers``; ``answers`` are integers of their bins): an
        answer on an edge is that integer, in the bin above, and an upper end (the bin's
        nearer edge, the last bin's bound) is the bin's last integer, one below the edge.

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
    if n_bins < 2 or not total > 0:  # one bin: nothing to compare it with
        return out
    flat = out.ravel()
    bins = np.clip(np.searchsorted(edges, flat, side="right") - 1, 0, n_bins - 1)
    # An answer on an inner edge belongs to the bin above it; the bin below is the one the
    # CDF reached q·n̂ in when that bin is the atom (its end).
    below = np.maximum(bins - 1, 0)
    on_edge = (flat == edges[bins]) & (bins > 0) & (not integers)
    bins = np.where(
        on_edge & _atom(edges, cdf, total, below) & ~_atom(edges, cdf, total, bins), below, bins
    )
    atom = _atom(edges, cdf, total, bins)
    if bool(np.any(atom)):
        atom[atom] = _beyond_trend(edges, cdf, bins[atom], bin_stderr)
    if bin_stderr is not None and bool(np.any(atom)):  # only the atoms' bins
        noise = np.asarray(bin_stderr(bins[atom]), dtype=np.float64).ravel()
        atom[atom] = cdf[bins[atom] + 1] - cdf[bins[atom]] >= NOISE_SCALES * noise
    target = np.broadcast_to(np.asarray(q, dtype=np.float64), out.shape).ravel() * total
    last = 1.0 if integers else 0.0  # the bin's last value lies this far below its upper edge
    lower_side = target - cdf[bins] <= cdf[bins + 1] - target
    moved = np.where(lower_side, edges[bins], edges[bins + 1] - last)
    for i in np.flatnonzero(atom):  # a block at 0, or at an end bin's bound
        value = block_value(edges, int(bins[i]), integers)
        moved[i] = moved[i] if value is None else value
    return np.where(atom, moved, flat).reshape(out.shape)


def release_quantiles(
    bins: Any, cdf: np.ndarray, q: np.ndarray, noise: Callable[[np.ndarray], np.ndarray] | None
) -> np.ndarray:
    """A release's quantiles on its bins' numeric axis: read off the consistent ``cdf``
    (:func:`~treedp.release.queries.quantile_from`), then, on numeric bins other than discrete
    ones, an answer in an atom's bin moved by :func:`snap_to_atoms` (``noise``: its
    ``bin_stderr``, called only for an atom's bins; None without a public noise, DAWA's)."""
    out = quantile_from(bins, cdf, q)
    if bins.discrete or bins.edges.dtype.kind != "f":  # integers one per bin, or datetimes
        return np.asarray(out)
    return snap_to_atoms(bins.edges, cdf, q, out, noise, bins.integers)


def point_masses(
    bins: Any, cdf: np.ndarray, noise: Callable[[np.ndarray], np.ndarray]
) -> tuple[tuple[int, float], ...]:
    """The bins a release's counts read as a point mass, with the value it sits at, as
    :func:`snap_to_atoms` answers their quantiles: a bin holding 0 at 0, else the first bin at
    the lower bound and the last at the upper one (``e_B``; the last integer ``e_B - 1`` on
    integers bins); each by :func:`snap_to_atoms`'s test (share, density ratio to its
    neighbours, standing above their trend, ``NOISE_SCALES`` standard errors from ``noise``,
    read for these bins only). None on discrete bins (exact per integer), datetimes or fewer
    than three bins. Post-processing of the released CDF and the public noise."""
    n_bins = bins.n_bins
    total = float(cdf[-1])
    if bins.discrete or bins.edges.dtype.kind != "f" or n_bins < 2 or not total > 0:
        return ()
    edges = bins.edges
    zero = int(np.searchsorted(edges, 0.0, side="right")) - 1  # the bin holding 0, if any
    candidates = {0, n_bins - 1} | ({zero} if 0 <= zero < n_bins else set())
    values = {k: block_value(edges, k, bins.integers) for k in candidates}
    places = {k: v for k, v in values.items() if v is not None}
    j = np.array(sorted(places))
    atom = _atom(edges, cdf, total, j)
    if atom.any():  # as snap_to_atoms
        atom[atom] = _beyond_trend(edges, cdf, j[atom], noise)
    if atom.any():
        se = np.asarray(noise(j[atom]), dtype=np.float64).ravel()
        atom[atom] = cdf[j[atom] + 1] - cdf[j[atom]] >= NOISE_SCALES * se
    return tuple((int(b), places[int(b)]) for b in j[atom])


def below_points(
    bins: Any, t: np.ndarray, masses: tuple[tuple[int, float], ...], *, closed: bool = False
) -> np.ndarray:
    """Points of a "values below ``t``" query with each of ``masses`` (:func:`point_masses`)
    at its value: a point in such a bin reads the whole bin past the value (at it too with
    ``closed``, a CDF's ``<=`` on continuous bins), none of it before. Without masses, ``t``
    itself. Intervals keep the bracketing edges: they hold wherever the mass sits."""
    if not masses:
        return t
    edges = bins.edges
    moved = np.ceil(t) if bins.integers else np.asarray(t, dtype=np.float64)
    out = moved
    last = edges.size - 2
    for j, value in masses:  # the last bin is closed: its upper edge is a point of it
        inside = (moved >= edges[j]) & (
            (moved < edges[j + 1]) | ((j == last) & (moved == edges[-1]))
        )
        past = moved >= value if closed else moved > value
        out = np.where(inside, np.where(past, edges[j + 1], edges[j]), out)
    return np.asarray(out, dtype=np.float64)
