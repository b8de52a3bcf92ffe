"""``release_cdf`` (a column → :class:`Release`) and ``release_counts`` (bin counts → one).

Both build one :class:`~treedp.query.Query` (every parameter validated once, before any data
or count is read) and run it with :func:`treedp.run.run`, the one place budget is spent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp._validation import check_int
from treedp.budget import Neighbours
from treedp.domain import MAX_BINS, Bins, NanPolicy, make_bins, public_bins
from treedp.engines.local import LocalEngine
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.options import MechanismOptions, PrivacyUnit, PrivateBounds
from treedp.planning import Plan, PlanCache
from treedp.privacy.accountant import Accountant
from treedp.privacy.measures import Measure
from treedp.query import build_query
from treedp.release import Release
from treedp.run import counts_array, run

__all__ = ["release_cdf", "release_counts"]


def release_cdf(
    values: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    bounds: tuple[Any, Any] | str | PrivateBounds | None = None,
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
    r"""Release the distribution of one numeric column under pure ``epsilon``-DP.

    The values are counted into public bins, a tree of exact discrete Laplace noisy counts is
    released over the bins, and every CDF value, range count and quantile is answered from it
    afterwards at no further privacy cost.

    Parameters
    ----------
    values : array-like, DataFrame, table, dataset or path
        The sensitive column: numpy array, sequence, pandas / polars Series or pyarrow Array,
        of numbers or datetimes, one record per entry; or, with ``column``, a pandas / polars
        DataFrame, polars LazyFrame, pyarrow Table / Dataset, PySpark or Dask DataFrame, or a
        file path (Parquet, CSV, gzipped CSV, Arrow / Feather; a directory or glob), streamed
        in bounded memory (see :func:`treedp.engines.dispatch.count_source`).
    epsilon : float, optional
        The pure-DP privacy budget, in ``[1e-6, 50]`` (exact discrete Laplace noise). Give
        this or ``privacy``.
    bounds : (lo, hi), "private" or PrivateBounds, optional
        Public bounds for ``bins`` equal-width bins. Values outside are clamped into the first
        or last bin (this is what keeps the sensitivity at one bin per record).
        ``"private"`` (= :class:`treedp.PrivateBounds`\ ``()``): ``share · epsilon`` (default
        share 0.1) finds them first (:func:`treedp.value_methods.private_bounds.private_bounds`,
        numbers only; with ``bins="integers"`` rounded inwards to integers) and the release
        spends the rest. ``(lo, "private")`` / ``("private", hi)`` (=
        ``PrivateBounds(lower=lo)`` / ``PrivateBounds(upper=hi)``): one side is public (for
        example 0 for incomes) and only the other is searched, with the whole share (half
        the noise). ``PrivateBounds(share=0.2)`` sets the share. The total guarantee is
        ``PureDP(epsilon)``: the bounds' spend plus the release's :attr:`Release.guarantee`
        (which covers the release alone), by basic composition; an ``accountant`` is charged
        ``PureDP(epsilon)`` once, after every check and before the bounds' noise is drawn.
        The bounds found are ``release.bins``.
    bins : int, "integers", array-like of edges or Bins, optional
        The number of bins, ``"integers"`` for one bin per integer in ``lo..hi``, explicit
        public bin edges (increasing; then no ``bounds``), or a :class:`treedp.Bins`.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        ``"add_remove"``: the guarantee covers adding or removing one record, and the number
        of records is private (it is estimated). ``"replace"``: it covers changing one record's
        value, with the number of records ``n`` public.
    n : int, optional
        The public number of records; required with ``"replace"`` (and must equal the number
        of values), not allowed with ``"add_remove"``.
    mechanism : str or MechanismOptions, default="auto"
        ``"auto"``: the planner (:func:`treedp.plan`) picks the tree — fan-out per level,
        padding, level budgets — the optimised strategy, the square-root factorisation or the
        plain noisy histogram, whichever has the smallest exact CDF error. ``"tree"``: a
        planned tree. ``"strategy"`` (pure ε-DP): an optimised integer p-Identity strategy
        with least squares (docs/strategies.md). ``"sqrt_factorization"`` (Gaussian noise
        only, a ``ZCDP`` or ``ApproxDP`` target): the square-root factorisation of the prefix
        matrix on an integer lattice (docs/factorization.md). ``"dawa"``: data-aware (a
        private partition into buckets with 25% of epsilon, then a tree on the buckets;
        add/remove only; no standard errors or intervals), see docs/data_aware.md.
        ``"histogram"``, ``"threshold"``, ``"all_intervals"``: the seeds' baselines, for
        comparison. :class:`treedp.MechanismOptions` fixes more: ``branching`` (a common
        fan-out ``k`` or one per level), ``level_budgets`` (root first, ``h + 1`` values
        summing to the budget, 0 for the exact root under ``replace``: what
        :attr:`treedp.Plan.level_budgets` reports) and ``estimator`` (``"efficient"``, the
        best linear unbiased estimate from every noisy node, or ``"direct"``, the sum of the
        nodes covering each prefix; the all-intervals baseline supports ``"direct"`` only).
    postprocess : {"monotone", "monotone_l1", "none"}, default="monotone"
        How CDF, range, histogram and quantile answers are post-processed (no privacy cost):
        projected onto non-decreasing CDFs in ``[0, n̂]`` ending at ``n̂`` (exactly ``n`` when it
        is public) under squared L2 (``"monotone"``) or L1 (``"monotone_l1"``), or left
        unbiased (``"none"``). Both stay available per query (``consistent=True/False``).
    integer : bool, default=False
        Make the consistent CDF integer-valued (the exact optimum, so histogram counts are
        non-negative integers summing to ``n̂``).
    nan : {"error", "drop"}, default="error"
        Missing values (NaN, NaT, None) raise an error (which names no count), or are dropped
        with ``"drop"``. Infinities are ordered values, clamped into the end bins. Dropping
        is a per-record filter, so it keeps the ``add_remove``
        guarantee (the count is then of non-missing records only); under ``replace`` it
        would make the count of kept records private, so it is refused there.
    rng : RandomSource, optional
        Where the noise comes from. Default: the operating system's cryptographic generator.
        :class:`treedp.InsecureSeededSource` makes a reproducible release for tests and
        research; the release records that it was seeded.
    plan : Plan, PlanCache or False, optional
        A plan from :func:`treedp.plan` for these bins, budget and neighbours (the tree it
        chose is used as is; not with a ``MechanismOptions`` shape); or where plans are
        looked up: by default the process-wide :data:`treedp.planning.DEFAULT_PLAN_CACHE`
        (plans depend on public parameters only, so a repeated call plans once), a
        caller-owned :class:`PlanCache`, or False to run the planner on every call.
    privacy : PureDP, ZCDP or ApproxDP, optional
        A target guarantee instead of ``epsilon``: ``treedp.ZCDP(rho)`` releases the tree
        with exact discrete Gaussian noise at ``rho``-zCDP; ``treedp.ApproxDP(epsilon,
        delta)`` (``delta`` in ``(0, 1e-3]``) does the same at the largest ``rho`` whose tight
        conversion gives ``(epsilon, delta)``-DP; ``treedp.PureDP(epsilon)`` is
        ``epsilon=epsilon``. See docs/gaussian.md.
    accountant : Accountant, optional
        A budget to charge (:class:`treedp.Accountant`, or a file ledger from
        :func:`treedp.open_ledger`): the release's spend record is charged after every check
        and before any noise is drawn.
    column : str, optional
        The column to release when ``values`` is a table, DataFrame or file.
    engine : LocalEngine, optional
        Threads and counting kernel for data counted on this machine (in-memory columns,
        pyarrow tables and datasets, files), e.g. ``LocalEngine(workers=4, kernel="numba")``
        (the compiled kernel of ``treedp[fast]``); default two threads, ``kernel="auto"``.
        Not for Spark or Dask DataFrames, which are counted on their cluster.
    privacy_unit : PrivacyUnit, optional
        The person the guarantee protects, when a person may have several rows:
        ``treedp.PrivacyUnit("person_id", max_contributions=3)`` keeps at most 3 rows of each
        person (a uniform random sample of the rest is dropped) and releases one tree at
        ``epsilon / 3`` (``rho / 9`` under zCDP; twice the factor under ``replace``), so the
        release is ``epsilon``-DP for adding or removing one person with all their rows
        (:attr:`Release.guarantee`, :attr:`Release.unit`). Not with private bounds or ``n``.
        Group-by releases (one tree per key) are :func:`treedp.release_grouped`.

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, InvalidTypeError, DataError
        Naming the argument and what is allowed. Every parameter is checked before the data is
        read, and nothing is drawn or written when a check fails.
    BudgetExceededError
        If the accountant's remaining budget does not cover the release: nothing is drawn,
        released or charged.

    See Also
    --------
    release_counts : the same from bin counts made elsewhere.
    numpy.histogram, numpy.quantile : the non-private counterparts.

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_cdf([23, 35, 41, 52, 67], bounds=(0, 100), bins=64, epsilon=1.0,
    ...                          rng=treedp.InsecureSeededSource(7))
    >>> rel.seeded
    True
    """
    query = build_query(
        values,
        epsilon=epsilon,
        privacy=privacy,
        bounds=bounds,
        bins=bins,
        neighbours=neighbours,
        n=n,
        mechanism=mechanism,
        plan=plan,
        postprocess=postprocess,
        integer=integer,
        nan=nan,
        rng=rng,
        accountant=accountant,
        column=column,
        privacy_unit=privacy_unit,
        engine=engine,
    )
    return run(query)  # type: ignore[no-any-return]


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
        As for :func:`release_cdf`: charged before any noise is drawn.

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
    return run(query)  # type: ignore[no-any-return]


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
                "The 'counts' parameter must hold one count per bin: its length differs from "
                "the 'bins' parameter."
            )
        if arr.size == 0:
            raise InvalidParameterError("The 'counts' parameter must hold at least one count.")
        the_bins = make_bins(edges=np.arange(arr.size + 1, dtype=np.float64))
    return the_bins, arr
