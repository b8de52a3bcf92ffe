"""The run of a query for one distribution (one row per record, no privacy unit): the
stages of :func:`treedp.run.run` for :func:`treedp.release_cdf` and :func:`treedp.release_counts`.

Plan the record-level mechanism from the query's spec (a plan passed, cached or made); ask the
accountant whether it can take the whole spend before any value is read; with private bounds
scan the data for them first (:func:`treedp.bounds_stage.run_bounds_stage`, which charges the
whole epsilon); count the data with the engine that accepts it (the engine table); charge once,
after the read and before any noise; noise the counts and wrap them in a
:class:`~treedp.release.Release`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from treedp._validation import must, warn_user
from treedp._version import __version__
from treedp.bounds_stage import n_differs, run_bounds_stage
from treedp.config import configure
from treedp.domain import Bins
from treedp.engines.dispatch import count_source
from treedp.exceptions import BoundsWarning, DataError, InvalidParameterError
from treedp.mechanisms import Mechanism
from treedp.noise import RandomSource
from treedp.privacy.accountant import Accountant
from treedp.query import Query, approx_target, zoned_bins
from treedp.release import Release
from treedp.spec import ReleaseSpec

__all__ = ["check_counts", "counts_array", "noise_release", "run_release"]


def run_release(query: Query) -> Release:
    """Run a query for one distribution of one row per record: read, charge once, noise,
    wrap."""
    bounds_step = query.found  # bounds found beforehand (treedp.private_bounds), or None
    if query.private_bounds is not None:  # charges the whole epsilon once, before its noise
        query, bounds_step = _after_private_bounds(query)
    assert query.bins is not None
    mech, est = configure(query.release_spec, plan=query.plan, plan_cache=query.plan_cache)
    accountant = query.accountant
    if accountant is not None:  # a spend it cannot take is refused before the data is read
        accountant.check(mech.spend())
    if query.counts:
        counts = check_counts(query.data, query.bins.n_bins)
    else:
        counts = count_source(
            query.data,
            column=query.column,
            bins=query.bins,
            nan=query.release_spec.nan,  # type: ignore[arg-type]
            progress=query.progress,
            engine=query.engine,
        ).counts
    release = noise_release(
        counts, query.release_spec, query.bins, mech, est, query.rng, accountant, bounds_step
    )
    # Bounds that look wrong (much released mass in an end bin, or a private scan off its
    # grid): post-processing of the released counts and stops, never of the data's.
    warning = release.bounds_warning()
    if warning is not None:  # named by its column (public) when a table's: treedp.profile
        where = f"Column '{query.column}': " if query.column is not None else ""
        warn_user(where + warning, BoundsWarning)  # a profile's thread: held for its caller
    return release


def _after_private_bounds(query: Query) -> tuple[Query, dict[str, Any]]:
    """The private-bounds stage; the query that releases on the bounds found, with the rest
    of epsilon and no accountant (the stage charged the whole epsilon)."""
    assert query.private_bounds is not None and query.epsilon is not None
    bounds, request, rest, step = run_bounds_stage(query)
    the_bins = zoned_bins(query.data, query.column, request, bounds, None)
    spec = replace(query.release_spec, bins=the_bins, epsilon=rest)  # validated again, as a spec is
    return replace(query, spec=spec, bins=the_bins, private_bounds=None, accountant=None), step


def noise_release(
    counts: np.ndarray,
    spec: ReleaseSpec,
    the_bins: Bins,
    mech: Mechanism,
    est: str,
    source: RandomSource,
    accountant: Accountant | None = None,
    bounds_step: dict[str, Any] | None = None,
) -> Release:
    """Noise one distribution's validated counts and wrap them (charged first)."""
    total = int(counts.sum())
    if spec.n is not None and total != spec.n:
        raise n_differs()
    mech.check_domain(total)
    if accountant is not None:  # committed before any noise is drawn (fail closed)
        accountant.charge(mech.spend())
    mech, noisy = mech.release_blocks(counts, source)  # DAWA: its private partition too
    return Release(
        bins=the_bins,
        mechanism=mech,
        noisy_levels=noisy,
        estimator=est,
        randomness=source.describe(),
        library_version=__version__,
        postprocess=spec.postprocess,
        integer=spec.integer,
        bounds_step=bounds_step,
        target=approx_target(spec.privacy),
    )


def check_counts(counts: Any, n_bins: int) -> np.ndarray:
    """Bin counts made elsewhere as int64, after checks whose messages name no count, value
    or length."""
    arr = counts_array(counts)
    if arr.size != n_bins:
        raise InvalidParameterError(
            must("counts", "hold one count per bin: its length differs from the number of bins.")
        )
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            integral = np.isfinite(arr).all() and bool((arr == np.floor(arr)).all())
        if not integral:
            raise DataError(must("counts", "hold whole numbers (no NaN or fractions)."))
        if (np.abs(arr) >= 2.0**53).any():
            raise DataError("The 'counts' parameter holds a count too large to be exact.")
    elif arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise DataError("The 'counts' parameter holds a count too large for int64.")
    if arr.size and arr.min() < 0:  # one pass, no boolean array
        raise DataError(must("counts", "hold non-negative counts."))
    # read only from here on (aggregated into new arrays): int64 counts are not copied
    out = arr.astype(np.int64, copy=False)
    if out.size and int(out.max()) > np.iinfo(np.int64).max // max(1, out.size):
        raise DataError("The 'counts' parameter holds counts whose total overflows int64.")
    return out


def counts_array(counts: Any) -> np.ndarray:
    """``counts`` as a one-dimensional numeric array (its type and shape checked)."""
    from treedp.exceptions import InvalidTypeError

    if isinstance(counts, np.ndarray) and counts.ndim == 1 and counts.dtype.kind in "iuf":
        return counts
    if isinstance(counts, str | bytes) or np.isscalar(counts):
        raise InvalidTypeError(must("counts", "be a one-dimensional array of counts."))
    try:
        arr = np.asarray(counts)
    except (ValueError, TypeError):
        raise InvalidTypeError(must("counts", "be a one-dimensional array of counts.")) from None
    if arr.ndim != 1:
        raise InvalidTypeError(must("counts", "be one-dimensional."))
    if arr.dtype.kind not in "iuf":
        raise InvalidTypeError(
            must(
                "counts", f"hold integers (or floats with integral values); got dtype {arr.dtype}."
            )
        )
    return arr
