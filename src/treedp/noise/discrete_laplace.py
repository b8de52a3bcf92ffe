"""Exact discrete Laplace sampling (Canonne, Kamath and Steinke 2020), vectorised.

The discrete Laplace distribution of scale ``t = num/den > 0`` has ``P(X = x) ∝ exp(-|x|/t)``
on the integers. It is drawn *exactly*, by integer arithmetic on uniformly random words, as in
CKS20 (arXiv:2004.00010), Algorithms 1–3:

1. ``Bernoulli(exp(-γ))``, rational ``γ = a/b`` in ``[0, 1]``: ``k = 1``; while a
   ``Bernoulli(γ/k)`` trial (a uniform integer in ``[0, b·k)`` below ``a``) succeeds, increase
   ``k``; return 1 when ``k`` is odd.
2. ``Geometric(1 - exp(-den/num))``: ``U`` uniform in ``[0, num)`` until
   ``Bernoulli(exp(-U/num))`` accepts; ``V`` with ``P(V >= v) = exp(-v)``, drawn in one step
   against the integer thresholds ``floor(2**64·exp(-v))`` with an exact tie path
   (:mod:`treedp.noise.exp_thresholds`); return ``(U + num·V) // den``.
3. A sign ``B`` and a magnitude ``Y`` from step 2 (or the exact inversion table of
   :mod:`treedp.noise.geometric_table`, the same law); ``(B=1, Y=0)`` is rejected (it would
   count zero twice); return ``(1 - 2B)·Y``.

Every step runs on whole numpy arrays (the samples still active in a loop share ``k``). Uniform
integers come from 8- to 64-bit words by rejection of the incomplete top block, so they are
exactly uniform. No floating-point number is used in any accept/reject decision.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from treedp._validation import must
from treedp.exceptions import InvalidParameterError
from treedp.noise.exp_thresholds import sample_unit_geometric
from treedp.noise.geometric_table import geometric_table
from treedp.noise.rational import MAX_SCALE
from treedp.noise.rng import RandomSource, SystemRandomSource, words

__all__ = [
    "bernoulli_exp",
    "bernoulli_ratio",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "sample_discrete_laplace",
    "uniform_below",
]

_CHUNK = 1 << 15
_THREADS = max(1, min(4, os.cpu_count() or 1))


def _word_bits(bound: int) -> int:
    """Smallest word width whose rejection rate for ``bound`` is at most 1/64."""
    for bits in (8, 16, 32):
        if bound <= (1 << bits) >> 6:
            return bits
    if bound >= 2**63:
        raise InvalidParameterError(f"'bound' must be below 2**63. Got {bound!r} instead.")
    return 64


def bernoulli_ratio(a: np.ndarray | int, b: int, n: int, source: RandomSource) -> np.ndarray:
    """Return ``n`` exact ``Bernoulli(a/b)`` draws for integers ``0 <= a <= b < 2**63``.

    A uniform ``w``-bit word ``W`` is split into ``b`` blocks of ``m = 2**w // b`` values; words
    in the incomplete top block (``W >= m·b``) are drawn again. ``W < a·m`` (the block index
    below ``a``) has probability exactly ``a/b``. ``a`` is one numerator per draw, or one for all.
    """
    bits = _word_bits(b)
    m = (1 << bits) // b
    limit = m * b
    threshold: npt.NDArray[np.uint64] | np.uint64 | None
    if isinstance(a, np.ndarray):
        threshold = a * np.uint64(m)
    else:
        threshold = np.uint64(a * m) if a * m < 2**64 else None
    w = words(source, bits, n)
    ok = np.ones(n, dtype=bool) if threshold is None else w < threshold
    if limit < (1 << bits):
        bad = w >= w.dtype.type(limit)
        if bad.any():
            idx = np.flatnonzero(bad)
            sub = a[idx] if isinstance(a, np.ndarray) else a
            ok[idx] = bernoulli_ratio(sub, b, idx.size, source)
    return ok


def uniform_below(bound: int, n: int, source: RandomSource) -> np.ndarray:
    """Return ``n`` exactly uniform integers in ``[0, bound)`` (unsigned, 8 to 64 bits).

    Words in the incomplete top block (at or above the largest multiple of ``bound``) are
    drawn again, so every residue is equally likely.
    """
    if not 1 <= bound < 2**63:
        raise InvalidParameterError(f"'bound' must be in [1, 2**63). Got {bound!r} instead.")
    bits = _word_bits(bound)
    limit = (1 << bits) - (1 << bits) % bound
    w = words(source, bits, n)
    if limit < (1 << bits):
        bad = w >= w.dtype.type(limit)
        if bad.any():
            w = w.copy()
            idx = np.flatnonzero(bad)
            w[~bad] %= w.dtype.type(bound)
            w[idx] = uniform_below(bound, idx.size, source)
            return w
    reduced: np.ndarray = w % w.dtype.type(bound)
    return reduced


def bernoulli_exp(
    gamma_num: np.ndarray | int, gamma_den: int, n: int, source: RandomSource
) -> npt.NDArray[np.bool_]:
    """Return ``n`` exact ``Bernoulli(exp(-γ))`` draws, ``γ = gamma_num/gamma_den`` in ``[0, 1]``
    (CKS20 Algorithm 1); ``gamma_num`` is one numerator per draw, or one for all."""
    go_on = bernoulli_ratio(gamma_num, gamma_den, n, source)
    result = ~go_on  # stopped at k = 1 (odd): success
    active = np.flatnonzero(go_on)
    g = gamma_num[active] if isinstance(gamma_num, np.ndarray) else gamma_num
    k = 2
    while active.size:
        if gamma_den * k >= 2**62:  # pragma: no cover - needs k! > 2**40 consecutive successes
            raise RuntimeError("Bernoulli(exp(-γ)) loop exceeded its integer range")
        go_on = bernoulli_ratio(g, gamma_den * k, active.size, source)
        result[active[~go_on]] = k % 2 == 1
        active = active[go_on]
        if isinstance(g, np.ndarray):
            g = g[go_on]
        k += 1
    return result


def _geometric(num: int, den: int, n: int, source: RandomSource) -> np.ndarray:
    """Exact ``Geometric(1 - exp(-den/num))`` draws (CKS20 Algorithm 2), as uint64."""
    # U: uniform in [0, num), accepted with probability exp(-U/num).
    u = np.empty(n, dtype=np.uint64)
    filled = 0
    while filled < n:
        need = n - filled
        batch = int(need * 1.6) + 64  # acceptance rate >= 1 - 1/e > 0.632 > 1/1.6
        cand = uniform_below(num, batch, source)
        cand = cand[bernoulli_exp(cand, num, batch, source)]
        take = min(need, cand.size)
        u[filled : filled + take] = cand[:take]
        filled += take
    # V: successes of Bernoulli(exp(-1)) before the first failure, P(V >= v) = exp(-v).
    v = sample_unit_geometric(n, source)
    if int(v.max(initial=0)) > (2**62) // num:  # pragma: no cover - probability < exp(-1000)
        raise RuntimeError("geometric draw exceeded its integer range")
    y = u + np.uint64(num) * v
    if den != 1:
        y //= np.uint64(den)
    return y


def random_signs(n: int, source: RandomSource) -> np.ndarray:
    """``n`` fair random bits as bools."""
    signs: np.ndarray = np.unpackbits(words(source, 8, (n + 7) // 8), count=n).view(bool)
    return signs


def in_chunks(size: int, source: RandomSource, fill: Callable[[np.ndarray], None]) -> np.ndarray:
    """``size`` int64 draws, ``fill`` writing each cache-sized chunk in place.

    Large requests from OS randomness run on threads (it is thread-safe, and numpy and
    ``os.urandom`` release the GIL); a seeded source stays sequential, so it is reproducible.
    """
    out = np.empty(size, dtype=np.int64)
    chunks = [out[s0 : s0 + _CHUNK] for s0 in range(0, size, _CHUNK)]
    if isinstance(source, SystemRandomSource) and size >= 4 * _CHUNK:
        with ThreadPoolExecutor(max_workers=_THREADS) as pool:
            list(pool.map(fill, chunks))
    else:
        for chunk in chunks:
            fill(chunk)
    return out


def fill_accepted(
    out: np.ndarray, draw: Callable[[int], np.ndarray], rate: float, slack: float
) -> None:
    """Fill ``out`` from ``draw(batch)``, the accepted draws of ``batch`` proposals, in order.

    The float ``rate`` (the acceptance rate) only sizes the batches.
    """
    filled = 0
    while filled < out.size:
        need = out.size - filled
        z = draw(int(need / rate * slack) + 64)
        take = min(need, z.size)
        out[filled : filled + take] = z[:take]
        filled += take


def sample_discrete_laplace(scale: Fraction, size: int, source: RandomSource) -> np.ndarray:
    """Draw exact discrete Laplace noise with ``P(x) ∝ exp(-|x|/scale)``.

    Parameters
    ----------
    scale : Fraction
        The scale ``t > 0`` as an exact rational (see :func:`treedp.noise.noise_scale`).
    size : int
        How many independent draws to return.
    source : RandomSource
        Where the random words come from.

    Returns
    -------
    ndarray of int64
        ``size`` independent draws.

    References
    ----------
    .. [CKS20] C. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential
       Privacy". NeurIPS 2020. arXiv:2004.00010.
    """
    scale = Fraction(scale)
    if not 0 < scale <= MAX_SCALE:
        raise InvalidParameterError(
            must("scale", f"be a rational in (0, {MAX_SCALE}]. Got {scale} instead.")
        )
    if size < 0:
        raise InvalidParameterError(must("size", f"be >= 0. Got {size!r} instead."))
    num, den = scale.numerator, scale.denominator
    return in_chunks(size, source, lambda out: _laplace_fill(num, den, out, source))


def _laplace_draws(num: int, den: int, size: int, source: RandomSource) -> np.ndarray:
    """``size`` exact discrete Laplace draws of scale ``num/den``, as a new array."""
    out = np.empty(size, dtype=np.int64)
    _laplace_fill(num, den, out, source)
    return out


def _laplace_fill(num: int, den: int, out: np.ndarray, source: RandomSource) -> None:
    """Exact discrete Laplace draws of scale ``num/den`` into ``out`` (module docstring, 3)."""
    table = geometric_table(Fraction(den, num))

    def draw(batch: int) -> np.ndarray:
        if table is not None:
            y = table.sample(batch, source)
        else:
            y = _geometric(num, den, batch, source).astype(np.int64)
        sign = random_signs(batch, source)
        z: np.ndarray = (y * (1 - 2 * sign.view(np.int8)))[~(sign & (y == 0))]
        return z  # (-1)**sign · Y, without the pairs (sign 1, Y 0)

    # P(reject) = (1 - exp(-den/num)) / 2 <= 1/2
    fill_accepted(out, draw, 1.0 + math.expm1(-den / num) / 2.0, 1.02)


def discrete_laplace_variance(scale: Fraction | float) -> float:
    """Return the exact variance ``2q/(1-q)**2`` with ``q = exp(-1/scale)``."""
    t = float(scale)
    one_minus_q = -math.expm1(-1.0 / t)
    return 2.0 * math.exp(-1.0 / t) / (one_minus_q * one_minus_q)


def discrete_laplace_pmf(x: np.ndarray, scale: Fraction | float) -> np.ndarray:
    """Return ``P(X = x) = (1-q)/(1+q) · q**|x|`` with ``q = exp(-1/scale)``."""
    t = float(scale)
    q = math.exp(-1.0 / t)
    pmf: npt.NDArray[np.float64] = (
        (-math.expm1(-1.0 / t)) / (1.0 + q) * np.exp(-np.abs(np.asarray(x, np.float64)) / t)
    )
    return pmf
