"""Point masses in the tree's quantiles: answer at a bin's edge when the bin looks like an atom.

The tree method reads a quantile off the released, consistent CDF and interpolates linearly
inside the bin where it reaches ``q·n̂``. When that bin holds a point mass (a value shared by
many records, e.g. 99% of the data, or the 80% block of diffprivlib issue #107) the
interpolated answer lands on one side of the value: at a level on the far side of the block it
answers inside the block's wrong side, with a rank gap up to the whole block (0.745 n at
``q = 0.75`` with 99% at 7.0 and real-valued bins, where answering just above the value is
0.245 n off). :func:`snap_to_atoms` answers at the nearer edge of such a bin instead, in rank:
its lower edge when ``q·n̂`` is nearer the released CDF at the bin's start than at its end,
else its upper edge. At any level the rank gap is then at most the smaller of the block's two
sides, the best any answer other than the value itself can do. In the first bin the answer is
the lower bound and in the last bin the upper bound, whatever the level: records beyond the
bounds are clamped onto them, and a public lower bound is often the block's own value (0 for a
zero-inflated column on bounds ``(0, hi)``: rank gap 0 at every level in the block, where
interpolation was off by up to the block).

Post-processing of the released CDF and of the public noise only (no data, no privacy cost).
A bin counts as an atom when its released mass is at least :data:`ATOM_SHARE` of the released
total, at least :data:`ATOM_RATIO` times each neighbouring bin's, and at least
:data:`NOISE_SCALES` standard errors of its own count: smooth data spread over the default
2,048 bins never has one bin ten times its neighbours (it would also need 2% of the records),
and the last condition is a guard against the steps that the monotone projection of a noisy
CDF can make at small ``n·ε`` (a flat run, then one bin holding a jump of the noise's size). In
``benchmarks/unknown_bounds.py`` (ε·n = 100 to 10^4) the continuous columns' answers are the
same with or without the snapping.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["ATOM_RATIO", "ATOM_SHARE", "NOISE_SCALES", "snap_to_atoms"]

#: A bin is an atom when its released mass is at least this share of the released total...
ATOM_SHARE = 0.02
#: ... and at least this many times the released mass of each neighbouring bin.
ATOM_RATIO = 10.0
#: ... and at least this many standard errors of its count (the release's public noise).
NOISE_SCALES = 6.0


def snap_to_atoms(
    edges: np.ndarray,
    cdf: np.ndarray,
    q: np.ndarray,
    answers: np.ndarray,
    bin_stderr: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> np.ndarray:
    """The answers, each moved to its bin's nearer edge (in rank) when the bin is an atom.

    Parameters
    ----------
    edges : ndarray
        The bins' ``B + 1`` numeric edges, increasing.
    cdf : ndarray
        The released consistent CDF at the edges (``B + 1`` values, non-decreasing, from 0).
    q : ndarray
        The levels, in ``[0, 1]``.
    answers : ndarray
        The interpolated answers for ``q`` (each within ``[edges[0], edges[-1]]``).
    bin_stderr : callable, optional
        ``bin_stderr(a, b)``: the standard error of the released count of each range ``[a,
        b)`` (``Release.stderr("range_count", a, b)``: public). None: no noise condition.

    Returns
    -------
    ndarray
        Float answers, non-decreasing in ``q`` when ``answers`` are (the edge chosen in a bin
        moves up with ``q``).
    """
    edges = np.asarray(edges, dtype=np.float64)
    cdf = np.asarray(cdf, dtype=np.float64)
    out = np.array(answers, dtype=np.float64, copy=True)
    total = float(cdf[-1])
    if edges.size < 2 or not total > 0:
        return out
    mass = np.diff(cdf)
    neighbour = np.maximum(np.r_[0.0, mass[:-1]], np.r_[mass[1:], 0.0])
    atom = (mass >= ATOM_SHARE * total) & (mass >= ATOM_RATIO * neighbour)
    bins = np.clip(np.searchsorted(edges, out, side="right") - 1, 0, mass.size - 1)
    # An answer on an inner edge belongs to the bin above it; the bin below is the one the
    # CDF reached q·n̂ in when that bin is the atom (its end).
    on_edge = (out == edges[bins]) & (bins > 0)
    bins = np.where(on_edge & atom[bins - 1] & ~atom[bins], bins - 1, bins)
    if bin_stderr is not None and bool(np.any(atom[bins])):  # only the answers' bins
        noise = np.asarray(bin_stderr(edges[bins], edges[bins + 1]), dtype=np.float64)
        atom = atom.copy()
        atom[bins] &= mass[bins] >= NOISE_SCALES * noise
    target = np.asarray(q, dtype=np.float64) * total
    lower = target - cdf[bins] <= cdf[bins + 1] - target
    # The end bins: records beyond the bounds are clamped onto them, and a lower bound such as
    # 0 is often the value of the block (zero-inflated columns): answer the bound itself.
    lower = np.where(bins == 0, True, np.where(bins == mass.size - 1, False, lower))
    snapped = np.where(lower, edges[bins], edges[bins + 1])
    return np.where(atom[bins], snapped, out)
