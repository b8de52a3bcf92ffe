"""``treedp.quantiles``: any number of private quantiles, by the best method for the request.

One entry point chooses between the exponential mechanism (one level), the recursive
exponential mechanism (a few to many levels) and the tree CDF (many levels, or discrete data
with many levels) by a rule on public parameters only (:func:`choose_method`), and optionally
spends a share of the budget on private bounds first (``bounds="private"``) and, with
``n="private"``, a share on a noisy count of the records that the rule then reads in place of
a public ``n`` (post-processing of that release; :mod:`treedp.value_methods.private_count`).
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._validation import check_int
from treedp.budget import check_epsilon
from treedp.engines.dispatch import pick_engine
from treedp.exceptions import BoundsWarning, DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import QuantileResult
from treedp.noise import RandomSource, resolve_source
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.spend import SpendRecord
from treedp.quantiles_choice import (
    DEFAULT_N_SHARE,
    METHODS,
    N_SOURCES,
    _fixed_choice,
    check_n_share,
    choose_method,
    tree_bins,
)
from treedp.release.discrete_quantiles import discrete_quantile_from
from treedp.value_methods._column import (
    check_nan,
    check_neighbours,
    describe,
    float_up,
    is_datetime_like,
    read_column,
)
from treedp.value_methods.bounds_split import (
    DEFAULT_SHARE,
    cut_integer_range,
    integer_cut_warning,
    private_request,
    remaining_epsilon,
    split_private_bounds,
)
from treedp.value_methods.bounds_warnings import few_records_warning, grid_end_warning
from treedp.value_methods.private_bounds import check_known_bound
from treedp.value_methods.private_count import CONTRACT as COUNT_CONTRACT
from treedp.value_methods.private_count import count_scale, release_count
from treedp.value_methods.quantile_exponential import quantile_exponential
from treedp.value_methods.quantiles_recursive import quantiles_recursive

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


@dataclass(frozen=True, repr=False, kw_only=True)
class QuantilesResult(QuantileResult):
    """The result of :func:`quantiles`.

    Attributes
    ----------
    method : str
        The method used: ``"exponential"``, ``"recursive"`` or ``"tree"``.
    bounds : (lo, hi)
        The bounds used (found privately with ``bounds="private"``).
    parts : tuple of SpendRecord
        What each step spent (private bounds, then the quantiles); ``guarantee`` is their
        sum (basic composition) and is what an accountant is charged.
    bounds_warning : str or None
        With ``bounds="private"``: a warning when a scan ran off the public grid, stopped at
        once or the scans crossed (:func:`treedp.value_methods.bounds_warnings.grid_end_warning`),
        or when a count known to the call — a public ``n``, the private count of
        ``n="private"`` or the tree's released total — is below ten times the scans'
        allowance (:func:`~treedp.value_methods.bounds_warnings.few_records_warning`); the
        exponential and recursive methods without ``n`` release no count to check. Also
        emitted as a :class:`treedp.BoundsWarning`. Post-processing: no privacy cost.
    n_source : str
        Where the ``n`` that chose the method and the tree's bins came from (one of
        :data:`N_SOURCES`): ``"none"`` (no ``n``: the rules without it), ``"public"`` (the
        user's ``n``, or under ``"replace"`` the number of values), ``"private"`` (``n =
        "private"``: a noisy count was released, :attr:`n_released`), ``"not needed"`` (``n
        = "private"`` where neither the method nor the bins can depend on ``n``: nothing was
        spent on it).
    n_released : int or None
        With ``n_source == "private"``: the released noisy count of the records (a DP
        release, ``max(0, n + Z)``, part of the guarantee; its spend is in :attr:`parts`);
        else None.
    """

    method: str
    bounds: tuple[Any, Any]
    parts: tuple[SpendRecord, ...]
    bounds_warning: str | None = None
    n_source: str = "none"
    n_released: int | None = None


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
        The data (numbers; datetimes with datetime bounds for the exponential and recursive
        methods): a column, or with ``column`` a pandas / polars / Dask / Spark DataFrame or a
        file, a directory or a glob of CSV / Parquet files (:func:`treedp.io.read_column`).
        The column is held in memory (the exponential and recursive methods read sorted
        values; a Dask or Spark column is collected to the driver); for data larger than
        memory, release a CDF with :func:`treedp.release_cdf` (which streams files, Spark and
        Dask) and read its quantiles.
    q : float or array-like
        Levels in [0, 1]; the released quantiles are non-decreasing in ``q``.
    epsilon : float
        The total budget (bounds included).
    bounds : (lo, hi), "private", (lo, "private") or ("private", hi)
        Public bounds, or ``"private"``: ``bounds_share · epsilon`` finds them
        (:func:`treedp.value_methods.private_bounds.private_bounds`; with one side public, for
        example ``(0, "private")`` for incomes, only the other side is searched, with the
        whole share) and the rest releases the
        quantiles in them (numbers only).
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
        The public number of records, when the user knows it from elsewhere (never read from
        the data). It only chooses the method (:func:`choose_method`) and the tree's bins
        (:func:`tree_bins`): a wrong ``n`` costs accuracy, never privacy (much accuracy when
        far too small: when ``n · ε`` is below the ε default of :func:`tree_bins`, the tree
        gets about ``n · ε`` bins, too coarse for concentrated data of a larger true count).
        Under
        ``"add_remove"`` the count is private unless the user knows it; the guarantee does not
        use ``n``. Under ``"replace"`` it is public by definition: default the number of
        values; a given ``n`` that differs from it is refused (``DataError``, an
        ``InvalidParameterError``) by every method, before anything is charged.

        ``"private"`` (an explicit opt-in; the default stays the rule on public parameters):
        ``n_share · epsilon`` releases a noisy count of the records
        (:mod:`treedp.value_methods.private_count`: ``max(0, n + Z)``, ``Z`` exact discrete
        Laplace of scale ``>= 1/(n_share · epsilon)``, sensitivity 1 under add/remove), and
        the method and the tree's bins are chosen from it with the rest of the budget ``ε_r``
        (``choose_method(m, epsilon=ε_r, bins=bins, n=n̂)``, ``tree_bins(ε_r, n̂)``:
        post-processing of that release), which then releases the quantiles. When neither the
        method nor the bins can depend on ``n`` (one level; integer bins; a method other than
        ``"auto"`` or ``"tree"``; explicit ``bins`` with a number of levels at which the rules
        always pick the same method) nothing is spent on it (``n_source == "not needed"``).
        Under ``"replace"`` the count is public: nothing is spent and the number of values is
        used (``n_source == "public"``).
    nan : {"error", "drop"}, default="error"
    bounds_share : float, optional
        The share of ``epsilon`` spent on ``bounds="private"``, in (0, 1) (default 0.1);
        refused with public bounds, where it would be ignored.
    n_share : float, optional
        The share of ``epsilon`` spent on the count with ``n="private"``, in (0, 1) (default
        :data:`DEFAULT_N_SHARE`); with ``bounds="private"`` the two shares must leave a
        positive rest (``bounds_share + n_share < 1``); refused without ``n="private"``.
    rng : RandomSource, optional
        Where the randomness comes from (default: the operating system's).
    column : str, optional
        The column of a DataFrame or file given as ``values``.
    accountant : Accountant, optional
        Charged the whole ``epsilon`` (private bounds and count included; with a private
        ``n`` the record names ``quantiles[auto, private n]``, as the method is chosen after
        the count's noise) after the checks (the data's
        read included: missing values, a 2-D or non-numeric column, a wrong public ``n``, a
        bad ``bounds_share`` are refused without a charge) and before any randomness is
        drawn; refused with nothing released when it would overspend.

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
    eps = check_epsilon(epsilon)
    relation = check_neighbours(neighbours, ("add_remove", "replace"))
    check_nan(nan, relation)
    qa = _levels(q)
    if (acc := check_accountant(accountant)) is not None:  # refused before reading if it must
        acc.check(_record(str(method), eps, relation, qa, bounds, 0.0))  # method: not yet chosen
    values = _column_of(values, column)
    private_n = isinstance(n, str) and n == "private"
    request, share, known, n, count_share = _check_request(
        method, bins, bounds, bounds_share, n, n_share
    )  # with n="private", n is None: the count (or, under replace, the size) comes later
    private = request is not None
    lower, upper = request if request is not None else (None, None)
    n_source = "none" if n is None else "public"
    # Read once before any charge (shape, type, missing values): a refusal spends nothing.
    size, unit = _read_before_charge(values, nan, relation)
    if relation == "replace":  # n is public by definition (nan="drop" is refused here)
        if n is not None and n != size:
            raise DataError(  # the same check for every method; it names no count
                "With neighbours='replace' the 'n' parameter must be the public number of "
                "records, and the column's number of records differs from it. Pass the true "
                "public n, or leave 'n' out (under replace it is the number of values)."
            )
        n = size
        n_source = "public"
    m = int(np.unique(qa).size)
    chosen = choose_method(m, epsilon=eps, bins=bins, n=n) if method == "auto" else method
    # With n="private": the budget left after the bounds (from public parameters only)
    # decides whether n can matter; if it can, the count's exact loss comes off it too.
    after_bounds = remaining_epsilon(eps, share, relation, known is not None) if private else eps
    count: tuple[Any, float] | None = None  # (scale, ε spent) of the count step, if any
    rest = after_bounds
    if private_n and relation == "add_remove":
        fixed = _fixed_choice(m, after_bounds, bins, method)
        if fixed is None:  # the method or the bins depend on n: spend on a count
            count = count_scale(check_epsilon(eps * count_share))
            rest = math.nextafter(after_bounds - count[1], 0.0)
            if not rest > 0:
                raise InvalidParameterError(
                    "The 'bounds_share' and 'n_share' parameters leave no budget for the "
                    "quantiles; give smaller shares."
                )
            chosen = f"{method}, private n"  # the record's name: the method comes later
            n_source = "private"
        else:
            chosen = fixed
            n_source = "not needed"
    check_as = "tree" if count is not None else chosen  # any method the count may pick
    if private:  # the share, and the tree's bins on stand-in bounds: before the charge
        if unit is not None:
            raise InvalidTypeError(
                "bounds='private' takes numbers, not datetimes: give public 'bounds=(lo, hi)' "
                "as datetimes."
            )
        if bins != "integers":  # integer ranges are cut to MAX_BINS by the bounds step
            _check_bounds(check_as, (0, 1), bins, rest, n)
    else:  # public parameters the methods check later: before anything is charged
        _check_bounds(check_as, bounds, bins, rest, n)
        _check_kinds(check_as, bounds, unit)
    _check_rest(rest, m, count is not None or chosen != "tree")
    source = resolve_source(rng)
    if accountant is not None:  # the whole ε (bounds and quantiles), before any randomness
        accountant.charge(_record(chosen, eps, relation, qa, bounds, count_share))
    parts: list[SpendRecord] = []
    off_grid: str | None = None
    spent = Fraction(0)  # exact sum of the parts' (rounded-up) losses
    if private:
        found, eps_rest, bres = split_private_bounds(
            values,
            epsilon=eps,
            share=share,
            integers=bins == "integers",
            neighbours=relation,
            nan=nan,
            rng=source,
            lower=lower,
            upper=upper,
            max_bins=None,  # cut below, for the tree only: the other methods use no bins
        )
        parts.append(bres.spend)
        spent += Fraction(bres.epsilon_spent)
        off_grid = grid_end_warning(*bres.stops, bres.known)  # post-processing of the stops
        the_bounds: tuple[Any, Any] = found
        if bins == "integers" and chosen == "exponential":  # the integer mode's range
            the_bounds = _inside_integer_limit(found)  # post-processing of released bounds
    else:
        the_bounds = (bounds[0], bounds[1])
        eps_rest = eps
    n_released: int | None = None
    if count is not None:  # the private count, then the choice from it (post-processing)
        scale, count_spent = count
        n_released = release_count(size, scale, source)
        parts.append(
            SpendRecord(
                mechanism=COUNT_CONTRACT.name,
                measure=PureDP(count_spent),
                neighbours=relation,
                unit="record",
                parameters={
                    "epsilon": eps * count_share,
                    "n_share": count_share,
                    "sensitivity": 1,
                    "scale": str(scale),
                },
            )
        )
        spent += Fraction(count_spent)
        eps_rest = math.nextafter(eps_rest - count_spent, 0.0)
        n = n_released
        chosen = choose_method(m, epsilon=eps_rest, bins=bins, n=n) if method == "auto" else method
    if private and bins == "integers" and chosen == "tree":  # one bin per integer
        from treedp.domain import MAX_BINS

        cut = cut_integer_range(the_bounds[0], the_bounds[1], bres.known, MAX_BINS)
        if cut != tuple(the_bounds):  # post-processing of the released bounds
            the_bounds, off_grid = cut, off_grid or integer_cut_warning(MAX_BINS)
    # Each distinct level is released once, in increasing order; the answers are then put
    # back in the caller's order (duplicates get the same answer). The exponential method
    # draws its levels independently, so its answers are sorted (post-processing): every
    # method's answers are non-decreasing in q.
    levels, where = np.unique(qa, return_inverse=True)
    distinct, record, grid_points, guarantee_eps, tree_total = _run(
        chosen, values, levels, eps_rest, the_bounds, bins, relation, n, nan, source
    )
    if private and off_grid is None:  # too few records for the scans' allowance?
        known_count = n if n is not None else tree_total  # public, private n̂ or the tree's n̂
        if known_count is not None:
            off_grid = few_records_warning(bres.allowance, float(known_count))
    if off_grid is not None:  # post-processing of released values: a warning costs nothing
        warnings.warn(off_grid, BoundsWarning, stacklevel=2)
    if chosen == "exponential":
        distinct = np.sort(np.asarray(distinct), kind="stable")
    out = np.asarray(distinct)[np.reshape(where, -1)]
    parts.append(record)
    spent += Fraction(guarantee_eps)
    return QuantilesResult(
        value=out if np.ndim(q) else out[0],
        guarantee=PureDP(float_up(spent)),
        neighbours=relation,
        mechanism=f"quantiles[{chosen}]",
        epsilon=eps,
        sensitivity=(),
        parameters={
            "epsilon": eps,
            "q": tuple(float(v) for v in qa),
            "bounds": (bounds if isinstance(bounds, str) else tuple(bounds))
            if private
            else the_bounds,
            "bins": bins,
            "method": method,
            "nan": nan,
            **({"n": "private", "n_share": count_share} if private_n else {}),
        },
        randomness=describe(source),
        q=qa,
        grid_points=grid_points,
        method=chosen,
        bounds=the_bounds,
        parts=tuple(parts),
        bounds_warning=off_grid,
        n_source=n_source,
        n_released=n_released,
    )


def _check_request(
    method: Any, bins: Any, bounds: Any, bounds_share: Any, n: Any, n_share: Any
) -> tuple[tuple[Any, Any] | None, float, str | None, int | None, float]:
    """The public choices of a call, checked before anything is read: the private-bounds
    request (or None), the bounds' share, the public side, the public ``n`` (None when it is
    not given or is ``"private"``) and the count's share."""
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidParameterError(
            f"The 'method' parameter must be one of {METHODS}. Got {method!r}."
        )
    if (
        bins is not None
        and bins != "integers"
        and (isinstance(bins, bool) or not isinstance(bins, int) or bins < 1)
    ):
        raise InvalidParameterError(
            f"The 'bins' parameter must be an int >= 1 or 'integers'. Got {bins!r}."
        )
    request = private_request(bounds)
    private = request is not None
    if isinstance(bounds, str) and not private:
        raise InvalidParameterError(
            f"The 'bounds' parameter must be (lo, hi) or 'private'. Got {bounds!r}."
        )
    if not private and (not isinstance(bounds, tuple | list) or len(bounds) != 2):
        raise InvalidTypeError(
            f"The 'bounds' parameter must be a pair (lo, hi) or 'private'. Got {bounds!r}."
        )
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
        raise InvalidParameterError(
            f"The 'n' parameter must be an int >= 0, 'private' or None. Got {n!r}."
        )
    if n_share is not None and not private_n:
        raise InvalidParameterError(
            "The 'n_share' parameter applies only with n='private'; it would be ignored."
        )
    count_share = check_n_share(n_share, share if private else None) if private_n else 0.0
    n = None if private_n or n is None else check_int(n, "n", lo=0)
    return request, share, known, n, count_share


def _record(
    chosen: str, eps: float, relation: str, qa: np.ndarray, bounds: Any, count_share: float
) -> SpendRecord:
    """The one record charged for a call: the whole ε (bounds, count and quantiles)."""
    charged: dict[str, Any] = {
        "q": tuple(float(v) for v in qa),
        "bounds": bounds if isinstance(bounds, str) else str(tuple(bounds)),
    }
    if count_share:
        charged.update({"n": "private", "n_share": count_share})
    return SpendRecord(
        mechanism=f"quantiles[{chosen}]",
        measure=PureDP(eps),
        neighbours=relation,
        unit="record",
        parameters=charged,
    )


def _run(
    method: str,
    values: Any,
    qa: np.ndarray,
    eps: float,
    bounds: tuple[Any, Any],
    bins: Any,
    relation: str,
    n: int | None,
    nan: str,
    source: RandomSource,
) -> tuple[Any, SpendRecord, int, float, float | None]:
    """Run one method; return the values, its spend record, its grid size, its ε spent and,
    for the tree, its released total ``n̂`` (else None)."""
    discrete = bins == "integers"
    if method == "tree":
        from treedp.api import release_cdf  # the api imports nothing from here

        rel = release_cdf(
            values,
            bounds=bounds,
            bins=tree_bins(eps, n=n) if bins is None else bins,
            epsilon=eps,
            neighbours=relation,  # type: ignore[arg-type]
            n=n if relation == "replace" else None,  # under add/remove: the bins only
            nan=nan,  # type: ignore[arg-type]
            rng=source,
        )
        if discrete:
            out: Any = discrete_quantile_from(rel.bins, rel.consistent_counts, qa)
        else:
            out = np.atleast_1d(rel.quantile(qa))
        spend = rel.mechanism.spend()
        if not isinstance(rel.guarantee, PureDP):  # pragma: no cover - the tree is pure today
            raise InvalidParameterError("method='tree' needs a pure ε-DP release.")
        return out, spend, rel.bins.n_bins, float(rel.guarantee.epsilon), float(rel.n)
    if method == "exponential" and discrete:  # ties spread inside their integer's cell
        lo, hi = _inside_integer_limit(bounds)
        res = quantile_exponential(
            values,
            qa,
            bounds=(lo, hi),
            epsilon=eps,
            neighbours=relation,
            nan=nan,
            rng=source,
            details=True,
            integers=True,
        )
        return res.value, res.spend, res.grid_points, res.epsilon_spent, None
    grid_bounds: tuple[Any, Any] = bounds
    if discrete:  # the recursive method: the grid of [lo, hi + 1), rounded down
        lo, hi = _integer_bounds(bounds)
        grid_bounds = (lo, hi + 1)
    call = quantile_exponential if method == "exponential" else quantiles_recursive
    res = call(
        values,
        qa,
        bounds=grid_bounds,
        epsilon=eps,
        neighbours=relation,
        nan=nan,
        rng=source,
        details=True,
    )
    out = res.value
    if discrete:
        out = np.minimum(np.floor(np.asarray(out, dtype=np.float64)), grid_bounds[1] - 1)
    return out, res.spend, res.grid_points, res.epsilon_spent, None


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
        raise InvalidTypeError(
            f"The 'column' parameter must be a str. Got {type(column).__name__} instead."
        )
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


def _check_kinds(method: str, bounds: Any, unit: str | None) -> None:
    """Datetime bounds need datetime values (every method); datetime values need datetime
    bounds for the tree (the other methods read numeric bounds as ticks of the data's unit)."""
    dated = is_datetime_like(bounds[0]) or is_datetime_like(bounds[1])
    if dated and unit is None:
        raise InvalidTypeError("The 'bounds' parameter holds datetimes but 'values' holds numbers.")
    if method == "tree" and not dated and unit is not None:
        raise InvalidTypeError(
            "The 'values' argument holds datetimes but the bounds are numbers; give datetime "
            "bounds for method='tree'."
        )


def _check_bounds(method: str, bounds: Any, bins: Any, eps: float, n: int | None) -> None:
    """The bounds (and the tree's number of bins) as the chosen method will check them,
    without building the bins (the release builds them once)."""
    from treedp.domain import MAX_BINS, make_bins

    pair = (bounds[0], bounds[1])
    if bins == "integers":
        lo, hi = _integer_bounds(pair)
        count = hi - lo + 1
    else:
        make_bins(bounds=pair, bins=1)
        count = tree_bins(eps, n=n) if bins is None else bins
    if bins == "integers" and method in ("exponential", "recursive"):
        from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

        if max(abs(lo), abs(hi) + 1) >= INTEGER_LIMIT:
            raise InvalidParameterError(
                f"With bins='integers' the {method} method needs bounds of magnitude below "
                f"2**52. Got {bounds!r}."
            )
    if method == "tree" and count > MAX_BINS:
        raise InvalidParameterError(
            f"The tree would need {count} bins; at most {MAX_BINS} (give fewer 'bins' or "
            "narrower 'bounds')."
        )


def _inside_integer_limit(bounds: tuple[Any, Any]) -> tuple[int, int]:
    """Integer bounds moved inside the exponential method's integer mode (magnitude below
    ``2**52``): privately found ones may reach ``±(2**53 - 1)`` (public ones beyond the limit
    are refused before the charge). Post-processing of released bounds."""
    from treedp.value_methods.quantile_exponential import INTEGER_LIMIT

    lo, hi = _integer_bounds(bounds)
    top = INTEGER_LIMIT - 2
    return max(min(lo, top - 1), -top), min(max(hi, -top + 1), top - 1)


def _check_rest(rest: float, m: int, selections: bool) -> None:
    """The budget left for the quantiles (after the bounds' and the count's shares) and, for
    the exponential and recursive methods (``selections``), the budget of one selection
    (at least ``rest / m``) must be usable: refused before anything is charged, from public
    parameters only, instead of after the charge with nothing released."""
    from treedp.budget import MIN_EPSILON

    if rest < MIN_EPSILON or (selections and rest / max(m, 1) < MIN_EPSILON):
        raise InvalidParameterError(
            f"The budget left for the quantiles ({'each selection gets' if selections else 'it'}"
            f" at most {rest / max(m, 1) if selections else rest:.3g}) is below the smallest "
            f"usable epsilon, {MIN_EPSILON:g}: give a larger 'epsilon', smaller shares or "
            "fewer levels."
        )


def _integer_bounds(bounds: tuple[Any, Any]) -> tuple[int, int]:
    lo, hi = bounds
    if any(is_datetime_like(b) for b in (lo, hi)):
        raise InvalidTypeError("bins='integers' is for numbers, not datetimes.")
    ok = all(
        isinstance(b, int | float | np.integer | np.floating)
        and not isinstance(b, bool)
        and math.isfinite(float(b))
        and float(b).is_integer()
        for b in (lo, hi)
    )
    if not ok or float(lo) > float(hi):
        raise InvalidParameterError(
            f"bins='integers' needs integer bounds lo <= hi. Got {bounds!r}."
        )
    return int(lo), int(hi)
