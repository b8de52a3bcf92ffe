"""Audits of every mechanism on worst-case neighbours, and mutants that must be flagged.

Every audit's false-failure rate is AUDIT_ALPHA = 1e-6 (see auditor.py); runs are sized so
that each mutant's expected bound is well above its claim (the power is recorded in
docs/privacy.md).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.privacy.auditor import audit, audit_mechanism
from tests.stats import TEST_SEED
from treedp.mechanisms import (
    AllIntervalsMechanism,
    HistogramMechanism,
    Mechanism,
    ThresholdMechanism,
    TreeMechanism,
)
from treedp.noise import InsecureSeededSource, sample_discrete_laplace
from treedp.tree import shape_for

RUNS = 200_000


def worst_pairs(n_bins: int, neighbours: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Neighbouring bin counts: add/remove at the domain edges and the middle, or move a
    record between the two end bins (the bins that share the fewest ancestors)."""
    base = np.full(n_bins, 3, dtype=np.int64)
    if neighbours == "add_remove":
        pairs = []
        for j in sorted({0, n_bins // 2, n_bins - 1}):
            other = base.copy()
            other[j] += 1
            pairs.append((base, other))
        return pairs
    other = base.copy()
    other[0] -= 1
    other[-1] += 1
    return [(base, other)]


def _n(counts: np.ndarray, neighbours: str) -> int | None:
    return int(counts.sum()) if neighbours == "replace" else None


TREES = [
    (16, [4, 4], "add_remove", None),
    (16, [2, 2, 2, 2], "replace", None),
    (12, [4, 3], "add_remove", [0.2, 0.3, 0.5]),
    (30, [8, 4], "replace", [0.7, 0.3]),
]


@pytest.mark.parametrize(("n_bins", "branching", "neighbours", "budgets"), TREES)
def test_tree_mechanism_passes(n_bins, branching, neighbours, budgets) -> None:
    source = InsecureSeededSource(TEST_SEED)
    for d, d2 in worst_pairs(n_bins, neighbours):
        mech = TreeMechanism(
            shape_for(n_bins, branching),
            epsilon=1.0,
            neighbours=neighbours,
            n=_n(d, neighbours),
            level_budgets=budgets,
        )
        result = audit_mechanism(mech, d, d2, runs=RUNS, source=source)
        assert result.passes, result
        assert result.epsilon_low > 0.5  # the audit is tight, not vacuous


@pytest.mark.parametrize("cls", [HistogramMechanism, ThresholdMechanism, AllIntervalsMechanism])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_baselines_pass(cls: type, neighbours: str) -> None:
    n_bins = 3
    source = InsecureSeededSource(TEST_SEED + 1)
    for d, d2 in worst_pairs(n_bins, neighbours):
        mech = cls(n_bins, epsilon=1.0, neighbours=neighbours, n=_n(d, neighbours))
        result = audit_mechanism(mech, d, d2, runs=RUNS, source=source)
        assert result.passes, result


@pytest.mark.parametrize("scale", [Fraction(1), Fraction(5, 2), Fraction(10, 3)])
def test_exact_sampler_passes(scale: Fraction) -> None:
    """The sampler as a mechanism: count c or c + 1 plus DLap(t) is (1/t)-DP."""
    source = InsecureSeededSource(TEST_SEED + 2)

    def sampler(counts, runs, src):
        return [counts[None, :] + sample_discrete_laplace(scale, runs, src)[:, None]]

    c, c2 = np.array([5]), np.array([6])
    result = audit(
        sampler, c, c2, [c], [c2], [float(scale)], float(1 / scale), runs=RUNS, source=source
    )
    assert result.passes and result.epsilon_low > 0.5 / float(scale)


# ----------------------------------------------------------------------------- mutants


class _Mutant(TreeMechanism):
    """A tree whose noise is broken in one way, while the contract claims the right one."""

    def __init__(self, kind: str, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        scales = list(self.scales)
        if kind == "halved_sensitivity":
            self.block_sensitivity = tuple(s // 2 for s in self.block_sensitivity)
            self._set_scales()
            return
        if kind == "level_left_out":
            scales[2] = None
        elif kind == "root_exact":
            scales[0] = None
        self.scales = tuple(scales)
        self.kind = kind

    def noise_only(self, repeats, source):
        if getattr(self, "kind", "") != "wrong_sampler_scale":
            return super().noise_only(repeats, source)
        sizes = self._block_sizes()
        return [
            sample_discrete_laplace(s * Fraction(7, 10), repeats * n, source).reshape(repeats, n)
            for n, s in zip(sizes, self.scales, strict=True)
        ]


@pytest.mark.parametrize(
    ("kind", "neighbours"),
    [
        ("halved_sensitivity", "replace"),
        ("level_left_out", "add_remove"),
        ("level_left_out", "replace"),
        ("root_exact", "add_remove"),
        ("wrong_sampler_scale", "add_remove"),
    ],
)
def test_mutants_are_flagged(kind: str, neighbours: str) -> None:
    n_bins, branching = 16, [2, 2, 2, 2]
    d, d2 = worst_pairs(n_bins, neighbours)[0]
    n = _n(d, neighbours)
    honest = TreeMechanism(shape_for(n_bins, branching), epsilon=1.0, neighbours=neighbours, n=n)
    broken = _Mutant(kind, shape_for(n_bins, branching), epsilon=1.0, neighbours=neighbours, n=n)
    result = audit_mechanism(
        broken, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED), claimed=honest
    )
    assert result.flagged, result


def test_mechanism_contracts_are_consistent() -> None:
    """Every mechanism's spent epsilon equals its claim (exact rational arithmetic)."""
    mechs: list[Mechanism] = [
        TreeMechanism(shape_for(64, 4), epsilon=0.7),
        TreeMechanism(shape_for(64, 4), epsilon=0.7, neighbours="replace", n=5),
        HistogramMechanism(10, epsilon=0.3),
        ThresholdMechanism(10, epsilon=0.3, neighbours="replace", n=3),
        AllIntervalsMechanism(10, epsilon=0.3),
    ]
    for mech in mechs:
        spent = mech.epsilon_spent()
        assert spent <= Fraction(mech.epsilon)
        assert float(spent) == pytest.approx(mech.epsilon, rel=1e-5)
