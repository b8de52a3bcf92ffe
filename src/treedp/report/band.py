"""A simultaneous confidence band for the CDF of a release (what the CDF plot draws)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from treedp._validation import (
    check_level,
    check_option,
    check_simulations,
    enough_simulations,
    must,
)
from treedp.estimation import band_critical_value
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.release.inference import noise_errors, tail_factor

if TYPE_CHECKING:
    from treedp.release import Release

__all__ = ["CDFBand", "band_index", "cdf_band"]

#: "auto" simulates when ``(B + 1) · simulations`` is at most this (about a second).
_SIMULATION_BUDGET = 2**22


@dataclass(frozen=True)
class CDFBand:
    """A simultaneous confidence band for the CDF, at a public subset of the bin edges.

    Attributes
    ----------
    index : ndarray of int
        The prefix indices ``m`` evaluated (``P[m]`` counts the values in bins ``[0, m)``).
    estimate : ndarray
        The unbiased prefix estimates at ``index``.
    low, high : ndarray
        With probability at least ``level``, ``low[k] <= P[index[k]] <= high[k]`` for every
        ``k`` at once (and ``low[k] <= F(x) <= high[k + 1]`` between evaluated edges).
    level : float
        The simultaneous coverage.
    method : str
        ``"simulation"`` or ``"bonferroni"`` (see :func:`cdf_band`).
    """

    index: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    method: str


def band_index(n_bins: int, max_points: int) -> np.ndarray:
    """All prefix indices ``0..B``, or an evenly spaced subset of ``max_points`` with both ends."""
    if n_bins + 1 <= max_points:
        return np.arange(n_bins + 1)
    return np.unique(np.linspace(0, n_bins, max_points).round().astype(np.int64))


def cdf_band(
    release: Release,
    *,
    level: float = 0.95,
    max_points: int = 256,
    method: str = "auto",
    simulations: int = 1000,
    rng: RandomSource | None = None,
) -> CDFBand:
    """A simultaneous confidence band for the CDF of a release (no matplotlib needed).

    ``P̂[m] ± c·se[m]`` around the unbiased prefix estimates with their exact standard errors,
    tightened by monotonicity, holding for all evaluated ``m`` at once with probability
    ``level``. ``c`` is the ``level``-quantile of ``max_m |error[m]| / se[m]`` over simulations
    of the public noise alone (``"simulation"``, no privacy cost), or the per-point factor at
    level ``1 - (1 - level)/k`` for ``k`` points with the union bound (``"bonferroni"``:
    wider, fast for any number of bins); ``"auto"`` simulates when
    ``(B + 1)·simulations <= 2**22`` and ``simulations >= level / (1 - level)`` (the rank of
    the critical value must exist). Between two evaluated edges the non-decreasing CDF lies
    between the left lower and the right upper bound, so a subset of edges loses nothing.

    Parameters
    ----------
    release : Release
        The release.
    level : float, default=0.95
        Simultaneous coverage, in ``(0, 1)``.
    max_points : int, default=256
        At most this many edges are evaluated (at least 2).
    method : {"auto", "simulation", "bonferroni"}, default="auto"
        How the critical value is chosen.
    simulations : int, default=1000
        Noise simulations for ``"simulation"`` (at least 100, and at least
        ``level / (1 - level)`` there).
    rng : RandomSource, optional
        Randomness for the simulation (default: the operating system's).

    Returns
    -------
    CDFBand
    """
    level = check_level(level)
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 2:
        raise InvalidParameterError(
            must("max_points", f"be an int >= 2. Got {max_points!r} instead.")
        )
    method = check_option(method, "method", ("auto", "simulation", "bonferroni"))
    simulations = check_simulations(simulations, level if method == "simulation" else None)
    n_bins = release.bins.n_bins
    idx = band_index(n_bins, max_points)
    estimate = np.asarray(release.prefix_counts, dtype=np.float64)[idx]
    se = np.sqrt(np.maximum(np.asarray(release.prefix_variance, dtype=np.float64)[idx], 0.0))
    if method == "auto":
        fits = (n_bins + 1) * simulations <= _SIMULATION_BUDGET
        method = "simulation" if fits and simulations >= enough_simulations(level) else "bonferroni"
    if method == "simulation":
        batch = max(1, min(256, 2**21 // (n_bins + 1)))
        errors = noise_errors(release.mechanism, release.estimator, simulations, rng, idx, batch)
        crit = band_critical_value(errors, se, level)
    else:
        live = int(np.count_nonzero(se > 0)) or 1
        crit = tail_factor((1.0 - level) / live)
    low = np.maximum.accumulate(np.maximum(estimate - crit * se, 0.0))
    high = np.minimum.accumulate((estimate + crit * se)[::-1])[::-1]
    high = np.maximum(high, low)  # an empty band after tightening still brackets nothing wrongly
    return CDFBand(idx, estimate, low, high, level, method)
