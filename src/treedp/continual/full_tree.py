"""The k-ary tree decoded by full least squares, under pure ε: every node's noise drawn up front.

Guarantee
---------
Pad the horizon to ``T' = n·k**L``, the least multiple of ``k**L >= T`` (``L + 1`` levels,
:func:`treedp.continual.tree.levels_for`); steps past ``T`` hold no records. Level ``l`` cuts
``[0, T')`` into ``T'/k**l`` aligned nodes of ``k**l`` steps. The mechanism's release is the
vector ``r = Mx + z`` of every node's count plus exact discrete Laplace noise (scale ``t_l`` at
level ``l``, in every bin), all drawn when the stream is created. After step ``t`` it answers
``y_t = (A·x̂)_t``, ``x̂`` the weighted least-squares estimate of ``x`` from ``r`` (integer
weights ``ω_l`` per level, 0 for a level switched off). ``x̂`` is linear and exact on noiseless
data, so ``y_t = S_t + e_t(z)``: ``S_t`` the exact running count and ``e_t(z) = (A·x̂(z))_t`` a
function of the noise alone. Each answer is computed at step ``t`` that way, in exact rational
arithmetic (rounded to a float once, at the end), so the sequence of answers is exactly
post-processing of ``r``. The answers use noise of nodes that are not complete yet: that is why
all of it is drawn (and kept) from the start, and why the online (from-below) estimate of the
``tree`` row is beaten.

Neighbour relation: one record added or removed anywhere in the stream (any step, any bin), for a
stream whose batches do not depend on earlier answers. Privacy unit: one record
(``max_contributions=m``: one person with at most ``m`` records over the whole stream).

Sensitivity derivation: a record at step ``i`` in bin ``b`` is counted in exactly one node per
level (the level-``l`` node holding ``i``), in bin ``b`` only: per level ``L1 = 1`` (``m`` records:
``m``). The levels compose: ``ε = Σ_l m/t_l``. As the answers are post-processing of ``r``, their
whole sequence is ``ε``-DP.

Decoder: with ``b = MᵀWz`` and ``G = MᵀWM = Σ_l ω_l J_l`` (``J_l`` the all-ones blocks of level
``l``), the ``J_l`` commute: on vectors constant on level-``l`` blocks with zero sum inside every
level-``(l+1)`` block, ``G = λ_l = Σ_{m<=l} ω_m k**m`` (on vectors constant on the top blocks,
``λ_L``). So ``x̂ - x = G⁻¹b = Σ_l (E_l - E_{l+1})b/λ_l`` (``E_l`` the level-``l`` block average,
``E_{L+1} = 0``) and ``e_t = Σ_l (A_l(t) - A_{l+1}(t))/λ_l`` with ``A_l(t) = Σ_{i<t} (E_l b)_i =
P(s) + (r/k**l)·(P(s + k**l) - P(s))``, ``r = t mod k**l``, ``s = t - r``, ``P`` the prefix sums
of ``b`` (the state, exact int64).

Variance: ``Cov(x̂ - x) = Σ_l κ_l/λ_l²·(E_l - E_{l+1})`` with ``κ_l = Σ_{m<=l} ω_m² v_m k**m``
(``v_m`` the level's exact noise variance), and ``a_tᵀE_l a_t = q_l(t) = (t - r) + r²/k**l``, so
``Var(t) = Σ_l κ_l/λ_l²·(q_l(t) - q_{l+1}(t))`` (``q_{L+1} = 0``): exact up to float rounding.
State: ``T' + 1`` prefix sums per bin and the exact running count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from scipy.optimize import minimize

from treedp.continual.tree import levels_for
from treedp.noise.families import DiscreteLaplace
from treedp.noise.rational import float_at_least
from treedp.noise.rng import RandomSource

__all__ = ["FULL_LIMIT", "FullTreeCounter", "full_tree", "padded_horizon"]

#: Largest ``T'·B`` (the state keeps ``T' + 1`` integers per bin).
FULL_LIMIT = 2**21
#: The largest integer level weight (weights are ``∝ 1/v_l``, rounded).
_WEIGHT_SCALE = 2**8
_FANOUTS = tuple(range(2, 17))
_OFF = 1e-3


def padded_horizon(horizon: int, k: int) -> int:
    """``T'``: the least multiple of ``k**L`` that is ``>= horizon``."""
    top = int(k ** (levels_for(horizon, k) - 1))
    return -(-horizon // top) * top


@dataclass(frozen=True)
class FullTreeCounter:
    """A k-ary tree over ``horizon`` steps, decoded by full least squares (module docstring).

    Attributes
    ----------
    horizon, k : int
        Steps ``T`` and fan-out.
    scales : tuple of Fraction or None
        Per level, root last: the discrete Laplace scale ``t_l`` (None: level off; level 0 on).
    contributions : int
        ``m``, the records one privacy unit may add over the whole stream.
    """

    horizon: int
    k: int
    scales: tuple[Fraction | None, ...]
    contributions: int = 1

    name = "tree_full"
    noise = "laplace"

    @property
    def padded(self) -> int:
        """``T'``."""
        return padded_horizon(self.horizon, self.k)

    @property
    def families(self) -> tuple[DiscreteLaplace | None, ...]:
        """Each level's noise (None: off)."""
        return tuple(None if s is None else DiscreteLaplace(s) for s in self.scales)

    @property
    def weights(self) -> tuple[int, ...]:
        """``ω_l``: integer least-squares weights, ``≈ 2**8·v_min/v_l`` (0 for a level off)."""
        v = self.node_variances()
        low = min(x for x in v if math.isfinite(x))
        return tuple(0 if math.isinf(x) else max(1, round(_WEIGHT_SCALE * low / x)) for x in v)

    # ----------------------------------------------------------------- privacy contract
    def sensitivity(self) -> dict[str, Any]:
        """The per-level sensitivities, as data (see the module docstring)."""
        m = self.contributions
        return {"per_level_l1": m, "per_level_l2_squared": m * m, "levels": len(self.scales)}

    def loss(self) -> Fraction:
        """The exact ε: ``Σ_l m/t_l`` over the levels switched on."""
        m = self.contributions
        return sum((f.loss(m, m * m) for f in self.families if f), Fraction(0))

    # ----------------------------------------------------------------- exact variances
    def node_variances(self) -> list[float]:
        """Each level's exact noise variance (``inf``: off)."""
        return [math.inf if f is None else f.variance() for f in self.families]

    def _lambdas(self) -> tuple[list[int], list[float]]:
        w, v = self.weights, self.node_variances()
        lam, kap, lam_l, kap_l = [], [], 0, 0.0
        for level, (wl, vl) in enumerate(zip(w, v, strict=True)):
            lam_l += wl * self.k**level
            kap_l += 0.0 if wl == 0 else wl * wl * vl * self.k**level
            lam.append(lam_l)
            kap.append(kap_l)
        return lam, kap

    def variances(self, t: np.ndarray) -> np.ndarray:
        """``Var(t) = Σ_l κ_l/λ_l²·(q_l(t) - q_{l+1}(t))`` for steps ``t`` (1-based), per bin."""
        tt = np.asarray(t, dtype=np.int64)
        lam, kap = self._lambdas()
        out = np.zeros(tt.shape, dtype=np.float64)
        q_next = np.zeros(tt.shape, dtype=np.float64)
        for level in reversed(range(len(self.scales))):
            size = self.k**level
            r = (tt % size).astype(np.float64)
            q = (tt - r) + r * r / size
            out += kap[level] / float(lam[level]) ** 2 * (q - q_next)
            q_next = q
        return out

    # ----------------------------------------------------------------- the stream
    def prefix_sums(self, z: list[np.ndarray]) -> np.ndarray:
        """``P``: the prefix sums of ``b = MᵀWz`` (rows ``0..T'``), exact int64, from the
        per-level noise ``z[l]`` (``T'/k**l`` rows each; zeros for a level off)."""
        padded, w = self.padded, self.weights
        b = np.zeros((padded, z[0].shape[1]), dtype=np.int64)
        for level, (wl, zl) in enumerate(zip(w, z, strict=True)):
            if wl:
                b += wl * np.repeat(zl, self.k**level, axis=0)
        bound = int(np.abs(b).max(initial=0)) * padded
        if bound >= 2**62:  # pragma: no cover - |z| > 2**27 at every level's scale: never seen
            raise OverflowError("tree_full: the noise is too large for exact int64 prefix sums")
        return np.concatenate([np.zeros((1, b.shape[1]), dtype=np.int64), np.cumsum(b, axis=0)])

    def initial_state(self, n_bins: int, source: RandomSource) -> dict[str, Any]:
        """Every node's noise, drawn now, kept as the prefix sums ``P``; the running count."""
        z = []
        for level, fam in enumerate(self.families):
            rows = self.padded // self.k**level
            if fam is None:
                z.append(np.zeros((rows, n_bins), dtype=np.int64))
            else:
                z.append(fam.sample(rows * n_bins, source).reshape(rows, n_bins))
        return {"prefix": self.prefix_sums(z), "count": np.zeros(n_bins, dtype=np.int64)}

    def noise_at(self, prefix: np.ndarray, t: int) -> list[Fraction]:
        """``e_t`` per bin, exactly (see the module docstring)."""
        lam, _ = self._lambdas()
        out = []
        for col in range(prefix.shape[1]):
            p = prefix[:, col]
            total, a_next = Fraction(0), Fraction(0)
            for level in reversed(range(len(self.scales))):
                size = self.k**level
                r = t % size
                s = t - r
                a = Fraction(int(p[s]))
                if r:
                    a += Fraction(r, size) * (int(p[s + size]) - int(p[s]))
                total += (a - a_next) / lam[level]
                a_next = a
            out.append(total)
        return out

    def step(
        self, state: dict[str, Any], t: int, counts: np.ndarray, source: RandomSource
    ) -> tuple[dict[str, Any], np.ndarray]:
        """Feed step ``t``'s counts (1-based); the new state and ``S_t + e_t`` per bin."""
        count = state["count"] + counts
        noise = self.noise_at(state["prefix"], t)
        est = np.array([float(int(c) + e) for c, e in zip(count, noise, strict=True)])
        return {"prefix": state["prefix"], "count": count}, est

    def describe(self) -> dict[str, Any]:
        """The public parameters, exactly (a state file's mechanism part)."""
        return {
            "name": self.name,
            "horizon": self.horizon,
            "k": self.k,
            "scales": [None if s is None else str(s) for s in self.scales],
            "contributions": self.contributions,
        }

    @classmethod
    def from_description(cls, d: dict[str, Any]) -> FullTreeCounter:
        """The counter :meth:`describe` wrote (level 0 must be on: the decoder needs it)."""
        scales = tuple(None if s is None else Fraction(s) for s in d["scales"])
        if not scales or scales[0] is None:
            raise ValueError("tree_full: level 0 is off")
        return cls(int(d["horizon"]), int(d["k"]), scales, int(d["contributions"]))

    def state_shapes(self, n_bins: int) -> dict[str, tuple[int, ...]]:
        """The shapes of the state's arrays (a loaded state is checked against them)."""
        return {"prefix": (self.padded + 1, n_bins), "count": (n_bins,)}


# --------------------------------------------------------------------- planning
def _mean_q(horizon: int, k: int, levels: int) -> np.ndarray:
    """The mean over ``t = 1..T`` of ``q_l(t)``, per level, and 0 appended (``q_{L+1}``)."""
    t = np.arange(1, horizon + 1, dtype=np.int64)
    out = []
    for level in range(levels):
        size = k**level
        r = (t % size).astype(np.float64)
        out.append(float(np.mean((t - r) + r * r / size)))
    return np.asarray([*out, 0.0])


def _tuned_shares(horizon: int, k: int, m: int) -> np.ndarray:
    levels = levels_for(horizon, k)
    mq = _mean_q(horizon, k, levels)
    diff = mq[:-1] - mq[1:]
    sizes = np.asarray([float(k**level) for level in range(levels)])

    def objective(theta: np.ndarray) -> float:
        e = np.exp(theta - theta.max())
        s = e / e.sum()
        inv_v = (np.maximum(s, 1e-12) / m) ** 2 / 2.0  # 1/(2 m²/ε_l²), ε = 1
        return float(np.sum(diff / np.cumsum(sizes * inv_v)))

    start = np.full(levels, 0.0)
    res = minimize(objective, start, method="L-BFGS-B")
    theta = res.x if res.fun <= objective(start) else start
    shares = np.exp(theta - theta.max())
    shares /= shares.sum()
    shares[1:][shares[1:] < _OFF] = 0.0
    return np.asarray(shares / shares.sum())


def _exact(horizon: int, k: int, shares: np.ndarray, budget: float, m: int) -> FullTreeCounter:
    shrink = 1.0 - 1e-9
    while True:
        scales = tuple(
            None if s == 0 else DiscreteLaplace.for_budget(m, float(s) * budget * shrink).scale
            for s in shares
        )
        counter = FullTreeCounter(horizon, k, scales, m)
        if float_at_least(counter.loss()) <= budget:
            return counter
        shrink *= 1.0 - 1e-6  # pragma: no cover - float rounding of the shares


def full_tree(
    horizon: int, budget: float, m: int = 1, n_bins: int = 1, k: int | None = None
) -> FullTreeCounter | None:
    """The fan-out (given, or the best of 2..16 whose state fits) and level budgets with the
    least exact mean variance; None when no fan-out's state ``T'·B`` fits :data:`FULL_LIMIT`."""
    fanouts = (k,) if k is not None else tuple(f for f in _FANOUTS if f <= max(2, horizon))
    best: FullTreeCounter | None = None
    best_score = math.inf
    for f in fanouts:
        if padded_horizon(horizon, f) * n_bins > FULL_LIMIT:
            continue
        counter = _exact(horizon, f, _tuned_shares(horizon, f, m), budget, m)
        score = float(np.mean(counter.variances(np.arange(1, horizon + 1))))
        if score < best_score:
            best, best_score = counter, score
    return best
