"""What a recursion node knows before it draws: the units selected on its path (its ancestors'
and, for a right child, its left sibling's), and the public base measure they give its
selection (None: uniform, the grids with bounds; the float lattice's is
:func:`treedp.value_methods.lattice_prior.node_prior`).

No privacy of its own: the units are outputs of earlier steps (the answers are their
post-processing; the guarantee covers the whole sequence of steps), so a node's base measure is
a function of earlier outputs and the plan only (:mod:`treedp.value_methods.lattice_prior`
states why the exponential mechanism keeps its loss under any such measure).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol

import numpy as np

__all__ = ["NO_WALK", "BaseMeasure", "Walk"]


class BaseMeasure(Protocol):
    """A node's public base measure over its units (:mod:`.lattice_prior`)."""

    def rank_weights(self, grid: Any, x: np.ndarray, first: int, last: int) -> np.ndarray: ...

    def unit_of(self, weight: np.ndarray) -> np.ndarray: ...


class Walk(NamedTuple):
    """What a node knows before it draws: ``path``, the units selected before it on its path
    (its ancestors', then, for a right child, its left sibling's), and ``prior``, which maps a
    node's ``(first, last, path)`` to its base measure (None: uniform everywhere, the grids with
    bounds). Outputs of earlier steps and the plan only."""

    path: tuple[int, ...] = ()
    prior: Callable[[int, int, tuple[int, ...]], BaseMeasure | None] | None = None

    def measure(self, first: int, last: int) -> BaseMeasure | None:
        return None if self.prior is None else self.prior(first, last, self.path)

    def below(self, unit: int) -> Walk:
        """The walk of this node's children: ``unit`` released."""
        return self._replace(path=(*self.path, unit))

    def after(
        self, sibling: Any, out: np.ndarray, rows: np.ndarray, forced: bool
    ) -> Iterator[tuple[np.ndarray, Walk]]:
        """A right child's rows, grouped by the unit its left ``sibling`` (a plan node, or
        None) released for them (``out[rows, sibling.mid]``, public), with that unit added to
        their walk; one group of every row without a base measure, a sibling or with a forced
        sibling (which releases no selection of its own)."""
        if self.prior is None or sibling is None or forced:
            yield np.ones(rows.size, dtype=bool), self
            return
        released = out[rows, sibling.mid]
        for unit in np.unique(released):
            yield released == unit, self.below(int(unit))


#: The root's walk with no base measure (the grids with bounds).
NO_WALK = Walk()
