"""The paper's results on level-uniform tree design, as tested building blocks.

Rameshwar, Tandon, Sharma, "Optimal tree-based mechanisms for differentially private
approximate CDFs" (arXiv:2409.18573, formulas restored in REFERENCE §1). Their setting:
``replace`` neighbours (n public, the root exact), continuous ``Lap(2/ε_l)`` noise per node
(variance ``8/ε_l²``), the direct (covering-sum) estimator, and errors ``N²·E_2`` summed over
the K leaf prefixes. treedp's planner (:mod:`treedp.planning`) goes further: it optimises the
error *after* efficient estimation with the exact discrete noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache, lru_cache

from treedp.exceptions import InvalidParameterError

__all__ = [
    "best_factorisation",
    "beta_star",
    "branching_for_budgets",
    "budgets_for_branching",
    "equal_budget_cost",
    "figure1",
    "optimal_height",
    "prime_power_exponents",
    "refined_error",
    "smooth_paddings",
    "theorem_iv1_error",
    "theorem_iv3_error",
]


def theorem_iv1_error(
    branching: Sequence[float], budgets: Sequence[float], n: float = 1.0
) -> float:
    """Theorem IV.1: ``E_2 = (4K/N²) Σ_l (k_l - 1)/ε_l²`` with ``K = Π k_l``."""
    k_total = math.prod(branching)
    return 4 * k_total / n**2 * sum((k - 1) / e**2 for k, e in zip(branching, budgets, strict=True))


def budgets_for_branching(branching: Sequence[float], epsilon: float) -> list[float]:
    """Theorem IV.2 (i): the budgets minimising Theorem IV.1, ``ε_l ∝ (k_l - 1)^(1/3)``."""
    weights = [(k - 1) ** (1 / 3) for k in branching]
    return [epsilon * w / sum(weights) for w in weights]


def branching_for_budgets(budgets: Sequence[float], k_total: float) -> list[float]:
    """Theorem IV.2 (ii): real fan-outs minimising Theorem IV.1 for given budgets,
    ``n_i = K^(1/h) ε_i² / (Π ε_j²)^(1/h)``."""
    h = len(budgets)
    geo = math.prod(e**2 for e in budgets) ** (1 / h)
    return [k_total ** (1 / h) * e**2 / geo for e in budgets]


def theorem_iv3_error(k_total: float, height: int, epsilon: float, n: float = 1.0) -> float:
    """Theorem IV.3: ``4K h³ (K^(1/h) - 1)/(N² ε²)``, the optimum for a fixed height."""
    # float(): ``x ** (1/h)`` is typed Any (a negative base would give a complex number).
    return float(4 * k_total * height**3 * (k_total ** (1 / height) - 1) / (n**2 * epsilon**2))


def _f(beta: float) -> float:
    return (beta - 1) / math.log(beta) ** 3


def beta_star() -> tuple[float, int]:
    """Lemma IV.3: the real minimiser of ``(β - 1)/(ln β)³`` (``ln β = 3(β - 1)/β``, about
    16.80) and the best integer branching factor (17)."""
    from scipy.optimize import brentq  # imported on first use: it is slow to import

    real = brentq(lambda b: math.log(b) - 3 * (b - 1) / b, 5.0, 50.0, xtol=1e-12)
    integer = min(range(2, 64), key=_f)
    return real, integer


def equal_budget_cost(branching: Sequence[int]) -> int:
    """``g = h² Σ (k_l - 1)``: Theorem IV.1 with equal budgets, in units of ``4K/(N² ε²)``."""
    return len(branching) ** 2 * sum(k - 1 for k in branching)


def prime_power_exponents(t: int, height: int) -> list[int]:
    """Theorem V.1: for ``K = p^t`` and ``height`` levels, the exponents ``t_i`` minimising
    ``Σ p^{t_i}``: ``τ`` on the first ``h - ρ`` levels and ``τ + 1`` on the last ``ρ``
    (``t = τh + ρ``)."""
    if not 1 <= height <= t:
        raise InvalidParameterError(f"'height' must be in [1, {t}]. Got {height!r} instead.")
    tau, rho = divmod(t, height)
    return [tau] * (height - rho) + [tau + 1] * rho


@lru_cache(maxsize=256)
def _divisors(k_total: int) -> tuple[int, ...]:
    small = [d for d in range(1, math.isqrt(k_total) + 1) if k_total % d == 0]
    return tuple(sorted(set(small + [k_total // d for d in small])))


def best_factorisation(k_total: int, height: int) -> tuple[tuple[int, ...], int] | None:
    """The exact factorisation of ``K`` into ``height`` factors ``>= 2`` minimising
    :func:`equal_budget_cost` (dynamic programming over divisors), or None if none exists."""
    if _SPLITS_MEMO_SIZE[0] > _SPLITS_MEMO_LIMIT:  # bound the memory of a long process
        _best_split.cache_clear()
        _DIVISORS_OF.clear()
        _SPLITS_MEMO_SIZE[0] = 0
    _DIVISORS_OF.setdefault(k_total, _divisors(k_total))
    result = _best_split(k_total, height)
    if result is None:
        return None
    return result[1], height**2 * result[0]


#: Divisors of every number the factorisation search has met (each found by filtering the
#: divisors of a multiple, not by trial division).
_DIVISORS_OF: dict[int, tuple[int, ...]] = {}
_SPLITS_MEMO_SIZE = [0]
_SPLITS_MEMO_LIMIT = 200_000


@cache
def _best_split(rest: int, levels: int) -> tuple[int, tuple[int, ...]] | None:
    """The cheapest ``(Σ (k - 1), sorted factors)`` of ``rest`` into ``levels`` factors.

    It depends on ``rest`` and ``levels`` only, so it is shared by every ``K``, height and
    call (it used to be rebuilt per call). Divisors are tried in increasing order and only a
    strictly cheaper one replaces the best, as before: the same factorisation wins ties.
    """
    _SPLITS_MEMO_SIZE[0] += 1
    if levels == 1:
        return (rest - 1, (rest,)) if rest >= 2 else None
    divisors = _DIVISORS_OF[rest]
    out = None
    for d in divisors:
        if d < 2:
            continue
        sub_rest = rest // d
        if sub_rest not in _DIVISORS_OF:
            _DIVISORS_OF[sub_rest] = tuple(x for x in divisors if sub_rest % x == 0)
        sub = _best_split(sub_rest, levels - 1)
        if sub is not None and (out is None or sub[0] + d - 1 < out[0]):
            out = (sub[0] + d - 1, tuple(sorted((d, *sub[1]))))
    return out


def optimal_height(k_total: int) -> tuple[int, tuple[int, ...], int]:
    """Eq. (7) / Theorem V.2: the height with the cheapest exact factorisation of ``K`` under
    equal budgets, its factors and cost ``g``."""
    best = None
    for height in range(1, max(1, int(math.log2(k_total))) + 1):
        found = best_factorisation(k_total, height)
        if found is not None and (best is None or found[1] < best[2]):
            best = (height, found[0], found[1])
    assert best is not None
    return best


def refined_error(beta: int, height: int, epsilon: float, n: float = 1.0) -> float:
    """Lemma IV.4: the error of the two-sided refinement with equal fan-out and budgets."""
    eps_level = epsilon / height
    k_total = beta**height
    inner = sum(1 / sum(beta ** (-j) for j in range(height - i + 1)) for i in range(1, height + 1))
    # float(): ``int ** -j`` is typed Any (it is a float for negative exponents).
    return float(2 * k_total / n**2 * (beta - 1) / eps_level**2 * inner)


def figure1(
    k_total: int = 256, epsilons: Sequence[float] = (0.1, 0.5, 1.0, 2.0)
) -> list[dict[str, float]]:
    """The curves of the paper's Figure 1 (``N²·E_2``), plus the 4-ary and refined columns."""
    return [
        {
            "epsilon": eps,
            "range": 2 * (k_total - 1) ** 3 / eps**2,
            "histogram": 4 * k_total * (k_total - 1) / eps**2,
            "binary": theorem_iv1_error([2] * 8, [eps / 8] * 8),
            "4-ary": theorem_iv1_error([4] * 4, [eps / 4] * 4),
            "16-ary": theorem_iv1_error([16] * 2, [eps / 2] * 2),
            "binary refined": refined_error(2, 8, eps),
            "16-ary refined": refined_error(16, 2, eps),
        }
        for eps in epsilons
    ]


def smooth_paddings(n_bins: int, limit: int = 64) -> list[int]:
    """Candidate padded sizes ``K̄ >= B``: ``B`` and the smallest products of small primes
    above it (powers of 2, 3, 5, 7 and their mixtures), up to ``2B``."""
    smooth = {1}
    for p in (2, 3, 5, 7):
        powers = [p**e for e in range((2 * n_bins).bit_length())]
        smooth = {v * q for v in smooth for q in powers if v * q <= 2 * n_bins}
    return sorted({n_bins} | {v for v in smooth if v >= n_bins})[:limit]
