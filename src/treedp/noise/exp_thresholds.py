"""Exact binary expansions of ``s·exp(-x)`` by integer arithmetic, and exact samplers on them.

``floor(2**p · s · exp(-x))`` for rationals ``x, s >= 0`` comes from the Taylor series of
``exp(x)`` in Python integers with directed rounding (floored terms: a lower bound; ceiled terms
plus a bound on the tail: an upper bound). The working precision grows until the floors of both
bounds agree, which always happens for ``x != 0`` since ``exp(x)`` is then irrational.

:func:`sample_unit_geometric` draws ``V`` with ``P(V >= v) = exp(-v)`` (CKS20 Algorithm 2's
count of ``Bernoulli(exp(-1))`` successes) by comparing a uniform 64-bit word with the 64-bit
thresholds; a word equal to a threshold reveals more random bits and compares them with more
bits of the expansion (:func:`count_exp_thresholds`), so the draw is exact.
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
    "count_exp_thresholds",
    "exp_bounds",
    "floor_exp_neg",
    "floor_scaled_exp_neg",
    "resolve_tie",
    "sample_unit_geometric",
]

_WORD = 64


def exp_bounds(x: Fraction, q: int) -> tuple[int, int]:
    """Integers ``lower <= 2**q · exp(x) <= upper`` for a rational ``x >= 0``.

    The Taylor terms ``t_j = 2**q x**j / j!`` are computed floored (``f_j = floor(f_{j-1} x / j)
    <= t_j``) and ceiled (``c_j >= t_j``), by induction on ``j``. Summation stops at the first
    ``J`` with ``J + 1 >= 2x`` and ``c_J = 1``; the omitted tail is then at most ``t_J <= c_J``.
    So ``lower = sum f_j``, ``upper = sum c_j + c_J``: a gap of ``O(J · exp(x))``.
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
    """Return ``floor(2**p · scale · exp(-x))`` exactly (rationals ``x, scale >= 0``, ``p >= 0``).

    The cost is bounded by the sizes of ``p`` and ``scale``, whatever ``x``: when ``floor(x)``
    is at least the bit length of ``floor(2**p · scale)`` the answer is 0 without expansion.
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
        return 0  # num/den < 2**floor(x) <= exp(x), compared without building 2**floor(x)
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
    """Return ``n`` exact ``Bernoulli(ρ)`` draws, ``ρ = scale · exp(-x) <= 1`` (rationals).

    A uniform ``U`` in ``[0, 1)`` is revealed 64 bits at a time and compared with the binary
    expansion of ``ρ`` (``U < ρ`` is the success); the first 64 bits decide unless they equal
    those of ``ρ`` (probability ``2**-64``).
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
        out[i] = resolve_tie(threshold, x, scale, source)
    return out


def resolve_tie(known: int, x: Fraction, scale: Fraction, source: RandomSource) -> bool:
    """Decide ``U < scale·exp(-x)`` for a ``U`` whose first 64 bits, ``known``, equal those of
    the right side (``known = floor(2**64 · scale·exp(-x))``): more bits of each are compared."""
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


def count_exp_thresholds(
    prefix: int, bits: int, x: Fraction | int, y: int, source: RandomSource
) -> int:
    """Exact ``#{y' >= 1 : U < exp(-y'·x)}`` for a uniform ``U`` whose first ``bits`` bits are
    ``prefix``, every ``y' < y`` being known to count: where ``U`` and ``exp(-y·x)`` agree so
    far, 64 more bits of each are compared (``exp`` is irrational, so they differ eventually)."""
    known = prefix
    while True:
        t = floor_scaled_exp_neg(x * y, bits)
        if known < t:
            y += 1
        elif known > t:
            return y - 1
        else:
            known = (known << _WORD) | int(words(source, _WORD, 1)[0])
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
    for i in np.flatnonzero(tie):  # probability about 45 / 2**64 per draw
        v[i] = count_exp_thresholds(int(w[i]), _WORD, 1, 1, source)
    return v
