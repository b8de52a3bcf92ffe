"""Level-uniform tree shapes: branching per level, padding, node counts and spans.

A shape over ``B`` bins has a root (level 0) and ``h`` levels below it; every node at level
``l - 1`` has ``k_l`` children at level ``l``, so level ``l`` has ``k_1···k_l`` node slots and
the leaves (level ``h``) are ``k_1···k_h >= B`` slots. The slots past ``B`` are padding: bins
that are always empty, publicly. Nodes made only of padding are never stored or noised; a
level keeps ``ceil(B / span_l)`` nodes, where ``span_l = k_{l+1}···k_h`` is the number of leaves
under one node of level ``l``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError

__all__ = ["MAX_PADDED_LEAVES", "TreeShape", "shape_for"]

#: Upper limit on ``k_1···k_h`` (keeps every index inside int64 with room to spare).
MAX_PADDED_LEAVES = 2**40


@dataclass(frozen=True)
class TreeShape:
    """A level-uniform tree over ``n_bins`` leaves.

    Attributes
    ----------
    n_bins : int
        The number of real bins ``B`` (leaves that can hold data).
    branching : tuple of int
        ``(k_1, ..., k_h)``: fan-out from level ``l - 1`` to level ``l``; each at least 2, with
        product at least ``B``. Empty only when ``B == 1`` (the root is the only node).
    """

    n_bins: int
    branching: tuple[int, ...]

    def __post_init__(self) -> None:
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, int) or self.n_bins < 1:
            raise InvalidParameterError(
                f"The 'n_bins' of a tree shape must be an int >= 1. Got {self.n_bins!r} instead."
            )
        for k in self.branching:
            if isinstance(k, bool) or not isinstance(k, int) or k < 2:
                raise InvalidParameterError(
                    must(
                        "branching",
                        "hold ints >= 2 (one fan-out per level). "
                        f"Got {list(self.branching)!r} instead.",
                    )
                )
        product = math.prod(self.branching)
        if product < self.n_bins:
            raise InvalidParameterError(
                f"The 'branching' parameter {list(self.branching)!r} has product {product}, "
                f"below the number of bins {self.n_bins}; the product must be >= the bins."
            )
        if product > MAX_PADDED_LEAVES:
            raise InvalidParameterError(
                f"The 'branching' parameter {list(self.branching)!r} has product {product}, "
                f"above the limit {MAX_PADDED_LEAVES}."
            )

    @property
    def height(self) -> int:
        """The number of levels below the root, ``h``."""
        return len(self.branching)

    @property
    def padded_leaves(self) -> int:
        """``k_1···k_h``: leaf slots including padding."""
        return math.prod(self.branching)

    def span(self, level: int) -> int:
        """Leaves (slots) under one node of ``level``: ``k_{level+1}···k_h``."""
        return math.prod(self.branching[level:])

    def level_sizes(self) -> list[int]:
        """Stored (not all-padding) nodes per level, top-down, root first."""
        return [-(-self.n_bins // self.span(level)) for level in range(self.height + 1)]

    @property
    def n_nodes(self) -> int:
        """The number of stored nodes over all levels."""
        return sum(self.level_sizes())

    def aggregate(self, leaf_counts: np.ndarray) -> list[np.ndarray]:
        """Return the true count of every stored node, one int64 array per level, top-down.

        Parameters
        ----------
        leaf_counts : ndarray
            ``B`` non-negative bin counts.
        """
        counts = np.asarray(leaf_counts, dtype=np.int64)
        if counts.shape != (self.n_bins,):
            raise InvalidParameterError(
                f"'leaf_counts' must have shape ({self.n_bins},). Got {counts.shape} instead."
            )
        levels = [counts]
        current = counts
        for level in range(self.height, 0, -1):
            k = self.branching[level - 1]
            # sibling groups of k (the last one short when k does not divide: its padding is
            # zeros); exact in int64, and no padded copy or strided reduction of the level
            current = np.add.reduceat(current, np.arange(0, current.size, k))
            levels.append(current)
        return levels[::-1]

    def prefix_digits(self, m: np.ndarray) -> np.ndarray:
        """Nodes per level in the covering of the prefixes ``[0, m)`` (Lemma IV.1).

        Returns an int64 array of shape ``(len(m), h + 1)``: column 0 is 1 when the prefix is
        the whole domain (``m == B``: the root alone, padding being empty) and column ``l`` is
        the number of level-``l`` nodes, the ``l``-th mixed-radix digit of ``m``, at most
        ``k_l - 1``.
        """
        m = np.asarray(m, dtype=np.int64)
        out = np.zeros((m.size, self.height + 1), dtype=np.int64)
        whole = m == self.n_bins
        out[:, 0] = whole
        rest = np.where(whole, 0, m)
        for level in range(1, self.height + 1):
            out[:, level] = (rest // self.span(level)) % self.branching[level - 1]
        return out

    def prefix_nodes(self, m: int) -> list[tuple[int, int]]:
        """The covering of the prefix ``[0, m)`` as ``(level, index)`` pairs (Lemma IV.1)."""
        if not 0 <= m <= self.n_bins:
            raise InvalidParameterError(f"'m' must be in [0, {self.n_bins}]. Got {m!r} instead.")
        if m == self.n_bins:
            return [(0, 0)]
        nodes: list[tuple[int, int]] = []
        for level in range(1, self.height + 1):
            span = self.span(level)
            first = (m // self.span(level - 1)) * self.branching[level - 1]
            nodes.extend((level, first + j) for j in range((m // span) % self.branching[level - 1]))
        return nodes

    def range_nodes(self, start: int, stop: int) -> list[tuple[int, int]]:
        """The canonical decomposition of the bin range ``[start, stop)`` into tree nodes.

        At most ``2(k_l - 1)`` nodes per level are used. A range that ends at ``B`` is extended
        over the padding (always empty), so ``[0, B)`` is the root alone.
        """
        if not 0 <= start <= stop <= self.n_bins:
            raise InvalidParameterError(
                f"The range must satisfy 0 <= start <= stop <= {self.n_bins}. "
                f"Got [{start}, {stop})."
            )
        if start == stop:
            return []
        sizes = self.level_sizes()
        to_end = stop == self.n_bins  # padding past B is empty: round hi up over it
        nodes: list[tuple[int, int]] = []
        lo, hi = start, stop
        for level in range(self.height, 0, -1):
            if lo >= hi:
                return nodes
            k = self.branching[level - 1]
            if to_end:
                hi = -(-hi // k) * k
            left_end = min(-(-lo // k) * k, hi)
            nodes.extend((level, x) for x in range(lo, min(left_end, sizes[level])))
            right_start = max((hi // k) * k, left_end)
            nodes.extend((level, x) for x in range(right_start, min(hi, sizes[level])))
            lo, hi = left_end // k, right_start // k
        if lo < hi:
            nodes.append((0, 0))
        return nodes


def shape_for(n_bins: int, branching: int | Sequence[int]) -> TreeShape:
    """Build a shape from a common fan-out ``k`` (smallest height with ``k**h >= B``) or a list."""
    if (
        isinstance(branching, int | np.integer)
        and not isinstance(branching, bool)
        and branching > 1
    ):
        k = int(branching)
        height = 0
        while k**height < n_bins:
            height += 1
        return TreeShape(n_bins, (k,) * height)
    if isinstance(branching, bool | int | np.integer | str) or not isinstance(
        branching, Sequence | np.ndarray
    ):
        raise InvalidParameterError(
            must("branching", f"be an int >= 2 or a list of them. Got {branching!r}.")
        )
    return TreeShape(
        n_bins,
        tuple(
            int(k) if isinstance(k, int | np.integer) and not isinstance(k, bool) else k
            for k in branching
        ),
    )
