"""A release as data: a table of one row per bin with its intervals (dict of arrays, or a
DataFrame), and the warning its released counts give about its bounds."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.exceptions import MissingDependencyError
from treedp.release import inference, queries
from treedp.value_methods.bounds_split import integer_cut_warning
from treedp.value_methods.bounds_warnings import (
    PRIVATE_WIDEN,
    PUBLIC_ONLY_WIDEN,
    PUBLIC_WIDEN,
    at_bound_warning,
    few_records_warning,
    grid_end_warning,
    in_found_end_bins,
    neighbours_ruled_out,
)

if TYPE_CHECKING:
    from treedp.release import Release
    from treedp.release.grouped import GroupedRelease

__all__ = [
    "bounds_warning",
    "clamped_quantiles",
    "grouped_frame",
    "release_arrays",
    "release_frame",
]


def release_arrays(release: Release, *, level: float = 0.95) -> dict[str, np.ndarray]:
    """The release as a plain dict of equal-length arrays, one row per bin.

    Parameters
    ----------
    release : Release
        The release.
    level : float, default=0.95
        Coverage of the intervals, as for :meth:`Release.confidence_interval`.

    Returns
    -------
    dict of str to ndarray
        ``left``, ``right`` (the bin's edges; datetime64 for datetime bins), ``count``
        (consistent count per bin), ``count_low``, ``count_high`` (its interval), ``cdf``
        (consistent count below ``right``), ``cdf_low``, ``cdf_high`` (its interval; the
        interval columns are NaN where :attr:`Release.offers_intervals` is False). On a bound
        found from the records the end row's intervals also hold the records clamped into it
        from beyond (as :meth:`Release.confidence_interval`'s do).

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
    ...                              rng=treedp.InsecureSeededSource(1))
    >>> table = rel.to_arrays()
    >>> sorted(table)
    ['cdf', 'cdf_high', 'cdf_low', 'count', 'count_high', 'count_low', 'left', 'right']
    >>> table["left"].tolist(), table["right"].tolist()
    ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    """
    level = inference.check_level(level)
    bins = release.bins
    edges = release.edges
    m = np.arange(bins.n_bins + 1)
    if release.offers_intervals:
        mechanism = release.mechanism
        cap = mechanism.n if mechanism.neighbours == "replace" else None  # n public: at most n
        gaussian = mechanism.guarantee_kind == "zcdp"  # as confidence_interval reads it
        # an end bin at a found bound also holds records clamped from beyond its edge: the
        # counts below its edges are bracketed as confidence_interval brackets them
        a_lo, a_hi = release._clamped_ends(m[:-1], m[:-1])
        b_lo, b_hi = release._clamped_ends(m[1:], m[1:])
        low, high = release._edge_range(b_lo, a_hi), release._edge_range(b_hi, a_lo)
        count_low, count_high = inference.bracket_interval(low, high, level, cap, gaussian=gaussian)
        low, high = (release._prefix_query(queries.prefix_terms(bins, b)) for b in (b_lo, b_hi))
        cdf_low, cdf_high = inference.bracket_interval(low, high, level, cap, gaussian=gaussian)
    else:  # no honest interval exists (see offers_intervals): NaN, not a wrong number
        count_low = count_high = cdf_low = cdf_high = np.full(bins.n_bins, np.nan)
    counts = release.consistent_counts
    return {
        "left": edges[:-1].copy(),
        "right": edges[1:].copy(),
        "count": np.diff(counts),
        "count_low": count_low,
        "count_high": count_high,
        "cdf": np.array(counts[1:]),
        "cdf_low": cdf_low,
        "cdf_high": cdf_high,
    }


def release_frame(release: Release, *, level: float = 0.95) -> Any:
    """:func:`release_arrays` as a :class:`pandas.DataFrame` (needs ``treedp[pandas]``).

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
    ...                              rng=treedp.InsecureSeededSource(1))
    >>> rel.to_frame().shape
    (3, 8)
    """
    columns = release_arrays(release, level=level)
    return _frame(
        columns, "Release.to_frame", " (or use Release.to_arrays for a dict of numpy arrays)"
    )


def grouped_frame(grouped: GroupedRelease, q: Any, **options: Any) -> Any:
    """:meth:`GroupedRelease.table` of the quantiles ``q`` (and its ``level`` / ``rng``
    options) as a pandas DataFrame."""
    return _frame(grouped.table(q, **options), "GroupedRelease.to_frame", "")


def _frame(columns: dict[str, Any], what: str, instead: str) -> Any:
    try:
        import pandas as pd
    except ImportError:
        raise MissingDependencyError(
            f"{what} needs pandas: pip install 'treedp[pandas]'{instead}."
        ) from None
    return pd.DataFrame(columns)


def bounds_warning(release: Release, *, share: float | None = None) -> str | None:
    """A warning when much released mass sits in an end bin, else None (post-processing, no
    cost).

    Values outside the bounds are clamped into the end bins, but the released counts cannot
    tell clamped records from records that lie in the end bin: an end bin holding much of
    the mass means clamped records (bounds too narrow), a point mass at the bound (many
    records equal to it, such as zeros at a lower bound of 0), or bounds much wider than the
    data (all of it in the first or last few bins). The text says what the release shows and
    what to do in each case. Privately found bounds also warn when a scan ran off the public
    grid or too few records were released for its allowance.

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
    The last bin holds ...% of the released mass. The counts cannot tell why; it can ...
    """
    counts = release.consistent_counts
    n_hat = float(counts[-1])
    step = release.bounds_step
    if step is not None:  # bounds found privately: did a scan run off the grid?
        lo, hi = step["stops"]
        off = grid_end_warning(lo, hi, step.get("known"), step.get("grid"))
        if off is not None and not neighbours_ruled_out(off, step.get("allowance"), n_hat):
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
    first, last = counts[1] - counts[0], counts[-1] - counts[-2]  # no B-long np.diff
    ends = [("first", "lower", "below", first), ("last", "upper", "above", last)]
    found = [(name, bound, side, c / n_hat) for name, bound, side, c in ends if c / n_hat > limit]
    if not found:
        return None
    bins = release.bins
    return end_mass_text(
        found,
        bins.discrete,
        private=step is not None,
        integers=bins.integers,
        public_only=release.unit is not None,  # a per-person release: public bounds only
    )


def end_mass_text(
    found: list[tuple[str, str, str, float]],
    discrete: bool = False,
    *,
    private: bool = False,
    integers: bool = False,
    public_only: bool = False,
) -> str:
    """The warning for end bins holding much released mass: ``(bin, bound, side, share)``
    per end (``("first", "lower", "below", 0.92)``), shares of the released total;
    ``discrete``: one bin per integer (a quantile in a point mass is then the bound);
    ``private``: the bounds were found privately (widening them is then the user's to do with
    public bounds, not ``bounds='private'`` again); ``integers``: bins of whole integers (the
    data are already read as integers: no advice to); ``public_only``: private bounds are not
    available (a group-by or per-person release)."""
    if len(found) == 1:
        (name, bound, side, frac) = found[0]
        held = f"The {name} bin holds {100 * frac:.0f}% of the released mass"
        beyond, at = f"records {side} the {bound} bound", f"the {bound} bound"
    else:
        held = (
            f"The first bin holds {100 * found[0][3]:.0f}% and the last bin "
            f"{100 * found[1][3]:.0f}% of the released mass"
        )
        beyond, at = "records beyond a bound", "a bound"
    mass = "the bounds can stay"
    if not discrete:  # one bin per integer: a block's quantile is its value already
        mass += "; a quantile in an end bin holding such a block is answered at the bound"
    if not integers:
        mass += ", and on integer data bins='integers' reads every integer exactly"
    widen = PRIVATE_WIDEN if private else PUBLIC_ONLY_WIDEN if public_only else PUBLIC_WIDEN
    return (
        f"{held}. The counts cannot tell why; it can mean {beyond} clamped into it ({widen}), "
        f"many records at {at} itself (a point mass such "
        f"as zeros: {mass}), or bounds much wider than the data (narrow them, or use more "
        "bins, for finer quantiles)."
    )


def clamped_quantiles(release: Release, levels: np.ndarray, answers: np.ndarray) -> str | None:
    """The warning for quantiles of a release on privately found bounds that lie in an end
    bin at a level within two of the scans' allowances of records of that end of the
    released total (:func:`~treedp.value_methods.bounds_warnings.in_found_end_bins`): the
    records the scans leave beyond a found bound are clamped into its end bin and may hold
    the quantile (Adult ``hours_per_week`` profiled at ε = 0.1: bounds ``[11, 64]``, q = 0.99
    answered 63, true 80, 1,634 records above 64). Else None. ``answers`` on the bins' numeric
    axis. Post-processing of released values."""
    step = release.bounds_step
    if step is None or not step.get("allowance") or release.bins.n_bins < 2:
        return None
    n_hat = float(release.consistent_counts[-1])
    edges = release.bins.edges
    if n_hat > 0 and in_found_end_bins(answers, levels, edges, step["allowance"], n_hat):
        return at_bound_warning(step["allowance"])
    return None
