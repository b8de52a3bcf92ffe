"""The paper's design results as tested building blocks (REFERENCE §1)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp.tree import design
from treedp.tree.design import (
    best_factorisation,
    beta_star,
    branching_for_budgets,
    budgets_for_branching,
    equal_budget_cost,
    figure1,
    optimal_height,
    prime_power_exponents,
    refined_error,
    smooth_paddings,
    theorem_iv1_error,
    theorem_iv3_error,
)


def test_theorem_iv2_budgets_minimise_theorem_iv1() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for branching in ([2] * 8, [4, 4, 16], [8, 32], [3, 5, 7, 11]):
        best = budgets_for_branching(branching, 1.0)
        assert sum(best) == pytest.approx(1.0)
        value = theorem_iv1_error(branching, best)
        closed = 4 * math.prod(branching) * sum((k - 1) ** (1 / 3) for k in branching) ** 3
        assert value == pytest.approx(closed)  # [D] the optimal error (4K/ε²)(Σ(k-1)^(1/3))³
        for _ in range(200):
            other = np.array(best) * np.exp(rng.normal(0, 0.2, len(best)))
            other /= other.sum()
            assert theorem_iv1_error(branching, other) >= value * (1 - 1e-12)


def test_theorem_iv2_branching_minimises_for_given_budgets() -> None:
    rng = np.random.default_rng(TEST_SEED)
    budgets, k_total = [0.2, 0.3, 0.5], 4096.0
    best = branching_for_budgets(budgets, k_total)
    assert math.prod(best) == pytest.approx(k_total)

    # the surrogate Σ n_i/ε_i² (Lemma IV.2) is what the KKT conditions optimise
    def surrogate(n: np.ndarray) -> float:
        return float(sum(k / e**2 for k, e in zip(n, budgets, strict=True)))

    for _ in range(200):
        shift = rng.normal(0, 0.3, 3)
        other = np.array(best) * np.exp(shift - shift.mean())  # keeps the product K
        assert surrogate(other) >= surrogate(np.array(best)) * (1 - 1e-12)


def test_lemma_iv3_best_common_branching() -> None:
    real, integer = beta_star()
    assert real == pytest.approx(16.8010, abs=1e-4)
    assert integer == 17
    f = {b: (b - 1) / math.log(b) ** 3 for b in (2, 4, 8, 15, 16, 17, 18, 20)}
    assert f[17] < f[16] < f[15] and f[17] < f[18] < f[20]
    assert f[17] == pytest.approx(0.703529, abs=1e-6) and f[2] == pytest.approx(3.002781, 1e-6)


def test_theorem_iv3_is_the_fixed_height_optimum() -> None:
    k_total, height = 4096, 3
    value = theorem_iv3_error(k_total, height, 1.0)
    assert value == pytest.approx(theorem_iv1_error([16] * 3, [1 / 3] * 3))


@pytest.mark.parametrize(("p", "t"), [(2, 11), (3, 7), (2, 12), (5, 5)])
def test_theorem_v1_prime_powers_by_brute_force(p: int, t: int) -> None:
    for height in range(1, t + 1):
        exps = prime_power_exponents(t, height)
        assert sum(exps) == t and exps == sorted(exps)
        best = (
            min(
                sum(p**e for e in combo)
                for combo in itertools.product(range(1, t + 1), repeat=height)
                if sum(combo) == t
            )
            if height <= 4
            else None
        )
        if best is not None:
            assert sum(p**e for e in exps) == best


@pytest.mark.parametrize(
    ("k_total", "factors", "cost"),
    [
        (64, (8, 8), 56),
        (256, (16, 16), 120),
        (1000, (10, 10, 10), 243),
        (1024, (32, 32), 248),
        (2048, (8, 16, 16), 333),
        (4096, (16, 16, 16), 405),
        (65536, (16, 16, 16, 16), 960),
        (2**20, (16,) * 5, 1875),
        (997, (997,), 996),
    ],
)
def test_best_factorisations_match_reference(k_total: int, factors: tuple, cost: int) -> None:
    """REFERENCE §1.9's table of exact factorisations under equal budgets (eq. 7)."""
    height, got, g = optimal_height(k_total)
    assert (got, g) == (factors, cost) and height == len(factors)
    assert equal_budget_cost(got) == g


def test_corollaries_v1_v2_and_lemma_v2() -> None:
    assert optimal_height(17**3)[0] == 3  # p >= 17: one prime per level
    assert optimal_height(19**2)[0] == 2
    for k_total in (4, 8, 9, 16):  # K <= 16: flat
        assert optimal_height(k_total)[0] == 1
    assert optimal_height(2**20)[0] in (4, 5)  # Corollary V.2
    # Lemma V.2: unequal fan-outs beat every equal one by 3x for K = 2^11
    assert best_factorisation(2048, 3) == ((8, 16, 16), 333)
    assert equal_budget_cost((2,) * 11) / 3 > 333
    assert best_factorisation(7, 2) is None


def test_figure1_values() -> None:
    """REFERENCE §1.8 (K = 256): every column at ε = 0.1, 0.5, 1, 2."""
    expected = {
        0.1: (3.316e9, 2.611e7, 5.243e7, 1.966e7, 1.229e7, 1.573e7, 5.963e6),
        0.5: (1.327e8, 1.044e6, 2.097e6, 7.864e5, 4.915e5, 6.293e5, 2.385e5),
        1.0: (3.316e7, 2.611e5, 5.243e5, 1.966e5, 1.229e5, 1.573e5, 5.963e4),
        2.0: (8.291e6, 6.528e4, 1.311e5, 4.915e4, 3.072e4, 3.933e4, 1.491e4),
    }
    for row in figure1():
        values = tuple(
            row[k]
            for k in (
                "range",
                "histogram",
                "binary",
                "4-ary",
                "16-ary",
                "binary refined",
                "16-ary refined",
            )
        )
        for got, want in zip(values, expected[row["epsilon"]], strict=True):
            assert got == pytest.approx(want, rel=6e-4)
    assert refined_error(2, 8, 1.0) < theorem_iv1_error([2] * 8, [1 / 8] * 8)


def test_smooth_paddings() -> None:
    pads = smooth_paddings(997)
    assert pads[:4] == [997, 1000, 1008, 1024]
    assert all(997 <= p <= 2 * 997 for p in pads)


def _all_factorisations(k_total: int, height: int, low: int = 2) -> list[tuple[int, ...]]:
    if height == 1:
        return [(k_total,)] if k_total >= low else []
    out = []
    for d in range(low, k_total + 1):
        if k_total % d == 0:
            out.extend((d, *rest) for rest in _all_factorisations(k_total // d, height - 1, d))
    return out


def test_best_factorisation_is_the_cheapest_whatever_was_asked_before() -> None:
    # the search memoises across calls: ask in two orders, compare with brute force
    cases = [(k, h) for k in range(2, 130) for h in range(1, 5)]
    for order in (cases, cases[::-1]):
        design._best_split.cache_clear()
        design._DIVISORS_OF.clear()
        for k_total, height in order:
            found = best_factorisation(k_total, height)
            options = _all_factorisations(k_total, height)
            if not options:
                assert found is None
                continue
            assert found is not None
            assert found[1] == min(height**2 * sum(f - 1 for f in o) for o in options)
            assert tuple(sorted(found[0])) in options
