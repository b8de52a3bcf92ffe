"""The planner: choose fan-outs, height, padding and level budgets to minimise the error.

The search starts from the paper's results (:mod:`treedp.tree.design`: fan-out about 17,
budgets proportional to ``(k - 1)^(1/3)``, exact factorisations of a padded ``B``) and goes
further: every candidate is scored by the *exact* error of the estimator actually used — the
efficient (BLUE) estimate by default, whose optimum differs from the paper's direct one — with
the exact discrete Laplace variances, for one of three objectives:

* ``"cdf_mse"`` — mean over the ``B`` prefixes of the CDF's mean squared error (records²);
* ``"range_mse"`` — mean over all ``B(B+1)/2`` ranges ``[a, b)``;
* ``"max_variance"`` — the worst prefix.

Candidates: the flat tree, near-equal fan-outs for every height (both orders), exact
factorisations of ``B`` and of nearby smooth sizes (padding), and — under ``add_remove`` —
the plain noisy histogram. For the best few, level budgets are tuned by a small
Nelder–Mead search over a three-parameter family (fan-out power, depth tilt, root share)
and compared with equal and ``(k - 1)^(1/3)`` budgets. Only public parameters are used.

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
the stationary point is the minimum). The planner starts from ``ρ_l ∝ Δ_l sqrt(k_l - 1)``
and iterates ``ρ_l ∝ Δ_l sqrt(∂f/∂σ_l²)`` (derivatives by central differences of the exact
closed-form objective, damped), then keeps the best of equal, rule and iterated budgets by
the exact objective with the exact discrete Gaussian variances. The noisy histogram is a
Laplace-only candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from treedp._validation import check_option
from treedp.budget import Neighbours
from treedp.estimation.objectives import (
    max_prefix_variance,
    mean_prefix_variance,
    mean_range_variance,
)
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.baselines import HistogramMechanism
from treedp.mechanisms.tree import level_l2_squared, level_sensitivities
from treedp.noise.families import DiscreteGaussian, DiscreteLaplace
from treedp.privacy.measures import Measure
from treedp.spec import ReleaseSpec
from treedp.tree import TreeShape
from treedp.tree.design import (
    best_factorisation,
    budgets_for_branching,
    optimal_height,
    smooth_paddings,
)

__all__ = ["OBJECTIVES", "Plan", "PlanCache", "PlanCandidate", "plan"]

#: Objectives the planner accepts.
OBJECTIVES = ("cdf_mse", "range_mse", "max_variance")
_FINALISTS = 4
#: Gaussian budgets are iterated to the stationarity condition for the best screened shapes.
_KKT_FINALISTS = 2

#: THE hook for non-tree mechanisms. Each entry names (``"module:function"``, imported only
#: when planning) a callable ``f(n_bins, budget, neighbours, noise, objective)`` returning a
#: :class:`PlanCandidate` (its ``value`` the exact objective, ``mean_cdf_mse`` and
#: ``max_cdf_variance`` set) or ``None`` where the mechanism does not apply. Its
#: ``budget`` is ε for Laplace noise and ρ for Gaussian noise. Candidates are compared with
#: the trees by ``value``; the mechanism of the winner must be known to
#: :mod:`treedp.mechanisms.factory`.
EXTRA_CANDIDATES: list[str] = ["treedp.mechanisms.sqrt_factorization:plan_candidate"]


def _extra_candidates(
    n_bins: int, budget: float, nb: str, noise: str, objective: str
) -> list[PlanCandidate]:
    import importlib

    found: list[PlanCandidate] = []
    for entry in EXTRA_CANDIDATES:
        module, _, name = entry.partition(":")
        make = getattr(importlib.import_module(module), name)
        candidate = make(n_bins, budget, nb, noise, objective)
        if candidate is not None:
            found.append(candidate)
    return found


@dataclass(frozen=True)
class PlanCandidate:
    """One configuration the planner scored."""

    mechanism: str
    branching: tuple[int, ...]
    level_budgets: tuple[float, ...]
    value: float
    how: str
    #: For candidates of :data:`EXTRA_CANDIDATES` (non-tree mechanisms): their exact mean and
    #: worst prefix variance (records²), which the planner cannot derive from a tree shape.
    mean_cdf_mse: float | None = None
    max_cdf_variance: float | None = None


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
        Budget per level, root first (0 for the exact root under ``replace``). The same
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
            f"{self.estimator} estimator, objective {self.objective}):",
            f"  mechanism {self.mechanism}, branching {shape} (padded to {self.padded_leaves})",
            "  level budgets " + ", ".join(f"{e:.4g}" for e in self.level_budgets),
            f"  expected CDF error: ±{self.cdf_rmse:.3g} records (RMSE over prefixes), "
            f"worst prefix ±{math.sqrt(self.worst_prefix_variance()):.3g}",
            f"  expected quantile error: about ±{self.cdf_rmse:.3g} records in rank",
            f"  objective {self.objective} = {self.predicted:.6g} records²",
        ]
        return "\n".join(lines)


def _level_variances(
    budgets: tuple[float, ...], neighbours: str, noise: str = "laplace"
) -> tuple[float, ...]:
    """Exact per-level variances: the tree's sensitivities, the noise family's variance."""
    height = len(budgets) - 1
    if noise == "gaussian":
        sq = level_l2_squared(height, neighbours)  # type: ignore[arg-type]
        return tuple(
            DiscreteGaussian.for_budget(d, r).variance() if d > 0 else 0.0
            for d, r in zip(sq, budgets, strict=True)
        )
    sens = level_sensitivities(height, neighbours)  # type: ignore[arg-type]
    return tuple(
        DiscreteLaplace.for_budget(l1, e).variance() if l1 > 0 else 0.0
        for (l1, _), e in zip(sens, budgets, strict=True)
    )


def _smooth_variances(
    budgets: np.ndarray, neighbours: str, noise: str = "laplace"
) -> tuple[float, ...]:
    """The family's smooth variance proxy, for the searches (Gaussian: ``Δ2²/(2ρ_l)``)."""
    height = len(budgets) - 1
    if noise == "gaussian":
        sq = np.array(level_l2_squared(height, neighbours), dtype=np.float64)  # type: ignore[arg-type]
        return tuple(DiscreteGaussian.approx_variance(sq, budgets).tolist())
    sens = level_sensitivities(height, neighbours)  # type: ignore[arg-type]
    l1 = np.array([s for s, _ in sens], dtype=np.float64)
    return tuple(DiscreteLaplace.approx_variance(l1, budgets).tolist())


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


def _family(shape: TreeShape, params: np.ndarray, neighbours: str) -> np.ndarray:
    """Budget weights: ``(k_l - 1)^a · t^l`` below the root, ``exp(r)`` times the mean at it."""
    a, log_t, r = np.clip(params, [-1.0, -1.5, -4.0], [2.0, 1.5, 4.0])  # keep budgets sane
    ks = np.array(shape.branching, dtype=np.float64)
    below = (ks - 1) ** a * np.exp(log_t * np.arange(1, shape.height + 1))
    scale = float(below.mean()) if below.size else 1.0
    root = math.exp(r) * scale if neighbours == "add_remove" else 0.0
    return np.concatenate([[root], below])


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
    return _plan(
        spec.n_bins, spec.budget, spec.neighbours, spec.estimator_name, objective, spec.noise
    )


def _plan(
    n_bins: int,
    eps: float,
    nb: Neighbours,
    estimator: str,
    objective: str,
    noise: str = "laplace",
) -> Plan:
    """The search itself, on validated parameters (``eps`` is ρ for Gaussian noise)."""
    gaussian = noise == "gaussian"
    power = 0.5 if gaussian else 1 / 3  # the closed-form rule (module docstring)

    def score(shape: TreeShape, variances: tuple[float, ...], final: bool) -> float:
        if objective == "cdf_mse" or not final:
            return mean_prefix_variance(shape, variances, estimator)
        if objective == "range_mse":
            return mean_range_variance(shape, variances, estimator)
        return max_prefix_variance(shape, variances, estimator)

    root_level = 1 if nb == "add_remove" else 0  # add_remove also noises the root
    screened: list[tuple[float, TreeShape, tuple[float, ...], str]] = []
    for branching in _candidate_shapes(n_bins, gaussian):
        shape = TreeShape(n_bins, branching)
        h = shape.height
        if h + root_level == 0:
            continue
        equal = _budgets_from(np.ones(h + 1), eps, nb)
        rule = _rule_budgets(branching, eps, nb, power)
        rule_name = "sqrt(k-1) budgets" if gaussian else "(k-1)^(1/3) budgets"
        for budgets, how in ((equal, "equal budgets"), (rule, rule_name)):
            value = score(shape, _smooth_variances(budgets, nb, noise), final=False)
            screened.append((value, shape, tuple(budgets.tolist()), how))
    screened.sort(key=lambda c: c[0])
    finalists: dict[tuple[int, ...], tuple[TreeShape, list[tuple[tuple[float, ...], str]]]] = {}
    for _, shape, screened_budgets, how in screened:
        if shape.branching not in finalists:
            if len(finalists) == _FINALISTS:
                continue
            finalists[shape.branching] = (shape, [])
        finalists[shape.branching][1].append((screened_budgets, how))
    results: list[PlanCandidate] = []
    for rank, (shape, options) in enumerate(finalists.values()):
        if gaussian and rank >= _KKT_FINALISTS:
            pass  # its equal and rule budgets are still scored exactly below
        elif gaussian:
            start = tuple(_rule_budgets(shape.branching, eps, nb, power).tolist())
            tuned = _tune_kkt(shape, eps, nb, start, lambda s, v: score(s, v, final=False))
            options = [*options, (tuned, "KKT-tuned budgets")]
        else:
            tuned = _tune(shape, eps, nb, lambda s, v: score(s, v, final=False))
            options = [*options, (tuned, "tuned budgets")]
        for final_budgets, how in options:
            exact = score(shape, _level_variances(final_budgets, nb, noise), final=True)
            results.append(PlanCandidate("tree", shape.branching, final_budgets, exact, how))
    if nb == "add_remove" and not gaussian:
        results.append(_histogram_candidate(n_bins, eps, objective))
    elif nb == "replace" and n_bins > FLAT_LIMIT:
        results.append(_flat_known_total_candidate(n_bins, eps, objective, noise))
    for branching, ref_budgets, how in _references(n_bins, eps, nb, noise):
        shape = TreeShape(n_bins, branching)
        exact = score(shape, _level_variances(ref_budgets, nb, noise), final=True)
        results.append(PlanCandidate("tree", branching, ref_budgets, exact, how))
    results.extend(_extra_candidates(n_bins, eps, nb, noise, objective))
    results.sort(key=lambda c: c.value)
    best = results[0]
    shape = (
        TreeShape(n_bins, best.branching)
        if best.mechanism == "tree"
        else TreeShape(n_bins, (n_bins,) if n_bins >= 2 else ())
    )
    worst: float | None = best.value if objective == "max_variance" else None
    if best.mean_cdf_mse is not None:  # a non-tree candidate of EXTRA_CANDIDATES
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
        objective=objective,
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
    )


def _tune(
    shape: TreeShape, eps: float, nb: str, score: Callable[[TreeShape, tuple[float, ...]], float]
) -> tuple[float, ...]:
    def cost(params: np.ndarray) -> float:
        budgets = _budgets_from(_family(shape, params, nb), eps, nb)
        return score(shape, _smooth_variances(budgets, nb))

    start = np.array([1 / 3, 0.0, 0.0])
    from scipy.optimize import minimize  # imported on first use: it is slow to import

    res = minimize(
        cost, start, method="Nelder-Mead", options={"xatol": 1e-3, "fatol": 1e-6, "maxfev": 120}
    )
    return tuple(_budgets_from(_family(shape, res.x, nb), eps, nb).tolist())


def _tune_kkt(
    shape: TreeShape,
    rho: float,
    nb: str,
    start: tuple[float, ...],
    score: Callable[[TreeShape, tuple[float, ...]], float],
    iterations: int = 6,
) -> tuple[float, ...]:
    """Gaussian level budgets by the stationarity condition ``ρ_l ∝ Δ_l sqrt(∂f/∂σ_l²)``.

    Each step takes forward differences of the objective in every noised level's variance
    (relative step 1e-5) and moves the budgets halfway (geometrically) to the condition's
    right-hand side, normalised to ``ρ``; the best iterate by the objective is returned.
    """
    height = shape.height
    sq = np.array(level_l2_squared(height, nb), dtype=np.float64)  # type: ignore[arg-type]
    noised = sq > 0
    budgets = np.asarray(start, dtype=np.float64)

    def objective(b: np.ndarray) -> float:
        return score(shape, _smooth_variances(b, nb, "gaussian"))

    best = (objective(budgets), budgets)
    current = best[0]
    for _ in range(iterations):
        var = np.array(_smooth_variances(budgets, nb, "gaussian"))
        grad = np.zeros(height + 1)
        for lv in np.flatnonzero(noised):
            step = 1e-5 * var[lv]
            up = var.copy()
            up[lv] += step
            grad[lv] = (score(shape, tuple(up)) - current) / step
        target = np.where(noised, np.sqrt(sq * np.maximum(grad, 1e-300)), 0.0)
        if not np.all(np.isfinite(target)) or target.sum() <= 0:
            break
        target = rho * target / target.sum()
        budgets = np.where(noised, np.sqrt(budgets * target), 0.0)
        budgets = rho * budgets / budgets.sum()
        value = current = objective(budgets)
        if value < best[0]:
            best = (value, budgets)
    return tuple(_budgets_from(best[1], rho, nb).tolist())


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
    n_bins: int, eps: float, objective: str, noise: str = "laplace"
) -> PlanCandidate:
    """The flat tree with the public total (replace): ``Var(P[m]) = σ² m (B - m) / B``."""
    var = _level_variances((0.0, eps), "replace", noise)[1]
    b = float(n_bins)
    if objective == "cdf_mse":
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


def _histogram_candidate(n_bins: int, eps: float, objective: str) -> PlanCandidate:
    var = _histogram_variance(n_bins, eps)
    value = {
        "cdf_mse": (n_bins + 1) / 2 * var,
        "range_mse": (n_bins + 2) / 3 * var,
        "max_variance": n_bins * var,
    }[objective]
    return PlanCandidate("histogram", (n_bins,), (eps,), value, "noisy histogram")


class PlanCache:
    """Plans by public parameters, owned by the caller (nothing is cached behind its back).

    Pass one to :func:`treedp.release_cdf` / :func:`treedp.release_counts` (``plan_cache=``)
    to plan each configuration once across many releases.

    Examples
    --------
    >>> import treedp
    >>> cache = treedp.PlanCache()
    >>> cache.get(treedp.ReleaseSpec(bins=64, epsilon=1.0)) is cache.get(
    ...     treedp.ReleaseSpec(bins=64, epsilon=1.0))
    True
    """

    def __init__(self) -> None:
        self._plans: dict[tuple[int, float, Neighbours, str, str], Plan] = {}

    def get(self, spec: ReleaseSpec) -> Plan:
        """The plan for ``spec`` (computed on first use)."""
        key = (spec.n_bins, spec.budget, spec.neighbours, spec.estimator_name, spec.noise)
        found = self._plans.get(key)
        if found is None:
            n_bins, budget, nb, est, noise = key
            found = _plan(n_bins, budget, nb, est, "cdf_mse", noise)
            self._plans[key] = found
        return found

    def __len__(self) -> int:
        return len(self._plans)
