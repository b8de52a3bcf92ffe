"""``treedp.quantiles``: any number of private quantiles, by the best method for the request.

One entry point chooses between the exponential mechanism (one level), the recursive
exponential mechanism (a few to many levels) and the tree CDF (many levels, or discrete data
with many levels) by a rule on public parameters only (:func:`choose_method`), and optionally
spends a share of the budget on private bounds first (``bounds="private"``) and, with
``n="private"``, a share on a noisy count of the records that the rule then reads in place of
a public ``n`` (post-processing of that release; :mod:`treedp.value_methods.private_count`).

``n="private"`` is also what ``method="auto"`` does when no ``n`` is given, the bounds are
public and the budget is a pure ``epsilon`` (issue 33 item 3: a rule on public parameters alone
cannot choose the bins that small ``n · ε`` needs, nor the many bins of large ``n · ε``;
docs/quantiles.md, "Against the peers"). With a ``privacy`` target, or another method, no ``n``
means the rule on public parameters alone, as do private bounds (whose unbounded route needs
the method first) and an ``epsilon`` whose share would be below the smallest allowed.
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

When ``"auto"``'s count picks the tree on its rule's bins (public numeric bounds, no
``bins``), 3% of the budget the count leaves releases one noisy bit, whether two adjacent
bins of a fixed 1,024-bin grid of the bounds hold more than half of the records
(:mod:`treedp.value_methods.concentration_gate`, pure ε-DP, sensitivity 1); if so the tree
runs on 16 times its bins (at least 2,048): data in a small part of wide bounds (a heavy
tail, or bounds given loosely) would otherwise land in one or two bins. Where it does not run
its share goes to the quantiles.
"""

from __future__ import annotations

import warnings
from typing import Any, Literal, overload

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.engines.sql.source import sql_input
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.options import PrivateBounds
from treedp.privacy.accountant import Accountant
from treedp.privacy.measures import Measure
from treedp.quantiles_choice import (
    DEFAULT_N_SHARE,
    METHODS,
    N_SOURCES,
    check_n_share,
    choose_method,
    tree_bins,
)
from treedp.quantiles_run import QuantilesResult
from treedp.query import build_query
from treedp.release.queries import QuantileValue
from treedp.run import run
from treedp.value_methods.bounds_split import check_share, private_request

__all__ = [
    "DEFAULT_N_SHARE",
    "METHODS",
    "N_SOURCES",
    "QuantilesResult",
    "check_n_share",
    "choose_method",
    "median",
    "quantiles",
    "tree_bins",
]


@accepts_aliases
def quantiles(
    values: Any,
    q: Any,
    sql: str | None = None,
    *,
    epsilon: float | None = None,
    bounds: tuple[Any, Any] | str | PrivateBounds,
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
    privacy: Measure | None = None,
) -> QuantilesResult:
    """Private quantiles at any levels, by the method best for the request.

    Parameters
    ----------
    values : array-like, DataFrame or path
        A column (numbers, or datetimes with datetime bounds), or with ``column`` a DataFrame
        of any engine or CSV / Parquet file(s). It is held in memory (a Dask or Spark column
        is collected); for larger data read the quantiles of :func:`treedp.release_cdf`. Or
        a DuckDB relation, or a database connection with ``sql`` (docs/databases.md).
    q : float or array-like
        Levels in [0, 1]; the released quantiles are non-decreasing in ``q``.
    sql : str, optional
        With a connection as ``values``: the query that selects the rows (one SELECT).
    epsilon : float or None
        The total budget (bounds included); None with ``privacy``.
    bounds : (lo, hi), "private", (lo, "private"), ("private", hi) or PrivateBounds
        Public bounds, or found with ``bounds_share · epsilon`` (numbers; one public side: only
        the other searched); the exponential and recursive methods take no share: they select
        among every float, a public side clamping them (docs/private_bounds.md).
    bins : int or "integers", optional
        Bins of the tree CDF (default :func:`tree_bins` equal-width bins, by ε).
        ``"integers"`` declares integer data: every method then answers integers of the domain
        (the exponential and recursive methods on the grid of ``[lo, hi + 1)``, rounded down,
        which keeps the rank; the tree by :func:`~treedp.release.discrete_quantiles
        .discrete_quantile_from`); the default on an integer column type (never the values;
        :func:`treedp.quantile_query.typed_bins`, :attr:`QuantilesResult.integer_mode`).
    method : {"auto", "exponential", "recursive", "tree", "permute_and_flip"}, default="auto"
        ``"auto"``: :func:`choose_method` (public parameters only). Selections split ε equally
        between the distinct levels and sort their answers (post-processing); a repeated level
        is released once; the tree's CDF on numeric bins is shrunk toward the uniform law where
        noise hides its shape (post-processing, :mod:`treedp.estimation.shrinkage`).
        ``"permute_and_flip"``: integer bins on public bounds of at most ``2**20`` integers
        (:mod:`treedp.value_methods.quantile_permute_flip`).
    n : int or "private", optional
        The public number of records, known from elsewhere: it only chooses the method and
        the tree's bins (a wrong ``n`` costs accuracy, never privacy); under ``"replace"``
        the number of values. ``"private"`` spends ``n_share · epsilon`` on a noisy count
        where the choice depends on it; so does ``None`` with ``method="auto"``, public
        bounds and ``epsilon`` (module docstring), else the rule on public parameters.
    bounds_share : float, optional
        The share of ``epsilon`` spent on private bounds, in (0, 1) (default 0.1).
    n_share : float, optional
        The share of ``epsilon`` spent on the count with ``n="private"``, in (0, 1) (default
        :data:`DEFAULT_N_SHARE`); with ``bounds="private"`` the two shares must leave a
        positive rest (``bounds_share + n_share < 1``); refused where no count can be spent.
    neighbours, nan, rng, column
        As for :func:`treedp.release_cdf` (``column``: of a DataFrame or file(s)).
    accountant : Accountant, optional
        Charged the whole ``epsilon`` or ``privacy`` (bounds and count included) once, after
        every check and the data's read and before any randomness is drawn; the charge records
        the column, source, bounds and levels (as :func:`treedp.release_cdf`).
    privacy : ZCDP or ApproxDP, optional
        A target instead of ``epsilon`` (``epsilon=None``) at each method's tightest cost
        (:mod:`treedp.quantile_privacy`: an ``ε_j``-exponential mechanism is ``ε_j²/8``-zCDP,
        bounded range, Cesar and Rogers 2021, "Bounding, concentrating and truncating"; the
        tree: Gaussian). Not with the tree's private bounds (a scan), or n="private".

    Returns
    -------
    QuantilesResult
        ``values`` (one per level), ``method``, ``bounds``, ``guarantee`` (the total spent:
        basic composition of the bounds, the count and the quantiles, summed exactly),
        ``spend``, ``parts`` (one record per step), ``n_source``, ``n_released``, ``shrinkage``.
    """
    query = build_query(
        sql_input(values, sql),  # a connection and its query: one SqlSource
        quantiles=q,
        epsilon=epsilon,
        bounds=_with_share(bounds, bounds_share),
        bins=bins,
        mechanism=method,
        neighbours=neighbours,
        n=n,
        n_share=n_share,
        nan=nan,
        rng=rng,
        accountant=accountant,
        column=column,
        privacy=privacy,
    )
    return run(query)  # type: ignore[return-value]


def _with_share(bounds: Any, bounds_share: Any) -> Any:
    """``bounds`` with ``bounds_share`` folded in (a :class:`PrivateBounds`)."""
    if bounds_share is None:
        return bounds
    request = private_request(bounds)
    if request is None:
        raise InvalidParameterError(
            "The 'bounds_share' parameter applies only with bounds='private' (or one public "
            "side, (lo, 'private')); it would be ignored with public bounds."
        )
    check_share(bounds_share)
    lower, upper = (None if side == "private" else side for side in request)
    return PrivateBounds(lower, upper, share=bounds_share)


@overload
def median(
    values: Any,
    sql: str | None = ...,
    *,
    epsilon: float,
    bounds: tuple[Any, Any],
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    integers: bool | None = ...,
    bins: str | None = ...,
    column: str | None = ...,
) -> QuantileValue: ...


@overload
def median(
    values: Any,
    sql: str | None = ...,
    *,
    epsilon: float,
    bounds: tuple[Any, Any],
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
    integers: bool | None = ...,
    bins: str | None = ...,
    column: str | None = ...,
) -> QuantilesResult: ...


@overload
def median(
    values: Any,
    sql: str | None = ...,
    *,
    epsilon: float,
    bounds: tuple[Any, Any],
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
    integers: bool | None = ...,
    bins: str | None = ...,
    column: str | None = ...,
) -> QuantileValue | QuantilesResult: ...


@accepts_aliases
def median(
    values: Any,
    sql: str | None = None,
    *,
    epsilon: float,
    bounds: tuple[Any, Any],
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
    integers: bool | None = None,
    bins: str | None = None,
    column: str | None = None,
) -> Any:
    """A private median: the exponential-mechanism quantile at ``q = 1/2`` (on integer data
    over public bounds of at most ``2**20`` integers, permute-and-flip over them).

    The quantile query ``treedp.quantiles(values, 0.5, method="auto", ...)`` (built
    with :func:`treedp.build_query`, run with :func:`treedp.run_query`): pure ε-DP
    (``PureDP(ε_spent)``, ``ε_spent <= ε``) under ``replace`` (score sensitivity 1) or
    ``add_remove`` (sensitivity ``1/2 + 2**-32``), privacy unit one record; defined on every
    dataset, the empty one included. See :func:`treedp.quantile_exponential` for the
    mechanism, the ``nan`` policy and datetimes; :func:`treedp.stable_median` and
    :func:`treedp.subsample_and_aggregate` are the (ε, δ) alternatives.

    Parameters
    ----------
    values : array-like, DataFrame or path
        The data (numbers or datetimes), or with ``column`` a DataFrame or CSV / Parquet
        file(s) (a list of paths included), as for :func:`quantiles`; or a database
        connection with ``sql``.
    sql : str, optional
        With a connection as ``values``: the query that selects the rows (one SELECT of
        one column), collected into memory.
    epsilon : float
        The budget.
    bounds : (lo, hi)
        Public bounds (numbers or datetimes). For private bounds use
        ``treedp.quantiles(values, 0.5, bounds="private", ...)``.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        As :func:`quantiles` and the tree.
    nan : {"error", "drop"}, default="error"
    rng : RandomSource, optional
    details : bool, default=False
        Return the :class:`QuantilesResult` (a
        :class:`~treedp.mechanisms.results.QuantileResult`) instead of the value.
    accountant : Accountant, optional
        Charged the whole ``epsilon`` once, after the data's read and before anything is
        drawn.
    integers : bool, optional
        Deprecated spelling of ``bins="integers"`` (a :class:`DeprecationWarning`).
    bins : {"integers"}, optional
        ``"integers"`` declares integer data on integer bounds: the median is an integer of
        the domain, on the right side of a block of ties (the spelling of
        :func:`quantiles`, :func:`release_cdf` and ``--bins integers``). Not given: the same
        for a column whose declared type is an integer type, as :func:`quantiles` (the
        deprecated ``integers=False`` no longer turns that off: cast the column to a float
        type for the continuous reading).
    column : str, optional
        The column of a DataFrame or file(s) given as ``values``.

    Returns
    -------
    float, numpy.datetime64 or QuantilesResult
    """
    if isinstance(bounds, PrivateBounds) or private_request(bounds) is not None:
        raise InvalidParameterError(
            "treedp.median takes public 'bounds'; for bounds found privately use "
            "treedp.quantiles(values, 0.5, bounds='private', method='exponential')."
        )
    result = quantiles(
        values,
        0.5,
        sql,
        epsilon=epsilon,
        bounds=bounds,
        bins=_median_bins(bins, integers),
        method="auto",  # one level: the exponential mechanism, or permute-and-flip on integers
        neighbours=neighbours,
        nan=nan,
        rng=rng,
        accountant=accountant,
        column=column,
    )
    return result if details else result.value


def _median_bins(bins: Any, integers: Any) -> str | None:
    """:func:`median`'s ``bins`` (``None`` or ``"integers"``), with the deprecated
    ``integers=True`` mapped to ``bins="integers"``."""
    if bins is not None and bins != "integers":
        raise InvalidParameterError(
            must(
                "bins",
                "be None or 'integers' for treedp.median (the exponential mechanism has no "
                f"bins to count; 'integers' declares integer data). Got {bins!r} instead.",
            )
        )
    if integers is None:
        return None if bins is None else "integers"
    if not isinstance(integers, bool):
        raise InvalidParameterError(must("integers", f"be True or False. Got {integers!r}."))
    warnings.warn(
        "treedp.median(integers=...) is deprecated: declare integer data with "
        "bins='integers', the spelling of treedp.quantiles and treedp.release_cdf.",
        DeprecationWarning,
        stacklevel=4,
    )
    if bins is not None and not integers:
        raise InvalidParameterError(
            "Give treedp.median bins='integers' or integers=False, not both."
        )
    return "integers" if integers else bins
