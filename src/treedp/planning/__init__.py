"""The planner: choose fan-outs, height, padding and level budgets to minimise the error.

The search starts from the paper's results (:mod:`treedp.tree.design`: fan-out about 17,
budgets proportional to ``(k - 1)^(1/3)``, exact factorisations of a padded ``B``) and goes
further: every candidate is scored by the *exact* error of the estimator actually used — the
efficient (BLUE) estimate by default, whose optimum differs from the paper's direct one — with
the exact discrete Laplace variances, for one of three objectives:

* ``"cdf_mse"`` — mean over the ``B`` prefixes of the CDF's mean squared error (records²);
* ``"range_mse"`` — mean over all ``B(B+1)/2`` ranges ``[a, b)``;
* ``"max_variance"`` — the worst prefix.

Workloads: ``workload="cdf"`` is ``"cdf_mse"``, ``"ranges"`` is ``"range_mse"``, and an explicit
list of ranges ``(lo, hi)`` is scored by the exact mean of ``Var(P[hi] - P[lo])`` from the
candidate's prefix covariance (:class:`Workload`).

Search (issue #19: the best tree). Shapes: the flat tree, near-equal fan-outs for every height
(both orders), exact factorisations of ``B`` and of nearby smooth sizes (padding), and mixed
radices — a small fan-out at the top, near-equal ones below (:func:`_mixed_shapes`). Levels:
under ``add_remove`` with the efficient estimator the root may be switched off (budget 0: not
measured, ``n`` estimated from the levels below); a middle level switched off is the same
model as merging two fan-outs, so the search over fan-out vectors covers it. Every shape is
screened with equal, rule (``(k - 1)^(1/3)``) and root-off rule budgets on the smooth proxy
variances; the best ``FINALISTS`` shapes (plus the previous planner's ``CLASSIC_FINALISTS``)
get FREE level budgets by the stationarity fixed point below (:func:`.tuning.tune_free`); a
local search then moves between mixed radices of the same height (one fan-out ±1, a neighbour
refitted), the winner's budgets take a few exact steps on the exact objective with the exact
discrete variances (:func:`.tuning.exact_polish`), and for another
objective or workload the best shapes are polished on it (damped fixed point; a compass
search for the non-smooth worst prefix). No scipy: the searches are a few lines here. Each
evaluation of the mean prefix variance is ``O(h·Σk)`` (:mod:`treedp.estimation.objectives`).
Only public parameters are used.

Gaussian noise (a ``ZCDP(ρ)`` or ``ApproxDP(ε, δ)`` target). Level ``l`` costs
``ρ_l = Δ_l²/(2σ_l²)`` (``Δ_l`` its L2 sensitivity) and the costs add up to ``ρ``. For an
objective linear in the variances, ``Σ_l w_l σ_l²`` (the direct estimator's mean prefix
variance has ``w_l`` = the mean number of level-``l`` nodes in a prefix's covering, about
``(k_l - 1)/2``), the Lagrangian ``Σ w_l σ_l² + λ(Σ Δ_l²/(2σ_l²) - ρ)`` is stationary at
``w_l = λΔ_l²/(2σ_l⁴)``, i.e. ``σ_l² ∝ Δ_l/sqrt(w_l)`` and ``ρ_l ∝ Δ_l·sqrt(w_l)``, with optimum
``(Σ_l Δ_l sqrt(w_l))²/(2ρ)``. (Laplace instead has ``ε_l ∝ (w_l Δ1_l²)^(1/3)``, optimum
``2(Σ_l (w_l Δ1_l²)^(1/3))³/ε²``: Gaussian budgets follow the square root of the fan-out
weight, Laplace budgets its cube root.) The efficient estimator's objective ``f(σ²)`` is not
linear, but the same stationarity condition holds with ``w_l = ∂f/∂σ_l²`` at the optimum
(KKT; ``f`` is convex in the precisions ``1/σ_l²`` and the constraint is linear in them, so
the stationary point is the minimum). The planner starts from the rule
budgets and iterates ``b_l ∝ (d_l ∂f/∂σ_l²)^p`` (``p = 1/2``, ``d = L2²``: Gaussian;
``p = 1/3``, ``d = L1²``: Laplace, from ``∂f/∂ε_l = -4 d_l w_l/ε_l³``), derivatives by forward
differences of the closed-form objective, undamped (it converges in a few steps), then keeps
the best of equal, rule and iterated budgets by the exact objective with the exact discrete
variances. The noise family (:class:`~treedp.noise.families.BudgetedFamily`) gives ``d``,
``p`` and the smooth variance; no noise is named here. The other mechanisms (the noisy
histogram, the shipped strategies, the square-root factorisation) score themselves
(``plan_candidate``) for the noise families they add.

Modules: :mod:`.search` (the search), :mod:`.shapes`, :mod:`.levels`, :mod:`.tuning`,
:mod:`.workload`, :mod:`.result` (:class:`Plan`), :mod:`.planner` (:func:`plan`,
:class:`PlanCache`).
"""

from treedp.planning.planner import (
    DEFAULT_PLAN_CACHE,
    OBJECTIVES,
    WORKLOADS,
    PlanCache,
    best_tree,
    plan,
)
from treedp.planning.result import Plan
from treedp.planning.workload import Workload
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "DEFAULT_PLAN_CACHE",
    "OBJECTIVES",
    "WORKLOADS",
    "Plan",
    "PlanCache",
    "PlanCandidate",
    "Workload",
    "best_tree",
    "plan",
]
