"""``release/inference.py``: the noise simulations behind bands, kept per mechanism."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp.release import inference
from treedp.release.inference import noise_errors


def _release(seed: int = 0) -> Any:
    x = np.random.default_rng(seed).uniform(0, 1, 500)
    return treedp.release_cdf(
        x, bounds=(0, 1), bins=64, epsilon=1.0, rng=treedp.InsecureSeededSource(seed)
    )


def _force_band(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every quantile interval simulates its band (by default only where it can narrow)."""
    monkeypatch.setattr(
        inference, "band_may_narrow", lambda cov, prefix, qs, *rest: np.ones(qs.size, bool)
    )


def test_os_randomness_simulates_once_per_mechanism() -> None:
    rel = _release()
    idx = np.arange(65)
    first = noise_errors(rel.mechanism, rel.estimator, 200, None, idx)
    again = noise_errors(rel.mechanism, rel.estimator, 200, None, idx)
    assert again is first and not first.flags.writeable
    with pytest.raises(ValueError):
        first[0, 0] = 1.0  # read-only: no caller can change what the next one gets
    other = noise_errors(rel.mechanism, rel.estimator, 200, None, idx[:10])
    assert other is not first and other.shape == (200, 10)  # another index: its own draws


def test_a_given_source_draws_anew_and_reproducibly() -> None:
    rel = _release()
    idx = np.arange(65)
    a = noise_errors(rel.mechanism, rel.estimator, 200, treedp.InsecureSeededSource(3), idx)
    b = noise_errors(rel.mechanism, rel.estimator, 200, treedp.InsecureSeededSource(3), idx)
    c = noise_errors(rel.mechanism, rel.estimator, 200, treedp.InsecureSeededSource(4), idx)
    assert a is not b and np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.flags.writeable


def test_kept_simulations_are_bounded_per_mechanism() -> None:
    rel = _release()
    for k in range(inference._KEPT_PER_MECHANISM + 3):
        noise_errors(rel.mechanism, rel.estimator, 100, None, np.arange(k + 1))
    assert len(inference._SIMULATED[rel.mechanism]) == inference._KEPT_PER_MECHANISM


def test_a_grouped_report_simulates_each_index_once(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key of a grouped release shares one mechanism: its CDF bands and quantile bands
    draw the noise once per index set, not once per key (the report took 16x the time)."""
    rng = np.random.default_rng(1)
    keys = [f"k{i}" for i in range(6)]
    df = pd.DataFrame(
        {"p": rng.integers(0, 300, 3000), "g": rng.choice(keys, 3000), "v": rng.random(3000)}
    )
    grouped = treedp.release_grouped(
        df,
        column="v",
        by="g",
        keys=keys,
        privacy_unit="p",
        max_contributions=5,
        epsilon=1.0,
        bounds=(0, 1),
        bins=64,
    )
    mechanisms = {id(grouped[k].mechanism) for k in keys}
    calls: list[int] = []
    real = type(grouped[keys[0]].mechanism).noise_only

    def counted(self: Any, count: int, source: Any) -> Any:
        calls.append(count)
        return real(self, count, source)

    monkeypatch.setattr(type(grouped[keys[0]].mechanism), "noise_only", counted)
    treedp.write_report(grouped, str(tmp_path / "g.html"), column="v")
    draws = sum(calls)
    assert len(mechanisms) == 1 and 0 < draws <= 2 * 1000  # two index sets at most


def test_quantile_band_reduces_each_draw_as_the_full_simulation_would() -> None:
    """The band's statistics, reduced batch by batch, give the critical values of the whole
    error matrix (the former computation) for the same seeded draws."""
    from treedp.estimation import band_critical_value

    rel = _release(2)
    qs = np.array([0.1, 0.5, 0.97])
    m_lo, m_hi = inference.quantile_band(
        mechanism=rel.mechanism,
        estimator=rel.estimator,
        covariance=rel.covariance,
        prefix=rel.prefix_counts,
        qs=qs,
        level=0.9,
        simulations=300,
        rng=treedp.InsecureSeededSource(5),
    )
    n_bins = rel.bins.n_bins
    m = np.arange(n_bins + 1)
    errors = noise_errors(rel.mechanism, rel.estimator, 300, treedp.InsecureSeededSource(5), m)
    var_m = rel.covariance.cov(m, m)
    cov_mb = rel.covariance.cov(m, np.full_like(m, n_bins))
    for j, q in enumerate(qs):
        se = np.sqrt(np.maximum(var_m + q**2 * var_m[-1] - 2 * q * cov_mb, 0.0))
        crit = band_critical_value(errors - q * errors[:, -1:], se, 0.9)
        g_hat = rel.prefix_counts - q * rel.prefix_counts[-1]
        upper = np.minimum.accumulate((g_hat + crit * se)[::-1])[::-1]
        lower = np.maximum.accumulate(g_hat - crit * se)
        assert m_lo[j] == max(int(np.argmax(upper >= 0)), 1)
        assert m_hi[j] == max(int(np.argmax(lower >= 0)), 1)


def test_quantile_band_holds_one_batch_of_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    """However many bins, the simulation holds at most ``_BATCH_VALUES`` prefix errors at
    once (a 368,292-bin release once took 11.8 GB for one interval)."""
    rel = _release(3)
    monkeypatch.setattr(inference, "_BATCH_VALUES", 4 * 65)
    sizes: list[int] = []
    real = type(rel.mechanism).noise_only

    def counted(self: Any, count: int, source: Any) -> Any:
        sizes.append(count)
        return real(self, count, source)

    monkeypatch.setattr(type(rel.mechanism), "noise_only", counted)
    _force_band(monkeypatch)
    low, high = rel.quantile_interval(
        [0.25, 0.75], simulations=101, rng=treedp.InsecureSeededSource(1)
    )
    assert sum(sizes) == 101 and max(sizes) == 4
    assert np.all(low <= high)


def test_a_quantile_interval_holds_its_point_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the band's bracket misses the point answer (the consistent CDF, or a point mass
    answered at its bound, can lie outside it), the interval is widened to the point: a
    superset cannot cover less, and a point outside its own interval reads as an error."""
    rel = _release(4)
    qs = np.array([0.2, 0.5, 0.8])
    low, high = rel.quantile_interval(qs, simulations=200, rng=treedp.InsecureSeededSource(1))
    point = rel.quantile(qs)
    assert np.all((low <= point) & (point <= high))
    far = np.array([-0.5, point[1], 1.5])  # below, inside, above the band's ends
    monkeypatch.setattr(type(rel), "_quantile_axis", lambda self, qa: far)
    wide_low, wide_high = rel.quantile_interval(
        qs, simulations=200, rng=treedp.InsecureSeededSource(1)
    )
    assert wide_low[0] == -0.5 and wide_high[2] == 1.5
    assert wide_low[1] == low[1] and wide_high[1] == high[1]


def test_default_simulations_scale_with_the_bins(monkeypatch: pytest.MonkeyPatch) -> None:
    """1000 draws up to 2^16 bins, then 2^26/(B + 1) (each draw is B + 1 values: a release of
    2^19 integer bins took about a minute), at least 200, and always enough for the level."""
    from treedp.release.intervals import _default_simulations

    assert _default_simulations(1024, 0.95) == _default_simulations(2**16 - 1, 0.95) == 1000
    assert _default_simulations(100_000, 0.95) == 2**26 // 100_001 == 671
    assert _default_simulations(2**19, 0.95) == 200
    assert _default_simulations(2**19, 0.999) == 999 and _default_simulations(8, 0.9999) == 9999
    seen: list[int] = []

    def spy(**kwargs: Any) -> Any:  # the band itself is tested above: only its draws here
        seen.append(kwargs["simulations"])
        return np.array([1]), np.array([1])

    monkeypatch.setattr(inference, "quantile_band", spy)
    _force_band(monkeypatch)
    rel = treedp.release_counts(np.ones(100_000, dtype=np.int64), bounds=(0, 100_000),
                                bins=100_000, epsilon=1.0,
                                rng=treedp.InsecureSeededSource(1))  # fmt: skip
    rel.quantile_interval(0.5, rng=treedp.InsecureSeededSource(2))  # past BAND_LIMIT: none
    rel.quantile_interval(0.5, simulations=150, rng=treedp.InsecureSeededSource(2))
    assert seen == [150]
    small = treedp.release_counts(np.ones(4096, dtype=np.int64), bounds=(0, 4096), bins=4096,
                                  epsilon=1.0, rng=treedp.InsecureSeededSource(1))  # fmt: skip
    small.quantile_interval(0.5, rng=treedp.InsecureSeededSource(2))
    assert seen == [150, 1000]


@pytest.mark.slow
@pytest.mark.parametrize("target", [{"epsilon": 0.3}, {"privacy": treedp.ZCDP(0.05)}])
def test_one_sided_bounds_alone_cover_at_their_level(
    target: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past :data:`BAND_LIMIT` bins a quantile interval is the first and last crossings of
    one-sided bounds alone (``crossing_bins``: valid at one index the truth fixes, no band).
    Forced here on 256 bins: 150 releases of 1,500 lognormal values, 90%, each level covered
    at least 0.9 − 4.5 binomial standard deviations, pure ε and zCDP. The bin where the noisy
    CDF crosses ``q`` (factor 0: no allowance for noise), a mutant, misses."""
    from treedp.release import intervals

    monkeypatch.setattr(intervals, "BAND_LIMIT", 0)
    values = np.random.default_rng(5).lognormal(3, 0.5, 1500)
    qs = np.array([0.1, 0.5, 0.9])
    truth = np.quantile(values, qs, method="inverted_cdf")
    trials, covered, mutant = 150, np.zeros(3), np.zeros(3)
    for t in range(trials):
        rel = treedp.release_cdf(values, bounds=(0, 100), bins=256,
                                 rng=treedp.InsecureSeededSource(1000 + t), **target)  # fmt: skip
        low, high = rel.quantile_interval(qs, level=0.9)  # no simulations: no band
        covered += (low <= truth) & (truth <= high)
        m_lo, m_hi = inference.quantile_pointwise(rel.covariance, rel.prefix_counts, qs, 0.0)
        edges = rel.bins.edges
        mutant += (edges[m_lo - 1] <= truth) & (truth <= edges[m_hi])
    tol = 4.5 * np.sqrt(0.9 * 0.1 / trials)
    assert (covered / trials >= 0.9 - tol).all(), covered / trials
    assert (mutant / trials < 0.9 - tol).any(), mutant / trials


def _laplace_tail(p: float, x: float) -> float:
    """``P(X > x)`` for a discrete Laplace draw with ``P(X = k) ∝ p^|k|``."""
    return float(p ** (math.floor(x) + 1) / (1 + p))


def _discrete_gaussian_pmf(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    k = np.arange(-int(40 * np.sqrt(sigma2)) - 40, int(40 * np.sqrt(sigma2)) + 41)
    w = np.exp(-(k.astype(float) ** 2) / (2 * sigma2))
    return k, w / w.sum()


def test_one_lattice_step_keeps_a_single_integer_draw_within_its_tail() -> None:
    """Exact tails: one discrete Laplace draw (``P(X >= k) = p^k/(1 + p)``) or one discrete
    Gaussian draw, over scales where ``c·sd`` falls between lattice points, at levels 0.5 to
    0.999: ``P(X > slack(c, sd)) <= (1 - level)/2``. Without the lattice step (the factor
    alone, what ran until session 26) the tail reached several times that (an independent
    review: 3.4× at 95% for Laplace, 5× for Gaussian)."""
    worst_without = 0.0
    for level in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
        half = (1 - level) / 2
        for eps in np.linspace(0.2, 6.0, 59):  # discrete Laplace, p = exp(-eps)
            p = math.exp(-eps)
            sd = math.sqrt(2 * p) / (1 - p)
            c = inference.tail_factor(1 - level)
            bound = float(inference.slack(c, np.array(sd)))
            assert _laplace_tail(p, bound) <= half * (1 + 1e-9)
            worst_without = max(worst_without, _laplace_tail(p, c * sd) / half)
        for sigma2 in np.linspace(0.05, 4.0, 40):  # discrete Gaussian
            k, pmf = _discrete_gaussian_pmf(float(sigma2))
            sd = math.sqrt(float(np.sum(pmf * k.astype(float) ** 2)))
            c = inference.tail_factor(1 - level, gaussian=True)
            bound = float(inference.slack(c, np.array(sd)))
            assert pmf[k > bound].sum() <= half * (1 + 1e-9)
            worst_without = max(worst_without, pmf[k > c * sd].sum() / half)
    assert worst_without > 2.0  # the mutant: no lattice step


@pytest.mark.slow
def test_the_minimum_is_covered_at_q_zero() -> None:
    """q = 0 on integer bins is the data's minimum; the band's crossing at q = 0 is the lower
    bound itself (``G[0] = 0`` exactly), so intersecting with it covered 0.19 (an independent
    review): the one-sided bounds alone answer q = 0. One record at 7 on 0..15, ε = 1, 300
    releases, 95%: at least 0.95 − 4.5 binomial standard deviations."""
    trials, covered = 300, 0
    for t in range(trials):
        rel = treedp.release_cdf([7], bounds=(0, 15), bins="integers", epsilon=1.0,
                                 rng=treedp.InsecureSeededSource(500 + t))  # fmt: skip
        low, high = rel.quantile_interval(0.0, rng=treedp.InsecureSeededSource(900 + t))
        covered += int(low <= 7 <= high)
    assert covered / trials >= 0.95 - 4.5 * np.sqrt(0.95 * 0.05 / trials)


def _skip_cases() -> list[Any]:
    """Releases where the band narrows some intervals (few records a bin: sparse tails) and
    where it cannot (many records a bin), pure ε and zCDP."""
    out = []
    for seed in range(6):
        g = np.random.default_rng(seed)
        src = treedp.InsecureSeededSource(seed)
        out.append(treedp.release_cdf(g.normal(50, 10, 300), bounds=(0, 100), bins=256,
                                      epsilon=0.3, rng=src))  # fmt: skip
        out.append(treedp.release_cdf(g.normal(50, 10, 1000), bounds=(0, 100), bins=1024,
                                      privacy=treedp.ZCDP(0.05), rng=src))  # fmt: skip
        out.append(treedp.release_cdf(g.lognormal(3, 1, 10_000), bounds=(0, 500), bins=1024,
                                      epsilon=1.0, rng=src))  # fmt: skip
    return out


def test_the_band_is_simulated_only_where_it_can_narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """A band at the normal quantile already holding the one-sided bounds' bins means the
    simulated band (a larger factor: its crossings move outwards) would too: skipping it
    gives the same interval. Checked against the band forced on 18 releases x 5 quantiles,
    where the band narrows some (so the test can fail: a variant that never simulates gives
    other intervals) and where no band runs at all (many records a bin)."""
    qs = np.array([0.0, 0.05, 0.25, 0.5, 0.95])
    runs: list[int] = []
    real_band = inference.quantile_band

    def counted(**kwargs: Any) -> Any:
        runs.append(1)
        return real_band(**kwargs)

    monkeypatch.setattr(inference, "quantile_band", counted)
    default = [rel.quantile_interval(qs, rng=treedp.InsecureSeededSource(9)) for rel in
               _skip_cases()]  # fmt: skip
    ran = len(runs)
    real_may = inference.band_may_narrow
    _force_band(monkeypatch)
    forced = [rel.quantile_interval(qs, rng=treedp.InsecureSeededSource(9)) for rel in
              _skip_cases()]  # fmt: skip
    assert 0 < ran < len(runs) - ran == 18  # some simulated, not all; forced: every one
    for (lo, hi), (flo, fhi) in zip(default, forced, strict=True):
        assert np.array_equal(lo, flo) and np.array_equal(hi, fhi)
    monkeypatch.setattr(inference, "band_may_narrow", lambda *a: np.zeros(qs.size, bool))
    never = [rel.quantile_interval(qs, rng=treedp.InsecureSeededSource(9)) for rel in
             _skip_cases()]  # fmt: skip
    assert any(not np.array_equal(a[0], b[0]) or not np.array_equal(a[1], b[1])
               for a, b in zip(never, forced, strict=True))  # fmt: skip
    # many records a bin: no band at all, and the same answer
    big = _skip_cases()[2]
    monkeypatch.setattr(inference, "band_may_narrow", real_may)
    before = len(runs)
    big.quantile_interval([0.25, 0.5, 0.75], rng=treedp.InsecureSeededSource(9))
    assert len(runs) == before
