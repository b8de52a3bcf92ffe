"""``release_counts`` (bin counts → :class:`Release`), and ``release_cdf`` = count, then that.

These are the calls that spend budget. Parameters are validated once, as a
:class:`~treedp.spec.ReleaseSpec`, before any data or count is read.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._validation import check_int
from treedp._version import __version__
from treedp.bounds_stage import n_differs, run_bounds_stage
from treedp.budget import Neighbours
from treedp.config import configure
from treedp.domain import MAX_BINS, Bins, NanPolicy, make_bins, public_bins
from treedp.engines.dispatch import check_local_engine, count_source
from treedp.engines.local import LocalEngine
from treedp.engines.progress import wants_progress
from treedp.exceptions import BoundsWarning, DataError, InvalidParameterError, InvalidTypeError
from treedp.grouped_checks import refuse_unless_per_group
from treedp.mechanisms import Mechanism
from treedp.noise import RandomSource
from treedp.noise.rng import check_source
from treedp.planning import Plan, PlanCache
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.measures import ApproxDP, Measure
from treedp.release import Release
from treedp.spec import ReleaseSpec, make_spec

__all__ = ["release_cdf", "release_counts"]


#: The share of epsilon ``bounds="private"`` spends on the bounds when ``bounds_share`` is not
#: given (the same value as :data:`treedp.mechanisms.private_bounds.DEFAULT_SHARE`, which this
#: module does not import for a release with public bounds).
DEFAULT_BOUNDS_SHARE = 0.1


def release_cdf(
    values: Any,
    *,
    epsilon: float | None = None,
    bounds: tuple[Any, Any] | str | None = None,
    bins: int | str | None = None,
    edges: Any = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str = "auto",
    branching: int | Sequence[int] | None = None,
    level_budgets: Sequence[float] | None = None,
    estimator: str | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    plan: Plan | None = None,
    plan_cache: PlanCache | bool | None = None,
    privacy: Measure | None = None,
    accountant: Accountant | None = None,
    column: str | None = None,
    progress: bool | None = None,
    by: Any = None,
    keys: Sequence[Any] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | None = None,
    max_groups: int | None = None,
    max_contributions_per_group: int | None = None,
    delta: float | None = None,
    bounds_share: float | None = None,
    engine: LocalEngine | None = None,
) -> Any:
    """Release the distribution of one numeric column under pure ``epsilon``-DP.

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
    bounds : (lo, hi), optional
        Public bounds for ``bins`` equal-width bins. Values outside are clamped into the first
        or last bin (this is what keeps the sensitivity at one bin per record).
        ``"private"``: ``bounds_share · epsilon`` finds them first
        (:func:`treedp.mechanisms.private_bounds.private_bounds`, numbers only; with
        ``bins="integers"`` rounded inwards to integers) and the release spends the rest.
        ``(lo, "private")`` / ``("private", hi)``: one side is public (for example 0 for
        incomes) and only the other is searched, with the whole share (half the noise).
        The total guarantee is ``PureDP(epsilon)``: the bounds' spend plus the release's
        :attr:`Release.guarantee` (which covers the release alone), by basic composition;
        an ``accountant`` is charged ``PureDP(epsilon)`` once, after every check and before
        the bounds' noise is drawn. The bounds found are ``release.bins``.
    bins : int or "integers", optional
        The number of bins, or ``"integers"`` for one bin per integer in ``lo..hi``.
    edges : array-like, optional
        Explicit public bin edges instead of ``bounds`` and ``bins``.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        ``"add_remove"``: the guarantee covers adding or removing one record, and the number
        of records is private (it is estimated). ``"replace"``: it covers changing one record's
        value, with the number of records ``n`` public.
    n : int, optional
        The public number of records; required with ``"replace"`` (and must equal the number
        of values), not allowed with ``"add_remove"``.
    mechanism : {"auto", "tree", "strategy", "sqrt_factorization", "histogram", "threshold", \
"all_intervals", "dawa"}
        Default ``"auto"``: the planner (:func:`treedp.plan`) picks the tree — fan-out per
        level, padding, level budgets — the optimised strategy, the square-root
        factorisation or the plain noisy histogram, whichever has the smallest exact CDF
        error. ``"tree"``: a tree (planned unless ``branching`` or ``level_budgets`` is
        given). ``"strategy"`` (pure ε-DP): an optimised integer p-Identity strategy with
        least squares (docs/strategies.md). ``"sqrt_factorization"`` (Gaussian noise only, a
        ``ZCDP`` or ``ApproxDP`` target): the square-root factorisation of the prefix matrix
        on an integer lattice (docs/factorization.md). ``"dawa"``: data-aware (a private
        partition into buckets with 25% of epsilon, then a tree on the buckets; add/remove
        only; no standard errors or intervals), see docs/data_aware.md. The others are the
        seeds' baselines, for comparison.
    branching : int or sequence of int, optional
        Tree fan-out: a common ``k`` (height ``ceil(log_k B)``) or one ``k_l`` per level with
        product ``>= B``. Default: planned.
    level_budgets : sequence of float, optional
        Budget per level, root first, summing to ``epsilon``: ``h + 1`` values, with 0 for
        the exact root under ``replace`` (the convention :attr:`treedp.Plan.level_budgets`
        reports, so a plan's budgets can be passed back; under ``replace`` the ``h`` values
        below the root alone are accepted too). Default: planned with the shape, or equal
        when the shape is given.
    estimator : {"efficient", "direct"}, optional
        How counts are estimated from the noisy nodes. ``"efficient"`` (the default) is the
        best linear unbiased estimate from every noisy node (Honaker's estimator generalised
        to k-ary trees); ``"direct"`` sums the nodes covering each prefix (the seeds'
        reconstruction). The all-intervals baseline supports ``"direct"`` only.
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
    plan : Plan, optional
        A plan from :func:`treedp.plan` for these bins, epsilon and neighbours: the tree it
        chose is used as is (no planning at release time). Not with ``branching`` or
        ``level_budgets``.
    plan_cache : PlanCache or False, optional
        Where plans are looked up when ``plan`` is not given: by default the process-wide
        :data:`treedp.planning.DEFAULT_PLAN_CACHE` (plans depend on public parameters only,
        so a repeated call plans once); a caller-owned :class:`PlanCache`; or False to run
        the planner on every call.
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
    progress : bool, optional
        A progress bar while streaming a file or dataset: None (default) shows it on an
        interactive terminal only, never in pipes or CI; needs ``treedp[progress]`` (tqdm).
    engine : LocalEngine, optional
        Threads and counting kernel for data counted on this machine (in-memory columns,
        pyarrow tables and datasets, files), e.g. ``LocalEngine(workers=4, kernel="numba")``
        (the compiled kernel of ``treedp[fast]``); default two threads, ``kernel="auto"``.
        Not for Spark or Dask DataFrames, which are counted on their cluster.
    column, by, keys, privacy_unit, max_contributions, max_groups, delta
        (and ``max_contributions_per_group``).
        Group-by releases and per-person bounds: with ``by`` or ``privacy_unit`` the call is
        :func:`treedp.release_grouped` (one tree per public key, one guarantee for the
        privacy unit) and returns a :class:`treedp.GroupedRelease`. Without a
        ``privacy_unit``, one row is one person.
    bounds_share : float, optional
        The share of ``epsilon`` spent on ``bounds="private"`` (default 0.1,
        :data:`DEFAULT_BOUNDS_SHARE`); refused with public bounds, where it would be ignored.

    Returns
    -------
    Release
        (a :class:`treedp.GroupedRelease` with ``by`` or ``privacy_unit``)

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
    check_accountant(accountant)
    if engine is not None:
        check_local_engine(engine, values)
    request = _private_request(bounds)
    if bounds_share is not None and request is None:
        raise InvalidParameterError(
            "The 'bounds_share' parameter applies only with bounds='private' (or one public "
            "side, (lo, 'private')); it would be ignored with public bounds."
        )
    share = DEFAULT_BOUNDS_SHARE if bounds_share is None else bounds_share
    if by is not None or privacy_unit is not None:
        from treedp.api_grouped import release_grouped

        _refuse_for_groups(request, engine, n, mechanism)
        return release_grouped(
            values,
            epsilon=epsilon,
            privacy=privacy,
            column=column,
            by=by,
            keys=keys,
            privacy_unit=privacy_unit,
            max_contributions=max_contributions,
            max_groups=max_groups,
            max_contributions_per_group=max_contributions_per_group,
            delta=delta,
            neighbours=neighbours,
            nan=nan,
            rng=rng,
            bounds=bounds,
            bins=bins,
            edges=edges,
            mechanism=mechanism,
            branching=branching,
            level_budgets=level_budgets,
            estimator=estimator,
            postprocess=postprocess,
            integer=integer,
            plan=plan,
            plan_cache=plan_cache,
            accountant=accountant,
        )
    if (keys, max_contributions, max_groups, max_contributions_per_group, delta) != ((None,) * 5):
        raise InvalidParameterError(
            "The 'keys', contribution bounds and 'delta' parameters belong to a "
            "group-by release: give 'by' (and 'privacy_unit' for the bounds)."
        )
    bounds_step: dict[str, Any] | None = None
    if request is not None:  # the private-bounds stage: one charge for the whole release
        bounds, epsilon, bounds_step = run_bounds_stage(
            values,
            request=request,
            bounds=bounds,
            bins=bins,
            edges=edges,
            epsilon=epsilon,
            share=share,
            neighbours=neighbours,
            n=n,
            mechanism=mechanism,
            branching=branching,
            level_budgets=level_budgets,
            estimator=estimator,
            postprocess=postprocess,
            integer=integer,
            nan=nan,
            plan=plan,
            plan_cache=plan_cache,
            column=column,
            progress=progress,
            engine=engine,
            rng=rng,
            accountant=accountant,
        )
        accountant = None  # the rest of epsilon is covered by the stage's charge
    the_bins = public_bins(bounds, bins, edges)
    spec = make_spec(
        the_bins,
        epsilon,
        neighbours,
        n,
        mechanism,
        branching,
        level_budgets,
        estimator,
        postprocess,
        integer,
        nan=nan,
        privacy=privacy,
    )
    mech, est = configure(spec, plan=plan, plan_cache=plan_cache)
    source = check_source(rng)
    wants_progress(progress)  # its type is checked before the data is read
    if accountant is not None:  # a spend it cannot take is refused before the data is read
        accountant.check(mech.spend())
    counts = count_source(
        values,
        column=column,
        bins=the_bins,
        nan=spec.nan,  # type: ignore[arg-type]
        progress=progress,
        engine=engine,
    ).counts
    release = _release(counts, spec, the_bins, mech, est, source, accountant, bounds_step)
    if bounds_step is not None:  # private bounds: say so when they look wrong (post-processing)
        warning = release.bounds_warning()
        if warning is not None:
            warnings.warn(warning, BoundsWarning, stacklevel=2)
    return release


def release_counts(
    counts: Any,
    *,
    epsilon: float | None = None,
    bins: int | str | Bins | None = None,
    bounds: tuple[Any, Any] | None = None,
    edges: Any = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str = "auto",
    branching: int | Sequence[int] | None = None,
    level_budgets: Sequence[float] | None = None,
    estimator: str | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
    rng: RandomSource | None = None,
    plan: Plan | None = None,
    plan_cache: PlanCache | bool | None = None,
    privacy: Measure | None = None,
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
    bins : Bins, int or "integers", optional
        The public bins the counts were made over: a :class:`treedp.Bins`; or, with
        ``bounds``, a number of bins or ``"integers"`` as for :func:`release_cdf`. With
        neither ``bounds`` nor ``edges`` (and ``bins`` None or an int), bin ``j`` is
        ``[j, j + 1)``.
    bounds, edges
        As for :func:`release_cdf`.
    neighbours, n, mechanism, branching, level_budgets, estimator, postprocess, integer, rng
        As for :func:`release_cdf`. Under ``"replace"`` the counts must sum to ``n``.
    plan : Plan, optional
        A plan from :func:`treedp.plan` for these bins, epsilon and neighbours: it then picks
        the tree (no planning at release time).
    plan_cache : PlanCache or False, optional
        Where plans are looked up when ``plan`` is not given: by default
        :data:`treedp.planning.DEFAULT_PLAN_CACHE`; a caller-owned :class:`PlanCache`; or
        False to run the planner on every call.
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
    check_accountant(accountant)
    the_bins, arr = _bins_of_counts(counts, bins, bounds, edges)
    spec = make_spec(
        the_bins,
        epsilon,
        neighbours,
        n,
        mechanism,
        branching,
        level_budgets,
        estimator,
        postprocess,
        integer,
        privacy=privacy,
    )
    mech, est = configure(spec, plan=plan, plan_cache=plan_cache)
    source = check_source(rng)
    checked = _check_counts(_counts_array(counts) if arr is None else arr, the_bins.n_bins)
    return _release(checked, spec, the_bins, mech, est, source, accountant)


def _bins_of_counts(
    counts: Any, bins: Any, bounds: Any, edges: Any
) -> tuple[Bins, np.ndarray | None]:
    """The public bins of :func:`release_counts`, and the counts read when the bins come from
    their length (one bin per index); None when the bins are given."""
    if isinstance(bins, Bins):
        if bounds is not None or edges is not None:
            raise InvalidParameterError(
                "Give the 'bins' parameter either as a treedp.Bins or with 'bounds', not both."
            )
        the_bins = bins
        spec_bins: int | Bins = bins
    elif bounds is None and edges is None and not isinstance(bins, str):
        spec_bins = check_int(bins, "bins", lo=1, hi=MAX_BINS) if bins is not None else 0
        the_bins = None  # one bin per index, made once the length is known
    else:
        the_bins = public_bins(bounds, bins, edges)
        spec_bins = the_bins
    arr: np.ndarray | None = None
    if the_bins is None:  # bin j is [j, j + 1): the number of bins is the counts' length
        arr = _counts_array(counts)
        if spec_bins and spec_bins != arr.size:
            raise InvalidParameterError(
                "The 'counts' parameter must hold one count per bin: its length differs from "
                "the 'bins' parameter."
            )
        if arr.size == 0:
            raise InvalidParameterError("The 'counts' parameter must hold at least one count.")
        the_bins = make_bins(edges=np.arange(arr.size + 1, dtype=np.float64))
    return the_bins, arr


def _refuse_for_groups(request: Any, engine: Any, n: Any, mechanism: str) -> None:
    """What a group-by release (``by`` or ``privacy_unit``) does not take."""
    if request is not None:
        raise InvalidParameterError(
            "bounds='private' is not available for a group-by release (with 'by' or "
            "'privacy_unit'): give public bounds=(lo, hi) for all groups."
        )
    if engine is not None:
        raise InvalidParameterError("The 'engine' parameter is not taken by a group-by release.")
    if n is not None:
        raise InvalidParameterError(
            "The 'n' parameter is not taken by a group-by release: group sizes stay private."
        )
    refuse_unless_per_group(mechanism)


def _counts_array(counts: Any) -> np.ndarray:
    if isinstance(counts, str | bytes) or np.isscalar(counts):
        raise InvalidTypeError("The 'counts' parameter must be a one-dimensional array of counts.")
    try:
        arr = np.asarray(counts)
    except (ValueError, TypeError):
        raise InvalidTypeError(
            "The 'counts' parameter must be a one-dimensional array of counts."
        ) from None
    if arr.ndim != 1:
        raise InvalidTypeError("The 'counts' parameter must be one-dimensional.")
    if arr.dtype.kind not in "iuf":
        raise InvalidTypeError(
            "The 'counts' parameter must hold integers (or floats with integral values); "
            f"got dtype {arr.dtype}."
        )
    return arr


def _check_counts(arr: np.ndarray, n_bins: int) -> np.ndarray:
    """The counts as int64, after checks whose messages name no count, value or length."""
    if arr.size != n_bins:
        raise InvalidParameterError(
            "The 'counts' parameter must hold one count per bin: its length differs from the "
            "number of bins."
        )
    if arr.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            integral = np.isfinite(arr).all() and bool((arr == np.floor(arr)).all())
        if not integral:
            raise DataError("The 'counts' parameter must hold whole numbers (no NaN or fractions).")
        if (np.abs(arr) >= 2.0**53).any():
            raise DataError("The 'counts' parameter holds a count too large to be exact.")
    elif arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
        raise DataError("The 'counts' parameter holds a count too large for int64.")
    if arr.size and (arr < 0).any():
        raise DataError("The 'counts' parameter must hold non-negative counts.")
    out = arr.astype(np.int64)
    if out.size and int(out.max()) > np.iinfo(np.int64).max // max(1, out.size):
        raise DataError("The 'counts' parameter holds counts whose total overflows int64.")
    return out


def _release(
    counts: np.ndarray,
    spec: ReleaseSpec,
    the_bins: Bins,
    mech: Mechanism,
    est: str,
    source: RandomSource,
    accountant: Accountant | None = None,
    bounds_step: dict[str, Any] | None = None,
) -> Release:
    """Noise validated counts and wrap them: the one place budget is spent (and charged)."""
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
        target=_approx_target(spec),
    )


def _approx_target(spec: ReleaseSpec) -> dict[str, float] | None:
    """The ``(epsilon, delta)`` target of ``privacy=ApproxDP(...)``, kept on the release."""
    privacy = getattr(spec, "privacy", None)
    if isinstance(privacy, ApproxDP):
        return {"epsilon": float(privacy.epsilon), "delta": float(privacy.delta)}
    return None


def _private_request(bounds: Any) -> tuple[Any, Any] | None:
    """:func:`treedp.mechanisms.private_bounds.private_request`, imported only when
    ``bounds`` holds a string (a release with public bounds does not load that module)."""
    if isinstance(bounds, str) or (
        isinstance(bounds, tuple | list) and any(isinstance(b, str) for b in bounds)
    ):
        from treedp.value_methods.bounds_split import private_request

        return private_request(bounds)
    return None
