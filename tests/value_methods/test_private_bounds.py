"""Private bounds: contract, grid, margins, accuracy on typical data, inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import treedp
from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError, InvalidTypeError
from treedp.privacy import PureDP
from treedp.value_methods import private_bounds as pb
from treedp.value_methods.bounds_grid import GRID, SIGNED_GRID
from treedp.value_methods.bounds_split import split_private_bounds
from treedp.value_methods.private_bounds import CONTRACT, private_bounds


def test_grid_is_public_signed_and_ascending() -> None:
    assert GRID[0] == 0 and np.all(np.diff(GRID) > 0) and np.isfinite(GRID).all()
    assert GRID[-1] > 1e300 and not GRID.flags.writeable
    assert SIGNED_GRID.size == 2 * GRID.size - 1 and not SIGNED_GRID.flags.writeable
    assert np.all(np.diff(SIGNED_GRID) > 0)
    assert np.array_equal(SIGNED_GRID, -SIGNED_GRID[::-1])
    assert SIGNED_GRID[GRID.size - 1] == 0


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_guarantee_within_budget(relation: str) -> None:
    res = private_bounds([1.0, 2.0], epsilon=0.3, neighbours=relation, rng=InsecureSeededSource(1))
    assert isinstance(res.guarantee, PureDP)
    assert 0.3 * (1 - 1e-5) <= res.epsilon_spent <= 0.3
    assert res.lo < res.hi
    assert res.lo <= res.stops[0] and res.stops[1] <= res.hi
    assert res.mechanism == CONTRACT.name and res.seeded
    t_rho, t_nu, loss = pb.scan_scales(0.15, relation)
    assert 0.15 * (1 - 1e-5) <= loss <= 0.15
    # the threshold gets half the query scale (documented split)
    assert t_rho == pytest.approx(t_nu / 2, rel=1e-5)
    assert res.allowance == pytest.approx(2 * float(t_nu))


def _clamp_limit(res: pb.BoundsResult) -> int:
    """``k + a`` with ``a`` such that the docstring's clamping bound, over both scans, is
    ``ALPHA``: ``2 (Q e^{-a/(2 t_ν)} + e^{-a/(2 t_ρ)}) <= ALPHA``."""
    t_rho, t_nu = res.scales
    q = SIGNED_GRID.size
    a = 2 * max(t_nu * math.log(4 * q / ALPHA), t_rho * math.log(4 / ALPHA))
    return int(res.allowance + a)


def test_bounds_cover_data_of_either_sign() -> None:
    """n = 10**4 at eps = 1 (t_ν = 6, t_ρ = 3, k = 12), seeded.

    Clamping: more records than ``_clamp_limit`` (about 290) beyond a bound has probability
    at most ``ALPHA`` (docstring bound). The checks on the sign and the width are regression
    checks at this seed (their failure bounds, from the overshoot bound, are not small).
    """
    rng = np.random.default_rng(TEST_SEED)
    cases = (
        rng.lognormal(10, 1, 10**4),
        rng.normal(-50, 20, 10**4),
        rng.uniform(-1000, -500, 10**4),  # all negative, far from 0
        rng.uniform(500, 1000, 10**4),  # all positive, far from 0
        rng.standard_t(3, 10**4) * 1000,  # heavy tails on both sides
    )
    for x in cases:
        res = private_bounds(x, epsilon=1.0, rng=InsecureSeededSource(2))
        limit = _clamp_limit(res)
        assert (x > res.hi).sum() <= limit and (x < res.lo).sum() <= limit
        width = x.max() - x.min()
        assert res.hi - res.lo <= 4 * width
    neg = private_bounds(cases[2], epsilon=1.0, rng=InsecureSeededSource(3))
    # The upper scan starts at 0 (the scans cannot cross): negative data get an upper bound
    # at 0 plus the width margin, looser than the data's top but above it.
    assert -1000 < neg.hi <= pb.WIDTH_MARGIN * (neg.hi - neg.lo) / (1 + pb.WIDTH_MARGIN) + 1
    pos = private_bounds(cases[3], epsilon=1.0, rng=InsecureSeededSource(3))
    assert pos.lo > 0 and pos.lo < 1000


def test_margins_are_post_processing_of_the_stops() -> None:
    zero = GRID.size - 1  # the index of 0 in SIGNED_GRID
    assert pb._outwards(zero, 1, 1) == GRID[1] and pb._outwards(zero, -1, 2) == -GRID[2]
    assert pb._outwards(zero + 10, 1, 1) == SIGNED_GRID[zero + 11]
    assert pb._outwards(zero - 10, -1, 2) == SIGNED_GRID[zero - 12]
    assert pb._outwards(SIGNED_GRID.size - 1, 1, 3) == SIGNED_GRID[-1]
    lo, hi = pb._released(10.0, 30.0, integers=False)
    assert (lo, hi) == (10.0 - pb.WIDTH_MARGIN * 20, 30.0 + pb.WIDTH_MARGIN * 20)
    # inwards: no integer lies between a bound and its rounding
    assert pb._released(-0.41, 89.5, integers=True) == (0.0, 89.0)
    assert pb._released(5.0, 5.0, integers=True) == (5.0, 6.0)
    assert pb._released(5.2, 5.8, integers=True) == (5.0, 6.0)
    assert pb._released(-1e301, 1e301, integers=True) == (-(2.0**53 - 1), 2.0**53 - 1)
    lo, hi = pb._released(3.0, 3.0, integers=False)
    assert lo < 3.0 < hi


def test_split_and_integers() -> None:
    x = np.arange(17, 91)
    (lo, hi), rest, res = split_private_bounds(
        np.repeat(x, 100), epsilon=1.0, share=0.1, integers=True, rng=InsecureSeededSource(3)
    )
    assert float(lo).is_integer() and float(hi).is_integer() and lo < hi
    assert res.parameters["integers"] is True
    assert rest + res.epsilon_spent <= 1.0
    # non-negative integer data with a point mass at 0: a lower stop at 0 or up to two grid
    # steps below it gives 0 (regression check at this seed: the seed overshoots one step)
    counts = np.r_[np.zeros(9000), np.arange(1, 1001) * 7]
    (lo, hi), _, res = split_private_bounds(
        counts, epsilon=1.0, share=0.5, integers=True, rng=InsecureSeededSource(4)
    )
    assert lo == 0.0 and hi >= 6000
    with pytest.raises(InvalidParameterError, match="bounds_share"):
        split_private_bounds(x, epsilon=1.0, share=1.0)


def test_inputs() -> None:
    with pytest.raises(InvalidTypeError):
        private_bounds(np.array(["2024-01-01"], dtype="datetime64[D]"), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="allowance"):
        private_bounds([1.0], epsilon=1.0, allowance=float("nan"))
    with pytest.raises(InvalidTypeError, match="integers"):
        private_bounds([1.0], epsilon=1.0, integers=1)  # type: ignore[arg-type]
    res = private_bounds([], epsilon=1.0, rng=InsecureSeededSource(4))
    assert res.lo < res.hi
    res = private_bounds([], epsilon=1.0, integers=True, rng=InsecureSeededSource(4))
    assert res.lo < res.hi and res.lo.is_integer()
    res = private_bounds([1.0, np.nan], epsilon=1.0, nan="drop", rng=InsecureSeededSource(5))
    assert res.lo < res.hi


def test_release_with_private_bounds_fits_negative_data() -> None:
    """End to end: ``release_cdf(bounds="private")`` on data in ``[-1000, -500]`` releases a
    range below 0 (the old grid gave ``hi >= 0.19``); regression check at this seed."""
    import treedp

    x = np.random.default_rng(TEST_SEED).uniform(-1000, -500, 10**4)
    rel = treedp.release_cdf(
        x, bounds="private", bins=256, epsilon=1.0, rng=InsecureSeededSource(6)
    )
    lo, hi = float(rel.bins.edges[0]), float(rel.bins.edges[-1])
    assert -2000 < lo < -1000 * 0.99 and -500 < hi < 400  # hi: from 0 up, plus the margin
    assert abs(rel.cdf(-750.0) - (x <= -750).sum()) < 200


def test_neighbouring_stops_are_flagged() -> None:
    """The lower scan starts at the upper stop: stopping at the next grid point below it means
    fewer than about ``k`` records below the upper stop (a tree on such bounds answered one
    value for every level: Adult ages, n = 100, ε = 1). Two grid points apart is not flagged."""
    from treedp.value_methods.bounds_grid import SIGNED_GRID
    from treedp.value_methods.bounds_warnings import grid_end_warning

    zero = int(np.searchsorted(SIGNED_GRID, 0.0))
    for i in (zero - 1, zero, zero + 1, zero + 40):
        note = grid_end_warning(float(SIGNED_GRID[i]), float(SIGNED_GRID[i + 1]))
        assert note is not None and "neighbouring grid points" in note
        assert grid_end_warning(float(SIGNED_GRID[i]), float(SIGNED_GRID[i + 2])) is None


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_grid_end_warning_when_too_few_records() -> None:
    """Five records at ε = 1: the scans run off the grid; the release and the CLI say so
    (post-processing of the released bounds), and ordinary bounds get no such note."""
    from treedp.value_methods.bounds_grid import SIGNED_GRID
    from treedp.value_methods.bounds_warnings import grid_end_warning

    end = float(SIGNED_GRID[-1])
    assert grid_end_warning(-1.0, 2.0) is None
    crossed = grid_end_warning(5.5e296, -3.9e289)  # stops crossed before the grid's ends
    assert crossed is not None and "crossed" in crossed
    few = treedp.quantiles(
        np.arange(300.0),
        [0.5],
        epsilon=1.0,
        bounds="private",
        method="tree",
        n=300,
        rng=InsecureSeededSource(3),
    )
    assert few.bounds_warning is not None
    for lo, hi in ((-end, 1.0), (0.0, end * 1.25), (-end * 1.25, end * 1.25)):
        note = grid_end_warning(lo, hi)
        assert note is not None and "public grid" in note
    rel = treedp.release_cdf(
        [1.0, 2.0, 3.0, 4.0, 5.0],
        bounds="private",
        bins=16,
        epsilon=1.0,
        rng=treedp.InsecureSeededSource(4),
    )
    assert rel.bounds_step is not None
    assert rel.bounds_step["stops"][0] == rel.bounds_step["stops"][1]  # met at once
    warning = rel.bounds_warning()
    assert warning is not None and "too few records" in warning


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_integer_private_bounds_flag_a_failed_scan_and_fit_max_bins(tmp_path: Any) -> None:
    """Integer bounds are clamped to ±(2**53 - 1), so the failed scan is read from the stops
    (kept in the release and its file); a found integer range wider than MAX_BINS keeps
    MAX_BINS integers instead of failing after the budget is spent."""
    from treedp.domain import MAX_BINS
    from treedp.value_methods.bounds_split import split_private_bounds

    few = np.arange(50)
    rel = treedp.release_cdf(
        few, bounds="private", bins="integers", epsilon=0.1, rng=InsecureSeededSource(1)
    )
    assert rel.bounds_step is not None and len(rel.bounds_step["stops"]) == 2
    warning = rel.bounds_warning()
    assert warning is not None and "records" in warning
    path = tmp_path / "r.treedp"
    rel.save(path)
    loaded = treedp.load_release(path)
    assert loaded.bounds_step == rel.bounds_step and loaded.bounds_warning() == warning
    res = treedp.quantiles(
        few, [0.5], epsilon=0.1, bounds="private", bins="integers", method="tree", n=50
    )
    assert res.bounds_warning is not None
    wide = np.r_[np.zeros(500), np.full(500, 1e9)]
    (lo, hi), _, found = split_private_bounds(
        wide, epsilon=1.0, integers=True, rng=InsecureSeededSource(2)
    )
    assert found.hi - found.lo + 1 > MAX_BINS
    assert hi - lo + 1 == MAX_BINS and float(lo).is_integer()
    assert found.lo <= lo and hi <= found.hi


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_remaining_epsilon_is_what_the_split_leaves(neighbours: str) -> None:
    """The public pre-check budget equals the budget the split actually leaves."""
    from treedp.value_methods.bounds_split import remaining_epsilon, split_private_bounds

    x = np.random.default_rng(TEST_SEED).normal(0, 1, 500)
    for eps, share in ((1.0, 0.1), (0.37, 0.25), (3.0, 0.05)):
        _, rest, found = split_private_bounds(
            x, epsilon=eps, share=share, neighbours=neighbours, rng=InsecureSeededSource(1)
        )
        assert rest == remaining_epsilon(eps, share, neighbours)
        assert rest + found.epsilon_spent <= eps


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_one_public_side_runs_one_scan_with_the_whole_budget(neighbours: str) -> None:
    """A public ``lower`` (``upper``) is released as it is; only the other scan runs, with
    the whole ε (one scan's scales at ε: half the noise of a two-sided scan), over grid
    points strictly beyond the public bound."""
    from treedp.value_methods.bounds_split import remaining_epsilon

    x = np.random.default_rng(TEST_SEED).lognormal(10, 1, 10**4)
    two = private_bounds(x, epsilon=0.2, neighbours=neighbours, rng=InsecureSeededSource(1))
    low = private_bounds(
        x, epsilon=0.2, lower=0, neighbours=neighbours, rng=InsecureSeededSource(1)
    )
    assert low.known == "lower" and low.lo == 0.0 and low.stops[0] == 0.0
    assert low.stops[1] in SIGNED_GRID and low.stops[1] > 0 and low.hi > low.stops[1]
    assert low.scales[1] == pytest.approx(two.scales[1] / 2, rel=1e-6)  # t_ν at ε, not ε/2
    assert 0.2 * (1 - 1e-5) <= low.epsilon_spent <= 0.2
    assert low.parameters["lower"] == 0 and two.known is None
    # the width margin moves the found side only: hi = stop + 1 step, + 25% of (hi - 0)
    step_up = float(SIGNED_GRID[np.searchsorted(SIGNED_GRID, low.stops[1]) + 1])
    assert low.hi == pytest.approx(step_up * (1 + pb.WIDTH_MARGIN))
    high = private_bounds(-x, epsilon=0.2, upper=0.0, rng=InsecureSeededSource(2))
    assert high.known == "upper" and high.hi == 0.0 and high.lo < high.stops[0] < 0
    # every candidate lies beyond the public bound: data all below it still give hi > lo
    above = private_bounds([-5.0, -4.0], epsilon=1.0, lower=10, rng=InsecureSeededSource(3))
    assert above.lo == 10.0 and above.hi > 10.0
    (lo, _), rest, found = split_private_bounds(
        x, epsilon=1.0, lower=0, neighbours=neighbours, rng=InsecureSeededSource(4)
    )
    assert lo == 0.0 and rest == remaining_epsilon(1.0, 0.1, neighbours, one_sided=True)
    assert rest + found.epsilon_spent <= 1.0


def test_one_public_side_with_integers() -> None:
    from treedp.domain import MAX_BINS

    age = np.repeat(np.arange(17, 91), 100)
    res = private_bounds(age, epsilon=0.1, integers=True, upper=120, rng=InsecureSeededSource(5))
    assert res.hi == 120.0 and res.lo.is_integer() and res.lo <= 17
    res = private_bounds(age, epsilon=0.1, integers=True, lower=0, rng=InsecureSeededSource(5))
    assert res.lo == 0.0 and res.hi.is_integer() and res.hi >= 90
    wide = np.r_[np.zeros(500), np.full(500, 1e9)]
    for side in ("lower", "upper"):
        kw = {"lower": -5} if side == "lower" else {"upper": int(2e9)}
        (lo, hi), _, _ = split_private_bounds(
            wide, epsilon=1.0, integers=True, rng=InsecureSeededSource(6), **kw
        )
        assert hi - lo + 1 == MAX_BINS
        assert (lo == -5.0) if side == "lower" else (hi == 2e9)


def test_one_public_side_inputs() -> None:
    with pytest.raises(InvalidParameterError, match="at most one"):
        private_bounds([1.0], epsilon=1.0, lower=0, upper=3)
    with pytest.raises(InvalidTypeError, match="'lower' parameter"):
        private_bounds([1.0], epsilon=1.0, lower="0")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="'upper' parameter"):
        private_bounds([1.0], epsilon=1.0, upper=True)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="finite"):
        private_bounds([1.0], epsilon=1.0, upper=float("inf"))
    with pytest.raises(InvalidParameterError, match="finite"):
        private_bounds([1.0], epsilon=1.0, lower=float(SIGNED_GRID[-1]))
    with pytest.raises(InvalidParameterError, match="integer"):
        private_bounds([1.0], epsilon=1.0, integers=True, lower=0.5)


def test_release_with_a_public_lower_bound(tmp_path: Any) -> None:
    """``release_cdf(bounds=(0, "private"))``: the range starts at the public 0, the bounds
    step says which side was public, the total is charged once and survives save/load; bad
    public sides are refused before anything is charged."""
    x = np.random.default_rng(TEST_SEED).lognormal(10, 1, 10**4)
    acc = treedp.Accountant(PureDP(2.0))
    rel = treedp.release_cdf(
        x, bounds=(0, "private"), bins=256, epsilon=1.0, accountant=acc, rng=InsecureSeededSource(7)
    )
    assert float(rel.bins.edges[0]) == 0.0 and float(rel.bins.edges[-1]) > np.quantile(x, 0.99)
    step = rel.bounds_step
    assert step is not None and step["known"] == "lower" and step["stops"][0] == 0.0
    assert rel.total_guarantee.epsilon <= 1.0 and len(acc.history) == 1
    path = tmp_path / "r.treedp"
    rel.save(path)
    assert treedp.load_release(path).bounds_step == step
    rel = treedp.release_cdf(
        -x, bounds=("private", 0), bins=256, epsilon=1.0, rng=InsecureSeededSource(8)
    )
    assert float(rel.bins.edges[-1]) == 0.0 and rel.bounds_step["known"] == "upper"
    for bad, error in (
        ((0.5, "private"), InvalidParameterError),
        ((True, "private"), InvalidTypeError),
    ):
        with pytest.raises(error, match="public lower bound in 'bounds'"):
            treedp.release_cdf(
                np.arange(10), bounds=bad, bins="integers", epsilon=1.0, accountant=acc
            )
    assert len(acc.history) == 1


def test_grid_counts_from_one_counting_pass_equal_the_values() -> None:
    """The counts of one pass over COUNT_EDGES give every query of both scans exactly: values
    on grid points (ties), just beside them, beyond the grid's ends, ±inf."""
    from treedp.domain import make_bins
    from treedp.value_methods.bounds_grid import COUNT_EDGES, GridCounts

    rng = np.random.default_rng(TEST_SEED)
    on = rng.choice(SIGNED_GRID, 300)
    beside = np.nextafter(on, rng.choice([-np.inf, np.inf], on.size))
    x = np.r_[rng.normal(0, 1e3, 2000), on, beside, [np.inf, -np.inf, 1.7e308, -1.7e308, 0.0, -0.0]]
    counted = GridCounts.from_counts(make_bins(edges=COUNT_EDGES).count(x)[0])
    direct = GridCounts.from_values(x)
    assert np.array_equal(counted.below, direct.below)
    assert np.array_equal(counted.above, direct.above)
    assert not counted.above.flags.writeable
    for seed in range(3):
        a = private_bounds(counted, epsilon=0.5, rng=InsecureSeededSource(seed))
        b = private_bounds(x, epsilon=0.5, rng=InsecureSeededSource(seed))
        assert a.value == b.value and a.stops == b.stops
    for bad in (np.zeros(5, dtype=int), np.full(COUNT_EDGES.size - 1, -1), [0.5] * 3):
        with pytest.raises(InvalidParameterError, match="COUNT_EDGES"):
            GridCounts.from_counts(bad)
    with pytest.raises(InvalidParameterError, match="SIGNED_GRID"):
        GridCounts(np.zeros(3, dtype=np.int64), counted.above, counted.total)


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_release_with_private_bounds_streams_files(tmp_path: Any) -> None:
    """bounds='private' on files (one or several, CSV or Parquet) and DataFrames by column:
    one counting pass for the bounds, then the release; the same seed gives the same release
    as in memory. A missing value under nan='error' is refused before anything is charged."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    x = np.random.default_rng(TEST_SEED).lognormal(3, 1, 6000)
    pd.DataFrame({"v": x[:3000]}).to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"v": x[3000:]}).to_parquet(tmp_path / "b.parquet")
    pd.DataFrame({"v": x}).to_csv(tmp_path / "all.csv", index=False)

    def release(data: Any, **kw: Any) -> treedp.Release:
        return treedp.release_cdf(
            data, bounds="private", bins=128, epsilon=1.0, rng=InsecureSeededSource(9), **kw
        )

    ref = release(x)
    for data in (str(tmp_path / "*.parquet"), tmp_path / "all.csv", pd.DataFrame({"v": x})):
        rel = release(data, column="v")
        assert rel.bounds_step == ref.bounds_step
        assert np.array_equal(rel.consistent_counts, ref.consistent_counts)
    pd.DataFrame({"v": np.r_[x[:10], np.nan]}).to_csv(tmp_path / "nan.csv", index=False)
    acc = treedp.Accountant(PureDP(5.0))
    with pytest.raises(treedp.DataError):
        treedp.release_cdf(
            tmp_path / "nan.csv", column="v", bounds="private", bins=8, epsilon=1.0, accountant=acc
        )
    assert acc.history == ()
    rel = treedp.release_cdf(
        tmp_path / "nan.csv", column="v", bounds="private", bins=8, epsilon=1.0, nan="drop"
    )
    assert rel.bounds_step is not None


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_one_sided_scan_that_stops_at_once_is_flagged() -> None:
    """One public side: a stop within NEAR_PUBLIC grid points of the public bound (too few
    records, or the public bound on the wrong side of the data) is flagged; a stop further
    out is not. Post-processing of the released stop."""
    import warnings

    from treedp.value_methods.bounds_warnings import NEAR_PUBLIC, grid_end_warning

    first = int(np.searchsorted(SIGNED_GRID, 0.0, side="right"))
    near = float(SIGNED_GRID[first + NEAR_PUBLIC - 1])
    assert "public lower bound" in (grid_end_warning(0.0, near, "lower") or "")
    assert grid_end_warning(0.0, float(SIGNED_GRID[first + NEAR_PUBLIC]), "lower") is None
    assert "public upper bound" in (grid_end_warning(-near, 0.0, "upper") or "")
    assert grid_end_warning(-1e4, 0.0, "upper") is None
    x = np.random.default_rng(TEST_SEED).lognormal(10, 1, 5000)
    wrong = treedp.quantiles(
        x, [0.5], epsilon=1.0, bounds=("private", -5), rng=InsecureSeededSource(1)
    )
    assert wrong.bounds_warning is not None and "wrong side" in wrong.bounds_warning
    rel = treedp.release_cdf(
        -x, bounds=(0, "private"), bins=64, epsilon=1.0, rng=InsecureSeededSource(2)
    )
    assert "wrong side" in (rel.bounds_warning() or "")
    right = treedp.quantiles(
        x, [0.5], epsilon=1.0, bounds=(0, "private"), rng=InsecureSeededSource(1)
    )
    assert right.bounds_warning is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a float32 public bound: no overflow warning
        res = private_bounds(x, epsilon=0.1, lower=np.float32(0), rng=InsecureSeededSource(3))
    assert res.lo == 0.0


def test_one_sided_scan_reads_only_points_beyond_the_public_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one-sided scan's candidates are exactly the grid points strictly beyond the public
    bound (a bound on a grid point excludes that point), so its stop lies strictly beyond
    it; its standalone charge equals its reported spend."""
    seen: list[int] = []
    real_scan = pb.first_crossing

    def spy(beyond: np.ndarray, *args: Any) -> int:
        seen.append(beyond.size)
        return int(real_scan(beyond, *args))

    monkeypatch.setattr(pb, "first_crossing", spy)
    j = 4100  # a positive grid point
    x = np.r_[np.full(50, SIGNED_GRID[j]), np.linspace(-5.0, 5e6, 500)]
    for seed in range(5):
        low = private_bounds(x, epsilon=0.3, lower=SIGNED_GRID[j], rng=InsecureSeededSource(seed))
        assert seen.pop() == SIGNED_GRID.size - (j + 1) and low.stops[1] > SIGNED_GRID[j]
        high = private_bounds(x, epsilon=0.3, upper=SIGNED_GRID[j], rng=InsecureSeededSource(seed))
        assert seen.pop() == j and high.stops[0] < SIGNED_GRID[j]
    for kw in ({"lower": 0}, {"upper": 10.0}):
        acc = treedp.Accountant(PureDP(5.0))
        res = private_bounds(x, epsilon=0.7, accountant=acc, rng=InsecureSeededSource(1), **kw)
        assert acc.spent.epsilon == res.epsilon_spent <= 0.7
    with pytest.raises(InvalidParameterError, match="float64 range"):
        private_bounds(x, epsilon=0.3, lower=10**400)


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
@pytest.mark.parametrize("bounds", ["private", (0, "private")])
def test_a_wrong_public_n_under_replace_is_refused_before_the_bounds_charge(
    bounds: Any, tmp_path: Any
) -> None:
    acc = treedp.Accountant(PureDP(10.0), neighbours="replace")
    path = tmp_path / "v.csv"
    path.write_text("v\n" + "\n".join(str(i) for i in range(20)) + "\n")
    for data, column in ((np.arange(20.0), None), (path, "v")):
        with pytest.raises(treedp.DataError, match="'n' parameter"):
            treedp.release_cdf(
                data,
                column=column,
                bounds=bounds,
                bins=16,
                epsilon=1.0,
                neighbours="replace",
                n=7,
                accountant=acc,
            )
        assert acc.history == ()
    rel = treedp.release_cdf(
        path,
        column="v",
        bounds=bounds,
        bins=16,
        epsilon=1.0,
        neighbours="replace",
        n=20,
        accountant=acc,
        rng=InsecureSeededSource(1),
    )
    assert rel.bounds_step is not None and len(acc.history) == 1


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_a_release_with_too_few_records_for_the_allowance_is_flagged(tmp_path: Any) -> None:
    """The scans stop about k (the public allowance) records beyond the data's ends; a release
    whose released total is below RECORDS_PER_ALLOWANCE · k says so (post-processing of the
    release; the text holds no count), one with many records does not, and the allowance
    survives the file (files without it still load)."""
    from treedp.release.format import _bounds_step, _checksum
    from treedp.value_methods.bounds_warnings import RECORDS_PER_ALLOWANCE, few_records_warning

    assert few_records_warning(60.0, 599.0) is not None
    assert few_records_warning(60.0, RECORDS_PER_ALLOWANCE * 60.0) is None
    x = np.random.default_rng(TEST_SEED).lognormal(10, 1, 300)
    rel = treedp.release_cdf(
        x, bounds=(0, "private"), bins=256, epsilon=1.0, rng=InsecureSeededSource(5)
    )
    assert rel.bounds_step is not None and rel.bounds_step["allowance"] == 60.0  # k = 6 / 0.1
    warning = rel.bounds_warning()
    assert warning is not None and "threshold at this epsilon" in warning
    assert not any(ch.isdigit() for ch in warning.replace("60", "").replace("10 times", ""))
    path = tmp_path / "few.treedp"
    rel.save(path)
    assert treedp.load_release(path).bounds_warning() == warning
    many = np.random.default_rng(TEST_SEED).lognormal(10, 1, 20_000)
    ok = treedp.release_cdf(
        many, bounds=(0, "private"), bins=256, epsilon=1.0, rng=InsecureSeededSource(5)
    )
    assert ok.bounds_warning() is None
    # a release written before the allowance was recorded: no allowance, no such warning
    doc = rel.to_dict()
    step = _find_bounds_step(doc)
    assert step is not None
    del step["allowance"]
    doc["checksum"] = _checksum(doc["payload"])
    loaded = treedp.Release.from_dict(doc)
    assert loaded.bounds_step is not None and "allowance" not in loaded.bounds_step
    assert loaded.bounds_warning() != warning
    bad = dict(rel.bounds_step, allowance=-1.0)
    with pytest.raises(treedp.ReleaseFormatError, match="allowance"):
        _bounds_step({"bounds_step": bad})


def _find_bounds_step(doc: Any) -> dict[str, Any] | None:
    """The ``bounds_step`` dict anywhere in a release file's JSON document."""
    if isinstance(doc, dict):
        if isinstance(doc.get("bounds_step"), dict):
            return doc["bounds_step"]  # type: ignore[no-any-return]
        for value in doc.values():
            found = _find_bounds_step(value)
            if found is not None:
                return found
    if isinstance(doc, list):
        for value in doc:
            found = _find_bounds_step(value)
            if found is not None:
                return found
    return None


def test_release_cdf_emits_the_bounds_warning_as_a_python_warning() -> None:
    """With private bounds, a flagged release also says so as a BoundsWarning (the same text
    as ``Release.bounds_warning()``); a release with ordinary bounds warns nothing."""
    import warnings

    with pytest.warns(treedp.BoundsWarning) as caught:
        rel = treedp.release_cdf(
            [1.0, 2.0, 3.0, 4.0, 5.0],
            bounds="private",
            bins=16,
            epsilon=1.0,
            rng=InsecureSeededSource(4),
        )
    assert str(caught[0].message) == rel.bounds_warning()
    x = np.random.default_rng(TEST_SEED).normal(0, 1, 20_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ok = treedp.release_cdf(
            x, bounds="private", bins=64, epsilon=1.0, rng=InsecureSeededSource(4)
        )
    assert ok.bounds_warning() is None


def test_integer_bounds_pass_their_stops() -> None:
    """Integers: at least one integer past each stop's (near 0 the grid's steps are narrower
    than one integer, and the rounded margin moved none), a lower stop in (-1, 0] keeping 0."""
    # a lower stop at 1.83: its margin point 1.38 rounds up to 2, clamping every record at 1
    assert pb._released(1.38, 106.6, True, None, (1.83, 89.5)) == (1.0, 106.0)
    assert pb._released(1.38, 106.6, True) == (2.0, 106.0)  # without the stops: as before
    # a lower stop at 0 or just below keeps 0 (non-negative columns)
    assert pb._released(-0.19, 106.6, True, None, (0.0, 89.5)) == (0.0, 106.0)
    assert pb._released(-0.41, 106.6, True, None, (-0.19, 89.5)) == (0.0, 106.0)
    assert pb._released(-1.0, 106.6, True, None, (-0.68, 89.5)) == (-1.0, 106.0)
    # the upper scan's first point, 0: one integer above it
    assert pb._released(-127.0, 0.19, True, None, (-106.6, 0.0)) == (-127.0, 1.0)
    # where the margin already passes an integer nothing changes (Adult age's stops)
    assert pb._released(12.45, 106.6, True, None, (15.0, 89.5)) == (13.0, 106.0)
    # a public side stays as it is; the grid's ends stay within the integer limit
    assert pb._released(0.0, 0.19, True, "lower", (0.0, 0.0)) == (0.0, 1.0)
    assert pb._released(-3.0, 2.0, True, "upper", (-2.36, 2.0)) == (-3.0, 2.0)
    top = float(SIGNED_GRID[-1])
    assert pb._released(-top, top, True, None, (-top, top)) == (-(2.0**53 - 1), 2.0**53 - 1)


def _past_the_stops_holds(res: pb.BoundsResult) -> bool:
    lo_stop, hi_stop = res.stops
    lower = res.lo == 0.0 if math.ceil(lo_stop) == 0 else res.lo <= math.ceil(lo_stop) - 1
    return lower and res.hi >= math.floor(hi_stop) + 1


def test_integer_bounds_are_the_stops_post_processed(monkeypatch: pytest.MonkeyPatch) -> None:
    """On data whose lower stops fall where the grid's steps are below one integer, every
    release passes its stops by an integer and is a function of its stops alone; the rule
    left out (a mutant) is caught on the same seeds."""
    x = np.r_[np.ones(60), np.full(100, 2.0), np.repeat(np.arange(3.0, 17.0), 400)]
    zero = (SIGNED_GRID.size - 1) // 2

    def runs() -> list[pb.BoundsResult]:
        return [
            private_bounds(x, epsilon=0.1, integers=True, rng=InsecureSeededSource(s))
            for s in range(40)
        ]

    results = runs()
    assert all(_past_the_stops_holds(r) for r in results)
    assert any(r.lo == 1.0 for r in results)
    for r in results:  # the released bounds from the stops alone (post-processing)
        down, up = (int(np.searchsorted(SIGNED_GRID, s)) for s in r.stops)
        assert zero <= up and down <= up
        lo, hi = pb._outwards(down, -1, pb.MARGIN), pb._outwards(up, 1, pb.MARGIN)
        assert (r.lo, r.hi) == pb._released(lo, hi, True, None, r.stops)
    monkeypatch.setattr(pb, "_past_the_stops", lambda lo, hi, stops, known: (lo, hi))
    assert not all(_past_the_stops_holds(r) for r in runs())
