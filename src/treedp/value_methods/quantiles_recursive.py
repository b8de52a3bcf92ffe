"""Many quantiles from one budget: the recursive exponential mechanism (Kaplan et al. 2022).

Kaplan, Schnapp and Stemmer's "ApproximateQuantiles" (ICML 2022): release the middle level's
quantile, then recurse on the records below it with the levels below and on the others with
the levels above; each node with a child also releases noisy counts of its two sides, which
re-anchor a child's level where a block of ties at the released point moved it
(:mod:`.recursion_anchor`). Every selection is Smith's exponential mechanism on the public grid,
restricted to the node's grid interval (so outputs are non-decreasing in ``q``), by the shared
core :mod:`treedp.value_methods.exponential_core`; a child may weigh its units by a public base
measure of the points released on its path (:class:`.recursion_walk.Walk`: no privacy cost).

Guarantee: ``PureDP(ε_spent)``, ``ε_spent <= ε`` per call (:data:`CONTRACT`), privacy unit one
record, ``replace`` or ``add_remove`` neighbours. Derivation:
``m`` distinct levels make ``L = ceil(log2(m + 1))`` recursion levels, level ``l`` given
``ε_l`` (:func:`_level_epsilons`; ``ε / L`` by default, ``Σ ε_l = ε`` exactly). The steps run
depth first (a node's selection, its side counts, its left subtree, its right subtree); each
is a pure-DP mechanism given everything released before it in that order (a right child's base
measure may read its left sibling's unit), whose loss is at most its node's bound when the node
holds the changed record and 0 otherwise, so grouping the steps by level bounds the total as
below (sequential composition in any order). Given everything released before a step, the
nodes of one level hold disjoint sets of records (a node's records are those of its parent
on its side of the parent's released point), each node's level ``q'`` is public (planned, or
computed from released counts), and the two sides of a node partition its records
(``side_counts``).
A node with a child spends ``s = COUNT_SHARE`` (1/20) of ``ε_l`` on its counts and
``(1 - s)·ε_l`` on its selection (``share``); a leaf spends ``ε_l`` on its selection.
Sensitivity and loss of each step, given the earlier outputs:

* selection, ``add_remove``: one record added or removed changes one node of the level, by
  one record; that node's score has sensitivity ``Δ = max(q', 1 - q') + 2**-32``
  (:func:`~.exponential_core.rank_sensitivity`) and its rate ``share / (2Δ)``: a loss of
  at most ``share``.
* selection, ``replace``: at the root (all records, ``n`` fixed) the sensitivity is 1 and
  the rate ``share / 2``. Below it a record may leave one node and enter another (a
  removal and an addition); each node's rate is ``share / (4Δ)``, so the two cost
  ``share / 2`` each; a change inside one node costs ``2 · rate <= share``.
* counts: the vector of every side count of the level has L1 sensitivity 1 under
  ``add_remove`` (the record lies on one side of one node) and 2 under ``replace`` (it
  leaves one side and enters one, of the same node or of two); each count gets exact
  discrete Laplace noise of scale ``sens / b`` with ``b = s·ε_l / sens`` rounded down
  to a dyadic rational: a loss of ``sens / scale <= s·ε_l``. Under ``replace`` a move
  between two nodes changes one count of each, ``1/scale`` each.

So a level's loss is at most the largest node's selection plus counts (``ε_l``): under
``add_remove`` one node pays; under ``replace`` two nodes pay at most half each, or one
node pays both halves. Summed over the levels (adaptive composition: every step's
partition, levels and rates are functions of earlier outputs) the loss is at most ε;
each rate is rounded down to a dyadic rational, and ``ε_spent`` is the exact sum of the
per-level bounds (:func:`_depth_losses`; a child's selection is bounded by its
``share``, as its rate is chosen at run time). A child inside a bound zone releases one count
of its records instead, within its ``share`` (:mod:`.recursion_forced` states the argument).
The children's rule and the answers at a child's end read only released counts and units:
post-processing. A child whose rule puts its level beside its records at the grid's edge
(its interval starts or ends there) selects at level 0 or 1 among them (a framed child at its
frame's target) instead of answering the edge: a selection within its ``share``, as any
child's. The empty dataset is valid (uniform outputs in each node).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import NDArray

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.results import Contract, QuantileResult
from treedp.noise import RandomSource, resolve_source, sample_discrete_laplace
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.value_methods._column import open_call
from treedp.value_methods.bound_blocks import ZonedGrid, answers
from treedp.value_methods.exponential_core import (
    GRID_BITS,
    Draws,
    Grid,
    GridLike,
    charge,
    check_domain,
    deliver,
    public_parameters,
    rank_weights,
    read_bounds,
    read_levels,
    read_sorted,
    select,
)
from treedp.value_methods.recursion_anchor import (
    HIGH,
    LOW,
    Anchor,
    anchored_level,
    count_scale,
    root_anchor,
)
from treedp.value_methods.recursion_anchor import count_sensitivity as count_sensitivity
from treedp.value_methods.recursion_anchor import side_counts as side_counts
from treedp.value_methods.recursion_budget import _MIN_RATE as _MIN_RATE
from treedp.value_methods.recursion_budget import (
    _check_rates,
    _node_rate,
    depth_zcdp,
    node_sensitivities,
)
from treedp.value_methods.recursion_budget import _depth_losses as _depth_losses
from treedp.value_methods.recursion_budget import _node_loss as _node_loss
from treedp.value_methods.recursion_budget import _node_parts as _node_parts
from treedp.value_methods.recursion_budget import _walk as _walk
from treedp.value_methods.recursion_forced import (
    Frame,
    beside_forced,
    child_frames,
    fill_forced,
    forced_count_scale,
    forced_sides,
    node_frame,
    offset_target,
    select_at,
)
from treedp.value_methods.recursion_splits import _split_point, spread_for_splits
from treedp.value_methods.recursion_walk import NO_WALK, BaseMeasure, Walk

__all__ = [
    "CONTRACT",
    "NEIGHBOURS",
    "depth_zcdp",
    "level_counts",
    "node_sensitivities",
    "quantiles_recursive",
]

#: The neighbour relations the guarantee holds for.
NEIGHBOURS: tuple[str, ...] = ("replace", "add_remove")
#: Level ``l`` of the recursion gets a budget proportional to ``(nodes at l) ** SPLIT_POWER``.
#: 0 (the equal split ``ε / L``) measured best without a public ``n`` (docs/quantiles.md).
SPLIT_POWER = 0.0
#: The share of a recursion level's budget that each node with a child spends on the noisy
#: counts of the records it sends to each side (the children's anchors,
#: :func:`anchored_level`); chosen by measurement (docs/private_bounds.md, "Point masses").
COUNT_SHARE = Fraction(1, 20)
CONTRACT = Contract(
    name="quantiles_recursive",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "per recursion level, nodes hold disjoint records; a node's score -|#{x < y} - t| "
        "with t = q' n_node (q' public: planned at the root, else re-anchored on released "
        "counts) has sensitivity max(q', 1 - q') + 2**-32 to adding or removing one "
        "of its records; a node with children then releases the counts of its two sides "
        "(a partition of its records) with discrete Laplace noise: per level L1 sensitivity "
        "1 under add_remove, 2 under replace. add_remove: one node per level changes, loss "
        "eps_l (selection (1 - s) eps_l, counts s eps_l, s = COUNT_SHARE; a leaf's selection "
        "eps_l); sum over levels eps_l = eps. Under replace a record moves between at most "
        "two nodes of a level, each selection calibrated to half its share and each node's "
        "counts moving by 1, or stays in one (selection sensitivity 1 <= 2 max(q', 1 - q'), "
        "two counts of that node moving by 1). A child inside a bound zone releases instead "
        "one count of its records at half its share; its sibling's target a n + c (c from "
        "that count) has sensitivity max(a, 1 - a) + 2**-32"
    ),
    max_records=2**32 - 1,  # the rank arithmetic: A·(n + 1) < 2**63 with 31-bit rates
)


def level_counts(m: int) -> tuple[int, ...]:
    """The number of nodes at each recursion level for ``m`` distinct quantile levels.

    The recursion releases the middle of ``m`` levels and recurses on ``floor(m/2)`` and
    ``ceil(m/2) - 1`` levels below and above it; this is the shape of that tree, a function of
    ``m`` only (``m = 99``: ``(1, 2, 4, 8, 16, 32, 36)``).
    """
    counts: list[int] = []
    sizes = [int(m)] if m > 0 else []
    while sizes:
        counts.append(len(sizes))
        sizes = [s for k in sizes for s in (k // 2, k - k // 2 - 1) if s > 0]
    return tuple(counts)


def _level_epsilons(epsilon: Fraction, m: int) -> tuple[Fraction, ...]:
    """The budget of each recursion level, ``ε w_l / Σ w``, ``w_l = m_l ** SPLIT_POWER``.

    ``m_l`` nodes at level ``l`` (public); the weights are taken exactly as rationals, so the
    ``ε_l`` sum to ``ε`` exactly (basic composition over the levels).
    """
    weights = [Fraction(float(c) ** SPLIT_POWER) for c in level_counts(m)]
    total = sum(weights, Fraction(0))
    return tuple(epsilon * w / total for w in weights)


@dataclass(frozen=True)
class _Plan:
    """The public recursion: node order, levels, depths, budgets (no data)."""

    mid: int  # index (into the sorted distinct levels) released at this node
    q: Fraction  # the level released here, q_mid
    level: Fraction  # q' = (q_mid - q_left) / (q_right - q_left), the root's (and planned) level
    depth: int
    share: Fraction  # the node's selection budget: its level's, less the counts' share
    rate: Fraction  # the selection's rate at ``level`` (the root's; a child's is re-anchored)
    count_scale: Fraction | None  # discrete Laplace scale of its side counts (None: a leaf)
    left: _Plan | None
    right: _Plan | None
    q_left: Fraction = Fraction(0)  # the released levels around the node (its frame)
    q_right: Fraction = Fraction(1)


def _plan(
    qs: list[Fraction],
    a: int,
    b: int,
    q_left: Fraction,
    q_right: Fraction,
    depth: int,
    level_eps: tuple[Fraction, ...],
    relation: str,
) -> _Plan | None:
    """The recursion over the levels ``qs[a:b]`` between the released ``q_left``, ``q_right``.

    A node with a child spends ``COUNT_SHARE`` of its level's budget on its side counts and
    the rest on its selection; a leaf spends the whole on its selection."""
    if a >= b:
        return None
    mid = (a + b) // 2
    level = (qs[mid] - q_left) / (q_right - q_left)
    left = _plan(qs, a, mid, q_left, qs[mid], depth + 1, level_eps, relation)
    right = _plan(qs, mid + 1, b, qs[mid], q_right, depth + 1, level_eps, relation)
    eps_l = level_eps[depth]
    leaf = left is None and right is None
    share = eps_l if leaf else eps_l * (1 - COUNT_SHARE)
    scale = None if leaf else count_scale(eps_l * COUNT_SHARE, relation)
    rate = _node_rate(share, level, relation, depth == 0)
    _check_rates(rate, share, relation, depth == 0)
    return _Plan(mid, qs[mid], level, depth, share, rate, scale, left, right, q_left, q_right)


def _anchored_rate(node: _Plan, level: Fraction, relation: str) -> Fraction:
    """A child's rate at its anchored ``level``: ``share / (2Δ)`` (``share / (4Δ)`` under
    ``replace``), rounded down; its loss ``2Δ·rate`` (``4Δ·rate``) is at most ``share``."""
    return _node_rate(node.share, level, relation, False)


def _select(
    plan: _Plan,
    grid: GridLike,
    x: np.ndarray,
    first: int,
    last: int,
    size: int,
    source: RandomSource,
    anchor: Anchor | None,
    relation: str,
    frame: Frame | None = None,
    measure: BaseMeasure | None = None,
) -> np.ndarray:
    """The units one node releases for ``size`` rows: the root's level is public; a child's
    is :func:`anchored_level` of each row's counts (rows with equal levels drawn together),
    or, in a frame moved by a forced child's released count, its target in that frame
    (:mod:`.recursion_forced`); ``measure``: the node's public base measure (None: uniform)."""
    if measure is None:
        weights, base = rank_weights(grid, x, first, last), first
    else:
        weights, base = measure.rank_weights(grid, x, first, last), 0

    def placed(drawn: np.ndarray) -> np.ndarray:
        return drawn if measure is None else measure.unit_of(drawn)

    if anchor is None:
        return placed(select(weights, plan.level, x.size, plan.rate, size, source, base))
    units = np.empty(size, dtype=np.int64)
    groups: dict[Fraction | str, list[int]] = {}
    for row in range(size):
        key: Fraction | str = anchored_level(plan.q, plan.level, anchor, row)
        if (key == LOW and first == 0) or (key == HIGH and last == grid.cells - 1):
            key = Fraction(int(key == HIGH))  # its interval at the grid's edge: select
        if frame is not None and key not in (LOW, HIGH):  # beside its records: their end
            key = offset_target(frame.level(plan.q), x.size, frame.offset(plan.q, row))
        groups.setdefault(key, []).append(row)
    for key, rows in groups.items():
        if key in (LOW, HIGH):
            units[rows] = first if key == LOW else last
        elif frame is not None:  # key: the target rank
            assert isinstance(key, Fraction)
            rate = _anchored_rate(plan, frame.level(plan.q), relation)
            units[rows] = placed(select_at(weights, key, rate, len(rows), source, base))
        else:
            assert isinstance(key, Fraction)
            rate = _anchored_rate(plan, key, relation)
            units[rows] = placed(select(weights, key, x.size, rate, len(rows), source, base))
    return units


def _run(
    plan: _Plan | None,
    grid: GridLike,
    x: np.ndarray,
    first: int,
    last: int,
    out: np.ndarray,
    rows: np.ndarray,
    source: RandomSource,
    relation: str,
    anchor: Anchor | None = None,
    frame: Frame | None = None,
    walk: Walk = NO_WALK,
) -> np.ndarray | None:
    """Fill ``out[rows, node.mid]`` for the subtree ``plan`` (``x``: the node's records,
    sorted; ``anchor``: the rows' released counts, None at the root; ``frame``: the node's
    ranks as moved by forced children's counts, None if none was; ``walk``: its path's units
    and base measures); simulated rows with the same selected unit split their records
    together. Returns, at a root with children, each row's released count of the records
    (the root's two side counts summed, ``N̂``), else None."""
    if plan is None:
        return None
    units = _select(plan, grid, x, first, last, rows.size, source, anchor, relation, frame,
                    walk.measure(first, last))  # fmt: skip
    out[rows, plan.mid] = units
    if plan.count_scale is None:
        return None
    total = np.zeros(rows.size, dtype=np.int64)
    for unit in np.unique(units):
        pick = units == unit
        these = rows[pick]
        point = _split_point(plan, grid, int(unit))
        split = int(np.searchsorted(x, point, side="left"))
        # Records below the released point go left, the others right: disjoint children.
        # Their two side counts, with exact discrete Laplace noise (one draw each per row).
        noisy = [
            side + sample_discrete_laplace(plan.count_scale, these.size, source)
            for side in side_counts(x, point)
        ]
        pinned = int(unit) in (first, last)  # released an end: split there, not at its level
        if anchor is None:
            left, right = root_anchor(noisy[0], noisy[1], plan.count_scale, pinned)
            total[pick] = left.total
        else:
            left, right = anchor.rows(pick).children(noisy[0], noisy[1], plan.count_scale,
                                                     pinned)  # fmt: skip
        # A child inside a bound zone answers the bound: its budget counts its records for
        # its sibling's target instead (recursion_forced).
        forced = forced_sides(grid, int(unit))
        here = None if frame is None else frame.rows(pick)
        kids: list[Frame | None] = [None, None]
        if here is not None:
            kids = list(child_frames(plan, here))
        for side, child, sib in ((0, plan.left, plan.right), (1, plan.right, plan.left)):
            if child is not None and forced[side]:
                fill_forced(child, out, these, int(unit))
                if sib is not None:
                    part = split if side == 0 else x.size - split
                    scale = forced_count_scale(child, relation)
                    count = part + sample_discrete_laplace(scale, these.size, source)
                    own = node_frame(plan, here, these.size)
                    kids[1 - side] = beside_forced(own, count, side == 0)
        below = walk.below(int(unit))
        if not forced[0]:
            _run(plan.left, grid, x[:split], first, int(unit), out, these, source, relation,
                 left, kids[0], below)  # fmt: skip
        if not forced[1]:  # after its left sibling, whose released unit it may weigh by
            for sub, walk_right in below.after(plan.left, out, these, forced[0]):
                frame_right = None if kids[1] is None else kids[1].rows(sub)
                _run(plan.right, grid, x[split:], int(unit), last, out, these[sub], source,
                     relation, right.rows(sub), frame_right, walk_right)  # fmt: skip
    return total if anchor is None else None


def _quantiles_recursive(
    values: Any,
    q: Any,
    bounds: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    rng: RandomSource | None,
    draws: int,
    grid_bits: int = GRID_BITS,
    accountant: Accountant | None = None,
    integers: bool = False,
) -> Draws:
    """Validate, plan, read the data, charge ``accountant`` (one draw only), then run the
    recursion ``draws`` times. ``integers``: integer data on bounds ``[lo, hi + 1)`` (the
    caller's), ties spread inside their unit cell and the splits on whole cells
    (:class:`_CellSplits`)."""
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    lo, hi, out_unit = read_bounds(bounds)
    qa = read_levels(q)
    distinct = np.unique(qa)
    qs = [Fraction(float(v)) for v in distinct]
    budgets = _level_epsilons(Fraction(eps), len(qs))
    plan = _plan(qs, 0, len(qs), Fraction(0), Fraction(1), 0, budgets, relation)
    assert plan is not None
    spent = sum(_depth_losses(plan, relation), Fraction(0))
    sens = node_sensitivities(plan)
    source = resolve_source(rng)
    x = read_sorted(values, policy, relation, out_unit)[0]
    check_domain(x.size, CONTRACT)
    parameters = public_parameters(eps, qa, bounds, nan)
    charge(accountant, CONTRACT, spent, relation, parameters)
    grid = Grid(lo, hi, grid_bits)
    x, splits = spread_for_splits(x, grid, integers)
    units = np.empty((draws, len(qs)), dtype=np.int64)
    total = _run(plan, splits, x, 0, splits.cells - 1, units, np.arange(draws), source, relation)
    chosen = units[:, np.searchsorted(distinct, qa)]
    values = grid.values(chosen) if integers else answers(ZonedGrid(grid), chosen)
    return Draws(values, qa, eps, spent, sens, source, out_unit, parameters, total)


@overload
def quantiles_recursive(
    values: Any,
    q: float,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> float | np.datetime64: ...


@overload
def quantiles_recursive(
    values: Any,
    q: Sequence[float] | NDArray[Any],
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[False] = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> NDArray[Any]: ...


@overload
def quantiles_recursive(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: Literal[True],
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> QuantileResult: ...


@overload
def quantiles_recursive(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = ...,
    nan: str = ...,
    rng: RandomSource | None = ...,
    details: bool = ...,
    accountant: Accountant | None = ...,
    integers: bool = ...,
) -> float | np.datetime64 | NDArray[Any] | QuantileResult: ...


@accepts_aliases
def quantiles_recursive(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
    integers: bool = False,
) -> Any:
    """Many private quantiles at once by the recursive exponential mechanism.

    The distinct levels are sorted; the middle one is released by Smith's exponential
    mechanism on the public ``2**48``-point grid of ``[lo, hi]`` (as
    :func:`~treedp.quantile_exponential`), the records are split at the released point (below
    it: left; at or above: right), and the levels below and above are released recursively on
    each part, inside the grid interval on that side. Kaplan et al. hand each part its level
    rescaled, ``q' = (q - q_left) / (q_right - q_left)`` between the levels released around
    it (0 and 1 at the top), which assumes the released point split the records at its level;
    a block of ties at that point goes whole to one part and the other's rescaled level then
    misses by up to the block. So each node with a child also releases the noisy counts of
    the records it sends to each side, and a child whose rescaled level disagrees with the
    absolute target those counts give by more than their noise explains targets the absolute
    one instead, or answers that end of its grid interval (the nearest released point on
    that side; at the grid's edge it selects at level 0 or 1 among its records, within its
    share) when that target lies beside its records; the children of a node that released
    an end of its interval always take the absolute target
    (:func:`~.recursion_anchor.anchored_level`; post-processing of the counts). A node's
    target rank is ``q'·n_node`` for its public level ``q'``, so a node reads only its own
    records.

    Guarantee: ``PureDP(ε_spent)``, ``ε_spent <= ε``, privacy unit one record, both
    relations; the sensitivity and composition derivation is in the module docstring.

    Parameters
    ----------
    values : array-like
        The data (numbers or datetimes); ``±inf`` and values outside the bounds count as at the
        nearest bound.
    q : float or array-like
        Levels in [0, 1] (any order, repeats allowed).
    bounds : (lo, hi)
        Public bounds (numbers or datetimes).
    epsilon : float
        Total budget. Refused (InvalidParameterError, before any charge) when a node's
        selection rate, the root's or a child's smallest anchored one, would fall below the
        exact sampler's ``2**-23``: a level with children needs ``ε_l >= 5.02e-7`` under
        ``replace``, ``2.51e-7`` under ``add_remove`` (``ε_l = ε / L`` by default).
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
        As for :func:`~treedp.quantile_exponential`.
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.QuantileResult`; with two or more
        distinct levels its ``records`` is the root's two released side counts summed, a
        noisy count of the records (part of the guarantee above).
    accountant : Accountant, optional
        Charged ``PureDP(ε_spent)`` after every check and before anything is drawn; an
        overspend raises :class:`~treedp.exceptions.BudgetExceededError`.
    integers : bool, default=False
        Integer data on bounds ``(lo, hi + 1)`` given as such (``treedp.quantiles`` with
        ``bins="integers"`` passes them): each value is put in its unit cell and the ``k``
        records of a block of ties spread at ``v + (i + 1/2)/k`` (the same sensitivity,
        :func:`treedp.value_methods.quantile_exponential._spread`); the splits keep whole
        cells. The caller rounds the answers down.

    Returns
    -------
    float, numpy.datetime64, ndarray or QuantileResult
        One value per level (a scalar for a scalar ``q``).

    References
    ----------
    .. [KSS22] H. Kaplan, S. Schnapp, U. Stemmer. "Differentially Private Approximate
       Quantiles". ICML 2022.
    .. [Smi11] A. Smith. "Privacy-preserving statistical estimation with optimal convergence
       rates". STOC 2011.
    """
    draws = _quantiles_recursive(
        values, q, bounds, epsilon, neighbours, nan, rng, 1, accountant=accountant,
        integers=integers,
    )  # fmt: skip
    return deliver(draws, q, neighbours, CONTRACT.name, details)


def _quantiles_recursive_draws(
    values: Any,
    q: Any,
    *,
    bounds: tuple[Any, Any],
    epsilon: float,
    size: int,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    grid_bits: int = GRID_BITS,
) -> np.ndarray:
    """``size`` independent outputs, shape ``(size, len(q))``, for simulation only.

    NOT a private release (``size · ε`` in total). ``grid_bits`` below 48 gives a small grid
    for exact audits.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InvalidParameterError(must("size", f"be an int >= 1. Got {size!r}."))
    if not 1 <= grid_bits <= GRID_BITS:
        raise InvalidParameterError("'grid_bits' must lie in [1, 48].")
    return _quantiles_recursive(
        values, q, bounds, epsilon, neighbours, nan, rng, size, grid_bits
    ).values
