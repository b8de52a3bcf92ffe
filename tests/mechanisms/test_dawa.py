"""DAWA: the partition stage's costs and sensitivity, the partition chosen, the two-stage
contract, estimates spread in buckets, and the release API (no error bars offered)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED, z_two_sided
from treedp.estimation import estimate_prefix
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.dawa import NO_INTERVALS, DawaMechanism
from treedp.mechanisms.partition import (
    Partition,
    block_costs,
    choose_partition,
    cost_sensitivity,
    dyadic_levels,
)
from treedp.noise import InsecureSeededSource
from treedp.privacy.measures import PureDP


def _brute_costs(x: np.ndarray) -> list[list[int]]:
    out = []
    for lvl in range(1, dyadic_levels(x.size) + 1):
        s = 1 << lvl
        row = []
        for start in range(0, x.size, s):
            block = [int(v) for v in x[start : start + s]]
            mean = Fraction(sum(block), len(block))
            row.append(math.ceil(sum(abs(v - mean) for v in block)))
        out.append(row)
    return out


@pytest.mark.parametrize("n_bins", [1, 2, 3, 5, 8, 13, 32])
def test_block_costs_are_exact(n_bins: int) -> None:
    rng = np.random.default_rng(n_bins)
    for _ in range(5):
        x = rng.integers(0, 50, n_bins)
        assert [c.tolist() for c in block_costs(x)] == _brute_costs(x)


def test_block_costs_exact_beyond_int64_products() -> None:
    x = np.array([2**55, 0, 3, 2**55 - 1], dtype=np.int64)
    assert [c.tolist() for c in block_costs(x)] == _brute_costs(x)


@pytest.mark.parametrize("n_bins", [2, 3, 4, 5, 6])
def test_cost_sensitivity_is_attained_and_never_exceeded(n_bins: int) -> None:
    """Every dataset with counts 0..2 and every added record: per level and in total, the
    largest change of the rounded costs equals the claim."""
    claim = cost_sensitivity(n_bins)
    assert len(claim) == dyadic_levels(n_bins)
    worst_level = [0] * len(claim)
    worst_total = 0
    for x in itertools.product(range(3), repeat=n_bins):
        base = block_costs(np.array(x))
        for i in range(n_bins):
            y = np.array(x)
            y[i] += 1
            moved = [int(np.abs(a - b).sum()) for a, b in zip(base, block_costs(y), strict=True)]
            worst_level = [max(w, m) for w, m in zip(worst_level, moved, strict=True)]
            worst_total = max(worst_total, sum(moved))
    assert tuple(worst_level) == claim
    assert worst_total == sum(claim)


def test_cost_sensitivity_values() -> None:
    assert cost_sensitivity(1) == ()
    assert cost_sensitivity(2) == (1,)
    assert cost_sensitivity(4096) == (1,) + (2,) * 11
    assert sum(cost_sensitivity(4096)) == 2 * 12 - 1


def _all_cuts(lo: int, size: int, n_bins: int):
    """Every partition of the dyadic block [lo, lo + size) clipped to the bins."""
    if lo >= n_bins:
        yield []
        return
    yield [lo]
    if size > 1:
        half = size // 2
        for left in _all_cuts(lo, half, n_bins):
            for right in _all_cuts(lo + half, half, n_bins):
                yield left + right


@pytest.mark.parametrize("n_bins", [1, 2, 3, 5, 8])
def test_choose_partition_is_the_optimal_cut(n_bins: int) -> None:
    rng = np.random.default_rng(7)
    levels = dyadic_levels(n_bins)
    for _ in range(20):
        noisy = [rng.integers(-5, 15, -(-n_bins // (1 << lvl))) for lvl in range(1, levels + 1)]
        penalty = float(rng.uniform(0.5, 4))

        def cost(starts: list[int], noisy=noisy, penalty=penalty) -> float:
            total = 0.0
            for a, b in itertools.pairwise([*starts, n_bins]):
                size = b - a
                lvl = 0
                while (1 << lvl) < size or a % (1 << lvl):
                    lvl += 1
                # a bucket is the dyadic block at the lowest level that starts at a and covers it
                c = 0.0 if lvl == 0 else max(0.0, float(noisy[lvl - 1][a >> lvl]))
                total += c + penalty
            return total

        size = 1 << levels
        best = min(cost(c) for c in _all_cuts(0, size, n_bins))
        chosen = choose_partition(noisy, n_bins, penalty)
        assert cost(list(chosen.starts)) == pytest.approx(best)


def test_exact_costs_find_flat_pieces() -> None:
    x = np.array([5] * 8 + [0] * 8 + [40] * 16)
    chosen = choose_partition(block_costs(x), x.size, penalty=1.0)
    assert chosen.starts == (0, 8, 16)


def test_partition_validation_and_spread() -> None:
    for bad in [(), (1,), (0, 0), (0, 3, 2), (0, 8)]:
        with pytest.raises(InvalidParameterError):
            Partition(8, bad)
    part = Partition(6, (0, 2, 5))
    assert part.bucket_counts(np.arange(6)).tolist() == [1, 9, 5]
    spread = part.spread(np.array([0.0, 4.0, 10.0, 12.0]))
    assert spread.tolist() == pytest.approx([0, 2, 4, 6, 8, 10, 12])
    identity = Partition(4, (0, 1, 2, 3)).spread(np.array([[0.0, 1, 3, 6, 10]]))
    assert identity.tolist() == [[0, 1, 3, 6, 10]]


# ----------------------------------------------------------------------------- the contract


def test_contract_before_and_after_the_partition() -> None:
    mech = DawaMechanism(64, epsilon=1.0)
    assert not mech.bound
    assert mech.epsilon_partition == pytest.approx(0.25)
    assert mech.epsilon_partition + mech.epsilon_buckets <= 1.0
    assert mech.partition_sensitivity == 2 * 6 - 1
    assert mech.partition_scale >= Fraction(11) / Fraction(mech.epsilon_partition)
    assert mech.epsilon_spent() <= Fraction(1.0)
    assert isinstance(mech.guarantee, PureDP) and mech.guarantee.epsilon <= 1.0
    with pytest.raises(InvalidParameterError, match="no partition yet"):
        mech.true_blocks(np.zeros(64, dtype=np.int64))
    bound = mech.bind(Partition(64, (0, 16, 20, 32)))
    assert bound.bound and bound.bucket_tree is not None
    assert bound.bucket_tree.n_bins == 4
    assert bound.epsilon_spent() <= mech.epsilon_spent() <= Fraction(1.0)
    first, second = bound.spend_parts()
    assert first.measure.epsilon + second.measure.epsilon >= float(bound.epsilon_spent())
    assert first.measure.epsilon <= 0.25 and second.measure.epsilon <= 0.75
    spend = bound.spend()
    assert spend.mechanism == "dawa" and spend.neighbours == "add_remove"
    assert spend.parameters["parts"] == (first.measure.epsilon, second.measure.epsilon)
    meta = bound.describe()
    assert meta["partition"] == [0, 16, 20, 32]
    assert meta["partition_sensitivity"] == 11
    assert meta["bucket_branching"] == list(bound.bucket_tree.shape.branching)
    counts = np.arange(64)
    blocks = bound.true_blocks(counts)
    parts = [counts[:16], counts[16:20], counts[20:32], counts[32:]]
    assert blocks[-1].tolist() == [int(p.sum()) for p in parts]


def test_parameters_refused() -> None:
    with pytest.raises(InvalidParameterError, match="add_remove"):
        DawaMechanism(8, epsilon=1.0, neighbours="replace", n=10)
    with pytest.raises(InvalidParameterError):
        DawaMechanism(8, epsilon=1.0, partition_share=1.0)
    with pytest.raises(InvalidParameterError, match="needs a partition"):
        DawaMechanism(8, epsilon=1.0, bucket_branching=(2,))
    with pytest.raises(InvalidParameterError):
        DawaMechanism(8, epsilon=1.0, partition=Partition(4, (0,)))
    with pytest.raises(InvalidParameterError, match="branching"):
        treedp.release_counts(
            [1, 2, 3, 4], epsilon=1.0, mechanism=treedp.MechanismOptions("dawa", branching=2)
        )
    with pytest.raises(InvalidParameterError):
        treedp.release_counts([1, 2, 3], epsilon=1.0, mechanism="dawa", neighbours="replace", n=6)


def test_one_bin_needs_no_partition() -> None:
    mech = DawaMechanism(1, epsilon=1.0)
    assert mech.partition_epsilon_spent() == 0
    rel = treedp.release_counts([7], epsilon=1.0, mechanism="dawa", rng=InsecureSeededSource(1))
    assert rel.mechanism.partition is not None and rel.mechanism.partition.starts == (0,)


# ----------------------------------------------------------------------------- estimates


def test_spread_estimate_is_unbiased_on_flat_buckets_with_the_stated_noise() -> None:
    """Data uniform inside the buckets: the estimate is unbiased and its covariance is the
    noise-only one (means: z-test, Bonferroni over the prefixes, α = 1e-6 in total;
    variances: relative tolerance z·sqrt(2/(R-1)) for R draws)."""
    part = Partition(16, (0, 4, 8, 12))
    mech = DawaMechanism(16, epsilon=2.0).bind(part)
    counts = np.repeat([3, 0, 10, 1], 4)
    runs = 4000
    source = InsecureSeededSource(TEST_SEED)
    noisy = [
        b[None, :] + z
        for b, z in zip(mech.true_blocks(counts), mech.noise_only(runs, source), strict=True)
    ]
    est = estimate_prefix(mech, noisy, "efficient")
    truth = np.concatenate([[0], np.cumsum(counts)])
    var = mech.noise_covariance().var(np.arange(17))
    z = z_two_sided(1e-6 / 17 / 2)
    assert np.all(np.abs(est.mean(axis=0) - truth) <= z * np.sqrt(var / runs) + 1e-9)
    sample_var = est.var(axis=0, ddof=1)
    assert np.all(np.abs(sample_var[1:] / var[1:] - 1) <= z * math.sqrt(2 / (runs - 1)))


# ----------------------------------------------------------------------------- release API


def test_release_answers_every_query_and_records_the_partition() -> None:
    counts = np.r_[np.zeros(40, dtype=int), np.full(20, 50), np.zeros(4)]
    rel = treedp.release_counts(
        counts, epsilon=1.0, mechanism="dawa", rng=InsecureSeededSource(TEST_SEED)
    )
    assert rel.mechanism.name == "dawa" and rel.mechanism.bound
    assert rel.seeded
    part = rel.mechanism.partition
    assert part is not None and part.n_bins == 64
    assert rel.metadata()["partition"] == list(part.starts)
    assert rel.guarantee.epsilon <= 1.0
    assert len(rel.noisy_levels) == rel.mechanism.bucket_tree.shape.height + 1
    assert np.isfinite(rel.cdf([0.0, 30.0, 64.0])).all()
    assert np.isfinite(rel.range_count(10, 50))
    qs = rel.quantile([0.25, 0.5, 0.75])
    assert (np.diff(qs) >= 0).all()
    hist, edges = rel.histogram()
    assert hist.size == 64 and edges.size == 65
    for call in (
        lambda: rel.stderr("cdf", 3.0),
        lambda: rel.confidence_interval("range_count", 1.0, 5.0),
    ):
        with pytest.raises(InvalidParameterError) as info:
            call()
        assert str(info.value) == NO_INTERVALS  # names no count, value or shape of the data


def test_accountant_is_charged_the_stated_bound_before_noise() -> None:
    budget = treedp.Accountant(PureDP(1.5))
    rel = treedp.release_counts(
        [4, 0, 0, 9], epsilon=1.0, mechanism="dawa", accountant=budget, rng=InsecureSeededSource(3)
    )
    assert 0 < budget.spent.epsilon <= 1.0
    assert rel.guarantee.epsilon <= budget.spent.epsilon
    with pytest.raises(treedp.BudgetExceededError):
        treedp.release_counts([4, 0, 0, 9], epsilon=1.0, mechanism="dawa", accountant=budget)


def test_release_cdf_accepts_dawa() -> None:
    values = np.random.default_rng(0).integers(0, 100, 500)
    rel = treedp.release_cdf(
        values,
        bounds=(0, 99),
        bins="integers",
        epsilon=1.0,
        mechanism="dawa",
        rng=InsecureSeededSource(5),
    )
    assert rel.bins.n_bins == 100 and rel.mechanism.name == "dawa"


@pytest.mark.parametrize("suffix", [".json", ".tdp"])
def test_save_and_load_keep_the_partition(tmp_path, suffix: str) -> None:
    counts = np.r_[np.zeros(30, dtype=int), np.full(10, 7), np.arange(24)]
    rel = treedp.release_counts(counts, epsilon=0.5, mechanism="dawa", rng=InsecureSeededSource(2))
    path = tmp_path / f"dawa{suffix}"
    rel.save(path)
    again = treedp.load_release(path)
    assert again.mechanism.name == "dawa"
    assert again.mechanism.partition == rel.mechanism.partition
    assert again.mechanism.describe() == rel.mechanism.describe()
    assert np.array_equal(again.prefix_counts, rel.prefix_counts)
    assert again.guarantee == rel.guarantee


def test_load_refuses_a_tampered_partition(tmp_path) -> None:
    import json

    rel = treedp.release_counts(
        np.r_[np.zeros(30, dtype=int), np.full(34, 3)],
        epsilon=0.5,
        mechanism="dawa",
        rng=InsecureSeededSource(2),
    )
    doc = rel.to_dict()
    meta = doc["payload"]["metadata"]
    meta["partition_sensitivity"] = 1  # a claim the rebuilt mechanism does not make
    from treedp.release.format import _checksum

    doc["checksum"] = _checksum(doc["payload"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(treedp.ReleaseFormatError):
        treedp.load_release(path)


def test_group_by_release_refuses_dawa_before_any_charge() -> None:
    budget = treedp.Accountant(PureDP(5.0))
    with pytest.raises(InvalidParameterError, match="group-by"):
        treedp.release_grouped(
            {"v": [1, 2, 3], "g": [0, 1, 0]},
            column="v",
            by="g",
            keys=[0, 1],
            bounds=(0, 4),
            bins=4,
            epsilon=1.0,
            mechanism="dawa",
            accountant=budget,
        )
    assert budget.spent.epsilon == 0


def test_the_direct_estimator_is_refused_before_the_charge() -> None:
    """DAWA's bucket tree is planned after its private partition and may switch levels off,
    which the direct estimator cannot read: refused from the public options, before the
    charge (it was charged and then refused for some partitions: 0 of 5 releases at 256
    bins; an independent budget review)."""
    acc = treedp.Accountant(treedp.PureDP(5.0))
    with pytest.raises(treedp.InvalidParameterError, match="direct"):
        treedp.release_cdf(np.arange(100), bounds=(0, 100), bins=256, epsilon=1.0,
                           mechanism=treedp.MechanismOptions("dawa", None, None, "direct"),
                           accountant=acc)  # fmt: skip
    assert acc.history == ()
