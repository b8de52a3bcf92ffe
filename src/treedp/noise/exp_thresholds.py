"""Exact binary expansions of ``s·exp(-x)`` by integer arithmetic, and exact samplers on them.

``floor(2**p · s · exp(-x))`` for rationals ``x >= 0`` and ``s >= 0`` is computed from the Taylor
series of ``exp(x)`` in Python integers only, with directed rounding: a chain of floored terms
gives a lower bound of ``2**q·exp(x)``, a chain of ceiled terms plus a bound on the omitted tail
an upper bound. The working precision ``q`` grows until the floors of both bounds agree, which
always happens for ``x != 0`` because ``exp(x)`` is then irrational (Lambert, Hermite).

:func:`sample_unit_geometric` draws ``V`` with ``P(V >= v) = exp(-v)`` (the number of successes of
``Bernoulli(exp(-1))`` before the first failure, CKS20 Algorithm 2) by comparing a uniform
64-bit word with the 64-bit thresholds; the rare word that equals a threshold reveals more
random bits and compares against more bits of the expansion, so the draw is exact.
:func:`bernoulli_scaled_exp` draws ``Bernoulli(s·exp(-x))`` the same way.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise.rng import RandomSource, words

__all__ = [
    "bernoulli_scaled_exp",
    "exp_bounds",
    "floor_exp_neg",
    "floor_scaled_exp_neg",
    "sample_unit_geometric",
]

_WORD = 64


def exp_bounds(x: Fraction, q: int) -> tuple[int, int]:
    """Integers ``lower <= 2**q · exp(x) <= upper`` for a rational ``x >= 0``.

    The Taylor terms ``t_j = 2**q x**j / j!`` are computed twice, recursively: floored
    (``f_j = floor(f_{j-1} x / j) <= t_j``) and ceiled (``c_j = ceil(c_{j-1} x / j) >= t_j``),
    both by induction on ``j``. Summation stops at the first ``J`` with ``J + 1 >= 2x`` and
    ``c_J = 1``; the omitted tail is then at most ``t_J · sum_m 2**-m <= t_J <= c_J``. So
    ``lower = sum f_j`` and ``upper = sum c_j + c_J``; their gap is ``O(J · exp(x))``, small
    against ``2**q · exp(x)``.
    """
    if x < 0:
        raise InvalidParameterError(f"'x' must be >= 0. Got {x!r} instead.")
    a, b = x.numerator, x.denominator
    low = high = 1 << q
    lower = upper = low
    if a == 0:
        return lower, upper
    j = 0
    while True:
        j += 1
        low = low * a // (b * j)
        high = -((-high * a) // (b * j))
        lower += low
        upper += high
        if high == 1 and (j + 1) * b >= 2 * a:
            return lower, upper + high


def floor_scaled_exp_neg(x: Fraction | int, p: int, scale: Fraction | int = 1) -> int:
    """Return ``floor(2**p · scale · exp(-x))`` exactly, for rationals ``x, scale >= 0``.

    Parameters
    ----------
    x : Fraction or int
        The exponent, ``>= 0``.
    p : int
        The number of binary digits after the point, ``>= 0``.
    scale : Fraction or int, default 1
        A non-negative rational factor.

    Notes
    -----
    The cost is bounded by the sizes of ``p`` and ``scale``, whatever ``x``: when ``floor(x)``
    is at least the bit length of ``floor(2**p · scale)`` the answer is 0 without any
    expansion (no ``floor(x)``-bit integer is built), and otherwise ``x`` is below that bit
    length.
    """
    x, scale = Fraction(x), Fraction(scale)
    if x < 0 or scale < 0 or p < 0:
        raise InvalidParameterError(
            f"floor_scaled_exp_neg needs x >= 0, scale >= 0 and p >= 0. Got {x}, {scale}, {p}."
        )
    num, den = scale.numerator << p, scale.denominator
    if x == 0 or num == 0:
        return num // den
    if x.numerator // x.denominator >= (num // den).bit_length():
        # 2**floor(x) > floor(num/den), so num/den < 2**floor(x) <= exp(x): the answer is 0.
        # Compared as bit lengths, not by building 2**floor(x): the cost does not grow with x.
        return 0
    guard = 32
    while True:
        # The gap upper - lower is O(J·exp(x)) against lower >= 2**q·exp(x)/2, so the bounds of
        # the answer (about num/den) differ by about num/den · J · 2**-q.
        q = max(guard, num.bit_length() - den.bit_length() + guard)
        lower, upper = exp_bounds(x, q)
        hi = (num << q) // (den * lower)  # >= the answer, since lower <= 2**q exp(x)
        lo = (num << q) // (den * upper)  # <= the answer
        if hi == lo:
            return hi
        guard *= 2


@lru_cache(maxsize=4096)
def floor_exp_neg(v: int, p: int) -> int:
    """Return ``floor(2**p · exp(-v))`` exactly, for integers ``v >= 1`` and ``p >= 0``."""
    return floor_scaled_exp_neg(v, p)


def bernoulli_scaled_exp(
    scale: Fraction | int, x: Fraction | int, n: int, source: RandomSource
) -> np.ndarray:
    """Return ``n`` exact ``Bernoulli(scale · exp(-x))`` draws, for rationals with product <= 1.

    A uniform ``U`` in ``[0, 1)`` is revealed 64 bits at a time and compared with the binary
    expansion of ``ρ = scale·exp(-x)``: the first 64 bits decide unless they equal those of
    ``ρ`` (probability ``2**-64``); such a draw reads more words (``U < ρ`` is the success).
    """
    x, scale = Fraction(x), Fraction(scale)
    threshold = floor_scaled_exp_neg(x, _WORD, scale)
    if threshold >= 1 << _WORD:
        if x == 0 and scale == 1:
            return np.ones(n, dtype=bool)
        raise InvalidParameterError(
            f"bernoulli_scaled_exp needs scale·exp(-x) <= 1. Got scale={scale}, x={x}."
        )
    w = words(source, _WORD, n)
    out = w < np.uint64(threshold)
    for i in np.flatnonzero(w == np.uint64(threshold)):
        out[i] = _resolve_tie(threshold, x, scale, source)
    return out


def _resolve_tie(known: int, x: Fraction, scale: Fraction, source: RandomSource) -> bool:
    """Decide ``U < scale·exp(-x)`` for a ``U`` whose first bits equal those of the right side."""
    bits = _WORD
    while True:
        exact = x == 0 and (scale * (1 << bits)).denominator == 1
        if exact:  # ρ = known / 2**bits exactly, and U >= known / 2**bits
            return False
        known = (known << _WORD) | int(words(source, _WORD, 1)[0])
        bits += _WORD
        t = floor_scaled_exp_neg(x, bits, scale)
        if known != t:
            return known < t


@lru_cache(maxsize=1)
def _table() -> np.ndarray:
    """Ascending uint64 thresholds floor(2**64 · exp(-v)) for the v where it is non-zero."""
    values = []
    v = 1
    while (t := floor_exp_neg(v, _WORD)) > 0:
        values.append(t)
        v += 1
    return np.array(values[::-1], dtype=np.uint64)


def _resolve_scalar(prefix: int, source: RandomSource) -> int:
    """Exact ``V = #{v >= 1 : X < exp(-v)}`` for ``X`` whose first 64 bits are ``prefix``."""
    bits = _WORD
    known = prefix
    v = 1
    while True:
        t = floor_exp_neg(v, bits)
        if known < t:
            v += 1  # X < exp(-v): count it and test the next v
            continue
        if known > t:
            return v - 1
        extra = int(words(source, 64, 1)[0])  # X and exp(-v) agree so far: reveal 64 more bits
        known = (known << _WORD) | extra
        bits += _WORD


def sample_unit_geometric(n: int, source: RandomSource) -> np.ndarray:
    """Draw ``n`` exact samples of ``V`` with ``P(V >= v) = exp(-v)``, as uint64."""
    table = _table()
    w = words(source, 64, n)
    # V = number of thresholds strictly above w, unless w equals one (then undecided).
    pos = np.searchsorted(table, w, side="right")
    v = (table.size - pos).astype(np.uint64)
    tie = (pos > 0) & (table[np.maximum(pos - 1, 0)] == w)
    tie |= w == 0  # exp(-v) < 2**-64 for the remaining v: w == 0 leaves them undecided
    if tie.any():  # probability about 45 / 2**64 per draw
        for i in np.flatnonzero(tie):
            v[i] = _resolve_scalar(int(w[i]), source)
    return v
