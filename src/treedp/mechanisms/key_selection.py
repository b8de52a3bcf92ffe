"""Private key selection: which keys of an open-ended group-by a release may show.

Private key selection (``keys=None``, ``delta`` given): each person counts once in each of at
most ``g`` keys they hold (after bounding); every key counted by a kept (person, key) pair (a
key whose pairs were all dropped by the bounding is no candidate) gets
``count + Z``, ``Z`` discrete Laplace of scale ``t >= s/ε_s``, and is kept when that reaches the
threshold ``τ``. The L1 sensitivity ``s`` of the counts of the keys both neighbours hold is
``g`` under add/remove (one person changes at most ``g`` counts by one) and ``2g`` under replace
(one person's keys lose one on at most ``g`` keys and another person's gain one on at most
``g``), so that part is ``ε_s``-DP. A key held by one neighbour only has count 1 there and is
released with probability ``q = P(Z >= τ − 1) = p^(τ−1)/(1 + p)``, ``p = e^(−1/t)``. Under
add/remove only the larger dataset holds such keys (at most ``g``): ``δ = e^(ε_s)·g·q`` (the
``e^(ε_s)`` covers the direction in which the new keys are absent). Under replace each side may
hold up to ``g`` keys the other lacks, and the bound ``P_D(E) <= e^(ε_s)·(P_D'(E) + g·q) + g·q``
gives ``δ = (1 + e^(ε_s))·g·q``. ``τ`` is the smallest integer meeting the requested ``δ``. The
trees then use ``ε − ε_s``; the whole release is ``(ε, δ)``-DP under the stated relation.

Guarantee: ``(ε_s, δ)``-DP under ``add_remove`` or ``replace``, for the privacy unit of the
release (one record, or one person with contribution bounds), on the selected key set.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.engines.grouped import KeyCounts
from treedp.engines.keys import canonical_key, sorted_keys
from treedp.exceptions import DataError
from treedp.noise import RandomSource, noise_scale
from treedp.noise.families import DiscreteLaplace, float_at_least

__all__ = [
    "choose_keys",
    "selection_delta_factor",
    "selection_sensitivity",
    "selection_threshold",
]


def selection_sensitivity(max_groups: int, neighbours: str) -> int:
    """The L1 sensitivity of the selection counts: ``g`` (add/remove) or ``2g`` (replace)."""
    return max_groups if neighbours == "add_remove" else 2 * max_groups


def selection_delta_factor(epsilon: float, neighbours: str) -> float:
    """The factor ``c`` of ``δ = c·g·q``: ``e^ε`` (add/remove) or ``1 + e^ε`` (replace)."""
    return math.exp(epsilon) + (0.0 if neighbours == "add_remove" else 1.0)


def selection_threshold(
    scale: Fraction,
    max_groups: int,
    epsilon: float,
    delta: float,
    neighbours: str = "add_remove",
) -> int:
    """The smallest integer ``τ >= 2`` with ``c·g·p^(τ−1)/(1+p) <= δ``, ``p = e^(−1/t)``,
    ``c`` = :func:`selection_delta_factor` (module docstring)."""
    p = math.exp(-1.0 / float(scale))
    c = selection_delta_factor(epsilon, neighbours)
    # log form: (τ−1)·ln p <= ln(δ(1+p)/(c·g))
    rhs = math.log(delta * (1 + p) / (c * max_groups))
    tau = 1 + math.ceil(rhs / math.log(p) - 1e-12)
    tau = max(tau, 2)
    while c * max_groups * p ** (tau - 1) / (1 + p) > delta:
        tau += 1
    return tau


def choose_keys(
    counts: KeyCounts,
    max_groups: int,
    eps_sel: float,
    delta: float,
    source: RandomSource,
    neighbours: str = "add_remove",
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The thresholded noisy selection of the keys of ``counts`` (see the module docstring).

    Runs on the driver for every engine: one discrete Laplace draw of scale
    ``s/ε_s`` per candidate key, in the order of ``counts.keys`` (sorted,
    :meth:`KeyCounts.merge`), kept when ``count + Z >= τ`` (:func:`selection_threshold`).
    Returns the selected keys (sorted) and the selection record.

    Raises
    ------
    DataError
        If no key is kept (the message names no key and no count).
    """
    g = max_groups
    # One label per equality class (1, 1.0, True are one key): the label released must not
    # depend on which of them the data held first. Equal keys were merged already.
    labelled: dict[Any, int] = {}
    for key, c in zip(counts.keys, counts.counts.tolist(), strict=True):
        label = canonical_key(key)
        labelled[label] = labelled.get(label, 0) + int(c)
    # Only keys that a kept (person, key) pair counts are candidates: otherwise one person
    # holding K >> g keys would make all K selectable, beyond the g the delta accounts for.
    labelled = {k: c for k, c in labelled.items() if c > 0}
    keys = sorted_keys(labelled)  # mixed types (5 and "CA") sort too: types are data
    values = np.fromiter((labelled[k] for k in keys), dtype=np.int64, count=len(keys))
    sens = selection_sensitivity(g, neighbours)
    scale = noise_scale(sens, eps_sel)
    noisy = values + DiscreteLaplace(scale).sample(len(keys), source)
    tau = selection_threshold(scale, g, eps_sel, delta, neighbours)
    chosen = [keys[i] for i in np.flatnonzero(noisy >= tau)]
    if not chosen:
        raise DataError(
            "Private key selection kept no key: no group-by release can be made at this "
            "epsilon and delta (give public keys, or a larger budget)."
        )
    spent = Fraction(sens) / scale
    record = {
        "epsilon": eps_sel,
        "epsilon_spent": float_at_least(spent),
        "delta": delta,
        "noise_scale": [scale.numerator, scale.denominator],
        "threshold": tau,
        "max_groups": g,
        "sensitivity": sens,
    }
    return tuple(chosen), record
