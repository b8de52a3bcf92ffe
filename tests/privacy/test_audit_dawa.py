"""Audits of DAWA on a tiny domain: stage 1's noisy cost vector (what the partition is read
from), stage 2's tree given a partition, the partition itself as the output, and a mutant
whose partition noise is calibrated to half the cost sensitivity, which must be flagged.

Every audit's false-failure rate is AUDIT_ALPHA = 1e-6 (tests/privacy/auditor.py). The pairs
are worst cases: with 4 bins, adding one record to an empty first bin moves the rounded cost of
``[0, 2)`` by 1 and of ``[0, 4)`` by 2, the full claimed sensitivity 3, so the audit of the
honest mechanism is tight (its bound comes close to ε1) and the mutant's true loss is 2·ε1.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from tests.privacy.auditor import AUDIT_ALPHA, audit, audit_mechanism, clopper_pearson
from tests.stats import TEST_SEED
from treedp.mechanisms.dawa import DawaMechanism
from treedp.mechanisms.partition import Partition, block_costs, choose_partition
from treedp.noise import InsecureSeededSource, RandomSource, noise_scale

RUNS = 200_000
EPSILON = 2.0  # ε1 = 0.5 on the partition

PAIRS = [
    (np.array([0, 0, 0, 0]), np.array([1, 0, 0, 0])),
    (np.array([3, 1, 0, 2]), np.array([3, 1, 1, 2])),
    (np.array([0, 0, 0, 0]), np.array([0, 0, 0, 1])),
]


class _HalvedPartitionNoise(DawaMechanism):
    """Stage 1 noise calibrated to half the cost sensitivity; the contract is unchanged."""

    def noisy_costs(
        self, counts: np.ndarray, source: RandomSource, repeats: int = 1
    ) -> list[np.ndarray]:
        from treedp.mechanisms.partition import noisy_block_costs

        wrong = noise_scale(self.partition_sensitivity, 2 * self.epsilon_partition)  # half
        return noisy_block_costs(counts, wrong, source, repeats)


def _stage1_audit(mech: DawaMechanism, d: np.ndarray, d2: np.ndarray, seed: int):
    def sampler(counts: np.ndarray, runs: int, source: RandomSource) -> list[np.ndarray]:
        return mech.noisy_costs(counts, source, runs)

    scale = float(DawaMechanism(d.size, epsilon=EPSILON).partition_scale)  # the claim
    claimed = float(DawaMechanism(d.size, epsilon=EPSILON).partition_epsilon_spent())
    exact_d, exact_n = block_costs(d), block_costs(d2)
    return audit(
        sampler,
        d,
        d2,
        exact_d,
        exact_n,
        [scale] * len(exact_d),
        claimed,
        runs=RUNS,
        source=InsecureSeededSource(seed),
    )


@pytest.mark.parametrize(("d", "d2"), PAIRS)
def test_partition_costs_pass(d: np.ndarray, d2: np.ndarray) -> None:
    mech = DawaMechanism(d.size, epsilon=EPSILON)
    for a, b in ((d, d2), (d2, d)):
        result = _stage1_audit(mech, a, b, TEST_SEED)
        assert result.passes, result
    tight = _stage1_audit(mech, PAIRS[0][0], PAIRS[0][1], TEST_SEED + 1)
    assert tight.epsilon_low > 0.5 * float(mech.partition_epsilon_spent())  # not vacuous


def test_halved_partition_noise_is_flagged() -> None:
    d, d2 = PAIRS[0]
    mutant = _HalvedPartitionNoise(d.size, epsilon=EPSILON)
    result = _stage1_audit(mutant, d, d2, TEST_SEED + 2)
    assert result.flagged, result


@pytest.mark.parametrize("starts", [(0,), (0, 2), (0, 1, 2, 3)])
def test_bucket_tree_given_a_partition_passes(starts: tuple[int, ...]) -> None:
    mech = DawaMechanism(4, epsilon=EPSILON).bind(Partition(4, starts))
    for d, d2 in PAIRS:
        result = audit_mechanism(mech, d, d2, runs=RUNS, source=InsecureSeededSource(TEST_SEED))
        assert result.passes, result


@pytest.mark.slow
def test_partition_output_passes() -> None:
    """The partition itself (post-processing of the costs) on 2 bins, where adding a record
    to an empty bin moves the one cost by its full sensitivity: the event is the partition
    with the largest pilot ratio; Clopper–Pearson at AUDIT_ALPHA on fresh runs."""
    d, d2 = np.array([0, 0]), np.array([1, 0])
    mech = DawaMechanism(2, epsilon=EPSILON)
    runs, pilot = RUNS, 20_000

    def partitions(counts: np.ndarray, n: int, seed: int) -> list[tuple[int, ...]]:
        noisy = mech.noisy_costs(counts, InsecureSeededSource(seed), n)
        rows = np.concatenate(noisy, axis=1)  # the partition is a function of these values
        unique, inverse = np.unique(rows, axis=0, return_inverse=True)
        sizes = [lvl.shape[1] for lvl in noisy]
        chosen = [
            choose_partition(np.split(row, np.cumsum(sizes)[:-1]), 2, mech.penalty).starts
            for row in unique
        ]
        return [chosen[i] for i in inverse.ravel()]

    p1, p2 = Counter(partitions(d, pilot, TEST_SEED)), Counter(partitions(d2, pilot, TEST_SEED + 1))
    best, event = -math.inf, None
    for key in set(p1) | set(p2):
        for a, b in ((p1, p2), (p2, p1)):
            if a[key] > 50 and b[key] > 0 and math.log(a[key] / b[key]) > best:
                best, event = math.log(a[key] / b[key]), (key, a is p1)
    assert event is not None
    key, first = event
    f1 = Counter(partitions(d, runs, TEST_SEED + 2))[key]
    f2 = Counter(partitions(d2, runs, TEST_SEED + 3))[key]
    k1, k2 = (f1, f2) if first else (f2, f1)
    low = clopper_pearson(k1, runs, AUDIT_ALPHA)[0]
    high = clopper_pearson(k2, runs, AUDIT_ALPHA)[1]
    assert math.log(low / high) <= float(mech.partition_epsilon_spent())
