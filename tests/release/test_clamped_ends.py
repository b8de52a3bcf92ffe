"""Intervals on bounds found from the records hold the records clamped into the end bins.

The bounds' scans leave records beyond a found bound (up to about their allowance), clamped
into the end bin. A count below a point beyond (or at) the found upper bound then lies
between ``P[B - 1]`` and ``P[B]``, below the found lower bound between 0 and ``P[1]``, and a
quantile the band puts in an end bin may lie anywhere beyond it: the intervals say so
(``IntervalQueries._clamped_ends``, ``quantile_interval``'s open ends).

Coverage is a binomial proportion over ``REPS`` seeded releases: the tolerance is 4.5 of its
standard deviations at the nominal level, a false-failure rate below ``1e-4`` over the six
points checked. The mutant (the brackets not widened) covers at most 0.3 at the points beyond
the found bounds, so the test can fail.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

import treedp
from treedp.noise import InsecureSeededSource
from treedp.release import queries
from treedp.release.inference import LATTICE, bracket_interval, half_width_factor
from treedp.release.intervals import IntervalQueries

#: The quantiles' warning that a found bound clamps records: expected here.
pytestmark = pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")

LEVEL = 0.9
REPS = 300
TOL = 4.5 * math.sqrt(LEVEL * (1 - LEVEL) / REPS)
#: 3,000 standard normals and 150 records at each of ±10^6: beyond the scans' allowance (120
#: records at ε = 1 with the default 10% share), so the found bounds leave them out (clamped).
_R = np.random.default_rng(0)
VALUES = np.concatenate([_R.normal(0, 1, 3000), np.full(150, 1e6), np.full(150, -1e6)])
POINTS = np.array([-1e7, -1e3, -20.0, 20.0, 1e3, 1e7])


def _release(seed: int, bounds: object = "private") -> treedp.Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        return treedp.release_cdf(
            VALUES, bounds=bounds, bins=64, epsilon=1.0, rng=InsecureSeededSource(seed)
        )


def _coverage(reps: int) -> np.ndarray:
    truth = np.searchsorted(np.sort(VALUES), POINTS, side="right")
    hits = np.zeros(POINTS.size)
    for seed in range(reps):
        rel = _release(seed)  # most seeds' bounds clamp the ±10^6 records, a few pass them
        low, high = rel.confidence_interval("cdf", POINTS, level=LEVEL)
        hits += (low <= truth) & (truth <= high)
    return hits / reps


def test_cdf_intervals_cover_beyond_found_bounds() -> None:
    assert (_coverage(REPS) >= LEVEL - TOL).all()


def test_the_coverage_check_catches_unwidened_brackets() -> None:
    with mock.patch.object(IntervalQueries, "_clamped_ends", lambda self, lo, hi: (lo, hi)):
        coverage = _coverage(20)
    assert (coverage[[1, 2, 3, 4]] <= 0.3).all()  # beyond a found bound: the clamped records


def test_the_widened_bracket_is_the_end_bins_exact_algebra() -> None:
    rel = _release(1)
    b = rel.bins.n_bins
    assert rel.edges[0] > -1e6 and rel.edges[-1] < 1e6  # the ±10^6 records are clamped

    def prefix(m: int) -> tuple[np.ndarray, np.ndarray]:
        terms = queries.prefix_terms(rel.bins, np.array([m]))
        return terms.evaluate(rel.prefix_counts), np.sqrt(terms.variance(rel.covariance))

    def band(m_lo: int, m_hi: int) -> tuple[float, float]:
        low, high = bracket_interval(prefix(m_lo), prefix(m_hi), LEVEL, None)
        return float(low[0]), float(high[0])

    above = rel.confidence_interval("cdf", 1e3, level=LEVEL)
    low, high = band(b - 1, b)
    assert above[0] == pytest.approx(min(low, rel.cdf(1e3)))
    assert above[1] == pytest.approx(max(high, rel.cdf(1e3)))
    below = rel.confidence_interval("cdf", -1e3, level=LEVEL)
    assert below[0] == 0.0 and below[1] == pytest.approx(max(band(0, 1)[1], rel.cdf(-1e3)))
    # the total is not widened: every record, clamped ones included, is counted in P[B]
    n_low, n_high = rel.n_interval(level=LEVEL)
    total, se = (float(v[0]) for v in prefix(b))
    factor = half_width_factor(LEVEL)
    assert n_low == pytest.approx(min(total - factor * se - LATTICE, rel.n))
    assert n_high == pytest.approx(max(total + factor * se + LATTICE, rel.n))


def test_public_bounds_and_a_public_side_are_not_widened() -> None:
    public = _release(1, bounds=(-5.0, 5.0))
    low, high = public.confidence_interval("cdf", 1e3, level=LEVEL)
    assert (low, high) == pytest.approx(public.n_interval(level=LEVEL))
    assert public.confidence_interval("cdf", -1e3) == (0.0, 0.0)
    one_side = _release(1, bounds=treedp.PrivateBounds(lower=-5.0))
    assert one_side.confidence_interval("cdf", -1e3) == (0.0, 0.0)  # the public side
    low, high = one_side.confidence_interval("cdf", 1e3, level=LEVEL)
    n_low, _ = one_side.n_interval(level=LEVEL)
    assert low < n_low - 100  # the found side: the clamped records may be above 10^3


def test_quantile_intervals_are_open_at_a_found_end_bin() -> None:
    rel = _release(2)
    low, high = rel.quantile_interval([0.01, 0.5, 0.99], simulations=200,
                                      rng=InsecureSeededSource(3))  # fmt: skip
    assert low[0] == -np.inf and high[2] == np.inf  # 5% of the records lie beyond each bound
    assert np.isfinite([low[1], high[1], high[0], low[2]]).all()
    one_side = _release(2, bounds=treedp.PrivateBounds(lower=-5.0))
    low, high = one_side.quantile_interval([0.01, 0.99], simulations=200,
                                           rng=InsecureSeededSource(3))  # fmt: skip
    assert low[0] == -5.0 and high[1] == np.inf


def _times_with_far_records(pd: Any) -> Any:
    """2,000 instants in January 2024 and five ten years either side, which bounds found at
    ε = 0.5 leave outside (clamped into the end bins: the extreme quantiles lie there, so their
    intervals must be open; without them an interval need not reach an end bin)."""
    r = np.random.default_rng(4)
    times = pd.Timestamp("2024-01-01") + pd.to_timedelta(r.integers(0, 86400 * 30, 2000), "s")
    far = pd.to_datetime(["2014-01-01"] * 5 + ["2034-01-01"] * 5)
    return pd.Series(times.append(far))


@pytest.mark.parametrize("zone", [None, "Europe/Paris"])
def test_datetime_open_ends_are_the_first_and_last_instants(zone: str | None) -> None:
    pd = pytest.importorskip("pandas")
    times = _times_with_far_records(pd)
    if zone is not None:
        times = times.dt.tz_localize(zone)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        rel = treedp.release_cdf(times, bounds="private", bins=64, epsilon=0.5,
                                 rng=InsecureSeededSource(5))  # fmt: skip
    low, high = rel.quantile_interval([0.0001, 0.5, 0.9999], simulations=200,
                                      rng=InsecureSeededSource(6))  # fmt: skip
    first, last = pd.Timestamp.min.tz_localize("UTC"), pd.Timestamp.max.tz_localize("UTC")
    for end, limit in ((low[0], first), (high[2], last)):  # a day inside: any zone holds it
        end = pd.Timestamp(end).tz_localize("UTC") if zone is None else pd.Timestamp(end)
        assert pd.Timedelta(hours=23) < abs(end - limit) < pd.Timedelta(hours=25)
    assert (
        pd.Timestamp("2024-01-01", tz=zone)
        < pd.Timestamp(low[1])
        < pd.Timestamp("2024-02-01", tz=zone)
    )


def test_json_writes_an_open_end_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from treedp.cli import main

    csv = tmp_path / "d.csv"
    csv.write_text("v\n" + "\n".join(f"{v:.6g}" for v in VALUES) + "\n")
    out = tmp_path / "r.json"
    assert main(["release", str(csv), "--column", "v", "--bounds", "private", "--bins", "64",
                 "--epsilon", "1", "--insecure-seed", "7", "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["query", str(out), "--quantiles", "0.01", "0.99", "--ci", "--format",
                 "json"]) == 0  # fmt: skip

    def strict(text: str) -> None:
        raise AssertionError(f"not JSON: {text}")

    document = json.loads(capsys.readouterr().out, parse_constant=strict)
    ends = [(a["low"], a["high"]) for a in document["answers"]]
    assert ends[0][0] == "-inf" and ends[1][1] == "inf"
    assert main(["query", str(out), "--cdf", "1e7", "--ci"]) == 0  # the text says why so wide
    assert "interval incl. within-bin uncertainty and records clamped at a found bound [" in (
        capsys.readouterr().out
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        profile = treedp.profile({"v": VALUES}, epsilon=1.0, rng=InsecureSeededSource(8))
    summary = json.loads(profile.to_json([0.01, 0.99]), parse_constant=strict)["summary"]
    assert {row["low"] for row in summary if row["statistic"] == "q0.01"} == {"-inf"}


def test_report_and_plot_show_an_open_end() -> None:
    pytest.importorskip("matplotlib")
    from treedp.report.html import render_report
    from treedp.report.plot import plot_release

    rel = _release(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        page = render_report(rel, quantiles=[0.01, 0.5, 0.99], rng=InsecureSeededSource(1))
        fig, _ = plot_release(rel, kind="quantiles", quantiles=[0.01, 0.5, 0.99])
    assert '<td class="num">−∞</td>' in page and '<td class="num">∞</td>' in page
    left, right = fig.axes[0].get_xlim()
    width = rel.edges[-1] - rel.edges[0]
    assert rel.edges[0] - width < left and right < rel.edges[-1] + width  # not out to ±inf
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels.count("interval open beyond a found bound") == 1


def test_the_per_bin_table_brackets_its_end_rows_as_the_queries_do() -> None:
    """``to_arrays`` (so ``to_frame`` and ``treedp query --histogram --ci``) gives an end
    row at a found bound the interval ``confidence_interval`` gives the same range: its
    records may all be clamped ones from beyond (an independent review: the last row's 95%
    interval covered 0 of 200 releases, ``[759, 816]`` for 4 records in the bin's range)."""
    rel = _release(3)
    table, e = rel.to_arrays(level=LEVEL), rel.edges
    for row in (0, -1):
        low, high = rel.confidence_interval("range_count", e[row - 1 if row else 0],
                                            e[row] if row else e[1], level=LEVEL)  # fmt: skip
        assert (table["count_low"][row], table["count_high"][row]) == pytest.approx((low, high))
    assert table["count_low"][0] == 0.0 and table["count_low"][-1] == 0.0
    assert table["cdf_low"][-1] < table["cdf"][-2] < table["cdf_high"][-1]  # [P[B-1], P[B]]
    public = _release(3, bounds=(-5.0, 5.0))
    table = public.to_arrays(level=LEVEL)
    assert table["cdf_low"][-1] > table["cdf"][-2]  # a public bound: the total, not widened


def test_a_range_to_a_public_upper_bound_excludes_the_records_at_it() -> None:
    """The last bin is closed, so records equal to the upper bound are in it but not in
    ``[a, hi)``: the count below ``hi`` lies between ``P[B - 1]`` and ``P[B]`` (it was read as
    ``P[B]`` exactly, and 2,000 records at the bound made every interval miss: coverage 0 in an
    independent review). With the bound's records read as a point mass the answer excludes
    them too. Coverage over ``REPS`` releases; the mutant (the bracket at ``hi`` exact) misses
    every time."""
    from treedp.release import queries

    values = np.concatenate([np.full(3000, 10.0), np.random.default_rng(1).uniform(0, 10, 1000)])
    truth = int(np.sum(values < 10.0))
    hits = 0
    for seed in range(REPS // 3):
        rel = treedp.release_cdf(values, bounds=(0, 10), bins=10, epsilon=1.0,
                                 rng=InsecureSeededSource(seed))  # fmt: skip
        low, high = rel.confidence_interval("range_count", 0, 10, level=LEVEL)
        hits += low <= truth <= high
    assert hits / (REPS // 3) >= LEVEL - 4.5 * math.sqrt(LEVEL * (1 - LEVEL) / (REPS // 3))
    assert rel.range_count(0, 10) == pytest.approx(rel.cdf(9.999), abs=1.0)  # the mass at 10
    assert rel.range_count(0, 10.5) == pytest.approx(rel.n)

    def exact_at_top(bins: treedp.Bins, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m = np.clip(np.searchsorted(bins.edges, np.ravel(t), "right") - 1, 0, bins.n_bins)
        return m, m

    # 1,000 at the bound and 3,000 below: no point mass read, the answer interpolated
    some = np.concatenate([np.full(1000, 10.0), np.random.default_rng(1).uniform(0, 10, 3000)])
    rel = treedp.release_cdf(some, bounds=(0, 10), bins=10, epsilon=1.0,
                             rng=InsecureSeededSource(0))  # fmt: skip
    assert not rel._masses and rel.confidence_interval("range_count", 0, 10)[0] <= 3000
    with mock.patch.object(queries, "below_bracket", exact_at_top):
        low, _ = rel.confidence_interval("range_count", 0.0, 10.0, level=LEVEL)
    assert low > 3900


def test_datetime_open_ends_are_written_as_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An open end of a datetime interval is written ``-inf`` / ``inf`` by the CLI (text,
    JSON, CSV) and the profile's summary, not as the first or last instant pandas holds (1677
    or 2262 read as real bounds); the profile of a tz-aware column writes JSON (it raised on
    pandas Timestamps)."""
    pd = pytest.importorskip("pandas")
    from treedp.cli import main

    times = _times_with_far_records(pd)
    csv = tmp_path / "t.csv"
    csv.write_text("t\n" + "\n".join(t.isoformat() for t in times) + "\n")
    out = tmp_path / "t.json"
    assert main(["release", str(csv), "--column", "t", "--datetimes", "--bounds", "private",
                 "--bins", "64", "--epsilon", "0.5", "--insecure-seed", "5",
                 "--out", str(out)]) == 0  # fmt: skip
    capsys.readouterr()
    query = ["query", str(out), "--quantiles", "0.0001", "0.5", "0.9999", "--ci"]
    assert main([*query, "--format", "json"]) == 0
    ends = [(a["low"], a["high"]) for a in json.loads(capsys.readouterr().out)["answers"]]
    assert ends[0][0] == "-inf" and ends[2][1] == "inf" and ends[1][0].startswith("2024-")
    assert main(query) == 0
    text = capsys.readouterr().out
    assert "[-inf, 2024-" in text and "1677" not in text and "2262" not in text
    frame = pd.DataFrame({"naive": times, "zoned": times.dt.tz_localize("Europe/Paris")})
    profile = treedp.profile(frame, epsilon=1.0, rng=InsecureSeededSource(9))
    summary = json.loads(profile.to_json([0.0001, 0.5]))["summary"]
    lows = {row["column"]: row["low"] for row in summary if row["statistic"] == "q0.0001"}
    assert lows == {"naive": "-inf", "zoned": "-inf"}
    medians = [row["low"] for row in summary if row["statistic"] == "q0.5"]
    assert all(str(v).startswith("2024-") for v in medians)


def test_integer_bins_hold_no_record_at_their_upper_edge() -> None:
    """Bins of whole integers end one past their last integer: no record equals the upper
    edge, so the count below it stays the exact total on public bounds (the closed last bin's
    bracket is for continuous bins only), one integer per bin or wider."""
    from treedp.domain import integer_range_bins

    values = np.random.default_rng(2).integers(0, 1000, 5000)
    for bins in ("integers", integer_range_bins(0, 999, 50)[0]):
        rel = treedp.release_cdf(values, bounds=(0, 999) if bins == "integers" else None,
                                 bins=bins, epsilon=1.0, rng=InsecureSeededSource(4))  # fmt: skip
        top = float(rel.edges[-1])
        assert rel.confidence_interval("range_count", 0, top) == pytest.approx(rel.n_interval())
        assert rel.confidence_interval("cdf", top - 1) == pytest.approx(rel.n_interval())
