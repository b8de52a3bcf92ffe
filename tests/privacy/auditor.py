"""A statistical privacy auditor: a lower confidence bound on the privacy loss of a mechanism.

For a pure ε-DP mechanism M, neighbouring datasets D, D' and any output event S,
``P(M(D) ∈ S) <= e^ε · P(M(D') ∈ S)``. The auditor runs M many times on both datasets
(vectorised: one batch of noise per block), estimates both probabilities for a well-chosen
event, and turns Clopper–Pearson bounds (α/2 each side) into a lower confidence bound

    ε_low = ln( p_low(D) / p_high(D') ),

which exceeds the true privacy loss with probability at most α. A mechanism *passes* when
``ε_low <= claimed ε``; a broken mechanism whose true loss is larger is *flagged* when the
bound exceeds the claim.

The event. Only coordinates whose exact values differ between D and D' matter. The
privacy-loss statistic of an output ``y`` is ``L(y) = Σ_i (|y_i − c'_i| − |y_i − c_i|)/t_i``
over those coordinates (``c``, ``c'`` the exact values, ``t_i`` the *claimed* scale), and the
event is ``S = {L(y) >= τ}``; a coordinate released exactly adds ``+∞`` when ``y_i = c_i`` and
``−∞`` otherwise (so an un-noised coordinate that differs is caught). ``τ`` is chosen on an
independent pilot sample (the value maximising the pilot's bound), so the final bound is not
biased by the choice. For discrete Laplace noise with the claimed scales, the top event
``L = Σ|δ_i|/t_i`` has ratio exactly ``e^ε`` on worst-case pairs: the audit is tight.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import stats

from treedp.mechanisms import Mechanism
from treedp.noise import RandomSource

#: False-failure rate of every audit (the bound exceeds the true loss with at most this).
AUDIT_ALPHA = 1e-6


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two-sided Clopper–Pearson interval for a binomial proportion (``alpha`` in total)."""
    low = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    high = 1.0 if k == n else float(stats.beta.isf(alpha / 2, k + 1, n - k))
    return low, high


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit."""

    epsilon_low: float
    claimed: float
    threshold: float
    hits: int
    hits_neighbour: int
    runs: int
    alpha: float

    @property
    def passes(self) -> bool:
        """No evidence (at level alpha) that the loss exceeds the claim."""
        return self.epsilon_low <= self.claimed

    @property
    def flagged(self) -> bool:
        """Evidence at level alpha that the loss exceeds the claim."""
        return self.epsilon_low > self.claimed


Sampler = Callable[[np.ndarray, int, RandomSource], list[np.ndarray]]


def mechanism_sampler(mech: Mechanism) -> Sampler:
    """Run ``mech`` ``runs`` times on bin counts: exact blocks plus one batch of noise."""

    def run(counts: np.ndarray, runs: int, source: RandomSource) -> list[np.ndarray]:
        blocks = mech.true_blocks(counts)
        noise = mech.noise_only(runs, source)
        return [b[None, :] + z for b, z in zip(blocks, noise, strict=True)]

    return run


def _loss_statistic(
    outputs: list[np.ndarray],
    exact_d: list[np.ndarray],
    exact_n: list[np.ndarray],
    scales: list[float | None],
) -> np.ndarray:
    total = np.zeros(outputs[0].shape[0])
    for y, c, c2, t in zip(outputs, exact_d, exact_n, scales, strict=True):
        diff = np.flatnonzero(c != c2)
        if not diff.size:
            continue
        yd = y[:, diff].astype(np.float64)
        if t is None:
            on_d = (yd == c[diff]).all(axis=1)
            total += np.where(on_d, np.inf, -np.inf)
        else:
            total += (np.abs(yd - c2[diff]) - np.abs(yd - c[diff])).sum(axis=1) / t
    return total


def audit(
    sampler: Sampler,
    counts_d: np.ndarray,
    counts_n: np.ndarray,
    exact_d: list[np.ndarray],
    exact_n: list[np.ndarray],
    claimed_scales: list[float | None],
    claimed_epsilon: float,
    *,
    runs: int,
    source: RandomSource,
    alpha: float = AUDIT_ALPHA,
    pilot: int = 20_000,
) -> AuditResult:
    """Audit one neighbouring pair; see the module docstring."""

    def stat(counts: np.ndarray, n: int) -> np.ndarray:
        out = np.empty(0)
        for start in range(0, n, 50_000):  # batches bound the memory
            part = sampler(counts, min(50_000, n - start), source)
            out = np.concatenate([out, _loss_statistic(part, exact_d, exact_n, claimed_scales)])
        return out

    pilot_d, pilot_n = stat(counts_d, pilot), stat(counts_n, pilot)
    candidates = np.unique(np.concatenate([pilot_d, pilot_n]))
    candidates = candidates[np.isfinite(candidates) | (candidates == np.inf)]
    best_tau, best = float(candidates.max(initial=0.0)), -math.inf
    for tau in candidates[-64:]:  # the top of the statistic's support
        k1, k2 = int((pilot_d >= tau).sum()), int((pilot_n >= tau).sum())
        low = clopper_pearson(k1, pilot, 0.05)[0]
        high = clopper_pearson(k2, pilot, 0.05)[1]
        value = math.log(low / high) if low > 0 else -math.inf
        if value > best:
            best, best_tau = value, float(tau)
    final_d, final_n = stat(counts_d, runs), stat(counts_n, runs)
    hits, hits_n = int((final_d >= best_tau).sum()), int((final_n >= best_tau).sum())
    low = clopper_pearson(hits, runs, alpha)[0]
    high = clopper_pearson(hits_n, runs, alpha)[1]
    eps_low = math.log(low / high) if low > 0 else -math.inf
    return AuditResult(eps_low, claimed_epsilon, best_tau, hits, hits_n, runs, alpha)


def audit_mechanism(
    mech: Mechanism,
    counts_d: np.ndarray,
    counts_n: np.ndarray,
    *,
    runs: int,
    source: RandomSource,
    claimed: Mechanism | None = None,
    alpha: float = AUDIT_ALPHA,
) -> AuditResult:
    """Audit ``mech`` on bin counts ``counts_d`` vs ``counts_n`` against the claims of
    ``claimed`` (default: ``mech`` itself — its scales and epsilon)."""
    claim = claimed or mech
    scales = [None if s is None else float(s) for s in claim.scales]
    return audit(
        mechanism_sampler(mech),
        counts_d,
        counts_n,
        claim.true_blocks(counts_d),
        claim.true_blocks(counts_n),
        scales,
        float(claim.epsilon),
        runs=runs,
        source=source,
        alpha=alpha,
    )


# ----------------------------------------------------------------------------- zCDP audits
@dataclass(frozen=True)
class ZCDPAuditResult:
    """The outcome of one zCDP audit: ``rho_low`` is a lower confidence bound on ρ."""

    rho_low: float
    claimed: float
    threshold: float
    hits: int
    hits_neighbour: int
    runs: int
    alpha: float

    @property
    def passes(self) -> bool:
        """No evidence (at level alpha) that the loss exceeds the claim."""
        return self.rho_low <= self.claimed

    @property
    def flagged(self) -> bool:
        """Evidence at level alpha that the loss exceeds the claim."""
        return self.rho_low > self.claimed


_ALPHAS = np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 200), np.linspace(2.0, 200.0, 800)])


def rho_lower_bound(p_low: float, q_high: float) -> float:
    """The largest ρ an event with ``P(S | D) >= p_low``, ``P(S | D') <= q_high`` proves.

    ρ-zCDP bounds every Rényi divergence, ``D_α(M(D) ‖ M(D')) <= αρ``, and by data processing
    the divergence of the two Bernoulli laws of the event is at most that:
    ``p^α q^(1-α) <= exp((α - 1)αρ)``, i.e. ``ln p <= (α - 1)ρ + (1 - 1/α) ln q``. Any ``α``
    that violates this for a ``ρ`` refutes it, so
    ``ρ >= max_α (ln p - (1 - 1/α) ln q)/(α - 1)`` (a grid of ``α``; each one is valid).
    """
    if p_low <= 0.0:
        return -math.inf
    values = (math.log(p_low) - (1.0 - 1.0 / _ALPHAS) * math.log(q_high)) / (_ALPHAS - 1.0)
    return float(values.max())


def _gaussian_loss(
    outputs: list[np.ndarray],
    exact_d: list[np.ndarray],
    exact_n: list[np.ndarray],
    sigma2: list[float | None],
) -> np.ndarray:
    """The privacy-loss statistic of the claimed Gaussian noise:
    ``Σ ((y - c')² - (y - c)²)/(2σ²)`` over the coordinates that differ (exact: ±inf)."""
    total = np.zeros(outputs[0].shape[0])
    for y, c, c2, s2 in zip(outputs, exact_d, exact_n, sigma2, strict=True):
        diff = np.flatnonzero(c != c2)
        if not diff.size:
            continue
        yd = y[:, diff].astype(np.float64)
        if s2 is None:
            total += np.where((yd == c[diff]).all(axis=1), np.inf, -np.inf)
        else:
            total += ((yd - c2[diff]) ** 2 - (yd - c[diff]) ** 2).sum(axis=1) / (2.0 * s2)
    return total


def audit_zcdp(
    mech: Mechanism,
    counts_d: np.ndarray,
    counts_n: np.ndarray,
    *,
    runs: int,
    source: RandomSource,
    claimed: Mechanism | None = None,
    alpha: float = AUDIT_ALPHA,
    pilot: int = 20_000,
) -> ZCDPAuditResult:
    """Audit a discrete Gaussian mechanism's ρ-zCDP claim on one neighbouring pair.

    As :func:`audit`, with the event ``{L >= τ}`` for the Gaussian privacy-loss statistic of
    the *claimed* variances (``claimed.sigma2``, default ``mech``'s) and the Rényi bound of
    :func:`rho_lower_bound`; the claim is ``claimed.guarantee.rho``. The bound exceeds the
    true ρ with probability at most ``alpha`` (Clopper–Pearson, ``alpha/2`` each side).
    """
    claim = claimed or mech
    sigma2 = [None if s is None else float(s) for s in claim.sigma2]  # type: ignore[attr-defined]
    exact_d, exact_n = claim.true_blocks(counts_d), claim.true_blocks(counts_n)
    sampler = mechanism_sampler(mech)

    def stat(counts: np.ndarray, n: int) -> np.ndarray:
        parts = []
        for start in range(0, n, 50_000):  # batches bound the memory
            part = sampler(counts, min(50_000, n - start), source)
            parts.append(_gaussian_loss(part, exact_d, exact_n, sigma2))
        return np.concatenate(parts)

    pilot_d, pilot_n = stat(counts_d, pilot), stat(counts_n, pilot)
    candidates = np.unique(np.concatenate([pilot_d, pilot_n]))
    candidates = candidates[np.isfinite(candidates)]
    best_tau, best = float(np.median(candidates)), -math.inf
    for tau in np.quantile(candidates, np.linspace(0.5, 1.0, 96)):
        k1, k2 = int((pilot_d >= tau).sum()), int((pilot_n >= tau).sum())
        value = rho_lower_bound(
            clopper_pearson(k1, pilot, 0.05)[0], clopper_pearson(k2, pilot, 0.05)[1]
        )
        if value > best:
            best, best_tau = value, float(tau)
    final_d, final_n = stat(counts_d, runs), stat(counts_n, runs)
    hits, hits_n = int((final_d >= best_tau).sum()), int((final_n >= best_tau).sum())
    rho_low = rho_lower_bound(
        clopper_pearson(hits, runs, alpha)[0], clopper_pearson(hits_n, runs, alpha)[1]
    )
    rho_claim = float(claim.guarantee.rho)  # type: ignore[union-attr]
    return ZCDPAuditResult(rho_low, rho_claim, best_tau, hits, hits_n, runs, alpha)
