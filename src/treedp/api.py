"""``release_cdf``: the one call that spends budget and returns a :class:`Release`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from treedp._version import __version__
from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.domain import Bins, NanPolicy, make_bins
from treedp.estimation import ESTIMATORS
from treedp.exceptions import DataError, InvalidParameterError
from treedp.mechanisms.factory import MECHANISMS, make_mechanism
from treedp.noise import RandomSource, resolve_source
from treedp.release import Release
from treedp.tree import TreeShape, shape_for

__all__ = ["default_branching", "release_cdf"]


def default_branching(n_bins: int, neighbours: Neighbours) -> tuple[int, ...]:
    """A good common fan-out for the direct estimator with equal level budgets.

    Tries every common fan-out ``k`` from 2 to 64 (height ``ceil(log_k B)``) and the flat
    tree, and returns the one with the smallest mean prefix variance: the mean covering size
    ``Σ_l E[d_l]`` times the per-level variance, which grows as the square of the number of
    noised levels. This only depends on public parameters.
    """
    if n_bins == 1:
        return () if neighbours == "add_remove" else (2,)
    m = np.unique(np.linspace(0, n_bins - 1, num=min(n_bins, 4096)).astype(np.int64))
    best: tuple[float, tuple[int, ...]] | None = None
    for k in [*range(2, min(n_bins, 64) + 1), n_bins]:
        shape = shape_for(n_bins, k)
        noised = shape.height + (1 if neighbours == "add_remove" else 0)
        digits = shape.prefix_digits(m)[:, 1:].sum(axis=1).mean()
        cost = float(digits) * noised**2
        if best is None or cost < best[0] - 1e-12:
            best = (cost, shape.branching)
    assert best is not None
    return best[1]


def release_cdf(
    values: Any,
    *,
    epsilon: float,
    bounds: tuple[Any, Any] | None = None,
    bins: int | str | None = None,
    edges: Any = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str = "tree",
    branching: int | Sequence[int] | None = None,
    level_budgets: Sequence[float] | None = None,
    estimator: str = "direct",
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
    mechanism : {"tree", "histogram", "threshold", "all_intervals"}, default="tree"
        The tree mechanism, or one of the seeds' baselines (for comparison).
    branching : int or sequence of int, optional
        Tree fan-out: a common ``k`` (height ``ceil(log_k B)``) or one ``k_l`` per level with
        product ``>= B``. Default: :func:`default_branching`.
    level_budgets : sequence of float, optional
        Budget per noised level, top-down, summing to ``epsilon`` (``h + 1`` values under
        ``add_remove``, root first; ``h`` under ``replace``). Default: equal.
    estimator : {"direct"}, default="direct"
        How prefixes are estimated from the noisy nodes: ``"direct"`` sums the covering nodes.
    nan : {"error", "drop"}, default="error"
        NaN, NaT and infinite values raise an error naming how many there are, or are dropped
        with ``"drop"``. Dropping is a per-record filter, so it keeps the ``add_remove``
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
    eps = check_epsilon(epsilon)
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
    if estimator not in ESTIMATORS:
        raise InvalidParameterError(
            f"The 'estimator' parameter must be one of {', '.join(map(repr, ESTIMATORS))}. "
            f"Got {estimator!r} instead."
        )
    if mechanism not in MECHANISMS:
        raise InvalidParameterError(
            f"The 'mechanism' parameter must be one of {', '.join(map(repr, MECHANISMS))}. "
            f"Got {mechanism!r} instead."
        )
    the_bins: Bins = make_bins(bounds=bounds, bins=bins, edges=edges)
    shape: TreeShape | None = None
    if mechanism == "tree":
        chosen = default_branching(the_bins.n_bins, nb) if branching is None else branching
        shape = shape_for(the_bins.n_bins, chosen)
    elif branching is not None:
        raise InvalidParameterError(
            f"The 'branching' parameter applies to mechanism='tree' only, not {mechanism!r}."
        )
    mech = make_mechanism(
        mechanism,
        n_bins=the_bins.n_bins,
        epsilon=eps,
        neighbours=nb,
        n=n_public,
        shape=shape,
        level_budgets=level_budgets,
    )
    source = resolve_source(rng)

    counts, _dropped = the_bins.count(values, nan=nan)
    total = int(counts.sum())
    if n_public is not None and total != n_public:
        raise DataError(
            f"With neighbours='replace' the 'n' parameter is the public number of records, "
            f"but the column holds {total} values, not n={n_public}."
        )
    noisy = mech.measure(counts, source)
    return Release(
        bins=the_bins,
        mechanism=mech,
        noisy_levels=noisy,
        estimator=estimator,
        randomness=source.describe(),
        library_version=__version__,
    )
