"""Exact binary expansions of ``exp(-v)`` by integer arithmetic, and an exact sampler on them.

``floor(2**p · exp(-v))`` is computed from the Taylor series of ``exp(v)`` with a rigorous
remainder bound, in Python integers only: lower and upper bounds are tightened until their
floors agree, which always happens because ``exp(-v)`` is irrational for integer ``v >= 1``.

:func:`sample_unit_geometric` draws ``V`` with ``P(V >= v) = exp(-v)`` (the number of successes of
``Bernoulli(exp(-1))`` before the first failure, CKS20 Algorithm 2) by comparing a uniform
64-bit word with the 64-bit thresholds; the rare word that equals a threshold reveals more
random bits and compares against more bits of the expansion, so the draw is exact.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from treedp.noise.rng import RandomSource, words

__all__ = ["floor_exp_neg", "sample_unit_geometric"]

_WORD = 64


@lru_cache(maxsize=4096)
def floor_exp_neg(v: int, p: int) -> int:
    """Return ``floor(2**p · exp(-v))`` exactly, for integers ``v >= 1`` and ``p >= 0``."""
    guard = 32
    while True:
        q = p + guard + 2 * v  # working precision for 2**q · exp(v)
        # Taylor terms of exp(v), each floored: lower bound; the floors lose < 1 per term.
        term = 1 << q
        total = 0
        j = 0
        while term:
            total += term
            j += 1
            term = term * v // j
        lower = total  # sum of floored terms <= 2**q · exp(v)
        # Each floor lost < 1, and the omitted tail (terms below 1 after the last) is bounded
        # by a geometric series once j > 2v; add a generous 2·(j + 1) to cover both.
        upper = total + 2 * (j + 1) + 1
        hi = (1 << (q + p)) // lower  # >= floor(2**p · exp(-v)) since lower <= true value
        lo = (1 << (q + p)) // upper
        if hi == lo:
            return hi
        guard *= 2


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
