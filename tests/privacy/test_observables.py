"""Everything observable is output: errors, warnings and messages must not depend on the data
beyond the documented missing-value policy, and must never hold a count, value or shape of it.

Each test here failed on the code before the privacy review's fixes (issue #11).
"""

from __future__ import annotations

import datetime as dt
import re
import warnings

import numpy as np
import pytest

import treedp
from treedp.domain import make_bins
from treedp.exceptions import DataError, InvalidTypeError, TreeDPError

SEED = treedp.InsecureSeededSource(11)


def _digits(text: str) -> set[str]:
    return set(re.findall(r"\d+", text))


def test_nan_error_names_no_count() -> None:
    values = np.r_[np.arange(12_345, dtype=float), np.nan, np.nan]
    with pytest.raises(DataError) as info:
        treedp.release_cdf(values, bounds=(0, 100), bins=64, epsilon=1.0, rng=SEED)
    message = str(info.value)
    assert "12347" not in message and "12345" not in message and "2 NaN" not in message
    assert "nan='drop'" in message


def test_public_n_mismatch_names_no_count() -> None:
    values = np.arange(12_345, dtype=float)
    with pytest.raises(DataError) as info:
        treedp.release_cdf(
            values, bounds=(0, 1), bins=8, epsilon=1.0, neighbours="replace", n=12_000, rng=SEED
        )
    assert "12345" not in str(info.value)


@pytest.mark.parametrize(
    "values",
    [np.zeros((37, 3)), [[1.0, 2.0], [3.0]], [[1.0, 2.0, 3.0]] * 41],
    ids=["2-d", "ragged", "nested"],
)
def test_shape_errors_name_no_shape(values: object) -> None:
    with pytest.raises(InvalidTypeError) as info:
        treedp.release_cdf(values, bounds=(0, 1), bins=8, epsilon=1.0, rng=SEED)
    assert not _digits(str(info.value)) - {"1"}  # "1-D" only; no shape such as (37, 3)


def test_python_int_beyond_float_range_is_clamped_not_an_error() -> None:
    bins = make_bins(bounds=(0, 10), bins=5)
    counts, dropped = bins.count([1, 10**400, -(10**400)])
    assert counts.tolist() == [2, 0, 0, 0, 1] and dropped == 0
    rel = treedp.release_cdf([1, 10**400], bounds=(0, 10), bins=5, epsilon=1.0, rng=SEED)
    assert isinstance(rel, treedp.Release)


EXTREMES = [1e308, -1e308, 1e307, -1.7e308, 5e-324, -5e-324, 2.2e-308, np.inf, -np.inf, -0.0]


@pytest.mark.parametrize("size", [10, 600_000], ids=["serial", "threaded"])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-1e308, 1e308), (1e-310, 3e-310)])
def test_no_warning_or_error_depends_on_extreme_values(size: int, bounds: tuple) -> None:
    """Under ``-W error`` and ``np.seterr(all="raise")`` extreme values still release."""
    rng = np.random.default_rng(5)
    values = rng.choice(np.array([*EXTREMES, 0.5, 2e-310]), size=size)
    bins = make_bins(bounds=bounds, bins=3)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        counts, _ = bins.count(values)
        treedp.release_cdf(values, bounds=bounds, bins=3, epsilon=1.0, rng=SEED)
    # the bins of the arithmetic kernel equal a plain binary search on the edges
    finite = np.clip(values, bins.edges[0], bins.edges[-1])
    expected = np.bincount(
        np.searchsorted(bins.edges[1:-1], finite, side="right"), minlength=bins.n_bins
    )
    assert counts.tolist() == expected.tolist() and counts.sum() == size


def test_record_at_lo_of_subnormal_width_bounds_is_counted() -> None:
    bounds = (1e-310, 3e-310)
    counts, _ = make_bins(bounds=bounds, bins=3).count([1e-310, 2e-310, 0.5])
    assert counts.sum() == 3 and counts[0] == 1 and counts[-1] >= 1
    rel = treedp.release_cdf([1e-310, 2e-310, 0.5], bounds=bounds, bins=3, epsilon=1, rng=SEED)
    assert isinstance(rel, treedp.Release)


def test_overflowing_bounds_width_gives_equal_width_bins() -> None:
    bins = make_bins(bounds=(-1e308, 1e308), bins=4)
    assert np.all(np.isfinite(bins.edges)) and bins.edges[2] == 0.0
    assert bins.count([0.0, 1e308, -1e308, 5e307, np.inf])[0].tolist() == [1, 0, 1, 3]


def _ns_bins() -> treedp.Bins:
    lo = np.datetime64("2000-01-01T00:00:00.000000000")
    hi = np.datetime64("2001-01-01T00:00:00.000000000")
    return make_bins(bounds=(lo, hi), bins=4)


def test_coarse_datetimes_beyond_the_bins_unit_clamp_instead_of_wrapping() -> None:
    bins = _ns_bins()
    assert bins.datetime_unit == "ns"
    days = np.array(["2500-01-01", "1000-01-01", "2000-06-01"], dtype="datetime64[D]")
    assert bins.count(days)[0].tolist() == [1, 1, 0, 1]  # 2500 in the last bin, not the first
    years = np.array(["3000", "-5000", "2000"], dtype="datetime64[Y]")
    assert bins.count(years)[0].tolist() == [2, 0, 0, 1]


def test_python_and_pandas_datetimes_beyond_nanoseconds_are_not_wrapped() -> None:
    import pandas as pd

    bins = _ns_bins()
    objs = [dt.datetime(2500, 1, 1), dt.datetime(2000, 6, 1), None]
    assert bins.count(objs, nan="drop")[0].tolist() == [0, 1, 0, 1]
    series = pd.Series(pd.to_datetime(["2500-01-01", "2000-06-01"]).as_unit("s"))
    assert bins.count(series)[0].tolist() == [0, 1, 0, 1]


def test_every_error_is_a_treedp_error_without_data() -> None:
    """A sweep of awkward data: each call returns a release or raises a TreeDPError whose
    message holds none of the data's values or counts."""
    secret = 987_654
    cases = [
        [float(secret), np.nan],
        [secret, 10**400],
        [[secret, 1], [2]],
        np.full((3, secret % 7 + 2), float(secret)),
    ]
    for values in cases:
        try:
            treedp.release_cdf(values, bounds=(0, 1), bins=4, epsilon=1.0, rng=SEED)
        except TreeDPError as exc:
            assert str(secret) not in str(exc) and "987" not in str(exc)
