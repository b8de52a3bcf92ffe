"""The warning a release's released counts give about its bounds (post-processing, free)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from treedp.value_methods.bounds_split import integer_cut_warning
from treedp.value_methods.bounds_warnings import few_records_warning, grid_end_warning

if TYPE_CHECKING:
    from treedp.release import Release

__all__ = ["bounds_warning"]


def bounds_warning(release: Release, *, share: float | None = None) -> str | None:
    """A warning when the bounds look too narrow, else None (post-processing, no cost).

    Values outside the bounds are clamped into the end bins, so an end bin holding much of the
    released mass suggests bounds narrower than the data. Privately found bounds also warn
    when a scan ran off the public grid or too few records were released for its allowance.

    Parameters
    ----------
    release : Release
        The release.
    share : float, optional
        The share of ``n̂`` an end bin may hold before the warning; default
        ``max(0.1, 5/B)`` (five times an even spread, and at least 10%).

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_counts([0, 1, 2, 0, 0, 0, 1, 0, 0, 900], epsilon=1.0,
    ...                              rng=treedp.InsecureSeededSource(1))
    >>> print(rel.bounds_warning())  # doctest: +ELLIPSIS
    The last bin holds ...% of the released mass: values above the upper bound may ...
    """
    counts = release.consistent_counts
    n_hat = float(counts[-1])
    step = release.bounds_step
    if step is not None:  # bounds found privately: did a scan run off the grid?
        lo, hi = step["stops"]
        off = grid_end_warning(lo, hi, step.get("known"))
        if off is not None:
            return off
        if "cut" in step:  # an integer range cut to the mechanism's limit
            return integer_cut_warning(int(step["cut"]))
        if "allowance" in step:  # too few records released for the scans?
            few = few_records_warning(step["allowance"], n_hat)
            if few is not None:
                return few
    n_bins = release.bins.n_bins
    limit = max(0.1, 5.0 / n_bins) if share is None else float(share)
    if n_bins < 3 or not n_hat > 0:
        return None
    per_bin = np.diff(counts)
    ends = [("first", "below the lower", per_bin[0]), ("last", "above the upper", per_bin[-1])]
    found = [(name, side, c / n_hat) for name, side, c in ends if c / n_hat > limit]
    if not found:
        return None
    parts = "; ".join(
        f"The {name} bin holds {100 * frac:.0f}% of the released mass: values {side} bound "
        "may have been clamped into it"
        for name, side, frac in found
    )
    return f"{parts}. The bounds look too narrow; quantiles near that end are unreliable."
