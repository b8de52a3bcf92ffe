"""Quantiles of discrete data as values of the domain, read from a released CDF alone.

On integer bins (one bin ``[v, v + 1)`` per integer ``v``) a quantile interpolated inside a bin
lands on the wrong side of a block of tied values. :func:`discrete_quantile_from` returns the
smallest ``v`` whose released CDF ``F̂(v)`` reaches ``q · n̂`` (the inverse CDF, numpy's
``method="inverted_cdf"``): post-processing of the consistent prefix counts, no privacy cost.

Why: ``v`` holds the ranks ``#{x < v} + 1 .. #{x <= v}``, and its rank error is the distance
from ``q n`` to that interval; the ``v`` whose estimated interval ``[F̂(v - 1), F̂(v)]`` holds
``q n̂`` minimises the estimated error. (The ``v`` with ``F̂(v)`` nearest ``q n̂`` answers the
value below a block of ties when ``q n`` is in its lower half: the median of ten 1s, eighty
2s and ten 3s came out 1.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.domain import Bins
from treedp.exceptions import InvalidParameterError

__all__ = ["discrete_quantile_from", "inverse_rank_index"]


def inverse_rank_index(cdf: np.ndarray, target: np.ndarray) -> np.ndarray:
    """For each target, the smallest ``j`` with ``cdf[j] >= target`` (else the last index);
    for a target of 0, the smallest ``j`` with ``cdf[j] > 0``.

    ``cdf`` is non-decreasing and non-empty. A target within a relative ``1e-12`` of the total
    (rounding of ``q · n̂``) counts as reached.
    """
    cdf = np.asarray(cdf, dtype=np.float64)
    target = np.asarray(target, dtype=np.float64)
    slack = 1e-12 * max(1.0, abs(float(cdf[-1])))
    reach = np.searchsorted(cdf, target - slack, side="left")
    # q = 0: the data's minimum (the first index holding a record), not the lower bound
    first = np.searchsorted(cdf, slack, side="right")
    return np.clip(np.where(target <= 0, first, reach), 0, cdf.size - 1)


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
        Shaped like ``q``: for each level the smallest integer ``v`` of the domain whose
        released CDF ``mono[j + 1]`` (the estimate of ``#{x <= v}``) reaches ``q · n̂``;
        non-decreasing in ``q``. NaN when ``n̂`` is not positive.

    Raises
    ------
    InvalidParameterError
        If the bins are not discrete, ``mono`` has the wrong length or ``q`` is outside
        ``[0, 1]``.
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
    j = inverse_rank_index(mono[1:], qa.ravel() * n_hat)
    return np.where(n_hat > 0, values[j], np.nan).reshape(qa.shape)
