"""The priority prefilter of the Spark window bounding: most rows of a busy person never sort.

The window bounding of :mod:`treedp.engines.spark.grouped` keeps, of a person with ``c`` rows,
the ``m`` rows of lowest priority (``m = max_contributions``). The priority ``U`` of a row is
a 60-bit value of a keyed SHA-256 (uniform on ``[0, 2^60)``, independent across rows, see
that module). The prefilter drops, before the shuffle and the sort, every row of a person with
``c > mu(m)`` whose priority is at or above ``T(c) = ceil(2^60 · mu(m) / c)``: a row survives
with probability ``p = T(c) / 2^60 >= mu(m) / c``, so ``X``, the survivors, is
``Binomial(c, p)`` with mean ``c·p >= mu(m)``. (``T(c)`` is clamped to ``2^60 - 1`` so that it
always has 15 hex digits; the clamp can lower ``p`` by ``2^-60`` at most, within the margin
the tests allow for rounding.)

*Nothing changes when at least ``m`` rows survive*: the survivors are exactly the rows of
priority below ``T(c)``, so the ``m`` lowest priorities of the person are all among them and
the window keeps the same ``m`` rows as without the prefilter (a uniform sample of ``m`` of
the ``c`` rows). When fewer than ``m`` survive, all survivors are kept: fewer rows, never
more, and they are the lowest of the person's priorities, a subset of what the unfiltered
window keeps.

*The bound.* With ``L = ln(10^12)``, ``mu(m) = m + L + sqrt(L² + 2·m·L)``, the positive root of
``(mu - m)² = 2·L·mu``. Chernoff's lower tail for a sum of independent Bernoulli variables
of mean ``mu' = c·p >= mu``, ``P(X <= (1 - d)·mu') <= exp(-d²·mu' / 2)``, at
``(1 - d)·mu' = m`` gives ``P(X < m) <= exp(-(mu' - m)² / (2·mu'))``; the exponent's
magnitude ``(mu' - m)² / (2·mu')`` grows with ``mu'`` above ``m``, so it is at least
``(mu - m)² / (2·mu) = L`` and ``P(X < m) <= 10^-12`` for every ``c > mu(m)`` (persons with
``c <= mu(m)`` keep every row through the prefilter). The expected survivors are about
``m + sqrt(2·L·m) + 2·L``: ``m + 7.43·sqrt(m) + 55`` at most (137 for ``m = 50``).
``tests/engines/spark/test_prefilter.py`` checks the bound with exact binomial tails.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["FAILURE", "PRIORITY_BITS", "survivors_mean", "threshold_hex"]

#: The probability, per person, that the prefilter leaves fewer than ``m`` rows.
FAILURE = 1e-12
#: The priorities are the first 15 hex digits of a SHA-256 digest: 60 bits.
PRIORITY_BITS = 60


def survivors_mean(m: int, failure: float = FAILURE) -> float:
    """``mu(m) = m + L + sqrt(L² + 2·m·L)``, ``L = ln(1/failure)``: the least expected number
    of survivors for which Chernoff's bound gives ``P(Binomial < m) <= failure``."""
    big_l = math.log(1.0 / failure)
    return m + big_l + math.sqrt(big_l * big_l + 2.0 * m * big_l)


def threshold_hex(count: Any, m: int) -> Any:
    """The Spark column of ``T(c)`` for a person with ``count`` rows, as 15 lower-case hex
    digits (comparable as text with the priorities' hex digits), or null (every row passes)
    when ``count <= mu(m)``.

    ``T(c) = ceil(2^60 · mu / c)`` in double precision: the relative error of the quotient,
    below ``2^-52``, moves the survivors' mean by less than ``10^-13`` of a row. ``T(c)`` is
    clamped to ``2^60 - 1`` (the quotient first to ``2^60``, so the cast to a long never
    overflows): it always has 15 hex digits, and the clamp changes ``p`` by at most ``2^-60``.
    """
    from pyspark.sql import functions as F

    mu = survivors_mean(m)
    top = 2**PRIORITY_BITS
    quotient = F.least(F.lit(mu * float(top)) / count.cast("double"), F.lit(float(top)))
    scaled = F.least(F.ceil(quotient).cast("long"), F.lit(top - 1).cast("long"))
    digits = F.lower(F.lpad(F.hex(scaled), PRIORITY_BITS // 4, "0"))
    return F.when(count.cast("double") > F.lit(mu), digits)
