"""Too little signal: the one rule that flags a released distribution whose quantiles are
unreliable, from released and public quantities only (post-processing, no privacy cost).

A key of a grouped release (or any release) is flagged when its estimated count ``n̂`` is at
most 0, or when the exact standard error of its CDF at its released median exceeds
:data:`FLAG_SHARE` of ``n̂`` (a 95% interval for the share of values below the median is then
wider than about ``±2·FLAG_SHARE``). :meth:`GroupedRelease.table` / ``to_frame``, the CLI's
``treedp query`` and the HTML report (:mod:`treedp.report.grouped`) all use it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from treedp.release.record import Release

__all__ = ["FLAG_SHARE", "low_signal", "median_stderr"]

#: A key is flagged when the standard error of its CDF at its median exceeds this share of n̂.
FLAG_SHARE = 0.05


def median_stderr(release: Release) -> float:
    """The exact standard error of the unbiased count below the released median's edge
    (public variance at a released position), in records; NaN when nothing was released."""
    counts = np.asarray(release.consistent_counts, dtype=np.float64)
    n_hat = float(counts[-1])
    if not n_hat > 0:
        return math.nan
    m = int(np.searchsorted(counts, 0.5 * n_hat, side="left"))
    return float(math.sqrt(max(float(release.prefix_variance[m]), 0.0)))


def low_signal(release: Release, share: float = FLAG_SHARE) -> bool:
    """Too little signal: ``n̂ <= 0``, or the CDF's standard error at the released median above
    ``share`` of ``n̂`` (a 95% interval for the share of values below the median then spans
    more than about ``±2·share``). Decided from released and public quantities only."""
    n_hat = release.n
    if not n_hat > 0:
        return True
    return median_stderr(release) > share * n_hat
