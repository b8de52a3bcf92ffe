"""Releases: query semantics, metadata, prefix/range identities, save/load and failure safety."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import treedp
from tests.call_forms import release_kwargs
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, ReleaseFormatError, load_release, release_cdf

RNG = np.random.default_rng(TEST_SEED)
VALUES = RNG.normal(50, 12, size=5000)


def _release(**kwargs) -> treedp.Release:
    base = {"bounds": (0, 100), "bins": 100, "epsilon": 1.0, "rng": InsecureSeededSource(1)}
    base.update(kwargs)
    return release_cdf(kwargs.pop("values", VALUES), **release_kwargs(base))


@pytest.mark.parametrize("mechanism", ["tree", "histogram", "threshold", "all_intervals"])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_every_mechanism_answers_every_query(mechanism: str, neighbours: str) -> None:
    n = VALUES.size if neighbours == "replace" else None
    rel = _release(mechanism=mechanism, neighbours=neighbours, n=n)
    assert isinstance(rel.cdf(50), float)
    assert rel.cdf([10, 50, 90]).shape == (3,)
    assert rel.cdf(np.zeros((2, 3))).shape == (2, 3)
    assert isinstance(rel.range_count(40, 60), float)
    assert rel.range_count([0, 40], [100, 60]).shape == (2,)
    q = rel.quantile([0.1, 0.5, 0.9])
    if rel.n > 0:
        assert (np.diff(q) >= 0).all() and 0 <= q[0] <= q[-1] <= 100
    else:  # documented: no quantiles when the estimated count is not positive
        assert np.isnan(q).all()
    counts, edges = rel.histogram()
    assert counts.shape == (100,) and edges.shape == (101,)
    assert rel.cdf(-1) == 0 and rel.cdf(1000) == pytest.approx(rel.n)
    if neighbours == "replace":
        assert rel.n == VALUES.size
    # accuracy: within 5.5 exact standard errors (a Laplace tail of about 1e-3.4 at worst)
    true_mid = (VALUES <= 50).sum()
    assert abs(rel.cdf(50.0) - true_mid) < 5.5 * rel.stderr("cdf", 50.0)


@pytest.mark.parametrize("mechanism", treedp.mechanisms.MECHANISMS)
@pytest.mark.parametrize("postprocess", ["monotone", "monotone_l1", "integer"])
def test_the_consistent_cdf_first_leaves_the_prefixes_and_levels_as_they_were(
    mechanism: str, postprocess: str
) -> None:
    """A consistent CDF asked for before the prefixes is fitted over a fresh estimate (no
    second array of the prefixes' length): the same values either way, and neither the
    noisy levels nor the prefixes asked for afterwards are touched by the fit."""
    kwargs: dict[str, Any] = {"mechanism": mechanism, "bins": 64}
    if mechanism == "sqrt_factorization":
        kwargs.update(epsilon=None, privacy=treedp.ZCDP(0.5))
    if postprocess == "integer":
        kwargs.update(integer=True)
    else:
        kwargs.update(postprocess=postprocess)
    first, second = _release(**kwargs), _release(**kwargs)
    levels = [lv.copy() for lv in first.noisy_levels]
    want = (first.prefix_counts.copy(), first.consistent_counts)
    got_fit = second.consistent_counts
    assert not np.shares_memory(got_fit, second.prefix_counts)
    assert np.array_equal(got_fit, want[1])
    assert np.array_equal(second.prefix_counts, want[0])
    assert all(np.array_equal(a, b) for a, b in zip(second.noisy_levels, levels, strict=True))


def test_metadata_is_complete() -> None:
    rel = _release(branching=[4, 5, 5], level_budgets=[0.1, 0.2, 0.3, 0.4])
    meta = rel.metadata()
    for key in (
        "mechanism",
        "guarantee",
        "epsilon",
        "neighbours",
        "block_epsilons",
        "block_sensitivity",
        "scales",
        "estimator",
        "branching",
        "level_variance",
        "bins",
        "randomness",
        "library_version",
    ):
        assert key in meta
    assert meta["guarantee"] == "pure" and meta["branching"] == [4, 5, 5]
    assert rel.seeded and meta["randomness"] == {"source": "numpy.PCG64", "seeded": True, "seed": 1}
    assert [lv.size for lv in rel.noisy_levels] == [1, 4, 20, 100]
    assert len(rel.level_variance) == 4
    assert rel.level_budgets == pytest.approx((0.1, 0.2, 0.3, 0.4))
    assert rel.library_version == treedp.__version__
    assert "SEEDED" in repr(rel)
    unseeded = release_cdf(VALUES, bounds=(0, 100), bins=10, epsilon=1.0)
    assert not unseeded.seeded and unseeded.randomness == {"source": "os.urandom", "seeded": False}
    assert all(not lv.flags.writeable for lv in rel.noisy_levels)


def test_the_release_keeps_the_frozen_blocks_and_copies_a_callers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The mechanism's fresh noisy blocks are handed over frozen and kept as they are (at
    2^24 bins a copy is 139 MB); a caller's writeable arrays are copied, so writing to them
    afterwards leaves the release as it was."""
    from treedp.mechanisms.base import Mechanism

    measured: list[np.ndarray] = []
    original = Mechanism.measure

    def spy(self: Mechanism, counts: np.ndarray, source: Any) -> list[np.ndarray]:
        measured[:] = original(self, counts, source)
        return measured

    monkeypatch.setattr(Mechanism, "measure", spy)
    rel = _release(branching=10)
    assert measured and all(a is b for a, b in zip(rel.noisy_levels, measured, strict=True))
    mine = [lv.copy() for lv in rel.noisy_levels]
    again = treedp.Release(
        bins=rel.bins,
        mechanism=rel.mechanism,
        noisy_levels=mine,
        estimator=rel.estimator,
        randomness=rel.randomness,
        library_version=rel.library_version,
    )
    mine[-1][:] = 10**6
    assert all(not lv.flags.writeable for lv in again.noisy_levels)
    assert np.array_equal(again.cdf([10.0, 50.0]), rel.cdf([10.0, 50.0]))


def test_noisy_levels_rederive_the_estimates() -> None:
    rel = _release(neighbours="replace", n=VALUES.size, branching=10, estimator="direct")
    levels = rel.noisy_levels
    assert levels[0][0] == VALUES.size and rel.level_variance[0] == 0
    # prefix of the first 37 bins: 3 level-1 nodes and 7 leaves (Lemma IV.1)
    assert rel.prefix_counts[37] == levels[1][:3].sum() + levels[2][30:37].sum()
    assert rel.cdf(37.0, consistent=False) == rel.prefix_counts[37]
    # the default efficient estimate is re-derived from the same public numbers
    from treedp.estimation import efficient_tree

    eff = _release(neighbours="replace", n=VALUES.size, branching=10)
    assert eff.estimator == "efficient"
    fit = efficient_tree(eff.mechanism.shape, eff.noisy_levels, eff.level_variance)
    assert np.allclose(fit.prefix(100), eff.prefix_counts)
    assert eff.prefix_counts[-1] == VALUES.size


@settings(max_examples=60, deadline=None)
@given(st.floats(-10, 110), st.floats(-10, 110))
def test_range_is_difference_of_cdfs(a: float, b: float) -> None:
    rel = _release()
    a, b = min(a, b), max(a, b)
    assert rel.range_count(a, b) == pytest.approx(rel.cdf(b) - rel.cdf(a), abs=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_quantiles_are_monotone_in_q(qs: list[float]) -> None:
    rel = _release(epsilon=0.05)
    q = np.sort(np.array(qs))
    out = rel.quantile(q)
    assert (np.diff(out) >= 0).all()


def test_integer_domain_answers_at_integers() -> None:
    ages = np.array([20, 20, 21, 30, 30, 30, 45])
    rel = release_cdf(
        ages, bounds=(18, 50), bins="integers", epsilon=50.0, rng=InsecureSeededSource(3)
    )
    assert rel.cdf(20) == pytest.approx(2, abs=1)
    assert rel.cdf(30) == pytest.approx(6, abs=1)
    assert rel.range_count(21, 31) == pytest.approx(4, abs=1)
    # the smallest integer whose released CDF reaches q·n = 3.5: 30 (CDF 3 at 21, 6 at 30),
    # the median of the seven ages (the nearest-CDF rule of an earlier round answered 21)
    assert rel.quantile(0.5) == 30.0
    assert float(rel.quantile(0.5)).is_integer()


def test_datetime_release() -> None:
    start = np.datetime64("2024-01-01T00:00:00")
    values = start + RNG.integers(0, 86400 * 30, size=2000).astype("timedelta64[s]")
    rel = release_cdf(
        values,
        bounds=("2024-01-01", "2024-01-31"),
        bins=30,
        epsilon=5.0,
        rng=InsecureSeededSource(2),
    )
    med = rel.quantile(0.5)
    assert isinstance(med, np.datetime64)
    assert (
        abs(
            (med - np.median(values.astype(np.int64)).astype("datetime64[s]"))
            / np.timedelta64(1, "D")
        )
        < 2
    )
    assert rel.cdf(np.datetime64("2024-02-01")) == pytest.approx(rel.n)
    with pytest.raises(treedp.InvalidTypeError):
        rel.cdf(5.0)


def test_bad_queries() -> None:
    rel = _release()
    with pytest.raises(treedp.InvalidParameterError, match="'q'"):
        rel.quantile(1.5)
    with pytest.raises(treedp.InvalidParameterError, match="'q'"):
        rel.quantile("median")
    with pytest.raises(treedp.InvalidParameterError, match="NaN"):
        rel.cdf(np.nan)
    with pytest.raises(treedp.InvalidParameterError, match="a <= b"):
        rel.range_count(5, 1)
    with pytest.raises(treedp.InvalidTypeError):
        rel.cdf("abc")


@pytest.mark.parametrize("mechanism", ["tree", "histogram", "threshold", "all_intervals"])
def test_save_load_round_trip(tmp_path: Path, mechanism: str) -> None:
    rel = _release(
        mechanism=mechanism,
        neighbours="replace",
        n=VALUES.size,
        **({"level_budgets": [0.3, 0.7], "branching": 10} if mechanism == "tree" else {}),
    )
    path = tmp_path / "r.json"
    rel.save(path)
    again = load_release(path)
    xs = np.linspace(-5, 105, 41)
    assert (again.cdf(xs) == rel.cdf(xs)).all()
    assert (again.quantile([0.1, 0.5]) == rel.quantile([0.1, 0.5])).all()
    assert again.metadata() == rel.metadata()


def test_load_refuses_bad_files(tmp_path: Path) -> None:
    rel = _release()
    good = tmp_path / "good.json"
    rel.save(good)
    text = good.read_text()
    cases = {
        "truncated.json": text[: len(text) // 2],
        "foreign.json": json.dumps({"hello": "world"}),
        "future.json": text.replace('"format_version":1', '"format_version":99'),
        "tampered.json": text.replace('"epsilon":1.0', '"epsilon":9.0', 1),
        "notjson.json": "\x00\x01garbage",
        "list.json": "[1, 2, 3]",
    }
    messages = {
        "truncated.json": "corrupt or truncated",
        "foreign.json": "not a treedp release",
        "future.json": "newer than this treedp",
        "tampered.json": "checksum",
        "notjson.json": "corrupt or truncated",
        "list.json": "not a treedp release",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(ReleaseFormatError, match=messages[name]):
            load_release(path)
    with pytest.raises(ReleaseFormatError, match="No release file"):
        load_release(tmp_path / "missing.json")
    # a consistent checksum over inconsistent content is still refused
    doc = json.loads(text)
    doc["payload"]["noisy_levels"][-1] = doc["payload"]["noisy_levels"][-1][:-1]
    from treedp.release import _checksum

    doc["checksum"] = _checksum(doc["payload"])
    bad = tmp_path / "inconsistent.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ReleaseFormatError, match="inconsistent"):
        load_release(bad)


def test_save_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rel = _release()
    path = tmp_path / "r.json"
    path.write_text("previous")

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="disk full"):
        rel.save(path)
    assert path.read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
    monkeypatch.undo()
    new = tmp_path / "new.json"
    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        rel.save(new)
    assert list(tmp_path.iterdir()) == [path]


def test_private_bounds_step_is_recorded_and_survives_a_file(tmp_path: Path) -> None:
    """bounds='private': the file states what the bounds step spent and the total guarantee."""
    values = np.random.default_rng(3).lognormal(3, 1, 5000)
    rel = treedp.release_cdf(
        values, bounds="private", bins=256, epsilon=1.0, rng=treedp.InsecureSeededSource(1)
    )
    step = rel.bounds_step
    assert step is not None and step["method"] == "private_bounds"
    assert step["lo"] == rel.edges[0] and step["hi"] == rel.edges[-1]
    assert abs(step["epsilon"] - 0.1) < 1e-12
    assert rel.guarantee.epsilon < 0.9 + 1e-12  # the tree's own share
    assert 1.0 - 1e-6 < rel.total_guarantee.epsilon <= 1.0  # exact spends, rounded down
    assert rel.metadata()["bounds_step"] == step
    path = tmp_path / "r.treedp"
    rel.save(path)
    back = treedp.load_release(path)
    assert back.bounds_step == step
    assert back.total_guarantee == rel.total_guarantee
    fixed = treedp.release_cdf(values, bounds=(0, 500), bins=256, epsilon=1.0)
    assert fixed.bounds_step is None and fixed.total_guarantee == fixed.guarantee
    assert "bounds_step" not in fixed.metadata()


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # small data: flagged bounds
def test_repr_states_the_total_with_private_bounds() -> None:
    """A release on private bounds states its own guarantee and, beside it, the total with
    the bounds step (a profile's column said 'pure 0.1125-DP' next to its 0.125 share)."""
    rel = release_cdf(VALUES, bounds="private", bins=16, epsilon=1.0)
    assert "guarantee='pure 0.9-DP', total='pure 1-DP'" in repr(rel)
    assert "total=" not in repr(release_cdf(VALUES, bounds=(0, 100), bins=10, epsilon=1.0))
