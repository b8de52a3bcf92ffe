"""Consistency: monotone projections (L2, L1, integer) against the exact trellis, bands."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import treedp
from tests.stats import ALPHA, TEST_SEED
from treedp.estimation import band_critical_value, consistent_prefix, trellis
from treedp.estimation.consistency import (
    TRELLIS_MAX_CELLS,
    integer_on_grid,
    isotonic_on_grid,
    monotone_l1,
    monotone_l2,
)
from treedp.exceptions import InvalidParameterError


def _loss(h: np.ndarray, p: np.ndarray, loss: str) -> float:
    d = h[1:-1] - p[1:-1]
    return float((d**2).sum() if loss == "l2" else np.abs(d).sum())


def _check_against_trellis(p: np.ndarray) -> None:
    total = int(p[-1])
    for loss, h in (
        ("l1", consistent_prefix(p, loss="l1", integer=True)),
        ("l2", consistent_prefix(p, loss="l2", integer=True)),
        ("l2", integer_on_grid(p, "l2")),
    ):
        h_ref, cost = trellis(p, loss)
        assert (np.diff(h) >= 0).all() and h[0] == 0 and h[-1] == total
        assert np.array_equal(h, np.round(h))
        assert _loss(h, p, loss) == pytest.approx(cost, abs=1e-9)
        assert _loss(h_ref, p, loss) == pytest.approx(cost, abs=1e-9)


@pytest.mark.slow
def test_fast_integer_methods_equal_the_trellis_exhaustively() -> None:
    """Every target vector on a half-integer grid for B <= 4 bins and n <= 4."""
    targets = np.arange(-2, 11) * 0.5  # -1.0 .. 5.0
    checked = 0
    for b in range(2, 5):
        for total in range(5):
            for inner in itertools.product(targets, repeat=b - 1):
                _check_against_trellis(np.array([0.0, *inner, total]))
                checked += 1
    assert checked == 5 * (13 + 13**2 + 13**3)


def test_fast_integer_methods_equal_the_trellis_on_random_instances() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for _ in range(400):
        b = int(rng.integers(2, 12))
        total = int(rng.integers(0, 30))
        _check_against_trellis(
            np.concatenate([[0.0], rng.uniform(-5, total + 5, size=b - 1), [total]])
        )


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-50, 150), min_size=1, max_size=40), st.floats(0, 100))
def test_projections_are_consistent_and_optimal(inner: list[float], total: float) -> None:
    p = np.array([0.0, *inner, total])
    for loss in ("l1", "l2"):
        h = consistent_prefix(p, loss=loss)
        assert h[0] == 0 and h[-1] == total
        assert (np.diff(h) >= -1e-9).all() and (h >= 0).all() and (h <= total + 1e-9).all()
        # no other monotone candidate in [0, n] does better (two natural competitors)
        running = np.clip(np.maximum.accumulate(np.clip(p, 0, total)), 0, total)
        running[-1] = total
        assert _loss(h, p, loss) <= _loss(running, p, loss) + 1e-7
    assert (
        _loss(consistent_prefix(p, loss="l2"), p, "l2")
        <= _loss(consistent_prefix(p, loss="l1"), p, "l2") + 1e-7
    )
    assert (
        _loss(consistent_prefix(p, loss="l1"), p, "l1")
        <= _loss(consistent_prefix(p, loss="l2"), p, "l1") + 1e-7
    )


def test_real_l1_equals_trellis_on_integer_data() -> None:
    """With integer targets an optimal L1 fit is integer: the real and integer optima agree."""
    rng = np.random.default_rng(TEST_SEED)
    for _ in range(200):
        b = int(rng.integers(2, 12))
        total = int(rng.integers(0, 15))
        p = np.concatenate([[0], rng.integers(-5, total + 5, size=b - 1), [total]]).astype(float)
        _, cost = trellis(p, "l1")
        assert _loss(monotone_l1(p), p, "l1") == pytest.approx(cost, abs=1e-9)


def test_integer_l2_rounding_equals_the_grid_solver() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for total in (5000.0, 5000.4, 4999.6):
        p = np.concatenate([[0], np.cumsum(rng.normal(1, 8, 5000)), [total]])
        assert np.array_equal(consistent_prefix(p, integer=True), integer_on_grid(p, "l2"))


def test_grid_solver_with_a_custom_loss() -> None:
    """Any separable convex loss on a grid: a quartic loss against brute force."""
    rng = np.random.default_rng(1)
    grid = np.array([0.0, 0.5, 2.0, 3.0, 7.0])
    for _ in range(50):
        y = rng.uniform(-1, 8, size=4)

        def marginal(i: np.ndarray, j: np.ndarray, y=y) -> np.ndarray:
            return (grid[j] - y[i]) ** 4 - (grid[j - 1] - y[i]) ** 4

        got = grid[isotonic_on_grid(4, grid.size, marginal)]
        best = min(
            (sum((grid[list(c)] - y) ** 4), c)
            for c in itertools.combinations_with_replacement(range(5), 4)
        )
        assert sum((got - y) ** 4) == pytest.approx(best[0])


def test_trellis_refuses_large_instances() -> None:
    p = np.zeros(1000)
    p[-1] = TRELLIS_MAX_CELLS // 100
    with pytest.raises(InvalidParameterError, match="fast method"):
        trellis(p)
    with pytest.raises(InvalidParameterError, match="'loss'"):
        consistent_prefix(p, loss="l3")


def test_release_consistency_api() -> None:
    rng = np.random.default_rng(TEST_SEED)
    values = rng.exponential(10, 300)
    for neighbours, n in (("add_remove", None), ("replace", 300)):
        for post in ("monotone", "monotone_l1"):
            rel = treedp.release_cdf(
                values,
                bounds=(0, 100),
                bins=200,
                epsilon=0.2,
                neighbours=neighbours,
                n=n,
                postprocess=post,
                integer=True,
                rng=treedp.InsecureSeededSource(3),
            )
            counts, _ = rel.histogram()
            assert (counts >= 0).all() and np.array_equal(counts, np.round(counts))
            assert counts.sum() == rel.n
            if n is not None:
                assert rel.n == 300
            xs = np.linspace(-1, 101, 500)
            assert (np.diff(rel.cdf(xs)) >= 0).all()
            assert (rel.range_count(xs[:-1], xs[1:]) >= 0).all()
            raw = rel.cdf(xs, consistent=False)
            assert (np.diff(raw) < 0).any()  # the unbiased estimate is not monotone here
            assert np.allclose(rel.histogram(consistent=False)[0].sum(), rel.prefix_counts[-1])
    none = treedp.release_cdf(
        values,
        bounds=(0, 100),
        bins=50,
        epsilon=1.0,
        postprocess="none",
        rng=treedp.InsecureSeededSource(3),
    )
    assert none.cdf(50.0) == none.cdf(50.0, consistent=False)
    assert none.cdf(50.0, consistent=True) == pytest.approx(
        float(np.interp(50.0, none.bins.edges, none.consistent_counts))
    )
    with pytest.raises(treedp.InvalidParameterError, match="'postprocess'"):
        treedp.release_cdf(values, bounds=(0, 100), bins=50, epsilon=1.0, postprocess="iso")
    with pytest.raises(treedp.InvalidParameterError, match="integer"):
        treedp.release_cdf(
            values, bounds=(0, 100), bins=50, epsilon=1.0, postprocess="none", integer=True
        )


def test_consistency_reduces_error_on_sparse_data() -> None:
    """Seed 004 §VI: on sparse data the projection removes much of the error."""
    rng = np.random.default_rng(TEST_SEED)
    values = rng.uniform(0, 997, 900)
    truth = np.concatenate([[0], np.cumsum(np.bincount(values.astype(int), minlength=997))])
    raw_err, mono_err = [], []
    for seed in range(20):
        rel = treedp.release_cdf(
            values,
            bounds=(0, 997),
            bins=997,
            epsilon=0.1,
            neighbours="replace",
            n=900,
            rng=treedp.InsecureSeededSource(seed),
            mechanism=treedp.MechanismOptions("histogram", estimator="direct"),
        )
        raw_err.append(np.abs(rel.prefix_counts - truth).sum())
        mono_err.append(np.abs(rel.consistent_counts - truth).sum())
    assert np.mean(mono_err) < 0.75 * np.mean(raw_err)


def test_band_critical_value_is_calibrated() -> None:
    """The band from 2,000 simulations covers fresh draws at its nominal rate (and the
    pointwise normal quantile, used as a mutant, does not)."""
    rng = np.random.default_rng(TEST_SEED)
    cov = np.fromfunction(lambda i, j: np.minimum(i, j) + 1.0, (30, 30))
    chol = np.linalg.cholesky(cov)

    def draw(r: int) -> np.ndarray:
        return rng.laplace(size=(r, 30)) / math.sqrt(2) @ chol.T

    se = np.sqrt(np.diag(cov))
    crit = band_critical_value(draw(2000), se, 0.9)
    fresh = draw(20_000)
    covered = (np.abs(fresh) <= crit * se).all(axis=1).mean()
    tol = stats.norm.isf(ALPHA / 2) * math.sqrt(0.9 * 0.1 / 20_000) + 0.02  # + calibration noise
    assert abs(covered - 0.9) <= tol
    pointwise = (np.abs(fresh) <= stats.norm.isf(0.05) * se).all(axis=1).mean()
    assert pointwise < 0.9 - tol


@pytest.mark.slow
@pytest.mark.parametrize(("neighbours", "n"), [("replace", 1500), ("add_remove", None)])
def test_quantile_intervals_cover(neighbours: str, n: int | None) -> None:
    rng = np.random.default_rng(TEST_SEED)
    values = rng.lognormal(3, 0.5, 1500)
    qs = np.array([0.1, 0.5, 0.9])
    truth = np.quantile(values, qs, method="inverted_cdf")
    trials = 150
    covered = np.zeros(3)
    for t in range(trials):
        rel = treedp.release_cdf(
            values,
            bounds=(0, 100),
            bins=256,
            epsilon=0.3,
            neighbours=neighbours,
            n=n,
            rng=treedp.InsecureSeededSource(1000 + t),
        )
        lo, hi = rel.quantile_interval(
            qs, level=0.9, simulations=200, rng=treedp.InsecureSeededSource(9000 + t)
        )
        assert (lo <= rel.quantile(qs) + 1e-9).all() and (rel.quantile(qs) <= hi + 1e-9).all()
        covered += (lo <= truth) & (truth <= hi)
    rate = covered / trials
    tol = stats.norm.isf(ALPHA) * math.sqrt(0.9 * 0.1 / trials)
    assert (rate >= 0.9 - tol).all(), rate


@pytest.mark.slow
def test_integer_quantile_intervals_cover_the_inverse_cdf_integer() -> None:
    """On integer bins the estimate is the inverse-CDF quantile (the smallest integer whose
    CDF reaches ``q·n``): the interval holds it and covers the data's own at its level."""
    rng = np.random.default_rng(TEST_SEED)
    values = np.minimum(rng.poisson(30, 2000), 90)  # heavy ties
    qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    domain = np.arange(0, 91)
    cdf = np.searchsorted(np.sort(values), domain, side="right")
    target = domain[np.searchsorted(cdf, qs * values.size, side="left")]
    trials = 150
    covered = np.zeros(qs.size)
    for t in range(trials):
        rel = treedp.release_cdf(
            values,
            bounds=(0, 90),
            bins="integers",
            epsilon=0.3,
            rng=treedp.InsecureSeededSource(3000 + t),
        )
        lo, hi = rel.quantile_interval(
            qs, level=0.9, simulations=200, rng=treedp.InsecureSeededSource(7000 + t)
        )
        est = rel.quantile(qs)
        assert ((lo <= est) & (est <= hi)).all()
        covered += (lo <= target) & (target <= hi)
    rate = covered / trials
    tol = stats.norm.isf(ALPHA) * math.sqrt(0.9 * 0.1 / trials)
    assert (rate >= 0.9 - tol).all(), rate


def test_quantile_interval_validates() -> None:
    rel = treedp.release_cdf([1.0, 2.0], bounds=(0, 10), bins=10, epsilon=1.0)
    with pytest.raises(treedp.InvalidParameterError, match="'q'"):
        rel.quantile_interval(2.0)
    with pytest.raises(treedp.InvalidParameterError, match="'simulations'"):
        rel.quantile_interval(0.5, simulations=10)
    with pytest.raises(treedp.InvalidParameterError, match="'level'"):
        rel.quantile_interval(0.5, level=0.0)


def test_grid_solver_is_scale_free() -> None:
    """Regression: values 1e-51 apart next to values 1 apart (found by hypothesis)."""
    p = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 3.78e-51, 1.0])
    assert _loss(monotone_l1(p), p, "l1") == pytest.approx(2.0)
    q = np.concatenate([[0.0], [5e8, 5e8 + 1, 3.0e-40, 4e-40, 1e9], [1e9]])
    h = monotone_l1(q)
    best = min(
        _loss(np.array([0.0, *c, 1e9]), q, "l1")
        for c in itertools.combinations_with_replacement(sorted(set(q[1:-1]) | {0.0, 1e9}), 5)
    )
    assert _loss(h, q, "l1") == pytest.approx(best, rel=1e-12)


def test_monotone_l2_equals_scipy_isotonic_regression() -> None:
    """monotone_l2 is scipy's public isotonic_regression fit, bit for bit, clipped to [0, n̂]
    (with and without weights): the same results as the private compiled routine it used to
    load by path, whose output was this call's."""
    from scipy.optimize import isotonic_regression

    rng = np.random.default_rng(3)
    for size in (3, 4, 50, 5000):
        prefix = np.concatenate([[0.0], np.cumsum(rng.normal(1.0, 4.0, size - 1))])
        weights = rng.uniform(0.1, 5.0, size - 2)
        n_hat = max(float(prefix[-1]), 0.0)
        for w in (None, weights):
            fit = isotonic_regression(prefix[1:-1], weights=w).x
            got = monotone_l2(prefix, w)
            assert np.array_equal(got[1:-1], np.clip(fit, 0.0, n_hat))
            assert got[0] == 0.0 and got[-1] == n_hat
    with pytest.raises(InvalidParameterError):
        monotone_l2(np.array([0.0, 2.0, 1.0, 3.0]), np.array([1.0, -1.0]))


def test_the_l2_fits_written_over_the_prefix_equal_the_copies() -> None:
    """``overwrite=True`` writes the same values over the prefix (real and integer fits,
    with and without weights, a negative total); the L1 fit takes no part in it."""
    rng = np.random.default_rng(4)
    for size, drift in ((3, 1.0), (50, 1.0), (5000, 1.0), (200, -0.5)):
        prefix = np.concatenate([[0.0], np.cumsum(rng.normal(drift, 4.0, size - 1))])
        for w, integer in itertools.product((None, rng.uniform(0.1, 5.0, size - 2)), (0, 1)):
            want = consistent_prefix(prefix, integer=bool(integer), weights=w)
            over = prefix.copy()
            got = consistent_prefix(over, integer=bool(integer), weights=w, overwrite=True)
            assert got is over
            assert np.array_equal(got, want)


def test_monotone_l2_pools_adjacent_violators() -> None:
    """A hand-checked fit: the violating pair (2, 1) pools to its mean; the end stays n̂."""
    got = monotone_l2(np.array([0.0, 2.0, 1.0, 3.0]))
    assert got.tolist() == [0.0, 1.5, 1.5, 3.0]
    weighted = monotone_l2(np.array([0.0, 2.0, 1.0, 3.0]), np.array([3.0, 1.0]))
    assert weighted.tolist() == [0.0, 1.75, 1.75, 3.0]  # (3·2 + 1·1) / 4


def test_a_critical_value_needs_enough_simulations() -> None:
    """The band's critical value is the ``ceil(level·(R + 1))``-th of ``R`` statistics; with
    fewer than ``level / (1 - level)`` of them that rank does not exist. Taking the largest
    instead (the former rule) covers at ``R / (R + 1)`` only: 100 draws at level 0.999 cover a
    fresh draw with probability 100/101 (exchangeability), 10 times the stated miss rate."""
    from treedp._validation import check_simulations, enough_simulations
    from treedp.estimation import critical_value

    assert critical_value(np.arange(100.0), 0.999) == math.inf
    assert critical_value(np.arange(999.0), 0.999) == 998.0
    assert critical_value(np.arange(1000.0), 0.95) == 950.0  # rank ceil(0.95 · 1001) = 951
    levels = (0.5, 0.9, 0.95, 0.99, 0.999, 0.9999)
    assert [enough_simulations(v) for v in levels] == [1, 9, 19, 99, 999, 9999]
    for v in levels:  # the fewest: its rank exists, one fewer's does not
        r = enough_simulations(v)
        assert math.ceil(v * (r + 1)) <= r and (r == 1 or math.ceil(v * r) > r - 1)
    with pytest.raises(treedp.InvalidParameterError, match=r"at least 999 for level=0\.999"):
        check_simulations(500, 0.999)
    rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
                                rng=treedp.InsecureSeededSource(1))  # fmt: skip
    with pytest.raises(treedp.InvalidParameterError, match="'simulations'"):
        rel.quantile_interval(0.5, level=0.9999, simulations=1000)
    low, high = rel.quantile_interval(0.5, level=0.9999, rng=treedp.InsecureSeededSource(2))
    assert low <= high  # the default draws the 9,999 that level needs
    from treedp.report.band import cdf_band

    assert cdf_band(rel, level=0.9999).method == "bonferroni"  # auto: too few to simulate
