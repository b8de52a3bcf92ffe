"""Which quantile method :func:`treedp.quantiles` runs, and the tree's bins: public rules only.

The rules read the number of distinct levels, ε, the bins and a public (or privately released)
``n``, never the data; docs/quantiles.md measures each threshold.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._validation import check_int, must
from treedp.budget import check_epsilon
from treedp.exceptions import InvalidParameterError, InvalidTypeError

#: The methods :func:`quantiles` can use.
METHODS: tuple[str, ...] = ("auto", "exponential", "recursive", "tree", "permute_and_flip")
#: One level on integer bins over public bounds holding at most this many integers:
#: ``"auto"`` selects by permute-and-flip over them (its expected rank gap is never above the
#: exponential mechanism's on the same candidates; docs/quantiles.md, "Permute-and-flip").
PERMUTE_AND_FLIP_INTEGERS = 2**20
#: Below this ε the tree is cheaper (fewer bins) and takes over from fewer levels.
LOW_EPSILON = 0.5
#: With at least this many distinct levels, ``"auto"`` reads them off the tree CDF (ε >=
#: :data:`LOW_EPSILON`).
TREE_MIN_LEVELS = 64
#: The same below :data:`LOW_EPSILON`.
TREE_MIN_LEVELS_LOW_EPSILON = 13
#: Below :data:`LOW_EPSILON` with a public ``n`` and :data:`VERY_FEW_RECORDS` ``<= n · ε <``
#: :data:`FEW_RECORDS`: the recursive method's nodes hold too few records for their budget
#: and the tree wins from :data:`TREE_MIN_LEVELS_FEW_RECORDS` levels.
FEW_RECORDS = 1000
#: See :data:`FEW_RECORDS`.
TREE_MIN_LEVELS_FEW_RECORDS = 7
#: With a public ``n`` and ``n · ε <`` :data:`VERY_FEW_RECORDS` (any ε): the tree on its
#: :data:`MIN_TREE_BINS`--128 bins from :data:`TREE_MIN_LEVELS_VERY_FEW_RECORDS` levels. On
#: data that fill their bounds the tree wins from 5 levels (measured at ``n · ε = 100``), but
#: its 64 bins put data in a small part of wide bounds into one bin (5 levels of Pareto or
#: uniform(0, 1) data on [0, 1000]: rank error 500 of 1,000, against 85–87 for the recursive
#: method and 84–88 for OpenDP's tree); at 5 levels the recursion still beats every peer on
#: the issue's grid (docs/quantiles.md, "Robust to where the data lie").
VERY_FEW_RECORDS = 200
#: See :data:`VERY_FEW_RECORDS`.
TREE_MIN_LEVELS_VERY_FEW_RECORDS = 7
#: From :data:`LOW_EPSILON` with a public ``n`` and :data:`VERY_FEW_RECORDS` ``<= n · ε <``
#: :data:`FEW_RECORDS_HIGH_EPSILON` (the tree on at most 512 bins): the tree from
#: :data:`TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON` levels. On data that fill their bounds it
#: wins from 17, but on data in a small part of wide bounds its 512 bins lose 7–50× at 29
#: levels (Pareto on [0, 1000]: 135 against 9.3 for the recursion); at 29 levels the recursion
#: still beats every peer on the grid, at 39 it does not (docs/quantiles.md, "Robust to where
#: the data lie").
FEW_RECORDS_HIGH_EPSILON = 1024
#: See :data:`FEW_RECORDS_HIGH_EPSILON`.
TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON = 30
#: The same band where the concentration gate runs before the tree (``auto``'s private count
#: on public numeric bounds, :mod:`treedp.value_methods.concentration_gate`): the gate sends
#: data in a small part of the bounds to finer bins, the reason for 30 above, so the tree
#: from 17 levels, where it wins on data that fill their bounds (n = 10^3, ε = 1, 29 levels,
#: 20 repetitions: uniform 9.7 → 7.0, python-dp's 8.0; Pareto 9.4 → 11.1, its 17.6;
#: docs/quantiles.md, "A concentration gate").
TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON_GATED = 17
#: Below :data:`LOW_EPSILON` with a public ``n`` and :data:`FEW_RECORDS` ``<= n · ε <``
#: :data:`SOME_RECORDS_LOW_EPSILON`: the recursive method's nodes hold enough records to win
#: up to about 17 levels.
TREE_MIN_LEVELS_PUBLIC_N_LOW_EPSILON = 24
#: Below :data:`LOW_EPSILON` with a public ``n`` and ``n · ε >=`` this: the recursive method
#: wins up to about 29 levels (at ``n · ε = 10^4``, 30 repetitions: within 1.08× of the tree
#: on normal and uniform data, 1.35× better on lognormal), the tree from
#: :data:`TREE_MIN_LEVELS_PUBLIC_N` (as from :data:`LOW_EPSILON` at the same ``n · ε``).
SOME_RECORDS_LOW_EPSILON = 10_000
#: From :data:`LOW_EPSILON` with a public ``n`` and ``n · ε <`` :data:`MANY_RECORDS`: the
#: tree (on its ε-default bins) wins from about 49 levels.
TREE_MIN_LEVELS_PUBLIC_N = 40
#: On integer bins (``bins="integers"``), the tree CDF from this many distinct levels on.
TREE_MIN_LEVELS_DISCRETE = 2
#: On integer bins over public bounds holding more than this many integers, the tree (one bin
#: per integer) only from :data:`TREE_MIN_LEVELS` levels, the recursive method below: a tree
#: that deep loses to the recursion (docs/quantiles.md, "Other data": 10^5 integers, 5 levels,
#: rank error 105–145 against 41–51 at ε = 0.1; 2048 integers mixed, 8192 and 16,384 the
#: recursion ahead or level at every ``n``, ε and ``m <= 29`` measured).
WIDE_INTEGER_RANGE = 4096
#: Equal-width bins of the tree CDF when ``bins`` is not given: without ``n`` at any ε, and
#: with a public ``n`` from :data:`LOW_EPSILON` (:func:`tree_bins`).
DEFAULT_TREE_BINS = 2048
#: With a public ``n`` below :data:`LOW_EPSILON`: the bins for ``n · ε`` from this value up to
#: :data:`MANY_RECORDS` (:func:`tree_bins`; without ``n`` the tree uses
#: :data:`DEFAULT_TREE_BINS`).
DEFAULT_TREE_BINS_LOW_EPSILON = 1024
#: With a public ``n``: from this ``n · ε`` on the tree's bins grow as ``√(n ε)``
#: (:func:`tree_bins`).
MANY_RECORDS = 50_000
#: See :data:`MANY_RECORDS`: ``n · ε = 10^5`` gives 8192 bins, ``10^6`` 16,384.
BINS_PER_SQRT_RECORDS = 32
#: The most equal-width bins :func:`tree_bins` picks.
MAX_TREE_BINS = 2**16
#: The fewest equal-width bins :func:`tree_bins` picks: with a public ``n`` and a small
#: ``n · ε`` the bins are the largest power of two at most ``n · ε``, and at least this.
MIN_TREE_BINS = 64
#: The default share of ``epsilon`` that ``n="private"`` spends on a noisy count of the
#: records (:func:`quantiles`; chosen by measurement, docs/quantiles.md, "Private n").
DEFAULT_N_SHARE = 0.02
#: What :attr:`QuantilesResult.n_source` can say about the ``n`` the rules saw.
N_SOURCES: tuple[str, ...] = ("none", "public", "private", "not needed")


def tree_bins(epsilon: float, n: int | None = None) -> int:
    """The number of equal-width bins the tree method uses when ``bins`` is not given.

    A quantile read off the tree CDF is wrong by the noise of the prefix count at it plus the
    records of the bin it is interpolated in. The noise grows with the number of bins (a
    deeper tree) and as ``1/ε``; the interpolation error shrinks with more bins and grows with
    the number of records per bin. Without ``n``: :data:`DEFAULT_TREE_BINS` at every ε
    (docs/quantiles.md, "Against the peers": at ε = 0.1 and 99 levels, 1024 bins are up to
    14% better than 2048 at 10^3–10^4 records but 2.7× worse on lognormal data of 10^6
    records on the bounds [0, 100], 318 against 120, where OpenDP's 2048-bin b-ary tree
    beats them; at ε = 1, 2048 bins beat 4096 on five of six datasets).

    With a public ``n`` (given by the user, never the data's count) the ε default is
    :data:`DEFAULT_TREE_BINS_LOW_EPSILON` below :data:`LOW_EPSILON`, else
    :data:`DEFAULT_TREE_BINS` (at ε = 0.1, 1024 bins were the best of 1024 / 2048 / 4096, or
    within 1% of it, on the table's datasets up to ``n · ε = 10^4``). With ``n · ε`` below
    that default, fewer bins: the largest power of two at most ``n · ε``, at least
    :data:`MIN_TREE_BINS` (with few records per unit of noise the prefix noise dominates, and
    a smaller, shallower tree cuts it: at ``n · ε = 100`` 64 bins against 1024 take the mean
    rank error from 71 to 40 on normal, 70 to 48 on lognormal and 52 to 34 on uniform data;
    at ``n · ε = 1000`` 512 bins beat or tie the default on all three; measured in
    docs/quantiles.md). From the ε default to :data:`MANY_RECORDS` the ε default is kept (up
    to ``n · ε = 10^4`` it was the best or within the noise on every dataset measured). From
    ``n · ε >=`` :data:`MANY_RECORDS` the bins grow as ``√(n ε)``: the largest power of two
    at most :data:`BINS_PER_SQRT_RECORDS` ``· √(n ε)``, at least the ε default and at most
    :data:`MAX_TREE_BINS` (the interpolation error of a smooth density falls as the square
    of the bin width, the noise only as a power of the tree's depth). The bins never
    decrease as ``n`` grows. Same ``epsilon`` and ``n``, same bins: the rule reads public
    parameters only. A wrong ``n`` costs accuracy, never privacy, but an ``n`` far below the
    true count can cost much on data concentrated in a small part of the bounds (too few
    bins there).

    Parameters
    ----------
    epsilon : float
        The budget of the tree release.
    n : int, optional
        The public number of records (see :func:`treedp.quantiles`).

    Returns
    -------
    int
        A power of two.
    """
    if n is None:
        return DEFAULT_TREE_BINS
    base = DEFAULT_TREE_BINS_LOW_EPSILON if epsilon < LOW_EPSILON else DEFAULT_TREE_BINS
    n = check_int(n, "n", lo=0)
    records = n * check_epsilon(epsilon)
    if records < base:  # few records per unit of noise: fewer bins, a shallower tree
        # the largest power of two <= n ε (exact on the given float ε), at least the floor
        few = math.floor(n * Fraction(epsilon))
        return max(MIN_TREE_BINS, 1 << (few.bit_length() - 1)) if few >= 1 else MIN_TREE_BINS
    if records < MANY_RECORDS:
        return base
    # the largest power of two <= BINS_PER_SQRT_RECORDS * sqrt(n ε), from exact integers
    target = math.isqrt(int(BINS_PER_SQRT_RECORDS**2 * records))
    return min(MAX_TREE_BINS, max(base, 1 << (target.bit_length() - 1)))


#: With a public ``n``: ``(n · ε below, the tree from this many levels)``, the first that
#: applies, from :data:`LOW_EPSILON` on and below it (:func:`choose_method`).
_PUBLIC_N_RULES: tuple[tuple[float, int], ...] = (
    (VERY_FEW_RECORDS, TREE_MIN_LEVELS_VERY_FEW_RECORDS),
    (FEW_RECORDS_HIGH_EPSILON, TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON),
    (MANY_RECORDS, TREE_MIN_LEVELS_PUBLIC_N),
    (math.inf, TREE_MIN_LEVELS),
)
#: The same from :data:`LOW_EPSILON` where the concentration gate runs before the tree.
_GATED_RULES: tuple[tuple[float, int], ...] = (
    (VERY_FEW_RECORDS, TREE_MIN_LEVELS_VERY_FEW_RECORDS),
    (FEW_RECORDS_HIGH_EPSILON, TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON_GATED),
    (MANY_RECORDS, TREE_MIN_LEVELS_PUBLIC_N),
    (math.inf, TREE_MIN_LEVELS),
)
_PUBLIC_N_RULES_LOW_EPSILON: tuple[tuple[float, int], ...] = (
    (VERY_FEW_RECORDS, TREE_MIN_LEVELS_VERY_FEW_RECORDS),
    (FEW_RECORDS, TREE_MIN_LEVELS_FEW_RECORDS),
    (SOME_RECORDS_LOW_EPSILON, TREE_MIN_LEVELS_PUBLIC_N_LOW_EPSILON),
    (math.inf, TREE_MIN_LEVELS_PUBLIC_N),
)


def choose_method(
    m: int,
    *,
    epsilon: float,
    bins: Any = None,
    n: int | None = None,
    no_bounds: bool = False,
    bounds: Any = None,
    gated: bool = False,
    target: bool = False,
) -> str:
    """The method ``method="auto"`` uses: a rule on public parameters only.

    One level: ``"exponential"`` (Smith's mechanism spends the whole budget on it), but
    ``"permute_and_flip"`` on integer bins over public bounds holding at most
    :data:`PERMUTE_AND_FLIP_INTEGERS` integers, unless ``target`` (a zCDP or (ε, δ) target,
    where the exponential mechanism's bounded-range cost, ``ε²/8``, lets it run at twice the
    ε of a pure-ε selection, ``ε²/2``). Integer
    bins with at least :data:`TREE_MIN_LEVELS_DISCRETE` levels: ``"tree"`` (on tied data its
    quantiles are values of the domain), except on public ``bounds`` holding more than
    :data:`WIDE_INTEGER_RANGE` integers, where the tree (one bin per integer) is too deep:
    there ``"recursive"`` (its integer mode) below :data:`TREE_MIN_LEVELS` levels, whatever
    ``n`` (public bounds; with ``bounds="private"``, ``bounds=None`` here, the tree is planned
    and the same rule reads the released bounds after the bounds step:
    :func:`treedp.quantiles_fallback.found_range_takes`). Otherwise
    ``"tree"`` from a number of levels, else ``"recursive"``: the tree's rank error does not
    grow with the number of levels, the recursive method's does, and the crossover moves with
    the records per node (``n · ε``).

    Without ``n``: from :data:`TREE_MIN_LEVELS` levels (:data:`TREE_MIN_LEVELS_LOW_EPSILON`
    when ``epsilon <`` :data:`LOW_EPSILON`), a compromise over ``n`` from 10^3 to 10^5. With
    ``no_bounds`` (both bounds private: the recursive method then needs no bounds step, the
    tree does) from :data:`TREE_MIN_LEVELS` at any ε (docs/private_bounds.md: at ε = 0.05,
    n = 10^4 and 13 or 29 levels the recursion's rank error is 3.6–4.6× lower on lognormal
    and zero-inflated data, 1.2–1.8× higher on normal data). With ``no_bounds`` and a
    ``target`` (a zCDP or (ε, δ) target, which the tree's pure-ε bounds scan cannot meet; one
    public side then counts as ``no_bounds`` too) ``"recursive"`` from two levels.

    With a public ``n`` (given by the user, never the data's count; or with
    ``n="private"`` a DP release of the count; see :func:`treedp.quantiles`; the tree then
    runs on ``tree_bins(epsilon, n)`` bins): from
    :data:`TREE_MIN_LEVELS_VERY_FEW_RECORDS` levels when ``n · ε <`` :data:`VERY_FEW_RECORDS`
    (any ε). Otherwise, below :data:`LOW_EPSILON`: from :data:`TREE_MIN_LEVELS_FEW_RECORDS`
    levels when ``n · ε <`` :data:`FEW_RECORDS`, from
    :data:`TREE_MIN_LEVELS_PUBLIC_N_LOW_EPSILON` when ``n · ε <``
    :data:`SOME_RECORDS_LOW_EPSILON`, else from :data:`TREE_MIN_LEVELS_PUBLIC_N`; from
    :data:`LOW_EPSILON`: from
    :data:`TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON` levels when ``n · ε <``
    :data:`FEW_RECORDS_HIGH_EPSILON`, from :data:`TREE_MIN_LEVELS_PUBLIC_N` levels when
    ``n · ε <`` :data:`MANY_RECORDS`, else from :data:`TREE_MIN_LEVELS`. The crossovers are
    measured in docs/quantiles.md. With ``gated`` (the concentration gate will run before
    the tree: a private count on public numeric bounds) the band from
    :data:`VERY_FEW_RECORDS` to :data:`FEW_RECORDS_HIGH_EPSILON` at ε >= :data:`LOW_EPSILON`
    takes the tree from :data:`TREE_MIN_LEVELS_FEW_RECORDS_HIGH_EPSILON_GATED` levels.
    """
    if n is not None:
        n = check_int(n, "n", lo=0)
    if m <= 1:
        return _one_level(bins, bounds, target)
    if target and no_bounds:  # the tree's bounds scan is a pure-ε step: over every float
        return "recursive"
    if bins == "integers" and m >= TREE_MIN_LEVELS_DISCRETE:
        return _integer_choice(m, bounds)
    if n is None:
        low = epsilon < LOW_EPSILON and not no_bounds
        threshold = TREE_MIN_LEVELS_LOW_EPSILON if low else TREE_MIN_LEVELS
    else:
        rules = _PUBLIC_N_RULES if epsilon >= LOW_EPSILON else _PUBLIC_N_RULES_LOW_EPSILON
        rules = _GATED_RULES if gated and epsilon >= LOW_EPSILON else rules
        threshold = next(levels for below, levels in rules if n * epsilon < below)
    return "tree" if m >= threshold else "recursive"


def _one_level(bins: Any, bounds: Any, target: bool = False) -> str:
    """One level: permute-and-flip over the integers of narrow enough public integer bounds
    (pure ε), else the exponential mechanism (:func:`choose_method`)."""
    count = _integers_in(bounds) if bins == "integers" and not target else None
    fits = count is not None and count <= PERMUTE_AND_FLIP_INTEGERS
    return "permute_and_flip" if fits and max(map(abs, bounds)) < 2**53 else "exponential"


def _integers_in(bounds: Any) -> int | None:
    """The number of integers in public numeric ``bounds`` ``(lo, hi)``; None for anything
    else (no bounds, private ones, datetimes: refused or checked by the methods later)."""
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        return None
    real = (int, float, np.integer, np.floating)
    if not all(isinstance(b, real) and not isinstance(b, bool) for b in bounds):
        return None
    try:
        lo, hi = float(bounds[0]), float(bounds[1])
    except OverflowError:  # an int beyond the float range: refused by the method's checks
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        return None
    return math.floor(hi) - math.ceil(lo) + 1


def _integer_choice(m: int, bounds: Any) -> str:
    """The method on integer bins from :data:`TREE_MIN_LEVELS_DISCRETE` levels: the tree,
    but the recursion below :data:`TREE_MIN_LEVELS` levels on a range of more than
    :data:`WIDE_INTEGER_RANGE` public integers."""
    count = _integers_in(bounds)
    wide = count is not None and count > WIDE_INTEGER_RANGE
    return "recursive" if wide and m < TREE_MIN_LEVELS else "tree"


def _fixed_choice(m: int, epsilon: float, bins: Any, method: str, bounds: Any = None) -> str | None:
    """The method :func:`quantiles` runs when neither it nor the tree's bins can depend on
    ``n`` (a count would be wasted), else None. Public parameters only (``bounds``: the
    public bounds, None when private)."""
    if method not in ("auto", "tree"):  # a fixed selection method
        return method
    if method == "tree":
        return None if bins is None else "tree"
    if m <= 1:
        return _one_level(bins, bounds)
    if bins == "integers" and m >= TREE_MIN_LEVELS_DISCRETE:
        return _integer_choice(m, bounds)
    rules = _PUBLIC_N_RULES if epsilon >= LOW_EPSILON else _PUBLIC_N_RULES_LOW_EPSILON
    levels = [at for _, at in rules]
    if m < min(levels):  # recursive for every n
        return "recursive"
    if m >= max(levels) and bins is not None:  # the tree for every n, on the given bins
        return "tree"
    return None


def check_n_share(n_share: Any, bounds_share: float | None) -> float:
    """``n_share`` (default :data:`DEFAULT_N_SHARE`) in (0, 1), leaving a rest after the
    bounds' share when ``bounds_share`` is given."""
    if n_share is None:
        n_share = DEFAULT_N_SHARE
    if isinstance(n_share, bool) or not isinstance(n_share, int | float):
        raise InvalidTypeError(
            must("n_share", f"be a float in (0, 1). Got {type(n_share).__name__}.")
        )
    if not 0 < n_share < 1:
        raise InvalidParameterError(must("n_share", f"be a float in (0, 1). Got {n_share!r}."))
    valid = isinstance(bounds_share, float | int) and 0 < bounds_share < 1  # else refused later
    if bounds_share is not None and valid and not bounds_share + n_share < 1:
        raise InvalidParameterError(
            "The 'bounds_share' and 'n_share' parameters must add up to less than 1 (the rest "
            "releases the quantiles)."
        )
    return float(n_share)
