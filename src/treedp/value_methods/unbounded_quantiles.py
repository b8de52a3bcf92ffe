"""Quantiles without bounds: the exponential mechanism over a lattice of the whole float line.

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``); each selection is
``ε_j``-bounded range, hence ``ZCDP(Σ ε_j²/8)`` over the composed selections
(:func:`zcdp_cost`; the recursion's side counts, pure DP, add ``c²/2`` each per level:
:func:`rho_of`); ``replace`` or
``add_remove`` neighbours, privacy unit one record (:data:`CONTRACT`). Nothing is read from
the data but ranks: not its minimum, maximum or size.

The output space is the public lattice of :mod:`treedp.value_methods.float_lattice` (every
finite float64, both signs, ``2**16`` points per octave from ``2**-32`` to ``2**64``, fewer
further out), each cell split into ``2**28`` units; the records are spread inside their cells
(ties too), and a unit's score is ``-|#{positions < u} - t|``. One selection per level
(``independent=True``, the ``"exponential"`` method: ``ε/m`` each) or Kaplan, Schnapp and
Stemmer's recursion (the ``"recursive"`` method: the nodes of one recursion level hold whole
cells, disjoint). The answer is the lattice point of the selected unit's cell (the next
cell's point in the upper half of a cell whose point is not round: :func:`.answer_of`): an atom
at a round lattice point (``0``, an integer below ``2**17`` in magnitude, ``0.5``, ...) is
answered exactly, one inside a cell (7.3) on its nearer side. Integer data (``integers=True``,
``bins="integers"``) are spread over the cells of their unit interval ``[v, v + 1)`` as one
group, every unit of which answers ``v``: a unit's score is then the rank of the block it
answers, as in the bounded integer mode (the lattice cells alone left the gap below a block
holding the target rank, 2,047 cells at 53 scoring that block's lower edge, to outweigh the
block's one cell: 40 of 40 draws answered the block below).

Below the root the recursion's nodes draw with a public base measure weighing the units near
the points already released (:mod:`.lattice_prior`; no privacy cost: it reads released units
only), so answers beyond the data stay near it.

This replaces a private-bounds step for these two methods: no share of ε is spent on bounds,
and no scan can cross or run off the grid. Sensitivity: the spread keeps the rank score's
(:mod:`.float_lattice`): ``Δ = max(q, 1 - q) + 2**-32`` under ``add_remove``, 1 under
``replace``; the recursion's per-node analysis is that of
:func:`treedp.value_methods.quantiles_recursive.quantiles_recursive` with cells for records.
"""

from __future__ import annotations

from fractions import Fraction
from functools import partial
from typing import Any

import numpy as np

from treedp.exceptions import InvalidTypeError
from treedp.mechanisms.results import Contract
from treedp.noise import RandomSource, resolve_source
from treedp.noise.rational import dyadic_lower_bound
from treedp.privacy import PureDP
from treedp.privacy.accountant import Accountant
from treedp.value_methods._column import open_call
from treedp.value_methods.exponential_core import (
    Draws,
    charge,
    check_domain,
    deliver,
    rank_sensitivity,
    rank_weights,
    read_levels,
    read_sorted,
    select,
)
from treedp.value_methods.float_lattice import (
    TOTAL_CELLS,
    UnitGrid,
    answer_of,
    positions,
    side_units,
)
from treedp.value_methods.lattice_prior import node_prior
from treedp.value_methods.private_bounds import check_known_bound
from treedp.value_methods.quantiles_recursive import _level_epsilons, _plan, _run
from treedp.value_methods.recursion_budget import _depth_losses, depth_zcdp, node_sensitivities
from treedp.value_methods.recursion_walk import Walk

__all__ = ["CONTRACT", "NEIGHBOURS", "quantiles_unbounded", "zcdp_cost"]

NEIGHBOURS: tuple[str, ...] = ("replace", "add_remove")
CONTRACT = Contract(
    name="quantiles_unbounded",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "the score -|#{positions < u} - t| over the units of a public lattice of all floats: "
        "records are spread inside their lattice cell (integer mode: the cells of their "
        "integer's unit interval; a public side clamps them into it, a per-record map), so "
        "adding one moves the count below any unit by 0 or 1 (interleaving) and t by q: "
        "max(q, 1 - q) + 2**-32 under add_remove, 1 under replace; one selection per level "
        "at eps/m, or the recursion (nodes of a level hold whole groups, disjoint; below the "
        "root each draws with a public base measure of the units released before it, which "
        "keeps the loss; a node "
        "inside a public side's group counts its records within its budget; loss eps_l per "
        "level)"
    ),
    max_records=2**32 - 1,
)


def zcdp_cost(losses: list[Fraction]) -> Fraction:
    """The zCDP cost of composed exponential-mechanism steps of pure losses ``losses``.

    An exponential mechanism with rate ``ε/(2Δ)`` is ε-bounded range (its privacy loss
    ``rate·(s(y) - s'(y)) + const`` spans an interval of width at most ``2Δ·rate = ε``), and
    ε-bounded range implies ``ε²/8``-zCDP (Cesar and Rogers 2021, "Bounding, concentrating
    and truncating: unifying privacy loss composition for data analytics", Lemma 3.2 with
    Durfee and Rogers 2019); zCDP composes by summing. A recursion level (disjoint nodes:
    one changes under ``add_remove``; under ``replace`` one, or two of half the loss each,
    ``2 (ε_l/2)²/8 <= ε_l²/8``) counts as one step of its loss ``ε_l``.
    """
    return sum((loss * loss / 8 for loss in losses), Fraction(0))


def _independent_losses(
    qa: np.ndarray, eps: float, relation: str
) -> tuple[list[tuple[Fraction, Fraction]], list[Fraction]]:
    """Each level's (level, rate) and its loss ``2Δ·rate`` (ε/m each, rounded down)."""
    each = Fraction(eps) / qa.size
    rates: list[tuple[Fraction, Fraction]] = []
    losses: list[Fraction] = []
    for level in qa:
        exact = Fraction(float(level))
        delta = Fraction(1) if relation == "replace" else rank_sensitivity(exact)
        rate = dyadic_lower_bound(each / (2 * delta))
        rates.append((exact, rate))
        losses.append(2 * delta * rate)
    return rates, losses


def _unbounded(
    values: Any,
    q: Any,
    epsilon: Any,
    neighbours: Any,
    nan: Any,
    rng: RandomSource | None,
    draws: int,
    accountant: Accountant | None,
    independent: bool,
    integers: bool = False,
    side: tuple[Any, Any] = (None, None),
) -> tuple[Draws, list[Fraction]]:
    """Validate, plan, read, charge, select; the draws and the composed steps' losses.
    ``side``: a public side (checked by the caller), into which the records are clamped."""
    eps, relation, policy = open_call(accountant, epsilon, neighbours, NEIGHBOURS, nan)
    qa = read_levels(q)
    distinct = np.unique(qa)
    source = resolve_source(rng)
    if independent:
        rates, losses = _independent_losses(qa, eps, relation)
        sens = [float(rate) for _, rate in rates]
        plan = None
    else:
        qs = [Fraction(float(v)) for v in distinct]
        plan = _plan(qs, 0, len(qs), Fraction(0), Fraction(1), 0, _level_epsilons(
            Fraction(eps), len(qs)), relation)  # fmt: skip
        assert plan is not None
        losses = _depth_losses(plan, relation)
        sens = node_sensitivities(plan)
    if side != (None, None):  # public: checked before anything is read or charged
        check_known_bound(side[0], side[1], integers, "side")
    x, unit = read_sorted(values, policy, relation, None)
    if unit is not None:
        raise InvalidTypeError("Quantiles without bounds take numbers, not datetimes.")
    check_domain(x.size, CONTRACT)
    spent = sum(losses, Fraction(0))
    parameters = {"epsilon": eps, "q": tuple(float(v) for v in qa), "bounds": "none", "nan": nan}
    lo, hi = side
    if side != (None, None):
        parameters["side"] = tuple(side)
    charge(accountant, CONTRACT, spent, relation, parameters)
    if side != (None, None):  # records beyond a public side are clamped into it
        x = np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    first, last, zones = side_units(side, integers)  # without a side: every unit, no zone
    pos = positions(x, integers)
    grid = UnitGrid(integers=integers, zones=zones)
    if independent:
        weights = rank_weights(grid, pos, first, last)
        units = np.empty((draws, qa.size), dtype=np.int64)
        for j, (level, rate) in enumerate(rates):
            units[:, j] = select(weights, level, x.size, rate, draws, source, first)
    else:
        assert plan is not None
        chosen = np.empty((draws, distinct.size), dtype=np.int64)
        walk = Walk(prior=partial(node_prior, integers=integers))  # public base measures
        _run(plan, grid, pos, first, last, chosen, np.arange(draws), source, relation,
             walk=walk)  # fmt: skip
        units = chosen[:, np.searchsorted(distinct, qa)]
    out = answer_of(units, integers)  # post-processing of the selected units
    if lo is not None:  # a unit of a side's group answers the side itself
        out = np.where(units < zones[0], lo, out)
    if hi is not None:
        out = np.where(units >= zones[1], hi, out)
    return Draws(out, qa, eps, spent, sens, source, None, parameters), losses


def quantiles_unbounded(
    values: Any,
    q: Any,
    *,
    epsilon: float,
    neighbours: str = "add_remove",
    nan: str = "error",
    rng: RandomSource | None = None,
    details: bool = False,
    accountant: Accountant | None = None,
    independent: bool = False,
    integers: bool = False,
    side: tuple[float | None, float | None] = (None, None),
) -> Any:
    """Private quantiles of numbers without bounds, pure ε-DP (module docstring).

    Parameters
    ----------
    values : array-like
        Numbers (``±inf`` count as beyond every lattice point).
    q : float or array-like
        Levels in [0, 1].
    epsilon : float
        Total budget.
    neighbours : {"add_remove", "replace"}, default="add_remove"
    nan : {"error", "drop"}, default="error"
    rng : RandomSource, optional
    details : bool, default=False
        Return a :class:`~treedp.mechanisms.results.QuantileResult`.
    accountant : Accountant, optional
        Charged ``PureDP(ε_spent)`` after every check and the data read, before any draw.
    independent : bool, default=False
        One selection per level at ``ε/m`` (answers sorted by :func:`treedp.quantiles`), else
        the recursion (non-decreasing by construction).
    integers : bool, default=False
        Integer data: each record spread over its integer's unit interval ``[v, v + 1)`` of
        the lattice, and every answer an integer (module docstring). Same sensitivity.
    side : (lo, None) or (None, hi), optional
        A public side, known to the caller (an integer with ``integers``): the records are
        clamped into it and the units left to the selections are those from the group holding
        it on, every unit of that group answering the side itself; a recursion node inside that
        group answers it and counts its records instead of selecting
        (:mod:`treedp.value_methods.recursion_forced`). Checked before the charge (one end,
        finite; an integer with ``integers``).

    Returns
    -------
    float, ndarray or QuantileResult

    References
    ----------
    .. [Smi11] A. Smith. STOC 2011. .. [KSS22] H. Kaplan, S. Schnapp, U. Stemmer. ICML 2022.
    .. [CR21] M. Cesar, R. Rogers. "Bounding, concentrating and truncating: unifying privacy
       loss composition for data analytics". ALT 2021.
    """
    draws, _ = _unbounded(
        values, q, epsilon, neighbours, nan, rng, 1, accountant, independent, integers, side
    )
    return deliver(draws, q, neighbours, CONTRACT.name, details, TOTAL_CELLS)


def unbounded_draws(
    values: Any, q: Any, *, epsilon: float, size: int, neighbours: str = "add_remove",
    independent: bool = False, rng: RandomSource | None = None, integers: bool = False,
    side: tuple[Any, Any] = (None, None),
) -> np.ndarray:  # fmt: skip
    """``size`` independent outputs, shape ``(size, len(q))``: NOT a private release
    (``size · ε`` in total); for tests and benchmarks."""
    return _unbounded(
        values, q, epsilon, neighbours, "error", rng, size, None, independent, integers, side
    )[0].values


def rho_of(q: Any, epsilon: float, neighbours: str, independent: bool) -> Fraction:
    """The zCDP cost of a call (public parameters only): ``Σ ε_j²/8`` over the independent
    selections (:func:`zcdp_cost`), or over the recursion levels ``max_node e²/8 + c²/2``, a
    node's selection (bounded range) then its side counts (pure, ``c²/2``)
    (:func:`~.quantiles_recursive.depth_zcdp`)."""
    qa = read_levels(q)
    if independent:
        return zcdp_cost(_independent_losses(qa, epsilon, neighbours)[1])
    qs = [Fraction(float(v)) for v in np.unique(qa)]
    plan = _plan(qs, 0, len(qs), Fraction(0), Fraction(1), 0,
                 _level_epsilons(Fraction(epsilon), len(qs)), neighbours)  # fmt: skip
    assert plan is not None
    return sum(depth_zcdp(plan, neighbours), Fraction(0))
