"""Exact error objectives of a tree configuration, fast enough to search over many trees.

* :func:`mean_prefix_variance` — the mean over the ``B`` prefixes ``[0, m)``, ``m = 1..B``, of
  ``Var(P[m])``, for the efficient or the direct estimator. For the efficient estimator the
  per-prefix recursion of :mod:`treedp.estimation.covariance` is averaged in closed form: split
  ``[0, B)`` into blocks whose top digits are fixed and whose lower digits run over a complete
  (padding-free) subtree; in such a subtree every level's digit is uniform and independent, so
  the moments ``E[β]``, ``E[β²]`` and ``E[residual]`` follow level by level. ``O(h·Σk)``.
* :func:`mean_range_variance` — the mean over all ``B(B+1)/2`` ranges ``[a, b)`` of
  ``Var(P[b] - P[a])``, from ``Σ Var(P[m])`` and the variance of ``Σ_m P[m]`` (a single
  linear functional, computed over all nodes in ``O(#nodes)``).
* :func:`max_prefix_variance` — the largest ``Var(P[m])`` (all prefixes, ``O(B·h)``).

All depend only on public parameters; tests check them against brute-force averages.
"""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from treedp.estimation.covariance import DirectTreeCovariance, EfficientTreeCovariance
from treedp.estimation.efficient import LevelValues, Runs, VariancePlan, below_pass
from treedp.tree import TreeShape

__all__ = ["max_prefix_variance", "mean_prefix_variance", "mean_range_variance"]


class _BelowPlan:
    """The part of :class:`VariancePlan` the mean prefix variance needs: the variances from
    below (:func:`below_pass`) and the root's efficient variance, without the pass from
    above (the planner scores hundreds of configurations)."""

    def __init__(self, shape: TreeShape, level_variance: tuple[float, ...]) -> None:
        self.shape = shape
        self.var_below = below_pass(shape, tuple(float(v) for v in level_variance), Runs)[1]
        self.root_variance = float(self.var_below[0].values[0])


def _complete_moments(plan: VariancePlan | _BelowPlan) -> list[tuple[float, float, float]]:
    """``(E β, E β², E resid)`` of a uniform position inside a full level-``l`` subtree."""
    shape = plan.shape
    h = shape.height
    moments = [(0.0, 0.0, 0.0)] * (h + 1)
    for level in range(h, 0, -1):
        k = shape.branching[level - 1]
        v = float(plan.var_below[level].values[0])  # full subtrees: the bulk value
        eb, eb2, er = moments[level]
        ed = (k - 1) / 2.0
        ed2 = (k - 1) * (2 * k - 1) / 6.0
        if v > 0:
            e_atv2 = v * v * (ed2 + 2 * ed * eb + eb2)
            e_ada = v * (ed + eb2)
            total = k * v
            moments[level - 1] = (
                (ed + eb) / k,
                (ed2 + 2 * ed * eb + eb2) / (k * k),
                er + e_ada - e_atv2 / total,
            )
        else:
            moments[level - 1] = (0.0, 0.0, er)
    return moments


def _up_constants(
    plan: VariancePlan | _BelowPlan, level: int, group: int, digit: int
) -> tuple[float, float, float]:
    """``(cum, v_d, total)`` of child ``digit`` of parent ``group`` at ``level``."""
    k = plan.shape.branching[level - 1]
    vb = plan.var_below[level]
    base = vb.cumulative_at(group * k)
    total = vb.cumulative_at(group * k + k) - base
    cum = vb.cumulative_at(group * k + digit) - base
    return cum, vb.value_at(group * k + digit), total


def _up_step(
    constants: tuple[float, float, float], sums: tuple[float, float, float], count: float
) -> tuple[float, float, float]:
    """Sums of the moments over ``count`` blocks, one level up through a fixed child with
    the given constants (the map is affine in the moments, so sums pass through)."""
    cum, v_d, total = constants
    s_b, s_b2, s_r = sums
    if total <= 0:
        return (0.0, 0.0, s_r)
    s_atv = count * cum + v_d * s_b
    s_atv2 = count * cum * cum + 2 * cum * v_d * s_b + v_d * v_d * s_b2
    s_ada = count * cum + v_d * s_b2
    return (s_atv / total, s_atv2 / (total * total), s_r + s_ada - s_atv2 / total)


def _first_step(
    vb: Runs | LevelValues,
    first: int,
    count: int,
    base: float,
    group_total: float,
    moments: tuple[float, float, float],
) -> tuple[float, float, float]:
    """Sums over the children ``first .. first + count - 1`` of one parent (lower digits
    free) of ``(a_j, a_j², resid_j)``, scaled as :func:`_up_step`'s output.

    Child ``j`` has ``a_j = c_j + v_j E β`` with ``c_j`` the cumulative variance before it;
    within a run of equal ``v`` the ``c_j`` are an arithmetic sequence, so each run's sums
    are closed-form (``Σ t``, ``Σ t²``): ``O(runs)`` instead of ``O(count)``.
    """
    eb, eb2, er = moments
    runs = vb.scalar if isinstance(vb, LevelValues) else vb
    starts, values, cums = runs.starts, runs.values, runs.cum
    s_atv = s_atv2 = s_rest = 0.0
    index, stop = first, first + count
    run = bisect_right(starts, index) - 1
    while index < stop:
        run_end = starts[run + 1] if run + 1 < len(starts) else stop
        n = min(stop, run_end) - index
        v = values[run]
        c0 = cums[run] + (index - starts[run]) * v - base
        t1 = n * (n - 1) / 2.0
        t2 = (n - 1) * n * (2 * n - 1) / 6.0
        sum_c = n * c0 + v * t1
        sum_c2 = n * c0 * c0 + 2 * c0 * v * t1 + v * v * t2
        atv2 = sum_c2 + 2 * v * eb * sum_c + n * v * v * eb2
        s_atv += sum_c + n * v * eb
        s_atv2 += atv2
        s_rest += n * er + sum_c + n * v * eb2 - atv2 / group_total
        index += n
        run += 1
    return s_atv / group_total, s_atv2 / group_total**2, s_rest


def _efficient_mean(plan: VariancePlan | _BelowPlan) -> float:
    shape = plan.shape
    n_bins = shape.n_bins
    h = shape.height
    root = plan.root_variance
    if h == 0:
        return root
    moments = _complete_moments(plan)
    spans = [shape.span(level) for level in range(h + 1)]
    if n_bins == shape.padded_leaves:  # complete tree: one block, every digit free
        eb, eb2, er = moments[0]
        return (n_bins * (eb2 * root + er) + root) / n_bins
    # every upward step runs through B's ancestors: their constants, once per level
    path: list[tuple[float, float, float]] = [(0.0, 0.0, 0.0)] * h
    for up in range(1, h):
        k_up = shape.branching[up - 1]
        node = n_bins // spans[up]  # B's ancestor at level up
        path[up] = _up_constants(plan, up, node // k_up, node % k_up)
    total = 0.0
    for level in range(1, h + 1):
        k = shape.branching[level - 1]
        digit_b = (n_bins // spans[level]) % k
        if digit_b == 0:
            continue
        parent = n_bins // spans[level - 1]  # B's ancestor at level - 1
        # first step, over the child digits j < digit_b (lower digits free)
        vb = plan.var_below[level]
        base = vb.cumulative_at(parent * k)
        group_total = vb.cumulative_at(parent * k + k) - base
        eb, eb2, er = moments[level]
        if group_total > 0:
            sums = _first_step(vb, parent * k, digit_b, base, group_total, (eb, eb2, er))
        else:
            sums = (0.0, 0.0, er * digit_b)
        for up in range(level - 1, 0, -1):
            sums = _up_step(path[up], sums, float(digit_b))
        total += spans[level] * (sums[1] * root + sums[2])
    # m = 0 contributes 0; m = B is the root alone
    return (total + root) / n_bins


def _direct_mean(shape: TreeShape, level_variance: tuple[float, ...]) -> float:
    n_bins = shape.n_bins
    total = 0.0
    for level in range(1, shape.height + 1):
        span, k = shape.span(level), shape.branching[level - 1]
        q, r = divmod(n_bins, span)
        digit_sum = span * ((q // k) * k * (k - 1) // 2 + (q % k) * (q % k - 1) // 2)
        digit_sum += r * (q % k)
        total += level_variance[level] * digit_sum
    return (total + level_variance[0]) / n_bins


def mean_prefix_variance(
    shape: TreeShape, level_variance: tuple[float, ...], estimator: str = "efficient"
) -> float:
    """Mean of ``Var(P[m])`` over ``m = 1..B`` (records²), exactly."""
    if estimator == "direct":
        return _direct_mean(shape, level_variance)
    return _efficient_mean(_BelowPlan(shape, level_variance))


def _sum_functional_variance_efficient(plan: VariancePlan) -> float:
    """``Var(Σ_{m=0..B} P[m])``: leaf ``j`` weighs ``B - j`` (prefixes that contain it)."""
    shape = plan.shape
    n_bins = shape.n_bins
    h = shape.height
    length = plan.lengths[h]
    beta = np.zeros(length)
    beta[:n_bins] = n_bins - np.arange(n_bins)
    resid = 0.0
    for level in range(h, 0, -1):
        k = shape.branching[level - 1]
        v = plan.var_below[level].full()
        a = beta.reshape(-1, k)
        vv = v.reshape(-1, k)
        atv = (a * vv).sum(axis=1)
        ada = (a * a * vv).sum(axis=1)
        total = vv.sum(axis=1)
        pos = total > 0
        safe = np.where(pos, total, 1.0)
        resid += float(np.where(pos, ada - atv**2 / safe, 0.0).sum())
        nxt = np.where(pos, atv / safe, 0.0)
        beta = np.zeros(plan.lengths[level - 1])
        beta[: nxt.size] = nxt
    return float(beta[0] ** 2 * plan.root_variance + resid)


def _sum_functional_variance_direct(shape: TreeShape, level_variance: tuple[float, ...]) -> float:
    """``Var(Σ P[m])`` for the direct estimator: each node weighs the prefixes covering it."""
    n_bins = shape.n_bins
    total = level_variance[0]  # only m = B uses the root
    for level in range(1, shape.height + 1):
        span, k = shape.span(level), shape.branching[level - 1]
        nodes = np.arange(shape.level_sizes()[level])
        parent_start = (nodes // k) * k * span
        j = nodes % k
        lo = parent_start + (j + 1) * span  # prefixes m in [lo, parent end) use this node
        hi = np.minimum(parent_start + k * span, n_bins)
        count = np.clip(hi - lo, 0, None)  # m in [lo, hi) ∩ [0, B); m = B uses the root only
        total += level_variance[level] * float((count.astype(np.float64) ** 2).sum())
    return total


def mean_range_variance(
    shape: TreeShape, level_variance: tuple[float, ...], estimator: str = "efficient"
) -> float:
    """Mean of ``Var(P[b] - P[a])`` over all ranges ``0 <= a < b <= B``, exactly."""
    n_bins = shape.n_bins
    sum_var = mean_prefix_variance(shape, level_variance, estimator) * n_bins
    if estimator == "direct":
        var_sum = _sum_functional_variance_direct(shape, level_variance)
    else:
        var_sum = _sum_functional_variance_efficient(VariancePlan(shape, level_variance))
    pairs = n_bins * (n_bins + 1) / 2
    return ((n_bins + 1) * sum_var - var_sum) / pairs


def max_prefix_variance(
    shape: TreeShape, level_variance: tuple[float, ...], estimator: str = "efficient"
) -> float:
    """The largest ``Var(P[m])`` over all prefixes (``O(B·h)``)."""
    m = np.arange(shape.n_bins + 1)
    if estimator == "direct":
        return float(DirectTreeCovariance(shape, level_variance).cov(m, m).max())
    cov = EfficientTreeCovariance(VariancePlan(shape, level_variance))
    return float(cov.var(m).max())
