"""Subsample-and-aggregate and the noisy mode: variants, certified sampling failure, audits."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from tests.privacy.auditor import clopper_pearson
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.exceptions import DataError
from treedp.value_methods import subsample_aggregate as med
from treedp.value_methods.stable_median import stable_median
from treedp.value_methods.subsample_aggregate import noisy_mode, subsample_and_aggregate

ALPHA = 1e-6


def _release_rate(fn, runs: int) -> tuple[int, int]:
    hits = sum(fn() for _ in range(runs))
    return hits, runs


@pytest.mark.slow
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
    monkeypatch.setattr(med, "tail_threshold", lambda s, d: 0)
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
    assert custom == 4.0  # 3/4 of the rows are 4: nearly every block mean rounds to 4
    counter = iter(range(10**6))
    distinct = subsample_and_aggregate(
        x,
        lambda b: float(next(counter)),  # every answer differs: frequency 1, always refused
        epsilon=1.0,
        delta=1e-6,
        m=40,
        variant="disjoint",
        rng=src,
    )
    assert distinct is None
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
