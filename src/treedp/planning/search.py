"""The search on validated public parameters: screen shapes, tune the finalists' budgets,
polish, compare (the method is in :mod:`treedp.planning`). Other mechanisms score themselves
(:meth:`~treedp.mechanisms.base.Mechanism.plan_candidate`)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from treedp.budget import Neighbours
from treedp.estimation.objectives import (
    max_prefix_variance,
    mean_prefix_variance,
    mean_range_variance,
)
from treedp.mechanisms.registry import REGISTRY
from treedp.mechanisms.tree import TreeMechanism
from treedp.noise.families import noise_family
from treedp.planning.levels import (
    Family,
    budgets_from,
    compass,
    exact_polish,
    level_variances,
    level_variances_or_none,
    level_weights,
    proxy_variances,
    rule_budgets,
    tune_free,
)
from treedp.planning.result import Plan
from treedp.planning.shapes import (
    FLAT_LIMIT,
    candidate_shapes,
    mixed_shapes,
    neighbour_shapes,
    references,
)
from treedp.planning.workload import Workload, workload_name
from treedp.tree import TreeShape
from treedp.tree.candidate import PlanCandidate

__all__ = ["SEARCH_RANGES", "search_plan"]

FINALISTS = 6  # the best screened shapes, whose budgets are tuned freely
CLASSIC_FINALISTS = 4  # the previous planner's best classic shapes, kept
TUNE_ITERATIONS = 8  # steps of the budget tuner (it stops earlier once it gains little)
#: Finalists (the best first) also tuned with the root on when it could be off.
ROOT_ON_FINALISTS = 2
LOCAL_STEPS = 8  # moves of the local search over mixed radices
LOCAL_TUNED = 2  # neighbours tuned per move
#: Up to this many bins the best trees are polished on a non-CDF objective or workload itself
#: (the worst prefix costs O(B·h) per evaluation, the others O(#nodes)).
POLISH_LIMITS = {"max_variance": 8192, "other": 65536}
POLISH_SHAPES = 2  # how many of the best shapes are polished
COMPASS_EVALS = 120  # evaluations of the compass search for the worst prefix
#: A longer explicit workload guides the search by an evenly spaced subset of this many of
#: its ranges; the best RESCORED configurations are then scored on the whole workload.
SEARCH_RANGES = 256
RESCORED = 3
#: Shapes screened by their exact workload error (the best WORKLOAD_SCREENED of the CDF screen;
#: ~10 ms each at B = 1024), of which the best WORKLOAD_FINALISTS join the finalists.
WORKLOAD_FINALISTS = 4
WORKLOAD_SCREENED = 30

#: A screened configuration: proxy value, shape, level budgets, how they were chosen.
Screened = tuple[float, TreeShape, tuple[float, ...], str]
Budgets = tuple[float, ...]


@dataclass(frozen=True)
class _Search:
    """The validated public parameters of one search (``eps`` is ρ for Gaussian noise)."""

    n_bins: int
    eps: float
    nb: Neighbours
    estimator: str
    objective: str
    family: Family
    workload: Workload | None
    search: Workload | None  # the workload's subset that guides the search

    @property
    def root_off_allowed(self) -> bool:
        """Only the efficient estimator (add_remove) estimates a root switched off."""
        return self.nb == "add_remove" and self.estimator == "efficient"

    @property
    def polish(self) -> bool:
        """Whether the best trees are polished on the objective or workload itself."""
        limit = POLISH_LIMITS["max_variance" if self.objective == "max_variance" else "other"]
        return (self.workload is not None or self.objective != "cdf_mse") and self.n_bins <= limit

    def score(self, shape: TreeShape, variances: Budgets, final: bool) -> float:
        """The CDF objective while searching; the objective or workload when ``final``."""
        if self.search is not None and final:
            return self.search.tree_variance(shape, variances, self.estimator)
        if self.objective == "cdf_mse" or not final:
            return mean_prefix_variance(shape, variances, self.estimator)
        if self.objective == "range_mse":
            return mean_range_variance(shape, variances, self.estimator)
        return max_prefix_variance(shape, variances, self.estimator)

    def proxy(self, shape: TreeShape, final: bool = False) -> Callable[[Budgets], float]:
        """:meth:`score` of a shape, as a function of its level variances."""
        return lambda variances: self.score(shape, variances, final)

    def weights(self, height: int) -> list[float]:
        return level_weights(height, self.nb, self.family)

    def rule(self, branching: tuple[int, ...]) -> np.ndarray:
        return rule_budgets(branching, self.eps, self.nb, self.family.rule_power)

    def root_off(self, budgets: np.ndarray) -> np.ndarray:
        """``budgets`` with the root switched off, renormalised."""
        off = budgets.copy()
        off[0] = 0.0
        scaled: np.ndarray = self.eps * off / off.sum()
        return scaled

    def tree(self, shape: TreeShape, budgets: Budgets, how: str) -> PlanCandidate:
        """A tree candidate scored exactly (exact noise variances, the final objective)."""
        exact = self.score(shape, level_variances(budgets, self.nb, self.family), final=True)
        return PlanCandidate(TreeMechanism.name, shape.branching, budgets, exact, how)


def search_plan(
    n_bins: int,
    eps: float,
    nb: Neighbours,
    estimator: str,
    objective: str,
    noise: str,
    workload: Workload | None = None,
) -> Plan:
    """The search (``eps`` is ρ for Gaussian noise); an explicit ``workload`` replaces
    ``objective`` for the final scores."""
    search = workload.subset(SEARCH_RANGES) if workload is not None else None
    s = _Search(n_bins, eps, nb, estimator, objective, noise_family(noise), workload, search)
    screened, classic = _screen(s)
    finalists, kept, classic_best, added = _finalists(
        screened, classic, _workload_best(s, screened)
    )
    results, from_added, best_tuned = _tune_finalists(s, finalists, kept, classic_best, added)
    if best_tuned is not None:
        _, shape, budgets = _local_search(s, best_tuned)
        results.append(s.tree(shape, budgets, s.family.tuned_label + ", local search"))
    if s.polish:
        _polish(s, results, from_added)
    if objective == "cdf_mse" or s.polish:
        _exact_step(s, results)
    if nb == "replace" and n_bins > FLAT_LIMIT:
        results.append(_flat_known_total(s))
    for branching, ref_budgets, how in references(n_bins, eps, nb, s.family):
        results.append(s.tree(TreeShape(n_bins, branching), ref_budgets, how))
    for cls in REGISTRY.values():  # what the other mechanisms offer, in registry order
        # (one estimator, least squares: not an answer to a plan for the direct estimator)
        if s.family.key in cls.noises and not (estimator == "direct" and cls.least_squares_only):
            offer = cls.plan_candidate(n_bins, eps, nb, noise, objective, workload=workload)
            results.extend([] if offer is None else [offer])
    if workload is not None and search is not workload:
        results = _rescore(s, results, workload)
    return _make_plan(s, results)


def _screen(s: _Search) -> tuple[list[Screened], set[tuple[int, ...]]]:
    """Every shape with equal, rule and root-off rule budgets on the smooth proxy, best
    first, and the classic shapes."""
    root_level = 1 if s.nb == "add_remove" else 0  # add_remove also noises the root
    deep = s.family.deep_trees
    screened: list[Screened] = []
    classic = set(candidate_shapes(s.n_bins, deep))
    for branching in sorted({*classic, *mixed_shapes(s.n_bins)}):
        shape = TreeShape(s.n_bins, branching)
        h = shape.height
        if h + root_level == 0:
            continue
        rule = s.rule(branching)
        trials = [
            (budgets_from(np.ones(h + 1), s.eps, s.nb), "equal budgets"),
            (rule, s.family.rule_label),
        ]
        # (a flat tree with the root off is the noisy histogram, a candidate of its own)
        if s.root_off_allowed and (h >= 2 or (h == 1 and deep)):
            trials.append((s.root_off(rule), "root off, " + s.family.rule_label))
        d = s.weights(h)
        for trial, how in trials:
            value = s.score(shape, proxy_variances(trial.tolist(), d, s.family), final=False)
            screened.append((value, shape, tuple(trial.tolist()), how))
    screened.sort(key=lambda c: c[0])
    return screened, classic


def _workload_best(s: _Search, screened: list[Screened]) -> list[tuple[int, ...]]:
    """The best shapes by the workload's exact error at their rule budgets (the CDF proxy does
    not rank shapes for another workload: short ranges favour small fan-outs)."""
    if s.workload is None and s.objective != "range_mse":
        return []
    by_workload: list[tuple[float, tuple[int, ...]]] = []
    for _, shape, trial_budgets, how in screened:
        if len(by_workload) == WORKLOAD_SCREENED:
            break
        if how == "equal budgets" or how.startswith("root off"):
            continue
        variances = level_variances_or_none(trial_budgets, s.nb, s.family)
        if variances is not None:
            by_workload.append((s.score(shape, variances, final=True), shape.branching))
    by_workload.sort(key=lambda c: c[0])
    return list(dict.fromkeys(b for _, b in by_workload))[:WORKLOAD_FINALISTS]


Finalists = dict[tuple[int, ...], tuple[TreeShape, list[tuple[Budgets, str]]]]


def _finalists(
    screened: list[Screened], classic: set[tuple[int, ...]], workload_best: list[tuple[int, ...]]
) -> tuple[Finalists, list[tuple[int, ...]], list[tuple[int, ...]], list[tuple[int, ...]]]:
    """The finalists with their screened options: the best shapes, the best classic ones (so
    that no plan gets worse than the previous planner's) and the workload screen's; also the
    kept, classic best and workload-added shapes."""
    kept = list(dict.fromkeys(c[1].branching for c in screened))[:FINALISTS]
    by_rules = [c[1].branching for c in screened if not c[3].startswith("root off")]
    classic_best = [b for b in dict.fromkeys(by_rules) if b in classic][:CLASSIC_FINALISTS]
    kept += [b for b in classic_best if b not in kept]
    added = [b for b in workload_best if b not in kept]
    kept += added
    finalists: Finalists = {}
    for _, shape, screened_budgets, how in screened:
        if shape.branching in kept:
            finalists.setdefault(shape.branching, (shape, []))[1].append((screened_budgets, how))
    return finalists, kept, classic_best, added


Tuned = tuple[float, TreeShape, Budgets]


def _tune_finalists(
    s: _Search,
    finalists: Finalists,
    kept: list[tuple[int, ...]],
    classic_best: list[tuple[int, ...]],
    added: list[tuple[int, ...]],
) -> tuple[list[PlanCandidate], set[int], Tuned | None]:
    """Every finalist's options scored exactly, plus tuned budgets (for deep trees, only the
    best and the two best classic shapes); also the ids of the candidates only the workload
    screen kept, and the best tuned configuration (the local search's start)."""
    deep = s.family.deep_trees
    tuned_shapes = {*kept[:1], *classic_best[:2]} if deep else set(kept)
    label = s.family.tuned_label
    results: list[PlanCandidate] = []
    from_added: set[int] = set()
    best: Tuned | None = None
    for rank, (shape, options) in enumerate(finalists.values()):
        if shape.branching in tuned_shapes:
            rule = s.rule(shape.branching)
            starts = []
            root_on = rank < ROOT_ON_FINALISTS or shape.branching in classic_best[:2]
            if not s.root_off_allowed or shape.height <= 1 or root_on:
                starts.append((rule, label))
            off_ok = shape.height >= 2 or (shape.height == 1 and deep)
            if s.root_off_allowed and off_ok and (not deep or rank == 0):
                starts.append((s.root_off(rule), label + ", root off"))
            d = s.weights(shape.height)
            for start, how in starts:
                value, tuned = tune_free(
                    start.tolist(), s.eps, d, s.family, s.proxy(shape), TUNE_ITERATIONS
                )
                options = [*options, (tuned, how)]
                if best is None or value < best[0]:
                    best = (value, shape, tuned)
        for final_budgets, how in options:
            results.append(s.tree(shape, final_budgets, how))
            if shape.branching in added:
                from_added.add(id(results[-1]))
    return results, from_added, best


def _local_search(s: _Search, start: Tuned) -> Tuned:
    """Improve the best tuned tree by moves between mixed radices of the same height: the
    best :data:`LOCAL_TUNED` neighbours at the current budgets get tuned budgets, and the
    search moves while that improves."""
    best_value, best_shape, best_budgets = start
    seen = {best_shape.branching}
    # deep trees (Gaussian noise: up to log2 B levels) take a couple of moves only
    for _ in range(LOCAL_STEPS if best_shape.height <= 10 else 2):
        d = s.weights(best_shape.height)
        variances = proxy_variances(best_budgets, d, s.family)
        scored = []
        for branching in neighbour_shapes(best_shape.branching, s.n_bins):
            if branching in seen:
                continue
            seen.add(branching)
            scored.append((s.proxy(TreeShape(s.n_bins, branching))(variances), branching))
        scored.sort()
        improved = False
        for _, branching in scored[:LOCAL_TUNED]:
            shape = TreeShape(s.n_bins, branching)
            value, tuned = tune_free(
                list(best_budgets), s.eps, d, s.family, s.proxy(shape), TUNE_ITERATIONS // 2
            )
            if value < best_value * (1 - 1e-9):
                best_value, best_shape, best_budgets, improved = value, shape, tuned, True
        if not improved:
            break
    return best_value, best_shape, best_budgets


def _polish(s: _Search, results: list[PlanCandidate], from_added: set[int]) -> None:
    """Polish the budgets of the best shapes (and the best the workload screen added) on the
    objective or workload itself, damped: it may be non-smooth."""
    results.sort(key=lambda c: c.value)
    old = [c for c in results if id(c) not in from_added]
    picked = list(dict.fromkeys(c.branching for c in old))[:POLISH_SHAPES]
    new = [c.branching for c in results if id(c) in from_added and c.branching not in picked]
    picked += new[:1]
    for branching in picked:
        candidate = min((c for c in results if c.branching == branching), key=lambda c: c.value)
        shape = TreeShape(s.n_bins, candidate.branching)
        d = s.weights(shape.height)
        final_proxy = s.proxy(shape, final=True)
        first = list(candidate.level_budgets)
        if s.objective == "max_variance" and s.workload is None:  # a max: not smooth
            _, polished = compass(first, s.eps, d, s.family, final_proxy, COMPASS_EVALS)
        else:
            _, polished = tune_free(first, s.eps, d, s.family, final_proxy, 8, step=0.5)
        polished_variances = level_variances_or_none(polished, s.nb, s.family)
        if polished_variances is None:  # a level's budget too small for exact noise
            continue
        exact = s.score(shape, polished_variances, final=True)
        how = s.family.tuned_label + ", for the " + ("workload" if s.workload else s.objective)
        results.append(PlanCandidate(TreeMechanism.name, shape.branching, polished, exact, how))


def _exact_step(s: _Search, results: list[PlanCandidate]) -> None:
    """A last step for the best tree on the exact objective with the exact noise variances
    (the smooth proxy's optimum is off by about 1e-6 relatively)."""
    results.sort(key=lambda c: c.value)
    for candidate in [c for c in results if c.level_budgets][:1]:
        shape = TreeShape(s.n_bins, candidate.branching)

        def exact_score(budgets: Budgets, shape: TreeShape = shape) -> float:
            return s.score(shape, level_variances(budgets, s.nb, s.family), final=True)

        d = s.weights(shape.height)
        value, budgets = exact_polish(candidate, s.eps, d, s.family, exact_score)
        if value < candidate.value:
            how = candidate.how + ", exact"
            results.append(PlanCandidate(TreeMechanism.name, shape.branching, budgets, value, how))


def _flat_known_total(s: _Search) -> PlanCandidate:
    """The flat tree with the public total (replace): ``Var(P[m]) = σ² m (B - m) / B``."""
    var = level_variances((0.0, s.eps), "replace", s.family)[1]
    n_bins, b = s.n_bins, float(s.n_bins)
    if s.workload is not None:
        value = s.workload.independent_variance(var, n_public=True)
    elif s.objective == "cdf_mse":
        value = var * (b * b - 1) / (6 * b)
    elif s.objective == "max_variance":
        value = var * (n_bins // 2) * (n_bins - n_bins // 2) / b
    else:
        lengths = np.arange(1, n_bins + 1, dtype=np.float64)
        value = (
            var * float(((b - lengths + 1) * lengths * (b - lengths)).sum()) / b / (b * (b + 1) / 2)
        )
    return PlanCandidate(TreeMechanism.name, (n_bins,), (0.0, s.eps), value, "flat tree, n public")


def _rescore(s: _Search, results: list[PlanCandidate], workload: Workload) -> list[PlanCandidate]:
    """The best :data:`RESCORED` trees scored on the whole ``workload``, and the mechanisms'
    own candidates (scored on it already); the other trees' values are not comparable."""
    rescored: list[PlanCandidate] = []
    seen: set[tuple[tuple[int, ...], Budgets]] = set()
    for c in sorted((c for c in results if not c.offered), key=lambda c: c.value):
        if len(seen) == RESCORED:
            break
        if (c.branching, c.level_budgets) in seen:
            continue
        seen.add((c.branching, c.level_budgets))
        variances = level_variances(c.level_budgets, s.nb, s.family)
        value = workload.tree_variance(TreeShape(s.n_bins, c.branching), variances, s.estimator)
        rescored.append(dataclasses.replace(c, value=value))
    return rescored + [c for c in results if c.offered]


def _make_plan(s: _Search, results: list[PlanCandidate]) -> Plan:
    """The best candidate (of ties up to rounding, the least padded) as a :class:`Plan`."""
    results.sort(key=lambda c: c.value)
    tied = [c for c in results if c.value <= results[0].value * (1 + 1e-12)]
    leading = min(tied, key=lambda c: math.prod(c.branching))
    results = [leading, *(c for c in results if c is not leading)]
    best = results[0]
    worst: float | None = None
    if s.objective == "max_variance" and s.workload is None:
        worst = best.value
    if best.mean_cdf_mse is not None:  # a candidate a mechanism offered itself
        mean_mse = best.mean_cdf_mse
        worst = best.max_cdf_variance if worst is None else worst
    else:
        variances = level_variances(best.level_budgets, s.nb, s.family)
        mean_mse = mean_prefix_variance(TreeShape(s.n_bins, best.branching), variances, s.estimator)
    pure = s.family.budget_name == "epsilon"
    return Plan(
        bins=s.n_bins,
        epsilon=s.eps if pure else math.inf,
        neighbours=s.nb,
        estimator=s.estimator,
        objective=s.objective if s.workload is None else "workload_mse",
        mechanism=best.mechanism,
        branching=best.branching,
        level_budgets=best.level_budgets,
        padded_leaves=math.prod(best.branching),
        predicted=best.value,
        mean_cdf_mse=mean_mse,
        max_cdf_variance=worst,
        alternatives=tuple(results),
        noise=s.family.key,
        rho=None if pure else s.eps,
        workload=workload_name(s.objective, s.workload),
    )
