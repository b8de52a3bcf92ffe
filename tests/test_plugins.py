"""Plug-in tables: a toy engine, a toy noise family and a toy mechanism, registered from here.

Each is defined and registered inside this test only — no other module of treedp changes —
and runs end to end through the public API: release, save, load, queries, intervals, report.
This is the check that the tables are real: an engine is one ``Engine`` entry (its
``accepts`` and ``count``), a noise family one class with the ``NoiseFamily`` members, a
mechanism one class plus ``register``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.dispatch import ENGINES, Engine, register_engine
from treedp.estimation.covariance import HistogramCovariance
from treedp.mechanisms.base import Mechanism
from treedp.mechanisms.registry import REGISTRY, register
from treedp.noise import RandomSource, noise_scale
from treedp.noise.discrete_laplace import discrete_laplace_variance, sample_discrete_laplace
from treedp.noise.families import NoiseFamily, float_at_least
from treedp.privacy.measures import Measure, PureDP


# ------------------------------------------------------------------ a toy noise family
@dataclass(frozen=True)
class ToyLaplace:
    """Discrete Laplace of scale ``t`` under another name: pure ``l1/t``-DP per block."""

    scale: Fraction
    name = "toy_laplace"

    def variance(self) -> float:
        return discrete_laplace_variance(self.scale)

    def sample(self, size: int, source: RandomSource) -> np.ndarray:
        return sample_discrete_laplace(self.scale, size, source)

    def privacy(self, l1: int, l2: float) -> Measure:
        return PureDP(float_at_least(Fraction(int(l1)) / self.scale))


# ------------------------------------------------------------------ a toy mechanism
class ToyHistogram(Mechanism):
    """A noisy histogram with :class:`ToyLaplace` noise (add/remove: L1 sensitivity 1)."""

    name = "toy_histogram"

    def __init__(self, n_bins: int, *, epsilon: float, neighbours: str, n: int | None) -> None:
        if neighbours != "add_remove":
            raise treedp.InvalidParameterError("toy_histogram: add_remove only")
        self.n_bins, self.epsilon, self.neighbours, self.n = n_bins, epsilon, neighbours, n
        self.block_epsilons = (epsilon,)
        self.block_sensitivity = (1,)
        self.block_l2 = (1.0,)
        self._set_scales()

    @property
    def families(self) -> tuple[NoiseFamily | None, ...]:
        return tuple(None if s is None else ToyLaplace(s) for s in self.scales)

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        return [np.asarray(counts, dtype=np.int64)]

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        block = np.asarray(levels[0], dtype=np.float64)
        zero = np.zeros((*block.shape[:-1], 1))
        return np.concatenate([zero, np.cumsum(block, axis=-1)], axis=-1)

    def prefix_covariance(self, estimator: str) -> HistogramCovariance:
        return HistogramCovariance(self.n_bins, self.block_variance()[0], False)


# ------------------------------------------------------------------ a toy engine
@dataclass
class ToyTable:
    """A table kind treedp has never heard of: columns in a dict, read one at a time."""

    columns: dict[str, list[float]]
    reads: int = 0


def _count_toy(
    data: ToyTable, column: str | None, bins: Any, nan: Any, progress: Any, local: Any
) -> Any:
    if column not in data.columns:
        raise treedp.InvalidParameterError("The column is not in the toy table.")
    data.reads += 1
    return local.count(np.asarray(data.columns[column], dtype=np.float64), bins, nan=nan)


@pytest.fixture
def plugins() -> Iterator[None]:
    engine = register_engine(Engine("toy", lambda d: isinstance(d, ToyTable), _count_toy))
    register(ToyHistogram)
    try:
        yield
    finally:
        ENGINES.remove(engine)
        del REGISTRY[ToyHistogram.name]


def test_the_toy_family_is_a_noise_family() -> None:
    family = ToyLaplace(noise_scale(1, 0.5))
    assert isinstance(family, NoiseFamily)
    draws = family.sample(20_000, treedp.InsecureSeededSource(1))
    # variance within 5 standard errors (the fourth moment of discrete Laplace ~ 6 var²)
    assert abs(draws.var() - family.variance()) < 5 * family.variance() * np.sqrt(5 / 20_000)


def test_toy_engine_family_and_mechanism_end_to_end(plugins: None, tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    values = rng.uniform(0, 1, 5000).tolist()
    table = ToyTable({"x": values})
    acc = treedp.Accountant(treedp.PureDP(2.0))
    rel = treedp.release_cdf(
        table,
        column="x",
        bounds=(0, 1),
        bins=16,
        epsilon=1.0,
        mechanism="toy_histogram",
        accountant=acc,
        rng=treedp.InsecureSeededSource(7),
    )
    assert table.reads == 1  # counted by the toy engine
    assert rel.mechanism.name == "toy_histogram"
    assert [f.name for f in rel.mechanism.families if f is not None] == ["toy_laplace"]
    assert rel.guarantee == PureDP(1.0)
    assert len(acc.history) == 1
    # queries and intervals
    assert abs(rel.cdf(0.5) / len(values) - 0.5) < 0.05  # counts of records below 0.5
    assert 0.3 < rel.quantile(0.5) < 0.7
    lo, hi = rel.confidence_interval("range_count", 0.25, 0.75)
    assert lo <= rel.range_count(0.25, 0.75) <= hi
    # save and load (binary and JSON): the same release
    for name in ("toy.tdp", "toy.json"):
        path = tmp_path / name
        rel.save(path)
        back = treedp.load_release(path)
        assert back.mechanism.name == "toy_histogram"
        assert np.array_equal(back.noisy_levels[0], rel.noisy_levels[0])
        assert back.cdf(0.5) == rel.cdf(0.5)
        assert back.stderr("cdf", 0.5) == rel.stderr("cdf", 0.5)
    # the report
    page = tmp_path / "toy.html"
    treedp.write_report(rel, page)
    assert "toy_histogram" in page.read_text(encoding="utf-8")


def test_without_registration_the_toys_are_refused() -> None:
    with pytest.raises(treedp.InvalidParameterError, match="mechanism"):
        treedp.release_cdf([0.5], bounds=(0, 1), bins=4, epsilon=1.0, mechanism="toy_histogram")
    with pytest.raises(treedp.TreeDPError):
        treedp.release_cdf(ToyTable({"x": [0.5]}), column="x", bounds=(0, 1), bins=4, epsilon=1.0)
