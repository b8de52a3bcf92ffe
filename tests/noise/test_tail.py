"""The certified discrete-Laplace tail: thresholds and upper bounds for any δ."""

from __future__ import annotations

import decimal
import math
from fractions import Fraction

from treedp.noise import noise_scale
from treedp.noise import tail as med


def test_thresholds_give_the_requested_delta() -> None:
    for eps, delta in [(0.1, 1e-6), (1.0, 1e-6), (1.0, 0.05), (3.0, 1e-9)]:
        scale = noise_scale(1, eps)
        a = med.tail_threshold(scale, delta)
        q = math.exp(-1 / float(scale))
        assert q**a / (1 + q) <= delta < q ** (a - 1) / (1 + q) or a == 1
    # certified, not float-estimated: checked at 80 digits, including a tiny epsilon where
    # q**a in floating point would be off by ~1e-9 relative
    ctx = decimal.Context(prec=80)
    for scale in (noise_scale(1, 1e-6), Fraction(7, 3), Fraction(1)):
        for delta in (1e-6, 1e-12):
            a = med.tail_threshold(scale, delta)
            t = ctx.divide(decimal.Decimal(scale.numerator), decimal.Decimal(scale.denominator))

            def tail(k: int, t=t) -> decimal.Decimal:
                return ctx.divide(ctx.exp(ctx.divide(-k, t)), 1 + ctx.exp(ctx.divide(-1, t)))

            assert tail(a) <= decimal.Decimal(delta)
            assert a == 1 or tail(a - 1) > decimal.Decimal(delta)


def test_tail_threshold_terminates_for_tiny_delta() -> None:
    """F8: the precision grows with log2(1/δ); δ = 1e-39 and 1e-60 (and the smallest
    subnormal) give a threshold certified at 400 digits."""
    ctx = decimal.Context(prec=400)
    for eps in (0.5, 3.0):
        scale = noise_scale(1, eps)
        t = ctx.divide(decimal.Decimal(scale.numerator), decimal.Decimal(scale.denominator))

        def tail(k: int, t=t) -> decimal.Decimal:
            return ctx.divide(ctx.exp(ctx.divide(-k, t)), 1 + ctx.exp(ctx.divide(-1, t)))

        for delta in (1e-39, 1e-60, 5e-324):
            a = med.tail_threshold(scale, delta)
            assert tail(a) <= decimal.Decimal(delta) < tail(a - 1)
            upper = med.tail_upper(scale, a, delta)
            up = ctx.divide(decimal.Decimal(upper.numerator), decimal.Decimal(upper.denominator))
            assert tail(a) <= up <= decimal.Decimal(delta)
