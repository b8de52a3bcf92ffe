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
variances; the best :data:`_FINALISTS` shapes (plus the previous planner's
:data:`_CLASSIC_FINALISTS`) get FREE level budgets by the stationarity fixed point below
(:func:`_tune_free`); a local search then moves between mixed radices of the same height (one
fan-out ±1, a neighbour refitted), the winner's budgets take a few exact steps on the exact
objective with the exact discrete variances (:func:`_exact_polish`), and for another
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
variances. The noisy histogram is a Laplace-only candidate.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from treedp._validation import check_int, check_option
from treedp.budget import Neighbours
from treedp.estimation.covariance import (
    DirectTreeCovariance,
    EfficientTreeCovariance,
    PrefixCovariance,
)
from treedp.estimation.efficient import VariancePlan
from treedp.estimation.objectives import (
    max_prefix_variance,
    mean_prefix_variance,
    mean_range_variance,
)
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.baselines import HistogramMechanism
from treedp.mechanisms.registry import REGISTRY
from treedp.mechanisms.tree import level_l2_squared, level_sensitivities
from treedp.noise.families import DiscreteGaussian, DiscreteLaplace
from treedp.privacy.measures import Measure
from treedp.spec import ReleaseSpec
from treedp.tree import TreeShape
from treedp.tree.candidate import PlanCandidate
from treedp.tree.design import (
    best_factorisation,
    budgets_for_branching,
    optimal_height,
    smooth_paddings,
)

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

#: Objectives the planner accepts.
OBJECTIVES = ("cdf_mse", "range_mse", "max_variance")
#: Workload names :func:`plan` accepts besides an explicit list of ranges.
WORKLOADS = ("cdf", "ranges")
#: Shapes whose level budgets are tuned freely (the best screened ones).
_FINALISTS = 6
#: The previous planner's finalists (the best classic shapes by equal and rule budgets), kept.
_CLASSIC_FINALISTS = 4
#: Steps of the budget tuner for a finalist (it stops earlier once it gains < 1e-7).
_TUNE_ITERATIONS = 8
#: The tuner stops when a step improves the objective by less than this, relatively.
_TUNE_TOLERANCE = 1e-6
#: Finalists (the best first) whose budgets are also tuned with the root kept on when it
#: could be switched off (the tuned root budget then tends to 0 under Laplace noise).
_ROOT_ON_FINALISTS = 2
#: Moves of the local search over mixed radices, and neighbours tuned per move.
_LOCAL_STEPS = 8
_LOCAL_TUNED = 2
#: Up to this many bins the best trees' budgets are polished on the objective or workload
#: itself when it is not the CDF (above it the CDF objective guides the tuning alone): the
#: worst prefix costs O(B·h) per evaluation, the others O(#nodes).
_POLISH_LIMITS = {"max_variance": 8192, "other": 65536}
#: How many of the best shapes are polished.
_POLISH_SHAPES = 2
#: Evaluations of the compass search that polishes budgets for the worst prefix.
_COMPASS_EVALS = 120
#: The most ranges an explicit workload may hold.
MAX_WORKLOAD_RANGES = 10**6
#: An explicit workload longer than this guides the search by an evenly spaced subset of this
#: many of its ranges (sorted by ``(lo, hi)``; the workload is public); the best
#: :data:`_RESCORED` configurations are then scored on the whole workload, exactly.
_SEARCH_RANGES = 256
_RESCORED = 3
#: Shapes screened by their exact workload error (explicit workload or ``"ranges"``), the best
#: ones joining the CDF screen's finalists.
_WORKLOAD_FINALISTS = 4
#: How many shapes (the best of the CDF screen, by their rule budgets) that screen covers:
#: one exact workload evaluation costs ~10 ms at B = 1024 (a prefix covariance per shape).
_WORKLOAD_SCREENED = 30


def _extra_candidates(
    n_bins: int,
    budget: float,
    nb: str,
    noise: str,
    objective: str,
    *,
    workload: Workload | None = None,
) -> list[PlanCandidate]:
    """The candidates the registered mechanisms offer themselves
    (:meth:`~treedp.mechanisms.base.Mechanism.plan_candidate`, in registry order). With an
    explicit ``workload`` only those that can score it answer."""
    found: list[PlanCandidate] = []
    for cls in REGISTRY.values():
        candidate = cls.plan_candidate(n_bins, budget, nb, noise, objective, workload=workload)
        if candidate is not None:
            found.append(candidate)
    return found


@dataclass(frozen=True, eq=False)
class Workload:
    """An explicit workload: ranges ``[lo_i, hi_i)`` of bins whose counts the user will ask.

    Its error for a configuration is the exact mean of ``Var(P[hi] - P[lo])`` over the ranges,
    from the configuration's prefix covariance (:mod:`treedp.estimation.covariance`). Build it
    with :meth:`from_ranges`; a quantile's neighbourhood is the prefix ``(0, m)`` or the range
    around its rank.
    """

    n_bins: int
    lo: np.ndarray
    hi: np.ndarray

    @classmethod
    def from_ranges(cls, ranges: object, n_bins: int) -> Workload:
        """Validate a sequence of ``(lo, hi)`` pairs of bin indices, ``0 <= lo < hi <= B``,
        or of ints ``m`` (the prefix ``[0, m)``, ``1 <= m <= B``)."""
        if isinstance(ranges, str | bytes) or not isinstance(ranges, Sequence | np.ndarray):
            raise InvalidTypeError(
                "The 'workload' parameter must be 'cdf', 'ranges' or a sequence of (lo, hi) "
                f"bin-index pairs. Got {type(ranges).__name__} instead."
            )
        pairs = []
        for item in ranges:
            if isinstance(item, int | np.integer) and not isinstance(item, bool):
                pairs.append((0, int(item)))
                continue
            if isinstance(item, str | bytes) or not isinstance(item, Sequence | np.ndarray):
                raise InvalidTypeError(
                    "Every entry of 'workload' must be a (lo, hi) pair of ints or an int."
                )
            if len(item) != 2 or any(
                isinstance(v, bool) or not isinstance(v, int | np.integer) for v in item
            ):
                raise InvalidTypeError(
                    "Every entry of 'workload' must be a (lo, hi) pair of ints or an int."
                )
            pairs.append((int(item[0]), int(item[1])))
        if not 1 <= len(pairs) <= MAX_WORKLOAD_RANGES:
            raise InvalidParameterError(
                f"The 'workload' parameter must hold 1 to {MAX_WORKLOAD_RANGES} ranges."
            )
        arr = np.array(pairs, dtype=np.int64)
        if np.any(arr[:, 0] < 0) or np.any(arr[:, 0] >= arr[:, 1]) or np.any(arr[:, 1] > n_bins):
            raise InvalidParameterError(
                f"Every range of 'workload' must satisfy 0 <= lo < hi <= bins ({n_bins})."
            )
        return cls(n_bins, arr[:, 0].copy(), arr[:, 1].copy())

    def __len__(self) -> int:
        return int(self.lo.size)

    def subset(self, size: int) -> Workload:
        """At most ``size`` of the ranges, evenly spaced in ``(lo, hi)`` order (deterministic:
        the workload is a public input)."""
        if len(self) <= size:
            return self
        order = np.lexsort((self.hi, self.lo))
        pick = order[np.linspace(0, len(self) - 1, size).round().astype(np.int64)]
        return Workload(self.n_bins, self.lo[pick].copy(), self.hi[pick].copy())

    def mean_variance(self, cov: PrefixCovariance) -> float:
        """Mean of ``Var(P[hi] - P[lo])`` under a prefix covariance."""
        lo, hi = self.lo, self.hi
        weights = None
        if lo.size > 4096:  # repeated ranges are scored once, weighted by their count
            keys, weights = np.unique(lo * (self.n_bins + 1) + hi, return_counts=True)
            lo, hi = np.divmod(keys, self.n_bins + 1)
        n = lo.size
        # one call (a covariance's cost is mostly per call): Cov(hi,hi), Cov(lo,lo), Cov(lo,hi)
        c = cov.cov(np.concatenate([hi, lo, lo]), np.concatenate([hi, lo, hi]))
        var = c[:n] + c[n : 2 * n] - 2 * c[2 * n :]
        return float(np.average(var, weights=weights))

    def tree_variance(
        self, shape: TreeShape, level_variance: tuple[float, ...], estimator: str
    ) -> float:
        """The workload's exact mean variance for a tree configuration."""
        if estimator == "direct":
            return self.mean_variance(DirectTreeCovariance(shape, level_variance))
        return self.mean_variance(EfficientTreeCovariance(VariancePlan(shape, level_variance)))

    def independent_variance(self, variance: float, n_public: bool) -> float:
        """For leaves with independent noise of ``variance`` each: a range of ``L`` bins has
        ``L·σ²`` (n unknown) or ``σ² L (B - L)/B`` (n public: the complement helps)."""
        length = (self.hi - self.lo).astype(np.float64)
        if n_public:
            return float(np.mean(variance * length * (self.n_bins - length) / self.n_bins))
        return float(np.mean(variance * length))


def _workload_name(objective: str, workload: Workload | None) -> str:
    if workload is not None:
        return f"{len(workload)} given ranges"
    return {"cdf_mse": "cdf", "range_mse": "ranges"}.get(objective, "cdf (worst prefix)")


@dataclass(frozen=True)
class Plan:
    """The chosen configuration and its exact predicted error.

    Attributes
    ----------
    mechanism : {"tree", "histogram"}
        ``"histogram"`` is the plain noisy histogram (chosen only when it wins).
    branching : tuple of int
        Fan-out per level (``(B,)`` for a histogram).
    level_budgets : tuple of float
        Budget per level, root first (0 for the exact root under ``replace``, and 0 for a
        level switched off: under ``add_remove`` the root, see :attr:`root_off`). The same
        convention as the input: ``release_cdf(branching=plan.branching,
        level_budgets=plan.level_budgets)`` releases this configuration (or pass the plan
        itself, ``release_cdf(..., plan=plan)``).
    padded_leaves : int
        ``Π k_l``; the leaves past ``B`` are always empty.
    objective : str
        What was minimised; ``predicted`` is its value (records²).
    mean_cdf_mse : float
        The chosen plan's mean prefix variance (records²).
    max_cdf_variance : float or None
        Its worst prefix variance (computed when the objective is ``"max_variance"``, or by
        :meth:`worst_prefix_variance`; it costs ``O(B·h)``).
    alternatives : tuple of PlanCandidate
        The configurations compared, best first.
    noise : {"laplace", "gaussian"}
        The noise planned for; ``"gaussian"`` plans have ``epsilon = inf`` (no pure bound),
        their total ``rho`` and ``level_budgets`` in ρ per level.
    rho : float or None
        The zCDP budget of a Gaussian plan.
    workload : str
        What the plan was made for: ``"cdf"``, ``"ranges"``, ``"cdf (worst prefix)"`` or
        ``"<n> given ranges"`` (an explicit workload; ``predicted`` is then its exact mean
        variance).
    """

    bins: int
    epsilon: float
    neighbours: str
    estimator: str
    objective: str
    mechanism: str
    branching: tuple[int, ...]
    level_budgets: tuple[float, ...]
    padded_leaves: int
    predicted: float
    mean_cdf_mse: float
    max_cdf_variance: float | None
    alternatives: tuple[PlanCandidate, ...] = field(repr=False)
    noise: str = "laplace"
    rho: float | None = None
    workload: str = "cdf"

    @property
    def root_off(self) -> bool:
        """Whether the root is switched off (add_remove: n is estimated from the levels)."""
        return (
            self.mechanism == "tree"
            and self.neighbours == "add_remove"
            and bool(self.level_budgets)
            and self.level_budgets[0] == 0
        )

    @property
    def budget(self) -> float:
        """The total the level budgets add up to: ``epsilon``, or ``rho`` for Gaussian."""
        return self.epsilon if self.rho is None else self.rho

    def worst_prefix_variance(self) -> float:
        """The largest prefix variance of the plan (records²), exactly."""
        if self.max_cdf_variance is not None:
            return self.max_cdf_variance
        if self.mechanism == "histogram":
            return self.bins * _histogram_variance(self.bins, self.epsilon)
        shape = TreeShape(self.bins, self.branching)
        variances = _level_variances(self.level_budgets, self.neighbours, self.noise)
        return max_prefix_variance(shape, variances, self.estimator)

    @property
    def cdf_rmse(self) -> float:
        """Typical error of a CDF value (or of a quantile's rank), in records."""
        return math.sqrt(self.mean_cdf_mse)

    def describe(self) -> str:
        """A few lines for people."""
        shape = "×".join(map(str, self.branching)) if self.branching else "root only"
        total = f"epsilon={self.epsilon}" if self.rho is None else f"rho={self.rho:.6g}"
        noise = "discrete Laplace" if self.rho is None else "discrete Gaussian"
        lines = [
            f"plan for B={self.bins}, {total}, {noise} noise ({self.neighbours}, "
            f"{self.estimator} estimator, objective {self.objective}, "
            f"workload {self.workload}):",
            *self._mechanism_lines(shape),
            f"  expected CDF error: ±{self.cdf_rmse:.3g} records (RMSE over prefixes), "
            f"worst prefix ±{math.sqrt(self.worst_prefix_variance()):.3g}",
            f"  expected quantile error: about ±{self.cdf_rmse:.3g} records in rank",
            f"  objective {self.objective} = {self.predicted:.6g} records²",
        ]
        return "\n".join(lines)

    def _mechanism_lines(self, shape: str) -> list[str]:
        if self.mechanism in ("tree", "histogram"):
            return [
                f"  mechanism {self.mechanism}, branching {shape} (padded to {self.padded_leaves})",
                "  level budgets " + ", ".join(f"{e:.4g}" for e in self.level_budgets),
                *self._level_lines(),
            ]
        # a candidate a mechanism offered itself: its own description
        how = next((c.how for c in self.alternatives if c.mechanism == self.mechanism), "")
        return [f"  mechanism {self.mechanism}: {how}"]

    def _level_lines(self) -> list[str]:
        """One line per tree level: its block size and budget, or how it is switched off."""
        if self.mechanism != "tree" or not self.branching:
            return []
        shape = TreeShape(self.bins, self.branching)
        out = []
        for level, budget in enumerate(self.level_budgets):
            span = shape.span(level)
            what = "root" if level == 0 else ("leaves" if level == shape.height else "level")
            head = f"    {what} {level} (blocks of {span} bins): "
            if budget > 0:
                out.append(head + f"budget {budget:.4g}")
            elif self.neighbours == "replace" and level == 0:
                out.append(head + "exact (n is public)")
            else:
                out.append(head + "OFF (not released; estimated from the levels below)")
        return out


def _level_variances(
    budgets: tuple[float, ...], neighbours: str, noise: str = "laplace"
) -> tuple[float, ...]:
    """Exact per-level variances: the tree's sensitivities, the noise family's variance."""
    height = len(budgets) - 1
    if noise == "gaussian":
        sq = level_l2_squared(height, neighbours)  # type: ignore[arg-type]
        return tuple(
            (DiscreteGaussian.for_budget(d, r).variance() if r > 0 else math.inf) if d > 0 else 0.0
            for d, r in zip(sq, budgets, strict=True)
        )
    sens = level_sensitivities(height, neighbours)  # type: ignore[arg-type]
    return tuple(
        (DiscreteLaplace.for_budget(l1, e).variance() if e > 0 else math.inf) if l1 > 0 else 0.0
        for (l1, _), e in zip(sens, budgets, strict=True)
    )


def _smooth_variances(
    budgets: np.ndarray, neighbours: str, noise: str = "laplace"
) -> tuple[float, ...]:
    """The family's smooth variance proxy, for the searches (Gaussian: ``Δ2²/(2ρ_l)``;
    ``inf`` for a level switched off)."""
    weights = _level_weights(len(budgets) - 1, neighbours, noise)
    return _proxy_variances([float(b) for b in budgets], weights, noise == "gaussian")


def _histogram_variance(n_bins: int, epsilon: float) -> float:
    """Per-bin variance of the noisy histogram under ``add_remove``, from the mechanism."""
    return HistogramMechanism(n_bins, epsilon=epsilon).block_variance()[0]


def _budgets_from(weights: np.ndarray, epsilon: float, neighbours: str) -> np.ndarray:
    w = np.asarray(weights, dtype=np.float64).copy()
    if neighbours == "replace":
        w[0] = 0.0
    budgets: np.ndarray = epsilon * w / w.sum()
    return budgets


def _rule_budgets(branching: tuple[int, ...], eps: float, nb: str, power: float) -> np.ndarray:
    """Budgets ``∝ (k_l - 1)^power`` below the root (the root gets their mean)."""
    below = [(k - 1) ** power for k in branching]
    return _budgets_from(np.array([float(np.mean(below or [1.0])), *below]), eps, nb)


def _near_equal(n_bins: int, height: int) -> list[tuple[int, ...]]:
    b = max(2, math.ceil(n_bins ** (1 / height)))
    while b > 2 and (b - 1) ** height >= n_bins:
        b -= 1
    while b**height < n_bins:
        b += 1
    out = [(b,) * height]
    if b - 1 >= 2:
        for smaller in range(height, 0, -1):
            if (b - 1) ** smaller * b ** (height - smaller) >= n_bins:
                out.append((b - 1,) * smaller + (b,) * (height - smaller))
                break
    return out


#: Above this many bins the flat tree is not considered: its error grows like B, while a
#: tree's grows like a power of log B, so it cannot win there.
FLAT_LIMIT = 4096


def _candidate_shapes(n_bins: int, gaussian: bool = False) -> list[tuple[int, ...]]:
    if n_bins < 2:
        return [()]
    shapes: set[tuple[int, ...]] = {(n_bins,)} if n_bins <= FLAT_LIMIT else set()
    max_height = max(1, math.ceil(math.log2(n_bins)))
    # around the best common fan-out (about 17): heights log_64 B .. log_2 B, capped; Gaussian
    # noise favours small fan-outs (L2² grows like the number of levels, not its square), so
    # every height up to log_2 B is tried
    low = max(1, math.floor(math.log(n_bins, 64)))
    heights = range(low, (max_height if gaussian else min(max_height, low + 8)) + 1)
    for height in heights:
        for vec in _near_equal(n_bins, height):
            shapes.add(vec)
            shapes.add(vec[::-1])
    if n_bins <= 10**8:
        for padded in smooth_paddings(n_bins)[:3]:
            for height in range(max(1, low), min(max_height, low + 4) + 1):
                found = best_factorisation(padded, height)
                if found is not None and (height > 1 or n_bins <= FLAT_LIMIT):
                    shapes.add(found[0])
                    shapes.add(found[0][::-1])
    return sorted(s for s in shapes if all(k >= 2 for k in s))


def _mixed_shapes(n_bins: int) -> list[tuple[int, ...]]:
    """Mixed radices: a small fan-out at the top, near-equal fan-outs below it, increasing
    towards the leaves (the shape of the best trees with free budgets and the root off)."""
    if n_bins < 4:
        return []
    max_height = math.ceil(math.log2(n_bins))
    low = max(2, math.floor(math.log(n_bins, 64)))
    out: set[tuple[int, ...]] = set()
    for height in range(low, min(max_height, low + 4) + 1):
        for top in range(2, 9):
            rest = -(-n_bins // top)
            if rest < 2:
                continue
            for vec in _near_equal(rest, height - 1):
                out.add((top, *sorted(vec)))
    return sorted(s for s in out if all(k >= 2 for k in s))


def best_tree(n_bins: int, epsilon: float) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The planner's best tree for ``n_bins`` bins at pure ``epsilon`` (add/remove): its
    branching and level budgets (a :data:`treedp.mechanisms.base.TreePlanner`; DAWA plans its
    bucket tree with it)."""
    chosen = plan(n_bins, epsilon=epsilon)
    best = next(c for c in chosen.alternatives if c.mechanism == "tree")
    return best.branching, best.level_budgets


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
        The number of bins ``B``, or a whole :class:`treedp.ReleaseSpec` (its ``bins``,
        ``epsilon``, ``neighbours`` and ``estimator`` are used; the keywords are then ignored).
    epsilon : float, optional
        The total pure-DP budget (discrete Laplace noise). Exactly one of ``epsilon`` and
        ``privacy`` is given unless ``bins`` is a spec.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation (``replace``: the root is exact and each level has L1
        sensitivity 2).
    n : int, optional
        The public size under ``replace`` (the error does not depend on it).
    noise : {"laplace", "gaussian"}, optional
        The noise; it follows from the budget (``epsilon``: Laplace; ``ZCDP`` / ``ApproxDP``:
        Gaussian) and, if given, must agree with it.
    estimator : {"efficient", "direct"}, default="efficient"
        The estimator whose error is minimised.
    objective : {"cdf_mse", "range_mse", "max_variance"}, default="cdf_mse"
        What to minimise.
    privacy : PureDP, ZCDP or ApproxDP, optional
        A target guarantee instead of ``epsilon`` (see :class:`treedp.ReleaseSpec`): a zCDP or
        (ε, δ) target plans exact discrete Gaussian noise at its ``ρ``.
    workload : {"cdf", "ranges"} or sequence, optional
        The queries to plan for: ``"cdf"`` (all prefixes, the same as
        ``objective="cdf_mse"``), ``"ranges"`` (all ranges, the same as
        ``objective="range_mse"``), or an explicit sequence of ranges ``(lo, hi)`` of bin
        indices (``0 <= lo < hi <= B``; an int ``m`` is the prefix ``[0, m)``, e.g. a
        quantile's neighbourhood). For an explicit list the plan's ``predicted`` is the exact
        mean of ``Var(P[hi] - P[lo])`` over the list (objective ``"workload_mse"``). Only
        public parameters may go in: the ranges must not be chosen from the data.

    Returns
    -------
    Plan

    Examples
    --------
    >>> import treedp
    >>> p = treedp.plan(65536, epsilon=1.0)
    >>> p.mechanism, len(p.branching) >= 2
    ('tree', True)
    """
    if isinstance(bins, ReleaseSpec):
        spec = bins
    else:
        # epsilon=None is rejected by ReleaseSpec's own validation (InvalidTypeError, after
        # 'bins' is checked); the cast only tells the type checker the spec holds a float.
        spec = ReleaseSpec(
            bins=bins,
            epsilon=cast(float, epsilon),
            neighbours=neighbours,
            n=n,
            estimator=estimator,
            privacy=privacy,
        )
    if noise is not None and check_option(noise, "noise", ("laplace", "gaussian")) != spec.noise:
        raise InvalidParameterError(
            f"noise={noise!r} contradicts the budget: epsilon= means Laplace noise, "
            "privacy=ZCDP(...) or ApproxDP(...) means Gaussian noise."
        )
    check_option(objective, "objective", OBJECTIVES)
    explicit: Workload | None = None
    if isinstance(workload, str):
        name = check_option(workload, "workload", WORKLOADS)
        implied = "cdf_mse" if name == "cdf" else "range_mse"
        if objective not in ("cdf_mse", implied):
            raise InvalidParameterError(
                f"workload={workload!r} and objective={objective!r} ask for different errors; "
                "give one of them."
            )
        objective = implied
    elif workload is not None:
        if objective != "cdf_mse":
            raise InvalidParameterError(
                "An explicit 'workload' sets what is minimised; leave 'objective' at its default."
            )
        explicit = Workload.from_ranges(workload, spec.n_bins)
    return _plan(
        spec.n_bins,
        spec.budget,
        spec.neighbours,
        spec.estimator_name,
        objective,
        spec.noise,
        workload=explicit,
    )


def _plan(
    n_bins: int,
    eps: float,
    nb: Neighbours,
    estimator: str,
    objective: str,
    noise: str = "laplace",
    workload: Workload | None = None,
) -> Plan:
    """The search itself, on validated parameters (``eps`` is ρ for Gaussian noise).

    ``workload`` (an explicit list of ranges) replaces ``objective`` for the final scores.
    """
    gaussian = noise == "gaussian"
    power = 0.5 if gaussian else 1 / 3  # the closed-form rule (module docstring)
    # a long explicit workload guides the search by a subset; the best configurations are
    # scored on the whole of it at the end
    search = workload.subset(_SEARCH_RANGES) if workload is not None else None

    def score(shape: TreeShape, variances: tuple[float, ...], final: bool) -> float:
        if search is not None and final:
            return search.tree_variance(shape, variances, estimator)
        if objective == "cdf_mse" or not final:
            return mean_prefix_variance(shape, variances, estimator)
        if objective == "range_mse":
            return mean_range_variance(shape, variances, estimator)
        return max_prefix_variance(shape, variances, estimator)

    root_level = 1 if nb == "add_remove" else 0  # add_remove also noises the root
    # the root can be switched off (n estimated from the levels below) only where the
    # estimator combines levels: the efficient one
    root_off_allowed = nb == "add_remove" and estimator == "efficient"
    # (a flat tree with the root off is the noisy histogram, a candidate of its own)
    screened: list[tuple[float, TreeShape, tuple[float, ...], str]] = []
    classic = set(_candidate_shapes(n_bins, gaussian))
    shapes = sorted({*classic, *_mixed_shapes(n_bins)})
    for branching in shapes:
        shape = TreeShape(n_bins, branching)
        h = shape.height
        if h + root_level == 0:
            continue
        d = _level_weights(h, nb, noise)
        equal = _budgets_from(np.ones(h + 1), eps, nb)
        rule = _rule_budgets(branching, eps, nb, power)
        rule_name = "sqrt(k-1) budgets" if gaussian else "(k-1)^(1/3) budgets"
        trials = [(equal, "equal budgets"), (rule, rule_name)]
        if root_off_allowed and (h >= 2 or (h == 1 and gaussian)):
            off = rule.copy()
            off[0] = 0.0
            trials.append((eps * off / off.sum(), "root off, " + rule_name))
        for trial, how in trials:
            value = score(shape, _proxy_variances(trial.tolist(), d, gaussian), final=False)
            screened.append((value, shape, tuple(trial.tolist()), how))
    screened.sort(key=lambda c: c[0])
    if workload is not None or objective == "range_mse":
        # the CDF proxy does not rank shapes for another workload (short ranges favour small
        # fan-outs, a few long prefixes a few coarse levels): screen every shape's rule
        # budgets by the workload's exact error too; the best join the finalists below
        by_workload: list[tuple[float, tuple[int, ...]]] = []
        for _, shape, trial_budgets, how in screened:
            if len(by_workload) == _WORKLOAD_SCREENED:
                break
            if how == "equal budgets" or how.startswith("root off"):
                continue
            variances = _level_variances_or_none(trial_budgets, nb, noise)
            if variances is not None:
                by_workload.append((score(shape, variances, final=True), shape.branching))
        by_workload.sort(key=lambda c: c[0])
        workload_best = list(dict.fromkeys(b for _, b in by_workload))[:_WORKLOAD_FINALISTS]
    else:
        workload_best = []
    finalists: dict[tuple[int, ...], tuple[TreeShape, list[tuple[tuple[float, ...], str]]]] = {}
    # the best shapes of all, then those the previous planner tuned (the best classic shapes
    # by equal and rule budgets), so that no plan gets worse
    kept = [c[1].branching for c in screened]
    kept = list(dict.fromkeys(kept))[:_FINALISTS]
    by_rules = [c[1].branching for c in screened if not c[3].startswith("root off")]
    classic_best = [b for b in dict.fromkeys(by_rules) if b in classic][:_CLASSIC_FINALISTS]
    kept += [b for b in classic_best if b not in kept]
    added = [b for b in workload_best if b not in kept]
    kept += added
    for _, shape, screened_budgets, how in screened:
        if shape.branching not in kept:
            continue
        finalists.setdefault(shape.branching, (shape, []))
        finalists[shape.branching][1].append((screened_budgets, how))
    # budgets tuned: every finalist's under Laplace; under Gaussian noise (many levels, each
    # evaluation dearer) the best one and the best two classic shapes
    tuned_shapes = set(kept) if not gaussian else {*kept[:1], *classic_best[:2]}
    limit = _POLISH_LIMITS["max_variance" if objective == "max_variance" else "other"]
    polish = (workload is not None or objective != "cdf_mse") and n_bins <= limit

    def proxy(shape: TreeShape) -> Callable[[tuple[float, ...]], float]:
        return lambda variances: score(shape, variances, final=False)

    tuned_label = "KKT-tuned budgets" if gaussian else "tuned budgets"
    results: list[PlanCandidate] = []
    from_added: set[int] = set()  # ids of the candidates of shapes only the workload screen kept
    # (proxy value, shape, budgets) of the best tuned configuration: the local search's start
    best_tuned: tuple[float, TreeShape, tuple[float, ...]] | None = None
    for rank, (shape, options) in enumerate(finalists.values()):
        if shape.branching not in tuned_shapes:
            for final_budgets, how in options:
                exact = score(shape, _level_variances(final_budgets, nb, noise), final=True)
                results.append(PlanCandidate("tree", shape.branching, final_budgets, exact, how))
                if shape.branching in added:
                    from_added.add(id(results[-1]))
            continue
        d = _level_weights(shape.height, nb, noise)
        rule = _rule_budgets(shape.branching, eps, nb, power)
        starts = []
        root_on = rank < _ROOT_ON_FINALISTS or shape.branching in classic_best[:2]
        if not root_off_allowed or shape.height <= 1 or root_on:
            starts.append((rule, tuned_label))
        off_ok = shape.height >= 2 or (shape.height == 1 and gaussian)
        if root_off_allowed and off_ok and (not gaussian or rank == 0):
            off = rule.copy()
            off[0] = 0.0
            starts.append((eps * off / off.sum(), tuned_label + ", root off"))
        for start, how in starts:
            value, tuned = _tune_free(
                start.tolist(), eps, d, gaussian, proxy(shape), _TUNE_ITERATIONS
            )
            options = [*options, (tuned, how)]
            if best_tuned is None or value < best_tuned[0]:
                best_tuned = (value, shape, tuned)
        for final_budgets, how in options:
            exact = score(shape, _level_variances(final_budgets, nb, noise), final=True)
            results.append(PlanCandidate("tree", shape.branching, final_budgets, exact, how))
            if shape.branching in added:
                from_added.add(id(results[-1]))
    if best_tuned is not None:
        _, shape, budgets = _local_search(n_bins, best_tuned, eps, nb, noise, proxy)
        exact = score(shape, _level_variances(budgets, nb, noise), final=True)
        results.append(
            PlanCandidate("tree", shape.branching, budgets, exact, tuned_label + ", local search")
        )
    if polish:
        # the objective or workload is not the CDF the tuning used: polish the budgets of the
        # best shapes so far on it, from their best option (damped: it may be non-smooth)
        results.sort(key=lambda c: c.value)
        # the best shapes as before the workload screen, then the best shape that screen
        # added, so that no plan gets worse
        old = [c for c in results if id(c) not in from_added]
        picked = list(dict.fromkeys(c.branching for c in old))[:_POLISH_SHAPES]
        picked += [
            c.branching for c in results if id(c) in from_added and c.branching not in picked
        ][:1]
        for branching in picked:
            candidate = min((c for c in results if c.branching == branching), key=lambda c: c.value)
            shape = TreeShape(n_bins, candidate.branching)
            d = _level_weights(shape.height, nb, noise)

            def final_proxy(variances: tuple[float, ...], shape: TreeShape = shape) -> float:
                return score(shape, variances, final=True)

            first = list(candidate.level_budgets)
            if objective == "max_variance" and workload is None:  # a max: not smooth
                _, polished = _compass(first, eps, d, gaussian, final_proxy, _COMPASS_EVALS)
            else:
                _, polished = _tune_free(first, eps, d, gaussian, final_proxy, 8, step=0.5)
            polished_variances = _level_variances_or_none(polished, nb, noise)
            if polished_variances is None:  # a level's budget too small for exact noise
                continue
            exact = score(shape, polished_variances, final=True)
            how = tuned_label + ", for the " + ("workload" if workload else objective)
            results.append(PlanCandidate("tree", shape.branching, polished, exact, how))
    if objective == "cdf_mse" or polish:
        # the last step on the exact objective, exact noise variances included (the smooth
        # proxy's optimum is off by about 1e-6 relatively)
        results.sort(key=lambda c: c.value)
        trees = [c for c in results if c.mechanism == "tree" and c.level_budgets][:1]
        for candidate in trees:
            shape = TreeShape(n_bins, candidate.branching)

            def exact_score(budgets: tuple[float, ...], shape: TreeShape = shape) -> float:
                return score(shape, _level_variances(budgets, nb, noise), final=True)

            value, budgets = _exact_polish(candidate, eps, nb, noise, exact_score)
            if value < candidate.value:
                results.append(
                    PlanCandidate(
                        "tree", shape.branching, budgets, value, candidate.how + ", exact"
                    )
                )
    if nb == "add_remove" and not gaussian:
        results.append(_histogram_candidate(n_bins, eps, objective, workload))
    elif nb == "replace" and n_bins > FLAT_LIMIT:
        results.append(_flat_known_total_candidate(n_bins, eps, objective, noise, workload))
    for branching, ref_budgets, how in _references(n_bins, eps, nb, noise):
        shape = TreeShape(n_bins, branching)
        exact = score(shape, _level_variances(ref_budgets, nb, noise), final=True)
        results.append(PlanCandidate("tree", branching, ref_budgets, exact, how))
    if workload is None:
        results.extend(_extra_candidates(n_bins, eps, nb, noise, objective))
    else:
        results.extend(_extra_candidates(n_bins, eps, nb, noise, objective, workload=workload))
    if workload is not None and search is not workload:
        results = _rescore(results, workload, n_bins, eps, nb, noise, estimator)
    results.sort(key=lambda c: c.value)
    # ties (equal up to rounding, e.g. the same flat tree with padding): less padding first
    tied = [c for c in results if c.value <= results[0].value * (1 + 1e-12)]
    leading = min(tied, key=lambda c: math.prod(c.branching))
    results = [leading, *(c for c in results if c is not leading)]
    best = results[0]
    shape = (
        TreeShape(n_bins, best.branching)
        if best.mechanism == "tree"
        else TreeShape(n_bins, (n_bins,) if n_bins >= 2 else ())
    )
    worst: float | None = best.value if objective == "max_variance" and workload is None else None
    if best.mean_cdf_mse is not None:  # a non-tree candidate a mechanism offered itself
        mean_mse = best.mean_cdf_mse
        worst = best.max_cdf_variance if worst is None else worst
    elif best.mechanism == "tree":
        variances = _level_variances(best.level_budgets, nb, noise)
        mean_mse = mean_prefix_variance(shape, variances, estimator)
    else:
        mean_mse = (n_bins + 1) / 2 * _histogram_variance(n_bins, eps)
    return Plan(
        bins=n_bins,
        epsilon=math.inf if gaussian else eps,
        neighbours=nb,
        estimator=estimator,
        objective=objective if workload is None else "workload_mse",
        mechanism=best.mechanism,
        branching=best.branching,
        level_budgets=best.level_budgets,
        padded_leaves=math.prod(best.branching),
        predicted=best.value,
        mean_cdf_mse=mean_mse,
        max_cdf_variance=worst,
        alternatives=tuple(results),
        noise=noise,
        rho=eps if gaussian else None,
        workload=_workload_name(objective, workload),
    )


def _level_variances_or_none(
    budgets: tuple[float, ...], nb: str, noise: str
) -> tuple[float, ...] | None:
    """:func:`_level_variances`, or None where a level's budget is too small for exact noise."""
    try:
        return _level_variances(budgets, nb, noise)
    except InvalidParameterError:
        return None


def _rescore(
    results: list[PlanCandidate],
    workload: Workload,
    n_bins: int,
    eps: float,
    nb: str,
    noise: str,
    estimator: str,
) -> list[PlanCandidate]:
    """The best :data:`_RESCORED` tree configurations (by the search subset's error) and the
    histogram scored exactly on the whole ``workload``; candidates of
    the mechanisms' own candidates were scored on it already. The other trees are dropped: their
    values would not be comparable."""
    rescored: list[PlanCandidate] = []
    trees = sorted((c for c in results if c.mechanism == "tree"), key=lambda c: c.value)
    seen: set[tuple[tuple[int, ...], tuple[float, ...]]] = set()
    for c in trees:
        if len(seen) == _RESCORED:
            break
        if (c.branching, c.level_budgets) in seen:
            continue
        seen.add((c.branching, c.level_budgets))
        shape = TreeShape(n_bins, c.branching)
        value = workload.tree_variance(
            shape, _level_variances(c.level_budgets, nb, noise), estimator
        )
        rescored.append(dataclasses.replace(c, value=value))
    for c in results:
        if c.mechanism == "histogram":
            value = workload.independent_variance(_histogram_variance(n_bins, eps), n_public=False)
            rescored.append(dataclasses.replace(c, value=value))
        elif c.mechanism != "tree":
            rescored.append(c)
    return rescored


def _level_weights(height: int, nb: str, noise: str) -> list[float]:
    """Per level, root first: ``L1²`` (Laplace) or ``L2²`` (Gaussian); 0 for an exact level."""
    if noise == "gaussian":
        return [float(s) for s in level_l2_squared(height, nb)]  # type: ignore[arg-type]
    return [float(l1) ** 2 for l1, _ in level_sensitivities(height, nb)]  # type: ignore[arg-type]


def _proxy_variances(
    budgets: Sequence[float], weights: Sequence[float], gaussian: bool
) -> tuple[float, ...]:
    """The smooth variance of each level for the searches: ``2 L1²/ε_l²`` (Laplace) or
    ``L2²/(2ρ_l)`` (Gaussian); 0 for an exact level, ``inf`` for a level switched off."""
    out = []
    for b, d in zip(budgets, weights, strict=True):
        if d == 0:
            out.append(0.0)
        elif b <= 0:
            out.append(math.inf)
        elif gaussian:
            out.append(d / (2.0 * b))
        else:
            out.append(2.0 * d / (b * b))
    return tuple(out)


def _tune_free(
    start: list[float],
    total: float,
    weights: list[float],
    gaussian: bool,
    objective: Callable[[tuple[float, ...]], float],
    iterations: int,
    step: float = 1.0,
) -> tuple[float, tuple[float, ...]]:
    """Free level budgets by the stationarity condition (module docstring).

    The levels with a positive start budget and a positive sensitivity are tuned (the others
    stay exact or switched off). Each step takes forward differences of the objective in every
    tuned level's variance (relative step 1e-6: the exact closed form is smooth) and sets the
    budgets to ``b_l ∝ (d_l ∂f/∂σ_l²)^p`` (``p = 1/3``, ``d = L1²`` for Laplace; ``p = 1/2``,
    ``d = L2²`` for Gaussian), normalised to ``total``: the fixed point of that map is the KKT
    point. The undamped map converges in a few steps (a damped one, halfway in logs, needed
    three times as many; ``step < 1`` moves only part of the way in logs, for non-smooth
    objectives); the tuner stops when a step gains less than
    :data:`_TUNE_TOLERANCE` relatively and returns the best iterate and its value.
    """
    power = 0.5 if gaussian else 1 / 3
    active = [lv for lv, (b, d) in enumerate(zip(start, weights, strict=True)) if b > 0 and d > 0]
    budgets = [total * b / math.fsum(start) for b in start]
    variances = _proxy_variances(budgets, weights, gaussian)
    current = objective(variances)
    best = (current, tuple(budgets))
    if len(active) < 2:
        return best
    for _ in range(iterations):
        targets = [0.0] * len(budgets)
        for lv in active:
            up = list(variances)
            delta = 1e-6 * variances[lv]
            up[lv] += delta
            grad = (objective(tuple(up)) - current) / delta
            targets[lv] = (weights[lv] * max(grad, 1e-300)) ** power
        norm = math.fsum(targets)
        if not math.isfinite(norm) or norm <= 0:
            break
        if step == 1.0:
            budgets = [total * t / norm for t in targets]
        else:  # geometrically part of the way
            moved = [
                b ** (1 - step) * (total * t / norm) ** step if t > 0 else 0.0
                for b, t in zip(budgets, targets, strict=True)
            ]
            budgets = [total * b / math.fsum(moved) for b in moved]
        variances = _proxy_variances(budgets, weights, gaussian)
        value = objective(variances)
        gain = current - value
        current = value
        if value < best[0]:
            best = (value, tuple(budgets))
        if gain < _TUNE_TOLERANCE * value:
            break
    return best


def _exact_polish(
    candidate: PlanCandidate,
    total: float,
    nb: str,
    noise: str,
    exact_score: Callable[[tuple[float, ...]], float],
    iterations: int = 3,
) -> tuple[float, tuple[float, ...]]:
    """A few stationarity steps on the exact objective: ``b_l ← b_l (-∂f/∂b_l)^p``,
    normalised (``p`` as in :func:`_tune_free`; with the smooth proxy this is the same map),
    derivatives by forward differences (relative step 1e-5; the exact noise scales are
    rationals with denominators up to 2^20, far finer). The best iterate is returned."""
    power = 0.5 if noise == "gaussian" else 1 / 3
    weights = _level_weights(len(candidate.level_budgets) - 1, nb, noise)
    budgets = list(candidate.level_budgets)
    active = [lv for lv, b in enumerate(budgets) if b > 0 and weights[lv] > 0]
    best = (candidate.value, tuple(budgets))
    if len(active) < 2:
        return best
    current = candidate.value
    for _ in range(iterations):
        moved = list(budgets)
        for lv in active:
            up = list(budgets)
            delta = 1e-5 * budgets[lv]
            up[lv] += delta
            slope = (current - exact_score(tuple(up))) / delta
            if not slope > 0:
                return best
            moved[lv] = budgets[lv] * slope**power
        norm = math.fsum(moved)
        budgets = [total * b / norm for b in moved]
        current = exact_score(tuple(budgets))
        if current < best[0]:
            best = (current, tuple(budgets))
        else:
            break
    return best


def _compass(
    start: list[float],
    total: float,
    weights: list[float],
    gaussian: bool,
    objective: Callable[[tuple[float, ...]], float],
    max_evals: int,
) -> tuple[float, tuple[float, ...]]:
    """Derivative-free budgets for a non-smooth objective (the worst prefix): compass search.

    Each trial multiplies one tuned level's budget by ``e^{±s}`` and renormalises to
    ``total``; an improvement is kept, and ``s`` halves after a round without one (from 0.5,
    down to 1/64), within ``max_evals`` evaluations.
    """
    active = [lv for lv, (b, d) in enumerate(zip(start, weights, strict=True)) if b > 0 and d > 0]
    budgets = [total * b / math.fsum(start) for b in start]
    best = objective(_proxy_variances(budgets, weights, gaussian))
    evals, size = 1, 0.5
    while evals < max_evals and size >= 1 / 64 and len(active) >= 2:
        improved = False
        for lv in active:
            for sign in (1.0, -1.0):
                trial = list(budgets)
                trial[lv] *= math.exp(sign * size)
                norm = math.fsum(trial)
                trial = [total * b / norm for b in trial]
                value = objective(_proxy_variances(trial, weights, gaussian))
                evals += 1
                if value < best:
                    best, budgets, improved = value, trial, True
                    break
            if evals >= max_evals:
                break
        if not improved:
            size /= 2
    return best, tuple(budgets)


def _neighbour_shapes(branching: tuple[int, ...], n_bins: int) -> set[tuple[int, ...]]:
    """Shapes one step away: one fan-out up or down by 1, a neighbouring level's or the
    leaves' fan-out refitted to cover ``B`` (``O(h)`` shapes)."""
    h = len(branching)
    out: set[tuple[int, ...]] = set()
    for i in range(h):
        for delta in (-1, 1):
            k = branching[i] + delta
            if k < 2:
                continue
            for j in {i - 1, i + 1, h - 1}:  # a neighbour level or the leaves refit
                if j == i or not 0 <= j < h:
                    continue
                vec = list(branching)
                vec[i] = k
                others = math.prod(vec) // vec[j]
                vec[j] = max(2, -(-n_bins // others))
                candidate = tuple(vec)
                if candidate != branching and math.prod(candidate) <= 2 * n_bins:
                    out.add(candidate)
    return out


def _local_search(
    n_bins: int,
    start: tuple[float, TreeShape, tuple[float, ...]],
    eps: float,
    nb: str,
    noise: str,
    proxy: Callable[[TreeShape], Callable[[tuple[float, ...]], float]],
) -> tuple[float, TreeShape, tuple[float, ...]]:
    """Improve the best tuned tree by moves between mixed radices of the same height.

    Every neighbour (:func:`_neighbour_shapes`) is scored at the current budgets; the best
    :data:`_LOCAL_TUNED` of them get their budgets tuned, and the search moves while that
    improves the objective (at most :data:`_LOCAL_STEPS` moves).
    """
    gaussian = noise == "gaussian"
    best_value, best_shape, best_budgets = start
    seen = {best_shape.branching}
    # deep trees (Gaussian noise: up to log2 B levels) take a couple of moves only
    for _ in range(_LOCAL_STEPS if best_shape.height <= 10 else 2):
        d = _level_weights(best_shape.height, nb, noise)
        variances = _proxy_variances(best_budgets, d, gaussian)
        scored = []
        for branching in _neighbour_shapes(best_shape.branching, n_bins):
            if branching in seen:
                continue
            seen.add(branching)
            shape = TreeShape(n_bins, branching)
            scored.append((proxy(shape)(variances), branching))
        scored.sort()
        improved = False
        for _, branching in scored[:_LOCAL_TUNED]:
            shape = TreeShape(n_bins, branching)
            value, tuned = _tune_free(
                list(best_budgets), eps, d, gaussian, proxy(shape), _TUNE_ITERATIONS // 2
            )
            if value < best_value * (1 - 1e-9):
                best_value, best_shape, best_budgets, improved = value, shape, tuned, True
        if not improved:
            break
    return best_value, best_shape, best_budgets


def _paper_configuration(n_bins: int, eps: float) -> tuple[tuple[int, ...], list[float]]:
    """The paper's recipe: pad to ``B`` or the next power of two, take the height and exact
    factors of eq. (7) (Theorems V.1-V.2), then the budgets of Theorem IV.2."""
    options = []
    for padded in sorted({n_bins, 1 << max(1, (n_bins - 1).bit_length())}):
        if padded < 2:
            continue
        _, factors, cost = optimal_height(padded)
        options.append((padded * cost, factors))
    factors = min(options)[1]
    return factors, budgets_for_branching(factors, eps)


def _references(
    n_bins: int, eps: float, nb: str, noise: str = "laplace"
) -> list[tuple[tuple[int, ...], tuple[float, ...], str]]:
    """Configurations the plan must never lose to: binary tree and the paper's optimum
    (the latter's budgets are Laplace's, so it is a reference for Laplace noise only)."""
    if n_bins < 2:
        return []
    refs = []
    height = max(1, (n_bins - 1).bit_length())
    binary = (2,) * height
    refs.append(
        (
            binary,
            tuple(_budgets_from(np.ones(height + 1), eps, nb).tolist()),
            "binary tree, equal budgets",
        )
    )
    if n_bins <= 2**25 and noise == "laplace":
        factors, below = _paper_configuration(n_bins, eps)
        if nb == "add_remove":  # the paper has an exact root; give the root an equal share
            share = eps / (len(factors) + 1)
            budgets = (share, *[b * (eps - share) / eps for b in below])
        else:
            budgets = (0.0, *below)
        refs.append((tuple(factors), budgets, "paper optimum (Thms IV.2, V.1-V.2)"))
    return refs


def _flat_known_total_candidate(
    n_bins: int,
    eps: float,
    objective: str,
    noise: str = "laplace",
    workload: Workload | None = None,
) -> PlanCandidate:
    """The flat tree with the public total (replace): ``Var(P[m]) = σ² m (B - m) / B``."""
    var = _level_variances((0.0, eps), "replace", noise)[1]
    b = float(n_bins)
    if workload is not None:
        value = workload.independent_variance(var, n_public=True)
    elif objective == "cdf_mse":
        value = var * (b * b - 1) / (6 * b)
    elif objective == "max_variance":
        value = var * (n_bins // 2) * (n_bins - n_bins // 2) / b
    else:
        lengths = np.arange(1, n_bins + 1, dtype=np.float64)
        value = (
            var * float(((b - lengths + 1) * lengths * (b - lengths)).sum()) / b / (b * (b + 1) / 2)
        )
    budgets = (0.0, eps)
    return PlanCandidate("tree", (n_bins,), budgets, value, "flat tree, n public")


def _histogram_candidate(
    n_bins: int, eps: float, objective: str, workload: Workload | None = None
) -> PlanCandidate:
    var = _histogram_variance(n_bins, eps)
    if workload is not None:
        value = workload.independent_variance(var, n_public=False)
    else:
        value = {
            "cdf_mse": (n_bins + 1) / 2 * var,
            "range_mse": (n_bins + 2) / 3 * var,
            "max_variance": n_bins * var,
        }[objective]
    return PlanCandidate("histogram", (n_bins,), (eps,), value, "noisy histogram")


class PlanCache:
    """Plans by public parameters (bins, budget, neighbours, estimator, noise): nothing else.

    :func:`treedp.release_cdf` and :func:`treedp.release_counts` plan each configuration once
    through :data:`DEFAULT_PLAN_CACHE` (the 64 most recently used configurations of this
    process); pass your own ``plan_cache=`` to keep plans elsewhere, or ``plan_cache=False``
    to plan afresh every time. A plan depends on public parameters only, so caching it reveals
    nothing about any data. Safe to share between threads.

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
        found = _plan(n_bins, budget, nb, est, "cdf_mse", noise)  # outside the lock
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


#: The plans :func:`treedp.release_cdf` and :func:`treedp.release_counts` reuse when given
#: neither ``plan`` nor ``plan_cache`` (``plan_cache=False`` turns it off for one call;
#: ``DEFAULT_PLAN_CACHE.clear()`` empties it).
DEFAULT_PLAN_CACHE = PlanCache(maxsize=64)
