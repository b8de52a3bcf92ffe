"""The efficient estimator: the best linear unbiased estimate (BLUE) of every node count.

Honaker's two passes (2015), generalised to any level-uniform fan-out, any variance per level,
exact nodes (variance 0: the public root under ``replace``, padding) and unobserved ones
(variance ``inf``: the root of a plain histogram); docs/estimation.md states what the tests
check (equal to the dense generalised-least-squares solution, consistent).

* **From below** (leaves up): ``est_b(v)`` combines the noisy ``y_v`` with the sum of the
  children's ``est_b`` by inverse-variance weighting; it uses only ``v``'s subtree.
* **From above** (root down): child ``c``'s "other" estimate ``o = est_a(p) - Σ_siblings
  est_b(s)`` (variance ``var_a(p) + Σ var_b(s)``) uses only data outside ``c``'s subtree;
  ``est_a(c)`` combines ``y_c`` with ``o``, and ``est_e(c)`` combines ``est_b(c)`` with ``o``.

Every node of a level has the same noise variance and, but for the last sibling group (the
only one that can hold padding), the same subtree: so the variances and weights of a level
are a few runs (:class:`LevelValues`) computed once from public parameters, and the data
passes are a few scalar-weighted numpy operations per level.

References
----------
.. [Hon15] J. Honaker. "Efficient use of differentially private binary trees". TPDP 2015.
.. [HRMS10] M. Hay, V. Rastogi, G. Miklau, D. Suciu. "Boosting the accuracy of differentially
   private histograms through consistency". PVLDB 3(1), 2010.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

import numpy as np

from treedp.tree import TreeShape

__all__ = [
    "EfficientFit",
    "LevelValues",
    "Runs",
    "VariancePlan",
    "combine",
    "efficient_prefix",
    "efficient_tree",
]


def combine(v1: float, v2: float) -> tuple[float, float]:
    """The weight ``w`` and variance ``v`` of ``w·e1 + (1 - w)·e2``, the inverse-variance
    combination of independent estimates; variance 0 is exact (it wins), ``inf`` unknown."""
    if v1 == 0:
        return 1.0, 0.0
    if v2 == 0:
        return 0.0, 0.0
    if math.isinf(v1):
        return 0.0, v2
    if math.isinf(v2):
        return 1.0, v1
    return v2 / (v1 + v2), v1 * v2 / (v1 + v2)


class Runs:
    """One level's per-node values as runs in plain Python: ``values[r]`` on ``[starts[r],
    next)``, empty runs dropped and equal neighbours merged (for the planner's many small
    lookups; :class:`LevelValues` is the numpy form)."""

    __slots__ = ("cum", "length", "starts", "values")

    def __init__(self, starts: list[int], values: list[float], length: int) -> None:
        self.starts: list[int] = []
        self.values: list[float] = []
        self.cum = [0.0]  # Σ of the values before each run
        for start, stop, value in zip(starts, [*starts[1:], length], values, strict=True):
            if start < stop and not (self.values and self.values[-1] == value):
                if self.starts:
                    self.cum.append(self.cum[-1] + (start - self.starts[-1]) * self.values[-1])
                self.starts.append(start)
                self.values.append(float(value))
        self.length = length

    def value_at(self, index: int) -> float:
        """The value at one node."""
        return self.values[bisect_right(self.starts, index) - 1]

    def cumulative_at(self, index: int) -> float:
        """``Σ_{i < index} value[i]`` for one index."""
        run = max(bisect_right(self.starts, index) - 1, 0)
        return self.cum[run] + (index - self.starts[run]) * self.values[run]


@dataclass(frozen=True, eq=False)
class LevelValues:
    """Per-node values of one level, constant on runs: ``values[r]`` on ``[starts[r], next)``.

    A level without padding is one run; padding adds at most ``k`` runs per level above.
    """

    starts: np.ndarray
    values: np.ndarray
    length: int

    @staticmethod
    def make(starts: list[int], values: list[float], length: int) -> LevelValues:
        """Build from run starts (merging equal neighbours and empty runs)."""
        runs = Runs(starts, values, length)
        return LevelValues(np.array(runs.starts, dtype=np.int64), np.array(runs.values), length)

    def runs(self) -> list[tuple[int, int, float]]:
        """``(start, stop, value)`` for every run."""
        stops = [*self.starts[1:].tolist(), self.length]
        return list(zip(self.starts.tolist(), stops, self.values.tolist(), strict=True))

    def gather(self, index: np.ndarray) -> np.ndarray:
        """The values at node ``index`` (array)."""
        if self.starts.size == 1:
            return np.full(np.shape(index), self.values[0])
        run = np.searchsorted(self.starts, np.asarray(index, dtype=np.int64), side="right") - 1
        return self.values[run]

    def cumulative(self, index: np.ndarray) -> np.ndarray:
        """``Σ_{i < index} value[i]`` (array)."""
        index = np.asarray(index, dtype=np.int64)
        if self.starts.size == 1:
            first: np.ndarray = index * self.values[0]
            return first
        stops = np.append(self.starts[1:], self.length)
        run_cum = np.concatenate([[0.0], np.cumsum(self.values * (stops - self.starts))])
        run = np.clip(np.searchsorted(self.starts, index, side="right") - 1, 0, None)
        total: np.ndarray = run_cum[run] + (index - self.starts[run]) * self.values[run]
        return total

    def full(self) -> np.ndarray:
        """All ``length`` values as an array."""
        stops = np.append(self.starts[1:], self.length)
        return np.repeat(self.values, stops - self.starts)

    @cached_property
    def scalar(self) -> Runs:
        """The same runs in plain Python."""
        return Runs(self.starts.tolist(), self.values.tolist(), self.length)

    def value_at(self, index: int) -> float:
        """The value at one node."""
        return self.scalar.value_at(index)

    def cumulative_at(self, index: int) -> float:
        """``Σ_{i < index} value[i]`` for one index."""
        return self.scalar.cumulative_at(index)


def _combine_levels(a: LevelValues, b: LevelValues) -> tuple[LevelValues, LevelValues]:
    """:func:`combine` node by node: the weights and the variances, as levels."""
    starts = np.unique(np.concatenate([a.starts, b.starts]))
    pairs = [combine(x, y) for x, y in zip(a.gather(starts), b.gather(starts), strict=True)]
    return tuple(  # type: ignore[return-value]
        LevelValues.make(starts.tolist(), [float(p[i]) for p in pairs], a.length) for i in (0, 1)
    )


_Level = TypeVar("_Level", Runs, LevelValues)


def below_pass(
    shape: TreeShape,
    level_variance: tuple[float, ...],
    make: Callable[[list[int], list[float], int], _Level],
) -> tuple[list[_Level], list[_Level]]:
    """The weights and variances of every node's estimate from below, leaves up, as levels
    built by ``make`` (:class:`Runs` for the planner's many trees).

    Only the last stored node of a level has a partial subtree, so each level is a few runs,
    each combined once.
    """
    h = shape.height
    sizes = shape.level_sizes()
    lengths = [1] + [sizes[lv - 1] * shape.branching[lv - 1] for lv in range(1, h + 1)]
    leaves = make([0, sizes[h]], [level_variance[h], 0.0], lengths[h])
    w_below, var_below = [leaves] * (h + 1), [leaves] * (h + 1)
    for lv in range(h - 1, -1, -1):
        k, child, size = shape.branching[lv], var_below[lv + 1], sizes[lv]
        last = size - 1
        full_sum = k * float(child.values[0])
        last_sum = child.cumulative_at(lengths[lv + 1]) - child.cumulative_at(last * k)
        # own noise: [0, size), then exact padding; the children's sum: full_sum on
        # [0, last), last_sum at last, then exact (empty runs are dropped by make)
        starts = [0, last, size]
        pairs = [
            combine(
                level_variance[lv] if start < size else 0.0,
                full_sum if start < last else last_sum if start == last else 0.0,
            )
            for start in starts
        ]
        w_below[lv], var_below[lv] = (
            make(starts, [pair[i] for pair in pairs], lengths[lv]) for i in (0, 1)
        )
    return w_below, var_below


class VariancePlan:
    """Variances and combination weights of every node, from public parameters only: the
    tree and the noise variance per level, root first (0 exact, ``inf`` unobserved)."""

    def __init__(self, shape: TreeShape, level_variance: tuple[float, ...]) -> None:
        self.shape = shape
        self.level_variance = tuple(float(v) for v in level_variance)
        h = shape.height
        sizes = shape.level_sizes()
        self.sizes = sizes
        lengths = [1] + [sizes[lv - 1] * shape.branching[lv - 1] for lv in range(1, h + 1)]
        self.lengths = lengths
        # noise per node; padding nodes (index >= size) are exact zeros
        node_var = [
            LevelValues.make([0, sizes[lv]], [self.level_variance[lv], 0.0], lengths[lv])
            for lv in range(h + 1)
        ]
        self.node_var = node_var
        self.w_below, self.var_below = below_pass(shape, self.level_variance, LevelValues.make)
        var_b = self.var_below
        # from above: runs of a level are its parents' runs, plus the last sibling group
        var_a = [node_var[0]]
        var_e = [var_b[0]]
        w_above: list[LevelValues] = [node_var[0]]
        w_eff: list[LevelValues] = [var_b[0]]
        for lv in range(1, h + 1):
            k = shape.branching[lv - 1]
            parents = sizes[lv - 1]
            bulk_b = float(var_b[lv].values[0])
            starts: list[int] = []
            values: list[float] = []
            for start, stop, value in var_a[lv - 1].runs():
                stop = min(stop, parents - 1)
                if start < stop:
                    starts.append(start * k)
                    values.append(value + (k - 1) * bulk_b)
            last_a = float(var_a[lv - 1].gather(np.array([parents - 1]))[0])
            group = var_b[lv].gather(np.arange((parents - 1) * k, parents * k))
            starts.extend(range((parents - 1) * k, parents * k))
            values.extend((last_a + (float(group.sum()) - group)).tolist())
            other = LevelValues.make(starts, values, lengths[lv])
            wa, va = _combine_levels(node_var[lv], other)
            we, ve = _combine_levels(var_b[lv], other)
            var_a.append(va)
            var_e.append(ve)
            w_above.append(wa)
            w_eff.append(we)
        self.var_above = var_a
        self.var_efficient = var_e
        self.w_above = w_above
        self.w_efficient = w_eff

    @cached_property
    def root_variance(self) -> float:
        """Variance of the efficient estimate of the root (the total)."""
        return float(self.var_efficient[0].values[0])


def _weighted(w: LevelValues, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``w·a + (1 - w)·b`` along the last axis with a run-wise weight (0 and 1 pick exactly)."""
    out = np.empty_like(b)
    for start, stop, weight in w.runs():
        if weight == 1.0:
            out[..., start:stop] = a[..., start:stop]
        elif weight == 0.0:
            out[..., start:stop] = b[..., start:stop]
        else:
            seg = out[..., start:stop]
            np.subtract(a[..., start:stop], b[..., start:stop], out=seg)
            seg *= weight
            seg += b[..., start:stop]
    return out


def _padded(x: np.ndarray, length: int) -> np.ndarray:
    """``x`` as float64, its last axis padded with exact zeros to ``length``."""
    x = np.asarray(x)
    if x.shape[-1] == length:
        return x.astype(np.float64, copy=False)
    out = np.zeros((*x.shape[:-1], length))
    out[..., : x.shape[-1]] = x
    return out


def _groups(x: np.ndarray, k: int) -> np.ndarray:
    """View the last axis as sibling groups of ``k``."""
    return x.reshape(*x.shape[:-1], -1, k)


def _shift_groups(
    w: LevelValues,
    base: np.ndarray,
    shift: np.ndarray,
    k: int,
    stop: int | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """``base + (1 - w)·shift[node // k]``: a combination with ``other = base + shift[group]``;
    nodes ``[0, stop)`` only (default all), into ``out`` (contiguous) when given."""
    end = base.shape[-1] if stop is None else stop
    if out is None:
        out = np.empty_like(base[..., :end])
    for start, run_stop, weight in w.runs():
        run_stop = min(run_stop, end)
        if start >= run_stop:
            break
        factor = 1.0 - weight
        g0, g1 = -(-start // k), run_stop // k  # whole groups inside the run
        if g0 < g1:
            seg = _groups(out[..., g0 * k : g1 * k], k)
            np.add(
                _groups(base[..., g0 * k : g1 * k], k), factor * shift[..., g0:g1, None], out=seg
            )
            pieces = [(start, g0 * k), (g1 * k, run_stop)]
        else:
            pieces = [(start, run_stop)]
        for lo, hi in pieces:
            if lo < hi:
                out[..., lo:hi] = base[..., lo:hi] + factor * shift[..., np.arange(lo, hi) // k]
    return out


@dataclass(frozen=True)
class EfficientFit:
    """The efficient estimate of every node (per level, root first, padded with exact zeros)
    and the data-independent variance plan behind it."""

    nodes: list[np.ndarray]
    plan: VariancePlan

    def prefix(self, n_bins: int) -> np.ndarray:
        """Efficient prefix estimates ``P[m]``, ``m = 0..B`` (the root for ``m = B``), one
        row per batch entry."""
        leaves = self.nodes[-1][..., :n_bins]
        out = np.empty((*leaves.shape[:-1], n_bins + 1))
        out[..., 0] = 0.0
        np.cumsum(leaves, axis=-1, out=out[..., 1:])
        out[..., -1] = self.nodes[0][..., 0]
        return out


def efficient_tree(
    shape: TreeShape,
    levels: list[np.ndarray],
    level_variance: tuple[float, ...],
    plan: VariancePlan | None = None,
) -> EfficientFit:
    """The BLUE of every node from the noisy counts of the stored nodes per level (root
    first; leading batch axes, the same for every level, are estimated independently) and
    the noise variance per level (0 exact, ``inf`` unobserved); ``plan``: precomputed."""
    if plan is None:
        plan = VariancePlan(shape, level_variance)
    y, est_b, child_sums = _from_below(shape, levels, plan)
    est_e = [est_b[0]]
    for lv, shift in _shifts(shape, plan, y, est_b, child_sums):
        est_e.append(_shift_groups(plan.w_efficient[lv], est_b[lv], shift, shape.branching[lv - 1]))
    return EfficientFit(est_e, plan)


def efficient_prefix(
    shape: TreeShape,
    levels: list[np.ndarray],
    level_variance: tuple[float, ...],
    n_bins: int,
) -> np.ndarray:
    """``efficient_tree(shape, levels, level_variance).prefix(n_bins)``, the same values, in
    fewer passes: the leaves' estimates are written for the ``n_bins`` real bins only (not the
    padding), straight into the output and summed there, and the inner levels' estimates,
    which the prefixes do not read, are not formed."""
    h = shape.height
    if h == 0 or np.ndim(levels[-1]) != 1:  # a single level, or batch axes: the general path
        return efficient_tree(shape, levels, level_variance).prefix(n_bins)
    plan = VariancePlan(shape, level_variance)
    y, est_b, child_sums = _from_below(shape, levels, plan, float_leaves=False)
    out = np.empty(n_bins + 1)
    for lv, shift in _shifts(shape, plan, y, est_b, child_sums):
        if lv == h:
            _shift_groups(
                plan.w_efficient[h],
                est_b[h],
                shift,
                shape.branching[h - 1],
                stop=n_bins,
                out=out[1:],
            )
    out[0] = 0.0
    np.cumsum(out[1:], out=out[1:])
    out[-1] = est_b[0][0]
    return out


def _from_below(
    shape: TreeShape, levels: list[np.ndarray], plan: VariancePlan, *, float_leaves: bool = True
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """The noisy levels as padded floats, ``est_b`` per level and each level's sums of its
    children's ``est_b`` (the pass from the leaves up).

    Without ``float_leaves`` an integer (or float64) leaf level stays as given, unpadded: its
    values are exact in float64, so every sum and combination of them is the same as from the
    padded float copy (the padding is exact zeros), and at 2^24 leaves that spares a 128 MB
    array. Only :func:`efficient_prefix`, which reads the leaves up to ``n_bins``, asks for it.
    """
    h = shape.height
    y = [_padded(levels[lv], plan.lengths[lv]) for lv in range(h)]
    leaves = np.asarray(levels[h])
    keep = not float_leaves and (leaves.dtype.kind in "iu" or leaves.dtype == np.float64)
    y.append(leaves if keep else _padded(leaves, plan.lengths[h]))
    est_b = [np.empty(0)] * (h + 1)
    est_b[h] = y[h]
    child_sums: list[np.ndarray] = [np.empty(0)] * h  # Σ_group est_b, reused on the way down
    for lv in range(h - 1, -1, -1):
        k = shape.branching[lv]
        child_sums[lv] = _group_sums(est_b[lv + 1], k, plan.lengths[lv + 1] // k)
        est_b[lv] = _weighted(plan.w_below[lv], y[lv], _padded(child_sums[lv], plan.lengths[lv]))
    return y, est_b, child_sums


def _group_sums(x: np.ndarray, k: int, n_groups: int) -> np.ndarray:
    """The sums of the ``n_groups`` sibling groups of ``k`` along the last axis of ``x``
    zero-padded to ``n_groups·k``, without forming the padded array."""
    full = min(x.shape[-1] // k, n_groups)
    sums: np.ndarray = _groups(x[..., : full * k], k).sum(axis=-1)
    if full == n_groups:
        return sums
    out = np.zeros((*x.shape[:-1], n_groups), dtype=sums.dtype)
    out[..., :full] = sums
    out[..., full] = x[..., full * k :].sum(axis=-1)
    return out


def _shifts(
    shape: TreeShape,
    plan: VariancePlan,
    y: list[np.ndarray],
    est_b: list[np.ndarray],
    child_sums: list[np.ndarray],
) -> Iterator[tuple[int, np.ndarray]]:
    """For ``lv = 1..h`` (root down): ``shift`` with ``other(c) = est_b(c) + shift[parent]``,
    ``other(c) = est_a(p) - (Σ_group est_b - est_b(c))``, the estimate from outside ``c``'s
    subtree; ``est_a`` of the next level is formed after each yield."""
    h = shape.height
    est_a = y[0]
    if np.isinf(plan.node_var[0].values[0]):
        est_a = est_b[0]  # an unobserved root: the best value from above is the one from below
    for lv in range(1, h + 1):
        k = shape.branching[lv - 1]
        shift = est_a[..., : plan.sizes[lv - 1]] - child_sums[lv - 1]
        yield lv, shift
        if lv < h:
            other = (_groups(est_b[lv], k) + shift[..., None]).reshape(est_b[lv].shape)
            est_a = _weighted(plan.w_above[lv], y[lv], other)
