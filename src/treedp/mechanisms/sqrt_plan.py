"""How the planner scores the square-root factorisation: exactly up to ``2^19`` bins, by a
measured rule above (issue 33).

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
from typing import Any

import numpy as np

from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
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
    (module docstring), or None (an explicit ``workload``: prefix objectives only; Laplace
    noise, ``B < 2``, ``B > PLAN_LIMIT``, replace above ``EXACT_PLAN_LIMIT``, or a budget below
    the sampler's range or, above ``EXACT_PLAN_LIMIT``, below the largest lattice scale's)."""
    if workload is not None or noise != DiscreteGaussian.key:
        return None
    if 2 <= n_bins <= EXACT_PLAN_LIMIT:
        return _exact_candidate(make, n_bins, budget, neighbours, objective)
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
    make: Callable[..., Any], n_bins: int, budget: float, neighbours: str, objective: str
) -> PlanCandidate | None:
    """The exact objective (the mechanism's covariance); for scaled rows only ``Δ₂²`` is
    computed, not ``Δ₁`` (the contract's, computed when the mechanism is built)."""
    from treedp.estimation.toeplitz import RowWeightedToeplitzCovariance

    nb: Neighbours = "replace" if neighbours == "replace" else "add_remove"
    try:
        if sr.rows_default(n_bins, budget, nb, None):
            scale = lat.choose_scale(n_bins, budget, "add_remove", sr.ROWS_RESOLUTION**2)
            family = lat.fits(sr.row_l2_squared(n_bins, scale), budget)
            if family is None:
                return None
            e = sr.row_multipliers(n_bins).astype(np.float64)
            g = lat.prefix_filter(n_bins, scale)
            cov: Any = RowWeightedToeplitzCovariance(g, 1.0 / (e * e), family.variance())
            how = f"square-root factorisation, lattice scale {scale}, scaled rows"
        else:
            mech = make(n_bins, rho=budget, neighbours=nb, n=0 if nb == "replace" else None)
            cov = mech.covariance()
            how = f"square-root factorisation, lattice scale {mech.scale}"
            how += ", equalised columns" if mech.equalise else ""
            how += ", normalised columns" if mech.normalise else ""
            how += ", scaled rows and columns" if mech.both else ""
    except InvalidParameterError:
        return None
    var = cov.var(np.arange(1, n_bins + 1))
    mean_mse, worst = float(var.mean()), float(var.max())
    if objective == "max_variance":
        value = worst
    elif objective == "range_mse":
        total = (n_bins + 1) * float(var.sum()) - cov.prefix_sum_covariance()
        value = total / (n_bins * (n_bins + 1) / 2)
    else:
        value = mean_mse
    return PlanCandidate(
        "sqrt_factorization", (n_bins,), (budget,), value, how, mean_mse, max_cdf_variance=worst
    )
