"""Exact discrete Gaussian sampling (Canonne, Kamath and Steinke 2020), vectorised.

The discrete Gaussian ``N_Z(0, σ²)`` has ``P(X = x) ∝ exp(-x² / (2σ²))`` on the integers. With
``σ² = a/b`` rational (lowest terms) it is drawn *exactly* by CKS20 (arXiv:2004.00010)
Algorithm 3, in one of two ranges.

**Small range** (``D = 2·a·b·t² < 2**55``: an integer ``σ²`` up to about ``1.3·10**8``): with
``t = floor(σ) + 1 = isqrt(floor(σ²)) + 1``, draw a discrete Laplace proposal ``Y`` of scale
``t`` and accept it with probability ``exp(-γ)``, ``γ = (|Y| - σ²/t)² / (2σ²)``. In integers
``γ = z²/D`` with ``z = |Y|·t·b - a``; with ``z² = k·D + r``, ``0 <= r < D``,
``exp(-γ) = exp(-k)·exp(-r/D)``, the two factors drawn independently: ``exp(-k)`` as ``V >= k``
with ``P(V >= v) = exp(-v)`` (:func:`~treedp.noise.exp_thresholds.sample_unit_geometric`),
``exp(-r/D)`` by CKS20 Algorithm 1 (:func:`~treedp.noise.discrete_laplace.bernoulli_exp`;
``D < 2**55`` keeps its ``D·j < 2**62`` for every round ``j`` with a chance above ``1/127!``).
``z²`` is computed in uint64 when ``|z| < 2**32`` (all but a vanishing fraction of rows), with
Python integers otherwise.

**Large range** (``σ² >= 1`` and ``2a < 2**55``: an integer ``σ²`` up to about ``1.8·10**16``,
which :meth:`treedp.noise.families.DiscreteGaussian.for_budget` reaches with coarser
denominators). There ``D ~ 2σ⁴`` would need 120 bits; the proposal is changed instead so that
the acceptance needs only ``2a``-sized integers:

1. ``c = floor(σ) >= 1``, ``τ = σ²/c = a/(b·c)`` (so ``σ²/τ = c`` and ``τ >= σ``); ``M`` is
   the largest power of two ``<= max(1, τ/256)``.
2. Proposal: ``G`` with ``P(G >= g) = exp(-g·M/τ)`` (exact table inversion,
   :func:`~treedp.noise.geometric_table.geometric_table`; ``τ/M < 512`` keeps the table under
   12,000 entries), ``U`` uniform in ``[0, M)``, a fair sign ``S``; ``Y = S·(G·M + U)``, the
   pair ``(S = -, |Y| = 0)`` dropped. So ``y`` is proposed with probability
   ``∝ exp(-floor(|y|/M)·M/τ)``.
3. Accept with probability ``exp(-γ)``, ``γ = ((|Y| - c)² + 2·c·U) / (2σ²) >= 0``.

*Exactness.* With ``|y| = g·M + u``: ``g·M/τ + γ = (g·M + u)·c/σ² + (y² - 2|y|c + c²)/(2σ²)
= y²/(2σ²) + c²/(2σ²)`` because ``c/σ² = 1/τ``. So proposing ``y`` and accepting it has
probability ``∝ exp(-y²/(2σ²))``, with a constant free of ``y``: accepted draws are exactly
``N_Z(0, σ²)`` (``tests/noise/test_discrete_gaussian.py`` checks the identity in rationals). The
acceptance is drawn as in the small range, with ``N = ((|Y| - c)² + 2cU)·b = k·D + r``,
``D = 2a``. On the uint64 path ``|z| = ||Y| - c| <= zmax = min(2**32 - 1, isqrt((2**64 - 1) // b
- 2c(M - 1)))`` (``c <= zmax`` since ``c²·b <= a < 2**54``), so ``N < 2**64``; other rows
(accepted with probability below ``exp(-512)``) take Python integers. ``G >= 2**40`` (probability
``exp(-2**31)``) raises. The acceptance rate is CKS20's, about 0.76: ``τ`` is within a factor
``σ/(σ-1)`` of ``σ`` and the step costs at most ``exp(-1/256)``.

No floating-point number enters any accept/reject decision; floats only size the batches.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache, partial
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise.discrete_laplace import (
    _laplace_draws,
    bernoulli_exp,
    fill_accepted,
    in_chunks,
    random_signs,
    uniform_below,
)
from treedp.noise.exp_thresholds import sample_unit_geometric
from treedp.noise.geometric_table import geometric_table
from treedp.noise.rational import float_at_least
from treedp.noise.rng import RandomSource

__all__ = [
    "MAX_GAUSSIAN_DENOMINATOR",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "gaussian_supported",
    "sample_discrete_gaussian",
]

#: The acceptance's denominator (small range ``D = 2·a·b·t²``, large range ``D = 2a``, for
#: ``σ² = a/b``, ``t = floor(σ)+1``) must stay below this: Algorithm 1 then keeps ``D·k < 2**62``
#: for every ``k <= 128`` (reaching ``k`` has probability ``<= 1/(k-1)!``).
MAX_GAUSSIAN_DENOMINATOR = 2**55
_FAST_BOUND = 2**32  # |z| below this: z² fits in uint64


def _check_sigma2(sigma2: object) -> Fraction:
    if isinstance(sigma2, bool) or not isinstance(sigma2, Fraction | int | np.integer):
        raise InvalidTypeError(
            must(
                "sigma2",
                "be a fractions.Fraction or an int (an exact rational), "
                f"not {type(sigma2).__name__}. For a float, round up explicitly, e.g. "
                "treedp.noise.rational_upper_bound(Fraction(x), 2**20).",
            )
        )
    sigma2 = Fraction(int(sigma2)) if isinstance(sigma2, np.integer) else Fraction(sigma2)
    if sigma2 <= 0:
        raise InvalidParameterError(must("sigma2", f"be a rational > 0. Got {sigma2} instead."))
    return sigma2


def _fast_limit(a: int, b: int, t: int) -> int:
    """Rows with ``|Y| < limit`` have ``|z| = ||Y|·t·b - a| < 2**32``, so ``z²`` fits in uint64."""
    return (_FAST_BOUND - 1) // (t * b) + 1 if a < _FAST_BOUND else 0


def _centred_fast_limit(c: int, b: int, extra_max: int) -> int:
    """Rows with ``|Y| < limit`` have ``|z| = ||Y| - c| < 2**32`` and ``(z² + e)·b < 2**64``
    for every ``0 <= e <= extra_max``."""
    zmax = min(_FAST_BOUND - 1, math.isqrt((2**64 - 1) // b - extra_max))
    return zmax + c + 1 if c <= zmax else 0


def _exponent_parts_fast(
    mag: np.ndarray, p: int, q: int, m: int, d: int, extra: np.ndarray | None = None
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """:func:`_exponent_parts` in uint64, for rows all below the fast limit."""
    z = np.abs(mag.astype(np.int64) * p - q).astype(np.uint64)  # < 2**32
    z2 = z * z
    if extra is not None:
        z2 += extra  # the caller's fast limit keeps (z² + extra)·m below 2**64
    if m != 1:
        z2 *= np.uint64(m)
    return z2 % np.uint64(d), z2 // np.uint64(d)


def _exponent_parts(
    mag: np.ndarray, p: int, q: int, m: int, d: int, extra: np.ndarray | None = None
) -> tuple[npt.NDArray[np.uint64], list[int]]:
    """``(r, k)`` with ``N = k·d + r``, ``0 <= r < d``, for ``N = ((mag·p - q)² + extra)·m``, in
    Python integers (``k`` a list)."""
    e = [0] * mag.size if extra is None else [int(v) for v in extra]
    ns = [((int(v) * p - q) ** 2 + ei) * m for v, ei in zip(mag, e, strict=True)]
    return np.array([n % d for n in ns], dtype=np.uint64), [n // d for n in ns]


def _bernoulli_exp_integer(k: np.ndarray, source: RandomSource) -> np.ndarray:
    """Exact ``Bernoulli(exp(-k))`` for integers ``k >= 0``: ``V >= k`` (rows with ``k = 0``
    draw nothing)."""
    ok = np.ones(k.size, dtype=bool)
    big = np.flatnonzero(k)
    if big.size:
        ok[big] = sample_unit_geometric(big.size, source) >= k[big]
    return ok


def _accept(
    mag: np.ndarray,
    p: int,
    q: int,
    m: int,
    d: int,
    limit: int,
    source: RandomSource,
    extra: np.ndarray | None = None,
) -> np.ndarray:
    """Exact ``Bernoulli(exp(-N/d))``, ``N = ((mag·p - q)² + extra)·m = k·d + r``, per row
    (``d < 2**55``): ``exp(-k)·exp(-r/d)``. Rows with ``mag < limit`` compute ``N`` in uint64."""
    fi, si = np.flatnonzero(mag < np.uint64(limit)), np.flatnonzero(mag >= np.uint64(limit))
    r = np.empty(mag.size, dtype=np.uint64)
    ok = np.empty(mag.size, dtype=bool)
    ef, es = (None, None) if extra is None else (extra[fi], extra[si])
    r[fi], k = _exponent_parts_fast(mag[fi], p, q, m, d, ef)
    ok[fi] = _bernoulli_exp_integer(k, source)
    if si.size:  # rare: rows with a huge |Y|, in Python integers (k may be huge)
        r[si], k_slow = _exponent_parts(mag[si], p, q, m, d, es)
        v = sample_unit_geometric(si.size, source)
        ok[si] = [int(vi) >= ki for vi, ki in zip(v, k_slow, strict=True)]
    idx = np.flatnonzero(ok)
    ok[idx] = bernoulli_exp(r[idx], d, idx.size, source)  # exp(-r/d), r/d in [0, 1)
    return ok


@lru_cache(maxsize=64)
def _acceptance_rate(sigma2: Fraction) -> float:
    """Float estimate of Algorithm 3's acceptance rate; it only sizes batches (>= 0.5 for t)."""
    s2 = float(sigma2)
    plan = _plan(sigma2)
    tau = s2 / plan.q if plan.large else float(plan.num)  # the proposal's scale
    # small range: every integer up to 40t (t <= 11,586), as before, so seeded batches repeat;
    # large range: a Riemann sum on a grid of about 40,000 points
    step = max(1.0, tau / 1000.0) if plan.large else 1.0
    y = np.arange(0, int(40 * tau / step) + 1, dtype=float) * step
    weight = np.exp(-y / tau)
    weight[1:] *= 2.0
    centre = s2 / tau
    rate = float((weight * np.exp(-((y - centre) ** 2) / (2.0 * s2))).sum() / weight.sum())
    return min(1.0, max(0.2, rate))


class _Plan(NamedTuple):
    """Algorithm 3 for one ``σ² = a/b`` (module docstring)."""

    large: bool  # the proposal: discrete Laplace (False) or stepped (True)
    num: int  # small range: the proposal's scale num/den
    den: int
    p: int  # acceptance exp(-((|Y|·p - q)² + extra)·m/d)
    q: int
    m: int
    d: int
    limit: int  # rows with |Y| < limit take the uint64 path
    step: int  # large range: the step M (a power of two)
    rate: Fraction  # large range: the geometric's rate M·c/σ²


def _plan(sigma2: Fraction) -> _Plan:
    """The proposal and acceptance for ``σ² = a/b`` (module docstring); InvalidParameterError
    outside both ranges."""
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(sigma2.numerator // sigma2.denominator) + 1  # floor(σ) + 1, exactly
    d = 2 * a * b * t * t
    if d < MAX_GAUSSIAN_DENOMINATOR:
        return _Plan(False, t, 1, t * b, a, 1, d, _fast_limit(a, b, t), 1, Fraction(1, t))
    c = t - 1
    if c >= 1 and 2 * a < MAX_GAUSSIAN_DENOMINATOR:
        tau = Fraction(a, b * c)
        step = 1 << max(0, (math.floor(tau) // 256).bit_length() - 1)
        extra_max = 2 * c * (step - 1)
        limit = _centred_fast_limit(c, b, extra_max)
        return _Plan(True, 0, 0, 1, c, b, 2 * a, limit, step, Fraction(step) / tau)
    raise InvalidParameterError(
        f"The 'sigma2' parameter {sigma2} is outside the supported range: with sigma2 = a/b in "
        "lowest terms and t = floor(sigma)+1 it needs 2·a·b·t² < 2**55, or sigma2 >= 1 and "
        "2·a < 2**55 (an integer sigma2 up to about 1.8e16). "
        "Round sigma2 up to a fraction with a smaller denominator "
        "(treedp.noise.rational_upper_bound), or use a smaller sigma2."
    )


def gaussian_supported(sigma2: Fraction | int) -> bool:
    """Whether :func:`sample_discrete_gaussian` accepts ``σ²`` (see its ``sigma2`` parameter)."""
    try:
        _plan(_check_sigma2(sigma2))
    except InvalidParameterError:
        return False
    return True


def sample_discrete_gaussian(sigma2: Fraction | int, size: int, source: RandomSource) -> np.ndarray:
    """Draw exact discrete Gaussian noise with ``P(x) ∝ exp(-x²/(2σ²))`` on the integers.

    Algorithm 3 of [CKS20]_ (module docstring, where exactness is proved for both ranges), in
    whole numpy batches. Every accept/reject decision is made with integer arithmetic on
    uniformly random words, so the output follows the discrete Gaussian *exactly*.

    Privacy: adding independent draws to a query with integer L2 sensitivity ``Δ₂`` satisfies
    ``ρ``-zCDP with ``ρ = Δ₂² / (2σ²)`` ([CKS20]_ Theorem 14).

    Parameters
    ----------
    sigma2 : Fraction or int
        The variance parameter ``σ² > 0``, an exact rational ``a/b`` (lowest terms) with
        ``2·a·b·t² < 2**55``, ``t = floor(σ) + 1`` (small range: an integer ``σ²`` up to about
        ``1.3·10**8``), or ``σ² >= 1`` and ``2·a < 2**55`` (large range: up to about
        ``1.8·10**16``); :func:`gaussian_supported` tells. Round a float *up* to a rational
        first (a larger ``σ²`` only lowers ``ρ``).
    size : int
        How many independent draws to return, ``>= 0``.
    source : RandomSource
        Where the random words come from. With :class:`SystemRandomSource` large requests run on
        several threads; a seeded source runs sequentially, so its output is reproducible.

    Returns
    -------
    ndarray of int64
        ``size`` independent draws (variance slightly below ``σ²``:
        :func:`discrete_gaussian_variance`).

    Raises
    ------
    InvalidTypeError
        If ``sigma2`` is not a ``Fraction`` or ``int``, ``size`` not an ``int``, or ``source``
        not a random source.
    InvalidParameterError
        If ``σ² <= 0``, ``σ²`` is outside the supported range, or ``size < 0``.

    References
    ----------
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
       Privacy". NeurIPS 2020. arXiv:2004.00010.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from treedp.noise import InsecureSeededSource, sample_discrete_gaussian
    >>> x = sample_discrete_gaussian(Fraction(7, 3), 5, InsecureSeededSource(0))
    >>> x.dtype, x.size
    (dtype('int64'), 5)
    """
    sigma2 = _check_sigma2(sigma2)
    if isinstance(size, bool) or not isinstance(size, int | np.integer):
        raise InvalidTypeError(must("size", f"be an int. Got {size!r} instead."))
    size = int(size)
    if size < 0:
        raise InvalidParameterError(must("size", f"be >= 0. Got {size!r} instead."))
    if not isinstance(source, RandomSource):
        raise InvalidTypeError(
            must(
                "source",
                "be a RandomSource (SystemRandomSource, "
                f"InsecureSeededSource). Got {type(source).__name__} instead.",
            )
        )
    plan = _plan(sigma2)
    rate = _acceptance_rate(sigma2)
    if plan.large:
        geometric_table(plan.rate)  # built (and memoised) once, before any thread needs it
    draw = partial(_accepted, plan, source=source)
    return in_chunks(size, source, lambda out: fill_accepted(out, draw, rate, 1.03))


def _accepted(plan: _Plan, n: int, source: RandomSource) -> np.ndarray:
    """The accepted draws among ``n`` proposals (CKS20 Algorithm 3)."""
    if plan.large:
        return _stepped_candidates(plan, n, source)
    y = _laplace_draws(plan.num, plan.den, n, source)
    mag = np.abs(y).view(np.uint64)
    kept: np.ndarray = y[_accept(mag, plan.p, plan.q, plan.m, plan.d, plan.limit, source)]
    return kept


def _stepped_candidates(plan: _Plan, n: int, source: RandomSource) -> np.ndarray:
    """The accepted draws among ``n`` of the large range's proposals (module docstring)."""
    step = plan.step
    table = geometric_table(plan.rate)
    if table is None:  # pragma: no cover - τ/M < 512 keeps the table below MAX_TABLE
        raise RuntimeError("geometric table unavailable")
    g = table.sample(n, source)
    if int(g.max(initial=0)) >= 2**40:  # pragma: no cover - probability exp(-2**31)
        raise RuntimeError("geometric draw exceeded its integer range")
    if step > 1:
        u = uniform_below(step, n, source).astype(np.int64)
        mag = g * step + u
        extra = (u.astype(np.uint64) * np.uint64(2 * plan.q)).astype(np.uint64)
    else:
        mag, extra = g, None
    sign = random_signs(n, source)
    keep = ~(sign & (mag == 0))
    keep &= _accept(mag.view(np.uint64), 1, plan.q, plan.m, plan.d, plan.limit, source, extra)
    out: np.ndarray = np.where(sign, -mag, mag)[keep]
    return out


@lru_cache(maxsize=64)
def _support_and_weights(sigma2: Fraction) -> tuple[int, float]:
    """``(M, Z)``: the truncation point and ``Z = sum_{|x| <= M} exp(-x²/(2σ²))`` (fsum)."""
    s2 = float(sigma2)
    m = math.ceil(39.0 * math.sqrt(s2)) + 2  # exp(-M²/(2σ²)) < exp(-760): below float range
    if sigma2 >= 64:  # Poisson summation: Z = sqrt(2πσ²)·(1 + 2 Σ_k exp(-2π²σ²k²)), k >= 1
        return m, math.sqrt(2.0 * math.pi * s2)  # the correction is below exp(-1263)
    x = np.arange(1, m + 1, dtype=float)
    z = 1.0 + 2.0 * math.fsum(np.exp(-(x * x) / (2.0 * s2)).tolist())
    return m, z


def discrete_gaussian_pmf(x: np.ndarray, sigma2: Fraction | int) -> np.ndarray:
    """Return ``P(X = x) = exp(-x²/(2σ²)) / Z`` in float64 (for tests and plots); ``Z`` sums
    ``|x| <= ceil(39σ) + 2`` (each omitted term is below ``exp(-760)``)."""
    sigma2 = _check_sigma2(sigma2)
    _, z = _support_and_weights(sigma2)
    xf = np.asarray(x, dtype=np.float64)
    pmf: npt.NDArray[np.float64] = np.exp(-(xf * xf) / (2.0 * float(sigma2))) / z
    return pmf


def discrete_gaussian_variance(sigma2: Fraction | int) -> float:
    """Return an upper bound on ``Var[N_Z(0, σ²)]``, tight to a relative ``1e-12``.

    The exact variance ``sum x² exp(-x²/(2σ²)) / sum exp(-x²/(2σ²))`` is at most ``σ²`` (CKS20),
    and by Poisson summation ``σ² - Var ≈ 8π²σ⁴·exp(-2π²σ²)``: below ``σ²·exp(-1000)`` once
    ``σ² >= 64``, where ``σ²`` rounded up to a float is returned.

    Below that: ``min(σ²↑, S·(1 + 1e-12) + 1e-290)``, ``S`` the series in float64 over
    ``|x| <= M = ceil(39σ) + 2`` with :func:`math.fsum`. The terms beyond ``M`` are below
    ``exp(-760)``; a term ``exp(-u)``, ``u = x²/(2σ²)``, gets ``u`` with relative error at most
    ``2**-52``, hence a relative error at most ``u·2**-52`` plus a few ulp; a normal term has
    ``u < 709``, so both sums are within ``2·10**-13`` relatively and the ratio within
    ``5·10**-13``. Underflowing or subnormal terms (at most ``M <= 316``, times ``x² < 10**5``)
    move the ratio by less than ``10**-295`` (the denominator is at least 1). Error bars must
    not understate the noise, hence the upper bound.

    Parameters
    ----------
    sigma2 : Fraction or int
        ``σ² > 0``, as for :func:`sample_discrete_gaussian`.

    Returns
    -------
    float
        An upper bound on the variance, at most ``σ²`` (rounded up to a float).
    """
    sigma2 = _check_sigma2(sigma2)
    upper = float_at_least(sigma2)
    if sigma2 >= 64:  # the deficit is below σ²·exp(-1000): σ² is the tightest float bound
        return upper
    m, z = _support_and_weights(sigma2)
    x = np.arange(1, m + 1, dtype=float)
    w = np.exp(-(x * x) / (2.0 * float(sigma2)))
    second = 2.0 * math.fsum((x * x * w).tolist())
    return min(upper, second / z * (1.0 + 1e-12) + 1e-290)
