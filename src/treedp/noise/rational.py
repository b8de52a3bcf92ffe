"""Exact rational noise scales.

The exact samplers need the Laplace scale as a ratio of integers. A user's epsilon is a float,
so ``sensitivity / epsilon`` is converted to the *closest rational from above* with a bounded
denominator: the noise is then never smaller than requested, so the privacy loss never exceeds
the stated epsilon. With denominators below ``2**20`` the scale exceeds ``sensitivity/epsilon``
by a relative amount below ``1e-6`` (tested), so the loss actually spent is in
``[epsilon·(1 - 1e-6), epsilon]``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from treedp._validation import must
from treedp.exceptions import InvalidParameterError

__all__ = [
    "MAX_SCALE",
    "dyadic_lower_bound",
    "float_at_least",
    "noise_scale",
    "rational_upper_bound",
]

#: Largest noise scale the samplers accept (it keeps every intermediate integer below 2**62).
MAX_SCALE = 2**30
_MAX_NUMERATOR = 2**52


def float_at_least(q: Fraction) -> float:
    """The smallest float ``>= q`` (guarantees are rounded up, never down)."""
    f = float(q)
    return f if Fraction(f) >= q else math.nextafter(f, math.inf)


def rational_upper_bound(x: Fraction, max_denominator: int) -> Fraction:
    """Return the smallest fraction ``p/q >= x`` with ``1 <= q <= max_denominator``.

    The best approximations of ``x`` with a bounded denominator are a convergent and a
    semiconvergent of its continued fraction, one on each side of ``x``: the one above.
    """
    if max_denominator < 1:
        raise InvalidParameterError(
            must("max_denominator", f"be an int >= 1. Got {max_denominator!r} instead.")
        )
    if x.denominator <= max_denominator:
        return x
    p0, q0, p1, q1 = 0, 1, 1, 0
    n, d = x.numerator, x.denominator
    while True:
        a = n // d
        q2 = q0 + a * q1
        if q2 > max_denominator:
            break
        p0, q0, p1, q1 = p1, q1, p0 + a * p1, q2
        n, d = d, n - a * d
    k = (max_denominator - q0) // q1
    bound1 = Fraction(p0 + k * p1, q0 + k * q1)
    return bound1 if bound1 >= x else Fraction(p1, q1)


def noise_scale(sensitivity: int, epsilon: float) -> Fraction:
    """Return the exact rational Laplace scale used for ``sensitivity / epsilon``.

    Parameters
    ----------
    sensitivity : int
        The L1 sensitivity of the released vector, a positive integer.
    epsilon : float
        The privacy budget spent on it, positive and finite.

    Returns
    -------
    Fraction
        A rational scale ``>= sensitivity / epsilon`` (exactly, with ``epsilon`` read as the
        binary float it is), as close as a denominator below ``2**20`` allows.
    """
    if not (isinstance(epsilon, float | int) and math.isfinite(epsilon) and epsilon > 0):
        raise InvalidParameterError(
            f"The 'epsilon' of a noise scale must be a finite float > 0. Got {epsilon!r} instead."
        )
    exact = Fraction(int(sensitivity)) / Fraction(epsilon)
    if exact > MAX_SCALE:
        raise InvalidParameterError(
            f"The noise scale sensitivity/epsilon = {float(exact):.4g} exceeds {MAX_SCALE}: "
            "epsilon per level is too small to be useful. Use a larger 'epsilon' or fewer levels."
        )
    max_den = max(1, min(2**20, _MAX_NUMERATOR // (math.ceil(exact) + 1)))
    return rational_upper_bound(exact, max_den)


def dyadic_lower_bound(x: Fraction, bits: int = 31) -> Fraction:
    """Return the largest ``A / 2**k <= x`` with ``2**(bits-1) <= A < 2**bits`` (``x > 0``).

    The relative error is below ``2**(1 - bits)``. Used where a rate multiplies a score: a rate
    rounded down spends at most the stated epsilon.
    """
    x = Fraction(x)
    if x <= 0:
        raise InvalidParameterError(f"'x' must be > 0. Got {x!r} instead.")
    # k such that x·2**k lies in [2**(bits-1), 2**bits)
    k = bits - 1 - (x.numerator.bit_length() - x.denominator.bit_length())
    while x * Fraction(2) ** k >= 2**bits:
        k -= 1
    while x * Fraction(2) ** k < 2 ** (bits - 1):
        k += 1
    scaled = x * Fraction(2) ** k
    return Fraction(scaled.numerator // scaled.denominator) / Fraction(2) ** k
