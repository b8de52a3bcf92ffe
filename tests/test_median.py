"""Medians beyond the tree: correctness of the pieces, and privacy audits with mutants."""

from __future__ import annotations

import decimal
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import treedp.median as med
from tests.privacy.auditor import clopper_pearson
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.exceptions import DataError
from treedp.median import (
    median_stability,
    noisy_mode,
    quantile_exponential,
    stable_median,
    subsample_and_aggregate,
)

ALPHA = 1e-6


def _brute_stability(x: list[float]) -> int:
    """Fewest rows to replace (by far-away values) to change the lower median."""
    n = len(x)
    k = (n + 1) // 2
    base = sorted(x)[k - 1]
    for r in range(1, n + 1):
        for rows in itertools.combinations(range(n), r):
            for fill in (-1e9, 1e9):
                y = list(x)
                for i in rows:
                    y[i] = fill
                if sorted(y)[k - 1] != base:
                    return r
    return n


def test_stability_matches_brute_force() -> None:
    rng = np.random.default_rng(TEST_SEED)
    for _ in range(150):
        n = int(rng.integers(1, 8))
        x = rng.integers(0, 4, size=n).astype(float).tolist()
        value, stability = median_stability(x)
        assert value == sorted(x)[(n + 1) // 2 - 1]
        assert stability == _brute_stability(x)


def test_stable_median_releases_stable_data_and_refuses_unstable() -> None:
    src = InsecureSeededSource(TEST_SEED)
    stable = np.concatenate([np.full(500, 7.0), np.arange(200.0)])
    assert stable_median(stable, epsilon=1.0, delta=1e-6, rng=src) == 7.0
    unstable = np.arange(101.0)  # all distinct: stability 1
    results = [stable_median(unstable, epsilon=1.0, delta=1e-6, rng=src) for _ in range(200)]
    assert all(r is None for r in results)
    detailed = stable_median(stable, epsilon=1.0, delta=1e-6, rng=src, details=True)
    assert detailed.value == 7.0 and detailed.neighbours == "replace" and detailed.delta == 1e-6


def test_thresholds_give_the_requested_delta() -> None:
    from treedp.noise import noise_scale

    for eps, delta in [(0.1, 1e-6), (1.0, 1e-6), (1.0, 0.05), (3.0, 1e-9)]:
        scale = noise_scale(1, eps)
        a = med._tail_threshold(scale, delta)
        q = math.exp(-1 / float(scale))
        assert q**a / (1 + q) <= delta < q ** (a - 1) / (1 + q) or a == 1
    # certified, not float-estimated: checked at 80 digits, including a tiny epsilon where
    # q**a in floating point would be off by ~1e-9 relative
    ctx = decimal.Context(prec=80)
    for scale in (noise_scale(1, 1e-6), Fraction(7, 3), Fraction(1)):
        for delta in (1e-6, 1e-12):
            a = med._tail_threshold(scale, delta)
            t = ctx.divide(decimal.Decimal(scale.numerator), decimal.Decimal(scale.denominator))

            def tail(k: int, t=t) -> decimal.Decimal:
                return ctx.divide(ctx.exp(ctx.divide(-k, t)), 1 + ctx.exp(ctx.divide(-1, t)))

            assert tail(a) <= decimal.Decimal(delta)
            assert a == 1 or tail(a - 1) > decimal.Decimal(delta)


def _release_rate(fn, runs: int) -> tuple[int, int]:
    hits = sum(fn() for _ in range(runs))
    return hits, runs


def test_audit_stable_median_delta_part_and_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stability 1: the release probability is at most delta; a lower threshold is caught."""
    delta = 0.02
    x = np.arange(31.0)
    src = InsecureSeededSource(TEST_SEED)
    hits, runs = _release_rate(
        lambda: stable_median(x, epsilon=1.0, delta=delta, rng=src) is not None, 20_000
    )
    low, _ = clopper_pearson(hits, runs, ALPHA)
    assert low <= delta
    original = med._tail_threshold
    monkeypatch.setattr(med, "_tail_threshold", lambda s, d: max(1, original(s, d) - 2))
    hits, runs = _release_rate(
        lambda: stable_median(x, epsilon=1.0, delta=delta, rng=src) is not None, 20_000
    )
    low, _ = clopper_pearson(hits, runs, ALPHA)
    assert low > delta  # flagged


def test_audit_stable_median_epsilon_part() -> None:
    """Same median, stabilities d and d - 1: release odds differ by at most e^ε."""
    eps = 1.0
    a = med._tail_threshold(med.noise_scale(1, eps), 1e-3)
    d = 1 + a  # at the threshold: probabilities near 1/2
    x = np.concatenate([np.zeros(3), np.full(2 * d - 1, 5.0), np.full(3, 10.0)])  # Δ(x) = d
    x2 = x.copy()
    x2[3] = 10.0  # one 5 replaced by 10: same median, stability d - 1
    assert median_stability(x) == (5.0, d) and median_stability(x2) == (5.0, d - 1)
    d1, d2 = d, d - 1
    src = InsecureSeededSource(TEST_SEED)
    runs = 20_000
    h1 = sum(stable_median(x, epsilon=eps, delta=1e-3, rng=src) is not None for _ in range(runs))
    h2 = sum(stable_median(x2, epsilon=eps, delta=1e-3, rng=src) is not None for _ in range(runs))
    hi_first, lo_first = (h1, h2) if d1 > d2 else (h2, h1)
    p_low = clopper_pearson(hi_first, runs, ALPHA)[0]
    p_high = clopper_pearson(lo_first, runs, ALPHA)[1]
    assert math.log(p_low / p_high) <= eps


def test_audit_noisy_mode_and_mutant(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neighbouring answer vectors with different modes (5/5 vs 4/6 of 10): releasing the
    first mode has probability at most delta; a threshold without the δ margin is caught."""
    delta = 0.02
    answers = np.array([0.0] * 5 + [1.0] * 5)
    src = InsecureSeededSource(TEST_SEED)

    def released() -> bool:
        value, _ = noisy_mode(answers, epsilon=1.0, delta=delta, sensitivity=1, rng=src)
        return value is not None

    hits, runs = _release_rate(released, 20_000)
    assert clopper_pearson(hits, runs, ALPHA)[0] <= delta
    monkeypatch.setattr(med, "_tail_threshold", lambda s, d: 0)
    hits, runs = _release_rate(released, 20_000)
    assert clopper_pearson(hits, runs, ALPHA)[0] > delta


def test_subsample_and_aggregate_variants() -> None:
    src = InsecureSeededSource(TEST_SEED)
    x = np.concatenate([np.full(3000, 4.0), np.random.default_rng(1).integers(0, 10, 1000)])
    for variant, kwargs in (("disjoint", {}), ("replacement", {"k": 5000})):
        result = subsample_and_aggregate(
            x,
            "median",
            epsilon=1.0,
            delta=1e-6,
            m=40,
            variant=variant,
            rng=src,
            details=True,
            **kwargs,
        )
        assert result.value == 4.0 and result.delta <= 1e-6
    custom = subsample_and_aggregate(
        x,
        lambda b: float(np.round(np.mean(b))),
        epsilon=1.0,
        delta=1e-6,
        m=40,
        variant="disjoint",
        rng=src,
    )
    assert custom in (4.0, None)
    for kwargs, match in [
        ({"m": 0}, "'m'"),
        ({"m": 40, "variant": "x"}, "'variant'"),
        ({"m": 40, "resolution": -1}, "'resolution'"),
        ({"m": 3000, "variant": "disjoint"}, "n >= 2m"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            subsample_and_aggregate(x, "median", epsilon=1.0, delta=1e-6, rng=src, **kwargs)
    with pytest.raises(InvalidParameterError, match="'query'"):
        subsample_and_aggregate(x, "mode", epsilon=1.0, delta=1e-6, m=40, rng=src)
    with pytest.raises(InvalidParameterError, match="'delta'"):
        stable_median(x, epsilon=1.0, delta=0.0)
    with pytest.raises(DataError):
        stable_median([1.0, np.nan], epsilon=1.0, delta=1e-6)


def test_exponential_quantile_accuracy_and_robustness() -> None:
    rng = np.random.default_rng(TEST_SEED)
    x = rng.lognormal(10, 1, 10**6)
    src = InsecureSeededSource(TEST_SEED)
    out = quantile_exponential(x, [0.1, 0.5, 0.9], bounds=(0, 1e7), epsilon=1.0, rng=src)
    ranks = np.searchsorted(np.sort(x), out) / x.size
    assert np.allclose(ranks, [0.1, 0.5, 0.9], atol=0.01)
    ties = np.repeat([1.0, 2.0, 3.0], 10**6)
    value = quantile_exponential(ties, 0.5, bounds=(0, 10), epsilon=0.5, rng=src)
    assert 1.0 <= value <= 3.0 and math.isfinite(value)
    with pytest.raises(InvalidParameterError, match="'q'"):
        quantile_exponential(x, 1.5, bounds=(0, 1), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'bounds'"):
        quantile_exponential(x, 0.5, bounds=(1, 1), epsilon=1.0)


@pytest.mark.parametrize("neighbours", ["replace", "add_remove"])
def test_audit_exponential_quantile_and_mutant(
    neighbours: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worst-case neighbours for the median's score; the best interval event on a pilot."""
    eps, q, runs = 1.0, 0.5, 200_000
    x = np.linspace(1, 9, 9)
    x2 = x.copy()
    if neighbours == "replace":
        x2[0] = 9.5  # a low value moved to the top: every rank below shifts by one
    else:
        x2 = np.concatenate([x, [0.5]])  # one record added at the bottom

    def draws(data, seed):
        return quantile_exponential(
            data,
            q,
            bounds=(0, 10),
            epsilon=eps,
            neighbours=neighbours,
            rng=InsecureSeededSource(seed),
            size=runs,
        )

    def bound() -> float:
        pilot1, pilot2 = draws(x, 1)[:20_000], draws(x2, 2)[:20_000]
        grid = np.linspace(0, 10, 41)
        best, best_event = -np.inf, None
        for lo, hi in itertools.combinations(grid, 2):
            for a, b in ((pilot1, pilot2), (pilot2, pilot1)):
                k1 = ((a >= lo) & (a < hi)).sum()
                k2 = ((b >= lo) & (b < hi)).sum()
                if k1 > 50 and k2 > 0 and math.log(k1 / k2) > best:
                    best, best_event = math.log(k1 / k2), (lo, hi, a is pilot1)
        lo, hi, first = best_event
        f1, f2 = draws(x, 3), draws(x2, 4)
        a, b = (f1, f2) if first else (f2, f1)
        k1, k2 = int(((a >= lo) & (a < hi)).sum()), int(((b >= lo) & (b < hi)).sum())
        return math.log(clopper_pearson(k1, runs, ALPHA)[0] / clopper_pearson(k2, runs, ALPHA)[1])

    assert bound() <= eps
    # mutant: a sensitivity four times too small (e.g. Δ = 1/4 claimed for the rank score)
    right = med._score_sensitivity
    monkeypatch.setattr(med, "_score_sensitivity", lambda level, nb: right(level, nb) / 4)
    assert bound() > eps


def test_exponential_quantile_follows_its_exact_law() -> None:
    """End to end: the data interval of the output has P ∝ (grid points) · exp(-rate |i - t|)."""
    x = np.array([1.0, 2.0, 2.0, 2.0, 3.5, 7.0, 7.25, 9.0])
    bounds, eps, q, runs = (0.0, 10.0), 0.8, 0.3, 200_000
    res = quantile_exponential(
        x,
        q,
        bounds=bounds,
        epsilon=eps,
        rng=InsecureSeededSource(TEST_SEED),
        size=runs,
        details=True,
    )
    rank = np.searchsorted(x, res.values, side="left")  # #{x_j < y}
    # interval lengths stand in for grid counts: they differ by < 1 point in 2**48
    edges = np.concatenate([[0.0], np.unique(x), [10.0]])
    ranks = np.concatenate([[0], np.searchsorted(x, np.unique(x), side="right")])
    lengths = np.diff(edges)
    rate = eps / 2  # Δ = 1 under replace; the dyadic rounding is below 2**-29 relative
    p = lengths * np.exp(-rate * np.abs(ranks - q * x.size))
    p /= p.sum()
    observed = np.array([(rank == r).sum() for r in ranks])
    assert observed.sum() == runs  # tied ranks (between equal values) never come out
    assert stats.chisquare(observed, p * runs).pvalue > ALPHA


def test_exponential_quantile_states_its_guarantee() -> None:
    x = np.arange(100.0)
    for neighbours, level, delta in (("replace", 0.5, 1.0), ("add_remove", 0.9, 0.9)):
        res = quantile_exponential(
            x, [level, 0.2], bounds=(0, 100), epsilon=0.7, neighbours=neighbours, details=True
        )
        assert res.epsilon == 0.7 and res.neighbours == neighbours
        assert 0.7 * (1 - 2**-28) <= res.epsilon_spent <= 0.7
        assert res.sensitivity[0] == pytest.approx(delta, abs=2**-31)
        assert res.sensitivity[0] >= delta  # the 2**-32 target rounding is paid for
        assert res.grid_points == 2**med.GRID_BITS and res.values.shape == (2,)


def test_grid_counts_are_exact() -> None:
    """count(<= x) is the k with grid(k-1) <= x < grid(k), including on grid points."""
    rng = np.random.default_rng(TEST_SEED)
    cells = 2**med.GRID_BITS
    # ordinary, narrower than float spacing (grid points collapse), and near the largest float
    for lo, hi in ((-3.0, 1e6), (1.0, 1.0 + 1e-12), (-1.7e308, 1.7e308)):
        half = hi / 2 ** (med.GRID_BITS + 1) - lo / 2 ** (med.GRID_BITS + 1)
        on_grid = med._grid_values(rng.integers(0, cells, 1000), lo, hi, half)
        inside = lo + (hi / 2 - lo / 2) * 2 * rng.uniform(0, 1, 5000)
        x = np.concatenate([inside, on_grid, [lo, hi, -np.inf, np.inf, np.nextafter(hi, 0)]])
        k = med._grid_count_at_most(x, lo, hi, half)
        below = med._grid_values(np.maximum(k - 1, 0), lo, hi, half)
        above = med._grid_values(np.minimum(k, cells - 1), lo, hi, half)
        assert ((k == 0) | (below <= x)).all() and ((k == cells) | (above > x)).all()
        assert np.all(
            np.diff(med._grid_values(np.sort(rng.integers(0, cells, 10**4)), lo, hi, half)) >= 0
        )
