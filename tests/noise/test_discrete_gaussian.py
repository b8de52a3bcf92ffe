"""The exact discrete Gaussian sampler against the exact pmf: chi-square at alpha = 1e-6."""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest

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
        r, k = dg._exponent_parts(part, a, b, t)
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
    for bad in (Fraction(1, 2**60), 10**9, Fraction(2**40 + 1, 2**20)):  # 2·a·b·t² >= 2**55
        with pytest.raises(InvalidParameterError, match="supported range"):
            sample_discrete_gaussian(bad, 3, src)
    with pytest.raises(InvalidParameterError, match="size"):
        sample_discrete_gaussian(Fraction(1), -1, src)
    with pytest.raises(InvalidTypeError, match="size"):
        sample_discrete_gaussian(Fraction(1), 2.0, src)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="source"):
        sample_discrete_gaussian(Fraction(1), 3, 42)  # type: ignore[arg-type]
    assert sample_discrete_gaussian(Fraction(1), 0, src).size == 0
    assert sample_discrete_gaussian(np.int64(3), 4, src).dtype == np.int64
    assert sample_discrete_gaussian(10**8, 4, src).size == 4  # largest integer range: ~1.3e8
