"""``treedp.quantiles``: any number of private quantiles, by the best method for the request.

One entry point chooses between the exponential mechanism (one level), the recursive
exponential mechanism (a few to many levels) and the tree CDF (many levels, or discrete data
with many levels) by a rule on public parameters only (:func:`choose_method`), and optionally
spends a share of the budget on private bounds first (``bounds="private"``) and, with
``n="private"``, a share on a noisy count of the records that the rule then reads in place of
a public ``n`` (post-processing of that release; :mod:`treedp.value_methods.private_count`).

``n="private"`` (an explicit opt-in; the default stays the rule on public parameters):
``n_share · epsilon`` releases a noisy count of the records
(:mod:`treedp.value_methods.private_count`: ``max(0, n + Z)``, ``Z`` exact discrete Laplace of
scale ``>= 1/(n_share · epsilon)``, sensitivity 1 under add/remove), and the method and the
tree's bins are chosen from it with the rest of the budget ``ε_r`` (``choose_method(m,
epsilon=ε_r, bins=bins, n=n̂)``, ``tree_bins(ε_r, n̂)``: post-processing of that release). When
neither the method nor the bins can depend on ``n`` (one level; integer bins; a method other
than ``"auto"`` or ``"tree"``; explicit ``bins`` with a number of levels at which the rules
always pick the same method) nothing is spent on it (``n_source == "not needed"``). Under
``"replace"`` the count is public: nothing is spent and the number of values is used. A public
``n`` far too small costs accuracy: when ``n · ε`` is below the ε default of
:func:`tree_bins`, the tree gets about ``n · ε`` bins, too coarse for concentrated data.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np

from treedp._validation import check_int, must
from treedp.budget import check_epsilon
from treedp.engines.dispatch import pick_engine
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource, resolve_source
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.quantiles_choice import (
    DEFAULT_N_SHARE,
    METHODS,
    N_SOURCES,
    check_n_share,
    choose_method,
    tree_bins,
)
from treedp.quantiles_run import QuantilesRequest, QuantilesResult, plan_steps, record, run_steps
from treedp.value_methods._column import (
    check_nan,
    check_neighbours,
    read_column,
)
from treedp.value_methods.bounds_split import (
    DEFAULT_SHARE,
    private_request,
)
from treedp.value_methods.private_bounds import check_known_bound

__all__ = [
    "DEFAULT_N_SHARE",
    "METHODS",
    "N_SOURCES",
    "QuantilesResult",
    "check_n_share",
    "choose_method",
    "quantiles",
    "tree_bins",
]


def _levels(q: Any) -> np.ndarray:
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0:
        raise InvalidParameterError(
            f"The 'q' argument must hold at least one level, as a number or a 1-D list. Got {q!r}."
        )
    if np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    return qa


def quantiles(
    values: Any,
    q: Any,
    *,
    epsilon: float,
    bounds: tuple[Any, Any] | str,
    bins: int | str | None = None,
    method: str = "auto",
    neighbours: str = "add_remove",
    n: int | str | None = None,
    nan: str = "error",
    bounds_share: float | None = None,
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    column: str | None = None,
    n_share: float | None = None,
) -> QuantilesResult:
    """Private quantiles at any levels, by the method best for the request.

    Parameters
    ----------
    values : array-like, DataFrame or path
        A column (numbers, or datetimes with datetime bounds), or with ``column`` a DataFrame
        of any engine or CSV / Parquet file(s). It is held in memory (a Dask or Spark column
        is collected); for larger data read the quantiles of :func:`treedp.release_cdf`.
    q : float or array-like
        Levels in [0, 1]; the released quantiles are non-decreasing in ``q``.
    epsilon : float
        The total budget (bounds included).
    bounds : (lo, hi), "private", (lo, "private") or ("private", hi)
        Public bounds, or found with ``bounds_share · epsilon`` (numbers only; with one public
        side only the other is searched); the rest releases the quantiles in them.
    bins : int or "integers", optional
        Bins of the tree CDF (default :func:`tree_bins` equal-width bins, by ε).
        ``"integers"`` declares integer data: every method then answers integers of the domain
        (the exponential and recursive methods on the grid of ``[lo, hi + 1)``, rounded down,
        which keeps the rank; the tree by :func:`~treedp.release.discrete_quantiles
        .discrete_quantile_from`).
    method : {"auto", "exponential", "recursive", "tree"}, default="auto"
        ``"auto"``: :func:`choose_method` (public parameters only). ``"exponential"`` with
        several levels splits ε equally between the distinct levels; its answers are sorted
        (post-processing), so every method is non-decreasing in ``q``; a repeated level is
        released once and answered the same.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    n : int or "private", optional
        The public number of records, when known from elsewhere (never read from the
        data): it only chooses the method and the tree's bins (a wrong ``n`` costs accuracy,
        never privacy). Under ``"replace"`` it is the number of values (a different ``n`` is
        refused before anything is charged). ``"private"`` spends ``n_share · epsilon`` on a
        noisy count when the choice can depend on it (module docstring).
    nan : {"error", "drop"}, default="error"
    bounds_share : float, optional
        The share of ``epsilon`` spent on private bounds, in (0, 1) (default 0.1).
    n_share : float, optional
        The share of ``epsilon`` spent on the count with ``n="private"``, in (0, 1) (default
        :data:`DEFAULT_N_SHARE`); with ``bounds="private"`` the two shares must leave a
        positive rest (``bounds_share + n_share < 1``); refused without ``n="private"``.
    rng : RandomSource, optional
        Where the randomness comes from (default: the operating system's).
    column : str, optional
        The column of a DataFrame or file given as ``values``.
    accountant : Accountant, optional
        Charged the whole ``epsilon`` (bounds and count included) once, after every check
        and the data's read and before any randomness is drawn.

    Returns
    -------
    QuantilesResult
        ``values`` (one per level), ``method``, ``bounds``, ``guarantee`` (``PureDP`` of the
        total spent, at most ``epsilon``: basic composition of the private bounds, the
        private count and the quantiles, summed exactly), ``spend``, ``parts`` (one record
        per step), ``n_source`` and ``n_released``.

    See Also
    --------
    numpy.quantile : the non-private counterpart.
    """
    req = _check_request(q, epsilon, method, bins, bounds, bounds_share, n, n_share)
    relation = check_neighbours(neighbours, ("add_remove", "replace"))
    check_nan(nan, relation)
    acc = check_accountant(accountant)
    req = replace(
        req,
        relation=relation,
        nan=nan,
        data=values,
        column=column,
        rng=resolve_source(rng),
        accountant=acc,
    )
    if acc is not None:  # refused before reading if it must
        acc.check(record(str(method), req.eps, relation, req.qa, bounds, 0.0))
    values = _column_of(req.data, req.column)
    # Read once before any charge (shape, type, missing values): a refusal spends nothing.
    size, unit = _read_before_charge(values, nan, relation)
    steps = plan_steps(req, size, unit)
    if acc is not None:  # the whole ε (bounds, count and quantiles), before any randomness
        acc.charge(record(steps.chosen, req.eps, relation, req.qa, bounds, req.count_share))
    assert req.rng is not None
    return run_steps(values, req, steps, req.rng, size)


def _check_request(
    q: Any,
    epsilon: Any,
    method: Any,
    bins: Any,
    bounds: Any,
    bounds_share: Any,
    n: Any,
    n_share: Any,
) -> QuantilesRequest:
    """The public choices of a call, checked before anything is read (the relation and
    ``nan`` are filled in by the caller)."""
    eps = check_epsilon(epsilon)
    qa = _levels(q)
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(must("method", f"be one of {METHODS}. Got {method!r}."))
    if (
        bins is not None
        and bins != "integers"
        and (isinstance(bins, bool) or not isinstance(bins, int) or bins < 1)
    ):
        raise InvalidParameterError(must("bins", f"be an int >= 1 or 'integers'. Got {bins!r}."))
    request = private_request(bounds)
    private = request is not None
    if isinstance(bounds, str) and not private:
        raise InvalidParameterError(must("bounds", f"be (lo, hi) or 'private'. Got {bounds!r}."))
    if not private and (not isinstance(bounds, tuple | list) or len(bounds) != 2):
        raise InvalidTypeError(must("bounds", f"be a pair (lo, hi) or 'private'. Got {bounds!r}."))
    if bounds_share is not None and not private:
        raise InvalidParameterError(
            "The 'bounds_share' parameter applies only with bounds='private' (or one public "
            "side, (lo, 'private')); it would be ignored with public bounds."
        )
    share = DEFAULT_SHARE if bounds_share is None else bounds_share
    lower, upper = request if request is not None else (None, None)
    known = check_known_bound(lower, upper, bins == "integers", "bounds") if private else None
    private_n = isinstance(n, str) and n == "private"
    if isinstance(n, str) and not private_n:
        raise InvalidParameterError(must("n", f"be an int >= 0, 'private' or None. Got {n!r}."))
    if n_share is not None and not private_n:
        raise InvalidParameterError(
            "The 'n_share' parameter applies only with n='private'; it would be ignored."
        )
    count_share = check_n_share(n_share, share if private else None) if private_n else 0.0
    n = None if private_n or n is None else check_int(n, "n", lo=0)
    return QuantilesRequest(
        qa=qa,
        eps=eps,
        relation="add_remove",
        nan="error",
        method=method,
        bins=bins,
        bounds=bounds,
        request=request,
        share=share,
        known=known,
        n=n,
        private_n=private_n,
        count_share=count_share,
        scalar=np.ndim(q) == 0,
    )


def _column_of(values: Any, column: Any) -> Any:
    """``values`` itself, or its ``column`` collected into memory by the engine that reads
    ``values`` (:data:`treedp.engines.dispatch.ENGINES`: a DataFrame's, a cluster's, files')."""
    engine = pick_engine(values)
    if column is None:
        if isinstance(values, str | os.PathLike):  # a file: a schema, not a column
            raise InvalidParameterError(
                "A file given as 'values' needs 'column' (the column to read)."
            )
        return values
    if not isinstance(column, str):
        raise InvalidTypeError(must("column", f"be a str. Got {type(column).__name__} instead."))
    if engine.collect is None:
        raise InvalidTypeError(
            "The 'column' parameter applies to a pandas, polars, Dask or Spark DataFrame or a "
            f"file; a {type(values).__name__} is one column already: drop 'column'."
        )
    return engine.collect(values, column)


def _read_before_charge(values: Any, nan: str, relation: str) -> tuple[int, str | None]:
    """The number of values (after ``nan="drop"``) and their datetime unit, or the refusal
    the methods would raise (not one-dimensional, not numbers or datetimes, missing values
    with ``nan="error"``): read before the charge so that a refusal spends nothing."""
    data, unit = read_column(values, nan, relation)
    return int(data.size), unit
