"""``release_cdf``: the one call that spends budget and returns a :class:`Release`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treedp._version import __version__
from treedp.budget import Neighbours, check_neighbours
from treedp.config import configure
from treedp.domain import Bins, NanPolicy, make_bins
from treedp.estimation import check_postprocess
from treedp.exceptions import DataError, InvalidParameterError
from treedp.noise import RandomSource, resolve_source
from treedp.release import Release

__all__ = ["release_cdf"]


def release_cdf(
    values: Any,
    *,
    epsilon: float,
    bounds: tuple[Any, Any] | None = None,
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
) -> Release:
    """Release the distribution of one numeric column under pure ``epsilon``-DP.

    The values are counted into public bins, a tree of exact discrete Laplace noisy counts is
    released over the bins, and every CDF value, range count and quantile is answered from it
    afterwards at no further privacy cost.

    Parameters
    ----------
    values : array-like
        The sensitive column: numpy array, sequence, pandas / polars Series or pyarrow Array,
        of numbers or datetimes. One record per entry.
    epsilon : float
        The privacy budget, in ``[1e-6, 50]``.
    bounds : (lo, hi), optional
        Public bounds for ``bins`` equal-width bins. Values outside are clamped into the first
        or last bin (this is what keeps the sensitivity at one bin per record).
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
    mechanism : {"auto", "tree", "histogram", "threshold", "all_intervals"}, default="auto"
        ``"auto"``: the planner (:func:`treedp.plan`) picks the tree — fan-out per level,
        padding, level budgets — or the plain noisy histogram, whichever has the smallest
        exact CDF error. ``"tree"``: a tree (planned unless ``branching`` or
        ``level_budgets`` is given). The others are the seeds' baselines, for comparison.
    branching : int or sequence of int, optional
        Tree fan-out: a common ``k`` (height ``ceil(log_k B)``) or one ``k_l`` per level with
        product ``>= B``. Default: planned.
    level_budgets : sequence of float, optional
        Budget per noised level, top-down, summing to ``epsilon`` (``h + 1`` values under
        ``add_remove``, root first; ``h`` under ``replace``). Default: planned with the
        shape, or equal when the shape is given.
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

    Returns
    -------
    Release

    Raises
    ------
    InvalidParameterError, InvalidTypeError, DataError
        Naming the argument and what is allowed. Every parameter is checked before the data is
        read, and nothing is drawn or written when a check fails.

    See Also
    --------
    numpy.histogram, numpy.quantile : the non-private counterparts.

    Examples
    --------
    >>> import treedp
    >>> rel = treedp.release_cdf([23, 35, 41, 52, 67], bounds=(0, 100), bins=64, epsilon=1.0,
    ...                          rng=treedp.InsecureSeededSource(7))
    >>> rel.seeded
    True
    """
    nb, n_public = check_neighbours(neighbours, n)
    if nan not in ("error", "drop"):
        raise InvalidParameterError(
            f"The 'nan' parameter must be 'error' or 'drop'. Got {nan!r} instead."
        )
    if nan == "drop" and nb == "replace":
        raise InvalidParameterError(
            "nan='drop' is not allowed with neighbours='replace': dropping would make the number "
            "of counted records private while replace treats it as the public n. Clean the "
            "column first, or use neighbours='add_remove'."
        )
    the_bins: Bins = make_bins(bounds=bounds, bins=bins, edges=edges)
    check_postprocess(postprocess, integer)
    mech, est = configure(
        the_bins.n_bins,
        epsilon=epsilon,
        neighbours=nb,
        n=n_public,
        mechanism=mechanism,
        branching=branching,
        level_budgets=level_budgets,
        estimator=estimator,
    )
    source = resolve_source(rng)

    counts, _dropped = the_bins.count(values, nan=nan)
    total = int(counts.sum())
    if n_public is not None and total != n_public:
        # A contract check on the public n; the message holds no count of the data.
        raise DataError(
            "With neighbours='replace' the 'n' parameter must be the public number of records, "
            "and the column's number of records differs from it. Pass the true public n, or "
            "use neighbours='add_remove' (n then stays private)."
        )
    noisy = mech.measure(counts, source)
    return Release(
        bins=the_bins,
        mechanism=mech,
        noisy_levels=noisy,
        estimator=est,
        randomness=source.describe(),
        library_version=__version__,
        postprocess=postprocess,
        integer=integer,
    )
