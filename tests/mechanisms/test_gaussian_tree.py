"""The tree under ρ-zCDP: sensitivities brute-forced, level variances and their budgets."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import treedp
from tests.mechanisms.test_sensitivity import SHAPES, _counts
from tests.stats import TEST_SEED, z_two_sided
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import TreeMechanism
from treedp.mechanisms.tree import level_l2_squared
from treedp.noise import InsecureSeededSource
from treedp.noise.families import DiscreteGaussian, float_at_least
from treedp.privacy.measures import ZCDP, compose
from treedp.tree import shape_for


def _neighbours_of(counts: np.ndarray, relation: str) -> list[np.ndarray]:
    out = []
    for i in range(counts.size):
        if relation == "add_remove":
            for delta in (1, -1):
                if counts[i] + delta >= 0:
                    other = counts.copy()
                    other[i] += delta
                    out.append(other)
        else:
            for j in range(counts.size):
                if i != j and counts[i] > 0:
                    other = counts.copy()
                    other[i] -= 1
                    other[j] += 1
                    out.append(other)
    return out


@pytest.mark.parametrize(("n_bins", "branching"), SHAPES)
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_sensitivities_brute_force(n_bins: int, branching: list[int], relation: str) -> None:
    """Per level: the largest L1 and L2² change over every neighbour equals the claim (never
    above, and attained); over the whole release the largest L2² change equals the sum of
    the per-level claims (the per-level worst cases happen together), which is what the
    zCDP composition charges."""
    counts = _counts(n_bins)
    n = int(counts.sum()) if relation == "replace" else None
    mech = TreeMechanism(shape_for(n_bins, branching), rho=0.5, neighbours=relation, n=n)
    base = mech.true_blocks(counts)
    worst_l1 = [0] * len(base)
    worst_sq = [0] * len(base)
    worst_total_sq = 0
    for other in _neighbours_of(counts, relation):
        total = 0
        for b, (x, y) in enumerate(zip(base, mech.true_blocks(other), strict=True)):
            worst_l1[b] = max(worst_l1[b], int(np.abs(x - y).sum()))
            sq = int(((x - y) ** 2).sum())
            worst_sq[b] = max(worst_sq[b], sq)
            total += sq
        worst_total_sq = max(worst_total_sq, total)
    assert tuple(worst_l1) == mech.block_sensitivity
    assert tuple(worst_sq) == mech.block_l2_squared == level_l2_squared(len(branching), relation)
    assert worst_total_sq == sum(mech.block_l2_squared)
    assert tuple(b.l2**2 for b in mech.blocks) == pytest.approx(mech.block_l2_squared, rel=1e-15)
    assert all(isinstance(b.family, DiscreteGaussian) for b in mech.blocks if b.l1 > 0)
    h = len(branching)
    expected = (1,) * (h + 1) if relation == "add_remove" else (0,) + (2,) * h
    assert mech.block_l2_squared == expected


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("rho", [1e-6, 0.02, 0.5, 3.0, 1250.0])
def test_level_budgets_add_up(relation: str, rho: float) -> None:
    n = 100 if relation == "replace" else None
    mech = TreeMechanism(shape_for(64, [4, 4, 4]), rho=rho, neighbours=relation, n=n)
    spent = mech.rho_spent()
    exact = sum(
        (
            Fraction(d) / (2 * s)
            for d, s in zip(mech.block_l2_squared, mech.sigma2, strict=True)
            if s is not None
        ),
        Fraction(0),
    )
    assert spent == exact <= Fraction(rho)
    # rounding σ² up to a multiple of 2**-20 costs little (at ρ = 1250, σ² ~ 2e-3, 0.2%)
    slack = Fraction(1, 10**4) if rho <= 3 else Fraction(1, 200)
    assert spent >= Fraction(rho) * (1 - slack)
    for d, s, r in zip(mech.block_l2_squared, mech.sigma2, mech.level_budgets, strict=True):
        if d == 0:
            assert s is None and r == 0.0
        else:
            assert isinstance(s, Fraction) and s >= Fraction(d) / (2 * Fraction(r))
    assert mech.guarantee == ZCDP(float_at_least(spent))
    assert mech.guarantee.rho <= rho
    # each block's own stated guarantee composes to at least the mechanism's (rounding up)
    blocks = compose([p for p in (b.privacy() for b in mech.blocks) if p is not None])
    assert isinstance(blocks, ZCDP) and blocks.rho >= mech.guarantee.rho
    assert mech.guarantee_kind == "zcdp" and mech.epsilon == math.inf


def test_explicit_level_budgets_and_errors() -> None:
    shape = shape_for(16, [4, 4])
    mech = TreeMechanism(shape, rho=1.0, level_budgets=[0.2, 0.3, 0.5])
    assert mech.level_budgets == pytest.approx((0.2, 0.3, 0.5))
    with pytest.raises(InvalidParameterError, match="exactly one budget"):
        TreeMechanism(shape, rho=1.0, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="exactly one budget"):
        TreeMechanism(shape)
    for bad in (0.0, -1.0, 1e-9, 2000.0):
        with pytest.raises(InvalidParameterError, match="rho"):
            TreeMechanism(shape, rho=bad)
    with pytest.raises(InvalidParameterError):
        TreeMechanism(shape, rho=1.0, level_budgets=[0.2, 0.3])


def test_noise_is_exact_discrete_gaussian_with_the_stated_variance() -> None:
    """Integer noise; its per-level sample variance matches the family's variance (a normal
    band at ALPHA = 1e-6, Bonferroni over the levels; sd of a sample variance from the
    fourth moment of a Gaussian, 2σ⁴/(n-1))."""
    mech = TreeMechanism(shape_for(16, [4, 4]), rho=0.05)
    noise = mech.noise_only(20_000, InsecureSeededSource(TEST_SEED))
    z = z_two_sided(1e-6 / len(noise))
    for block, var in zip(noise, mech.block_variance(), strict=True):
        assert block.dtype == np.int64
        x = block.ravel().astype(np.float64)
        sd = math.sqrt(2 * var**2 / (x.size - 1))
        assert abs(x.var(ddof=1) - var) <= z * sd
    counts = np.arange(16, dtype=np.int64)
    noisy = mech.measure(counts, InsecureSeededSource(TEST_SEED))
    assert all(level.dtype == np.int64 for level in noisy)


def test_spend_and_description_state_the_gaussian_contract() -> None:
    mech = TreeMechanism(shape_for(16, [4, 4]), rho=0.5, neighbours="replace", n=40)
    spend = mech.spend()
    assert spend.measure == mech.guarantee
    assert spend.parameters["rho"] == 0.5
    d = mech.describe()
    assert d["guarantee"] == "zcdp" and d["noise"] == "discrete_gaussian"
    assert d["block_l2_squared"] == [0, 2, 2]
    assert d["sigma2"][0] is None
    assert all(Fraction(*s) == v for s, v in zip(d["sigma2"][1:], mech.sigma2[1:], strict=True))
    assert mech.privacy_loss(0) == 0.0 and mech.privacy_loss(1) == math.inf
    with pytest.raises(InvalidParameterError, match="rho_spent"):
        mech.epsilon_spent()
    laplace = TreeMechanism(shape_for(16, [4, 4]), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="epsilon_spent"):
        laplace.rho_spent()


def test_budget_sum_message_names_rho_for_gaussian_trees() -> None:
    from treedp.exceptions import InvalidParameterError
    from treedp.privacy.measures import ZCDP

    with pytest.raises(InvalidParameterError, match=r"must sum to rho=0\.5"):
        treedp.release_counts(
            [1, 2, 3, 4],
            bounds=(0, 4),
            bins=4,
            privacy=ZCDP(0.5),
            mechanism=treedp.MechanismOptions(
                "auto", branching=(2, 2), level_budgets=(0.1, 0.1, 0.1)
            ),
        )
