"""Shrinking a prefix toward the uniform law: the factor, the exact trace, its expectation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED, z_two_sided
from treedp.estimation.shrinkage import (
    MAX_RELATIVE_NOISE,
    deviation_ratio,
    shrink_to_uniform,
    uniform_shrink_factor,
)


def _dense_trace(rel: treedp.Release, edges: np.ndarray) -> float:
    """``tr Cov(D)`` from the whole covariance matrix of the prefixes (the reference)."""
    b = rel.bins.n_bins
    m = np.arange(b + 1)
    cov = np.asarray(rel.covariance.cov(m[:, None], m[None, :]), dtype=np.float64)
    w = (edges - edges[0]) / (edges[-1] - edges[0])
    a = np.zeros((b - 1, b + 1))
    a[np.arange(b - 1), np.arange(1, b)] = 1.0
    a[:, -1] -= w[1:-1]
    return float(np.trace(a @ cov @ a.T))


def test_the_factor() -> None:
    assert uniform_shrink_factor(0.5) == 0.0
    assert uniform_shrink_factor(1.0) == 0.0
    assert uniform_shrink_factor(float("nan")) == 0.0
    assert uniform_shrink_factor(2.0) == 0.75
    assert uniform_shrink_factor(5.0) == pytest.approx(0.96)
    assert uniform_shrink_factor(9.99) == pytest.approx(1 - 1 / 9.99**2)
    assert uniform_shrink_factor(10.0) == 1.0
    assert uniform_shrink_factor(math.inf) == 1.0


@pytest.mark.parametrize(
    ("mechanism", "edges"),
    [
        ("tree", np.linspace(0.0, 1.0, 65)),
        ("auto", np.linspace(-3.0, 5.0, 65)),  # the planner's strategy at 64 bins
        ("auto", np.array([0.0, 0.1, 0.15, 0.5, 0.6, 0.9, 1.7, 2.0, 4.0])),  # unequal widths
    ],
)
def test_the_trace_is_exact_and_the_output_is_u_plus_f_d(mechanism: str, edges: np.ndarray) -> None:
    rel = treedp.release_cdf(
        np.linspace(edges[0], edges[-1], 500, endpoint=False),
        bins=edges,
        epsilon=0.5,
        mechanism=mechanism,
        rng=treedp.InsecureSeededSource(TEST_SEED),
    )
    b = rel.bins.n_bins
    w = (edges - edges[0]) / (edges[-1] - edges[0])
    trace = _dense_trace(rel, edges)
    rng = np.random.default_rng(TEST_SEED)
    for scale in (0.3, 1.0, 1.4, 2.5, 5.0):  # deviations of norm² scale² · trace: f 0 to 1
        d = np.zeros(b + 1)
        d[1:-1] = rng.standard_normal(b - 1)
        d *= scale * math.sqrt(trace) / np.linalg.norm(d)
        prefix = 400.0 * w + d
        out, kept = shrink_to_uniform(prefix, rel.covariance, edges)
        assert kept == pytest.approx(uniform_shrink_factor(scale**2), rel=1e-9)
        np.testing.assert_allclose(out, 400.0 * w + kept * d, rtol=0, atol=1e-9)
        assert out[0] == prefix[0] and out[-1] == prefix[-1]


def test_a_release_that_stands_out_is_returned_as_it_is() -> None:
    rel = treedp.release_cdf(
        np.zeros(10_000),
        bounds=(0.0, 1.0),
        bins=64,
        epsilon=1.0,
        rng=treedp.InsecureSeededSource(TEST_SEED),
    )
    out, kept = shrink_to_uniform(rel.prefix_counts, rel.covariance, np.asarray(rel.edges))
    assert kept == 1.0
    np.testing.assert_array_equal(out, rel.prefix_counts)


@pytest.mark.parametrize("mechanism", ["tree", "auto"])
def test_the_ratio_is_one_on_average_on_uniform_counts(mechanism: str) -> None:
    """``E ‖D‖² = tr Cov(D)`` when the counts are exactly uniform (``D``'s mean is 0): the mean
    of :func:`deviation_ratio`'s ``R`` over seeded releases is 1 within ``z(ALPHA)`` standard
    errors. The same check has the power to catch a trace that forgets the total's noise
    (``Var P[k]`` alone): that ratio's mean is outside the same acceptance region."""
    edges = np.linspace(0.0, 1.0, 65)
    values = np.repeat((edges[:-1] + edges[1:]) / 2, 8)  # 8 records in every bin
    m = np.arange(1, 64)
    ratios, forgetful = [], []
    for seed in range(600):
        rel = treedp.release_cdf(
            values,
            bins=edges,
            epsilon=1.0,
            mechanism=mechanism,
            rng=treedp.InsecureSeededSource(TEST_SEED + seed),
        )
        ratio, noise = deviation_ratio(rel.prefix_counts, rel.covariance, edges)
        ratios.append(ratio)
        p = np.asarray(rel.prefix_counts)
        d = p[1:-1] - p[-1] * edges[1:-1]
        forgetful.append(float(d @ d) / float(np.sum(rel.covariance.cov(m, m))))
        assert noise == pytest.approx(math.sqrt(_dense_trace(rel, edges) / 63), rel=1e-9)

    def within(r: np.ndarray) -> bool:
        return abs(r.mean() - 1.0) <= z_two_sided() * r.std(ddof=1) / math.sqrt(r.size)

    assert within(np.asarray(ratios))
    assert not within(np.asarray(forgetful))


def test_a_release_too_noisy_for_its_total_is_returned_as_it_is() -> None:
    """The relative-noise rule: the same deviation (``R = 0.9``, which would be shrunk whole)
    on a total whose noise per edge is above :data:`MAX_RELATIVE_NOISE` of it is kept."""
    edges = np.linspace(0.0, 1.0, 65)
    rel = treedp.release_cdf(
        np.full(10, 0.5), bins=edges, epsilon=0.5, rng=treedp.InsecureSeededSource(TEST_SEED)
    )
    _, noise = deviation_ratio(np.linspace(0.0, 1.0, 65), rel.covariance, edges)
    d = np.zeros(65)
    d[1:-1] = np.random.default_rng(TEST_SEED).standard_normal(63)
    d *= math.sqrt(0.9 * 63) * noise / np.linalg.norm(d)  # R = 0.9
    for total, shrunk in ((noise / MAX_RELATIVE_NOISE * 1.01, True), (noise / 0.08, False)):
        prefix = total * edges + d
        out, kept = shrink_to_uniform(prefix, rel.covariance, edges)
        assert (kept == 0.0) == shrunk and (kept == 1.0) != shrunk
        if not shrunk:
            np.testing.assert_array_equal(out, prefix)
    for total in (0.0, -5.0, math.nan):
        out, kept = shrink_to_uniform(np.r_[0.0, np.zeros(63), total], rel.covariance, edges)
        assert kept == 1.0
