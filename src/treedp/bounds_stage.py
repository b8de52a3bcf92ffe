"""The private-bounds stage of a release: ``release_cdf(bounds="private")``.

Every public parameter of the release is checked first, on stand-in bounds with the budget the
release will have after the stage (public); then the data are scanned (one counting pass over
the public grid, or the column in memory), the whole ε is charged once, and the bounds are
found with ``share · ε`` (:func:`treedp.mechanisms.private_bounds.split_private_bounds`). The
release then runs on the found bounds with the rest, without charging again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from treedp.config import configure
from treedp.domain import MAX_BINS, make_bins, public_bins
from treedp.engines.dispatch import count_source
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.registry import mechanism_class
from treedp.spec import make_spec

__all__ = ["PRIVATE_BOUNDS_RECORD", "n_differs", "private_bounds_charge", "run_bounds_stage"]


def run_bounds_stage(
    values: Any,
    *,
    request: tuple[Any, Any],
    bounds: Any,
    bins: Any,
    edges: Any,
    epsilon: float | None,
    share: float,
    neighbours: Any,
    n: int | None,
    mechanism: str,
    branching: Any,
    level_budgets: Any,
    estimator: str | None,
    postprocess: str,
    integer: bool,
    nan: Any,
    plan: Any,
    plan_cache: Any,
    column: str | None,
    progress: bool | None,
    engine: Any,
    rng: Any,
    accountant: Any,
) -> tuple[Any, float, dict[str, Any]]:
    """Check, charge once and find the bounds; returns the bounds, the ε left for the
    release and the bounds step's record (kept in the release)."""
    from treedp.value_methods.bounds_split import split_private_bounds
    from treedp.value_methods.private_bounds import check_known_bound

    lower, upper = request
    known = check_known_bound(lower, upper, bins == "integers", "bounds")

    _refuse_unsupported(bins, edges, epsilon, branching, level_budgets)
    assert epsilon is not None  # checked just above
    from treedp.value_methods.bounds_split import remaining_epsilon

    # Every parameter is checked (on stand-in bounds, with the budget the release will
    # have after the bounds step: public) before any budget is spent; the tree's shape
    # too when the caller fixes it (the stand-in has the same number of bins).
    stand_in = make_spec(
        public_bins((0, 1), bins, None),
        remaining_epsilon(epsilon, share, neighbours, known is not None),
        neighbours,
        n,
        mechanism,
        branching,
        level_budgets,
        estimator,
        postprocess,
        integer,
        nan=nan,
    )
    # The stand-in is configured in full (the relation, a public n, the mechanism's own
    # checks): nothing public may refuse after the bounds' charge. Its plan is kept for
    # the release, which has the same bins (equal-width) and budget.
    configure(stand_in, plan=plan if bins != "integers" else None, plan_cache=plan_cache)
    max_bins = MAX_BINS if mechanism == "auto" else mechanism_class(mechanism).max_bins
    charge = private_bounds_charge(epsilon, share, bins, neighbours, nan, bounds)
    if accountant is not None:  # a spend it cannot take is refused before the data is read
        accountant.check(charge)
    scanned = bounds_input(values, column, stand_in.nan, progress, engine)
    if stand_in.n is not None and records_read(scanned) != stand_in.n:
        raise n_differs()  # public under replace: refused before the bounds' charge
    found, epsilon, found_by = split_private_bounds(
        scanned,
        epsilon=epsilon,
        share=share,
        integers=bins == "integers",
        neighbours=neighbours,
        nan=nan,
        rng=rng,
        accountant=accountant,  # charged the whole epsilon once, before any noise
        lower=lower,
        upper=upper,
        charge=charge,
        max_bins=max_bins,
    )
    bounds = (int(found[0]), int(found[1])) if bins == "integers" else found
    bounds_step = {
        "method": "private_bounds",
        "stops": [float(v) for v in found_by.stops],
        "epsilon": found_by.epsilon_spent,
        "share": share,
        "allowance": found_by.allowance,
        "lo": float(bounds[0]),
        "hi": float(bounds[1]),
    }
    if known is not None:  # that side was the caller's public bound
        bounds_step["known"] = known
    if (found[0], found[1]) != (found_by.lo, found_by.hi):  # integers cut to max_bins
        bounds_step["cut"] = max_bins
    return bounds, epsilon, bounds_step


def _refuse_unsupported(
    bins: Any, edges: Any, epsilon: float | None, branching: Any, level_budgets: Any
) -> None:
    """The public parameters private bounds cannot take (refused before anything is read)."""
    if edges is not None:
        raise InvalidParameterError("bounds='private' cannot be combined with 'edges'.")
    if epsilon is None:
        raise InvalidParameterError(
            "bounds='private' takes 'epsilon' (pure DP): find the bounds with "
            "treedp.private_bounds, then pass them with the other budget."
        )
    if bins is None:
        raise InvalidParameterError(
            "bounds='private' needs 'bins' (a number of equal-width bins, or "
            "bins='integers'): the range is found privately, the bins stay public."
        )
    if bins == "integers" and (level_budgets is not None or isinstance(branching, Sequence)):
        raise InvalidParameterError(
            "bounds='private' with bins='integers' cannot take 'level_budgets' or per-level "
            "'branching': the number of bins, hence of levels, comes with the bounds."
        )


def bounds_input(values: Any, column: str | None, nan: Any, progress: Any, engine: Any) -> Any:
    """What the private bounds scan: a column in memory as it is; anything else (files of
    any size, tables, pandas / polars / Spark / Dask DataFrames by ``column``) through one
    counting pass over the public :data:`~treedp.mechanisms.private_bounds.COUNT_EDGES`
    with the release's engine, in bounded memory (the scans read only those counts)."""
    from treedp.engines.files import FileSource
    from treedp.value_methods.bounds_grid import COUNT_EDGES, GridCounts

    if column is None and not isinstance(values, FileSource | os.PathLike):
        return values
    try:
        counts = count_source(
            values,
            column=column,
            bins=make_bins(edges=COUNT_EDGES),
            nan=nan,
            progress=progress,
            engine=engine,
        ).counts
    except InvalidTypeError as error:
        if "datetimes" not in str(error):
            raise
        raise InvalidTypeError(  # the engine's advice (datetime bounds) does not apply here
            "bounds='private' takes numbers, not datetimes: give public datetime bounds=(lo, hi)."
        ) from None
    return GridCounts.from_counts(counts)


#: The name of the one charge of ``release_cdf(bounds="private", accountant=...)`` (and of
#: ``treedp release --bounds private --ledger ...``) in an accountant's history and in
#: ``treedp budget history``: the whole epsilon, bounds step and release. Ledgers written
#: before it hold ``split_private_bounds`` for the same charge (a label only; they read back
#: unchanged).
PRIVATE_BOUNDS_RECORD = "release[private bounds]"


def private_bounds_charge(
    epsilon: float, share: float, bins: Any, neighbours: str, nan: str, bounds: Any = "private"
) -> Any:
    """The record charged once for a release with private bounds (public parameters)."""
    from treedp.privacy.measures import PureDP
    from treedp.privacy.spend import SpendRecord

    return SpendRecord(
        PRIVATE_BOUNDS_RECORD,
        PureDP(float(epsilon)),
        neighbours,
        "record",
        {
            "epsilon": float(epsilon),
            "bounds": bounds if isinstance(bounds, str) else str(tuple(bounds)),
            "bounds_share": share,
            "bins": bins,
            "nan": nan,
        },
    )


def n_differs() -> DataError:
    """A contract check on the public n failed; the message holds no count of the data."""
    return DataError(
        "With neighbours='replace' the 'n' parameter must be the public number of records, "
        "and the column's number of records differs from it. Pass the true public n, or "
        "use neighbours='add_remove' (n then stays private)."
    )


def records_read(scanned: Any) -> int:
    """The number of records the bounds step reads: its counting pass's total, or the
    values' count (under replace missing values are refused, so every value counts)."""
    from treedp._inputs import as_1d_array
    from treedp.value_methods.bounds_grid import GridCounts

    if isinstance(scanned, GridCounts):
        return scanned.total
    return int(as_1d_array(scanned).size)
