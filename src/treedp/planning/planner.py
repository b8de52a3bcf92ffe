"""The planner's front: :func:`plan` and the :class:`PlanCache` of plans by public parameters."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, cast

from treedp._aliases import accepts_aliases
from treedp._validation import check_int, check_option
from treedp.budget import Neighbours
from treedp.exceptions import InvalidParameterError
from treedp.noise.families import noise_family
from treedp.planning.result import Plan
from treedp.planning.search import search_plan
from treedp.planning.workload import Workload
from treedp.privacy.measures import Measure
from treedp.spec import ReleaseSpec

__all__ = [
    "DEFAULT_PLAN_CACHE",
    "OBJECTIVES",
    "WORKLOADS",
    "PlanCache",
    "best_tree",
    "plan",
]

#: Objectives the planner accepts.
OBJECTIVES = ("cdf_mse", "range_mse", "max_variance")
#: Workload names :func:`plan` accepts besides an explicit list of ranges.
WORKLOADS = ("cdf", "ranges")


def best_tree(n_bins: int, epsilon: float) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The branching and level budgets of the best tree for ``n_bins`` bins at pure
    ``epsilon``, add/remove (a :data:`treedp.mechanisms.base.TreePlanner`)."""
    best = next(c for c in plan(n_bins, epsilon=epsilon).alternatives if not c.offered)
    return best.branching, best.level_budgets


@accepts_aliases
def plan(
    bins: int | ReleaseSpec,
    *,
    epsilon: float | None = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    noise: str | None = None,
    estimator: str | None = "efficient",
    objective: str = "cdf_mse",
    privacy: Measure | None = None,
    workload: str | Sequence[Any] | None = None,
) -> Plan:
    """Choose the tree (or histogram) and level budgets with the smallest exact error.

    Parameters
    ----------
    bins : int or ReleaseSpec
        The number of bins ``B``, or a :class:`treedp.ReleaseSpec` (then the keywords are
        ignored).
    epsilon : float, optional
        The total pure-DP budget (discrete Laplace noise); exactly one of ``epsilon`` and
        ``privacy`` unless ``bins`` is a spec.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation (``replace``: the root is exact).
    n : int, optional
        The public size under ``replace`` (the error does not depend on it).
    noise : str, optional
        The noise family's key; it follows from the budget (``epsilon``: Laplace; ``ZCDP`` or
        ``ApproxDP``: Gaussian) and, if given, must agree with it.
    estimator : {"efficient", "direct"}, default="efficient"
        The estimator whose error is minimised.
    objective : {"cdf_mse", "range_mse", "max_variance"}, default="cdf_mse"
        What to minimise.
    privacy : PureDP, ZCDP or ApproxDP, optional
        A target guarantee instead of ``epsilon``; zCDP or (ε, δ) plans discrete Gaussian noise.
    workload : {"cdf", "ranges"} or sequence, optional
        ``"cdf"`` (as ``objective="cdf_mse"``), ``"ranges"`` (as ``objective="range_mse"``),
        or an explicit sequence of public bin ranges ``(lo, hi)``, ``0 <= lo < hi <= B`` (an
        int ``m`` is the prefix ``[0, m)``), whose exact mean variance is then ``predicted``
        (objective ``"workload_mse"``). The ranges must not be chosen from the data.

    Returns
    -------
    Plan

    Examples
    --------
    >>> import treedp
    >>> treedp.plan(65536, epsilon=1.0).mechanism  # pure ε above 4096 bins
    'strategy_tree'
    >>> treedp.plan(100_000, epsilon=1.0).mechanism  # padded to 2^17 with empty bins
    'strategy_tree'
    >>> treedp.plan(100_000, privacy=treedp.ZCDP(0.5)).mechanism  # zCDP: the factorisation
    'sqrt_factorization'
    """
    if isinstance(bins, ReleaseSpec):
        spec = bins
    else:  # ReleaseSpec rejects epsilon=None itself: the cast is for the type checker
        spec = ReleaseSpec(
            bins=bins,
            epsilon=cast(float, epsilon),
            neighbours=neighbours,
            n=n,
            estimator=estimator,
            privacy=privacy,
        )
    if noise is not None and noise_family(noise).key != spec.noise:
        raise InvalidParameterError(
            f"noise={noise!r} contradicts the budget: epsilon= means Laplace noise, "
            "privacy=ZCDP(...) or ApproxDP(...) means Gaussian noise."
        )
    objective, explicit = _objective_and_workload(objective, workload, spec.n_bins)
    return search_plan(
        spec.n_bins,
        spec.budget,
        spec.neighbours,
        spec.estimator_name,
        objective,
        spec.noise,
        workload=explicit,
    )


def _objective_and_workload(
    objective: str, workload: str | Sequence[Any] | None, n_bins: int
) -> tuple[str, Workload | None]:
    """The objective a named workload implies, or the explicit workload (validated)."""
    check_option(objective, "objective", OBJECTIVES)
    if isinstance(workload, str):
        name = check_option(workload, "workload", WORKLOADS)
        implied = "cdf_mse" if name == "cdf" else "range_mse"
        if objective not in ("cdf_mse", implied):
            raise InvalidParameterError(
                f"workload={workload!r} and objective={objective!r} ask for different errors; "
                "give one of them."
            )
        return implied, None
    if workload is None:
        return objective, None
    if objective != "cdf_mse":
        raise InvalidParameterError(
            "An explicit 'workload' sets what is minimised; leave 'objective' at its default."
        )
    return objective, Workload.from_ranges(workload, n_bins)


class PlanCache:
    """Plans by public parameters (bins, budget, neighbours, estimator, noise): nothing else,
    so caching reveals nothing about any data. Thread-safe.

    :func:`treedp.release_cdf` plans each configuration once through
    :data:`DEFAULT_PLAN_CACHE` (the 64 most recently used); pass ``plan_cache=`` to keep plans
    elsewhere, or ``plan_cache=False`` to plan afresh every time.

    Parameters
    ----------
    maxsize : int, optional
        The most plans kept (the least recently used goes first); None keeps every plan.

    Examples
    --------
    >>> import treedp
    >>> cache = treedp.PlanCache()
    >>> cache.get(treedp.ReleaseSpec(bins=64, epsilon=1.0)) is cache.get(
    ...     treedp.ReleaseSpec(bins=64, epsilon=1.0))
    True
    """

    def __init__(self, maxsize: int | None = None) -> None:
        if maxsize is not None:
            check_int(maxsize, "maxsize", lo=1)
        self.maxsize = maxsize
        self._plans: OrderedDict[tuple[int, float, Neighbours, str, str], Plan] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, spec: ReleaseSpec) -> Plan:
        """The plan for ``spec`` (computed on first use)."""
        key = (spec.n_bins, spec.budget, spec.neighbours, spec.estimator_name, spec.noise)
        with self._lock:
            found = self._plans.get(key)
            if found is not None:
                self._plans.move_to_end(key)
                return found
        n_bins, budget, nb, est, noise = key
        found = search_plan(n_bins, budget, nb, est, "cdf_mse", noise)  # outside the lock
        with self._lock:
            self._plans[key] = found
            while self.maxsize is not None and len(self._plans) > self.maxsize:
                self._plans.popitem(last=False)
        return found

    def clear(self) -> None:
        """Forget every plan."""
        with self._lock:
            self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)


#: The plans :func:`treedp.release_cdf` reuses when given neither ``plan`` nor ``plan_cache``.
DEFAULT_PLAN_CACHE = PlanCache(maxsize=64)
