"""The tree counter against dense linear algebra: its variances are the subtree BLUE's, its
running estimates are that linear map of the noisy node values, its sensitivity is the one the
released matrix has, and an exact audit catches a mutant that under-reports its loss."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from treedp.continual.planner import classic_tree, mean_digits, mean_variance, planned_tree
from treedp.continual.tree import TreeCounter, levels_for
from treedp.noise import InsecureSeededSource


def released_nodes(horizon: int, k: int, levels: int) -> list[tuple[int, int, int]]:
    """(level, start, end) of every node that completes within the horizon."""
    out = []
    for level in range(levels):
        size = k**level
        out += [(level, j * size, (j + 1) * size) for j in range(horizon // size)]
    return out


def subtree_blue(node, nodes, var):
    """Weights over ``nodes`` of the BLUE of ``node``'s total from its subtree's nodes only, and
    its variance (dense generalised least squares)."""
    _, a, b = node
    inside = [i for i, (lv, s, e) in enumerate(nodes) if a <= s and e <= b and np.isfinite(var[lv])]
    m = np.array(
        [[1.0 if nodes[i][1] <= c < nodes[i][2] else 0.0 for c in range(a, b)] for i in inside]
    )
    w = np.diag([1.0 / var[nodes[i][0]] for i in inside])
    info_inv = np.linalg.inv(m.T @ w @ m)
    ones = np.ones(b - a)
    coef = ones @ info_inv @ m.T @ w
    full = np.zeros(len(nodes))
    full[inside] = coef
    return full, float(ones @ info_inv @ ones)


def dense_estimator(tree: TreeCounter):
    """Row t-1: the weights of the running count after step t over the released nodes, and the
    variance of each row."""
    nodes = released_nodes(tree.horizon, tree.k, len(tree.parameters))
    var = tree.node_variances()
    rows, variances = [], []
    for t in range(1, tree.horizon + 1):
        row, v, start = np.zeros(len(nodes)), 0.0, 0
        for level in reversed(range(len(tree.parameters))):  # the base-k digits of t
            size = tree.k**level
            while start + size <= t:
                coef, cv = subtree_blue((level, start, start + size), nodes, var)
                row, v, start = row + coef, v + cv, start + size
        rows.append(row)
        variances.append(v)
    return nodes, np.array(rows), np.array(variances)


CASES = [
    TreeCounter(
        16, 2, "laplace", (Fraction(3), Fraction(5), Fraction(2), Fraction(7), Fraction(4))
    ),
    TreeCounter(13, 3, "gaussian", (Fraction(9, 2), Fraction(3), Fraction(11))),
    TreeCounter(21, 4, "laplace", (Fraction(2), None, Fraction(5))),  # level 1 switched off
]


@pytest.mark.parametrize("tree", CASES)
def test_variances_are_the_dense_subtree_blue(tree: TreeCounter) -> None:
    _, _, variances = dense_estimator(tree)
    t = np.arange(1, tree.horizon + 1)
    np.testing.assert_allclose(tree.variances(t), variances, rtol=1e-10)
    a = mean_digits(tree.horizon, tree.k)
    assert mean_variance(tree) == pytest.approx(variances.mean(), rel=1e-10)
    assert len(a) == levels_for(tree.horizon, tree.k)


@dataclass(frozen=True)
class _Scripted:
    """A stand-in family that returns scripted noise (the node order is the draw order)."""

    value: int
    var: float

    def sample(self, size: int, source: object) -> np.ndarray:
        return np.full(size, self.value, dtype=np.int64)

    def variance(self) -> float:
        return self.var


@pytest.mark.parametrize("tree", CASES)
def test_running_estimates_are_the_dense_linear_map(tree: TreeCounter, monkeypatch) -> None:
    """With noise ``z = level + 1`` on every node the step outputs equal ``rows @ (M x + z)``."""
    real = tree.node_variances()
    fams = tuple(
        None if p is None else _Scripted(level + 1, real[level])
        for level, p in enumerate(tree.parameters)
    )
    monkeypatch.setattr(TreeCounter, "families", property(lambda self: fams))
    nodes, rows, _ = dense_estimator(tree)
    x = np.random.default_rng(3).integers(0, 9, tree.horizon)
    y = np.array([x[s:e].sum() + lv + 1 for lv, s, e in nodes], dtype=float)
    state = tree.initial_state(1, InsecureSeededSource(0))
    for t in range(1, tree.horizon + 1):
        state, est = tree.step(state, t, np.array([x[t - 1]]), InsecureSeededSource(0))
        assert est[0] == pytest.approx(rows[t - 1] @ y, rel=1e-12)
    # unbiased: the rows applied to the noiseless node values give the prefix sums
    m = np.array([[1.0 if s <= c < e else 0.0 for c in range(tree.horizon)] for _, s, e in nodes])
    np.testing.assert_allclose(rows @ m, np.tril(np.ones((tree.horizon, tree.horizon))), atol=1e-12)


def audited_loss(tree: TreeCounter) -> Fraction:
    """The exact worst-case loss of the released node vector, from its dense matrix: one record
    at step i moves each released node holding i by 1 (per level and per family)."""
    nodes = released_nodes(tree.horizon, tree.k, len(tree.parameters))
    fams = tree.families
    worst = Fraction(0)
    for i in range(tree.horizon):
        loss = Fraction(0)
        for level, s, e in nodes:
            if s <= i < e and fams[level] is not None:
                loss += fams[level].loss(1, 1)
        worst = max(worst, loss)
    return worst


@dataclass(frozen=True)
class _ForgetsTopLevel(TreeCounter):
    """Mutant: its loss leaves out the top level, as if the root were never released."""

    def loss(self) -> Fraction:
        return sum((f.loss(1, 1) for f in self.families[:-1] if f), Fraction(0))


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize("horizon", [1, 7, 16, 27])
def test_stated_loss_covers_the_audited_loss_and_the_budget(noise: str, horizon: int) -> None:
    budget = 0.8 if noise == "laplace" else 0.3
    for tree in (classic_tree(horizon, noise, budget), planned_tree(horizon, noise, budget)):
        assert audited_loss(tree) <= tree.loss() <= Fraction(budget)
        assert tree.sensitivity() == {
            "per_level_l1": 1,
            "per_level_l2_squared": 1,
            "levels": levels_for(horizon, tree.k),
        }


def test_the_audit_catches_a_mutant_that_forgets_a_level() -> None:
    tree = classic_tree(16, "laplace", 1.0)
    mutant = _ForgetsTopLevel(tree.horizon, tree.k, tree.noise, tree.parameters)
    assert audited_loss(mutant) > mutant.loss()


def test_mean_digits_match_enumeration() -> None:
    for horizon, k in [(1, 2), (16, 2), (100, 3), (1000, 7), (4096, 16)]:
        t = np.arange(1, horizon + 1)
        for level, a in enumerate(mean_digits(horizon, k)):
            assert a == pytest.approx(((t // k**level) % k).mean(), rel=1e-12)
