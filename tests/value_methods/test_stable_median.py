"""The stable median (propose-test-release): stability, release rule, audits with mutants."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from tests.privacy.auditor import clopper_pearson
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.exceptions import DataError
from treedp.noise import noise_scale
from treedp.value_methods import stable_median as med
from treedp.value_methods.stable_median import _median_stability, stable_median

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


def _release_rate(fn, runs: int) -> tuple[int, int]:
    hits = sum(fn() for _ in range(runs))
    return hits, runs


@pytest.mark.slow
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
    original = med.tail_threshold
    monkeypatch.setattr(med, "tail_threshold", lambda s, d: max(1, original(s, d) - 2))
    hits, runs = _release_rate(
        lambda: stable_median(x, epsilon=1.0, delta=delta, rng=src) is not None, 20_000
    )
    low, _ = clopper_pearson(hits, runs, ALPHA)
    assert low > delta  # flagged


@pytest.mark.slow
def test_audit_stable_median_epsilon_part() -> None:
    """Same median, stabilities d and d - 1: release odds differ by at most e^ε."""
    eps = 1.0
    a = med.tail_threshold(noise_scale(1, eps), 1e-3)
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


def test_median_stability_is_private() -> None:
    """F10: the exact median and its stability are an internal, non-private helper."""
    assert not hasattr(med, "median_stability")
    assert "median_stability" not in med.__all__ and "_median_stability" not in med.__all__
    assert "NOT differentially private" in (med._median_stability.__doc__ or "")
