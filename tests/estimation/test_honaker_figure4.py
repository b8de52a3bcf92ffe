"""Honaker (2015), Figure 4: the efficient estimator on perfect binary trees of depth 5.

The seed's simulation: 10,000 binary trees with 16 leaves (levels 0..4), leaves
Poisson(10), every node noised with Gaussian σ = 3, N known (the root is exact). The ratio of
the efficient estimate's MSE to the raw noisy node's MSE, by level below the root, is about
0.267 / 0.352 / 0.421 / 0.605.

Exact values. The estimators are linear and unbiased, so the MSE ratio is a ratio of
variances and depends neither on the data nor on σ. With unit noise on the 30 non-root nodes
(incidence ``A``: node × leaf) and the constraint ``Σ leaves = N``, the efficient (BLUE)
leaf estimate is constrained least squares with covariance
``C = M⁻¹ - M⁻¹1 (1ᵀM⁻¹1)⁻¹ 1ᵀM⁻¹``, ``M = AᵀA``, and node ``v``'s variance is ``a_vᵀ C a_v``.
Computed here in exact rational arithmetic: 4/15, 37/105, 59/140, 339/560.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tests.stats import TEST_SEED, z_two_sided
from treedp.estimation.efficient import VariancePlan, efficient_tree
from treedp.noise import InsecureSeededSource
from treedp.noise.families import DiscreteGaussian
from treedp.tree import TreeShape

LEAVES, DEPTH = 16, 4  # levels 0..4: "depth 5" counts the root level
REPORTED = (0.267, 0.352, 0.421, 0.605)


def _solve(m: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Gauss–Jordan elimination in exact arithmetic (``m`` is positive definite)."""
    n = len(b)
    a = [[*row, b[i]] for i, row in enumerate(m)]
    for c in range(n):
        p = next(r for r in range(c, n) if a[r][c] != 0)
        a[c], a[p] = a[p], a[c]
        for r in range(n):
            if r != c and a[r][c] != 0:
                f = a[r][c] / a[c][c]
                a[r] = [x - f * y for x, y in zip(a[r], a[c], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def exact_ratios() -> tuple[Fraction, ...]:
    """Efficient variance ÷ σ² per level below the root, exactly (module docstring)."""
    rows: list[tuple[int, list[int]]] = []
    for d in range(1, DEPTH + 1):
        width = LEAVES >> d
        for j in range(1 << d):
            rows.append((d, [1 if j * width <= i < (j + 1) * width else 0 for i in range(LEAVES)]))
    m = [
        [Fraction(sum(r[i] * r[j] for _, r in rows)) for j in range(LEAVES)] for i in range(LEAVES)
    ]
    # columns of M⁻¹ (the inverse is symmetric), then the constrained covariance C
    inv_cols = [_solve(m, [Fraction(int(i == j)) for i in range(LEAVES)]) for j in range(LEAVES)]
    minv = [[inv_cols[j][i] for j in range(LEAVES)] for i in range(LEAVES)]
    u = [sum(row, Fraction(0)) for row in minv]  # M⁻¹1
    s = sum(u, Fraction(0))  # 1ᵀM⁻¹1
    cov = [[minv[i][j] - u[i] * u[j] / s for j in range(LEAVES)] for i in range(LEAVES)]
    out = []
    for d in range(1, DEPTH + 1):
        per_node = [
            sum(
                (r[i] * r[j] * cov[i][j] for i in range(LEAVES) for j in range(LEAVES)),
                Fraction(0),
            )
            for lv, r in rows
            if lv == d
        ]
        assert len(set(per_node)) == 1  # every node of a level alike (symmetry)
        out.append(per_node[0])
    return tuple(out)


def test_exact_ratios_match_the_paper_and_the_library() -> None:
    exact = exact_ratios()
    assert exact == (Fraction(4, 15), Fraction(37, 105), Fraction(59, 140), Fraction(339, 560))
    assert [round(float(r), 3) for r in exact] == list(REPORTED)
    # the library's efficient-estimator variances (σ² = 9 below the public root) agree
    plan = VariancePlan(TreeShape(LEAVES, (2,) * DEPTH), (0.0,) + (9.0,) * DEPTH)
    for d, r in enumerate(exact, start=1):
        values = plan.var_efficient[d].values
        assert np.allclose(values[values > 0], 9.0 * float(r), rtol=1e-12)


def test_monte_carlo_reproduces_figure_4() -> None:
    """10,000 trees as in the paper, exact discrete Gaussian noise with σ² = 9.

    Per level, each tree contributes the mean squared error of its nodes (independent across
    trees). The efficient estimate's mean over trees must lie within ``z·sd/√T`` of its exact
    expectation ``ratio · Var(noise)``; z at ALPHA = 1e-6, Bonferroni over the 4 levels.
    The MC ratio to the raw MSE is also checked against the exact ratio with a tolerance
    from the delta method (both means' sampling errors, z as above).
    """
    trees = 10_000
    shape = TreeShape(LEAVES, (2,) * DEPTH)
    leaves = np.random.default_rng(TEST_SEED).poisson(10, size=(trees, LEAVES)).astype(np.int64)
    truth = [leaves.reshape(trees, 1 << d, -1).sum(axis=2) for d in range(DEPTH + 1)]
    family = DiscreteGaussian(Fraction(9))
    var = family.variance()
    source = InsecureSeededSource(TEST_SEED)
    noisy = [truth[0].astype(np.int64)]  # N known: the root is exact
    noisy += [t + family.sample(t.size, source).reshape(t.shape) for t in truth[1:]]
    fit = efficient_tree(shape, noisy, (0.0,) + (var,) * DEPTH)
    z = z_two_sided(1e-6 / DEPTH)
    for d, ratio in enumerate(exact_ratios(), start=1):
        eff = ((fit.nodes[d] - truth[d]) ** 2).mean(axis=1)
        raw = ((noisy[d] - truth[d]) ** 2).mean(axis=1)
        expected = float(ratio) * var
        assert abs(eff.mean() - expected) <= z * eff.std(ddof=1) / np.sqrt(trees)
        # ratio of means: delta-method sd of eff/raw
        r = eff.mean() / raw.mean()
        cov = np.cov(eff, raw)
        grad = np.array([1 / raw.mean(), -eff.mean() / raw.mean() ** 2])
        sd = float(np.sqrt(grad @ cov @ grad / trees))
        assert abs(r - float(ratio)) <= z * sd
