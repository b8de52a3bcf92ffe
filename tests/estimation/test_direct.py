"""The direct estimator: exact variance algebra and Monte-Carlo checks of Theorem IV.1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.estimation import tree_prefix
from treedp.mechanisms import TreeMechanism
from treedp.noise import InsecureSeededSource
from treedp.tree import shape_for


def theorem_iv1(branching: list[int], level_variance: tuple[float, ...]) -> float:
    """Σ_{m=1..K} Var(P[m]) for K = Π k_l, replace neighbours (root exact).

    Theorem IV.1 of [RTS24] with the per-node variance ``v_l`` in place of ``8/ε_l²``:
    ``N²·E_2 = (K/2) Σ_l (k_l - 1) v_l``.
    """
    k_total = math.prod(branching)
    return (
        k_total / 2 * sum((k - 1) * v for k, v in zip(branching, level_variance[1:], strict=True))
    )


CASES = [
    ([4, 4, 4], [0.2, 0.3, 0.5]),
    ([2, 2, 2, 2, 2], None),
    ([8, 16], [0.4, 0.6]),
    ([3, 5], [0.5, 0.5]),
]


@pytest.mark.parametrize(("branching", "budgets"), CASES)
def test_total_variance_is_theorem_iv1_exactly(branching: list[int], budgets: list | None) -> None:
    shape = shape_for(math.prod(branching), branching)
    mech = TreeMechanism(shape, epsilon=1.0, neighbours="replace", n=0, level_budgets=budgets)
    zero = [np.zeros(s, dtype=np.int64) for s in shape.level_sizes()]
    _, variance = tree_prefix(shape, zero, mech.block_variance())
    assert variance[1:].sum() == pytest.approx(theorem_iv1(branching, mech.block_variance()))


def test_theorem_iv1_closed_form_with_continuous_laplace() -> None:
    """With Lap(2/ε_l) noise (variance 8/ε_l²) the sum is (4K/N²) Σ (k_l - 1)/ε_l² · N²."""
    branching, eps = [16, 16], [0.5, 0.5]
    variances = (0.0, *(8 / e**2 for e in eps))
    assert theorem_iv1(branching, variances) == pytest.approx(
        4 * 256 * sum((k - 1) / e**2 for k, e in zip(branching, eps, strict=True))
    )


@pytest.mark.slow
@pytest.mark.parametrize(("branching", "budgets"), CASES[:3])
@pytest.mark.parametrize("neighbours", ["replace", "add_remove"])
def test_monte_carlo_unbiased_with_exact_variance(
    branching: list[int], budgets: list | None, neighbours: str
) -> None:
    """Unbiasedness per prefix and E[Σ err²] = Theorem IV.1, each at alpha = 1e-6."""
    trials = 4000
    k_total = math.prod(branching)
    shape = shape_for(k_total, branching)
    counts = np.random.default_rng(TEST_SEED).poisson(3, size=k_total)
    n = int(counts.sum())
    if neighbours == "add_remove" and budgets is not None:
        budgets = [0.1, *[b * 0.9 for b in budgets]]
    mech = TreeMechanism(
        shape,
        epsilon=1.0,
        neighbours=neighbours,
        n=n if neighbours == "replace" else None,
        level_budgets=budgets,
    )
    truth = np.concatenate([[0], np.cumsum(counts)])
    source = InsecureSeededSource(TEST_SEED)
    errors = np.empty((trials, k_total + 1))
    for t in range(trials):
        prefix, variance = tree_prefix(shape, mech.measure(counts, source), mech.block_variance())
        errors[t] = prefix - truth
    # unbiased: every prefix mean within its Bonferroni-corrected normal band
    sd = np.sqrt(variance)
    live = sd > 0
    z = stats.norm.isf(ALPHA / (2 * live.sum()))
    means = errors.mean(axis=0)
    assert (np.abs(means[live]) <= z * sd[live] / math.sqrt(trials)).all()
    assert (errors[:, ~live] == 0).all()
    # per-prefix variance matches the formula (chi-square band on the sample variance)
    sample_var = errors.var(axis=0, ddof=1)
    lo = stats.chi2.ppf(ALPHA / (2 * live.sum()), trials - 1) / (trials - 1)
    hi = stats.chi2.isf(ALPHA / (2 * live.sum()), trials - 1) / (trials - 1)
    ratio = sample_var[live] / variance[live]
    # Laplace sums are heavier-tailed than normal: widen by the excess kurtosis (<= 3)
    widen = math.sqrt(1 + 3 / 2)
    assert (ratio >= 1 - (1 - lo) * widen).all() and (ratio <= 1 + (hi - 1) * widen).all()
    # Theorem IV.1 (replace): the mean total squared error over the K prefixes
    total = (errors[:, 1:] ** 2).sum(axis=1)
    expected = variance[1:].sum()
    if neighbours == "replace":
        assert expected == pytest.approx(theorem_iv1(branching, mech.block_variance()))
    assert abs(total.mean() - expected) <= z_two_sided() * total.std(ddof=1) / math.sqrt(trials)


@pytest.mark.slow
def test_monte_carlo_detects_a_wrong_variance_claim() -> None:
    """The total-error check fails when the claimed variance is off by 20%."""
    trials = 4000
    branching = [4, 4, 4]
    shape = shape_for(64, branching)
    counts = np.ones(64, dtype=np.int64)
    mech = TreeMechanism(shape, epsilon=1.0, neighbours="replace", n=64)
    source = InsecureSeededSource(TEST_SEED)
    truth = np.arange(65)
    total = np.empty(trials)
    for t in range(trials):
        prefix, variance = tree_prefix(shape, mech.measure(counts, source), mech.block_variance())
        total[t] = ((prefix - truth)[1:] ** 2).sum()
    wrong = 1.2 * variance[1:].sum()
    assert abs(total.mean() - wrong) > z_two_sided() * total.std(ddof=1) / math.sqrt(trials)
