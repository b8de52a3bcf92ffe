"""The certified upper tail of the discrete Laplace distribution.

Propose-test-release and the noisy mode release when a noisy integer clears the smallest ``a``
with ``P(Z >= a) <= δ``, ``Z ~ DLap(t)``, and report a certified upper bound on that tail: both
decided by integer arithmetic on rigorous dyadic bounds of ``exp``
(:func:`treedp.noise.exp_thresholds.floor_scaled_exp_neg`), never by a float comparison.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

from treedp.noise.exp_thresholds import floor_scaled_exp_neg

__all__ = ["tail_precision", "tail_threshold", "tail_upper"]


def tail_precision(delta: float) -> int:
    """Working bits for certifying a probability against ``delta``: 128 beyond ``log2(1/δ)``."""
    return 128 + max(0, math.ceil(-math.log2(delta)))


@lru_cache(maxsize=256)
def tail_threshold(scale: Fraction, delta: float) -> int:
    """Smallest integer ``a >= 1`` with ``P(Z >= a) = q^a/(1+q) <= delta``, ``Z ~ DLap(scale)``.

    ``q = exp(-1/scale)``. A float estimate proposes ``a``; ``exp(-a/scale) <= delta · (1 +
    exp(-1/scale))`` is then *certified* with rigorous ``p``-bit bounds on both exponentials,
    stepping ``a`` up until it holds and down while ``a - 1`` still provably holds, so the
    realised δ never exceeds the request. With ``p = 128 + ceil(log2(1/δ))`` the upper bound of
    ``exp(-a/scale)`` is at most ``2**-p`` above the true value, far below the right side (at
    least ``δ``), so the loop terminates for every δ in (0, 1). Cached (public parameters).
    """
    t = Fraction(scale)
    dlt = Fraction(delta)
    p = tail_precision(delta)
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


def tail_upper(scale: Fraction, a: int, delta: float) -> Fraction:
    """A certified upper bound on ``P(Z >= a) = exp(-a/t) / (1 + exp(-1/t))``, ``Z ~ DLap(t)``.

    Computed at least at the precision :func:`tail_threshold` used for ``delta``; a finer
    dyadic bound is never larger, so for its ``a`` the result is at most ``delta``.
    """
    t = Fraction(scale)
    if a <= 0:
        return Fraction(1)
    x = a / t
    # exp(-x) >= 2**(-1.45 x): at least 128 significant bits
    p = max(tail_precision(delta), 128 + math.ceil(1.5 * float(x)))
    top = Fraction(floor_scaled_exp_neg(x, p) + 1, 2**p)
    return top / (1 + Fraction(floor_scaled_exp_neg(1 / t, p), 2**p))
