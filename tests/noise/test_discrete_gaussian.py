"""The exact discrete Gaussian sampler against the exact pmf: chi-square at alpha = 1e-6."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED, chi_square_pvalue, mean_within
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import (
    InsecureSeededSource,
    SystemRandomSource,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    sample_discrete_gaussian,
)
from treedp.noise import discrete_gaussian as dg
from treedp.noise.families import DiscreteGaussian

DRAWS = 1_000_000
SIGMA2 = [Fraction(1, 4), Fraction(1), Fraction(7, 3), Fraction(1000, 7), Fraction(10**4)]


@lru_cache(maxsize=8)
def _draws(sigma2: Fraction) -> np.ndarray:
    """10^6 seeded draws, shared by the tests of one worker."""
    return sample_discrete_gaussian(sigma2, DRAWS, InsecureSeededSource(TEST_SEED))


def _moments(sigma2: Fraction) -> tuple[float, float]:
    """``E[X²]`` and ``E[X⁴]`` from the exact pmf (float64)."""
    m = math.ceil(40 * math.sqrt(sigma2)) + 2
    k = np.arange(-m, m + 1, dtype=float)
    p = discrete_gaussian_pmf(k, sigma2)
    return float((p * k**2).sum()), float((p * k**4).sum())


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_chi_square_against_exact_pmf(sigma2: Fraction) -> None:
    x = _draws(sigma2)
    assert x.dtype == np.int64 and x.size == DRAWS
    p = chi_square_pvalue(x, lambda k: discrete_gaussian_pmf(k, sigma2))
    assert p > ALPHA, f"chi-square p = {p:.3g} for sigma2 {sigma2}"


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", SIGMA2, ids=str)
def test_mean_and_variance_match_the_exact_moments(sigma2: Fraction) -> None:
    x = _draws(sigma2)
    var, fourth = _moments(sigma2)
    assert mean_within(x.astype(float), 0.0, math.sqrt(var))
    assert mean_within(x.astype(float) ** 2, var, math.sqrt(fourth - var * var))


@pytest.mark.slow
def test_chi_square_with_os_randomness() -> None:
    """OS randomness takes the threaded path (10^6 is not a multiple of the chunk size)."""
    sigma2 = Fraction(50)
    x = sample_discrete_gaussian(sigma2, DRAWS, SystemRandomSource())
    assert x.size == DRAWS
    assert chi_square_pvalue(x, lambda k: discrete_gaussian_pmf(k, sigma2)) > ALPHA


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", [Fraction(7, 3), Fraction(10**4)], ids=str)
@pytest.mark.parametrize("factor", [Fraction(21, 20), Fraction(20, 21)], ids=["x1.05", "/1.05"])
def test_chi_square_detects_a_wrong_sigma2(sigma2: Fraction, factor: Fraction) -> None:
    """The test above can fail: a sampler 5% off in sigma² is rejected at alpha = 1e-6."""
    x = sample_discrete_gaussian(sigma2 * factor, DRAWS, InsecureSeededSource(TEST_SEED))
    assert chi_square_pvalue(x, lambda k: discrete_gaussian_pmf(k, sigma2)) < ALPHA


def test_python_integer_path_has_the_same_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a tiny fast bound most rows take the Python-integer path; the law is unchanged."""
    monkeypatch.setattr(dg, "_FAST_BOUND", 8)  # sigma² = 7/3 (t·b = 6): |Y| >= 2 is slow
    sigma2 = Fraction(7, 3)
    x = sample_discrete_gaussian(sigma2, 200_000, InsecureSeededSource(TEST_SEED))
    assert (np.abs(x) >= 2).mean() > 0.2
    assert chi_square_pvalue(x, lambda k: discrete_gaussian_pmf(k, sigma2)) > ALPHA


@pytest.mark.parametrize(
    "sigma2", [Fraction(1, 4), Fraction(7, 3), Fraction(10**4), Fraction(2**20 + 1, 3)], ids=str
)
def test_exponent_parts_are_exact(sigma2: Fraction) -> None:
    """``k·D + r = z²`` with ``k = floor(γ)``, ``r/D = γ - k`` for both integer paths."""
    a, b = sigma2.numerator, sigma2.denominator
    t = math.isqrt(a // b) + 1
    assert t == math.floor(math.sqrt(Fraction(a, b))) + 1 or (t - 1) ** 2 <= sigma2 < t**2
    d = 2 * a * b * t * t
    limit = dg._fast_limit(a, b, t)
    rng = np.random.default_rng(1)
    mags = np.concatenate(
        [
            np.arange(0, 50, dtype=np.uint64),
            rng.integers(0, limit, 200, dtype=np.uint64),
            np.array([limit - 1, limit, limit + 1, 2**61], dtype=np.uint64),
        ]
    )
    fast = mags[mags < limit]
    for part in (fast, mags):  # all fast (uint64) and mixed (Python integers)
        if part is fast:
            r, k = dg._exponent_parts_fast(part, t * b, a, 1, d)
        else:
            r, k = dg._exponent_parts(part, t * b, a, 1, d)
        for m, ri, ki in zip(part, r, k, strict=True):
            gamma = (Fraction(int(m)) - sigma2 / t) ** 2 / (2 * sigma2)
            assert int(ki) == math.floor(gamma)
            assert Fraction(int(ri), d) == gamma - math.floor(gamma)


def test_seeded_source_is_reproducible_and_os_source_is_not() -> None:
    a = sample_discrete_gaussian(Fraction(25), 1000, InsecureSeededSource(1))
    b = sample_discrete_gaussian(Fraction(25), 1000, InsecureSeededSource(1))
    c = sample_discrete_gaussian(Fraction(25), 1000, InsecureSeededSource(2))
    d = sample_discrete_gaussian(Fraction(25), 1000, SystemRandomSource())
    e = sample_discrete_gaussian(Fraction(25), 1000, SystemRandomSource())
    assert (a == b).all()
    assert not (a == c).all()
    assert not (d == e).all()


def _exact_variance(sigma2: Fraction) -> Decimal:
    """The series in 60-digit decimal arithmetic (correctly rounded exp)."""
    with localcontext() as ctx:
        ctx.prec = 60
        s2 = Decimal(sigma2.numerator) / Decimal(sigma2.denominator)
        m = math.ceil(45 * math.sqrt(sigma2)) + 3
        w = [(-(Decimal(x) ** 2) / (2 * s2)).exp() for x in range(1, m + 1)]
        z = 1 + 2 * sum(w)
        return 2 * sum(Decimal(x) ** 2 * wx for x, wx in zip(range(1, m + 1), w, strict=True)) / z


@pytest.mark.parametrize(
    "sigma2",
    [
        Fraction(1, 10**6),
        Fraction(1, 100),
        Fraction(1, 4),
        Fraction(1),
        Fraction(7, 3),
        Fraction(5),
        Fraction(63),
        Fraction(64),
        Fraction(10**4),
        Fraction(1, 3) * 10**5,
    ],
    ids=str,
)
def test_variance_is_a_tight_upper_bound(sigma2: Fraction) -> None:
    got = discrete_gaussian_variance(sigma2)
    exact = _exact_variance(sigma2)
    assert Decimal(got) >= exact  # never understates
    assert Fraction(math.nextafter(got, -math.inf)) < sigma2  # at most sigma² rounded up
    assert Decimal(got) <= exact * (1 + Decimal("2e-12")) + Decimal("1e-289")


def test_pmf_sums_to_one_and_is_symmetric() -> None:
    for sigma2 in SIGMA2:
        m = math.ceil(40 * math.sqrt(sigma2)) + 2
        k = np.arange(-m, m + 1)
        p = discrete_gaussian_pmf(k, sigma2)
        assert p.sum() == pytest.approx(1.0, rel=1e-13)
        assert (p == p[::-1]).all()


def test_bad_arguments_are_refused() -> None:
    src = InsecureSeededSource(0)
    for bad in (2.5, "7/3", None, True, np.float64(1.0)):
        with pytest.raises(InvalidTypeError, match="sigma2"):
            sample_discrete_gaussian(bad, 3, src)  # type: ignore[arg-type]
        with pytest.raises(InvalidTypeError, match="sigma2"):
            discrete_gaussian_variance(bad)  # type: ignore[arg-type]
    for bad in (0, -1, Fraction(-1, 3), Fraction(0)):
        with pytest.raises(InvalidParameterError, match="sigma2"):
            sample_discrete_gaussian(bad, 3, src)
        with pytest.raises(InvalidParameterError, match="sigma2"):
            discrete_gaussian_pmf(np.arange(3), bad)
    # sigma² < 1 with 2·a·b >= 2**55; 2·a >= 2**55 (large range)
    for bad in (Fraction(1, 2**60), 2**54, Fraction(2**60 + 1, 3), Fraction(2**54 + 1, 2**20)):
        with pytest.raises(InvalidParameterError, match="supported range"):
            sample_discrete_gaussian(bad, 3, src)
        assert not dg.gaussian_supported(bad)
    for good in (10**9, Fraction(2**40 + 1, 2**20), 2**54 - 1, Fraction(2**54 - 1, 3)):
        assert dg.gaussian_supported(good)
        assert sample_discrete_gaussian(good, 4, src).size == 4
    with pytest.raises(InvalidParameterError, match="size"):
        sample_discrete_gaussian(Fraction(1), -1, src)
    with pytest.raises(InvalidTypeError, match="size"):
        sample_discrete_gaussian(Fraction(1), 2.0, src)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="source"):
        sample_discrete_gaussian(Fraction(1), 3, 42)  # type: ignore[arg-type]
    assert sample_discrete_gaussian(Fraction(1), 0, src).size == 0
    assert sample_discrete_gaussian(np.int64(3), 4, src).dtype == np.int64
    assert sample_discrete_gaussian(10**8, 4, src).size == 4  # largest integer range: ~1.3e8


# --- The large range (sigma² beyond ~1.3e8: stepped proposal, module docstring) -------------

LARGE = [Fraction(2**27 + 1), Fraction(2**34 + 1, 3), Fraction(2**40), Fraction(2**53 + 5)]


def _large_gamma(sigma2: Fraction, mag: int, u: int) -> Fraction:
    """``γ = ((|y| - c)² + 2·c·u) / (2σ²)``, exactly."""
    c = math.isqrt(sigma2.numerator // sigma2.denominator)
    return (Fraction(mag - c) ** 2 + 2 * c * u) / (2 * sigma2)


@pytest.mark.parametrize("sigma2", LARGE, ids=str)
def test_large_range_plan(sigma2: Fraction) -> None:
    plan = dg._plan(sigma2)
    a, b = sigma2.numerator, sigma2.denominator
    c = math.isqrt(a // b)
    assert plan.large and plan.q == c and c * c <= sigma2 < (c + 1) ** 2
    assert plan.m == b and plan.d == 2 * a < dg.MAX_GAUSSIAN_DENOMINATOR
    tau = sigma2 / c
    assert plan.rate == plan.step / tau
    assert 256 <= tau / plan.step < 512 or plan.step == 1
    assert dg.geometric_table(plan.rate) is not None
    # The fast limit: the largest fast row with the largest extra term stays below 2**64.
    z = plan.limit - 1 - c
    assert 0 <= z < 2**32 and (z * z + 2 * c * (plan.step - 1)) * b < 2**64


@pytest.mark.parametrize("sigma2", LARGE, ids=str)
def test_large_range_exponent_parts_are_exact(sigma2: Fraction) -> None:
    """``k·D + r = N`` with ``k = floor(γ)``, ``r/D = γ - k``, on both integer paths."""
    plan = dg._plan(sigma2)
    rng = np.random.default_rng(2)
    lim = plan.limit
    mags = np.concatenate(
        [
            np.arange(0, 20, dtype=np.uint64),
            rng.integers(0, lim, 300, dtype=np.uint64),
            np.array([plan.q, lim - 1, lim, lim + 1, 2**60], dtype=np.uint64),
        ]
    )
    us = rng.integers(0, plan.step, mags.size, dtype=np.uint64)
    extra = us * np.uint64(2 * plan.q)
    fast = mags < lim
    parts = [
        (dg._exponent_parts_fast, mags[fast], extra[fast], us[fast]),
        (dg._exponent_parts, mags, extra, us),
    ]
    for fn, m, e, u in parts:
        r, k = fn(m, 1, plan.q, plan.m, plan.d, e)
        for mi, ui, ri, ki in zip(m, u, r, k, strict=True):
            gamma = _large_gamma(sigma2, int(mi), int(ui))
            assert int(ki) == math.floor(gamma)
            assert Fraction(int(ri), plan.d) == gamma - math.floor(gamma)


@pytest.mark.parametrize("sigma2", LARGE, ids=str)
def test_large_range_proposal_times_acceptance_is_gaussian(sigma2: Fraction) -> None:
    """The exactness argument, checked in rationals: ``P(proposal = y)·P(accept | y, u)`` is
    ``exp(-(g·M/τ + γ))`` with ``y = g·M + u``, and ``g·M/τ + γ - y²/(2σ²)`` is the same
    constant for every ``y`` and ``u`` (so the accepted law is ``∝ exp(-y²/(2σ²))``)."""
    plan = dg._plan(sigma2)
    tau = sigma2 / plan.q
    consts = set()
    for g in (0, 1, 2, 7, 1000, 10**6):
        for u in {0, 1, plan.step // 2, plan.step - 1}:
            y = g * plan.step + u
            consts.add(
                g * plan.step / tau + _large_gamma(sigma2, y, u) - Fraction(y * y) / (2 * sigma2)
            )
    assert len(consts) == 1


def _grouped_chi_square(x: np.ndarray, sigma2: Fraction, reach: float = 4.0) -> float:
    """Chi-square p-value on ``8·reach + 2`` cells cut at ``round(σ·z)``,
    ``z = -reach, -reach + 1/4, ..., reach`` (``reach`` 4 for ``10**6`` draws, 3 for ``10**5``).

    ``P(X < e) = Φ((e - 1/2)/σ)`` up to ``0.01/σ²`` (midpoint rule with Euler–Maclaurin's error
    term; the normaliser is ``sqrt(2πσ²)`` up to ``exp(-2π²σ²)``): below ``10**-10`` per cell
    for ``σ² >= 2**27``, a shift of ``10**-4`` in expected counts at ``10**6`` draws.
    """
    sigma = math.sqrt(sigma2)
    cuts = np.linspace(-reach, reach, round(8 * reach) + 1)
    edges = np.array([round(sigma * z) for z in cuts], dtype=np.int64)
    cdf = stats.norm.cdf((edges - 0.5) / sigma)
    probs = np.diff(np.concatenate([[0.0], cdf, [1.0]]))
    observed = np.bincount(np.searchsorted(edges, x, side="right"), minlength=probs.size)
    expected = probs * x.size
    assert expected.min() > 20
    return float(stats.chi2.sf(((observed - expected) ** 2 / expected).sum(), probs.size - 1))


@pytest.mark.slow
@pytest.mark.parametrize("sigma2", LARGE[:3], ids=str)
def test_large_range_chi_square(sigma2: Fraction) -> None:
    x = sample_discrete_gaussian(sigma2, DRAWS, InsecureSeededSource(TEST_SEED))
    assert x.dtype == np.int64 and x.size == DRAWS
    assert _grouped_chi_square(x, sigma2) > ALPHA
    assert mean_within(x.astype(float), 0.0, math.sqrt(sigma2))
    assert mean_within(x.astype(float) ** 2, float(sigma2), math.sqrt(2.0) * float(sigma2))


@pytest.mark.slow
def test_large_range_chi_square_with_os_randomness() -> None:
    sigma2 = Fraction(2**46 + 3, 2**10)
    x = sample_discrete_gaussian(sigma2, DRAWS, SystemRandomSource())
    assert x.size == DRAWS and _grouped_chi_square(x, sigma2) > ALPHA


def test_large_range_python_integer_path_has_the_same_law(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a tiny fast bound every row takes the Python-integer path; the law is unchanged."""
    monkeypatch.setattr(dg, "_FAST_BOUND", 8)
    sigma2 = Fraction(2**34 + 1, 3)
    assert dg._plan(sigma2).limit == 0
    x = sample_discrete_gaussian(sigma2, 100_000, InsecureSeededSource(TEST_SEED))
    assert _grouped_chi_square(x, sigma2, reach=3.0) > ALPHA


def _forget_denominator(sigma2: Fraction) -> dg._Plan:
    """Mutant: the acceptance drops the factor ``b`` of ``σ² = a/b`` (``γ`` too small)."""
    return _REAL_PLAN(sigma2)._replace(m=1)


_REAL_PLAN = dg._plan


@pytest.mark.slow
@pytest.mark.parametrize("mutant", ["no_denominator", "no_integer_part", "sigma2_x1.05"])
def test_large_range_chi_square_catches_wrong_variants(
    monkeypatch: pytest.MonkeyPatch, mutant: str
) -> None:
    """Each deliberately wrong variant is rejected at alpha = 1e-6 with 10^6 draws."""
    sigma2 = Fraction(2**34 + 1, 3)
    drawn = sigma2
    dg._acceptance_rate.cache_clear()
    if mutant == "no_denominator":
        monkeypatch.setattr(dg, "_plan", _forget_denominator)
    elif mutant == "no_integer_part":  # accept by exp(-(γ - floor γ)) only: heavy tails
        monkeypatch.setattr(dg, "_bernoulli_exp_integer", lambda k, source: np.ones(k.size, bool))
    else:
        drawn = sigma2 * Fraction(21, 20)
    x = sample_discrete_gaussian(drawn, DRAWS, InsecureSeededSource(TEST_SEED))
    dg._acceptance_rate.cache_clear()
    assert _grouped_chi_square(x, sigma2) < ALPHA


def test_for_budget_keeps_small_range_and_reaches_the_large_one() -> None:
    small = DiscreteGaussian.for_budget(10**6, 0.01)  # 5e7: the small range, as before
    assert small.sigma2 == Fraction(5 * 10**7)
    a, b = small.sigma2.numerator, small.sigma2.denominator
    t = math.isqrt(a // b) + 1
    assert 2 * a * b * t * t < dg.MAX_GAUSSIAN_DENOMINATOR
    for l2sq, rho in ((10**9, 1e-3), (3 * 2**32 + 1, 0.01), (2**40, 1e-3)):
        fam = DiscreteGaussian.for_budget(l2sq, rho)
        exact = Fraction(l2sq) / (2 * Fraction(rho))
        assert exact <= fam.sigma2 <= exact * (1 + Fraction(1, 2**20)) + 1
        assert dg._plan(fam.sigma2).large
        assert fam.privacy(0, math.sqrt(l2sq)).rho <= rho * (1 + 1e-12)
        assert fam.sample(8, InsecureSeededSource(0)).size == 8
    with pytest.raises(InvalidParameterError, match="too small"):
        DiscreteGaussian.for_budget(2**50, 1e-6)
