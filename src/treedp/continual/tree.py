"""The k-ary tree over time with planned level budgets and Honaker's online estimate.

Guarantee
---------
Time steps ``1..T`` are the leaves of a ``k``-ary tree; level ``l`` has nodes covering
``k**l`` consecutive steps, for ``l = 0..L`` with ``L = floor(log_k T)`` (a node is released
once, when its last step has been fed). Node values are the counts of the records of their
steps (per bin when the stream has bins), plus exact noise of level ``l``'s family.

Neighbour relation: streams that differ by one record added or removed anywhere in the stream
(at any step, in any bin). Privacy unit: one record (``max_contributions=m``: one person with at
most ``m`` records over the whole stream).

Sensitivity derivation: a record at step ``i`` and bin ``b`` is counted in exactly one node per
level (the level-``l`` node holding step ``i``), in bin ``b`` only. Adding or removing it moves
one entry of each level's released vector by 1: per level, ``L1 = 1`` and ``L2² = 1``. ``m``
records move a level by at most ``m`` in L1 and, all in one node at worst, ``m²`` in L2². The
levels are composed: pure ``ε = Σ_l m/t_l`` (discrete Laplace scale ``t_l``), zCDP
``ρ = Σ_l m²/(2σ_l²)`` (discrete Gaussian ``σ_l²``). Nodes that never complete within ``T`` are
never released. The estimate is post-processing of the released node values.

Estimate (Honaker 2015, "from below", online): a completed leaf's estimate is its noisy value,
variance ``w_0 = v_0``; a completed node at level ``l`` combines its noisy value (variance
``v_l``) with the sum of its ``k`` children's estimates (variance ``k·w_{l-1}``) by inverse
variance: ``w_l = v_l·k·w_{l-1}/(v_l + k·w_{l-1})`` (``k·w_{l-1}`` when the level is off). The
running count after step ``t`` is the sum of the estimates of the completed nodes of the base-k
digits of ``t``: they cover disjoint subtrees, so its variance is exactly
``Var(t) = Σ_l d_l(t)·w_l`` with ``d_l(t)`` the ``l``-th base-``k`` digit of ``t``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.noise.families import NOISES, BudgetedFamily
from treedp.noise.rng import RandomSource

__all__ = ["TreeCounter", "digits", "levels_for", "online_variances"]


def levels_for(horizon: int, k: int) -> int:
    """The number of levels ``L + 1``, ``L`` the largest with ``k**L <= horizon``."""
    levels = 1
    while k**levels <= horizon:
        levels += 1
    return levels


def digits(t: np.ndarray | int, k: int, levels: int) -> np.ndarray:
    """The base-``k`` digits of ``t`` (rows: levels 0..levels-1), int64."""
    tt = np.asarray(t, dtype=np.int64)
    return np.stack([(tt // k**level) % k for level in range(levels)])


def online_variances(k: int, node_variances: list[float]) -> list[float]:
    """Honaker's from-below variances ``w_l`` (``inf`` node variance: a level switched off)."""
    out: list[float] = []
    for level, v in enumerate(node_variances):
        if level == 0:
            out.append(v)
            continue
        below = k * out[-1]
        out.append(below if math.isinf(v) else v * below / (v + below))
    return out


@dataclass(frozen=True)
class TreeCounter:
    """A k-ary tree counter over ``horizon`` steps (see the module docstring).

    Attributes
    ----------
    horizon, k : int
        Steps ``T`` and fan-out.
    noise : {"laplace", "gaussian"}
        The budgeted noise family's key (:data:`treedp.noise.families.NOISES`).
    parameters : tuple of Fraction or None
        Per level, root last: the family's exact parameter (scale ``t_l`` or ``σ_l²``), or
        None for a level switched off (level 0 is always on).
    contributions : int
        ``m``, the records one privacy unit may add over the whole stream.
    """

    horizon: int
    k: int
    noise: str
    parameters: tuple[Fraction | None, ...]
    contributions: int = 1

    name = "tree"

    @property
    def families(self) -> tuple[BudgetedFamily | None, ...]:
        """The noise family of each level (None: off)."""
        cls = NOISES[self.noise]
        return tuple(None if p is None else cls.of(p) for p in self.parameters)

    # ----------------------------------------------------------------- privacy contract
    def sensitivity(self) -> dict[str, Any]:
        """The per-level sensitivities, as data (see the module docstring)."""
        m = self.contributions
        return {"per_level_l1": m, "per_level_l2_squared": m * m, "levels": len(self.parameters)}

    def loss(self) -> Fraction:
        """The exact total loss in the family's unit (ε or ρ), summed over the levels."""
        s = self.sensitivity()
        return sum(
            (f.loss(s["per_level_l1"], s["per_level_l2_squared"]) for f in self.families if f),
            Fraction(0),
        )

    # ----------------------------------------------------------------- exact variances
    def node_variances(self) -> list[float]:
        """Each level's node noise variance (``inf``: off)."""
        return [math.inf if f is None else f.variance() for f in self.families]

    def variances(self, t: np.ndarray) -> np.ndarray:
        """``Var(t) = Σ_l d_l(t)·w_l`` for the steps ``t`` (1-based), per bin."""
        w = np.asarray(online_variances(self.k, self.node_variances()))
        return np.asarray(w @ digits(t, self.k, len(self.parameters)), dtype=np.float64)

    # ----------------------------------------------------------------- the stream
    def initial_state(self, n_bins: int, source: RandomSource) -> dict[str, Any]:
        """The open nodes' noise, drawn now (one noisy accumulator per level and bin)."""
        levels = len(self.parameters)
        acc = np.zeros((levels, n_bins), dtype=np.int64)
        for level, fam in enumerate(self.families):
            if fam is not None:
                acc[level] = fam.sample(n_bins, source)
        return {"acc": acc, "below": np.zeros((levels + 1, n_bins), dtype=np.float64)}

    def step(
        self, state: dict[str, Any], t: int, counts: np.ndarray, source: RandomSource
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Feed step ``t``'s counts (1-based); the new state and the running estimate.

        ``acc[l]`` holds the open level-``l`` node's noisy sum so far (its noise was drawn when
        it opened); ``below[l]`` the sum of the estimates of the completed level-``(l-1)``
        nodes inside the open level-``l`` node (``below[L+1]``: completed top nodes).
        """
        acc = state["acc"] + counts[None, :]
        below = state["below"].copy()
        w = online_variances(self.k, self.node_variances())
        v = self.node_variances()
        families = self.families
        for level in range(len(self.parameters)):
            if t % self.k**level:
                break
            fam = families[level]
            if level == 0:
                est = acc[0].astype(np.float64)
            elif fam is None:
                est = below[level]
            else:
                kw = self.k * w[level - 1]
                est = (acc[level] * kw + below[level] * v[level]) / (v[level] + kw)
            below[level + 1] = below[level + 1] + est
            below[level] = 0.0
            acc[level] = 0 if fam is None else fam.sample(acc.shape[1], source)
        return {"acc": acc, "below": below}, below[1:].sum(axis=0)

    def describe(self) -> dict[str, Any]:
        """The public parameters, exactly (a state file's mechanism part)."""
        return {
            "name": self.name,
            "horizon": self.horizon,
            "k": self.k,
            "noise": self.noise,
            "parameters": [None if p is None else str(p) for p in self.parameters],
            "contributions": self.contributions,
        }

    @classmethod
    def from_description(cls, d: dict[str, Any]) -> TreeCounter:
        """The counter :meth:`describe` wrote."""
        params = tuple(None if p is None else Fraction(p) for p in d["parameters"])
        return cls(int(d["horizon"]), int(d["k"]), str(d["noise"]), params, int(d["contributions"]))
