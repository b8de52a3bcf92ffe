"""A concentration gate: do most records fall into two adjacent bins of a fine grid?

Guarantee: pure ε-DP (``PureDP(ε_spent)``, ``ε_spent <= ε``) under ``add_remove``
neighbours, privacy unit one record; the derivation is in :data:`CONTRACT` and
:func:`gate_statistic`.

:func:`treedp.quantiles` (``method="auto"`` with a private count, the default when no ``n``
is given) runs the tree CDF on ``B = tree_bins(ε, n̂)`` equal-width bins of the public
bounds: right for data that fill their bounds, wrong for data in a small part of them (a
heavy tail such as Pareto or lognormal(0, 2) on ``[0, 1000]``, or uniform(0, 1) data on
``[0, 1000]``), which land in one or two bins; quantiles interpolated inside a bin that holds
most of the records are off by up to half of them (issue 33, item 3: 4–84× the best peer's
rank error). No public rule on ``n · ε`` separates the two cases (docs/quantiles.md, "Robust
to where the data lie").

Before the tree, the gate spends :data:`GATE_SHARE` of the budget left after the count
(``ε_g = 0.03 · 0.98 ε`` by default) on one noisy integer, ``S + Z`` with ``S = 2 P - n``,
``P`` the most records in two adjacent bins of :data:`TEST_BINS` equal-width bins of the
bounds (values clamped into the edge bins as the tree clamps them) and ``Z`` exact discrete
Laplace noise. ``S + Z > 0`` (more than half of the records in two adjacent test bins, 1/512
of the bounds) sends the tree to :data:`FINER_BINS` times its bins, at least
:data:`MIN_FINER_BINS` (:func:`gated_bins`, at most
:data:`treedp.quantiles_choice.MAX_TREE_BINS`). The tree's noise grows only with a power of
its depth, so on concentrated data the finer bins win by far (mean rank gap 1,404 → 106 on
Pareto, 4,984 → 104 on uniform(0, 1) on ``[0, 1000]``, ``n = 10^4``, ε = 0.1, 29 levels;
docs/quantiles.md, "A concentration gate"), while data that fill their bounds are not gated:
at 1/512 of the bounds the fullest pair of the issue's grid data holds at most about 12% of
the records (lognormal(0, 1) on ``[0, 100]``), far from half. The test grid is fixed, not
``B``: at 64 bins (``n̂ · ε ≈ 100``) the same lognormal holds 87% in its first two bins and
reads well interpolated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.budget import MIN_EPSILON
from treedp.domain import held_bins, make_bins
from treedp.mechanisms.results import Contract
from treedp.noise import RandomSource
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.privacy import PureDP
from treedp.privacy.spend import SpendRecord
from treedp.value_methods.private_count import count_scale

__all__ = [
    "CONTRACT",
    "FINER_BINS",
    "GATE_SHARE",
    "MIN_FINER_BINS",
    "NEIGHBOURS",
    "SENSITIVITY",
    "TEST_BINS",
    "gate_record",
    "gate_scale",
    "gate_statistic",
    "gated_bins",
    "pair_max",
    "plan_gate",
    "release_gate",
    "run_gate",
]

#: The share the gate spends (when it runs) of the budget left after the bounds and the count.
GATE_SHARE = 0.03
#: The equal-width bins of the bounds the gate counts into (a public constant).
TEST_BINS = 1024
#: A concentrated column gets this many times the tree's bins ...
FINER_BINS = 16
#: ... and at least this many (at most ``MAX_TREE_BINS``).
MIN_FINER_BINS = 2048
NEIGHBOURS: tuple[str, ...] = ("add_remove",)
#: The L1 sensitivity of :func:`gate_statistic` under ``add_remove``.
SENSITIVITY = 1
CONTRACT = Contract(
    name="concentration_gate",
    measure=PureDP,
    neighbours=NEIGHBOURS,
    sensitivity=(
        "S = 2 P - n, P the largest count of two adjacent public bins: adding a record adds "
        "1 to n and 0 or 1 to P (the pairs holding its bin gain 1, no pair loses), so S "
        "changes by -1 or +1 (L1 sensitivity 1); discrete Laplace noise of scale t >= 1/eps "
        "gives P(S + Z = k) / P(S' + Z = k) <= exp(1/t) <= exp(eps); only the sign of S + Z "
        "is used (post-processing)"
    ),
)


def pair_max(counts: np.ndarray) -> int:
    """The most records in two adjacent bins (the one bin's count when there is one)."""
    c = np.asarray(counts, dtype=np.int64)
    if c.size < 2:
        return int(c.sum())
    return int((c[1:] + c[:-1]).max())


def gate_statistic(counts: np.ndarray) -> int:
    """``S = 2 P - n`` (``P`` :func:`pair_max`, ``n`` the records counted): positive when two
    adjacent bins hold more than half of the records.

    Sensitivity under ``add_remove`` (privacy unit one record): a record added to bin ``k``
    adds 1 to ``n`` and to every pair holding ``k`` (one or two pairs), so ``P`` grows by 0
    or 1 and ``S`` changes by exactly ``-1`` or ``+1``; removing one is the reverse. The L1
    sensitivity is 1, whatever the bins (public) and the data.
    """
    c = np.asarray(counts, dtype=np.int64)
    return 2 * pair_max(c) - int(c.sum())


def gate_scale(epsilon: float) -> tuple[Fraction, float]:
    """The exact discrete Laplace scale at ``epsilon`` (``noise_scale(1, ε) >= 1/ε``) and the
    loss it spends, ``1/scale`` rounded up (at most ``epsilon``): a sensitivity-1 count's,
    :func:`~treedp.value_methods.private_count.count_scale`."""
    return count_scale(epsilon)


def release_gate(
    data: np.ndarray, bounds: tuple[Any, Any], bins: int, scale: Fraction, source: RandomSource
) -> bool:
    """Whether ``S + Z > 0`` (:func:`gate_statistic` of ``data`` counted into ``bins``
    equal-width bins of the public ``bounds``, values outside clamped into the edge bins;
    ``Z ~ DLap(scale)`` exactly), for a caller that has checked every public parameter and
    charged the whole budget. ``data``: the column as read (numbers, no missing values).

    Guarantee: ``PureDP(1/scale)`` under ``add_remove`` (:data:`CONTRACT`); the boolean is
    post-processing of ``S + Z``.
    """
    counts, _ = make_bins(bounds=bounds, bins=bins).count(data)
    noise = int(sample_discrete_laplace(scale, 1, source)[0])
    return gate_statistic(counts) + noise > 0


def gated_bins(bounds: tuple[Any, Any], bins: int, concentrated: bool, cap: int) -> int | None:
    """The tree's bins after the gate: :data:`FINER_BINS` times ``bins``, at least
    :data:`MIN_FINER_BINS` and at most ``cap`` (the quantile rules' ``MAX_TREE_BINS``), when
    ``concentrated`` and the public ``bounds`` hold that many distinct equal-width edges;
    else None (the rule's own bins). Public parameters and the released bit only."""
    if not concentrated:
        return None
    finer = max(bins, min(cap, max(MIN_FINER_BINS, bins * FINER_BINS)))
    return finer if held_bins(bounds, finer) is not None else None  # too narrow: the rule's


def gate_record(
    relation: str, epsilon: float, scale: Fraction, spent: float, bins: int
) -> SpendRecord:
    """The gate's part of a quantile call's spend."""
    return SpendRecord(
        mechanism=CONTRACT.name,
        measure=PureDP(spent),
        neighbours=relation,
        unit="record",
        parameters={
            "epsilon": epsilon,
            "gate_share": GATE_SHARE,
            "bins": bins,
            "sensitivity": SENSITIVITY,
            "scale": str(scale),
        },
    )


def plan_gate(epsilon: float) -> tuple[Fraction, float, float] | None:
    """The gate's ``(scale, loss, ε of its share)`` out of ``epsilon``, the budget a call has
    left after its bounds and count (share :data:`GATE_SHARE`, so no ``n_share`` leaves the
    quantiles less than 97% of what it left them before the gate), or None when that share is
    below the smallest usable ε (public)."""
    share = epsilon * GATE_SHARE
    return (*gate_scale(share), share) if share >= MIN_EPSILON else None


def run_gate(
    data: np.ndarray,
    bounds: tuple[Any, Any],
    epsilon: float,
    gate: tuple[Fraction, float, float],
    bins_at: Callable[[float], int],
    cap: int,
    relation: str,
    source: RandomSource,
) -> tuple[int | None, float, SpendRecord] | None:
    """The gate before the tree, after the charge: ``(bins, ε left, spend)`` (``bins`` None:
    the rule's own bins at the ε left, as without the gate), or None (nothing
    drawn, nothing spent) when no budget would be left after it or the public bounds are too
    narrow for :data:`TEST_BINS` distinct float edges.

    ``epsilon``: the budget left for the tree before the gate; ``gate``: :func:`plan_gate`'s
    triple; ``bins_at(ε)``: the tree's bins at ``ε`` (public rules and the released count
    only); ``cap``: the most bins the finer tree may use.
    """
    scale, spent, share = gate
    rest = math.nextafter(epsilon - spent, 0.0)
    if not rest > 0 or held_bins(bounds, TEST_BINS) is None:
        return None
    bins = int(bins_at(rest))
    concentrated = release_gate(data, bounds, TEST_BINS, scale, source)
    record = gate_record(relation, share, scale, spent, TEST_BINS)
    return gated_bins(bounds, bins, concentrated, cap), rest, record
