"""Time zones kept (:mod:`treedp.timezones`): tz-aware data and bounds in, answers in the same
zone out, for every input kind that can carry a zone; naive and aware never mixed; the zone in
the release file; bins equal-width on the UTC timeline across a change of daylight-saving time.
"""

from __future__ import annotations

import datetime as dt
import warnings
import zoneinfo
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource
from treedp.domain import Bins, make_bins
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    ReleaseFormatError,
)

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

NY = "America/New_York"
BOUNDS = ("2013-01-01", "2014-01-01")


def _hours(n: int = 3000, seed: int = 0) -> Any:
    """``n`` whole hours of 2013 as UTC instants (a pandas DatetimeIndex)."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2013-01-01", tz="UTC")
    return start + pd.to_timedelta(rng.integers(0, 365 * 24, n), unit="h")


def _release(values: Any, **kw: Any) -> treedp.Release:
    kw.setdefault("bounds", BOUNDS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning about zones, whatever the input
        return treedp.release_cdf(values, epsilon=1.0, bins=64, rng=InsecureSeededSource(5), **kw)


@pytest.fixture(scope="module")
def ny() -> Any:
    return _hours().tz_convert(NY)


@pytest.fixture(scope="module")
def reference(ny: Any) -> treedp.Release:
    return _release(pd.Series(ny))


# ---------------------------------------------------------------------------- the rule
def test_naive_string_bounds_are_wall_times_in_the_data_zone(reference: treedp.Release) -> None:
    bins = reference.bins
    assert bins.timezone == NY and bins.datetime_unit == "s"
    # New York midnight is 05:00 UTC in winter: the edges are UTC instants.
    assert bins.edges[0] == np.datetime64("2013-01-01T05:00:00", "s").astype(np.int64)
    assert reference.edges[0] == pd.Timestamp("2013-01-01", tz=NY)
    assert reference.edges[-1] == pd.Timestamp("2014-01-01", tz=NY)


def test_counts_are_exact_on_the_utc_timeline(ny: Any, reference: treedp.Release) -> None:
    ticks = ny.tz_convert("UTC").tz_localize(None).to_numpy().astype("datetime64[s]")
    edges = reference.bins.edges  # values before New York's midnight are clamped in
    clamped = np.clip(ticks.view(np.int64), edges[0], edges[-1] - 1)
    expected = np.histogram(clamped, bins=edges)[0]
    counts, _ = reference.bins.count(pd.Series(ny))
    assert np.array_equal(counts, expected)


@pytest.mark.parametrize(
    "kind", ["polars", "arrow", "arrow_table", "parquet", "python", "csv", "numpy_aware_bounds"]
)
def test_every_input_kind_gives_the_same_release(
    kind: str, ny: Any, reference: treedp.Release, tmp_path: Path
) -> None:
    """The same instants in any container: the same bins, zone and (same seed) answers."""
    kw: dict[str, Any] = {}
    if kind == "polars":
        pl = pytest.importorskip("polars")
        values: Any = pl.Series(ny.tz_convert("UTC")).dt.convert_time_zone(NY)
    elif kind == "arrow":
        values = pa.array(ny)
    elif kind in ("arrow_table", "parquet"):
        values = pa.table({"t": pa.array(ny)})
        kw["column"] = "t"
        if kind == "parquet":
            import pyarrow.parquet as pq

            pq.write_table(values, tmp_path / "t.parquet")
            values = str(tmp_path / "t.parquet")
    elif kind == "python":
        values = [t.to_pydatetime().astimezone(zoneinfo.ZoneInfo(NY)) for t in ny]
    elif kind == "csv":  # offsets in the cells, the zone declared by the bounds
        (tmp_path / "t.csv").write_text("t\n" + "\n".join(t.isoformat() for t in ny) + "\n")
        values, kw["column"] = str(tmp_path / "t.csv"), "t"
        kw["bounds"] = (pd.Timestamp(BOUNDS[0], tz=NY), pd.Timestamp(BOUNDS[1], tz=NY))
    else:  # numpy datetimes have no zone: UTC instants under aware bounds
        values = ny.tz_convert("UTC").tz_localize(None).to_numpy()
        kw["bounds"] = (pd.Timestamp(BOUNDS[0], tz=NY), pd.Timestamp(BOUNDS[1], tz=NY))
    rel = _release(values, **kw)
    assert rel.bins.timezone == NY
    assert np.array_equal(rel.bins.edges, reference.bins.edges) or "bounds" in kw
    assert rel.median() == reference.median() or "bounds" in kw
    assert str(rel.median().tz) == NY
    counts, _ = reference.bins.count(pd.Series(ny))
    assert np.array_equal(rel.bins.count(pd.Series(ny))[0], counts)


def test_aware_bounds_are_instants_and_answers_take_the_data_zone(ny: Any) -> None:
    paris = pd.Timestamp("2013-01-01 06:00", tz="Europe/Paris")
    paris = (paris, pd.Timestamp("2014-01-01", tz="UTC"))
    rel = _release(pd.Series(ny), bounds=paris)
    assert rel.bins.timezone == NY
    assert rel.edges[0] == pd.Timestamp("2013-01-01 05:00", tz="UTC")
    assert str(rel.edges[0].tz) == NY


def test_aware_timestamp_bounds_keep_the_unit_of_their_naive_form(ny: Any) -> None:
    """No numpy warning (``_release`` turns warnings into errors) and no unit switch."""
    naive = make_bins(bounds=(pd.Timestamp("2013-01-01"), pd.Timestamp("2014-01-01")), bins=4)
    aware = _release(
        pd.Series(ny), bounds=(pd.Timestamp("2013-01-01", tz=NY), pd.Timestamp("2014-01-01", tz=NY))
    )
    assert aware.bins.datetime_unit == naive.datetime_unit
    text = make_bins(bounds=("2013-01-01T00:00Z", "2014-01-01T00:00Z"), bins=4)
    assert text.datetime_unit == "s" and text.timezone == "UTC"
    py = make_bins(
        bounds=(dt.datetime(2013, 1, 1, tzinfo=dt.UTC), dt.datetime(2014, 1, 1, tzinfo=dt.UTC)),
        bins=4,
    )
    assert py.datetime_unit == "s" and np.array_equal(py.edges, text.edges)


def test_fixed_offset_bounds_name_their_zone() -> None:
    bins = make_bins(bounds=("2013-01-01T00:00+05:30", "2013-01-02T00:00+05:30"), bins=2)
    assert bins.timezone == "+05:30"
    assert bins.edges_in_zone()[0] == pd.Timestamp("2013-01-01", tz="+05:30")
    assert bins.edges[0] == np.datetime64("2012-12-31T18:30", "s").astype(np.int64)


# ---------------------------------------------------------------------------- DST
def test_bins_are_equal_width_on_the_utc_timeline_across_dst() -> None:
    """New York springs forward on 2013-03-10: 71 hours from the 9th to the 12th."""
    bins = make_bins(bounds=("2013-03-09", "2013-03-12"), bins=71, timezone=NY)
    assert set(np.diff(bins.edges).tolist()) == {3600}
    local = bins.edges_in_zone()
    assert local[0] == pd.Timestamp("2013-03-09", tz=NY)
    assert local[-1] == pd.Timestamp("2013-03-12", tz=NY)
    hours = [t.hour for t in local[24:28]]
    assert hours == [0, 1, 3, 4]  # 02:00 does not exist that night
    three = make_bins(bounds=("2013-03-09", "2013-03-12"), bins=3, timezone=NY)
    assert set(np.diff(three.edges).tolist()) == {71 * 3600 // 3}


def test_a_wall_time_that_does_not_exist_or_repeats_is_refused() -> None:
    for word in ("2013-03-10T02:30", "2013-11-03T01:30"):
        with pytest.raises(InvalidParameterError, match=r"'bounds'.*daylight-saving"):
            make_bins(bounds=(word, "2014-01-01"), bins=4, timezone=NY)


# ---------------------------------------------------------------------------- answers
def test_answers_are_in_the_data_zone(reference: treedp.Release) -> None:
    q = reference.quantile([0.25, 0.5])
    assert q.shape == (2,) and all(str(t.tz) == NY for t in q)
    low, high = reference.quantile_interval(0.5, rng=InsecureSeededSource(1))
    assert str(low.tz) == NY and low <= high
    frame = reference.to_frame()
    assert str(frame["left"].dtype) == f"datetime64[s, {NY}]"
    # query points: aware (any zone) are instants, naive ones wall times in the zone
    july = reference.cdf(pd.Timestamp("2013-07-01", tz=NY))
    assert reference.cdf("2013-07-01") == july
    assert reference.cdf(pd.Timestamp("2013-07-01 04:00", tz="UTC")) == july
    assert reference.cdf(pd.Series([pd.Timestamp("2013-07-01", tz=NY)]))[0] == july
    with pytest.raises(InvalidTypeError, match="'x'"):
        reference.cdf(3.0)


def test_naive_bins_refuse_aware_query_points() -> None:
    rel = _release(np.array(["2013-05-01T00:00"] * 10, dtype="datetime64[s]"))
    assert rel.bins.timezone is None and isinstance(rel.median(), np.datetime64)
    with pytest.raises(InvalidTypeError, match=r"'x'.*time zone"):
        rel.cdf(pd.Timestamp("2013-07-01", tz=NY))


@pytest.mark.parametrize("method", ["tree", "exponential", "recursive"])
def test_quantiles_and_median_answer_in_the_data_zone(method: str, ny: Any) -> None:
    res = treedp.quantiles(
        pd.Series(ny), [0.25, 0.5], epsilon=1.0, bounds=BOUNDS, method=method,
        rng=InsecureSeededSource(2),
    )  # fmt: skip
    assert all(str(v.tz) == NY for v in res.value)
    assert res.bounds[0] == pd.Timestamp("2013-01-01", tz=NY)
    # the same instants, naive in UTC with bounds at the same instants: the same answers
    naive = treedp.quantiles(
        ny.tz_convert("UTC").tz_localize(None).to_numpy(), [0.25, 0.5], epsilon=1.0,
        bounds=(np.datetime64("2013-01-01T05:00"), np.datetime64("2014-01-01T05:00")),
        method=method, rng=InsecureSeededSource(2),
    )  # fmt: skip
    assert [v.tz_convert("UTC").tz_localize(None) for v in res.value] == list(
        pd.DatetimeIndex(naive.value)
    )
    med = treedp.median(pd.Series(ny), epsilon=1.0, bounds=BOUNDS, rng=InsecureSeededSource(2))
    assert str(med.tz) == NY


def test_grouped_release_keeps_the_zone(tmp_path: Path) -> None:
    t = _hours(2000).tz_convert("Europe/Paris")
    frame = pd.DataFrame({"t": t, "g": np.where(np.arange(2000) % 2 == 0, "a", "b")})
    grouped = treedp.release_grouped(
        frame, column="t", by="g", keys=["a", "b"], bounds=BOUNDS, bins=16, epsilon=1.0,
        rng=InsecureSeededSource(3),
    )  # fmt: skip
    assert grouped["a"].edges[0] == pd.Timestamp("2013-01-01", tz="Europe/Paris")
    grouped.save(tmp_path / "g.json")
    again = treedp.load_grouped_release(tmp_path / "g.json")
    assert again["b"].median() == grouped["b"].median()
    assert str(again["b"].median().tz) == "Europe/Paris"


# ---------------------------------------------------------------------------- files
@pytest.mark.parametrize("file_format", ["json", "binary"])
def test_the_zone_survives_save_and_load(
    file_format: str, reference: treedp.Release, tmp_path: Path
) -> None:
    path = tmp_path / f"r.{file_format}"
    reference.save(path, file_format=file_format)
    again = treedp.load_release(path)
    assert again.bins.timezone == NY
    assert again.median() == reference.median()
    assert list(again.edges) == list(reference.edges)


def test_files_without_a_zone_still_load_naive(tmp_path: Path) -> None:
    rel = _release(np.array(["2013-05-01T00:00"] * 10, dtype="datetime64[s]"))
    rel.save(tmp_path / "naive.json")
    document = (tmp_path / "naive.json").read_text()
    assert "timezone" not in document  # the layout of naive releases is unchanged
    assert treedp.load_release(tmp_path / "naive.json").bins.timezone is None


def test_a_file_with_an_unknown_zone_is_refused(reference: treedp.Release, tmp_path: Path) -> None:
    from treedp.release.format import _checksum

    document = reference.to_dict()

    def bins_of(node: Any) -> dict[str, Any]:
        if isinstance(node, dict):
            if "datetime_unit" in node:
                return node
            for child in node.values():
                found = bins_of(child)
                if found:
                    return found
        return {}

    bins_of(document)["timezone"] = "Nowhere/Atlantis"
    document["checksum"] = _checksum(document["payload"])
    with pytest.raises(ReleaseFormatError, match="time zone"):
        treedp.Release.from_dict(document)


# ---------------------------------------------------------------------------- CSV text
def _csv(tmp_path: Path, cells: list[str]) -> str:
    path = tmp_path / "c.csv"
    path.write_text("t\n" + "\n".join(cells) + "\n")
    return str(path)


@pytest.mark.parametrize("use_pyarrow", [True, False])
def test_csv_offsets_are_read_as_instants(use_pyarrow: bool, tmp_path: Path) -> None:
    from treedp.engines.files import iter_path_chunks

    path = _csv(tmp_path, ["2013-01-01T10:00:00Z", "2013-01-01 10:00:00+00:00",
                           "2013-01-01T05:00:00-05:00", "2013-01-01T15:30+0530", "NA"])  # fmt: skip
    (chunk,) = iter_path_chunks(path, None, "t", use_pyarrow=use_pyarrow, expect_aware=True)
    assert np.isnat(chunk[-1])
    assert set(chunk[:-1].astype("datetime64[s]").tolist()) == {dt.datetime(2013, 1, 1, 10)}


@pytest.mark.parametrize("use_pyarrow", [True, False])
@pytest.mark.parametrize(
    ("cells", "expect", "match"),
    [
        (["2013-01-01T10:00Z", "2013-01-01T10:00"], None, "mixes times with a UTC offset"),
        (["2013-01-01T10:00Z"], False, "offset.*bounds are naive"),
        (["2013-01-01T10:00"], True, "without a UTC offset.*bounds carry a time zone"),
    ],
)
def test_csv_zone_refusals(
    use_pyarrow: bool, cells: list[str], expect: bool | None, match: str, tmp_path: Path
) -> None:
    from treedp.engines.files import iter_path_chunks

    path = _csv(tmp_path, cells * 3)
    with pytest.raises(InvalidTypeError, match=f"column 't'.*{match}") as info:
        list(iter_path_chunks(path, None, "t", use_pyarrow=use_pyarrow, expect_aware=expect))
    assert "2013" not in str(info.value)  # no value of the data in the message


def test_csv_with_offsets_needs_a_declared_zone_and_charges_nothing(tmp_path: Path) -> None:
    path = _csv(tmp_path, [t.isoformat() for t in _hours(50)])
    acc = treedp.Accountant(treedp.PureDP(5.0))
    with pytest.raises(InvalidTypeError, match="--tz"):
        treedp.release_cdf(path, column="t", bounds=BOUNDS, bins=4, epsilon=1.0, accountant=acc)
    assert acc.spent == treedp.PureDP(0.0)


# ---------------------------------------------------------------------------- refusals
def test_naive_data_with_aware_bounds_is_refused_before_any_charge() -> None:
    acc = treedp.Accountant(treedp.PureDP(5.0))
    naive = pd.Series(pd.to_datetime(["2013-05-01"] * 5))
    with pytest.raises(InvalidTypeError, match=r"'bounds'.*naive"):
        treedp.release_cdf(
            naive, bounds=("2013-01-01T00:00Z", "2014-01-01T00:00Z"), bins=4, epsilon=1.0,
            accountant=acc,
        )  # fmt: skip
    with pytest.raises(InvalidTypeError, match=r"'bounds'.*naive"):
        treedp.quantiles(
            naive, [0.5], epsilon=1.0, bounds=("2013-01-01T00:00Z", "2014-01-01T00:00Z"),
            accountant=acc,
        )  # fmt: skip
    assert acc.spent == treedp.PureDP(0.0)


def test_aware_data_with_naive_bins_is_refused(ny: Any) -> None:
    naive_bins = make_bins(bounds=BOUNDS, bins=4)
    with pytest.raises(InvalidTypeError, match=r"'values'.*bins are naive"):
        treedp.release_cdf(pd.Series(ny), bins=naive_bins, epsilon=1.0)


def test_python_datetimes_of_two_zones_are_refused() -> None:
    acc = treedp.Accountant(treedp.PureDP(5.0))
    a = dt.datetime(2013, 5, 1, tzinfo=dt.UTC)
    for other in (dt.datetime(2013, 5, 1, tzinfo=zoneinfo.ZoneInfo(NY)), dt.datetime(2013, 5, 1)):
        with pytest.raises(InvalidTypeError, match=r"'values'.*zones") as info:
            treedp.release_cdf([a, other], bounds=BOUNDS, bins=4, epsilon=1.0, accountant=acc)
        assert "2013" not in str(info.value)
        with pytest.raises(InvalidTypeError, match="'values'"):
            make_bins(bounds=BOUNDS, bins=4).count([a, other])
    assert acc.spent == treedp.PureDP(0.0)


def test_bounds_mixing_naive_and_aware_or_two_zones_are_refused() -> None:
    with pytest.raises(InvalidTypeError, match=r"'bounds'.*naive"):
        make_bins(bounds=("2013-01-01", "2014-01-01T00:00Z"), bins=4)
    with pytest.raises(InvalidParameterError, match=r"'bounds'.*two time zones"):
        make_bins(bounds=("2013-01-01T00:00Z", "2014-01-01T00:00+01:00"), bins=4)
    # with the data's zone given, aware bounds in any zone are instants
    bins = make_bins(bounds=("2013-01-01T00:00Z", "2014-01-01T00:00+01:00"), bins=4, timezone=NY)
    assert bins.timezone == NY


def test_bins_check_their_zone() -> None:
    with pytest.raises(InvalidParameterError, match="'timezone'"):
        Bins(np.array([0, 10]), datetime_unit="s", timezone="Nowhere/Atlantis")
    with pytest.raises(InvalidParameterError, match="datetime bins only"):
        Bins(np.array([0.0, 1.0]), timezone="UTC")
    with pytest.raises(InvalidTypeError, match="'timezone'"):
        Bins(np.array([0, 10]), datetime_unit="s", timezone=3)  # type: ignore[arg-type]
    assert Bins(np.array([0, 10]), datetime_unit="s", timezone=dt.UTC).timezone == "UTC"
    round_trip = Bins.from_dict(Bins(np.array([0, 10]), datetime_unit="s", timezone=NY).to_dict())
    assert round_trip.timezone == NY


def test_aware_edges(ny: Any) -> None:
    edges = pd.date_range("2013-01-01", "2014-01-01", periods=5, tz=NY)
    rel = treedp.release_cdf(pd.Series(ny), bins=edges, epsilon=1.0, rng=InsecureSeededSource(1))
    assert rel.bins.timezone == NY and rel.edges[0] == edges[0]
    naive = make_bins(edges=["2013-01-01", "2013-06-01", "2014-01-01"], timezone=NY)
    assert naive.edges_in_zone()[1] == pd.Timestamp("2013-06-01", tz=NY)
    with pytest.raises(InvalidTypeError, match="'edges'"):
        make_bins(edges=["2013-01-01T00:00Z", "2013-06-01", "2014-01-01T00:00Z"])


def test_missing_values_in_aware_data_follow_the_policy(ny: Any) -> None:
    series = pd.Series(ny).copy()
    series.iloc[0] = pd.NaT
    with pytest.raises(DataError):
        _release(series)
    assert _release(series, nan="drop").bins.timezone == NY


def test_counts_made_elsewhere_take_the_bounds_zone() -> None:
    rel = treedp.release_counts(
        [5, 6, 7, 8], bounds=("2013-01-01T00:00Z", "2013-01-05T00:00Z"), bins=4, epsilon=1.0,
        rng=InsecureSeededSource(1),
    )  # fmt: skip
    assert rel.bins.timezone == "UTC" and str(rel.median().tz) == "UTC"


def test_without_pandas_the_answers_are_python_datetimes(
    reference: treedp.Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treedp.timezones import from_ticks

    expected = reference.edges[:3]
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # import pandas fails
    got = from_ticks(reference.bins.edges[:3], "s", NY)
    assert all(type(t) is dt.datetime and t.tzinfo is not None for t in got)
    assert [t.isoformat() for t in got] == [t.isoformat() for t in expected]
    assert from_ticks(np.array(["NaT"], dtype="datetime64[s]"), "s", NY)[0] is None


def test_polars_and_arrow_tables_name_their_column(ny: Any) -> None:
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"t": pl.Series(ny.tz_convert("UTC")).dt.convert_time_zone(NY)})
    assert _release(frame, column="t").bins.timezone == NY
    from treedp.timezones import data_zone

    assert data_zone(pa.table({"t": pa.array(ny)}), "t") == NY
    assert data_zone(pa.table({"t": pa.array(ny)}), "missing") == "<unknown>"
    assert data_zone(pd.DataFrame({"t": ny}), "missing") == "<unknown>"


def test_value_methods_read_aware_bounds_as_instants_without_warnings(ny: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        aware = treedp.quantile_exponential(
            pd.Series(ny), 0.5, epsilon=1.0, rng=InsecureSeededSource(4),
            bounds=(pd.Timestamp("2013-01-01 05:00", tz="UTC"), "2014-01-01T05:00:00.000000Z"),
        )  # fmt: skip
    naive = treedp.quantile_exponential(
        pd.Series(ny), 0.5, epsilon=1.0, rng=InsecureSeededSource(4),
        bounds=(np.datetime64("2013-01-01T05:00", "us"), np.datetime64("2014-01-01T05:00", "us")),
    )  # fmt: skip
    assert aware == naive  # the same instants, the same unit: the same draw
    with pytest.raises(InvalidTypeError, match="'bounds'"):
        treedp.quantile_exponential(
            pd.Series(ny), 0.5, epsilon=1.0, bounds=("2013-01-01", "2014-01-01T00:00Z")
        )


def test_grouped_csv_reads_offsets_and_refuses_naive_bounds_before_any_charge(
    tmp_path: Path,
) -> None:
    t = _hours(600).tz_convert(NY)
    path = tmp_path / "g.csv"
    groups = np.where(np.arange(600) % 2 == 0, "a", "b")
    pd.DataFrame({"t": t, "g": groups}).to_csv(path, index=False)
    aware = (pd.Timestamp(BOUNDS[0], tz=NY), pd.Timestamp(BOUNDS[1], tz=NY))
    common: dict[str, Any] = {"column": "t", "by": "g", "keys": ["a", "b"], "bins": 16}
    grouped = treedp.release_grouped(
        str(path), bounds=aware, epsilon=1.0, rng=InsecureSeededSource(1), **common
    )
    assert str(grouped["a"].median().tz) == NY
    acc = treedp.Accountant(treedp.PureDP(5.0))
    with pytest.raises(InvalidTypeError, match="UTC offset"):
        treedp.release_grouped(str(path), bounds=BOUNDS, epsilon=1.0, accountant=acc, **common)
    assert acc.spent == treedp.PureDP(0.0)


# ---------------------------------------------------------------------------- privacy review
FIVE = dt.timezone(dt.timedelta(hours=-5))
AWARE = [dt.datetime(2013, 1, d, 12, tzinfo=FIVE) for d in range(1, 20)]
AWARE_BOUNDS = (dt.datetime(2013, 1, 1, tzinfo=FIVE), dt.datetime(2013, 2, 1, tzinfo=FIVE))


@pytest.mark.parametrize("fn", ["quantiles", "release_cdf"])
@pytest.mark.parametrize("data", [AWARE, [dt.datetime(2013, 1, d, 12) for d in range(1, 20)]])
def test_nat_among_python_datetimes_is_a_missing_value(fn: str, data: list[Any]) -> None:
    """Privacy review F4: ``pd.NaT`` (a ``datetime`` with no tzinfo) among aware datetimes is
    a missing value, not a naive one: dropped under nan="drop" with the same answer as without
    it, refused as missing (DataError) under nan="error"."""
    bounds = AWARE_BOUNDS if data[0].tzinfo is not None else ("2013-01-01", "2013-02-01")

    def call(values: list[Any], nan: str) -> Any:
        seed = InsecureSeededSource(1)
        if fn == "quantiles":
            return treedp.quantiles(values, 0.5, bounds=bounds, epsilon=1.0, nan=nan, rng=seed)
        return treedp.release_cdf(values, bounds=bounds, bins=16, epsilon=1.0, nan=nan, rng=seed)

    without = call(data, "drop")
    for missing in (pd.NaT, None):
        got = call([*data, missing], "drop")
        if fn == "quantiles":
            assert got.value == without.value
        else:
            np.testing.assert_array_equal(got.histogram()[0], without.histogram()[0])
        with pytest.raises(DataError):
            call([missing, *data], "error")


def test_fixed_offset_datetimes_do_not_set_the_zone() -> None:
    """Privacy review F5: fixed UTC offsets on Python datetimes (``fromisoformat``) only place
    each value on the UTC timeline. With naive bounds they are refused with one fixed message,
    whether the records are all summer, all winter or both; with aware bounds the bins and the
    reported bounds are the bounds' whatever the records' offsets."""
    summer = [dt.datetime.fromisoformat("2013-07-01T12:00-04:00")] * 5
    winter = [dt.datetime.fromisoformat("2013-12-01T12:00-05:00")] * 5
    messages = set()
    for data in (summer, winter, summer + winter, [dt.datetime(2013, 7, 1, tzinfo=dt.UTC)]):
        with pytest.raises(InvalidTypeError, match=r"'values'.*fixed UTC offsets") as info:
            treedp.quantiles(data, 0.5, bounds=BOUNDS, epsilon=1.0, rng=InsecureSeededSource(1))
        messages.add(str(info.value))
        with pytest.raises(InvalidTypeError, match="'values'"):
            treedp.release_cdf(data, bounds=BOUNDS, bins=8, epsilon=1.0)
    assert len(messages) == 1
    (text,) = messages
    assert "-04" not in text and "-05" not in text and "UTC-" not in text
    aware = ("2013-01-01T00:00-05:00", "2014-01-01T00:00-05:00")
    seen = set()
    for data in (summer, winter, summer + winter):
        r = treedp.quantiles(data, 0.5, bounds=aware, epsilon=1.0, rng=InsecureSeededSource(1))
        seen.add(tuple(str(b) for b in r.bounds))
        rel = treedp.release_cdf(data, bounds=aware, bins=8, epsilon=1.0)
        seen.add(tuple(str(e) for e in rel.bins.edges[[0, -1]]))
    assert len(seen) == 2  # one for the quantile bounds, one for the bins' edges: data-free


def test_one_named_zone_on_every_datetime_declares_the_zone() -> None:
    """A zoneinfo zone set on every value is a type-level declaration (like a tz dtype); a mix of
    a named zone and fixed offsets is refused with a message naming no zone of the data."""
    zone = zoneinfo.ZoneInfo(NY)
    named = [dt.datetime(2013, 7, 1, 12, tzinfo=zone), dt.datetime(2013, 12, 1, 12, tzinfo=zone)]
    r = treedp.quantiles(named, 0.5, bounds=BOUNDS, epsilon=1.0, rng=InsecureSeededSource(1))
    assert str(r.bounds[0]).endswith("-05:00")  # New York midnight
    mixed = [*named, dt.datetime.fromisoformat("2013-07-02T12:00-04:00")]
    with pytest.raises(InvalidTypeError, match=r"'values'.*zones") as info:
        treedp.quantiles(mixed, 0.5, bounds=BOUNDS, epsilon=1.0)
    assert "New_York" not in str(info.value) and "-04" not in str(info.value)
    naive_bins = make_bins(bounds=BOUNDS, bins=4)
    with pytest.raises(InvalidTypeError, match=r"'values'.*bins are naive") as info:
        treedp.release_cdf(named, bins=naive_bins, epsilon=1.0)
    assert "New_York" not in str(info.value)


def test_a_pandas_object_column_of_fixed_offset_datetimes_is_read_like_the_objects() -> None:
    """Privacy review F5: mixed offsets make pandas keep Python objects (object dtype); they are
    instants whose zone the bounds declare, refused with naive bounds as the objects are."""
    mixed = pd.Series(
        [dt.datetime.fromisoformat("2013-07-01T12:00-04:00")] * 3
        + [dt.datetime.fromisoformat("2013-12-01T12:00-05:00")] * 3
    )
    assert mixed.dtype == object
    with pytest.raises(InvalidTypeError, match=r"'values'.*fixed UTC offsets"):
        treedp.quantiles(mixed, 0.5, bounds=BOUNDS, epsilon=1.0, rng=InsecureSeededSource(1))
    aware = ("2013-01-01T00:00-05:00", "2014-01-01T00:00-05:00")
    r = treedp.quantiles(mixed, 0.5, bounds=aware, epsilon=1.0, rng=InsecureSeededSource(1))
    assert str(r.bounds[0]) == "2013-01-01 00:00:00-05:00"


# ------------------------------------------------ quantiles of a CSV file; fixed-offset dtypes
@pytest.mark.parametrize("fn", ["quantiles", "median"])
def test_csv_quantiles_refuse_offsets_under_naive_bounds_before_any_charge(
    fn: str, tmp_path: Path
) -> None:
    """Issue 32: quantiles/median of a CSV file check the cells against the bounds as
    release_cdf does (it answered naive UTC before), charging nothing when they refuse."""
    path = _csv(tmp_path, [t.isoformat() for t in _hours(50)])  # '2013-...+00:00'
    call = getattr(treedp, fn)
    q = (0.5,) if fn == "quantiles" else ()
    acc = treedp.Accountant(treedp.PureDP(5.0))
    with pytest.raises(InvalidTypeError, match=r"column 't'.*bounds are naive.*--tz") as info:
        call(path, *q, column="t", bounds=BOUNDS, epsilon=1.0, accountant=acc)
    assert "2013" not in str(info.value)
    assert acc.spent == treedp.PureDP(0.0)
    (tmp_path / "naive").mkdir()
    naive = _csv(tmp_path / "naive", ["2013-01-01T10:00"] * 5)
    with pytest.raises(InvalidTypeError, match=r"without a UTC offset.*bounds carry"):
        call(naive, *q, column="t", bounds=("2013-01-01T00:00Z", "2014-01-01T00:00Z"), epsilon=1.0,
             accountant=acc)  # fmt: skip
    assert acc.spent == treedp.PureDP(0.0)
    aware = (pd.Timestamp("2013-01-01", tz=NY), pd.Timestamp("2014-01-01", tz=NY))
    got = call(path, *q, column="t", bounds=aware, epsilon=1.0, rng=InsecureSeededSource(3))
    same = call(pd.Series(_hours(50)), *q, bounds=aware, epsilon=1.0, rng=InsecureSeededSource(3))
    got, same = (r if isinstance(r, pd.Timestamp) else r.value for r in (got, same))
    assert pd.Timestamp(got) == pd.Timestamp(same)  # the same instant, in the bounds' zone
    assert str(got).endswith(("-04:00", "-05:00"))


def _fixed(kind: str, text: str, tmp_path: Path) -> Any:
    """Five records at ``text`` (with an offset) in a column whose type is a fixed offset."""
    s = pd.Series(pd.to_datetime([text] * 5))  # pandas infers datetime64[us, UTC-04:00]
    if kind == "pandas":
        return s
    arrow = pa.array(s)  # timestamp(us, "-04:00")
    if kind == "arrow":
        return arrow
    if kind == "polars":
        return pytest.importorskip("polars").from_pandas(s)  # Datetime(us, "Etc/GMT+4")
    import pyarrow.parquet as pq

    path = tmp_path / f"{abs(hash(text))}.parquet"
    pq.write_table(pa.table({"t": arrow}), path)
    return str(path)


@pytest.mark.parametrize("kind", ["pandas", "arrow", "polars", "parquet"])
def test_a_fixed_offset_dtype_does_not_declare_the_zone(kind: str, tmp_path: Path) -> None:
    """Privacy review F5 via pandas' type guess: summer-only data got -04:00 bins, winter-only
    -05:00. A fixed-offset dtype is now read like fixed-offset Python datetimes: naive bounds
    refused with one fixed message, aware bounds declaring the zone whatever the season."""
    summer = _fixed(kind, "2013-07-01T12:00-04:00", tmp_path)
    winter = _fixed(kind, "2013-12-01T12:00-05:00", tmp_path)
    col = {"column": "t"} if kind == "parquet" else {}
    messages, seen = set(), set()
    aware = ("2013-01-01T00:00-05:00", "2014-01-01T00:00-05:00")
    for data in (summer, winter):
        acc = treedp.Accountant(treedp.PureDP(5.0))
        for call, bins in ((treedp.median, {}), (treedp.release_cdf, {"bins": 8})):
            with pytest.raises(InvalidTypeError, match=r"'values'.*fixed UTC offsets") as info:
                call(data, bounds=BOUNDS, epsilon=1.0, accountant=acc, **col, **bins)
            messages.add(str(info.value))
        assert acc.spent == treedp.PureDP(0.0)
        r = treedp.quantiles(
            data, 0.5, bounds=aware, epsilon=1.0, rng=InsecureSeededSource(1), **col
        )
        rel = treedp.release_cdf(data, bounds=aware, bins=8, epsilon=1.0, **col)
        seen.add((str(r.bounds[0]), rel.bins.timezone, str(rel.edges[0])))
    (text,) = messages
    assert "-04" not in text and "-05" not in text and "GMT" not in text
    assert seen == {("2013-01-01 00:00:00-05:00", "-05:00", "2013-01-01 00:00:00-05:00")}


def test_named_zones_and_utc_dtypes_still_declare_the_zone() -> None:
    for zone, end in ((NY, "-05:00"), ("UTC", "+00:00")):
        s = pd.Series(_hours(20).tz_convert(zone))
        r = treedp.quantiles(s, 0.5, bounds=BOUNDS, epsilon=1.0, rng=InsecureSeededSource(1))
        assert str(r.bounds[0]).endswith(end)
