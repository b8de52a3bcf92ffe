"""A release's quantiles off its CDF shrunk toward the uniform law (release/shrunk.py)."""

from __future__ import annotations

import numpy as np

import treedp
from tests.stats import TEST_SEED
from treedp.release.shrunk import shrinks, shrunk_quantiles

Q = np.arange(1, 100) / 100


def _release(values: np.ndarray, seed: int, **kw: object) -> treedp.Release:
    kw = {"bounds": (0.0, 1.0), "bins": 64, "epsilon": 0.1, **kw}
    return treedp.release_cdf(values, rng=treedp.InsecureSeededSource(seed), **kw)  # type: ignore[arg-type]


def test_only_float_bins_with_a_public_noise_and_a_fit_shrink() -> None:
    x = np.linspace(0.0, 1.0, 200, endpoint=False)
    assert shrinks(_release(x, 1))
    assert not shrinks(_release(x, 1, postprocess="none"))
    assert not shrinks(_release(x, 1, mechanism="dawa"))
    assert not shrinks(_release(np.arange(10.0), 1, bounds=(0, 9), bins="integers"))
    days = np.datetime64("2026-01-01") + np.arange(200).astype("timedelta64[D]")
    assert not shrinks(
        _release(days, 1, bounds=(np.datetime64("2026-01-01"), np.datetime64("2027-01-01")))
    )


def test_a_release_noise_cannot_tell_from_uniform_reads_as_the_uniform_law() -> None:
    """At ``R <= 1`` the shrunk CDF is the uniform law's: quantile ``q`` is ``lo + q (hi -
    lo)``; the release's own quantiles are not."""
    x = np.repeat(np.arange(64) / 64 + 1 / 128, 16)  # 16 records per bin
    seen = 0
    for seed in range(40):
        rel = _release(x, TEST_SEED + seed)
        out, kept = shrunk_quantiles(rel, Q)
        if kept == 0.0:
            seen += 1
            np.testing.assert_allclose(out, Q, rtol=0, atol=1e-12)
            assert np.max(np.abs(rel.quantile(Q) - Q)) > 0.01
        assert 0.0 <= kept < 1.0 or np.array_equal(out, rel.quantile(Q))
    assert seen > 0


def test_a_release_whose_shape_stands_out_is_read_as_it_is() -> None:
    rng = np.random.default_rng(TEST_SEED)
    rel = _release(rng.beta(2.0, 8.0, 10_000), 3, epsilon=1.0)
    out, kept = shrunk_quantiles(rel, Q)
    assert kept == 1.0
    np.testing.assert_array_equal(out, rel.quantile(Q))
