"""One vocabulary across the front doors (issue 32 item 3): the spelling for integer data,
``bounds`` everywhere, lists of paths everywhere, and ``BoundsWarning`` whenever the CLI warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource


@pytest.fixture
def two_csv(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(5)
    paths = []
    for i in range(2):
        path = tmp_path / f"part{i}.csv"
        values = rng.integers(0, 100, 400)
        path.write_text("x\n" + "\n".join(map(str, values)) + "\n")
        paths.append(str(path))
    return paths


# --- integer data: bins="integers" everywhere ---------------------------------------------


def test_median_declares_integer_data_as_quantiles_does() -> None:
    x = np.repeat([1, 2, 3], [10, 80, 10])
    common = {"bounds": (0, 5), "epsilon": 5.0}
    by_median = treedp.median(x, bins="integers", rng=InsecureSeededSource(2), **common)
    by_quantiles = treedp.quantiles(
        x, 0.5, method="exponential", bins="integers", rng=InsecureSeededSource(2), **common
    )
    assert by_median == by_quantiles.value == 2.0


def test_median_integers_keyword_is_deprecated_and_checked() -> None:
    x = [1, 2, 3]
    with pytest.warns(DeprecationWarning, match="bins='integers'") as caught:
        treedp.median(x, bounds=(0, 5), epsilon=1.0, integers=True)
    assert caught[0].filename == __file__  # points at the caller's line
    with pytest.raises(treedp.InvalidParameterError, match="'bins'"):
        treedp.median(x, bounds=(0, 5), epsilon=1.0, bins=16)  # type: ignore[arg-type]
    with pytest.raises(treedp.InvalidParameterError, match="'integers'"):
        treedp.median(x, bounds=(0, 5), epsilon=1.0, integers="yes")  # type: ignore[arg-type]


# --- bounds on stable_median ---------------------------------------------------------------


def test_stable_median_takes_public_bounds_and_clamps() -> None:
    x = np.array([1000.0] * 60 + [1.0] * 10)
    med = treedp.stable_median(
        x, epsilon=1.0, delta=1e-6, bounds=(0, 10), rng=InsecureSeededSource(1)
    )
    assert med == 10.0  # the exact median of the clamped column
    dates = np.array(["2024-01-05"] * 50, dtype="datetime64[D]")
    med = treedp.stable_median(
        dates, epsilon=1.0, delta=1e-6, bounds=("2024-01-01", "2024-01-03"),
        rng=InsecureSeededSource(1),
    )  # fmt: skip
    assert med == np.datetime64("2024-01-03")


@pytest.mark.parametrize(
    "bounds, match",
    [((5, 1), "lo < hi"), ("private", "public"), ((0, "private"), "public"), ((0, 1, 2), "bounds")],
)
def test_stable_median_refuses_bad_bounds_before_reading(bounds: object, match: str) -> None:
    class Unread:
        def __array__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("the data was read")

    acct = treedp.Accountant(treedp.ApproxDP(1.0, 1e-5))
    with pytest.raises(treedp.InvalidParameterError, match=match):
        treedp.stable_median(Unread(), epsilon=1.0, delta=1e-6, bounds=bounds, accountant=acct)
    assert acct.spent.epsilon == 0  # type: ignore[attr-defined]


def test_the_neighbours_default_is_add_remove_except_where_documented() -> None:
    import inspect

    for name in ("release_cdf", "release_grouped", "quantiles", "median", "build_query"):
        param = inspect.signature(getattr(treedp, name)).parameters["neighbours"]
        assert param.default == "add_remove", name
    # stable median and subsample-and-aggregate are defined for replace only (documented)
    for name in ("stable_median", "subsample_and_aggregate"):
        param = inspect.signature(getattr(treedp, name)).parameters["neighbours"]
        assert param.default == "replace", name
        assert "replace" in (getattr(treedp, name).__doc__ or "")


# --- lists of paths ----------------------------------------------------------------------


def test_lists_of_paths_are_read_by_every_front_door(two_csv: list[str]) -> None:
    seed = InsecureSeededSource
    rel = treedp.release_cdf(
        two_csv, column="x", bounds=(0, 100), bins="integers", epsilon=1.0, rng=seed(1)
    )
    assert abs(rel.n - 800) < 50
    res = treedp.quantiles(two_csv, [0.5], column="x", bounds=(0, 100), epsilon=1.0, rng=seed(1))
    assert 20 < res.values[0] < 80
    med = treedp.median(two_csv, column="x", bounds=(0, 100), epsilon=1.0, rng=seed(1))
    assert 20 < med < 80
    grouped = treedp.release_grouped(
        two_csv, column="x", privacy_unit="x", max_contributions=1, bounds=(0, 100), bins=10,
        epsilon=1.0, rng=seed(1),
    )  # fmt: skip
    assert isinstance(grouped, treedp.Release)


# --- BoundsWarning from the API whenever the CLI warns ----------------------------------------


def test_release_cdf_warns_of_clamped_mass_as_the_cli_does() -> None:
    rng = np.random.default_rng(0)
    delays = rng.exponential(60, 5000) - 10  # most of the mass beyond 30
    with pytest.warns(treedp.BoundsWarning, match="last bin holds") as caught:
        rel = treedp.release_cdf(
            delays, bounds=(0, 30), bins=30, epsilon=1.0, rng=InsecureSeededSource(4)
        )
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text == rel.bounds_warning()  # the same post-processed text the CLI prints
    assert caught[0].filename == __file__


def test_no_warning_when_the_bounds_cover_the_data() -> None:
    x = np.random.default_rng(1).uniform(10, 90, 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        treedp.release_cdf(x, bounds=(0, 100), bins=64, epsilon=1.0, rng=InsecureSeededSource(1))


def test_the_warning_reads_the_released_counts_not_the_data() -> None:
    """DP safety: the warning is a function of the release alone. Two datasets whose releases
    are made identical (release_counts on the same noisy-level draw) warn alike; and a release
    whose noise hides an end bin's mass does not warn although the data are clamped."""
    counts = np.zeros(30, dtype=np.int64)
    counts[0] = 3  # 3 clamped records among 300: 1% of the data, under the 10% threshold
    counts[10] = 297
    with warnings.catch_warnings():
        warnings.simplefilter("error", treedp.BoundsWarning)
        treedp.release_counts(counts, epsilon=1.0, rng=InsecureSeededSource(3))
    # a tiny epsilon: the decision follows the noisy counts, whatever the data say
    decisions = set()
    for seed in range(40):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", treedp.BoundsWarning)
            rel = treedp.release_counts(counts, epsilon=0.01, rng=InsecureSeededSource(seed))
        warned = any(issubclass(w.category, treedp.BoundsWarning) for w in caught)
        assert warned == (rel.bounds_warning() is not None)
        decisions.add(warned)
    assert decisions == {True, False}  # noise, not the data, decided each time


def test_a_list_of_paths_without_column_says_how_to_read_it(two_csv: list[str]) -> None:
    for call in (
        lambda: treedp.release_cdf(two_csv, bounds=(0, 100), bins=8, epsilon=1.0),
        lambda: treedp.quantiles(two_csv, 0.5, bounds=(0, 100), epsilon=1.0),
        lambda: treedp.median(two_csv, bounds=(0, 100), epsilon=1.0),
    ):
        with pytest.raises(treedp.InvalidTypeError, match="column='NAME'") as caught:
            call()
        assert "<U" not in str(caught.value)  # no dtype width: the longest value's length


def test_the_quantiles_bounds_warning_points_at_the_caller() -> None:
    x = np.random.default_rng(2).normal(0, 1, 50)  # too few records for private bounds
    with pytest.warns(treedp.BoundsWarning) as caught:  # the tree's bounds step (the other
        treedp.quantiles(  # methods need no bounds step: every float is a candidate)
            x, 0.5, bounds="private", epsilon=1.0, method="tree", rng=InsecureSeededSource(1)
        )
    assert all(w.filename == __file__ for w in caught)


def test_the_warning_names_the_column_of_a_table() -> None:
    pd = pytest.importorskip("pandas")
    table = pd.DataFrame({"delay": np.random.default_rng(3).exponential(60, 3000)})
    with pytest.warns(treedp.BoundsWarning, match=r"^Column 'delay': The last bin holds"):
        treedp.release_cdf(
            table, column="delay", bounds=(0, 30), bins=30, epsilon=1.0,
            rng=InsecureSeededSource(2),
        )  # fmt: skip
