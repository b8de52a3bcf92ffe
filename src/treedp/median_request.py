"""A median request checked from its public parameters, before any data is read.

:func:`check_median` applies the rules the four median methods share (tree release,
exponential mechanism, propose-test-release, subsample-and-aggregate): missing values may be
dropped only when the number of records is private, and with private bounds
(``bounds="private"`` or one public side) the median gets what the bounds step leaves of
epsilon. The ``treedp median`` command calls it; a Python caller may too, to refuse a request
before reading a large column.
"""

from __future__ import annotations

from typing import Any

from treedp._aliases import accepts_aliases
from treedp.exceptions import InvalidParameterError

__all__ = ["MEDIAN_METHODS", "check_median"]

#: The median methods, as ``treedp median --method`` names them: a tree release
#: (:func:`treedp.release_cdf`), the exponential mechanism (:func:`treedp.quantile_exponential`,
#: or :func:`treedp.quantiles` on integers), propose-test-release
#: (:func:`treedp.stable_median`) and disjoint subsample-and-aggregate
#: (:func:`treedp.subsample_and_aggregate`).
MEDIAN_METHODS = ("tree", "exponential", "stable", "subsample")


@accepts_aliases
def check_median(
    method: str,
    epsilon: float,
    *,
    bounds: Any = None,
    bins: int | str | None = None,
    neighbours: str = "add_remove",
    nan: str = "error",
    bounds_share: float | None = None,
) -> float:
    """Check a median request from its public parameters only; return the median's epsilon.

    Parameters
    ----------
    method : {"tree", "exponential", "stable", "subsample"}
        The median method (:data:`MEDIAN_METHODS`).
    epsilon : float
        The whole budget (pure DP), bounds step included.
    bounds : (lo, hi), "private", (lo, "private") or ("private", hi), optional
        Public bounds, or a request to find them (both sides, or the non-public one) with
        ``bounds_share`` of ``epsilon`` (:func:`treedp.quantiles`).
    bins : int or "integers", optional
        The tree's bins (``method="tree"``).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation the median is released under.
    nan : {"error", "drop"}, default="error"
        Missing values: an error, or dropped (not under ``replace``, where the number of
        records is public).
    bounds_share : float, optional
        The share of ``epsilon`` spent on private bounds (default
        ``PARAMETERS["bounds_share"].default``).

    Returns
    -------
    float
        The epsilon the median itself is released with: ``epsilon``, or with private bounds
        what the bounds step leaves (rounded down).

    Raises
    ------
    InvalidParameterError
        If ``nan="drop"`` is asked with ``neighbours="replace"``, or a budget, the bounds, the
        bins or another parameter is refused (with the message the release would give).
    InvalidTypeError
        If a parameter has the wrong type.
    """
    from treedp._validation import check_option
    from treedp.budget import check_epsilon
    from treedp.domain import make_bins
    from treedp.spec import ReleaseSpec
    from treedp.value_methods.bounds_split import private_request, remaining_epsilon

    method = check_option(method, "method", MEDIAN_METHODS)
    if nan == "drop" and neighbours == "replace":
        raise InvalidParameterError(
            "nan='drop' is not allowed with replace neighbours (the default for "
            f"method='{method}'): dropping would make the number of records private while "
            "replace treats it as public. Clean the column first"
            + (", or use neighbours='add_remove'." if method == "tree" else ".")
        )
    request = private_request(bounds)
    left = epsilon
    if request is not None:  # the median gets what the bounds step leaves
        shares = {} if bounds_share is None else {"share": bounds_share}
        left = remaining_epsilon(
            check_epsilon(epsilon),
            neighbours=neighbours,
            one_sided=request != (None, None),
            **shares,
        )
    stand_in = (0, 1) if request is not None else bounds  # found from the data later
    if method == "tree":
        the_bins = make_bins(bounds=stand_in, bins=bins)
        ReleaseSpec(the_bins, left, neighbours=neighbours, nan=nan)  # type: ignore[arg-type]
        return left
    check_epsilon(epsilon)
    if method == "exponential":
        make_bins(bounds=stand_in, bins=1)  # the bounds, checked as bins would be
    return float(left)
