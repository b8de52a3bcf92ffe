"""Turn a validated :class:`~treedp.spec.ReleaseSpec` into a mechanism and estimator.

No data is involved, and nothing is cached here: a plan is passed in, looked up in a
:class:`~treedp.planning.PlanCache` the caller owns, or computed.
"""

from __future__ import annotations

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms import Mechanism
from treedp.mechanisms.registry import make_mechanism, mechanism_class
from treedp.mechanisms.tree import TreeMechanism
from treedp.planning import DEFAULT_PLAN_CACHE, Plan, PlanCache, best_tree
from treedp.planning import plan as make_plan
from treedp.spec import ALL_MECHANISMS, ReleaseSpec
from treedp.tree import TreeShape, shape_for
from treedp.tree.heuristics import default_branching

__all__ = ["ALL_MECHANISMS", "configure", "default_branching"]


def configure(
    spec: ReleaseSpec,
    *,
    plan: Plan | None = None,
    plan_cache: PlanCache | bool | None = None,
) -> tuple[Mechanism, str]:
    """Build the mechanism a validated spec describes; returns it and the estimator name.

    The planner chooses the tree when the spec leaves it open (``mechanism`` ``"auto"`` or
    ``"tree"`` without ``branching`` or ``level_budgets``): ``plan`` if given (made for the
    same bins, noise, budget and neighbours), else looked up in ``plan_cache``
    (:data:`treedp.planning.DEFAULT_PLAN_CACHE` by default; False plans afresh).
    """
    n_public = spec.require_n()
    n_bins = spec.n_bins
    mechanism, branching, level_budgets = spec.mechanism, spec.branching, spec.level_budgets
    if mechanism == "auto" and (branching is not None or level_budgets is not None):
        mechanism = TreeMechanism.name  # an explicit shape or budget split means a tree
    shaped = mechanism == "auto" or mechanism_class(mechanism).takes_shape
    planned = shaped and branching is None and level_budgets is None
    if plan is not None and not planned:
        raise InvalidParameterError(
            "The 'plan' parameter chooses the tree itself: it cannot be combined with "
            "'branching', 'level_budgets' or a baseline mechanism."
        )
    est = spec.estimator_name
    shape: TreeShape | None = None
    if planned:
        chosen = _the_plan(spec, plan, plan_cache)
        if spec.estimator is None:
            est = chosen.estimator
        if mechanism == "auto" and not chosen.shaped:  # histogram, strategy, ...
            mechanism = chosen.mechanism
        else:  # the planner's best tree
            best = next(c for c in chosen.alternatives if not c.offered)
            mechanism = best.mechanism
            shape = TreeShape(n_bins, best.branching)
            level_budgets = best.level_budgets
    elif shaped:
        picked = (
            default_branching(n_bins, spec.neighbours, spec.noise)
            if branching is None
            else branching
        )
        shape = shape_for(n_bins, picked)
    mech = make_mechanism(
        mechanism,
        n_bins=n_bins,
        epsilon=spec.epsilon,
        rho=spec.rho,
        neighbours=spec.neighbours,
        n=n_public,
        shape=shape,
        level_budgets=level_budgets,
    )
    limit = mech.max_records()
    if n_public is not None and limit is not None and n_public > limit:  # a public domain
        raise InvalidParameterError(
            f"The 'n' parameter is beyond mechanism={mech.name!r}'s domain: its guarantee is "
            f"stated for datasets of at most {limit} records; use the tree mechanism."
        )
    return mech.planned(best_tree), est


def _the_plan(spec: ReleaseSpec, plan: Plan | None, cache: PlanCache | bool | None) -> Plan:
    """``plan`` once checked against the spec, else the cache's plan (False: planned afresh;
    the query has checked the cache's type)."""
    if plan is None:
        if cache is False:
            return make_plan(spec)
        return (cache if isinstance(cache, PlanCache) else DEFAULT_PLAN_CACHE).get(spec)
    if not isinstance(plan, Plan):  # predict_error takes a plan without a query
        raise InvalidTypeError(
            must("plan", f"be a treedp.Plan. Got {type(plan).__name__} instead.")
        )
    if (plan.bins, plan.noise, plan.budget, plan.neighbours) != (
        spec.n_bins,
        spec.noise,
        spec.budget,
        spec.neighbours,
    ):
        raise InvalidParameterError(
            "The 'plan' parameter was made for other public parameters: its bins, noise, "
            "budget (epsilon or rho) and neighbours must equal the release's."
        )
    return plan
