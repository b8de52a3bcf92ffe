"""The planner: choose fan-outs, height, padding and level budgets to minimise the error.

It starts from the paper's results (:mod:`treedp.tree.design`: fan-out about 17, budgets
``∝ (k - 1)^(1/3)``, exact factorisations of a padded ``B``) and scores every candidate by the
*exact* error of the estimator actually used (efficient by default) with the exact noise
variances, for ``"cdf_mse"`` (mean CDF variance), ``"range_mse"`` (mean over all ranges),
``"max_variance"`` (the worst prefix) or an explicit :class:`Workload` of ranges.

Search (:mod:`.search`): shapes are the flat tree, near-equal fan-outs, exact factorisations of
nearby smooth sizes and mixed radices (:mod:`.shapes`); under ``add_remove`` with the efficient
estimator the root may be switched off (a middle level off is the same as merging two
fan-outs). Shapes are screened on smooth proxy variances with equal and rule budgets; the
finalists get free budgets (:func:`.levels.tune_free`), a local search moves between mixed
radices, and the winner takes a few exact steps (:func:`.levels.exact_polish`). Only public
parameters are used.

Free budgets. With ``w_l = ∂f/∂σ_l²`` the objective's weight of level ``l`` and ``d_l`` its
sensitivity weight, the optimum of ``f(σ²)`` under the budget constraint is stationary at
``b_l ∝ (d_l w_l)^p``: Gaussian noise (``ρ_l = Δ_l²/(2σ_l²)``) has ``p = 1/2``, ``d = L2²``;
Laplace (``σ_l² = 2Δ1_l²/ε_l²``) has ``p = 1/3``, ``d = L1²``. ``f`` is convex in the
precisions ``1/σ_l²`` and the constraint is linear in them, so the stationary point is the
minimum (KKT). For the direct estimator ``f`` is linear in the variances and the optimum is
``(Σ_l Δ_l sqrt(w_l))²/(2ρ)`` (Gaussian) or ``2(Σ_l (w_l Δ1_l²)^(1/3))³/ε²`` (Laplace). The
noise family (:class:`~treedp.noise.families.BudgetedFamily`) gives ``d``, ``p`` and the
smooth variance; other mechanisms score themselves (``plan_candidate``).
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
