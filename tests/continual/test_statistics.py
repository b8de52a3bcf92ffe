"""Monte Carlo checks with a fixed seed (false-failure rate ``ALPHA`` per check): the stated
variances, and a privacy audit that passes the real mechanism and catches a mutant.

Each bin of a stream is an independent copy of the counter (its own noise, a record touches one
bin), so ``N`` bins fed at once give ``N`` independent runs of one counter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest

from tests.stats import ALPHA, TEST_SEED, z_two_sided
from treedp.continual.blt import BltCounter
from treedp.continual.mechanisms import Counter
from treedp.continual.optimal import OptCounter
from treedp.continual.planner import classic_tree, planned_tree
from treedp.continual.sqrt import SqrtCounter
from treedp.continual.sqrt_norm import NormSqrtCounter
from treedp.continual.tree import TreeCounter
from treedp.noise import InsecureSeededSource

RUNS = 20_000


def run_copies(counter: Counter, x: np.ndarray, seed: int) -> np.ndarray:
    """Answers (steps x RUNS) of RUNS independent copies fed the counts ``x`` (steps x RUNS)."""
    source = InsecureSeededSource(seed)
    state = counter.initial_state(x.shape[1], source)
    out = []
    for t in range(1, x.shape[0] + 1):
        state, est = counter.step(state, t, x[t - 1], source)
        out.append(est)
    return np.array(out)


@pytest.mark.parametrize(
    "counter",
    [
        planned_tree(12, "laplace", 1.0),
        classic_tree(12, "gaussian", 0.5),
        SqrtCounter.for_budget(12, 0.5, 1),
        NormSqrtCounter.for_budget(12, 0.5, 1),
        OptCounter.for_budget(12, 0.5, 1),
        BltCounter.for_budget(12, 0.5, 1),
    ],
    ids=["tree-laplace", "binary-gaussian", "sqrt", "sqrt-norm", "opt", "blt"],
)
def test_empirical_variance_matches_expected_variance(counter: Counter) -> None:
    horizon = counter.horizon
    x = np.random.default_rng(TEST_SEED).integers(0, 5, (horizon, RUNS))
    err = run_copies(counter, x, TEST_SEED) - np.cumsum(x, axis=0)
    expected = counter.variances(np.arange(1, horizon + 1))
    z = z_two_sided(ALPHA / horizon)  # Bonferroni over the steps
    for t in range(horizon):
        e = err[t]
        assert abs(e.mean()) <= z * math.sqrt(expected[t] / RUNS)
        s2 = e.var(ddof=1)
        m4 = np.mean((e - e.mean()) ** 4)
        assert abs(s2 - expected[t]) <= z * math.sqrt(max(m4 - s2 * s2, 1e-12) / RUNS)


def audit_ratio(counter: Counter, seed: int) -> tuple[float, float, float]:
    """``P(E | x') - e^ε·P(E | x)`` and its standard error, ``E`` = {first answer >= 1},
    ``x`` = no record, ``x'`` = one record at step 1 (neighbours); ε the counter's claim."""
    x = np.zeros((counter.horizon, RUNS), dtype=np.int64)
    x1 = x.copy()
    x1[0] = 1
    p = float((run_copies(counter, x, seed)[0] >= 1).mean())
    p1 = float((run_copies(counter, x1, seed + 1)[0] >= 1).mean())
    bound = math.exp(float(counter.loss()))
    se = math.sqrt(p1 * (1 - p1) / RUNS + bound**2 * p * (1 - p) / RUNS)
    return p1 - bound * p, se, bound


@dataclass(frozen=True)
class _QuarterNoise(TreeCounter):
    """Mutant: its noise is calibrated to four times the budget it claims."""

    claimed: Fraction = Fraction(1)

    def loss(self) -> Fraction:
        return self.claimed


def test_privacy_audit_passes_the_mechanism_and_catches_the_mutant() -> None:
    honest = classic_tree(2, "laplace", 1.0)
    gap, se, _ = audit_ratio(honest, TEST_SEED)
    assert gap <= z_two_sided(ALPHA) * se
    loud = classic_tree(2, "laplace", 4.0)
    mutant = _QuarterNoise(2, 2, "laplace", loud.parameters, 1, honest.loss())
    gap, se, _ = audit_ratio(mutant, TEST_SEED)
    assert gap > z_two_sided(ALPHA) * se
