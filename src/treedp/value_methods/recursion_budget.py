"""The recursion's losses: each node's selection and side counts, each level's pure and zCDP
cost, and the sensitivities a result reports (public: the plan only, no data).

The derivation is :mod:`~treedp.value_methods.quantiles_recursive`'s; a forced child's count
(:mod:`~treedp.value_methods.recursion_forced`) is within its node's selection bound in both.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from treedp.exceptions import InvalidParameterError
from treedp.noise.rational import dyadic_lower_bound
from treedp.value_methods.exponential_core import rank_sensitivity
from treedp.value_methods.recursion_anchor import count_sensitivity

if TYPE_CHECKING:
    from treedp.value_methods.quantiles_recursive import _Plan

__all__ = [
    "_MIN_RATE",
    "_check_rates",
    "_depth_losses",
    "_node_loss",
    "_node_parts",
    "_node_rate",
    "_walk",
    "depth_zcdp",
    "node_sensitivities",
]


def _node_loss(rate: Fraction, level: Fraction, relation: str, root: bool) -> Fraction:
    """The loss bound of a node's selection at ``rate``: ``2 Δ rate`` (``add_remove``); under
    ``replace`` ``2 rate`` at the root, else ``4 Δ rate`` (a move inside the node costs
    ``2 rate <= 4 Δ rate``, as ``Δ >= 1/2``; a move between two nodes ``2 Δ rate`` each)."""
    if relation == "replace":
        return 2 * rate if root else 4 * rank_sensitivity(level) * rate
    return 2 * rank_sensitivity(level) * rate


def _walk(plan: _Plan | None) -> list[_Plan]:
    return [] if plan is None else [plan, *_walk(plan.left), *_walk(plan.right)]


def _node_parts(node: _Plan, relation: str) -> tuple[Fraction, Fraction]:
    """A node's selection loss bound and its side counts' loss (0 for a leaf).

    The root's selection has a public level: its exact ``2 Δ rate`` (:func:`_node_loss`). A
    child's level is re-anchored on released counts, so its rate is chosen at run time
    (:func:`_anchored_rate`, at most ``share / (2Δ)``): its bound is ``share``."""
    root = node.depth == 0
    select_loss = _node_loss(node.rate, node.level, relation, True) if root else node.share
    counts = Fraction(0)
    if node.count_scale is not None:
        counts = count_sensitivity(relation) / node.count_scale
    return select_loss, counts


def _depth_losses(plan: _Plan, relation: str) -> list[Fraction]:
    """The loss of each recursion level: its largest node loss, selection plus side counts
    (its nodes hold disjoint records; a move between two costs at most twice the largest
    half)."""
    by_depth: dict[int, Fraction] = {}
    for node in _walk(plan):
        loss = sum(_node_parts(node, relation), Fraction(0))
        by_depth[node.depth] = max(by_depth.get(node.depth, Fraction(0)), loss)
    return [by_depth[d] for d in sorted(by_depth)]


def depth_zcdp(plan: _Plan, relation: str) -> list[Fraction]:
    """The zCDP cost of each recursion level: the largest over its nodes of ``e²/8 + c²/2``,
    its selection (``e``-bounded range, Cesar and Rogers 2021) then its side counts (pure
    ``c``-DP, ``c²/2``-zCDP, Bun and Steinke 2016); the record's node at a level is fixed by
    the outputs before it, so the two compose per node."""
    by_depth: dict[int, Fraction] = {}
    for node in _walk(plan):
        e, c = _node_parts(node, relation)
        rho = e * e / 8 + c * c / 2
        by_depth[node.depth] = max(by_depth.get(node.depth, Fraction(0)), rho)
    return [by_depth[d] for d in sorted(by_depth)]


def node_sensitivities(plan: _Plan) -> list[float]:
    """Each node's score sensitivity as reported: the root's at its level, a child's bound
    over every anchored level, ``1 + 2**-32`` (``max(q', 1 - q') <= 1``)."""
    return [
        float(rank_sensitivity(node.level if node.depth == 0 else Fraction(1)))
        for node in _walk(plan)
    ]


def _node_rate(share: Fraction, level: Fraction, relation: str, root: bool) -> Fraction:
    """The exponential mechanism's rate at a node of selection budget ``share``, rounded down
    to a dyadic rational.

    ``add_remove``: ``share / (2Δ)``. ``replace``: ``share / 2`` at the root (``i`` moves by at
    most 1, ``t`` not at all), ``share / (4Δ)`` below it (see :func:`quantiles_recursive`).
    """
    if relation == "replace":
        rate = share / 2 if root else share / (4 * rank_sensitivity(level))
    else:
        rate = share / (2 * rank_sensitivity(level))
    return dyadic_lower_bound(rate)


#: The smallest rate every 31-bit dyadic rounding of which the exact sampler takes: a rate
#: ``x >= 2**-23`` rounds to ``A / 2**k`` with ``2**30 <= A`` and ``k <= 53``
#: (:func:`~treedp.noise.exponential.sample_weighted_laplace` needs ``2**k <= 2**53``).
_MIN_RATE = Fraction(1, 2**23)


def _check_rates(rate: Fraction, share: Fraction, relation: str, root: bool) -> None:
    """Refuse, before anything is read or charged, a node whose selection the sampler could
    not draw: the root's planned ``rate``, and a child's smallest possible anchored rate
    (:func:`_anchored_rate` at ``Δ = 1 + 2**-32``, the largest over the levels: ``share / 4Δ``
    under ``replace``, ``share / 2Δ`` under ``add_remove``), as a child's rate is chosen at
    run time from released counts. Public parameters only."""
    if root:
        ok = rate.denominator <= 2**53
    else:
        ok = _node_rate(share, Fraction(1), relation, False) >= _MIN_RATE
    if not ok:
        raise InvalidParameterError(
            "The budget of a recursion node is below what the exact sampler can draw (a rate "
            "of 2**-23): give a larger 'epsilon' or fewer distinct levels."
        )
