"""The strategy's claimed sensitivities are the exact maxima over neighbouring datasets.

Every dataset with at most two records on ``B`` bins is enumerated with each of its
neighbours (add or remove one record; move one record between bins with ``n`` fixed), and
the largest change of the released vector ``W x`` is compared with the claim: equal, so the
claim is neither too small (privacy) nor loose (accuracy). A mutant claim that forgets the
aggregate rows is caught.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from treedp.mechanisms.strategy import StrategyMechanism
from treedp.strategy import Strategy, optimise_pidentity, quantise


def _datasets(n_bins: int, max_records: int) -> list[np.ndarray]:
    out = []
    for n in range(max_records + 1):
        for bins in itertools.combinations_with_replacement(range(n_bins), n):
            out.append(np.bincount(np.array(bins, dtype=np.int64), minlength=n_bins))
    return out


def _neighbours(x: np.ndarray, relation: str) -> list[np.ndarray]:
    b = x.size
    out = []
    if relation == "add_remove":
        for j in range(b):
            y = x.copy()
            y[j] += 1
            out.append(y)
    else:
        for j, k in itertools.permutations(range(b), 2):
            if x[j] > 0:
                y = x.copy()
                y[j] -= 1
                y[k] += 1
                out.append(y)
    return out


def _brute(strategy: Strategy, relation: str) -> tuple[int, float]:
    l1, l2 = 0, 0.0
    for x in _datasets(strategy.n_bins, 2):
        wx = strategy.apply(x)
        for y in _neighbours(x, relation):
            diff = strategy.apply(y) - wx
            l1 = max(l1, int(np.abs(diff).sum()))
            l2 = max(l2, float(np.sqrt((diff.astype(np.float64) ** 2).sum())))
    return l1, l2


STRATEGIES = [
    Strategy(np.array([1, 2, 1, 3]), np.array([[1, 1, 0, 0], [0, 1, 1, 1], [2, 0, 0, 1]])),
    Strategy(np.array([5, 1, 1, 1, 2]), np.zeros((1, 5), dtype=np.int64)),
    quantise(optimise_pidentity(6, 2, max_iter=50)),
    quantise(optimise_pidentity(5, 1, "range", max_iter=50), lattice=17, workload="range"),
]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_claim_is_the_exact_maximum(strategy: Strategy, relation: str) -> None:
    l1, l2 = _brute(strategy, relation)
    claim = strategy.sensitivity(relation)
    assert claim[0] == l1
    assert claim[1] == pytest.approx(l2, rel=1e-12)
    n = 4 if relation == "replace" else None
    mech = StrategyMechanism(
        strategy.n_bins, epsilon=1.0, neighbours=relation, n=n, strategy=strategy
    )
    assert mech.block_sensitivity == (l1,)
    assert mech.blocks[0].l1 == l1


def test_a_claim_that_forgets_the_aggregate_rows_is_caught() -> None:
    strategy = STRATEGIES[0]
    forgot = int(strategy.identity.max())  # the mutant: only the identity rows counted
    assert forgot < _brute(strategy, "add_remove")[0]


def test_branch_and_bound_equals_all_pairs() -> None:
    """The pruned replace maximum equals the plain all-pairs one on random strategies
    (sparse and dense, ties included)."""
    rng = np.random.default_rng(7)
    for trial in range(40):
        b, p = int(rng.integers(2, 30)), int(rng.integers(1, 4))
        d = rng.integers(1, 6, b)
        a = rng.integers(0, 5, (p, b)) * (rng.random((p, b)) < (0.3 if trial % 2 else 0.9))
        strategy = Strategy(d, a)
        w = strategy.matrix()
        diff = w[:, :, None] - w[:, None, :]
        off = ~np.eye(b, dtype=bool)
        l1 = int(np.abs(diff).sum(axis=0)[off].max())
        l2 = float(np.sqrt((diff**2).sum(axis=0)[off].max()))
        assert strategy.sensitivity("replace") == (l1, pytest.approx(l2, rel=1e-12))
