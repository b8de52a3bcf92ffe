"""``value_methods/bounds_warnings.py``: the neighbouring-stops warning and a released count."""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import treedp
from treedp.noise import InsecureSeededSource
from treedp.value_methods.bounds_grid import SIGNED_GRID
from treedp.value_methods.bounds_warnings import (
    NEIGHBOURS_WARNING,
    grid_end_warning,
    neighbours_ruled_out,
    scans_warning,
)

Q3 = [0.25, 0.5, 0.75]


def test_a_large_released_count_rules_out_the_too_few_records_reading() -> None:
    """Stops at neighbouring grid points mean too few records, or data inside one grid step;
    a count of at least ten allowances leaves only the second. Any other warning stays."""
    lo, hi = float(SIGNED_GRID[5000]), float(SIGNED_GRID[5001])
    off = grid_end_warning(lo, hi)
    assert off == NEIGHBOURS_WARNING
    assert neighbours_ruled_out(off, 120.0, 1200.0)
    assert not neighbours_ruled_out(off, 120.0, 1199.0)
    assert not neighbours_ruled_out(off, 120.0, None)
    assert not neighbours_ruled_out(off, None, 1e9)  # a file older than the allowance field
    assert not neighbours_ruled_out(off, 0.0, 1e9)
    crossed = grid_end_warning(hi, lo)
    assert crossed is not None and not neighbours_ruled_out(crossed, 120.0, 1e9)
    step = SimpleNamespace(allowance=120.0, value=(lo, hi))  # a bounds step's result
    assert scans_warning(off, step, 1e6, [lo], (lo, hi)) is None
    assert scans_warning(off, step, 100.0, [lo], (lo, hi)) == off


def test_years_released_on_one_grid_step_warn_only_when_few() -> None:
    """Years 1950..2023 lie within one grid step (1721..2047): with 10^5 records the release
    and the report no longer say the bounds are useless (a new user's run); with 300 records
    the warning stays."""
    rng = np.random.default_rng(3)
    many = rng.integers(1950, 2024, 100_000)
    for seed in range(6):
        rel = treedp.release_cdf(
            many, bounds="private", bins="integers", epsilon=1.0, rng=InsecureSeededSource(seed)
        )
        assert rel.bounds_warning() is None
    few = rng.integers(1950, 2024, 300)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        small = treedp.release_cdf(
            few, bounds="private", bins="integers", epsilon=1.0, rng=InsecureSeededSource(1)
        )
    assert small.bounds_warning() is not None and seen


@pytest.mark.filterwarnings("error::treedp.BoundsWarning")
def test_quantiles_with_a_public_n_drop_the_ruled_out_warning() -> None:
    x = np.random.default_rng(4).integers(1950, 2024, 50_000)
    for seed in range(4):
        res = treedp.quantiles(
            x,
            [0.25, 0.5, 0.75],
            bounds="private",
            epsilon=1.0,
            n=x.size,
            neighbours="replace",
            method="tree",
            rng=InsecureSeededSource(seed),
        )
        assert res.bounds_warning is None


def test_the_trees_own_warning_is_restated_and_kept_in_the_result() -> None:
    """The tree's release inside ``quantiles`` saw found bounds as public: its end-bin
    warning advised ``bounds='private'`` (already given), was emitted outside the result
    (``bounds_warning`` None, the CLI's JSON ``null``). Now it is emitted once, with the
    advice for found bounds, and kept in the result."""
    rng = np.random.default_rng(0)
    x = np.where(rng.random(100_000) < 0.6, 0, rng.poisson(8, 100_000)).astype(np.int64)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = treedp.quantiles(
            x, [0.25, 0.5, 0.75], bounds="private", epsilon=1.0, rng=InsecureSeededSource(1)
        )
    texts = [str(w.message) for w in seen if issubclass(w.category, treedp.BoundsWarning)]
    assert res.method == "tree" and texts == [res.bounds_warning]
    assert "first bin holds" in texts[0] and "bounds='private'" not in texts[0]
    public = treedp.quantiles(x, [0.5], bounds=(0, 40), epsilon=1.0, method="tree")
    assert public.bounds_warning is not None and "bounds='private'" in public.bounds_warning


def test_quantiles_warn_when_integer_bounds_reach_two_to_the_53() -> None:
    """uint64 values above 2**63 in integer mode: the found integer bounds are clamped to
    2**53 - 1 and every quartile answered 9.007e15 with no warning (a new user's run); now a
    warning says so and names the way out, which the same data as floats take."""
    x = np.uint64(2**63) + np.random.default_rng(6).integers(0, 2**62, 20_000, dtype=np.uint64)
    qs = [0.25, 0.5, 0.75]
    with pytest.warns(treedp.BoundsWarning, match=r"2\*\*53"):
        res = treedp.quantiles(x, qs, bounds="private", epsilon=1.0, rng=InsecureSeededSource(1))
    assert res.bounds_warning is not None and "astype(float)" in res.bounds_warning
    floats = treedp.quantiles(
        x.astype(float), qs, bounds="private", epsilon=1.0, rng=InsecureSeededSource(1)
    )
    xs = np.sort(x.astype(float))
    assert np.all(np.abs(np.searchsorted(xs, floats.value) / xs.size - qs) < 0.01)


@pytest.mark.parametrize("method", ["exponential", "recursive"])
def test_the_clamp_at_two_to_the_53_warns_when_a_method_moved_the_bound(method: str) -> None:
    """The exponential and recursive integer modes move a found bound of 2**53 - 1 inside
    their own range (2**52 - 3), so the clamp warning, reading the moved bounds, never fired:
    int64 data in [4e15, 8e15) were answered near 4.5e15 silently (an independent review).
    A bounds step runs for them with ``n="private"``; without it (the default since session
    21) they select over every float, where these data are answered near their quartiles."""
    x = np.random.default_rng(2).integers(4 * 10**15, 8 * 10**15, 5000)
    call = {"bounds": (0, "private"), "epsilon": 1.0, "method": method}
    with pytest.warns(treedp.BoundsWarning, match=r"2\*\*53"):
        res = treedp.quantiles(x, Q3, n="private", rng=InsecureSeededSource(1), **call)
    assert res.bounds_warning is not None and "astype(float)" in res.bounds_warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = treedp.quantiles(x, Q3, rng=InsecureSeededSource(1), **call)
    assert np.all(np.abs(np.asarray(res.value) / np.quantile(x, Q3) - 1) < 0.01)
