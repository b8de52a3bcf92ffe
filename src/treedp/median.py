"""Medians beyond the tree: propose-test-release, subsample-and-aggregate, exponential mechanism.

Guarantees at a glance (``replace`` neighbours — one record changed, ``n = len(values)``
public — except where stated):

* :func:`stable_median` — (ε, δ)-DP. Propose-test-release with the stability ``Δ(x)``.
* :func:`subsample_and_aggregate` — (ε, δ)-DP. A noisy mode over answers on subsamples.
* :func:`quantile_exponential` — pure ε-DP, ``replace`` or ``add_remove``. Smith's exponential
  mechanism with continuous output; defined on every dataset, the empty one included.

Noise on integer quantities (stabilities, mode frequencies) is exact discrete Laplace; the
thresholds are derived from the requested δ with the exact discrete-Laplace tail, certified by
integer arithmetic, and so is the sampling failure of the subsampling.

Missing values (NaN, NaT) are outside the data domain under ``nan="error"`` (the default): the
call raises a :class:`~treedp.exceptions.DataError` whose message holds no count, value or
shape. ``quantile_exponential(..., neighbours="add_remove", nan="drop")`` drops them record by
record instead. ``±inf`` are ordinary, orderable values (clamped to the bounds by the
exponential mechanism).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

import numpy as np

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
    "noisy_mode",
    "quantile_exponential",
    "stable_median",
    "subsample_and_aggregate",
]

_NAN_MESSAGE = (
    "The 'values' argument contains NaN/NaT values; pass nan='drop' to drop them (keeps the "
    "add/remove guarantee)."
)
_NAN_MESSAGE_REPLACE = (
    "The 'values' argument contains NaN/NaT values; clean the column first (under replace "
    "neighbours the number of records is public, so they cannot be dropped here)."
)
#: Marks results made with a seeded, reproducible source (the CLI prints the same marker).
SEEDED_MARKER = "[SEEDED: not for publication]"


def _check_nan(nan: Any, neighbours: str) -> str:
    """Validate the missing-value policy against the neighbour relation (public parameters)."""
    if nan not in ("error", "drop"):
        raise InvalidParameterError(
            f"The 'nan' parameter must be 'error' or 'drop'. Got {nan!r} instead."
        )
    if nan == "drop" and neighbours == "replace":
        raise InvalidParameterError(
            "nan='drop' is not allowed with neighbours='replace': dropping would make the number "
            "of records private while replace treats it as public. Clean the column first, or "
            "use neighbours='add_remove'."
        )
    return nan


def _values(values: Any, nan: str = "error", message: str = _NAN_MESSAGE) -> np.ndarray:
    """The data as float64, with missing values (NaN, NaT) refused or dropped per ``nan``.

    ``±inf`` are kept: they are orderable. Datetimes become their integer ticks (as floats).
    Neither the message nor anything else here depends on how many values are missing.
    """
    arr = as_1d_array(values)
    missing = np.isnat(arr) if arr.dtype.kind == "M" else None
    arr = arr.astype(np.float64)
    if missing is None:
        missing = np.isnan(arr)
    if missing.any():
        if nan != "drop":
            raise DataError(message)
        arr = arr[~missing]
    return arr


def _check_delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, float | int) or not 0 < delta < 1:
        raise InvalidParameterError(
            f"The 'delta' parameter must be a float in (0, 1). Got {delta!r} instead."
        )
    return float(delta)


def _precision(delta: float) -> int:
    """Working bits for certifying a probability against ``delta``: 128 beyond ``log2(1/δ)``."""
    return 128 + max(0, math.ceil(-math.log2(delta)))


def _tail_threshold(scale: Fraction, delta: float) -> int:
    """Smallest integer ``a >= 1`` with ``P(Z >= a) = q^a/(1+q) <= delta``, ``Z ~ DLap(scale)``.

    ``q = exp(-1/scale)``. A floating-point estimate proposes ``a``; the inequality
    ``exp(-a/scale) <= delta · (1 + exp(-1/scale))`` is then *certified* with rigorous
    ``p``-bit bounds on both exponentials (:func:`floor_scaled_exp_neg`), stepping ``a`` up
    until it holds and down while ``a - 1`` still provably holds, so the realised δ never
    exceeds the request.

    The precision is ``p = 128 + ceil(log2(1/δ))``: the upper bound of ``exp(-a/scale)`` is at
    most ``2**-p`` above the true value, far below the right side (at least ``δ``), so the
    loop terminates for every δ in (0, 1), down to the smallest subnormal.
    """
    t = Fraction(scale)
    dlt = Fraction(delta)
    p = _precision(delta)
    # exp(-1/t) >= floor(2**p exp(-1/t)) / 2**p, so the right side is at least:
    rhs = dlt * (1 + Fraction(floor_scaled_exp_neg(1 / t, p), 2**p))

    def holds(a: int) -> bool:
        return Fraction(floor_scaled_exp_neg(a / t, p) + 1, 2**p) <= rhs

    q = math.exp(-1.0 / float(t))
    a = max(1, math.ceil(-float(t) * math.log(delta * (1 + q))))
    while not holds(a):
        a += 1
    while a > 1 and holds(a - 1):
        a -= 1
    return a


def _tail_upper(scale: Fraction, a: int, delta: float) -> Fraction:
    """A certified upper bound on ``P(Z >= a) = exp(-a/t) / (1 + exp(-1/t))``, ``Z ~ DLap(t)``.

    Computed at least at the precision :func:`_tail_threshold` used for ``delta``; a finer
    dyadic bound is never larger, so for its ``a`` the result is at most ``delta``.
    """
    t = Fraction(scale)
    if a <= 0:
        return Fraction(1)
    x = a / t
    # exp(-x) >= 2**(-1.45 x): at least 128 significant bits
    p = max(_precision(delta), 128 + math.ceil(1.5 * float(x)))
    top = Fraction(floor_scaled_exp_neg(x, p) + 1, 2**p)
    return top / (1 + Fraction(floor_scaled_exp_neg(1 / t, p), 2**p))


def _float_up(x: Fraction) -> float:
    """The smallest float ``>= x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def _float_down(x: Fraction) -> float:
    """The largest float ``<= x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)


def _describe(source: RandomSource) -> dict[str, object]:
    return dict(source.describe())


def _result_repr(obj: Any) -> str:
    body = ", ".join(f"{f.name}={getattr(obj, f.name)!r}" for f in fields(obj))
    marker = f" {SEEDED_MARKER}" if obj.seeded else ""
    return f"{type(obj).__name__}({body}){marker}"


@dataclass(frozen=True, repr=False)
class MedianResult:
    """A released statistic, or a refusal (``value is None``), with its guarantee.

    Attributes
    ----------
    value : float or None
        The released value, or None (⊥).
    epsilon, delta : float
        The guarantee; ``delta`` is the realised δ (at most the requested one).
    neighbours : str
    mechanism : str
    randomness : dict
        Where the noise came from (``source.describe()``); ``randomness["seeded"]`` is True
        for :class:`treedp.InsecureSeededSource`, whose outputs are not for publication (the
        ``repr`` then ends with ``[SEEDED: not for publication]``).
    """

    value: float | None
    epsilon: float
    delta: float
    neighbours: str
    mechanism: str
    randomness: dict[str, object] = field(default_factory=dict)

    @property
    def refused(self) -> bool:
        """True when the mechanism output ⊥."""
        return self.value is None

    @property
    def seeded(self) -> bool:
        """True when made with a seeded, reproducible (not publishable) source."""
        return bool(self.randomness.get("seeded", False))

    def __repr__(self) -> str:
        return _result_repr(self)


def _median_stability(x: np.ndarray) -> tuple[float, int]:
    """The median and its stability ``Δ(x)``: the fewest rows to replace to change it.

    NOT differentially private: an internal helper of :func:`stable_median` that returns the
    exact median of the data it is given (a non-empty float array).

    Convention: the median is the lower median ``x_(k)``, ``k = ceil(n/2)`` (1-indexed), an
    actual data value for odd and even ``n``. With ``L`` values below it and ``E`` equal to
    it, lowering it needs ``k - L`` replacements and raising it ``L + E - k + 1``; ``Δ`` is the
    smaller. ``O(n log n)`` (a sort).
    """
    x = np.sort(np.asarray(x, dtype=np.float64))
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

    Guarantee: (ε, δ)-DP for ``replace`` neighbours (``n = len(values)`` public). Derivation:
    ``Δ`` is 1-Lipschitz under replacement (change one row, then ``Δ(x')`` more). If ``Δ(x) >=
    2`` the neighbour has the same median and only the release decision differs, a 1-sensitive
    test with exact Laplace noise: ratio ``e^ε``. If the medians differ then ``Δ(x) = 1`` and
    the release of ``median(x)`` has probability ``P(1 + Z >= T) = P(Z >= a) <= δ``.

    Every input gets an output: the empty dataset (its only neighbour is itself) is refused
    (``None``) without drawing; ``±inf`` are ordinary values (the median may be one). NaN/NaT
    values are outside the domain: a :class:`DataError` with a data-free message (the same
    for every dataset holding one).

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
        Return a :class:`MedianResult` (value, guarantee, randomness) instead of the bare value.

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
    x = _values(values, message=_NAN_MESSAGE_REPLACE)
    value = None
    if x.size:  # n is public under replace: the empty dataset is always refused
        med, stability = _median_stability(x)
        scale = noise_scale(1, eps)
        threshold = 1 + _tail_threshold(scale, dlt)
        z = int(sample_discrete_laplace(scale, 1, source)[0])
        value = med if stability + z >= threshold else None
    result = MedianResult(value, eps, dlt, "replace", "stable_median", _describe(source))
    return result if details else result.value


def _mode(answers: np.ndarray) -> tuple[float, int]:
    uniq, counts = np.unique(answers, return_counts=True)
    best = int(np.argmax(counts))
    return float(uniq[best]), int(counts[best])


_VECTORISED: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "median": lambda block: np.median(block, axis=1),
    "mean": lambda block: block.mean(axis=1),
}

_BITS = 128


def _round(x: Fraction, up: bool) -> Fraction:
    """``x > 0`` rounded up or down to a dyadic rational with ``_BITS`` significant bits."""
    num, den = x.numerator, x.denominator
    shift = _BITS - (num.bit_length() - den.bit_length())
    a, b = (num << shift, den) if shift >= 0 else (num, den << -shift)
    m = -((-a) // b) if up else a // b
    return Fraction(m, 1 << shift) if shift >= 0 else Fraction(m << -shift)


def _pow(base: Fraction, e: int, up: bool) -> Fraction:
    """``base**e`` (``base > 0``) rounded in one direction: every step rounds the same way and
    multiplication of positive numbers is monotone, so the result bounds the exact power."""
    result, b = Fraction(1), base
    while e:
        if e & 1:
            result = _round(result * b, up)
        e >>= 1
        if e:
            b = _round(b * b, up)
    return result


def _sampling_failure(n: int, m: int, k: int, budget: Fraction) -> tuple[int, Fraction]:
    """A count ``c >= 1`` and a certified ``U >= P(R > c)`` with ``U <= budget``.

    ``R ~ Binomial(k, p)``, ``p = 1 - (1 - 1/n)^m``: the number of the ``k`` subsamples (``m``
    rows each, drawn with replacement) that hold a given row.

    Proof of the bound. (1) ``p_up = 1 - L`` with ``L <= (1 - 1/n)^m`` (powers rounded down)
    is at least ``p``, and ``P_p(R > c)`` is non-decreasing in ``p`` (a binomial is
    stochastically increasing in ``p``), so bounding the tail at ``p_up`` bounds it at ``p``.
    (2) The terms ``t_j = C(k, j) p^j q^(k-j)`` (``q = 1 - p_up``, exact) are bounded above by
    ``u_j``: ``u_s`` from the exact binomial coefficient and up-rounded powers, then ``u_{j+1}
    = up(u_j · r_j)`` with the exact ratio ``r_j = (k - j) p / ((j + 1) q) = t_{j+1}/t_j``.
    (3) ``r_j`` decreases in ``j``; once ``r_J <= 1/2`` every later term is at most ``t_J
    r_J^i``, so ``sum_{j > J} t_j <= t_J r_J/(1 - r_J) <= t_J <= u_J``. Hence ``U(c) = sum_{c
    < j <= J} u_j + u_J`` bounds ``P(R > c)``, exactly summed. Terms are computed from ``s =
    floor(k p_up)`` upwards only (below the mean the tail is about 1/2 or more, never within
    a budget below 1/2), so ``c >= max(1, s)``: minimality is for utility only, validity does
    not depend on it.
    """
    p = Fraction(1) if n == 1 else 1 - _pow(Fraction(n - 1, n), m, up=False)
    if p >= 1:  # every subsample holds every row: R = k
        return k, Fraction(0)
    q = 1 - p
    s = min(k, math.floor(k * p))
    u = _round(math.comb(k, s) * _pow(p, s, up=True) * _pow(q, k - s, up=True), up=True)
    terms = [u]  # u_s, u_{s+1}, ...
    j = s
    cutoff = budget / 2**64
    remainder = Fraction(0)
    while j < k:
        ratio = Fraction(k - j) * p / (Fraction(j + 1) * q)
        if ratio <= Fraction(1, 2) and terms[-1] <= cutoff:
            remainder = terms[-1]  # >= every later term summed, by (3)
            break
        terms.append(_round(terms[-1] * ratio, up=True))
        j += 1
    # tail[c] = U(c) for c = s..J: suffix sums, exact
    tail = remainder
    best_c, best_tail = j, tail
    for c in range(j - 1, max(1, s) - 1, -1):
        tail = tail + terms[c + 1 - s]
        if tail > budget:
            break
        best_c, best_tail = c, tail
    return max(1, best_c), best_tail  # P(R > 1) <= P(R > 0)


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
        gets one 1-D array per subsample and must return a number; it must not raise on any
        subsample, or the exception becomes part of the output).
    epsilon, delta : float
        The budget; the realised δ (reported) is at most ``delta``.
    m : int
        Rows per subsample, at most ``n`` (the public number of records).
    k : int, optional
        Number of subsamples for ``variant="replacement"`` (default: the seed's
        ``ε (n/m)³``, capped at 5,000). The disjoint variant uses ``floor(n/m)`` blocks.
    variant : {"replacement", "disjoint"}
        ``"replacement"`` (the seed's): ``k`` samples of ``m`` rows with replacement; one row
        appears in ``R ~ Binomial(k, 1 - (1 - 1/n)^m)`` of them, at most ``c`` except with
        probability at most ``δ/2``, certified by exact rational arithmetic (see
        :func:`_sampling_failure`), so the mode frequency has sensitivity ``c``.
        ``"disjoint"``: a random partition into blocks of ``m`` rows; one row changes one
        block's answer, sensitivity 1, no sampling failure.
    resolution : float, optional
        Round every answer to a multiple of this public value before taking the mode (answers
        must agree exactly to form a mode; continuous statistics need a grid).
    rng : RandomSource, optional
        Randomness for the subsampling and the noise.
    details : bool, default=False
        Return a :class:`MedianResult` (with the realised δ and the randomness) instead of the
        bare value.

    Returns
    -------
    float or None
        The mode of the answers, or None (refused).

    Notes
    -----
    Guarantee: (ε, δ)-DP, ``replace`` neighbours (``n = len(values)`` public). With
    sensitivity ``c`` (``c = 1`` for disjoint blocks), ``Z ~ DLap(c/ε)`` and release when ``f +
    Z >= T``. If ``f - c`` still exceeds half the answers, neighbours have the same mode and
    only the 1-Lipschitz (in units of ``c``) test differs: ratio ``e^ε``. Otherwise ``f <=
    floor(K/2) + c`` and the release has probability at most ``P(Z >= T - floor(K/2) - c)``,
    which ``T`` makes at most the remaining δ. The realised δ adds the certified sampling
    failure bound ``P(R > c)`` (replacement variant) for the ``k`` used.

    Errors depend on public parameters only (``n``, ``m``, ``k``, ``variant``, ``ε``, δ) and
    their messages print no ``n``: ``m`` outside ``[1, n]`` (so the empty dataset is refused
    for every ``m``), too few blocks or subsamples for the noise. NaN/NaT values are outside
    the domain (a data-free :class:`DataError`); ``±inf`` are ordinary values (answers may be
    infinite or NaN, and the mode is taken over them as they are).
    """
    eps = check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if variant not in ("replacement", "disjoint"):
        raise InvalidParameterError(
            f"The 'variant' parameter must be 'replacement' or 'disjoint'. Got {variant!r}."
        )
    if resolution is not None and not (
        isinstance(resolution, float | int)
        and not isinstance(resolution, bool)
        and math.isfinite(resolution)
        and resolution > 0
    ):
        raise InvalidParameterError(
            f"The 'resolution' parameter must be a positive number. Got {resolution!r}."
        )
    if isinstance(query, str) and query not in _VECTORISED:
        raise InvalidParameterError(
            f"The 'query' parameter must be 'median', 'mean' or a callable. Got {query!r}."
        )
    if not isinstance(query, str) and not callable(query):
        raise InvalidParameterError("The 'query' parameter must be 'median', 'mean' or a callable.")
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise InvalidParameterError(f"The 'm' parameter must be an int >= 1. Got {m!r}.")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 2):
        raise InvalidParameterError(f"The 'k' parameter must be an int >= 2. Got {k!r}.")
    source = resolve_source(rng)
    x = _values(values, message=_NAN_MESSAGE_REPLACE)
    n = x.size
    if m > n:  # n is public under replace; the message does not print it
        raise InvalidParameterError(
            f"The 'm' parameter must be at most n, the (public) number of records. Got m={m!r}."
        )
    if variant == "disjoint":
        blocks = n // m
        if blocks < 2:
            raise InvalidParameterError(
                f"The disjoint variant needs n >= 2m records (m={m}); use a smaller m."
            )
        perm = np.argsort(np.frombuffer(source.random_bytes(8 * n), dtype=np.uint64))
        index = perm[: blocks * m].reshape(blocks, m)
        count, sensitivity, sampling_delta = blocks, 1, Fraction(0)
    else:
        count = int(min(5000, max(2, math.ceil(eps * (n / m) ** 3)))) if k is None else k
        sensitivity, sampling_delta = _sampling_failure(n, m, count, Fraction(dlt) / 2)
        index = uniform_below(n, count * m, source).astype(np.int64).reshape(count, m)
    with np.errstate(all="ignore"):  # inf - inf in a mean must not warn for some data only
        answers = _answers(x, index, query)
        if resolution is not None:
            answers = np.round(answers / resolution) * resolution
    value, realised = _noisy_mode(answers, eps, dlt, sensitivity, sampling_delta, source)
    result = MedianResult(
        value,
        eps,
        realised,
        "replace",
        f"subsample_and_aggregate:{variant}",
        _describe(source),
    )
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
    sampling_delta`` (certified). Returns the mode or None, and the realised δ (a certified
    upper bound, rounded up to a float).

    Guarantee: (ε, δ - sampling_delta)-DP for answer vectors of public length ``K`` that
    differ in at most ``c`` entries. Every such vector gets an output: the only errors depend
    on ``K``, ``c``, ε and δ (public), and their messages print none of the answers. NaN
    answers form one value, like any other.
    """
    eps = check_epsilon(epsilon)
    dlt = _check_delta(delta)
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, int) or sensitivity < 1:
        raise InvalidParameterError(
            f"The 'sensitivity' parameter must be an int >= 1. Got {sensitivity!r}."
        )
    if (
        isinstance(sampling_delta, bool)
        or not isinstance(sampling_delta, float | int | Fraction)
        or not 0 <= sampling_delta < 1
    ):
        raise InvalidParameterError(
            f"The 'sampling_delta' parameter must be in [0, 1). Got {sampling_delta!r}."
        )
    arr = np.asarray(answers, dtype=np.float64).ravel()
    value, realised = _noisy_mode(
        arr, eps, dlt, sensitivity, Fraction(sampling_delta), resolve_source(rng)
    )
    return value, realised


def _noisy_mode(
    answers: np.ndarray,
    eps: float,
    delta: float,
    sensitivity: int,
    sampling_delta: Fraction,
    source: RandomSource,
) -> tuple[float | None, float]:
    count = answers.size
    if count // 2 + 2 * sensitivity >= count:
        raise InvalidParameterError(
            "Too few subsamples for the noise: the number of answers K must exceed "
            "floor(K/2) + 2·sensitivity; use a smaller m or a larger k."
        )
    remaining = Fraction(delta) - sampling_delta
    if remaining <= 0:
        raise InvalidParameterError(
            "The sampling failure already uses up delta; use a larger k or delta."
        )
    mode, freq = _mode(answers)
    scale = noise_scale(sensitivity, eps)
    budget = _float_down(remaining)
    if budget <= 0:
        raise InvalidParameterError(
            "The sampling failure already uses up delta; use a larger k or delta."
        )
    a = _tail_threshold(scale, budget)
    threshold = count // 2 + sensitivity + a
    z = int(sample_discrete_laplace(scale, 1, source)[0])
    realised = _float_up(sampling_delta + _tail_upper(scale, a, budget))
    return (mode if freq + z >= threshold else None), realised


def _answers(x: np.ndarray, index: np.ndarray, query: Any) -> np.ndarray:
    if isinstance(query, str):
        return _VECTORISED[query](x[index])
    return np.array([float(query(x[row])) for row in index])


#: The exponential mechanism's output grid: 2**48 equal cells of [lo, hi], output at midpoints.
GRID_BITS = 48
#: The target rank q·n is rounded down to a multiple of 2**-TARGET_BITS (so the score is rational).
TARGET_BITS = 32


@dataclass(frozen=True, repr=False)
class QuantileResult:
    """Exponential-mechanism quantiles with their guarantee.

    Attributes
    ----------
    values : ndarray
        The released quantiles, one per level.
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
    mechanism : str
    randomness : dict
        Where the noise came from (``source.describe()``); ``randomness["seeded"]`` is True
        for :class:`treedp.InsecureSeededSource`, whose outputs are not for publication (the
        ``repr`` then ends with ``[SEEDED: not for publication]``).
    """

    values: np.ndarray
    q: np.ndarray
    epsilon: float
    epsilon_spent: float
    neighbours: str
    sensitivity: tuple[float, ...]
    grid_points: int
    mechanism: str = "quantile_exponential"
    randomness: dict[str, object] = field(default_factory=dict)

    @property
    def seeded(self) -> bool:
        """True when made with a seeded, reproducible (not publishable) source."""
        return bool(self.randomness.get("seeded", False))

    def __repr__(self) -> str:
        return _result_repr(self)


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


def _quantile_exponential(
    values: Any,
    q: Any,
    bounds: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    rng: RandomSource | None,
    draws: int,
) -> tuple[np.ndarray, np.ndarray, float, Fraction, list[float], RandomSource]:
    """Validate, then draw ``draws`` independent selections per level (each an ε-release)."""
    eps = check_epsilon(epsilon)
    if neighbours not in ("replace", "add_remove"):
        raise InvalidParameterError(
            f"The 'neighbours' parameter must be 'replace' or 'add_remove'. Got {neighbours!r}."
        )
    policy = _check_nan(nan, neighbours)
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(f"The 'bounds' parameter must be a pair. Got {bounds!r}.")
    lo, hi = float(bounds[0]), float(bounds[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise InvalidParameterError(f"The 'bounds' must be finite with lo < hi. Got {bounds!r}.")
    half = hi / 2 ** (GRID_BITS + 1) - lo / 2 ** (GRID_BITS + 1)
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    if qa.ndim != 1 or qa.size == 0 or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(f"The 'q' argument must hold levels in [0, 1]. Got {q!r}.")
    source = resolve_source(rng)
    message = _NAN_MESSAGE if neighbours == "add_remove" else _NAN_MESSAGE_REPLACE
    x = np.sort(_values(values, policy, message))
    n = x.size
    if n >= 2**32:  # a public size limit (2**32 float64 values are 32 GiB)
        raise DataError("quantile_exponential takes fewer than 2**32 values.")
    # Grid points with exactly i data values below them: [count(<= x_(i)), count(<= x_(i+1))).
    # ±inf and other values outside the bounds count as at the bound. With n = 0 there is one
    # rank, 0, holding the whole grid: the output is uniform on the grid.
    starts = np.concatenate([[0], _grid_count_at_most(x, lo, hi, half), [1 << GRID_BITS]])
    weights = np.diff(starts)
    eps_each = Fraction(eps) / qa.size
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
    return out, qa, eps, spent, sens, source


def quantile_exponential(
    values: Any,
    q: Any,
    *,
    bounds: tuple[float, float],
    epsilon: float,
    neighbours: str = "replace",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
) -> Any:
    """Smith's exponential-mechanism quantile, on a fine public grid, sampled exactly.

    The output space is a public grid of ``2**48`` points in ``[lo, hi]`` (the midpoints of equal
    cells; the resolution is ``(hi - lo) / 2**48``, finer than most data). Grid point ``y`` has
    score ``-|i(y) - t|`` with ``i(y) = #{x_j < y}`` (data outside the bounds, ``±inf``
    included, count as at the bound) and target ``t = floor(q n 2**32) / 2**32`` (``q n``
    rounded down by less than ``2**-32`` ranks), and is output with probability ``∝ exp(-rate
    · |i(y) - t|)``, ``rate <= ε / (2Δ)``. The grid points with rank ``i`` are counted exactly
    (data and grid compared in floating point, both public-rule exact), so the mechanism is
    Smith's continuous one with the uniform measure replaced by the counting measure on the
    grid.

    The selection is sampled exactly (:func:`treedp.noise.exponential.sample_weighted_laplace`):
    integer weights, a dyadic rate and integer-arithmetic Bernoulli trials on uniform words from
    ``rng`` (default: the operating system's generator). ``n = 10**7`` or heavy ties (ranks with
    no grid point get weight 0) need no floating-point exponentials at all.

    Guarantee: pure ε-DP per call, on every dataset of fewer than ``2**32`` records. Under
    ``replace`` (``n = len(values)`` public) ``Δ = 1``; under ``add_remove`` ``Δ = max(q, 1 - q)
    + 2**-32`` (see :func:`_score_sensitivity`). The rate is ``ε/(2Δ)`` rounded *down* to ``A /
    2**k`` with a 31-bit ``A``, so the budget spent is at most ε (and at least ``ε (1 -
    2**-29)``). Several ``q`` split ε equally (basic composition). The empty dataset is a
    valid input: every grid point has score ``0`` and the output is uniform on the grid.

    Parameters
    ----------
    values : array-like
        The data; ``len(values) < 2**32``. ``±inf`` count as at the bounds.
    q : float or array-like
        Quantile levels in [0, 1].
    bounds : (lo, hi)
        Public bounds; the output lies in them and data outside count as at the bound.
    epsilon : float
        Total budget over all ``q``.
    neighbours : {"replace", "add_remove"}
    nan : {"error", "drop"}, default="error"
        NaN and NaT values raise a :class:`DataError` whose message is the same for every
        dataset (no count), or are dropped with ``"drop"``. Dropping is a per-record filter,
        so it keeps the ``add_remove`` guarantee on every dataset; under ``replace`` it would
        make the number of used records private while ``n`` is public, so it is refused there
        (a refusal that depends only on the parameters).
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`QuantileResult` with the guarantee and the randomness description
        instead of the values alone.

    Returns
    -------
    float, ndarray or QuantileResult
        One value for a scalar ``q``, else one per level.

    References
    ----------
    .. [Smi11] A. Smith. "Privacy-preserving statistical estimation with optimal convergence
       rates". STOC 2011.
    """
    out, qa, eps, spent, sens, source = _quantile_exponential(
        values, q, bounds, epsilon, neighbours, nan, rng, 1
    )
    if details:
        return QuantileResult(
            out[0],
            qa,
            eps,
            float(spent),
            neighbours,
            tuple(sens),
            1 << GRID_BITS,
            randomness=_describe(source),
        )
    return float(out[0, 0]) if np.ndim(q) == 0 else out[0]


def _quantile_exponential_draws(
    values: Any,
    q: Any,
    *,
    bounds: tuple[float, float],
    epsilon: float,
    size: int,
    neighbours: str = "replace",
    nan: str = "error",
    rng: RandomSource | None = None,
) -> np.ndarray:
    """``size`` independent outputs of :func:`quantile_exponential`, for simulation only.

    NOT a private release: each of the ``size`` draws is a separate ε-release of the same data
    (``size·ε`` in total; averaging them removes the noise). For tests, audits and benchmarks
    that need the output distribution quickly. Returns shape ``(size,)`` for a scalar ``q``,
    else ``(size, len(q))``.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidParameterError(f"The 'size' parameter must be an int >= 1. Got {size!r}.")
    out = _quantile_exponential(values, q, bounds, epsilon, neighbours, nan, rng, size)[0]
    return out if np.ndim(q) else out[:, 0]
