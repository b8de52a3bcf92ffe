"""The efficient estimator equals dense generalised least squares, and its known values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.stats import TEST_SEED
from treedp.estimation.efficient import VariancePlan, efficient_prefix, efficient_tree
from treedp.tree import TreeShape, shape_for


def incidence(shape: TreeShape) -> list[np.ndarray]:
    """Per level, the 0/1 matrix (stored nodes x real leaves) of which leaves a node covers."""
    out = []
    for level, size in enumerate(shape.level_sizes()):
        span = shape.span(level)
        rows = np.arange(size)[:, None]
        leaves = np.arange(shape.n_bins)[None, :]
        out.append((leaves // span == rows).astype(float))
    return out


def dense_gls(shape: TreeShape, levels: list[np.ndarray], variances: tuple[float, ...]):
    """GLS over the real leaves: noisy nodes weighted by 1/var, exact nodes as constraints.

    Returns the node estimates per level and the covariance of the leaf estimates.
    """
    mats = incidence(shape)
    noisy = [(m, y, v) for m, y, v in zip(mats, levels, variances, strict=True) if 0 < v < math.inf]
    exact = [(m, y) for m, y, v in zip(mats, levels, variances, strict=True) if v == 0]
    a = np.vstack([m for m, _, _ in noisy])
    w = np.concatenate([np.full(m.shape[0], 1 / v) for m, _, v in noisy])
    y = np.concatenate([y for _, y, _ in noisy]).astype(float)
    info = a.T @ (w[:, None] * a)
    rhs = a.T @ (w * y)
    if exact:
        c = np.vstack([m for m, _ in exact])
        cy = np.concatenate([y for _, y in exact]).astype(float)
        k = c.shape[0]
        kkt = np.block([[info, c.T], [c, np.zeros((k, k))]])
        sol = np.linalg.lstsq(kkt, np.concatenate([rhs, cy]), rcond=None)[0]
        leaves = sol[: shape.n_bins]
        inv = np.linalg.pinv(kkt)[: shape.n_bins, : shape.n_bins]
        cov = inv
    else:
        leaves = np.linalg.solve(info, rhs)
        cov = np.linalg.inv(info)
    return [m @ leaves for m in mats], cov


@st.composite
def trees(draw: st.DrawFn):
    branching = tuple(draw(st.lists(st.integers(2, 5), min_size=1, max_size=3)))
    product = math.prod(branching)
    low = product // branching[0] + 1 if len(branching) > 1 else 2
    n_bins = draw(st.integers(min(low, product), product))
    shape = TreeShape(n_bins, branching)
    neighbours = draw(st.sampled_from(["add_remove", "replace"]))
    var = [draw(st.floats(0.5, 20.0)) for _ in range(len(branching) + 1)]
    if neighbours == "replace":
        var[0] = 0.0
    seed = draw(st.integers(0, 2**31))
    return shape, tuple(var), seed


def _noisy(shape: TreeShape, variances: tuple[float, ...], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 20, size=shape.n_bins)
    levels = shape.aggregate(counts)
    return [
        lv + (0 if v == 0 else rng.laplace(0, math.sqrt(v / 2), lv.size))
        for lv, v in zip(levels, variances, strict=True)
    ]


@settings(max_examples=120, deadline=None)
@given(trees())
def test_equals_dense_gls(case) -> None:
    shape, variances, seed = case
    noisy = _noisy(shape, variances, seed)
    fit = efficient_tree(shape, noisy, variances)
    expected, cov = dense_gls(shape, noisy, variances)
    scale = max(1.0, max(float(np.abs(e).max()) for e in expected))
    for level, exp in enumerate(expected):
        got = fit.nodes[level][: exp.size]
        assert np.allclose(got, exp, rtol=1e-9, atol=1e-9 * scale), (level, got, exp)
    # variances of the efficient node estimates equal the GLS covariance diagonal
    for level, m in enumerate(incidence(shape)):
        gls_var = np.einsum("ij,jk,ik->i", m, cov, m)
        got = fit.plan.var_efficient[level].full()[: m.shape[0]]
        assert np.allclose(got, gls_var, rtol=1e-9, atol=1e-12), level


@settings(max_examples=60, deadline=None)
@given(trees())
def test_consistent_and_exact_total(case) -> None:
    shape, variances, seed = case
    fit = efficient_tree(shape, _noisy(shape, variances, seed), variances)
    for level in range(shape.height):
        k = shape.branching[level]
        parents = fit.nodes[level][: shape.level_sizes()[level]]
        children = fit.nodes[level + 1].reshape(-1, k).sum(axis=1)
        assert np.allclose(parents, children, rtol=1e-10, atol=1e-8)
    if variances[0] == 0:
        root = shape.aggregate(np.zeros(shape.n_bins, dtype=np.int64))[0]  # shape only
        assert root.size == 1
        assert fit.nodes[-1][: shape.n_bins].sum() == pytest.approx(fit.nodes[0][0], abs=1e-8)


def test_hay_vectors() -> None:
    """Hay et al.'s two test vectors for a binary tree over 2 leaves (root and leaves noisy).

    REFERENCE §4.1 lists the second answer as (-1/3, 2/3); solving the least-squares problem
    by hand (minimise (x1+x2)² + (x1-1)² + x2²) gives x = (2/3, -1/3): the reference swapped
    the leaves.
    """
    s = shape_for(2, 2)
    fit = efficient_tree(s, [np.array([0.0]), np.array([0.5, 0.5])], (1.0, 1.0))
    assert np.allclose(fit.nodes[1], [1 / 6, 1 / 6]) and np.allclose(fit.nodes[0], [1 / 3])
    fit = efficient_tree(s, [np.array([0.0]), np.array([1.0, 0.0])], (1.0, 1.0))
    assert np.allclose(fit.nodes[1], [2 / 3, -1 / 3]) and np.allclose(fit.nodes[0], [1 / 3])


def test_honaker_level_variances() -> None:
    """REFERENCE §2.2: 5-level binary tree (16 leaves), equal unit noise, all nodes noised."""
    plan = VariancePlan(shape_for(16, 2), (1.0,) * 5)
    below = [0.516, 0.533, 0.571, 0.667, 1.000]
    above = [1.000, 0.605, 0.541, 0.547, 0.607]
    efficient = [0.516, 0.396, 0.385, 0.430, 0.607]
    for level in range(5):
        assert plan.var_below[level].values[0] == pytest.approx(below[level], abs=6e-4)
        assert plan.var_above[level].values[0] == pytest.approx(above[level], abs=6e-4)
        assert plan.var_efficient[level].values[0] == pytest.approx(efficient[level], abs=6e-4)
    plan6 = VariancePlan(shape_for(32, 2), (1.0,) * 6)
    eff6 = [0.508, 0.385, 0.363, 0.376, 0.427, 0.607]
    for level in range(6):
        assert plan6.var_efficient[level].values[0] == pytest.approx(eff6[level], abs=6e-4)


def test_unobserved_root_is_a_plain_histogram_with_known_total() -> None:
    """A flat 'tree' with an exact root: leaves shift by (n - Σ y)/B (the sum constraint)."""
    shape = shape_for(4, [4])
    y = np.array([3.0, 5.0, 1.0, 2.0])
    fit = efficient_tree(shape, [np.array([15.0]), y], (0.0, 2.0))
    assert np.allclose(fit.nodes[1], y + (15 - y.sum()) / 4)
    free = efficient_tree(shape, [np.array([0.0]), y], (math.inf, 2.0))
    assert np.allclose(free.nodes[1], y) and free.nodes[0][0] == pytest.approx(y.sum())


def test_large_padded_tree_runs() -> None:
    shape = shape_for(10**6 + 3, 16)
    rng = np.random.default_rng(TEST_SEED)
    levels = [rng.integers(0, 9, size=s) for s in shape.level_sizes()]
    fit = efficient_tree(shape, levels, (4.0,) * (shape.height + 1))
    assert fit.prefix(shape.n_bins).shape == (10**6 + 4,)


@settings(max_examples=80, deadline=None)
@given(trees())
def test_prefix_covariances_equal_dense_gls(case) -> None:
    from treedp.estimation.covariance import DirectTreeCovariance, EfficientTreeCovariance

    shape, variances, _ = case
    _, cov_leaves = dense_gls(shape, _noisy(shape, variances, 0), variances)
    b = shape.n_bins
    lower = np.tril(np.ones((b + 1, b)), -1)  # row m: indicator of leaves < m
    dense = lower @ cov_leaves @ lower.T
    m1, m2 = np.meshgrid(np.arange(b + 1), np.arange(b + 1), indexing="ij")
    got = EfficientTreeCovariance(VariancePlan(shape, variances)).cov(m1, m2)
    assert np.allclose(got, dense, rtol=1e-8, atol=1e-9 * max(1.0, float(np.abs(dense).max())))
    # direct: Σ over shared covering nodes, checked against the covering lists
    direct = DirectTreeCovariance(shape, variances).cov(m1, m2)
    for i in range(b + 1):
        for j in range(b + 1):
            shared = set(shape.prefix_nodes(i)) & set(shape.prefix_nodes(j))
            assert direct[i, j] == pytest.approx(sum(variances[lv] for lv, _ in shared))


@pytest.mark.parametrize("seed", range(6))
def test_efficient_prefix_equals_the_fit_bit_for_bit(seed: int) -> None:
    """The fused prefix path (leaves written for the real bins only, summed in place, inner
    levels not formed, integer or float64 leaves read unpadded) returns exactly the general
    path's prefixes, padding and an exact or unobserved root included; batch axes take the
    general path."""
    rng = np.random.default_rng(TEST_SEED + seed)
    for _ in range(15):
        height = int(rng.integers(1, 5))
        branching = tuple(int(b) for b in rng.integers(2, 9, size=height))
        n_bins = int(rng.integers(2, math.prod(branching) + 1))
        shape = TreeShape(n_bins, branching)
        root = float(rng.choice([0.0, 1.5, math.inf]))
        variances = (root, *(float(v) for v in rng.uniform(0.5, 9.0, size=height)))
        levels = [rng.integers(-50, 200, size=s) for s in shape.level_sizes()]
        want = efficient_tree(shape, levels, variances).prefix(n_bins)
        got = efficient_prefix(shape, levels, variances, n_bins)
        assert got.shape == want.shape
        assert np.array_equal(got, want)
        floats = [lv.astype(np.float64) for lv in levels]  # unpadded float64 leaves too
        assert np.array_equal(efficient_prefix(shape, floats, variances, n_bins), want)
        batch = [np.stack([lv, lv[::-1]]) for lv in levels]
        assert np.array_equal(
            efficient_prefix(shape, batch, variances, n_bins),
            efficient_tree(shape, batch, variances).prefix(n_bins),
        )
