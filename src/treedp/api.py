"""``release_cdf`` (a column → :class:`Release`) and ``release_counts`` (bin counts → one).

Both build one :class:`~treedp.query.Query` (every parameter validated once, before any data
or count is read) and run it with :func:`treedp.run.run`, the one place budget is spent.

Notes on ``release_cdf``'s parameters:

* ``mechanism="auto"`` plans the tree (fan-out per level, padding, level budgets) and
  compares it with the optimised integer p-Identity strategy (pure ε, shipped sizes or padded
  up to one, and over block sums past 4096 bins: docs/strategies.md),
  the square-root factorisation (Gaussian noise only, docs/factorization.md) and the plain
  histogram by their exact CDF error. ``"dawa"`` is data-aware (a private partition with
  25% of ε, then a tree on the buckets; add/remove only; no intervals; docs/data_aware.md);
  ``"histogram"``, ``"threshold"`` and ``"all_intervals"`` are the seeds' baselines.
  ``MechanismOptions(level_budgets=...)`` takes ``h + 1`` values root first, 0 for the exact
  root under ``replace`` (what :attr:`treedp.Plan.level_budgets` reports);
  ``estimator="efficient"`` is the best linear unbiased estimate from every noisy node,
  ``"direct"`` sums the nodes covering each prefix (all-intervals: direct only).
* Private bounds (numbers only; with ``bins="integers"`` rounded inwards) spend ``share ·
  epsilon`` (default 0.1) through :func:`treedp.value_methods.private_bounds.private_bounds`;
  with one public side only the other is searched, with the whole share. The release spends
  the rest; :attr:`Release.guarantee` covers the release alone and
  :attr:`Release.total_guarantee` both. The bounds found are ``release.bins``.
* ``nan="drop"`` is a per-record filter, so it keeps the add/remove guarantee (the count is
  of non-missing records); under replace it would make the count private and is refused.
  Infinities are ordered values, clamped into the end bins.
* A privacy unit keeps at most ``k`` rows per person and releases one tree at ``epsilon / k``
  (``rho / k²`` under zCDP; the factor doubles under replace), so the release is
  ``epsilon``-DP for adding or removing one person with all their rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import check_int, must
from treedp.budget import Neighbours
from treedp.domain import MAX_BINS, Bins, NanPolicy, make_bins, public_bins
from treedp.engines.local import LocalEngine
from treedp.engines.sql.source import sql_arguments
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.options import MechanismOptions, PrivacyUnit, PrivateBounds
from treedp.planning import Plan, PlanCache
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.measures import Measure
from treedp.query import build_query
from treedp.release import Release
from treedp.release_stage import counts_array
from treedp.run import run
from treedp.value_methods.private_bounds import BoundsResult

__all__ = ["release_cdf", "release_counts"]


@accepts_aliases
def release_cdf(
    values: Any,
    sql: str | None = None,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    bounds: tuple[Any, Any] | str | PrivateBounds | BoundsResult | None = None,
    bins: int | str | Bins | Any = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    column: str | None = None,
    privacy_unit: PrivacyUnit | None = None,
    engine: LocalEngine | None = None,
) -> Release:
    """Release the distribution of one numeric column under differential privacy.

    The values are counted into public bins, their noisy counts released by exact discrete
    Laplace (``epsilon``) or Gaussian (``privacy=ZCDP/ApproxDP``) noise; every CDF value, range
    count and quantile is answered afterwards at no further cost (module docstring).

    Parameters
    ----------
    values, sql : array-like, DataFrame, table, dataset or path; or a connection and a SELECT
        The column (numbers, datetimes); with ``column`` a DataFrame of any engine, an Arrow
        table, files (streamed), a DuckDB relation, or a connection with its query ``sql``.
    epsilon : float, optional
        The pure-DP budget, in ``[1e-6, 50]``. Give this or ``privacy``.
    privacy : PureDP, ZCDP or ApproxDP, optional
        A target guarantee instead (``ApproxDP``: ``delta`` in ``(0, 1e-3]``; docs/gaussian.md).
    bounds : (lo, hi), "private", PrivateBounds or BoundsResult, optional
        Public bounds (values outside are clamped into the end bins), bounds found with a
        share of ``epsilon`` (``"private"``, ``(lo, "private")``, :class:`treedp.PrivateBounds`;
        the whole ``epsilon`` is charged), or by :func:`treedp.private_bounds` (for zCDP).
    bins : int, "integers", array-like of edges or Bins, optional
        Equal-width bins in ``bounds``, one bin per integer, explicit edges, or a Bins.
    neighbours, n : {"add_remove", "replace"}, int, optional
        Add or remove one record (default; ``n`` private, estimated, not given), or change one
        (``"replace"``: ``n``, the public number of records, required).
    mechanism : str or MechanismOptions, default="auto"
        ``"auto"`` (the planner picks the tree, strategy, factorisation or histogram with
        the smallest exact CDF error), a registered name (``"tree"``, ``"strategy"``,
        ``"strategy_range"``, ``"strategy_padded"``, ``"strategy_tree"``, ``"dawa"``,
        ``"sqrt_factorization"``, ``"histogram"``, ``"threshold"``, ``"all_intervals"``), or
        :class:`treedp.MechanismOptions` (a tree's ``branching``, ``level_budgets``; estimator).
    plan : Plan, PlanCache or False, optional
        A plan from :func:`treedp.plan`, a cache of plans (default
        :data:`treedp.planning.DEFAULT_PLAN_CACHE`, public keys), or False: plan every call.
    postprocess : {"monotone", "monotone_l1", "none"}, default="monotone"
        Answers projected onto non-decreasing CDFs (squared L2 or L1), or left unbiased.
    integer : bool, default=False
        A consistent CDF with integer counts.
    nan : {"error", "drop"}, default="error"
        Missing values refused, or dropped (``"add_remove"`` only).
    rng : RandomSource, optional
        Default: the OS's cryptographic generator; :class:`treedp.InsecureSeededSource` is
        for tests and research, and the release records it.
    accountant : Accountant, optional
        Charged once, after the data were read and before any noise is drawn; the charge
        records what was released (column, source as given, public bounds; a note with
        :func:`treedp.noting`, :mod:`treedp.subject`).
    column, engine : str, LocalEngine, optional
        The column of a table, DataFrame or file; threads, kernel and progress bar for data
        counted on this machine.
    privacy_unit : PrivacyUnit, optional
        ``PrivacyUnit("person_id", max_contributions=k)``: at most ``k`` rows per person (a
        random sample), the guarantee for one person (:attr:`Release.unit`; by group:
        :func:`treedp.release_grouped`).

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, InvalidTypeError, DataError
        Naming the argument; every parameter is checked before the data is read.
    BudgetExceededError
        The accountant cannot take the spend: nothing is drawn, released or charged.

    See Also
    --------
    release_counts : the same from bin counts made elsewhere.

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_cdf([23, 35, 41, 52, 67], bounds=(0, 100), bins=64, epsilon=1.0,
    ...                          rng=treedp.InsecureSeededSource(7))
    >>> rel.seeded
    True
    """
    return run(build_query(**sql_arguments(locals())))  # type: ignore[return-value]


@accepts_aliases
def release_counts(
    counts: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    bins: int | str | Bins | None = None,
    bounds: tuple[Any, Any] | None = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
) -> Release:
    """Release the distribution given by bin counts made elsewhere, under pure ``epsilon``-DP.

    :func:`release_cdf` is "count, then this": the counts may come from a stream of chunks, a
    thread pool, a database or a cluster, as long as each record was counted in exactly one
    of the public bins (the sensitivity analysis of every mechanism rests on that).

    Parameters
    ----------
    counts : array-like of int
        One count per bin: one-dimensional, integers (or integral floats), non-negative.
    epsilon : float, optional
        The pure-DP privacy budget, in ``[1e-6, 50]`` (exact discrete Laplace noise). Give
        this or ``privacy``.
    bins : Bins, int, "integers" or array-like of edges, optional
        The public bins the counts were made over: a :class:`treedp.Bins`; explicit edges;
        or, with ``bounds``, a number of bins or ``"integers"`` as for :func:`release_cdf`.
        Without ``bounds`` (and ``bins`` None or an int), bin ``j`` is ``[j, j + 1)``.
    bounds
        As for :func:`release_cdf` (public bounds only).
    neighbours, n, mechanism, postprocess, integer, rng
        As for :func:`release_cdf`. Under ``"replace"`` the counts must sum to ``n``.
    plan : Plan, PlanCache or False, optional
        As for :func:`release_cdf`: a plan, a :class:`PlanCache` or False.
    privacy : PureDP, ZCDP or ApproxDP, optional
        A target guarantee instead of ``epsilon``: ``treedp.ZCDP(rho)`` releases the tree
        with exact discrete Gaussian noise at ``rho``-zCDP; ``treedp.ApproxDP(epsilon,
        delta)`` (``delta`` in ``(0, 1e-3]``) does the same at the largest ``rho`` whose tight
        conversion gives ``(epsilon, delta)``-DP; ``treedp.PureDP(epsilon)`` is
        ``epsilon=epsilon``. See docs/gaussian.md.
    accountant : Accountant, optional
        As for :func:`release_cdf`: charged before any noise is drawn (the source recorded
        is ``"counts"``).

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, InvalidTypeError, DataError
        Naming the argument; a message about the counts names no count or length. Every
        parameter is checked before the counts are (only their length is read first when
        no bins are given: it is the public number of bins).

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_counts([3, 0, 5, 2], epsilon=1.0, rng=treedp.InsecureSeededSource(7))
    >>> rel.bins.n_bins
    4
    """
    check_accountant(accountant, unit="record")  # before the counts are read
    the_bins, arr = _bins_of_counts(counts, bins, bounds)
    query = build_query(
        counts if arr is None else arr,
        epsilon=epsilon,
        privacy=privacy,
        bins=the_bins,
        neighbours=neighbours,
        n=n,
        mechanism=mechanism,
        plan=plan,
        postprocess=postprocess,
        integer=integer,
        rng=rng,
        accountant=accountant,
        counts=True,
    )
    return run(query)  # type: ignore[return-value]


def _bins_of_counts(counts: Any, bins: Any, bounds: Any) -> tuple[Bins, np.ndarray | None]:
    """The public bins of :func:`release_counts`, and the counts read when the bins come from
    their length (one bin per index); None when the bins are given."""
    if isinstance(bins, Bins):
        if bounds is not None:
            raise InvalidParameterError(
                "Give the 'bins' parameter either as a treedp.Bins or with 'bounds', not both."
            )
        the_bins = bins
        spec_bins: int | Bins = bins
    elif bounds is None and not isinstance(bins, str) and np.ndim(bins) == 0:
        spec_bins = check_int(bins, "bins", lo=1, hi=MAX_BINS) if bins is not None else 0
        the_bins = None  # one bin per index, made once the length is known
    else:
        edges = None if bounds is not None or isinstance(bins, str) else bins
        the_bins = public_bins(bounds, None if edges is not None else bins, edges)
        spec_bins = the_bins
    arr: np.ndarray | None = None
    if the_bins is None:  # bin j is [j, j + 1): the number of bins is the counts' length
        arr = counts_array(counts)
        if spec_bins and spec_bins != arr.size:
            raise InvalidParameterError(
                must(
                    "counts",
                    "hold one count per bin: its length differs from the 'bins' parameter.",
                )
            )
        if arr.size == 0:
            raise InvalidParameterError(must("counts", "hold at least one count."))
        the_bins = make_bins(edges=np.arange(arr.size + 1, dtype=np.float64))
    return the_bins, arr
