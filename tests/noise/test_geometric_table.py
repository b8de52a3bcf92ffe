"""The exact inversion table for geometric magnitudes, and both Laplace magnitude paths."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests.stats import ALPHA, TEST_SEED, chi_square_pvalue
from treedp.noise import discrete_laplace as dl
from treedp.noise.discrete_laplace import discrete_laplace_pmf, sample_discrete_laplace
from treedp.noise.exp_thresholds import floor_scaled_exp_neg
from treedp.noise.geometric_table import GeometricTable, _thresholds, geometric_table
from treedp.noise.rng import InsecureSeededSource

DRAWS = 1_000_000  # ALPHA (tests.stats) is the false-failure rate of each chi-square test


class _Words:
    """A random source that replays given 32-bit words first (then 64-bit ones), then zeros."""

    seeded = True

    def __init__(self, data: bytes) -> None:
        self.data = data

    def random_bytes(self, n: int) -> bytes:
        out, self.data = self.data[:n], self.data[n:]
        return out + bytes(n - len(out))

    def describe(self) -> dict[str, object]:
        return {"source": "replay"}


@pytest.mark.parametrize("x", [Fraction(1, 7), Fraction(3, 2), Fraction(7, 1000), Fraction(2, 3)])
def test_thresholds_are_the_exact_floors(x: Fraction) -> None:
    values = _thresholds(x)
    exact = [floor_scaled_exp_neg(x * y, 32) for y in range(1, len(values) + 2)]
    assert values == exact[:-1]
    assert exact[-1] == 0  # the table stops at the first zero threshold


def _geometric_pmf(x: Fraction):  # type: ignore[no-untyped-def]
    q = np.exp(-float(x))
    return lambda k: np.where(k >= 0, (1 - q) * q ** np.maximum(k, 0), 0.0)


@pytest.mark.parametrize("x", [Fraction(1, 7), Fraction(3, 2), Fraction(1, 300)], ids=str)
def test_chi_square_against_exact_geometric(x: Fraction) -> None:
    table = geometric_table(x)
    assert isinstance(table, GeometricTable)
    y = table.sample(DRAWS, InsecureSeededSource(TEST_SEED))
    assert y.dtype == np.int64
    assert chi_square_pvalue(y, _geometric_pmf(x)) > ALPHA


def test_chi_square_detects_an_off_by_one_table() -> None:
    """The test above can fail: thresholds shifted by one place (exp(-(y+1)x)) are rejected."""
    x = Fraction(1, 7)
    good = geometric_table(x)
    assert good is not None
    wrong = GeometricTable(x, good.ascending[:-1], np.full_like(good.lut, -1))
    y = wrong.sample(DRAWS, InsecureSeededSource(TEST_SEED))
    assert chi_square_pvalue(y, _geometric_pmf(x)) < ALPHA


def test_a_word_equal_to_a_threshold_reveals_more_bits() -> None:
    x = Fraction(1, 7)
    table = geometric_table(x)
    assert table is not None
    t3 = floor_scaled_exp_neg(x * 3, 32)  # W == T_3: y = 1, 2 counted, y = 3 undecided
    below = floor_scaled_exp_neg(x * 3, 96) - (t3 << 64) - 1  # next 64 bits just below exp(-3x)
    above = below + 2
    for extra, expected in ((below, 3), (above, 2)):
        src = _Words(np.uint32(t3).tobytes() + np.uint64(extra).tobytes())
        assert table.sample(1, src)[0] == expected


def test_the_zero_word_is_resolved_past_the_table() -> None:
    """W = 0 ties with every zero threshold: an all-zero U is below every exp(-y·x) there."""
    x = Fraction(3, 2)
    table = geometric_table(x)
    assert table is not None
    size = table.ascending.size
    # U = 2**-96 · 2**63: counts every y with exp(-y·x) > 2**-33, exactly.
    src = _Words(bytes(4) + np.uint64(1 << 63).tobytes())
    expected = max(y for y in range(1, 100) if floor_scaled_exp_neg(x * y, 33) >= 1)
    assert table.sample(1, src)[0] == expected > size


def test_no_table_for_tiny_rates_and_the_chain_path_is_exact(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    assert geometric_table(Fraction(1, 10**7)) is None
    # Force the Bernoulli-chain path for an ordinary scale: same law.
    monkeypatch.setattr(dl, "geometric_table", lambda x: None)
    scale = Fraction(10, 3)
    x = sample_discrete_laplace(scale, DRAWS, InsecureSeededSource(TEST_SEED))
    assert chi_square_pvalue(x, lambda k: discrete_laplace_pmf(k, scale)) > ALPHA


def test_bad_rate_is_refused() -> None:
    with pytest.raises(Exception, match="positive"):
        geometric_table(Fraction(0))


def test_a_rate_past_every_threshold_samples_zeros_without_error() -> None:
    """Scale 1/30 (rate 30 > ln 2**32): the table has no non-zero threshold. Words below
    2**16 take the slow path, which indexed the empty table (an IndexError in about one
    release in five at ε = 45 on 10**5 integer bins); now they resolve exactly."""
    table = geometric_table(Fraction(30))
    assert table is not None and table.ascending.size == 0
    z = sample_discrete_laplace(Fraction(1, 30), 10**6, InsecureSeededSource(1))
    assert not z.any()  # P(Z != 0) = 2e^-30 / (1 + e^-30), about 2e-13 per draw
