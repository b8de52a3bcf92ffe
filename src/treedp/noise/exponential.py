"""Exact sampling for the exponential mechanism with a rank-distance score.

:func:`sample_weighted_laplace` draws an item ``i`` in ``{0, …, N-1}`` with probability
``P(i) ∝ weights[i] · exp(-rate · |i - center|)`` (integer ``weights``, rational ``center``,
dyadic ``rate``) and returns a uniformly chosen *unit* of it (item ``i`` owns ``weights[i]``
consecutive units), by integer arithmetic on uniform random words: the selection step of
Smith's exponential-mechanism quantile, where the units are the points of a public grid.

Algorithm
---------
Items are read outwards from ``b = floor(center)``: left ``i = b - j`` with exponent
``rate·j + u_L``, right ``i = b + 1 + j`` with ``rate·j + u_R``, ``u_L = rate·(center - b)``,
``u_R = rate·(b + 1 - center)``. Within a side, ``h_j = floor(rate·j)`` and ``f_j = rate·j -
h_j`` (dyadic, in ``[0, 1)``); items with the same ``h`` form a group. With ``x*`` the smallest
group exponent ``h + u`` among groups with weight, the groups up to ``x* + 48`` are kept and the
rest of each side is one tail group (proposed with probability below ``2**62 · e**-47``, but
sampled exactly like the others).

1. Group ``g`` is proposed with integer probability ``w_g / W``, ``w_g = ceil(S_g · U_g · 2**62
   / Z)``: ``S_g`` its weight, ``U_g >= exp(-y_g)`` a rational bound on its relative factor
   (``y_g = h_g + u - x*``), ``Z = sum S_g U_g``.
2. A unit is chosen uniformly among its ``S_g`` units (item ``i`` with probability
   ``weights[i] / S_g``).
3. It is accepted with probability ``(S_g / (C w_g)) · exp(-y_g) · exp(-(h_j - h_g)) ·
   exp(-f_j)``, ``C = Z / 2**62``: the first factor against the exact binary expansion of
   ``R_g exp(-y_g)`` (:func:`bernoulli_scaled_exp`), the second (tail only) as ``V >= h_j - h_g``
   with ``P(V >= v) = exp(-v)``, the third by CKS20's ``Bernoulli(exp(-γ))``. Each factor is at
   most 1 because ``w_g >= S_g U_g / C``.

So a unit of item ``i`` is accepted with probability ``∝ exp(-(rate·j + u)) = exp(-rate·|i -
center|)``, as required; rejected draws are redrawn (acceptance at least about ``e**-1`` per
round). No floating-point number enters any decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise.discrete_laplace import bernoulli_exp, uniform_below
from treedp.noise.exp_thresholds import (
    bernoulli_scaled_exp,
    floor_scaled_exp_neg,
    sample_unit_geometric,
)
from treedp.noise.rng import RandomSource

__all__ = ["sample_weighted_laplace"]

#: Groups whose exponent exceeds the smallest by more than this share one tail group per side.
_SPAN = 48
_SCALE_BITS = 62
_PRECISION = 64


@dataclass(frozen=True)
class _Group:
    side: int  # 0: left (i = b - j), 1: right (i = b + 1 + j)
    ja: int  # first j
    jb: int  # one past the last j
    base: int  # h_g: every j in the group has floor(rate·j) >= base
    y: Fraction  # exponent of the group relative to the best: h_g + u_side - x*
    total: int  # S_g, the group's weight
    tail: bool


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


@dataclass(frozen=True)
class _Side:
    weights: np.ndarray  # in j order: i = b - j (left) or i = b + 1 + j (right)
    prefix: np.ndarray  # prefix[j] = sum of the weights before j
    offset: Fraction  # u: the exponent of j is rate·j + u


def _sides(weights: np.ndarray, base: int, rate: Fraction, center: Fraction) -> list[_Side]:
    """The left and right sides, read outwards from ``base = floor(center)``."""
    out = []
    for part, offset in (
        (weights[base::-1], center - base),
        (weights[base + 1 :], base + 1 - center),
    ):
        prefix = np.zeros(part.size + 1, dtype=np.int64)
        np.cumsum(part, out=prefix[1:])
        out.append(_Side(part, prefix, rate * offset))
    return out


def _groups(sides: list[_Side], rate: Fraction) -> list[_Group]:
    """The proposal groups (module docstring), with their exact weights."""
    a, d = rate.numerator, rate.denominator
    first: list[int | None] = []
    for sd in sides:
        nz = np.flatnonzero(sd.weights)
        first.append(int(nz[0]) if nz.size else None)
    best = min(
        (a * j0) // d + sd.offset for sd, j0 in zip(sides, first, strict=True) if j0 is not None
    )
    groups: list[_Group] = []
    for side, (sd, j0) in enumerate(zip(sides, first, strict=True)):
        if j0 is None:
            continue
        prefix, u = sd.prefix, sd.offset
        size = prefix.size - 1
        h_first = (a * j0) // d
        limit = best + _SPAN - u
        h_last = limit.numerator // limit.denominator
        for h in range(h_first, h_last + 1):
            ja = max(j0, _ceil_div(h * d, a))
            jb = min(size, _ceil_div((h + 1) * d, a))
            if ja >= size:
                break
            total = int(prefix[jb]) - int(prefix[ja])
            if total > 0:
                groups.append(_Group(side, ja, jb, h, h + u - best, total, False))
        jt = max(j0, _ceil_div((h_last + 1) * d, a))
        if jt < size and int(prefix[size]) > int(prefix[jt]):
            nz = np.flatnonzero(sd.weights[jt:])
            h_tail = (a * (jt + int(nz[0]))) // d
            total = int(prefix[size]) - int(prefix[jt])
            groups.append(_Group(side, jt, size, h_tail, h_tail + u - best, total, True))
    return groups


def sample_weighted_laplace(
    weights: np.ndarray,
    center: Fraction,
    rate: Fraction,
    size: int,
    source: RandomSource,
) -> np.ndarray:
    """Draw ``size`` units with ``P(item i) ∝ weights[i] · exp(-rate·|i - center|)``, exactly.

    ``weights``: non-negative integers (units per item), total in ``(0, 2**62)``; ``center`` in
    ``[0, len(weights) - 1]``; ``rate`` a positive dyadic ``A / 2**k`` with ``2**k <= 2**53`` and
    ``A · len(weights) < 2**63`` (:func:`treedp.noise.rational.dyadic_lower_bound`). Unit ``u``
    belongs to the item ``i`` with ``cumsum(weights)[i-1] <= u < cumsum(weights)[i]`` and is
    uniform among its units. InvalidParameterError for arguments outside these ranges.
    """
    weights = np.asarray(weights)
    if weights.ndim != 1 or weights.size == 0 or weights.dtype.kind not in "iu":
        raise InvalidParameterError("'weights' must be a non-empty 1-d array of integers.")
    weights = weights.astype(np.int64)
    if (weights < 0).any() or not 0 < int(weights.sum(dtype=object)) < 2**_SCALE_BITS:
        raise InvalidParameterError("'weights' must be >= 0 with a total in (0, 2**62).")
    center, rate = Fraction(center), Fraction(rate)
    if not 0 <= center <= weights.size - 1:
        raise InvalidParameterError(
            f"'center' must lie in [0, {weights.size - 1}]. Got {float(center)!r}."
        )
    d = rate.denominator
    if rate <= 0 or d & (d - 1) or d > 2**53 or rate.numerator * weights.size >= 2**63:
        raise InvalidParameterError(
            f"'rate' must be a positive dyadic A/2**k with 2**k <= 2**53 and A·N < 2**63. "
            f"Got {rate}."
        )
    base = int(center)  # floor, center >= 0
    sides = _sides(weights, base, rate, center)
    groups = _groups(sides, rate)

    # Proposal weights w_g = ceil(S_g U_g 2**62 / Z), acceptance ratios R_g = S_g 2**62 / (Z w_g).
    upper = [Fraction(floor_scaled_exp_neg(g.y, _PRECISION) + 1, 2**_PRECISION) for g in groups]
    mass = [g.total * ub for g, ub in zip(groups, upper, strict=True)]
    z = sum(mass)
    scaled_mass = [m * 2**_SCALE_BITS / z for m in mass]
    w = [_ceil_div(m.numerator, m.denominator) for m in scaled_mass]
    ratio = [Fraction(g.total * 2**_SCALE_BITS) / (z * wg) for g, wg in zip(groups, w, strict=True)]
    cumw = np.cumsum(np.array(w, dtype=np.int64))
    total_w = int(cumw[-1])

    starts = np.zeros(weights.size + 1, dtype=np.int64)
    np.cumsum(weights, out=starts[1:])
    a = np.uint64(rate.numerator)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        choice = np.searchsorted(cumw, uniform_below(total_w, pending.size, source), side="right")
        accepted = np.zeros(pending.size, dtype=bool)
        units = np.empty(pending.size, dtype=np.int64)
        for gi in np.unique(choice):
            g = groups[int(gi)]
            rows = np.flatnonzero(choice == gi)
            prefix = sides[g.side].prefix
            # Group factor R_g exp(-y_g), exactly; only the survivors go on.
            rows = rows[bernoulli_scaled_exp(ratio[gi], g.y, rows.size, source)]
            if not rows.size:
                continue
            pos = uniform_below(g.total, rows.size, source).astype(np.int64) + prefix[g.ja]
            j = np.searchsorted(prefix, pos, side="right") - 1
            within = pos - prefix[j]
            scaled = j.astype(np.uint64) * a
            frac = scaled % np.uint64(d)
            keep = np.ones(rows.size, dtype=bool)
            if g.tail:  # h_j = floor(rate·j) may exceed the group's base only in a tail group
                h = (scaled // np.uint64(d)).astype(np.int64)
                keep = sample_unit_geometric(rows.size, source).astype(np.int64) >= h - g.base
            idx = np.flatnonzero(keep)
            keep[idx] = bernoulli_exp(frac[idx], d, idx.size, source)
            item = base - j if g.side == 0 else base + 1 + j
            units[rows[keep]] = starts[item[keep]] + within[keep]
            accepted[rows[keep]] = True
        out[pending[accepted]] = units[accepted]
        pending = pending[~accepted]
    return out
