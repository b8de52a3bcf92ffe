"""Blocks as data: noise families (variance, sampler, privacy map), spend records, registry."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.stats import TEST_SEED
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms import (
    MECHANISMS,
    REGISTRY,
    AllIntervalsMechanism,
    Block,
    HistogramMechanism,
    ThresholdMechanism,
    TreeMechanism,
)
from treedp.mechanisms.registry import make_mechanism
from treedp.noise import (
    InsecureSeededSource,
    discrete_gaussian_variance,
    discrete_laplace_variance,
    noise_scale,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from treedp.noise.families import DiscreteGaussian, DiscreteLaplace, NoiseFamily
from treedp.privacy import ZCDP, PureDP, SpendRecord, compose
from treedp.tree import TreeShape, shape_for


@pytest.mark.parametrize("scale", [Fraction(1, 3), Fraction(1), Fraction(7, 2), Fraction(40)])
def test_laplace_family_matches_the_noise_module(scale: Fraction) -> None:
    fam = DiscreteLaplace(scale)
    assert isinstance(fam, NoiseFamily)
    assert fam.variance() == discrete_laplace_variance(scale)
    a = fam.sample(500, InsecureSeededSource(TEST_SEED))
    b = sample_discrete_laplace(scale, 500, InsecureSeededSource(TEST_SEED))
    assert np.array_equal(a, b)
    loss = fam.privacy(2, math.sqrt(2))
    assert isinstance(loss, PureDP)
    assert Fraction(loss.epsilon) >= 2 / scale
    assert loss.epsilon == pytest.approx(float(2 / scale), rel=1e-15)


@pytest.mark.parametrize(("l1", "epsilon"), [(1, 1.0), (2, 0.3), (7, 1 / 3), (1, 1e-3)])
def test_laplace_calibration_never_exceeds_the_budget(l1: int, epsilon: float) -> None:
    fam = DiscreteLaplace.for_budget(l1, epsilon)
    assert fam.scale == noise_scale(l1, epsilon)
    assert fam.privacy(l1, 0.0).epsilon <= epsilon
    assert DiscreteLaplace.approx_variance(l1, epsilon) == pytest.approx(2 * (l1 / epsilon) ** 2)
    assert DiscreteLaplace.approx_variance(l1, 0.0) == 0.0


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), Fraction(1), Fraction(9, 4), Fraction(100)])
def test_gaussian_family_matches_the_noise_module(sigma2: Fraction) -> None:
    fam = DiscreteGaussian(sigma2)
    assert isinstance(fam, NoiseFamily)
    assert fam.variance() == discrete_gaussian_variance(sigma2)
    assert fam.variance() <= float(sigma2) * (1 + 1e-15)
    a = fam.sample(300, InsecureSeededSource(TEST_SEED))
    b = sample_discrete_gaussian(sigma2, 300, InsecureSeededSource(TEST_SEED))
    assert np.array_equal(a, b)
    loss = fam.privacy(2, math.sqrt(2))
    assert isinstance(loss, ZCDP)
    assert Fraction(loss.rho) >= Fraction(2) / (2 * sigma2)  # Δ2² / (2σ²), rounded up
    assert loss.rho == pytest.approx(float(1 / sigma2), rel=1e-12)


def test_gaussian_calibration_never_exceeds_the_budget() -> None:
    for l2_squared, rho in [(1, 0.5), (2, 0.1), (3, 1 / 3)]:
        fam = DiscreteGaussian.for_budget(l2_squared, rho)
        assert fam.sigma2 >= Fraction(l2_squared) / (2 * Fraction(rho))
        assert fam.privacy(0, math.sqrt(l2_squared)).rho <= rho * (1 + 1e-12)


def test_families_validate() -> None:
    with pytest.raises(InvalidTypeError):
        DiscreteLaplace(1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        DiscreteLaplace(Fraction(0))
    with pytest.raises(InvalidTypeError):
        DiscreteGaussian("1")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        DiscreteGaussian(-1)


def _mechanisms() -> list:
    return [
        TreeMechanism(shape_for(64, 4), epsilon=0.7),
        TreeMechanism(shape_for(64, 4), epsilon=0.7, neighbours="replace", n=5),
        HistogramMechanism(10, epsilon=0.3),
        HistogramMechanism(10, epsilon=0.3, neighbours="replace", n=4),
        ThresholdMechanism(10, epsilon=0.3, neighbours="replace", n=3),
        AllIntervalsMechanism(10, epsilon=0.3),
    ]


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: f"{m.name}-{m.neighbours}")
def test_blocks_and_guarantee_agree_with_the_contract(mech) -> None:
    blocks = mech.blocks
    assert all(isinstance(b, Block) for b in blocks)
    assert tuple(b.l1 for b in blocks) == mech.block_sensitivity
    assert [b.size for b in blocks] == [
        x.size
        for x in mech.true_blocks(np.zeros(10 if mech.name != "tree" else 64, dtype=np.int64))
    ]
    assert tuple(0.0 if b.family is None else b.family.variance() for b in blocks) == (
        mech.block_variance()
    )
    for b, scale in zip(blocks, mech.scales, strict=True):
        assert (b.family is None) == (scale is None) == (b.l1 == 0)
        if b.family is not None:
            assert b.family == DiscreteLaplace(scale)
    # the guarantee is the composition of the blocks' guarantees, never above epsilon
    g = mech.guarantee
    assert isinstance(g, PureDP)
    assert Fraction(g.epsilon) >= mech.epsilon_spent()
    assert g.epsilon <= mech.epsilon
    parts = [b.privacy() for b in blocks if b.family is not None]
    assert compose(parts).epsilon == pytest.approx(g.epsilon, rel=1e-12)
    with pytest.raises(AttributeError):
        blocks[0].l1 = 5  # frozen


@pytest.mark.parametrize("mech", _mechanisms(), ids=lambda m: f"{m.name}-{m.neighbours}")
def test_spend_record(mech) -> None:
    record = mech.spend()
    assert isinstance(record, SpendRecord)
    assert record.mechanism == mech.name
    assert record.measure == mech.guarantee
    assert record.neighbours == mech.neighbours
    assert record.unit == "record"
    assert record.parameters["epsilon"] == mech.epsilon
    assert record.parameters["n"] == mech.n
    with pytest.raises(TypeError):
        record.parameters["epsilon"] = 2.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        record.unit = "user"  # type: ignore[misc]
    total = compose([r.measure for r in (record, mech.spend())])
    assert total.epsilon == pytest.approx(2 * record.measure.epsilon)


def test_spend_record_validates() -> None:
    with pytest.raises(InvalidTypeError):
        SpendRecord("tree", 1.0, "add_remove")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        SpendRecord("tree", PureDP(1.0), "swap")  # type: ignore[arg-type]


def test_registry_is_the_one_name_map() -> None:
    assert (
        MECHANISMS
        == tuple(REGISTRY)
        == (
            "tree",
            "histogram",
            "threshold",
            "all_intervals",
            "dawa",
            "strategy",
            "strategy_range",
            "sqrt_factorization",
            "strategy_tree",
            "strategy_padded",
        )
    )
    for name, cls in REGISTRY.items():
        assert cls.name == name
        shape = shape_for(8, 2) if name == "tree" else None
        if name == "sqrt_factorization":  # Gaussian only: built with rho, refused with epsilon
            with pytest.raises(InvalidParameterError, match="Gaussian"):
                make_mechanism(name, n_bins=8, epsilon=1.0, neighbours="add_remove", n=None)
            mech = make_mechanism(
                name, n_bins=8, epsilon=1.0, neighbours="add_remove", n=None, rho=1.0
            )
            assert type(mech) is cls
            continue
        mech = make_mechanism(
            name, n_bins=8, epsilon=1.0, neighbours="add_remove", n=None, shape=shape
        )
        assert type(mech) is cls
    with pytest.raises(InvalidParameterError, match="'mechanism'"):
        make_mechanism("laplace", n_bins=8, epsilon=1.0, neighbours="add_remove", n=None)
    with pytest.raises(InvalidTypeError, match="'mechanism'"):
        make_mechanism(3, n_bins=8, epsilon=1.0, neighbours="add_remove", n=None)  # type: ignore[arg-type]


def test_tree_block_sizes_come_from_the_shape() -> None:
    """A tree's noise sizes are its shape's level sizes (no aggregation of B zeros per
    release): the sizes of its true blocks, off levels and padded last nodes included."""
    for n_bins, branching, budgets in [
        (1000, (4, 8, 32), (0.2, 0.0, 0.35, 0.45)),
        (1000, (4, 8, 32), (0.0, 0.5, 0.0, 0.5)),
        (7, (7,), (0.5, 0.5)),
        (4096, (2,) * 12, (1 / 13,) * 13),
    ]:
        mech = TreeMechanism(TreeShape(n_bins, branching), epsilon=1.0, level_budgets=budgets)
        blocks = mech.true_blocks(np.zeros(n_bins, dtype=np.int64))
        assert mech._block_sizes() == [b.size for b in blocks]
        noise = mech.noise_only(2, InsecureSeededSource(TEST_SEED))
        assert [z.shape for z in noise] == [(2, b.size) for b in blocks]
