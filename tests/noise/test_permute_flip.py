"""Exact permute-and-flip: its law (the sequential procedure's), its far candidates, its checks."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.noise.permute_flip import permute_and_flip


def permute_flip_law(gammas: np.ndarray) -> np.ndarray:
    """``P(k) = p_k · E[1 / (1 + #heads among the others)]``, coins ``p_j = exp(-γ_j)``: the
    law of the first head in a uniformly random order (a Poisson-binomial recursion)."""
    p = np.exp(-np.asarray(gammas, dtype=float))
    out = np.zeros(p.size)
    for k in range(p.size):
        dist = np.zeros(p.size)
        dist[0] = 1.0
        for j in np.delete(np.arange(p.size), k):
            dist[1:] = dist[1:] * (1 - p[j]) + dist[:-1] * p[j]
            dist[0] *= 1 - p[j]
        out[k] = p[k] * float((dist / np.arange(1, p.size + 1)).sum())
    return out


def sequential(gammas: np.ndarray, rng: np.random.Generator) -> int:
    """Permute-and-flip as McKenna and Sheldon state it (the reference, floating point)."""
    for k in rng.permutation(gammas.size):
        if rng.random() < np.exp(-gammas[k]):
            return int(k)
    raise AssertionError("some coin is certain")


def _exponents(gammas: list[Fraction]):  # type: ignore[no-untyped-def]
    """The ``exponents`` callable when every candidate is its own key."""
    return lambda needed: [gammas[k] for k in needed]


@pytest.mark.slow
def test_permute_and_flip_follows_the_sequential_law() -> None:
    """Chi-square of 40,000 exact draws against the closed-form law, which itself matches
    the sequential procedure (simulated in floating point): false-failure rate 2·10^-6.
    The floors are lower bounds of every kind: exact, below, 0, and 64 for ``γ >= 64``."""
    exact = [Fraction(g) for g in ("3/10", "0", "1", "3/10", "5/2", "0", "70", "80")]
    floors = np.array([0, 0, 1, 0, 1, 0, 64, 64])
    gammas = np.array([float(g) for g in exact])
    law = permute_flip_law(gammas)
    assert law.sum() == pytest.approx(1.0)
    rng = np.random.default_rng(TEST_SEED)
    ref = np.bincount([sequential(gammas, rng) for _ in range(40_000)], minlength=gammas.size)
    src = InsecureSeededSource(TEST_SEED)
    got = np.bincount(
        [permute_and_flip(floors, np.arange(8), _exponents(exact), src) for _ in range(40_000)],
        minlength=gammas.size,
    )
    live = law * 40_000 > 5
    for observed in (ref, got):
        assert observed[~live].sum() <= 2  # candidates of probability below 10^-30
        expected = law[live] / law[live].sum() * observed[live].sum()
        assert stats.chisquare(observed[live], expected).pvalue > ALPHA


class _ZeroWords:
    """A source whose first ``zeros`` bytes are 0 (every coin's first 64 bits are 0: no bound
    decides it), then seeded bytes."""

    def __init__(self, zeros: int) -> None:
        self.zeros = zeros
        self.rest = InsecureSeededSource(TEST_SEED)

    def random_bytes(self, n: int) -> bytes:
        head = min(n, self.zeros)
        self.zeros -= head
        return bytes(head) + self.rest.random_bytes(n - head)

    def describe(self) -> str:  # pragma: no cover - not read here
        return "zero words, then seeded"


def test_undecided_coins_are_decided_with_their_own_exponent() -> None:
    """Coins whose first 64 bits are 0 are undecided by every bound: their exponents are
    asked for once, and one of 64 or more is resolved with more bits (tails here: its next
    bits would all have to be 0 too); otherwise only the candidates of floor 0 are asked."""
    asked: list[list[int]] = []
    exact = [Fraction(0), Fraction(64), Fraction(1, 2), Fraction(100)]

    def exponent(needed: np.ndarray) -> list[Fraction]:
        asked.append(needed.tolist())
        return [exact[k] for k in needed]

    floors, keys = np.array([0, 64, 0, 64]), np.arange(4)
    assert permute_and_flip(floors, keys, exponent, _ZeroWords(8 * 4)) in (0, 2)
    assert asked == [[0, 1, 2, 3]]
    asked.clear()
    permute_and_flip(floors, keys, exponent, InsecureSeededSource(TEST_SEED))
    assert asked == [[0, 2]]


@pytest.mark.parametrize(
    ("floors", "exact"),
    [
        (np.array([0, 0]), [Fraction(1), Fraction(2)]),  # no certain coin
        (np.array([0, 0]), [Fraction(0), Fraction(-1)]),  # a negative exponent
        (np.array([0, 3]), [Fraction(0), Fraction(1)]),  # a floor above its exponent
        (np.array([0, 65]), [Fraction(0), Fraction(70)]),  # a floor past 64
        (np.array([], dtype=np.int64), []),  # no candidate
    ],
)
def test_permute_and_flip_refuses_what_has_no_law(floors: np.ndarray, exact: list) -> None:
    with pytest.raises(InvalidParameterError, match="permute_and_flip"):
        permute_and_flip(
            floors, np.arange(floors.size), _exponents(exact), _ZeroWords(8 * floors.size)
        )


def test_shared_exponents_are_computed_once_and_give_the_same_law() -> None:
    """Candidates keyed to one exponent (an empty run): the same law as one key each."""
    exact = [Fraction(0), Fraction(1, 3)]
    keys = np.array([1, 0, 1, 1, 0, 1])
    floors = np.zeros(keys.size, dtype=np.int64)
    law = permute_flip_law(np.array([float(exact[k]) for k in keys]))
    src = InsecureSeededSource(TEST_SEED)
    draws = [
        permute_and_flip(floors, keys, lambda k: [exact[i] for i in k], src) for _ in range(20_000)
    ]
    observed = np.bincount(draws, minlength=keys.size)
    assert stats.chisquare(observed, law * 20_000).pvalue > ALPHA
