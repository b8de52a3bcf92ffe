"""The recursion's children inside a bound zone: their budget counts their records instead.

When a node's released unit lies in one of the grid's bound zones
(:mod:`~treedp.value_methods.bound_blocks`), the child on the zone's side has a grid interval
inside that zone: every unit it or any node below it could release answers the bound, so its
answers are known from the released unit (post-processing) and its selections would spend
budget for nothing. A block at a bound is where this happens (70% zeros on ``(0, hi)``: the
root's median lands in the low zone), and it is where Kaplan et al.'s rescaled levels fail: the
sibling's level assumes the parent split its records at the parent's level, but the split is
at the block's end, far from it (zero-inflated data, ``n = 10^4``, ε = 0.1: the level 2/3 was
answered 0.12 n off).

So such a *forced* child releases one noisy count of its records, ``Ĉ = c + Z``, ``Z`` exact
discrete Laplace of scale :func:`forced_count_scale` (half the child's selection budget), and
nothing below it. Its sibling's records are then placed in absolute ranks by that count: a
node's :class:`Frame` says its records run from rank ``lo·N + c_lo`` to ``hi·N + c_hi`` (``N``
the unknown total, ``lo``, ``hi`` planned levels, ``c`` released counts; Kaplan et al.'s frame
has ``c = 0``), so its target for level ``q``, ``q·N`` less the records below it, is ``a·n +
offset`` with ``n`` its exact number of records, ``a = (q - lo)/(hi - lo)`` and ``offset =
-(1 - a)·c_lo - a·c_hi`` (:func:`offset_target`): beside a forced left child the sibling's
``c_lo`` grows by ``Ĉ``, beside a forced right child its ``c_hi`` falls by ``Ĉ``
(:func:`beside_forced`), and the nodes below split the frame at their levels as Kaplan's do
(:func:`child_frames`). Nodes in such a frame use it instead of the anchored rule's rescaled
or absolute level, but keep its ends: a level the anchors' released counts place beside the
node's records (beyond ``SIGMAS``) answers that end of the node's interval. Without that, a
level inside a block but sent to the sibling (the root's median falls in the block, the
block's end far above it) had its target clamped to 0, where the gap between the zone and
the sibling's first record outweighs the zone's units by their number: Adult's
``capital_gain`` (92% zeros on ``(0, 10^5)``), 29 levels, ε = 1 answered levels 0.53–0.9 in
that gap, a mean rank gap of 3,634; the sibling's lower end is the parent's unit, inside the
zone, so those levels now answer the bound.

Guarantee (part of :func:`~.quantiles_recursive.quantiles_recursive`'s per-level
composition; pure DP, privacy unit one record, ``add_remove`` or ``replace``):

* The forced child's count: its records are its own (disjoint from the level's other nodes);
  one record added or removed changes it by 1, a record replaced by at most 1 per node.
  Scale ``1/b`` with ``b = share/2`` under ``add_remove`` (``share/4`` under ``replace``,
  :func:`~.recursion_anchor.count_scale`): a loss of at most ``share/2`` (``share/4`` per node
  a replaced record touches), within the child's selection bound ``share``; under zCDP
  ``(share/2)²/2 = share²/8``, its selection's bounded-range cost.
* A framed node's selection: the ``c`` are released counts (post-processing), ``a`` public; the
  target moves by ``a`` when one of the node's records is added or removed and the rank ``#{x
  < y}`` by 0 or 1, so the score ``-|#{x < y} - T|``, ``T`` the target rounded down to
  ``2**-32``, has sensitivity ``max(a, 1 - a) + 2**-32``
  (:func:`~.exponential_core.rank_sensitivity`), and the rate ``share / (2Δ)`` (``share /
  (4Δ)`` under ``replace``) is the anchored rule's at level ``a``. A target outside ``[0, n]``
  is clamped to it: the law ``∝ w_i exp(-rate·|i - T|)`` over the ranks ``i`` in ``[0, n]`` is
  the same for ``T`` and its clamp (the factor ``exp(-rate·dist(T, [0, n]))`` is common to
  every rank), so the sensitivity is that of the unclamped score.
* A framed node answering an end of its interval (its anchors' released counts place the
  level beside its records, :func:`~.recursion_anchor.anchored_level`) spends nothing: the
  answer is an earlier released unit, chosen from released counts and public levels only
  (post-processing; ``tests/privacy/test_audit_framed_ends.py``). Where that end is the
  grid's edge (no released unit) it selects at its frame's target instead, the framed
  selection above, within its ``share`` (session 23: it answered the edge, ±8.99e307 on the
  float lattice).
* The sibling reads the forced child's count released at the same level: adaptive parallel
  composition over the level's disjoint nodes (given the earlier outputs, a record's
  neighbour changes its own node's output law only, or, under ``replace``, the two nodes'
  it leaves and enters, at most half their budgets each).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from treedp.noise import RandomSource
from treedp.noise.exponential import sample_weighted_laplace
from treedp.value_methods.bound_blocks import ZoneSplits, zone_units
from treedp.value_methods.exponential_core import TARGET_BITS, GridLike
from treedp.value_methods.recursion_anchor import count_scale

if TYPE_CHECKING:
    from treedp.value_methods.quantiles_recursive import _Plan

__all__ = [
    "FORCED_COUNT_SHARE",
    "Frame",
    "beside_forced",
    "child_frames",
    "fill_forced",
    "forced_count_scale",
    "forced_sides",
    "node_frame",
    "offset_target",
    "select_at",
]

#: The share of a forced child's selection budget that its count spends (half: its zCDP
#: cost, ``(share/2)²/2``, is then the selection's bounded-range ``share²/8``).
FORCED_COUNT_SHARE = Fraction(1, 2)


class Frame(NamedTuple):
    """A node's records as absolute ranks, per row: from ``lo·N + c_lo`` to ``hi·N + c_hi``
    (``N`` the unknown total; ``lo``, ``hi`` planned levels; ``c_lo``, ``c_hi`` sums of
    forced children's released counts beside it). Kaplan et al.'s frame is ``c = 0``."""

    lo: Fraction
    hi: Fraction
    c_lo: np.ndarray
    c_hi: np.ndarray

    def rows(self, pick: np.ndarray) -> Frame:
        """The frame of the rows ``pick``."""
        return self._replace(c_lo=self.c_lo[pick], c_hi=self.c_hi[pick])

    def level(self, q: Fraction) -> Fraction:
        """``a = (q - lo) / (hi - lo)``: the target's share of the node's records."""
        return (q - self.lo) / (self.hi - self.lo)

    def offset(self, q: Fraction, row: int) -> Fraction:
        """``-(1 - a)·c_lo - a·c_hi``: with ``n = (hi - lo)·N + c_hi - c_lo`` records, the
        absolute target ``q·N`` less the records below the node is ``a·n`` plus this."""
        a = self.level(q)
        return -(1 - a) * int(self.c_lo[row]) - a * int(self.c_hi[row])


def node_frame(plan: _Plan, frame: Frame | None, size: int) -> Frame:
    """The node's frame (Kaplan's, ``c = 0``, when it has none)."""
    if frame is not None:
        return frame
    zero = np.zeros(size, dtype=np.int64)
    return Frame(plan.q_left, plan.q_right, zero, zero)


def child_frames(plan: _Plan, frame: Frame) -> tuple[Frame, Frame]:
    """The children's frames, split at the node's level (Kaplan's assumption)."""
    zero = np.zeros(frame.c_lo.size, dtype=np.int64)
    return (Frame(frame.lo, plan.q, frame.c_lo, zero), Frame(plan.q, frame.hi, zero, frame.c_hi))


def beside_forced(frame: Frame, count: np.ndarray, forced_left: bool) -> Frame:
    """The sibling's frame beside a forced child holding ``count`` (released) records: the
    node's own, less the forced child's records at that end."""
    if forced_left:
        return frame._replace(c_lo=frame.c_lo + count)
    return frame._replace(c_hi=frame.c_hi - count)


def forced_sides(splits: GridLike, unit: int) -> tuple[bool, bool]:
    """Whether the left child (units ``first..unit`` of its parent's interval) and the right
    child (``unit..last``) lie inside a bound zone, on a grid with zones (public: the released
    unit only). As ``first <= unit <= last``, the left child's units all lie below the low
    zone's end exactly when ``unit`` does, and the right child's above the high zone's start.
    On the float lattice with a public side (``UnitGrid.zones``) the zones are the groups
    holding the public bounds, at the ends of the lattice's units left to the recursion."""
    lattice = getattr(splits, "zones", None)
    if lattice is not None:
        return unit < lattice[0], unit >= lattice[1]
    if not isinstance(splits, ZoneSplits):
        return False, False
    z = zone_units(splits.grid)
    if z == 0:
        return False, False
    return unit < z, unit >= splits.cells - z


def fill_forced(node: _Plan | None, out: np.ndarray, rows: np.ndarray, unit: int) -> None:
    """Every level of the subtree ``node`` released as ``unit`` for ``rows`` (each answers the
    zone's bound; post-processing)."""
    if node is None:
        return
    out[rows, node.mid] = unit
    fill_forced(node.left, out, rows, unit)
    fill_forced(node.right, out, rows, unit)


def forced_count_scale(node: _Plan, relation: str) -> Fraction:
    """The discrete Laplace scale of a forced child's count: a loss of at most
    ``FORCED_COUNT_SHARE · share`` (per node a record touches)."""
    return count_scale(node.share * FORCED_COUNT_SHARE, relation)


def offset_target(r: Fraction, n: int, offset: Fraction) -> Fraction:
    """``r·n + offset`` rounded down to a multiple of ``2**-TARGET_BITS``, then clamped to
    ``[0, n]`` (the same law: see the module docstring)."""
    exact = r * n + offset
    target = Fraction(math.floor(exact * 2**TARGET_BITS), 2**TARGET_BITS)
    return min(max(target, Fraction(0)), Fraction(n))


def select_at(
    weights: np.ndarray,
    target: Fraction,
    rate: Fraction,
    size: int,
    source: RandomSource,
    first: int,
) -> np.ndarray:
    """``size`` draws of units ``first..``, ``P ∝ exp(-rate·|i - target|)`` per unit."""
    return sample_weighted_laplace(weights, target, rate, size, source) + first
