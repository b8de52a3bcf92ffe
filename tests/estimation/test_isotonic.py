"""The isotonic regression by pieces: scipy's fit, in bounded extra memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy.optimize import isotonic_regression

from treedp.estimation import isotonic


def _cases(rng: np.random.Generator, n: int) -> list[np.ndarray]:
    """Noisy increasing prefixes, noise alone, a decreasing run across many pieces, ties."""
    return [
        np.cumsum(rng.normal(0.3, 1.0, n)),
        rng.normal(0.0, 1.0, n),
        np.concatenate([np.arange(n // 2, dtype=float), -np.arange(n - n // 2, dtype=float)]),
        np.round(rng.normal(0.0, 1.0, n)),
    ]


@pytest.mark.parametrize("piece", [1, 2, 7, 64])
def test_pieces_give_scipys_fit(piece: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pooling the pieces' blocks at each junction is the whole fit: the values equal one
    scipy call's up to the rounding of pooled means (1e-12 of the scale), non-decreasing,
    with and without weights; a wrong junction rule (pooling only the last block) fails."""
    monkeypatch.setattr(isotonic, "PIECE", piece)
    rng = np.random.default_rng(41)
    for n in (1, piece, piece + 1, 5 * piece + 3, 1000):
        for y in _cases(rng, n):
            for w in (None, rng.uniform(0.1, 5.0, n)):
                want = isotonic_regression(y, weights=w).x
                got = np.empty(n)
                isotonic.isotonic_into(y, w, got)
                assert np.all(np.diff(got) >= 0.0)
                scale = max(1.0, float(np.max(np.abs(want))))
                assert np.max(np.abs(got - want)) <= 1e-12 * scale


def test_one_piece_is_scipy_bit_for_bit() -> None:
    rng = np.random.default_rng(42)
    y = np.cumsum(rng.normal(0.1, 1.0, 5000))
    got = np.empty_like(y)
    isotonic.isotonic_into(y, None, got)
    assert np.array_equal(got, isotonic_regression(y).x)


def test_a_block_longer_than_a_piece_is_filled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isotonic, "PIECE", 8)
    y = np.concatenate([[5.0] * 3, np.linspace(10.0, 0.0, 50), [20.0, 21.0]])
    got = np.empty_like(y)
    isotonic.isotonic_into(y, None, got)
    assert np.allclose(got, isotonic_regression(y).x, rtol=0.0, atol=1e-12)


def test_the_extra_memory_is_pieces_not_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory a fit of 2^18 values allocates beyond its output, traced: less than one
    array of the input's length by pieces of 2^14, where one scipy call allocates three."""
    monkeypatch.setattr(isotonic, "PIECE", 1 << 14)
    y = np.cumsum(np.random.default_rng(43).normal(0.05, 1.0, 1 << 18))
    out = np.empty_like(y)
    isotonic_regression(y[:10])  # scipy's import and first-call allocations, untraced

    def peak(fit: object) -> int:
        tracemalloc.start()
        try:
            fit()  # type: ignore[operator]
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    ours = peak(lambda: isotonic.isotonic_into(y, None, out))
    whole = peak(lambda: isotonic_regression(y))
    assert whole >= 3 * y.nbytes
    assert ours < y.nbytes


def test_pooled_rounding_never_breaks_monotonicity(monkeypatch: pytest.MonkeyPatch) -> None:
    """A constant column with unequal weights pools into blocks whose means are the constant up
    to an ulp either way; pooled at a junction, a mean can round an ulp below the previous
    block's (found by a fuzz: 87,082 values, pieces of 610). The fit stays non-decreasing."""
    monkeypatch.setattr(isotonic, "PIECE", 610)
    rng = np.random.default_rng(44)
    y = np.full(87_082, 3.0)
    got = np.empty_like(y)
    isotonic.isotonic_into(y, rng.uniform(0.01, 10.0, y.size), got)
    assert np.all(np.diff(got) >= 0.0)
    assert np.max(np.abs(got - 3.0)) <= 1e-14


@pytest.mark.parametrize("piece", [3, 1 << 20])
def test_the_fit_may_be_written_over_its_input(piece: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``out`` may be ``y`` itself (every value is read before any is written): the same
    values as into a separate array, one piece or many."""
    monkeypatch.setattr(isotonic, "PIECE", piece)
    rng = np.random.default_rng(43)
    for y in _cases(rng, 200):
        for w in (None, rng.uniform(0.1, 5.0, y.size)):
            apart = np.empty_like(y)
            isotonic.isotonic_into(y, w, apart)
            over = y.copy()
            isotonic.isotonic_into(over, w, over)
            assert np.array_equal(over, apart)
