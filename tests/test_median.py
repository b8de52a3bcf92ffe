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
    _median_stability,
    _quantile_exponential_draws,
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
        value, stability = _median_stability(np.array(x))
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
    assert _median_stability(x) == (5.0, d) and _median_stability(x2) == (5.0, d - 1)
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


@pytest.mark.slow
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
        return _quantile_exponential_draws(
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


@pytest.mark.slow
def test_exponential_quantile_follows_its_exact_law() -> None:
    """End to end: the data interval of the output has P ∝ (grid points) · exp(-rate |i - t|)."""
    x = np.array([1.0, 2.0, 2.0, 2.0, 3.5, 7.0, 7.25, 9.0])
    bounds, eps, q, runs = (0.0, 10.0), 0.8, 0.3, 200_000
    draws = _quantile_exponential_draws(
        x, q, bounds=bounds, epsilon=eps, rng=InsecureSeededSource(TEST_SEED), size=runs
    )
    rank = np.searchsorted(x, draws, side="left")  # #{x_j < y}
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


# ------------------------------------------------------------- review findings F1–F10


def test_quantile_exponential_has_no_size_parameter() -> None:
    """F1: one call is one ε-release; repeated draws live in a private simulation helper."""
    import inspect

    assert "size" not in inspect.signature(quantile_exponential).parameters
    with pytest.raises(TypeError):
        quantile_exponential([1.0], 0.5, bounds=(0, 1), epsilon=1.0, size=10)  # type: ignore[call-arg]
    draws = _quantile_exponential_draws(
        [1.0, 2.0], [0.2, 0.8], bounds=(0, 3), epsilon=1.0, size=7, rng=InsecureSeededSource(1)
    )
    assert draws.shape == (7, 2)
    assert "separate ε-release" in (med._quantile_exponential_draws.__doc__ or "")


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_exponential_quantile_on_empty_data_is_uniform(neighbours: str) -> None:
    """F2: n = 0 is a neighbour of n = 1 under add_remove; it is sampled (uniform on the
    grid), not refused."""
    src = InsecureSeededSource(TEST_SEED)
    value = quantile_exponential([], 0.5, bounds=(0, 100), epsilon=1.0, neighbours=neighbours)
    assert 0 <= value <= 100
    res = quantile_exponential(
        np.array([]), [0.1, 0.9], bounds=(0, 100), epsilon=1.0, neighbours=neighbours,
        rng=src, details=True,
    )  # fmt: skip
    assert res.values.shape == (2,) and res.epsilon_spent <= 1.0
    draws = _quantile_exponential_draws(
        [], 0.3, bounds=(0, 100), epsilon=1.0, neighbours=neighbours, size=50_000, rng=src
    )
    counts = np.histogram(draws, bins=20, range=(0, 100))[0]
    assert stats.chisquare(counts).pvalue > ALPHA


def test_exponential_quantile_nan_and_inf_policy() -> None:
    """F2/F3: NaN/NaT raise one data-free message (or are dropped under add_remove); ±inf are
    clamped to the bounds, not refused."""
    x = np.arange(20.0)
    messages = set()
    for bad in ([np.nan], [np.nan] * 5, [np.nan, 3.0, np.nan]):
        with pytest.raises(DataError) as info:
            quantile_exponential(
                np.concatenate([x, bad]), 0.5, bounds=(0, 30), epsilon=1.0, neighbours="add_remove"
            )
        messages.add(str(info.value))
    assert len(messages) == 1
    (message,) = messages
    assert "nan='drop'" in message and not any(ch.isdigit() for ch in message)
    nat = np.array(["2020-01-01", "NaT"], dtype="datetime64[s]")
    with pytest.raises(DataError, match="NaN/NaT"):
        quantile_exponential(nat, 0.5, bounds=(0, 2e9), epsilon=1.0)

    def run(data, **kw):
        return quantile_exponential(
            data, [0.1, 0.5, 0.99], bounds=(0, 30), epsilon=1.0, rng=InsecureSeededSource(3), **kw
        )

    dropped = run(np.concatenate([x, [np.nan] * 3]), neighbours="add_remove", nan="drop")
    assert np.array_equal(dropped, run(x, neighbours="add_remove"))
    with pytest.raises(InvalidParameterError, match="nan='drop' is not allowed"):
        quantile_exponential(x, 0.5, bounds=(0, 30), epsilon=1.0, nan="drop")
    with pytest.raises(InvalidParameterError, match="'nan'"):
        quantile_exponential(x, 0.5, bounds=(0, 30), epsilon=1.0, nan="keep")
    for nb in ("replace", "add_remove"):
        with_inf = run(np.concatenate([x, [np.inf, -np.inf]]), neighbours=nb)
        clamped = run(np.concatenate([x, [30.0, 0.0]]), neighbours=nb)
        assert np.array_equal(with_inf, clamped)


def test_stable_median_every_input_gets_an_output() -> None:
    """F2: the empty dataset is refused (⊥), ±inf are ordinary values; NaN is one data-free
    error."""
    src = InsecureSeededSource(TEST_SEED)
    assert stable_median([], epsilon=1.0, delta=1e-6, rng=src) is None
    res = stable_median(np.array([]), epsilon=1.0, delta=1e-6, rng=src, details=True)
    assert res.refused and res.neighbours == "replace"
    assert stable_median([np.inf] * 50, epsilon=1.0, delta=1e-6, rng=src) == np.inf
    assert stable_median([1.0] * 50 + [-np.inf], epsilon=1.0, delta=1e-6, rng=src) == 1.0
    messages = set()
    for data in ([1.0, np.nan], [np.nan] * 7 + list(range(40))):
        with pytest.raises(DataError) as info:
            stable_median(data, epsilon=1.0, delta=1e-6)
        messages.add(str(info.value))
    assert len(messages) == 1 and not any(ch.isdigit() for ch in messages.pop())


def test_subsample_and_aggregate_messages_hold_no_data() -> None:
    """F3: no message prints n (or K = n // m); every dataset of the public size gets an
    output, with ±inf included, and no data-dependent warning."""
    src = InsecureSeededSource(TEST_SEED)
    x = np.arange(1234.0)
    cases = [
        ({"m": 5000}, "'m'"),
        ({"m": 1000, "variant": "disjoint"}, "n >= 2m"),
        ({"m": 600, "variant": "disjoint"}, "Too few"),
        ({"m": 0}, "'m'"),
    ]
    for kwargs, match in cases:
        with pytest.raises(InvalidParameterError, match=match) as info:
            subsample_and_aggregate(x, "median", epsilon=1.0, delta=1e-6, rng=src, **kwargs)
        text = str(info.value)
        assert "1234" not in text and "617" not in text and "n=" not in text, text
    texts = set()
    for data in ([], x, x[:7]):  # the same message whatever n
        with pytest.raises(InvalidParameterError, match="'m'") as info:
            subsample_and_aggregate(data, "median", epsilon=1.0, delta=1e-6, m=5000, rng=src)
        texts.add(str(info.value))
    assert len(texts) == 1
    with pytest.raises(InvalidParameterError, match="Too few") as info:
        noisy_mode(np.zeros(9), epsilon=1.0, delta=1e-6, sensitivity=3, rng=src)
    assert "9" not in str(info.value)
    spiky = np.concatenate([np.full(3000, 4.0), [np.inf, -np.inf] * 50])
    for query in ("mean", "median"):
        out = subsample_and_aggregate(
            spiky, query, epsilon=1.0, delta=1e-6, m=10, variant="disjoint", rng=src
        )
        assert out is None or isinstance(out, float)
    with pytest.raises(DataError, match="NaN/NaT") as info:
        subsample_and_aggregate([np.nan] * 3 + [1.0] * 99, "mean", epsilon=1.0, delta=1e-6, m=5)
    assert not any(ch.isdigit() for ch in str(info.value))


def test_results_carry_their_randomness() -> None:
    """F6: MedianResult and QuantileResult record the source, and say when it was seeded."""
    from treedp import SystemRandomSource

    x = np.concatenate([np.full(500, 7.0), np.arange(200.0)])
    seeded = [
        stable_median(x, epsilon=1.0, delta=1e-6, rng=InsecureSeededSource(5), details=True),
        subsample_and_aggregate(
            x, "median", epsilon=1.0, delta=1e-6, m=20, variant="disjoint",
            rng=InsecureSeededSource(5), details=True,
        ),
        quantile_exponential(
            x, 0.5, bounds=(0, 200), epsilon=1.0, rng=InsecureSeededSource(5), details=True
        ),
    ]  # fmt: skip
    for res in seeded:
        assert res.seeded and res.randomness == InsecureSeededSource(5).describe()
        assert repr(res).endswith("[SEEDED: not for publication]")
    honest = [
        stable_median(x, epsilon=1.0, delta=1e-6, rng=SystemRandomSource(), details=True),
        quantile_exponential(x, 0.5, bounds=(0, 200), epsilon=1.0, details=True),
    ]
    for res in honest:
        assert not res.seeded and res.randomness == SystemRandomSource().describe()
        assert "SEEDED" not in repr(res)


def test_tail_threshold_terminates_for_tiny_delta() -> None:
    """F8: the precision grows with log2(1/δ); δ = 1e-39 and 1e-60 (and the smallest
    subnormal) give a threshold certified at 400 digits."""
    from treedp.noise import noise_scale

    ctx = decimal.Context(prec=400)
    for eps in (0.5, 3.0):
        scale = noise_scale(1, eps)
        t = ctx.divide(decimal.Decimal(scale.numerator), decimal.Decimal(scale.denominator))

        def tail(k: int, t=t) -> decimal.Decimal:
            return ctx.divide(ctx.exp(ctx.divide(-k, t)), 1 + ctx.exp(ctx.divide(-1, t)))

        for delta in (1e-39, 1e-60, 5e-324):
            a = med._tail_threshold(scale, delta)
            assert tail(a) <= decimal.Decimal(delta) < tail(a - 1)
            upper = med._tail_upper(scale, a, delta)
            up = ctx.divide(decimal.Decimal(upper.numerator), decimal.Decimal(upper.denominator))
            assert tail(a) <= up <= decimal.Decimal(delta)


def _exact_tail(n: int, m: int, k: int, c: int) -> Fraction:
    p = 1 - Fraction(n - 1, n) ** m
    return sum(
        (math.comb(k, j) * p**j * (1 - p) ** (k - j) for j in range(c + 1, k + 1)), Fraction(0)
    )


def test_sampling_failure_is_certified_exactly() -> None:
    """F9: the bound on P(R > c) holds against the exact rational tail, c is the smallest
    count within δ/2, and the realised δ of a release is at most the request."""
    rng = np.random.default_rng(TEST_SEED)
    for _ in range(25):
        n = int(rng.integers(1, 60))
        m = int(rng.integers(1, n + 1))
        k = int(rng.integers(2, 60))
        budget = Fraction(float(10 ** rng.uniform(-12, -0.4))) / 2
        c, bound = med._sampling_failure(n, m, k, budget)
        exact = _exact_tail(n, m, k, c)
        assert exact <= bound <= budget
        assert bound - exact <= exact * Fraction(1, 2**100) + budget / 2**60
        if c > 1 and m < n:
            assert _exact_tail(n, m, k, c - 1) > budget * (1 - Fraction(1, 2**90))
    # a large case stays fast and matches the exact tail
    c, bound = med._sampling_failure(4000, 40, 5000, Fraction(1e-6) / 2)
    assert c == 88 and float(bound) == pytest.approx(2.937920748467e-07, rel=1e-10)
    # no float decides: the certified c is exactly what exact arithmetic gives near δ/2
    n, m, k = 30, 7, 40
    for c_true in range(10, 20):  # above the mean k·p ≈ 8.4 (budgets below 1/2)
        budget = _exact_tail(n, m, k, c_true)  # the budget equals the exact tail at c_true
        assert med._sampling_failure(n, m, k, budget)[0] == c_true + 1
        assert med._sampling_failure(n, m, k, budget * (1 + Fraction(1, 2**60)))[0] == c_true


def test_median_stability_is_private() -> None:
    """F10: the exact median and its stability are an internal, non-private helper."""
    assert not hasattr(med, "median_stability")
    assert "median_stability" not in med.__all__ and "_median_stability" not in med.__all__
    assert "NOT differentially private" in (med._median_stability.__doc__ or "")
