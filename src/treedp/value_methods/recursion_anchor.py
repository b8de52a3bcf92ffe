"""The recursion's anchors: noisy side counts and the level a child targets from them.

Guarantee: the counts are pure DP, privacy unit one record, ``replace`` or ``add_remove``
neighbours; their loss enters :func:`treedp.value_methods.quantiles_recursive.quantiles_recursive`'s
per-level composition, which states the derivation. Everything else here is post-processing
of released counts.

Kaplan, Schnapp and Stemmer's recursion hands a child the level rescaled to the child's
records, ``q' = (q - q_left) / (q_right - q_left)``, which assumes the parent's released point
split the parent's records at the parent's level. A block of tied records at that point goes
whole to one child (a node holds whole cells), and the other child's rescaled level then
misses by up to the block (diffprivlib issue #107's input: 0.163 n at q = 0.75). Each node with
a child therefore releases the noisy counts of the records it sends to each side; a child
compares the rescaled level with the absolute one those counts give, ``a = q·N̂ - Ô`` (``N̂``
the root's two counts summed, ``Ô`` the records left of the child), and keeps the rescaled
level unless the two differ by more than the counts' noise can explain (:data:`SIGMAS`
standard deviations): smooth data keep the recursion's accuracy (the rescaled level's miss is
the parent's rank error, far below the counts' noise), a block's far side is answered from
``a``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from treedp.noise.discrete_laplace import discrete_laplace_variance
from treedp.noise.rational import dyadic_lower_bound

__all__ = [
    "HIGH",
    "LOW",
    "PINNED_RULE",
    "SIGMAS",
    "Anchor",
    "anchored_level",
    "count_scale",
    "count_sensitivity",
    "root_anchor",
    "side_counts",
]

#: A child leaves the rescaled level for the counts' absolute one when the two differ by more
#: than this many standard deviations of the counts' noise (:meth:`Anchor.spread`).
SIGMAS = 5.0
#: Whether :func:`anchored_level` leaves the rescaled level below a parent that released an
#: end of its interval (:attr:`Anchor.pinned`); off, the rule before session 23 (a
#: benchmark's baseline and a test's mutant).
PINNED_RULE = True
#: What :func:`anchored_level` returns for a level at or below the child's records (answer its
#: lower end, the nearest released point below it) and at or above them (its upper end, the
#: nearest released point above it); where that end is the grid's edge the child selects at
#: level 0 or 1 among its records instead (``quantiles_recursive._select``).
LOW, HIGH = "low", "high"


def count_sensitivity(relation: str) -> int:
    """The L1 sensitivity of one recursion level's side counts: 1 under ``add_remove`` (the
    record is on one side of one node of the level), 2 under ``replace`` (it leaves one side
    and enters one, of the same node or of two)."""
    return 2 if relation == "replace" else 1


def count_scale(budget: Fraction, relation: str) -> Fraction:
    """The discrete Laplace scale of a level's side counts for a loss of at most ``budget``:
    ``1 / b`` with ``b = budget / sensitivity`` rounded down to a dyadic rational, so the loss
    ``sensitivity · b`` is exact and at most ``budget``."""
    return 1 / dyadic_lower_bound(budget / count_sensitivity(relation))


class Anchor(NamedTuple):
    """What a child reads of the released counts, per simulated row (public).

    ``total``: ``N̂``, the root's two side counts summed; ``offset``: ``Ô``, the side counts
    of the records left of the child (0 down the left edge); ``size``: ``Ŝ``, the parent's
    count of the child's side. ``path``: the child's sides from the root (``"RL"``: the left
    child of the root's right child), which names the counts: count ``p`` is the size of the
    child at path ``p``. ``var``: each named count's noise variance (public: its scale).
    ``pinned``: the parent released an end of its own interval (a level it answered beside
    its records, or a draw there), so it split its records at that end and not at its level:
    the child's rescaled level assumes what did not happen."""

    total: np.ndarray
    offset: np.ndarray
    size: np.ndarray
    path: str
    var: dict[str, float]
    pinned: bool = False

    def spread(self, q: Fraction, level: Fraction) -> float:
        """The standard deviation of the noise in ``q·N̂ - Ô - q'·Ŝ`` (the absolute target
        less the rescaled one, in records), exactly: each count's coefficient in it (``q``
        for the root's two, ``-1`` for those in ``Ô``, ``-q'`` for ``Ŝ``) squared times its
        variance, summed (the counts' noises are independent)."""
        coef = {"L": float(q), "R": float(q)}
        for i, side in enumerate(self.path):
            if side == "R":  # the left sibling's records lie left of the child
                left = self.path[:i] + "L"
                coef[left] = coef.get(left, 0.0) - 1.0
        coef[self.path] = coef.get(self.path, 0.0) - float(level)
        return math.sqrt(sum(c * c * self.var[name] for name, c in coef.items()))

    def rows(self, pick: np.ndarray) -> Anchor:
        """The anchor of the rows ``pick`` (a mask or indices)."""
        return self._replace(total=self.total[pick], offset=self.offset[pick],
                             size=self.size[pick])  # fmt: skip

    def children(
        self, left: np.ndarray, right: np.ndarray, scale: Fraction, pinned: bool = False
    ) -> tuple[Anchor, Anchor]:
        """The two children's anchors from this node's side counts ``left``, ``right``
        (``pinned``: this node released an end of its interval)."""
        var = discrete_laplace_variance(scale)
        names = {**self.var, self.path + "L": var, self.path + "R": var}
        return (
            Anchor(self.total, self.offset, left, self.path + "L", names, pinned),
            Anchor(self.total, self.offset + left, right, self.path + "R", names, pinned),
        )


def root_anchor(
    left: np.ndarray, right: np.ndarray, scale: Fraction, pinned: bool = False
) -> tuple[Anchor, Anchor]:
    """The root's children's anchors: ``N̂`` is the root's two side counts summed."""
    base = Anchor(left + right, np.zeros(left.size, dtype=np.int64), left + right, "", {})
    return base.children(left, right, scale, pinned)


def anchored_level(q: Fraction, level: Fraction, anchor: Anchor, row: int) -> Fraction | str:
    """The level a child at released level ``q`` (rescaled: ``level``) targets among its
    records, from its anchor's counts only (post-processing: no data).

    ``a = q·N̂ - Ô`` is the absolute target less the records left of the child. Where ``a``
    and the rescaled target ``q'·Ŝ`` agree within :data:`SIGMAS` times the noise's spread,
    and the parent did not release an end of its interval (:attr:`Anchor.pinned`: it then
    split its records there, not at its level, and the rescaled level is void), ``level``
    (Kaplan et al.'s; its target ``q'·n_node`` on the child's exact records). A pinned parent
    is a level answered beside its records (:data:`LOW`, :data:`HIGH`), mostly beside a
    block: Adult capital_gain (92% zeros) at ε = 0.1, deciles, the 0.8 node answered the
    root's point and its child at 0.9 kept the rescaled level of the non-zero records (6,382
    to 7,284 for a true 0 in 5 of 6 seeds, the gap within the counts' noise).
    Otherwise :data:`LOW` when ``a <= 0``, :data:`HIGH` when ``a >= Ŝ`` (the level lies beside
    the child's records: answer that end of the child's grid interval, the released point
    nearest below, resp. above, it: the parent's for a right child's lower end and a left
    child's upper end, else an earlier ancestor's point; at the grid's edge the caller
    selects at level 0 or 1 instead), else ``a / Ŝ``,
    in (0, 1), the child's target ``(a / Ŝ)·n_node``."""
    total, offset, size = (int(anchor.total[row]), int(anchor.offset[row]),
                           int(anchor.size[row]))  # fmt: skip
    a = q * total - offset
    pinned = PINNED_RULE and anchor.pinned
    if not pinned and abs(a - level * size) <= SIGMAS * anchor.spread(q, level):
        return level
    if a <= 0:
        return LOW
    if a >= size:
        return HIGH
    return a / size


def side_counts(x: np.ndarray, point: float) -> tuple[int, int]:
    """The exact counts the children's anchors release: the node's (sorted) records below the
    split ``point`` and the others, a partition of them (each record in one count)."""
    below = int(np.searchsorted(x, point, side="left"))
    return below, x.size - below
