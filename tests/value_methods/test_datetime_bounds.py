"""Private bounds of datetime columns: the public day grid, its counting pass on every input,
the bounds found, the zones kept, refusals before any charge, warnings and the files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.sources import DrawCountingSource
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.domain import make_bins
from treedp.engines.dispatch import count_source
from treedp.value_methods import datetime_bounds as db

N = 20_000
YEAR = np.datetime64("2013-01-01T00:00:00", "s")


def _times(n: int = N, days: int = 365, start: np.datetime64 = YEAR) -> np.ndarray:
    """Seconds-resolution datetimes spread over ``days`` days from ``start`` (seeded)."""
    rng = np.random.default_rng(TEST_SEED)
    return start + rng.integers(0, days * 86_400, n).astype("timedelta64[s]")


def test_grid_is_public_daily_and_spans_pandas_datetimes() -> None:
    grid = db.DAY_GRID
    assert grid.dtype == np.int64 and not grid.flags.writeable
    assert np.all(np.diff(grid) == db.DAY_SECONDS)
    assert grid[0] == np.datetime64("1678-01-01", "s").astype(np.int64)
    assert grid[-1] == np.datetime64("2261-12-31", "s").astype(np.int64)
    edges = db.DAY_EDGES.astype(np.int64)
    assert edges.size == grid.size + 2
    np.testing.assert_array_equal(edges[1:-1], grid)
    assert edges[0] == grid[0] - db.DAY_SECONDS and edges[-1] == grid[-1] + db.DAY_SECONDS


def test_one_counting_pass_gives_exactly_the_counts_the_scans_read() -> None:
    """Values on grid points, just before them, and far outside the grid (clamped into the
    end bins, which lie below / at or above every point) count as ``#{x < c}`` says."""
    pts = db.DAY_GRID[[0, 1, 5000, -2, -1]]
    seconds = np.concatenate(
        [pts, pts - 1, [pts[0] - 10 * db.DAY_SECONDS, pts[-1] + 10 * db.DAY_SECONDS]]
    )
    values = seconds.astype("datetime64[s]")
    bins = make_bins(edges=db.DAY_EDGES)
    counted = db.DayCounts.from_counts(
        count_source(values, column=None, bins=bins, nan="error").counts
    )
    direct = db.DayCounts.from_seconds(seconds)
    np.testing.assert_array_equal(counted.below, direct.below)
    assert counted.total == direct.total == seconds.size
    assert counted.below[0] == 2  # the point one second before it, and the one far below


def test_bounds_cover_the_data_and_the_margins_are_post_processing() -> None:
    x = _times()
    counts = db.DayCounts.from_seconds(x.astype(np.int64))
    res = db.datetime_bounds(
        counts, epsilon=0.1, neighbours="add_remove", rng=InsecureSeededSource(TEST_SEED)
    )
    lo, hi = (int(v) for v in res.value)
    stop_lo, stop_hi = (int(v) for v in res.stops)
    # each scan stops within a few days of the data's ends (k = 120 records, 55 per day)
    first, last = int(x.min().astype(np.int64)), int(x.max().astype(np.int64))
    assert first - 2 * db.DAY_SECONDS <= stop_lo <= first + 10 * db.DAY_SECONDS
    assert last - 10 * db.DAY_SECONDS <= stop_hi <= last + 2 * db.DAY_SECONDS
    down = int(np.searchsorted(db.DAY_GRID, stop_lo))
    up = int(np.searchsorted(db.DAY_GRID, stop_hi))
    assert (lo, hi) == db.released_seconds(down, up)
    width = (up - down + 2) * db.DAY_SECONDS
    assert (
        lo == stop_lo - db.DAY_SECONDS - width // 4 and hi == stop_hi + db.DAY_SECONDS + width // 4
    )
    assert res.epsilon_spent <= 0.1 and res.neighbours == "add_remove"
    assert res.allowance == 2 * res.scales[1]


@pytest.mark.parametrize("start", ["1700-06-01", "1969-12-25", "2250-01-01"])
def test_bounds_anywhere_on_the_grid_and_within_a_day(start: str) -> None:
    x = _times(5000, 1, np.datetime64(start + "T00:00:00", "s")).astype(np.int64)
    counts = db.DayCounts.from_seconds(x)
    res = db.datetime_bounds(counts, epsilon=1.0, neighbours="replace", rng=InsecureSeededSource(1))
    lo, hi = res.value
    assert lo <= x.min() and hi >= x.max()
    assert hi - lo <= 8 * db.DAY_SECONDS  # the day's data, a day each side, the width margin


def test_the_stage_charges_once_the_whole_epsilon_and_spends_the_rest_on_the_release() -> None:
    acct = treedp.Accountant(treedp.PureDP(1.0))
    rel = treedp.release_cdf(
        _times(),
        epsilon=1.0,
        bounds="private",
        bins=256,
        accountant=acct,
        rng=InsecureSeededSource(2),
    )
    assert len(acct.history) == 1 and acct.spent == treedp.PureDP(1.0)
    step = rel.bounds_step
    assert step is not None and step["grid"] == "days" and step["share"] == 0.1
    assert rel.total_guarantee.epsilon <= 1.0
    assert rel.bins.is_datetime and rel.bins.timezone is None  # naive data: naive bounds
    lo, hi = rel.bins.edges_as_values()[[0, -1]]
    assert lo < np.datetime64("2013-01-01") and hi > np.datetime64("2013-12-31")
    assert np.datetime64("2013-06-01") < rel.quantile(0.5) < np.datetime64("2013-08-01")


def _zoned(x: np.ndarray, zone: str) -> pd.Series:
    return pd.Series(pd.to_datetime(x).tz_localize("UTC").tz_convert(zone))


def test_every_input_gives_the_same_bounds(tmp_path: Path) -> None:
    """numpy, pandas (naive and tz-aware), Python datetimes, polars, Arrow, Parquet, CSV
    (declared, naive and with offsets) and DuckDB count the same: the same seed gives the
    same bounds, on the UTC timeline, each in its own zone."""
    x = _times(3000)
    naive = pd.DataFrame({"t": pd.to_datetime(x)})
    aware = pd.DataFrame({"t": _zoned(x, "America/New_York")})
    naive.to_parquet(tmp_path / "n.parquet")
    aware.to_parquet(tmp_path / "a.parquet")
    pd.DataFrame({"t": [str(v) for v in x]}).to_csv(tmp_path / "n.csv", index=False)
    pd.DataFrame({"t": [str(v) + "Z" for v in x]}).to_csv(tmp_path / "z.csv", index=False)
    utc = treedp.PrivateBounds(datetimes=True, timezone="UTC")
    cases: list[tuple[Any, Any, Any]] = [
        (x, None, "private"),
        (naive, "t", "private"),
        (list(pd.to_datetime(x).to_pydatetime()), None, treedp.PrivateBounds(datetimes=True)),
        (aware, "t", "private"),
        (str(tmp_path / "n.parquet"), "t", "private"),
        (str(tmp_path / "a.parquet"), "t", "private"),
        (str(tmp_path / "n.csv"), "t", treedp.PrivateBounds(datetimes=True)),
        (str(tmp_path / "z.csv"), "t", utc),
    ]
    pl = pytest.importorskip("polars")
    cases.append((pl.from_pandas(aware), "t", "private"))
    pa = pytest.importorskip("pyarrow")
    cases.append((pa.Table.from_pandas(naive), "t", "private"))
    found = []
    for data, column, bounds in cases:
        rel = treedp.release_cdf(
            data, column=column, epsilon=1.0, bounds=bounds, bins=64, rng=InsecureSeededSource(3)
        )
        found.append(tuple(rel.bounds_step["stops"]))
        zone = rel.bins.timezone
        expected = "America/New_York" if "a." in str(data) or data is aware else None
        if isinstance(data, pl.DataFrame):
            expected = "America/New_York"
        if bounds is utc:
            expected = "UTC"
        assert zone == expected, (type(data), zone)
    assert len(set(found)) == 1, found
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE f AS SELECT * FROM read_parquet(?)", [str(tmp_path / "n.parquet")])
    rel = treedp.release_cdf(
        con, "SELECT t FROM f", column="t", epsilon=1.0, bounds="private", bins=64,
        rng=InsecureSeededSource(3),
    )  # fmt: skip
    assert tuple(rel.bounds_step["stops"]) == found[0]


def test_answers_keep_the_columns_zone() -> None:
    aware = _zoned(_times(), "Europe/Paris")
    rel = treedp.release_cdf(
        aware, epsilon=1.0, bounds="private", bins=128, rng=InsecureSeededSource(4)
    )
    q = rel.quantile(0.5)
    assert isinstance(q, pd.Timestamp) and str(q.tz) == "Europe/Paris"
    fixed = pd.Series(pd.to_datetime(_times()).tz_localize("UTC").tz_convert("+05:00"))
    rel = treedp.release_cdf(
        fixed, epsilon=1.0, bounds="private", bins=128, rng=InsecureSeededSource(4)
    )
    assert rel.bins.timezone == "UTC"  # offsets name no zone: UTC unless timezone= says
    paris = treedp.PrivateBounds(timezone="Europe/Paris")
    rel = treedp.release_cdf(
        fixed, epsilon=1.0, bounds=paris, bins=128, rng=InsecureSeededSource(4)
    )
    assert rel.bins.timezone == "Europe/Paris"
    offsets = [
        dt.datetime(2013, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))) + dt.timedelta(hours=h)
        for h in range(0, 24 * 300, 3)
    ]
    rel = treedp.release_cdf(
        offsets, epsilon=1.0, bounds=paris, bins=64, rng=InsecureSeededSource(4)
    )
    assert rel.bins.timezone == "Europe/Paris"
    # Python datetimes have no type: "private" reads numbers, and their zone is declared
    with pytest.raises(treedp.InvalidTypeError, match="datetimes"):
        treedp.release_cdf(offsets, epsilon=1.0, bounds="private", bins=64)
    with pytest.raises(treedp.InvalidTypeError, match="offsets"):
        treedp.release_cdf(
            offsets, epsilon=1.0, bounds=treedp.PrivateBounds(datetimes=True), bins=64
        )


@pytest.mark.parametrize(
    ("data", "kwargs", "error", "match"),
    [
        ("naive", {"bins": "integers"}, treedp.InvalidParameterError, "bins='integers'"),
        (
            "naive",
            {"bounds": treedp.PrivateBounds(timezone="UTC")},
            treedp.InvalidParameterError,
            "time zone",
        ),
        (
            "paris",
            {"bounds": treedp.PrivateBounds(timezone="UTC")},
            treedp.InvalidParameterError,
            "time zone",
        ),
        (
            "csv_z",
            {"bounds": treedp.PrivateBounds(datetimes=True)},
            treedp.InvalidTypeError,
            "offset",
        ),
        ("csv_n", {"bounds": "private"}, treedp.InvalidTypeError, "datetimes=True"),
        ("naive", {"epsilon": 5.0}, treedp.BudgetExceededError, None),
    ],
)
def test_refusals_come_before_any_charge_or_noise(
    tmp_path: Path, data: str, kwargs: dict[str, Any], error: type[Exception], match: str | None
) -> None:
    x = _times(500)
    inputs = {
        "naive": (pd.Series(pd.to_datetime(x)), None),
        "paris": (_zoned(x, "Europe/Paris"), None),
        "csv_z": (tmp_path / "z.csv", "t"),
        "csv_n": (tmp_path / "n.csv", "t"),
    }
    pd.DataFrame({"t": [str(v) + "Z" for v in x]}).to_csv(tmp_path / "z.csv", index=False)
    pd.DataFrame({"t": [str(v) for v in x]}).to_csv(tmp_path / "n.csv", index=False)
    values, column = inputs[data]
    acct = treedp.Accountant(treedp.PureDP(1.0))
    source = DrawCountingSource(5)
    call: dict[str, Any] = {"epsilon": 1.0, "bounds": "private", "bins": 64, **kwargs}
    with pytest.raises(error, match=match) as info:
        treedp.release_cdf(values, column=column, accountant=acct, rng=source, **call)
    assert acct.history == () and source.drawn == 0
    assert "2013-" not in str(info.value) and "500" not in str(info.value)


def test_private_bounds_request_is_checked_at_the_edge() -> None:
    with pytest.raises(treedp.InvalidTypeError, match="datetimes"):
        treedp.PrivateBounds(datetimes="yes")  # type: ignore[arg-type]
    with pytest.raises(treedp.InvalidParameterError, match="both sides"):
        treedp.PrivateBounds(lower=0, datetimes=True)
    with pytest.raises(treedp.InvalidParameterError, match="timezone"):
        treedp.PrivateBounds(datetimes=False, timezone="UTC")
    with pytest.raises(treedp.InvalidParameterError, match="timezone"):
        treedp.PrivateBounds(timezone="Mars/Olympus")
    assert treedp.PrivateBounds(timezone="Z").timezone == "UTC"


def test_too_few_records_and_data_off_the_grid_are_flagged() -> None:
    few = _times(50)
    with pytest.warns(treedp.BoundsWarning):
        treedp.release_cdf(few, epsilon=1.0, bounds="private", bins=32, rng=InsecureSeededSource(6))
    old = np.datetime64("1500-01-01T00:00:00", "us") + np.arange(5000).astype("timedelta64[h]")
    with pytest.warns(treedp.BoundsWarning, match="grid of days"):
        treedp.release_cdf(old, epsilon=1.0, bounds="private", bins=32, rng=InsecureSeededSource(6))


def test_the_release_file_keeps_the_grid(tmp_path: Path) -> None:
    rel = treedp.release_cdf(
        _zoned(_times(), "Asia/Tokyo"),
        epsilon=1.0,
        bounds="private",
        bins=64,
        rng=InsecureSeededSource(7),
    )
    for name in ("r.json", "r.tdp"):
        rel.save(tmp_path / name)
        back = treedp.load_release(tmp_path / name)
        assert back.bounds_step == rel.bounds_step and back.bins.timezone == "Asia/Tokyo"
        assert back.quantile(0.5) == rel.quantile(0.5)


@pytest.mark.parametrize("method", ["tree", "exponential", "recursive"])
def test_quantiles_find_datetime_bounds_on_the_day_grid(method: str) -> None:
    """``treedp.quantiles(bounds="private")`` on datetimes: the day-grid scans (never the float
    lattice), one charge, answers in the column's zone, the bounds step in the parts."""
    x = _zoned(_times(), "Europe/Paris")
    acct = treedp.Accountant(treedp.PureDP(1.0))
    res = treedp.quantiles(
        x, [0.25, 0.5], epsilon=1.0, bounds="private", method=method, accountant=acct,
        rng=InsecureSeededSource(8),
    )  # fmt: skip
    assert len(acct.history) == 1 and res.epsilon_spent <= 1.0
    assert res.parts[0].mechanism == db.CONTRACT.name
    values = list(res.values)
    assert all(isinstance(v, pd.Timestamp) and str(v.tz) == "Europe/Paris" for v in values)
    truth = pd.Series(x).quantile([0.25, 0.5])
    for got, want in zip(values, truth, strict=True):
        assert abs(got - want) < pd.Timedelta(days=5)
    with pytest.raises(treedp.InvalidParameterError, match="bins='integers'"):
        treedp.quantiles(x, 0.5, epsilon=1.0, bounds="private", bins="integers", method="tree")
    assert "Europe/Paris" in repr(res) or "+0" in repr(res)


def test_a_text_cell_is_not_called_a_datetime(tmp_path: Path) -> None:
    """A CSV column with a text cell under private bounds is refused as holding cells that are
    neither numbers nor datetimes (it was told it read datetimes and to declare them, the
    rewrite meant for a column of datetimes only; an independent review); a column of
    datetimes still gets the advice to declare them."""
    text = tmp_path / "text.csv"
    text.write_text("age\n1\n2\nsecret-value-123\n")
    with pytest.raises(treedp.InvalidTypeError, match="neither numbers nor datetimes"):
        treedp.release_cdf(str(text), column="age", bounds="private", bins=10, epsilon=1.0)
    dated = tmp_path / "dated.csv"
    dated.write_text("t\n2024-01-01\n2024-02-01\n")
    with pytest.raises(treedp.InvalidTypeError, match=r"PrivateBounds\(datetimes=True\)"):
        treedp.release_cdf(str(dated), column="t", bounds="private", bins=10, epsilon=1.0)
