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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.value_methods.bounds_warnings import PUBLIC_ONLY_WIDEN, PUBLIC_WIDEN

if TYPE_CHECKING:
    from treedp.release.record import Release

__all__ = ["FLAG_SHARE", "groups_bounds_warning", "low_signal", "median_stderr"]

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


def groups_bounds_warning(
    releases: Mapping[Any, Release], share: float | None = None
) -> str | None:
    """One warning for the keys of a grouped release whose end bins hold much released mass
    (:meth:`Release.bounds_warning` per key, keys of :func:`low_signal` aside), else None:
    how many keys, the first key's
    warning, and only the advice such a release can take (public bounds: private bounds are
    not available per group or per person). Keys are public or released; post-processing.
    A grouped release warned of nothing before (a new user's run: 29% of every region's mass
    clamped into the last bin, every 90th percentile answered at the bound, no warning)."""
    flagged = {  # keys with too little signal are noise: their end bins say nothing
        k: w
        for k, r in releases.items()
        if not low_signal(r) and (w := r.bounds_warning(share=share))
    }
    if not flagged:
        return None
    key, text = next(iter(flagged.items()))
    text = text.replace(PUBLIC_WIDEN, PUBLIC_ONLY_WIDEN)
    return f"{len(flagged)} of {len(releases)} groups warn; group {key!r}: {text}"
