"""How the planner scores the square-root factorisation: exactly up to ``2^19`` bins, by a
measured rule above (issue 33).

For normalised columns and for scaled rows and columns (``2^8 <= B <= 2^14``) the planner's
exact figures come from :func:`scaled_prefix_figures`, which computes the same variances as
:class:`treedp.estimation.toeplitz.ScaledToeplitzCovariance` (to about ``10^-14`` relatively,
``tests/mechanisms/test_sqrt_plan_fast.py``) in blocks of rows instead of its ``B`` cumulative
sums: 0.2 s instead of 0.9 s of CPU at ``2^14`` (docs/factorization.md). For scaled rows
(``2^14 < B <= 2^19``) the variances are sums over the runs of equal row weights instead of an
FFT product (0.03 s instead of 0.11 s at ``2^19``).

Up to :data:`EXACT_PLAN_LIMIT` the candidate carries the mechanism's exact objective (its
covariance: exact discrete Gaussian variance, exact ``Δ₂²``). Above it, and up to
:data:`PLAN_LIMIT`, the exact figures cost 1.3–30 s of CPU (a power-series inverse of length
``B``, an FFT correlation for ``Δ₂²`` and a convolution for every variance, all of length
``2B``: 1.3 s at ``2^20``, 6 s at ``2^22``, 26 s and 1.6 GB at ``2^24``), and the planner scores
it by a **rule** instead, for add/remove where the lattice scale is at least ``8 sqrt(B)``
(:func:`rule_applies`; ρ above about 1e-3 at ``2^20`` and 0.013 at ``2^24``; smaller budgets
are not covered: not offered, as before):

    objective  <=  RULE_RATIOS[objective] × (the SVD lower bound on the mean prefix MSE),

the bound ``‖L‖_*²/(2ρB²)`` evaluated from above in ``O(1)`` (:func:`svd_bound_above`). The
ratios are *measured*, not proven: ``benchmarks/zcdp_rule.py`` computes the exact figures at
22 sizes over ``(2^19, 2^24]`` (every power of two, sizes between, odd sizes) at scale ``2^16``
and at the smallest scale covered, ``8 sqrt(B)`` (mean prefix MSE at most 1.0392× the bound,
worst prefix variance at most 1.0868×, mean range MSE at most 1.846×; at a given scale the
same to five digits at every ``ρ``, as the error is ``Δ₂²·K(B, s)/(2ρ)`` up to the ``σ²``
rounding, below ``10^-9`` relatively), and the constants keep a margin above the largest. The
planner's trees are 1.49–1.60× the bound there, so the rule picks the factorisation whenever it
applies unless the tree's discrete Gaussian noise is far below its ``σ²`` (huge ``ρ``), which
the planner's exact tree scores see. The candidate's figures are then *upper bounds* (its
``how`` says so); the released mechanism's covariance has the exact ones (computed when a query
needs them, with the estimate's own series inverse).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import sqrt_both as sb
from treedp.mechanisms import sqrt_lattice as lat
from treedp.mechanisms import sqrt_rows as sr
from treedp.noise.families import DiscreteGaussian
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "EXACT_PLAN_LIMIT",
    "PLAN_LIMIT",
    "RULE_RATIOS",
    "plan_candidate",
    "rule_applies",
    "scale_below",
    "scaled_prefix_figures",
    "svd_bound_above",
]

#: Largest ``B`` whose exact objective the planner computes (about 0.6–0.9 s of CPU at ``2^20``).
EXACT_PLAN_LIMIT = 2**19
#: Largest ``B`` the planner offers the factorisation for (by :data:`RULE_RATIOS` above
#: :data:`EXACT_PLAN_LIMIT`); above it, ``mechanism="sqrt_factorization"`` asks for it.
PLAN_LIMIT = 2**24
#: Measured upper bounds on the default's objectives over the SVD bound on the mean prefix MSE,
#: for add/remove, ``EXACT_PLAN_LIMIT < B <= PLAN_LIMIT``, lattice scale from ``8 sqrt(B)`` to
#: ``2^16`` (``benchmarks/zcdp_rule.py``: largest measured 1.0392, 1.0868, 1.846).
RULE_RATIOS = {"cdf_mse": 1.045, "max_variance": 1.10, "range_mse": 1.90}
#: Terms of the nuclear norm summed exactly in :func:`svd_bound_above`.
_HEAD = 4096
#: Rows per block in :func:`scaled_prefix_figures` (fastest measured at ``2^14``).
_BLOCK = 32


def svd_bound_above(n_bins: int, rho: float) -> float:
    """An upper bound on the SVD bound ``‖L‖_*²/(2ρB²)`` (relative excess below ``10^-9``).

    ``‖L‖_* = Σ_{k=1..B} f(x_k)``, ``f(x) = 1/(2 sin x)``, ``x_k = (k − ½)h``, ``h = π/(2B + 1)``
    (the singular values; ``benchmarks/prefix_bound.py``). The first :data:`_HEAD` terms are
    summed; ``f`` is convex on ``(0, π)``, so every later midpoint value is at most the mean of
    ``f`` over its cell: ``Σ_{k>K} f(x_k) <= (1/h) ∫_{Kh}^{Bh} f = (ln tan(Bh/2) − ln
    tan(Kh/2))/(2h)``.
    """
    h = math.pi / (2 * n_bins + 1)
    head = min(n_bins, _HEAD)
    k = np.arange(1, head + 1, dtype=np.float64)
    nuclear = float(np.sum(1.0 / (2.0 * np.sin((k - 0.5) * h))))
    if n_bins > head:
        nuclear += (math.log(math.tan(n_bins * h / 2)) - math.log(math.tan(head * h / 2))) / (2 * h)
    return nuclear * nuclear * (1 + 1e-12) / (2 * rho * n_bins * n_bins)


def scale_below(n_bins: int, rho: float) -> int:
    """A lower bound on the lattice scale of the default above ``2^14`` (scaled rows,
    :func:`sqrt_lattice.choose_scale` with the factor ``R²``), in ``O(log s)`` steps of ``O(1)``
    (0 if none fits): the largest ``s <= 2^16`` for which the sampler takes ``σ²`` for
    ``R² (s² S + s T + B/4) >= R² Σ ĉ_k²`` (``ĉ_k = round(s c_k) <= s c_k + ½``, so
    ``Σ ĉ_k² <= s² Σ c_k² + s Σ c_k + B/4``, with ``S = 1 + (1 + ln(B − 1))/π >= Σ c_k²`` and
    ``T = 1 + 2 sqrt((B − 1)/π) >= Σ c_k`` as ``c_k <= 1/sqrt(πk)``). The scale search's own
    bound is at most this one at every ``s``, so it returns at least this scale."""
    sq = 1 + (1 + math.log(n_bins - 1)) / math.pi
    lin = 1 + 2 * math.sqrt((n_bins - 1) / math.pi)

    def fits(scale: int) -> bool:
        bound = math.ceil(scale * scale * sq + scale * lin + n_bins / 4)
        return lat.fits(bound * sr.ROWS_RESOLUTION**2, rho) is not None

    lo, hi = 0, lat.MAX_SCALE
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return lo


def rule_applies(n_bins: int, rho: float, neighbours: str) -> bool:
    """Whether the rule scores the factorisation: add/remove, ``EXACT_PLAN_LIMIT < B <=
    PLAN_LIMIT``, and a lattice scale of at least ``8 sqrt(B)`` (:func:`scale_below`; the
    default there is then scaled rows, as ``s² >= 64B > πB``): where the ratios were measured
    (at ``s = 8 sqrt(B)`` and ``s = 2^16``)."""
    if neighbours != "add_remove" or not EXACT_PLAN_LIMIT < n_bins <= PLAN_LIMIT:
        return False
    scale = scale_below(n_bins, rho)
    return scale * scale >= 64 * n_bins


def plan_candidate(
    make: Callable[..., Any],
    n_bins: int,
    budget: float,
    neighbours: str,
    noise: str,
    objective: str,
    *,
    workload: Any = None,
) -> PlanCandidate | None:
    """The planner hook (``SqrtFactorizationMechanism.plan_candidate``, which passes its class as
    ``make``, the mechanism's constructor): this mechanism's exact
    objective for Gaussian noise up to :data:`EXACT_PLAN_LIMIT`, the measured rule's bound above
    (module docstring), or None (Laplace noise, ``B < 2``, ``B > PLAN_LIMIT``, replace above
    ``EXACT_PLAN_LIMIT``, a budget below the sampler's range or, above ``EXACT_PLAN_LIMIT``,
    below the largest lattice scale's; an explicit ``workload`` of ranges other than prefixes,
    or above ``EXACT_PLAN_LIMIT``). An explicit workload of prefixes ``[0, m)`` is scored
    exactly: the mean of ``Var(P̂[m])`` over its entries."""
    if noise != DiscreteGaussian.key:
        return None
    if workload is not None and (n_bins > EXACT_PLAN_LIMIT or np.any(workload.lo != 0)):
        return None
    if 2 <= n_bins <= EXACT_PLAN_LIMIT:
        return _exact_candidate(make, n_bins, budget, neighbours, objective, workload)
    if not rule_applies(n_bins, budget, neighbours):
        return None
    bound = svd_bound_above(n_bins, budget)
    mean, worst = RULE_RATIOS["cdf_mse"] * bound, RULE_RATIOS["max_variance"] * bound
    value = {"max_variance": worst, "range_mse": RULE_RATIOS["range_mse"] * bound}
    how = (
        "square-root factorisation, scaled rows; scored by the "
        f"measured rule (figures are upper bounds: at most {RULE_RATIOS[objective]}× the SVD "
        "bound; the exact ones are the mechanism's covariance)"
    )
    return PlanCandidate(
        "sqrt_factorization",
        (n_bins,),
        (budget,),
        value.get(objective, mean),
        how,
        mean,
        max_cdf_variance=worst,
    )


def _exact_candidate(
    make: Callable[..., Any],
    n_bins: int,
    budget: float,
    neighbours: str,
    objective: str,
    workload: Any = None,
) -> PlanCandidate | None:
    """The exact objective (the mechanism's covariance); for scaled rows only ``Δ₂²`` is
    computed, not ``Δ₁`` (the contract's, computed when the mechanism is built)."""
    nb: Neighbours = "replace" if neighbours == "replace" else "add_remove"
    try:
        if sr.rows_default(n_bins, budget, nb, None):
            scale = lat.choose_scale(n_bins, budget, "add_remove", sr.ROWS_RESOLUTION**2)
            family = lat.fits(sr.row_l2_squared(n_bins, scale), budget)
            if family is None:
                return None
            var, total = _unit_row_figures(n_bins, scale)
            v = family.variance()
            cov: Any = _PrefixFigures(v * var, v * total)
            how = f"square-root factorisation, lattice scale {scale}, scaled rows"
        else:
            mech = make(n_bins, rho=budget, neighbours=nb, n=0 if nb == "replace" else None)
            cov = _PrefixFigures.of(mech) if mech.normalise or mech.both else mech.covariance()
            how = f"square-root factorisation, lattice scale {mech.scale}"
            how += ", equalised columns" if mech.equalise else ""
            how += ", normalised columns" if mech.normalise else ""
            how += ", scaled rows and columns" if mech.both else ""
    except InvalidParameterError:
        return None
    var = cov.var(np.arange(1, n_bins + 1))
    mean_mse, worst = float(var.mean()), float(var.max())
    if workload is not None:  # prefixes only (plan_candidate): P̂[0] = 0 exactly
        value = float(np.mean(var[np.asarray(workload.hi, dtype=np.int64) - 1]))
    elif objective == "max_variance":
        value = worst
    elif objective == "range_mse":
        total = (n_bins + 1) * float(var.sum()) - cov.prefix_sum_covariance()
        value = total / (n_bins * (n_bins + 1) / 2)
    else:
        value = mean_mse
    return PlanCandidate(
        "sqrt_factorization", (n_bins,), (budget,), value, how, mean_mse, max_cdf_variance=worst
    )


def _pair_gram(h: np.ndarray, weights: np.ndarray, width: int) -> np.ndarray:
    """``gram[d, j] = Σ_{k<=j} w_k h_{j−k} h_{j+d−k}`` (``d < width``: the entries of
    ``H diag(w) Hᵀ`` near its diagonal), over the runs of equal ``w`` (few: 41 runs of the row
    weights ``1/e²`` at ``2^14``, 83 of scaled rows' at ``2^19``; one for ``w = 1``): per run a
    difference of
    suffix sums of ``h_t h_{t+d}`` (suffix sums, so a run far from ``j`` adds small terms, not
    the difference of two large partial sums)."""
    n = h.size
    tails = np.zeros((width, 2 * n + 1))  # tails[d, n + m] = Σ_{t>=m} h_t h_{t+d}; m < 0: m = 0
    for d in range(width):
        tails[d, n : 2 * n - d] = np.cumsum((h[: n - d] * h[d:])[::-1])[::-1]
        tails[d, :n] = tails[d, n]
    cut = (np.flatnonzero(np.diff(weights)) + 1).tolist()
    gram = np.zeros((width, n))
    for u, v in zip([0, *cut], [*cut, n], strict=True):  # k in [u, v): t = j − k in (j − v, j − u]
        gram[:, u:] += weights[u] * (
            tails[:, n + u - v + 1 : 2 * n - v + 1] - tails[:, n + 1 : 2 * n - u + 1]
        )
    return gram


def scaled_prefix_figures(
    h: np.ndarray, q: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, float]:
    """``(Var(P̂[m]) for m = 0..B, Σ_{a,b} Cov(P̂[a], P̂[b]))`` for unit noise variance: the
    figures of :class:`treedp.estimation.toeplitz.ScaledToeplitzCovariance` ``(h, q, 1,
    weights)``, i.e. of ``M = L diag(q) H`` with ``Var(P̂[i + 1]) = Σ_k w_k M[i, k]²``.

    Rows in blocks ``I = [r0, r1)`` of :data:`_BLOCK`: with ``P = M[r0 − 1]`` (kept, updated by
    one short convolution per block) and ``D[i, k] = Σ_{j=r0..i} q_j h_{j−k}``,
    ``Σ_k w_k (P_k + D[i, k])² = Σ_k w_k P_k² + 2 Σ_{j=r0..i} q_j (h * (w ∘ P))_j + Σ_{j, j'
    in [r0, i]} q_j q_j' G[j, j']``, ``G = H diag(w) Hᵀ`` near the diagonal
    (:func:`_pair_gram`). The first term is summed afresh at every block (no error carried
    from block to block). Cost: ``B²/2`` multiply-adds in ``numpy.correlate`` (C) and
    ``O(B · block · runs of w)``; no approximation. The sum of covariances is
    ``Σ_k w_k (Σ_{j>=k} (B − j) q_j h_{j−k})²``, one correlation.
    """
    n = h.size
    width = min(_BLOCK, n)
    gram = _pair_gram(h, weights, width)
    a = np.arange(width)
    low, lag = np.minimum.outer(a, a), np.abs(np.subtract.outer(a, a))
    var = np.zeros(n + 1)
    row = np.zeros(n)  # M[r0 − 1, :]
    for r0 in range(0, n, width):
        r1 = min(n, r0 + width)
        qi = q[r0:r1]
        b = qi.size
        g = gram[lag[:b, :b], r0 + low[:b, :b]]
        quad = np.diagonal(np.cumsum(np.cumsum(np.outer(qi, qi) * g, axis=0), axis=1))
        base, cross = 0.0, np.zeros(b)
        if r0:
            base = float(weights[:r0] @ (row[:r0] * row[:r0]))
            back = np.ascontiguousarray((weights[:r0] * row[:r0])[::-1])
            cross = np.cumsum(qi * np.correlate(h[1:r1], back, "valid"))
        var[r0 + 1 : r1 + 1] = base + 2.0 * cross + quad
        row[:r1] += np.convolve(qi[::-1], h[:r1])[:r1][::-1]  # Σ_{j in I} q_j h_{j−k}
    col = np.correlate((n - np.arange(n)) * q, h, "full")[n - 1 :]
    return var, float(weights @ (col * col))


@lru_cache(maxsize=4)
def _unit_figures(n_bins: int, scale: int, both: bool) -> tuple[np.ndarray, float]:
    """:func:`scaled_prefix_figures` of normalised columns or of scaled rows and columns
    (public ``B`` and lattice scale only), read-only."""
    h = lat.inverse_coefficients(n_bins, scale)
    if both:
        q = 1.0 / sb.column_multipliers(n_bins, scale)
        weights = 1.0 / sb.row_weights(n_bins).astype(np.float64) ** 2
    else:
        q, weights = 1.0 / lat.normaliser(n_bins, scale), np.ones(n_bins)
    var, total = scaled_prefix_figures(h, q, weights)
    var.setflags(write=False)
    return var, total


@lru_cache(maxsize=4)
def _unit_row_figures(n_bins: int, scale: int) -> tuple[np.ndarray, float]:
    """The figures of :class:`treedp.estimation.toeplitz.RowWeightedToeplitzCovariance` of
    scaled rows for unit noise variance (read-only): ``Var(P̂[j + 1]) = Σ_{i<=j} w_i g_{j−i}²``
    (:func:`_pair_gram` at lag 0: over the runs of equal ``w = 1/e²``, 83 at ``2^19``,
    instead of an FFT product of length ``2B``; to about ``10^-14`` relatively) and
    ``Σ_i w_i (Σ_{t<B−i} g_t)²``."""
    e = sr.row_multipliers(n_bins).astype(np.float64)
    weights = 1.0 / (e * e)
    g = lat.prefix_filter(n_bins, scale)
    var = np.concatenate([[0.0], np.maximum(_pair_gram(g, weights, 1)[0], 0.0)])
    var.setflags(write=False)
    tails = np.cumsum(g)[::-1]
    return var, float(np.sum(weights * tails * tails))


class _PrefixFigures:
    """What :func:`_exact_candidate` reads of a scaled-columns covariance: ``var`` and
    ``prefix_sum_covariance``, from :func:`_unit_figures` times the noise variance."""

    def __init__(self, var: np.ndarray, total: float) -> None:
        self._var, self._total = var, total

    @classmethod
    def of(cls, mech: Any) -> _PrefixFigures:
        """The figures of a normalised or scaled-rows-and-columns mechanism."""
        v = float(mech.block_variance()[0])
        var, total = _unit_figures(mech.n_bins, mech.scale, bool(mech.both))
        return cls(v * var, v * total)

    def var(self, m: np.ndarray) -> np.ndarray:
        """``Var(P̂[m])`` (``P̂[0] = 0``)."""
        return np.asarray(self._var[np.asarray(m, dtype=np.int64)], dtype=np.float64)

    def prefix_sum_covariance(self) -> float:
        """``Σ_{a,b=1..B} Cov(P̂[a], P̂[b])``."""
        return self._total
