"""Quantiles of discrete data as values of the domain, read from a released CDF alone.

On integer bins (``Bins.discrete``: one bin per integer ``v``, the bin ``[v, v + 1)``) a
quantile interpolated inside a bin (37.4) counts as the integer below it and so lands on the
wrong side of a block of tied values. :func:`discrete_quantile_from` instead returns an
integer of the domain: the one whose released CDF ``F̂(v) = #̂{x <= v}`` is nearest the target
rank ``q · n̂``, the smallest such integer on ties. It reads only the release's consistent
(non-decreasing) prefix counts, so it is post-processing: it costs no privacy.

Why this rule: the rank error of an answer ``v`` is ``|#{x <= v} - q n|``; ``F̂(v)`` estimates
``#{x <= v}`` and ``n̂`` estimates ``n``, so the integer minimising ``|F̂(v) - q n̂|`` minimises
the estimated rank error. The best any answer can do on tied data is ``min_v |#{x <= v} - q
n|`` (the tie floor); with accurate counts this rule reaches it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.domain import Bins
from treedp.exceptions import InvalidParameterError

__all__ = ["discrete_quantile_from", "nearest_rank_index"]


def nearest_rank_index(cdf: np.ndarray, target: np.ndarray) -> np.ndarray:
    """For each target, the smallest index ``j`` minimising ``|cdf[j] - target|``.

    ``cdf`` must be non-decreasing (non-empty). The answer is non-decreasing in the target:
    the nearest value of a sorted sequence moves right as the target grows, and ties go left.
    """
    cdf = np.asarray(cdf, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    size = cdf.size
    above = np.clip(np.searchsorted(cdf, target, side="left"), 0, size - 1)
    below = np.clip(above - 1, 0, size - 1)
    # The first index holding the value just below the target (flat runs go to their start).
    below = np.searchsorted(cdf, cdf[below], side="left")
    pick_below = (above > 0) & (target - cdf[below] <= cdf[above] - target)
    return np.where(pick_below, below, above)


def discrete_quantile_from(bins: Bins, mono: Any, q: Any) -> np.ndarray:
    """The ``q``-quantiles among the integers of a discrete domain, from a released CDF.

    Parameters
    ----------
    bins : Bins
        Discrete bins (``bins.discrete``): bin ``j`` holds the integer ``edges[j]``.
    mono : array-like
        Consistent (non-decreasing) prefix counts of length ``n_bins + 1``: ``mono[j]``
        estimates the number of values below ``edges[j]``, ``mono[-1] = n̂`` (for example
        ``Release.consistent_counts``).
    q : float or array-like
        Levels in ``[0, 1]``.

    Returns
    -------
    ndarray of float
        Shaped like ``q``: for each level the integer ``v`` of the domain whose released CDF
        ``mono[j + 1]`` (the estimate of ``#{x <= v}``) is nearest ``q · n̂``, the smallest on
        ties; non-decreasing in ``q``. NaN when ``n̂`` is not positive.

    Raises
    ------
    InvalidParameterError
        If the bins are not discrete, ``mono`` has the wrong length or ``q`` is outside
        ``[0, 1]``.

    Notes
    -----
    Post-processing of the release: no data is read and no privacy is spent. Wire-up in
    :meth:`Release.quantile`: for discrete bins,
    ``discrete_quantile_from(self.bins, self.consistent_counts, qa)``.
    """
    if not bins.discrete:
        raise InvalidParameterError("discrete_quantile_from needs discrete (integer) bins.")
    mono = np.asarray(mono, dtype=np.float64)
    if mono.shape != (bins.n_bins + 1,):
        raise InvalidParameterError("'mono' must hold n_bins + 1 prefix counts.")
    qa = np.asarray(q, dtype=np.float64)
    if np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    n_hat = float(mono[-1])
    values = bins.edges[:-1].astype(np.float64)
    j = nearest_rank_index(mono[1:], qa.ravel() * n_hat)
    out = np.where(n_hat > 0, values[j], np.nan).reshape(qa.shape)
    return out
