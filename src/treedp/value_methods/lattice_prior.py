"""A public base measure for the recursion's nodes over the float lattice: weight near the
points already released.

The exponential mechanism over the float lattice (:mod:`.unbounded_quantiles`) weighs every
unit alike, ``2**16`` cells per octave from ``2**-32`` to ``2**64``: a prior that knows no
scale. Below the root of Kaplan et al.'s recursion a node's level often lies near or beyond
the end of its records (the top decile of data capped at 1.0, a block of ties at the data's
edge), where its score barely separates its records from the ~190 empty octaves beside them;
at small ``ε·n`` the uniform prior then answered 3e23 for the 90th percentile of a proportion.
Every node but the root is bounded by points the recursion has selected (released: the answers
are their post-processing), and those say where the data lie. Each such node draws with a base
measure that weighs a unit ``2**(BOOST_BITS - k)``, ``k = min(BOOST_BITS, floor(d))``, where
``d`` is the unit's distance from the nearest released end ``s`` of the node (its lattice point
``v``), and thins it far beyond every released magnitude:

* ``d = max(log2(1 + |v - s| / σ), log2(σ / |v|))`` in octaves of a released scale ``σ``, the
  distance from ``s`` to the nearest other point selected before the node on its path or by its
  left sibling (a right child's is usually its left sibling's unit), at least ``|s| /
  2**SCALE_FLOOR_BITS``. The term ``log2(σ/|v|)`` counts the lattice's many cells of small
  magnitudes at their width, so the weight near ``s`` is about uniform in value; the point 0 is
  an atom, not a small magnitude, and takes the first term only.
* A node with one selected point only (a child of the root, before its sibling) knows no spread:
  ``d = max(0, log2(|v| / c))``, ``c = max(|s|, 1)·2**CAP_BITS``, every magnitude up to ``c``
  weighing fully (a scale from ``|s|`` alone put the weight near 0 for data centred there).
* Beyond the reach ``R = 2**FAR_BITS · max(1, M)``, ``M`` the largest magnitude among the
  answers (:func:`.float_lattice.answer_of`) of the units this node's measure reads (its path
  and its left sibling's unit; not a global maximum), the weight halves per octave of
  magnitude: in ``[R·2**j, R·2**(j+1))`` only every ``2**min(j + 1, THIN_BITS)``-th unit of
  a segment, counted from the segment's first unit, weighs (the others weigh 0), and
  ``2**-THIN_BITS`` of the units in every farther octave; so the weights stay integers. The
  stride stays below a cell's ``2**SUB_BITS`` units, so every whole cell keeps weighted units
  in both halves (the same answers; a node's partial end cells lie within the reach, stride
  1) and only its share of the weight falls. Without it (session 22) the ~150 octaves beyond
  the released points weighed 1 a unit and outweighed a released end's neighbourhood in a
  node with few or no records (beside a block of ties: a constant column, floats 0/1/2, a
  0/1 flag), which then answered up to 1e19 (the 5% quantile of a column of 5.0 at ε = 1:
  -1.6e13). The reach is a magnitude, not a multiple of ``σ``: a tiny ``σ`` (two released
  points close together beside an atom at 0) thinned the data themselves when the thinning
  followed ``d`` (zero-inflated data, 3 levels: rank gap 0.006 n → 0.068 n). Records far
  beyond the reach carry little weight: a node's records there are answered poorly (the
  intended trade).

Privacy: none spent and none lost. The exponential mechanism with a base measure ``μ``,
``P(u) ∝ μ(u) exp(rate · score(u))``, has the privacy loss of the uniform one (the score's
term is the same, and the normaliser moves by at most the same factor) and is bounded range
(the zCDP accounting of :func:`.unbounded_quantiles.zcdp_cost` holds), as long as ``μ`` is
public: here it is a function of the node's interval and of the units selected before it
(adaptive composition: each step's loss is bounded given every earlier output, in the order
the steps run), never of the records. The root keeps the uniform measure.
The sampler takes integer weights with a total below ``2**62``: the units (below ``2**52``)
times ``2**BOOST_BITS``. A unit that weighs 0 is never drawn: the support is public too, and
the loss bound holds on it, ``2Δ·rate`` per node under either neighbour relation (under
``replace`` the rate is the caller's share over ``4Δ``, both nodes a record moves between
paying); the normaliser is positive under every dataset, as each segment's first unit weighs
at least 1. Measured in ``benchmarks/unbounded_prior.py``
(docs/private_bounds.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from treedp.value_methods.exponential_core import rank_weights
from treedp.value_methods.float_lattice import (
    SUB_BITS,
    TOTAL_UNITS,
    UnitGrid,
    answer_of,
    cell_of,
    cell_value,
)

__all__ = [
    "BOOST_BITS",
    "CAP_BITS",
    "FAR_BITS",
    "SCALE_FLOOR_BITS",
    "THIN_BITS",
    "NodePrior",
    "node_prior",
]

#: A unit at the released end weighs ``2**BOOST_BITS`` units far from it (the sampler's
#: integer weights stay below ``2**62``).
BOOST_BITS = 9
#: A released scale is at least ``|s| / 2**SCALE_FLOOR_BITS``.
SCALE_FLOOR_BITS = 4
#: A node with one released point ``s`` only weighs every magnitude up to
#: ``max(|s|, 1) · 2**CAP_BITS`` fully (it knows no spread of the data).
CAP_BITS = 10
#: Beyond ``2**FAR_BITS`` times the largest magnitude released (at least 1) the weight halves
#: per octave of magnitude ...
FAR_BITS = 16
#: ... for this many octaves, by strides of weighted units (below a cell's ``2**SUB_BITS``
#: units: every cell keeps weighted units in both halves).
THIN_BITS = SUB_BITS - 1
assert TOTAL_UNITS << BOOST_BITS < 2**62


@dataclass(frozen=True)
class NodePrior:
    """A piecewise weight per unit over a node's units ``starts[0]..end - 1``: in segment
    ``j`` (units ``starts[j]..starts[j+1] - 1``) the units ``starts[j] + i·strides[j]`` weigh
    ``factors[j]`` each and the others 0; ``cum[j]`` is the weight below ``starts[j]``."""

    starts: np.ndarray
    factors: np.ndarray
    strides: np.ndarray
    cum: np.ndarray

    def weight_below(self, units: np.ndarray) -> np.ndarray:
        """The total weight of the node's units below each of ``units`` (exact int64)."""
        u = np.asarray(units, dtype=np.int64)
        seg = np.clip(np.searchsorted(self.starts, u, side="right") - 1, 0, None)
        stride = self.strides[seg]
        carrying = (u - self.starts[seg] + stride - 1) // stride  # weighted units below u
        out: np.ndarray = self.cum[seg] + self.factors[seg] * carrying
        return out

    def unit_of(self, weight: np.ndarray) -> np.ndarray:
        """The unit holding each weighted index ``weight`` (``0 <= weight <`` the total): each
        weighted unit of a segment holds ``factors[j]`` consecutive indices, so a uniform
        index is a unit drawn in proportion to its weight."""
        w = np.asarray(weight, dtype=np.int64)
        seg = np.searchsorted(self.cum, w, side="right") - 1
        step = (w - self.cum[seg]) // self.factors[seg]
        out: np.ndarray = self.starts[seg] + step * self.strides[seg]
        return out

    def rank_weights(self, grid: UnitGrid, x: np.ndarray, first: int, last: int) -> np.ndarray:
        """:func:`~.exponential_core.rank_weights` in weight: the total weight of the units
        ``first..last`` with exactly ``i`` of the positions ``x`` below."""
        units = rank_weights(grid, x, first, last)  # units per rank, consecutive from first
        edges = first + np.concatenate([[0], np.cumsum(units)]).astype(np.int64)
        return np.diff(self.weight_below(edges))


class _Scale(NamedTuple):
    """A released end ``point`` of a node and what its weight decays with: ``sigma`` (the gap
    to the nearest other released point) or, with ``cap``, ``sigma`` is the magnitude
    beyond which the weight halves per octave."""

    point: float
    sigma: float
    cap: bool


def _value(unit: int, integers: bool) -> float:
    return float(answer_of(np.array([unit], dtype=np.int64), integers)[0])


def _scales(first: int, last: int, path: Sequence[int], integers: bool) -> list[_Scale]:
    """A :class:`_Scale` for each end of the node that is a released point."""
    released = [_value(u, integers) for u in path]
    out = []
    for end in (first, last):
        if end not in path:
            continue
        s = _value(end, integers)
        gaps = [abs(p - s) for p in released if p != s]
        if gaps:
            out.append(_Scale(s, max(min(gaps), abs(s) / 2**SCALE_FLOOR_BITS), False))
        else:
            out.append(_Scale(s, max(abs(s), 1.0) * 2**CAP_BITS, True))
    return out


def _distance(values: np.ndarray, scale: _Scale) -> np.ndarray:
    """``d`` of each lattice point from one released end (module docstring)."""
    s, sigma = scale.point, scale.sigma
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):  # inf: farthest
        if scale.cap:
            d: np.ndarray = np.maximum(0.0, np.log2(np.abs(values) / sigma))
            return d
        small = np.where(values == 0.0, 0.0, np.log2(sigma / np.abs(values)))
        d = np.maximum(np.log2(1.0 + np.abs(values - s) / sigma), small)
    return d


def _weights(
    values: np.ndarray, scales: list[_Scale], reach: float
) -> tuple[np.ndarray, np.ndarray]:
    """The factor and stride at each lattice point: ``2**(BOOST_BITS - min(BOOST_BITS,
    floor(d)))`` from the nearest released end, and ``2**min(THIN_BITS, j + 1)`` for a
    magnitude in ``[reach·2**j, reach·2**(j+1))`` (1 within ``reach``)."""
    k = np.full(values.size, BOOST_BITS, dtype=np.int64)
    for scale in scales:
        d = np.nan_to_num(_distance(values, scale), nan=BOOST_BITS, posinf=BOOST_BITS)
        k = np.minimum(k, np.minimum(np.floor(d), BOOST_BITS).astype(np.int64))
    with np.errstate(divide="ignore"):
        octaves = np.floor(np.log2(np.abs(values) / reach))
    j = np.clip(np.nan_to_num(octaves + 1, posinf=THIN_BITS, neginf=0), 0, THIN_BITS)
    factors = np.left_shift(1, BOOST_BITS - k).astype(np.int64)
    return factors, np.left_shift(1, j.astype(np.int64)).astype(np.int64)


def _reach(path: Sequence[int], integers: bool) -> float:
    """Where the strides start: ``2**FAR_BITS`` times the largest released magnitude, at
    least ``2**FAR_BITS``."""
    largest = max([abs(_value(u, integers)) for u in path] + [1.0])
    return float(min(largest * 2.0**FAR_BITS, np.finfo(np.float64).max))


def _cuts(scales: list[_Scale], reach: float) -> np.ndarray:
    """Cell boundaries (in units) where ``floor(d)`` may change: ``±cap·2**k``, or
    ``s ± σ(2**k - 1)`` and ``±σ / 2**k``; around the point 0; and where the stride may
    change, ``±reach·2**j``."""
    k = np.arange(BOOST_BITS + 2, dtype=np.float64)
    j = np.arange(THIN_BITS + 1, dtype=np.float64)
    points = [np.array([0.0, 2.0**-1000, -(2.0**-1000)])]
    with np.errstate(over="ignore", invalid="ignore"):  # beyond the floats: dropped below
        points += [reach * 2**j, -reach * 2**j]
        for s, sigma, cap in scales:
            if cap:
                points += [sigma * 2**k, -sigma * 2**k]
            else:
                far = sigma * (2**k - 1)
                points += [s + far, s - far, sigma / 2**k, -sigma / 2**k]
        values = np.concatenate(points)
    cells = cell_of(values[np.isfinite(values)])
    return np.concatenate([cells, cells + 1]).astype(np.int64) << SUB_BITS


def node_prior(
    first: int, last: int, path: Sequence[int], integers: bool = False
) -> NodePrior | None:
    """The base measure of the node over units ``first..last`` given ``path``, the units
    selected before it on its path and by its left sibling (earlier outputs), or None (uniform)
    when neither end was selected (the root)."""
    scales = _scales(first, last, path, integers)
    if not scales:
        return None
    reach = _reach(path, integers)
    cuts = np.unique(np.clip(np.r_[first, last + 1, _cuts(scales, reach)], first, last + 1))
    starts = cuts[:-1]
    factors, strides = _weights(cell_value(starts >> SUB_BITS), scales, reach)
    carrying = (np.diff(cuts) + strides - 1) // strides
    cum = np.concatenate([[0], np.cumsum(factors * carrying)[:-1]]).astype(np.int64)
    return NodePrior(starts, factors, strides, cum)
