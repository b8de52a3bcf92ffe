"""Medians beyond the tree: propose-test-release, subsample-and-aggregate, exponential mechanism.

Guarantees at a glance (all with ``replace`` neighbours — one record changed, ``n`` public —
except where stated):

* :func:`stable_median` — (ε, δ)-DP. Propose-test-release with the stability ``Δ(x)``.
* :func:`subsample_and_aggregate` — (ε, δ)-DP. A noisy mode over answers on subsamples.
* :func:`quantile_exponential` — pure ε-DP, ``replace`` or ``add_remove``. Smith's exponential
  mechanism with continuous output.

Noise on integer quantities (stabilities, mode frequencies) is exact discrete Laplace; the
thresholds are derived from the requested δ with the exact discrete-Laplace tail.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy import stats

from treedp._inputs import as_1d_array
from treedp.budget import check_epsilon
from treedp.exceptions import DataError, InvalidParameterError
from treedp.noise import RandomSource, noise_scale, resolve_source, sample_discrete_laplace
from treedp.noise.discrete_laplace import uniform_below
from treedp.noise.exp_thresholds import floor_scaled_exp_neg
from treedp.noise.exponential import sample_weighted_laplace
from treedp.noise.rational import dyadic_lower_bound

__all__ = [
    "MedianResult",
    "QuantileResult",
    "median_stability",
    "noisy_mode",
    "quantile_exponential",
    "stable_median",
    "subsample_and_aggregate",
]


def _values(values: Any) -> np.ndarray:
    arr = as_1d_array(values).astype(np.float64)
    if not np.isfinite(arr).all():
        raise DataError(
            f"The 'values' argument holds {int((~np.isfinite(arr)).sum())} NaN or infinite "
            "value(s); clean the column first."
        )
    if arr.size == 0:
        raise DataError("The 'values' argument is empty.")
    return arr


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, float | int) or not 0 < delta < 1:
        raise InvalidParameterError(
            f"The 'delta' parameter must be a float in (0, 1). Got {delta!r} instead."
        )
    return float(delta)


def _tail_threshold(scale: Fraction, delta: float) -> int:
    """Smallest integer ``a >= 1`` with ``P(Z >= a) = q^a/(1+q) <= delta``, ``Z ~ DLap(scale)``.

    ``q = exp(-1/scale)``. A floating-point estimate proposes ``a``; the inequality
    ``exp(-a/scale) <= delta · (1 + exp(-1/scale))`` is then *certified* with rigorous 128-bit
    bounds on both exponentials (:func:`floor_scaled_exp_neg`), stepping ``a`` up until it holds
    and down while ``a - 1`` still provably holds, so the realised δ never exceeds the request.
    """
    t = Fraction(scale)
    dlt = Fraction(delta)
    p = 128
    # exp(-1/t) >= floor(2**p exp(-1/t)) / 2**p, so the right side is at least:
    rhs = dlt * (1 + Fraction(floor_scaled_exp_neg(1 / t, p), 2**p))

    def holds(a: int) -> bool:
        return Fraction(floor_scaled_exp_neg(a / t, p) + 1, 2**p) <= rhs

    q = math.exp(-1.0 / float(t))
    a = max(1, math.ceil(math.log(delta * (1 + q)) / math.log(q)))
    while not holds(a):
        a += 1
    while a > 1 and holds(a - 1):
        a -= 1
    return a


@dataclass(frozen=True)
class MedianResult:
    """A released statistic, or a refusal (``value is None``), with its guarantee."""

    value: float | None
    epsilon: float
    delta: float
    neighbours: str
    mechanism: str

    @property
    def refused(self) -> bool:
        """True when the mechanism output ⊥."""
        return self.value is None


def median_stability(values: Any) -> tuple[float, int]:
    """The median and its stability ``Δ(x)``: the fewest rows to replace to change it.

    Convention: the median is the lower median ``x_(k)``, ``k = ceil(n/2)`` (1-indexed), an
    actual data value for odd and even ``n``. With ``L`` values below it and ``E`` equal to
    it, lowering it needs ``k - L`` replacements and raising it ``L + E - k + 1``; ``Δ`` is the
    smaller. ``O(n log n)`` (a sort).
    """
    x = np.sort(_values(values))
    n = x.size
    k = (n + 1) // 2
    med = float(x[k - 1])
    below = int(np.searchsorted(x, med, side="left"))
    equal = int(np.searchsorted(x, med, side="right")) - below
    return med, min(k - below, below + equal - k + 1)


def stable_median(
    values: Any,
    *,
    epsilon: float,
    delta: float,
    rng: RandomSource | None = None,
    details: bool = False,
) -> float | MedianResult | None:
    """The stable median (SMed): release the exact median when it is stable, else refuse.

    Draw ``Z ~ DLap(1/ε)`` (exact); release ``median(x)`` when ``Δ(x) + Z >= T``, else ``None``.
    ``T = 1 + a`` with ``a`` the smallest integer such that ``P(Z >= a) <= δ``.

    Guarantee: (ε, δ)-DP for ``replace`` neighbours (n public). Derivation: ``Δ`` is
    1-Lipschitz under replacement (change one row, then ``Δ(x')`` more). If ``Δ(x) >= 2``
    the neighbour has the same median and only the release decision differs, a 1-sensitive
    test with exact Laplace noise: ratio ``e^ε``. If the medians differ then ``Δ(x) = 1`` and
    the release of ``median(x)`` has probability ``P(1 + Z >= T) = P(Z >= a) <= δ``.

    Parameters
    ----------
    values : array-like
        The data (numbers).
    epsilon : float
        The privacy budget of the test.
    delta : float
        The failure probability δ, in (0, 1).
    rng : RandomSource, optional
        Default: the operating system's cryptographic generator.
    details : bool, default=False
        Return a :class:`MedianResult` (value, guarantee) instead of the bare value.

    Returns
    -------
    float or None
        The exact median, or None (refused).

    References
    ----------
    .. [DR14] C. Dwork, A. Roth. The Algorithmic Foundations of Differential Privacy, Ch. 7.
    """
    eps = check_epsilon(epsilon)
    dlt = _check_delta(delta)
    source = resolve_source(rng)
    med, stability = median_stability(values)
    scale = noise_scale(1, eps)
    threshold = 1 + _tail_threshold(scale, dlt)
    z = int(sample_discrete_laplace(scale, 1, source)[0])
    value = med if stability + z >= threshold else None
    result = MedianResult(value, eps, dlt, "replace", "stable_median")
    return result if details else result.value


def _mode(answers: np.ndarray) -> tuple[float, int]:
    uniq, counts = np.unique(answers, return_counts=True)
    best = int(np.argmax(counts))
    return float(uniq[best]), int(counts[best])


_VECTORISED: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "median": lambda block: np.median(block, axis=1),
    "mean": lambda block: block.mean(axis=1),
}


def subsample_and_aggregate(
    values: Any,
    query: str | Callable[[np.ndarray], float],
    *,
    epsilon: float,
    delta: float,
    m: int,
    k: int | None = None,
    variant: str = "replacement",
    resolution: float | None = None,
    rng: RandomSource | None = None,
    details: bool = False,
) -> float | MedianResult | None:
    """Answer ``query`` on subsamples and release the mode of the answers if it is stable.

    Parameters
    ----------
    values : array-like
        The data (numbers).
    query : {"median", "mean"} or callable
        The statistic of one subsample (``"median"`` and ``"mean"`` are vectorised; a callable
        gets one 1-D array per subsample and must return a number).
    epsilon, delta : float
        The budget; the realised δ (reported) is at most ``delta``.
    m : int
        Rows per subsample.
    k : int, optional
        Number of subsamples for ``variant="replacement"`` (default: the seed's
        ``ε (n/m)³``, capped at 5,000). The disjoint variant uses ``floor(n/m)`` blocks.
    variant : {"replacement", "disjoint"}
        ``"replacement"`` (the seed's): ``k`` samples of ``m`` rows with replacement; one row
        appears in ``R ~ Binomial(k, 1 - (1 - 1/n)^m)`` of them, at most ``c`` except with the
        exact binomial tail probability, so the mode frequency has sensitivity ``c``.
        ``"disjoint"``: a random partition into blocks of ``m`` rows; one row changes one
        block's answer, sensitivity 1, no sampling failure.
    resolution : float, optional
        Round every answer to a multiple of this public value before taking the mode (answers
        must agree exactly to form a mode; continuous statistics need a grid).
    rng : RandomSource, optional
        Randomness for the subsampling and the noise.
    details : bool, default=False
        Return a :class:`MedianResult` (with the realised δ) instead of the bare value.

    Returns
    -------
    float or None
        The mode of the answers, or None (refused).

    Notes
    -----
    Guarantee: (ε, δ)-DP, ``replace`` neighbours. With sensitivity ``c`` (``c = 1`` for
    disjoint blocks), ``Z ~ DLap(c/ε)`` and release when ``f + Z >= T``. If ``f - c`` still
    exceeds half the answers, neighbours have the same mode and only the 1-Lipschitz (in units
    of ``c``) test differs: ratio ``e^ε``. Otherwise ``f <= floor(K/2) + c`` and the release
    has probability at most ``P(Z >= T - floor(K/2) - c)``, which ``T`` makes at most the
    remaining δ. The realised δ adds the sampling failure ``P(R > c)`` (replacement variant),
    computed exactly for the ``k`` used.
    """
    eps = check_epsilon(epsilon)
    dlt = _check_delta(delta)
    source = resolve_source(rng)
    x = _values(values)
    n = x.size
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= n:
        raise InvalidParameterError(f"The 'm' parameter must be an int in [1, n={n}]. Got {m!r}.")
    if variant not in ("replacement", "disjoint"):
        raise InvalidParameterError(
            f"The 'variant' parameter must be 'replacement' or 'disjoint'. Got {variant!r}."
        )
    if resolution is not None and not (isinstance(resolution, float | int) and resolution > 0):
        raise InvalidParameterError(
            f"The 'resolution' parameter must be a positive number. Got {resolution!r}."
        )
    if isinstance(query, str) and query not in _VECTORISED:
        raise InvalidParameterError(
            f"The 'query' parameter must be 'median', 'mean' or a callable. Got {query!r}."
        )
    if not isinstance(query, str) and not callable(query):
        raise InvalidParameterError("The 'query' parameter must be 'median', 'mean' or a callable.")
    if variant == "disjoint":
        blocks = n // m
        if blocks < 2:
            raise InvalidParameterError(f"The disjoint variant needs n >= 2m (n={n}, m={m}).")
        perm = np.argsort(np.frombuffer(source.random_bytes(8 * n), dtype=np.uint64))
        index = perm[: blocks * m].reshape(blocks, m)
        count, sensitivity, sampling_delta = blocks, 1, 0.0
    else:
        count = int(min(5000, max(2, math.ceil(eps * (n / m) ** 3)))) if k is None else k
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise InvalidParameterError(f"The 'k' parameter must be an int >= 2. Got {k!r}.")
        p_row = -math.expm1(m * math.log1p(-1.0 / n)) if n > 1 else 1.0
        sensitivity = 1
        while stats.binom.sf(sensitivity, count, p_row) > dlt / 2:
            sensitivity += 1
        sampling_delta = float(stats.binom.sf(sensitivity, count, p_row))
        index = uniform_below(n, count * m, source).astype(np.int64).reshape(count, m)
    answers = _answers(x, index, query)
    if resolution is not None:
        answers = np.round(answers / resolution) * resolution
    value, realised = noisy_mode(
        answers,
        epsilon=eps,
        delta=dlt,
        sensitivity=sensitivity,
        sampling_delta=sampling_delta,
        rng=source,
    )
    result = MedianResult(value, eps, realised, "replace", f"subsample_and_aggregate:{variant}")
    return result if details else result.value


def noisy_mode(
    answers: np.ndarray,
    *,
    epsilon: float,
    delta: float,
    sensitivity: int,
    sampling_delta: float = 0.0,
    rng: RandomSource | None = None,
) -> tuple[float | None, float]:
    """Release the mode of ``answers`` when its frequency, plus exact noise, clears a threshold.

    ``sensitivity`` bounds how many answers one changed row can change (``c``); the noise is
    ``DLap(c/ε)`` and the threshold ``floor(K/2) + c + a`` with ``P(Z >= a) <= δ -
    sampling_delta``. Returns the mode or None, and the realised δ.
    """
    source = resolve_source(rng)
    count = answers.size
    if count // 2 + 2 * sensitivity >= count:
        raise InvalidParameterError(
            f"Too few subsamples for the noise: K={count} answers with sensitivity "
            f"{sensitivity}; use a smaller m or a larger k."
        )
    if delta - sampling_delta <= 0:
        raise InvalidParameterError(
            f"The sampling failure {sampling_delta:.3g} already exceeds delta={delta}."
        )
    mode, freq = _mode(answers)
    scale = noise_scale(sensitivity, epsilon)
    a = _tail_threshold(scale, delta - sampling_delta)
    threshold = count // 2 + sensitivity + a
    z = int(sample_discrete_laplace(scale, 1, source)[0])
    q = math.exp(-1 / float(scale))
    realised = sampling_delta + q**a / (1 + q)
    return (mode if freq + z >= threshold else None), realised


def _answers(x: np.ndarray, index: np.ndarray, query: Any) -> np.ndarray:
    if isinstance(query, str):
        return _VECTORISED[query](x[index])
    return np.array([float(query(x[row])) for row in index])


#: The exponential mechanism's output grid: 2**48 equal cells of [lo, hi], output at midpoints.
GRID_BITS = 48
#: The target rank q·n is rounded down to a multiple of 2**-TARGET_BITS (so the score is rational).
TARGET_BITS = 32


@dataclass(frozen=True)
class QuantileResult:
    """Exponential-mechanism quantiles with their guarantee.

    Attributes
    ----------
    values : ndarray
        The released quantiles, one per level (shape ``(size, len(q))`` when drawn ``size`` times).
    q : ndarray
        The levels.
    epsilon : float
        The total budget requested.
    epsilon_spent : float
        The budget actually spent, ``sum over q of 2 Δ · rate <= epsilon`` (the rate is rounded
        down to a dyadic rational).
    neighbours : str
    sensitivity : tuple of float
        ``Δ`` of the score for each level.
    grid_points : int
        The size of the public output grid.
    """

    values: np.ndarray
    q: np.ndarray
    epsilon: float
    epsilon_spent: float
    neighbours: str
    sensitivity: tuple[float, ...]
    grid_points: int
    mechanism: str = "quantile_exponential"


def _grid_values(k: np.ndarray, lo: float, hi: float, half: float) -> np.ndarray:
    """The public grid point ``k``: the midpoint of cell ``k``, kept inside ``[lo, hi]``.

    ``half`` is half a cell half, ``hi/2**49 - lo/2**49``; the point is computed at half scale,
    ``2·(lo/2 + (k + 1/2)·half)``, so no intermediate overflows even for bounds near the
    largest float. Non-decreasing in ``k`` (floating-point multiplication and addition are
    monotone; halving and doubling are exact).
    """
    return np.clip(2.0 * (lo / 2 + (k.astype(np.float64) + 0.5) * half), lo, hi)


def _grid_count_at_most(x: np.ndarray, lo: float, hi: float, half: float) -> np.ndarray:
    """``#{k : grid(k) <= x}`` for each ``x``, exactly.

    The answer is the ``k`` with ``grid(k - 1) <= x < grid(k)``. A floating-point guess is
    corrected by a few unit steps; values still unresolved (grid points that round to the same
    float, when the bounds are narrow) are settled by bisection on ``[0, 2**48]``.
    """
    cells = 1 << GRID_BITS

    def at(k: np.ndarray) -> np.ndarray:
        return _grid_values(np.clip(k, 0, cells - 1), lo, hi, half)

    guess = np.floor((np.clip(x, lo, hi) / 2 - lo / 2) / half + 0.5)
    k = np.clip(guess, 0, cells).astype(np.int64)
    for _ in range(4):
        up = (k < cells) & (at(k) <= x)
        down = (k > 0) & (at(k - 1) > x)
        if not (up.any() or down.any()):
            return k
        k = k + up - down
    todo = np.flatnonzero(((k < cells) & (at(k) <= x)) | ((k > 0) & (at(k - 1) > x)))
    low = np.zeros(todo.size, dtype=np.int64)  # invariant: grid(low - 1) <= x, grid(high) > x
    high = np.full(todo.size, cells, dtype=np.int64)
    xt = x[todo]
    while (low < high).any():
        mid = (low + high) // 2
        above = at(mid) > xt
        high = np.where(above, mid, high)
        low = np.where(above, low, mid + 1)
    k[todo] = low
    return k


def _score_sensitivity(level: Fraction, neighbours: str) -> Fraction:
    """Δ of the score ``-|i - t(n)|``, ``i = #{x < y}``, ``t(n) = floor(q n 2**L) / 2**L``.

    ``replace``: ``n`` is fixed and one record moves, so ``i`` changes by at most 1: ``Δ = 1``.
    ``add_remove``: a record added below ``y`` raises ``i`` by 1 and ``t`` by ``t(n+1) - t(n)``,
    which lies within ``2**-L`` of ``q``; one added above moves only ``t``. So ``Δ = max(q,
    1 - q) + 2**-L``.
    """
    if neighbours == "replace":
        return Fraction(1)
    return max(level, 1 - level) + Fraction(1, 2**TARGET_BITS)


def quantile_exponential(
    values: Any,
    q: Any,
    *,
    bounds: tuple[float, float],
    epsilon: float,
    neighbours: str = "replace",
    rng: RandomSource | None = None,
    size: int | None = None,
    details: bool = False,
) -> Any:
    """Smith's exponential-mechanism quantile, on a fine public grid, sampled exactly.

    The output space is a public grid of ``2**48`` points in ``[lo, hi]`` (the midpoints of equal
    cells; the resolution is ``(hi - lo) / 2**48``, finer than most data). Grid point ``y`` has
    score ``-|i(y) - t|`` with ``i(y) = #{x_j < y}`` (data outside the bounds count as at the
    bound) and target ``t = floor(q n 2**32) / 2**32`` (``q n`` rounded down by less than
    ``2**-32`` ranks), and is output with probability ``∝ exp(-rate · |i(y) - t|)``, ``rate <=
    ε / (2Δ)``. The grid points with rank ``i`` are counted exactly (data and grid compared in
    floating point, both public-rule exact), so the mechanism is Smith's continuous one with
    the uniform measure replaced by the counting measure on the grid.

    The selection is sampled exactly (:func:`treedp.noise.exponential.sample_weighted_laplace`):
    integer weights, a dyadic rate and integer-arithmetic Bernoulli trials on uniform words from
    ``rng`` (default: the operating system's generator). ``n = 10**7`` or heavy ties (ranks with
    no grid point get weight 0) need no floating-point exponentials at all.

    Guarantee: pure ε-DP. Under ``replace`` (``n`` public) ``Δ = 1``; under ``add_remove``
    ``Δ = max(q, 1 - q) + 2**-32`` (see :func:`_score_sensitivity`). The rate is ``ε/(2Δ)``
    rounded *down* to ``A / 2**k`` with a 31-bit ``A``, so the budget spent is at most ε (and
    at least ``ε (1 - 2**-29)``). Several ``q`` split ε equally (basic composition).

    Parameters
    ----------
    values : array-like
        The data; ``len(values) < 2**32``.
    q : float or array-like
        Quantile levels in [0, 1].
    bounds : (lo, hi)
        Public bounds; the output lies in them and data outside count as at the bound.
    epsilon : float
        Total budget over all ``q``.
    neighbours : {"replace", "add_remove"}
    rng : RandomSource, optional
    size : int, optional
        Draw this many independent outputs per ``q`` (for simulations), shape ``(size, ...)``.
    details : bool, default=False
        Return a :class:`QuantileResult` with the guarantee instead of the values alone.

    References
    ----------
    .. [Smi11] A. Smith. "Privacy-preserving statistical estimation with optimal convergence
       rates". STOC 2011.
    """
    eps = check_epsilon(epsilon)
    if neighbours not in ("replace", "add_remove"):
        raise InvalidParameterError(
            f"The 'neighbours' parameter must be 'replace' or 'add_remove'. Got {neighbours!r}."
        )
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(f"The 'bounds' parameter must be a pair. Got {bounds!r}.")
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError(f"The 'bounds' must be finite with lo < hi. Got {bounds!r}.")
    half = hi / 2 ** (GRID_BITS + 1) - lo / 2 ** (GRID_BITS + 1)
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0 or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or size < 1):
        raise InvalidParameterError(f"The 'size' parameter must be an int >= 1. Got {size!r}.")
    source = resolve_source(rng)
    x = np.sort(_values(values))
    n = x.size
    if n >= 2**32:
        raise DataError(f"quantile_exponential takes fewer than 2**32 values. Got {n}.")
    # Grid points with exactly i data values below them: [count(<= x_(i)), count(<= x_(i+1))).
    starts = np.concatenate([[0], _grid_count_at_most(x, lo, hi, half), [1 << GRID_BITS]])
    weights = np.diff(starts)
    eps_each = Fraction(eps) / qa.size
    draws = 1 if size is None else size
    out = np.empty((draws, qa.size))
    spent = Fraction(0)
    sens: list[float] = []
    for j, level in enumerate(qa):
        exact_level = Fraction(float(level))
        target = Fraction(math.floor(exact_level * n * 2**TARGET_BITS), 2**TARGET_BITS)
        delta_score = _score_sensitivity(exact_level, neighbours)
        rate = dyadic_lower_bound(eps_each / (2 * delta_score))
        spent += 2 * delta_score * rate
        sens.append(float(delta_score))
        units = sample_weighted_laplace(weights, target, rate, draws, source)
        out[:, j] = _grid_values(units, lo, hi, half)
    values_out = out[0] if size is None else out
    if details:
        return QuantileResult(
            values_out, qa, eps, float(spent), neighbours, tuple(sens), 1 << GRID_BITS
        )
    if size is None:
        return float(values_out[0]) if np.ndim(q) == 0 else values_out
    return out if np.ndim(q) else out[:, 0]
