"""Plots of a release: figure structure (axes, artists, band present), not pixels; band coverage."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from scipy import stats

import treedp
from tests.stats import ALPHA, TEST_SEED
from treedp.exceptions import InvalidParameterError, InvalidTypeError, MissingDependencyError
from treedp.release import Release

pytest.importorskip("matplotlib", reason="the treedp[plot] extra (matplotlib) is not installed")

from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from treedp.report.band import cdf_band
from treedp.report.plot import figure_svg, plot_groups, plot_release


def _seed(k: int = 0) -> treedp.InsecureSeededSource:
    return treedp.InsecureSeededSource(TEST_SEED + k)


@pytest.fixture(scope="module")
def values() -> np.ndarray:
    return np.random.default_rng(TEST_SEED).normal(40.0, 10.0, 4000)


@pytest.fixture(scope="module")
def release(values: np.ndarray) -> treedp.Release:
    return treedp.release_cdf(values, epsilon=1.0, bounds=(0, 100), bins=64, rng=_seed())


def _bands(ax) -> list[PolyCollection]:
    return [
        c
        for c in ax.collections
        if isinstance(c, PolyCollection) and "simultaneous band" in str(c.get_label())
    ]


def _labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_three_kinds_structure(release: treedp.Release) -> None:
    fig, axes = plot_release(release, rng=_seed(1))
    assert isinstance(fig, Figure)
    assert list(axes) == ["cdf", "histogram", "quantiles"]
    assert len(fig.axes) == 3
    cdf = axes["cdf"]
    assert len(_bands(cdf)) == 1  # the band is a PolyCollection from fill_between
    assert len(cdf.get_lines()) == 1  # the estimate (no reference, no truth)
    line = cdf.get_lines()[0]
    assert line.get_xdata().size == release.bins.n_bins + 1
    assert np.isclose(line.get_ydata()[-1], 1.0)  # a proportion of n̂
    hist = axes["histogram"]
    bars = [p for p in hist.patches if isinstance(p, Rectangle)]
    assert len(bars) == release.bins.n_bins
    assert any(isinstance(c, LineCollection) for c in hist.collections)  # error bars
    quant = axes["quantiles"]
    (intervals,) = [c for c in quant.collections if isinstance(c, LineCollection)]
    assert len(intervals.get_segments()) == 5
    assert "SEEDED" in cdf.get_title()


def test_histogram_groups_bins_into_bars(release: treedp.Release) -> None:
    _, axes = plot_release(release, kind="histogram", max_bars=10)
    bars = [p for p in axes["histogram"].patches if isinstance(p, Rectangle)]
    assert 1 <= len(bars) <= 10
    # density: bar areas sum to the share of the consistent counts, 1
    area = sum(b.get_width() * b.get_height() for b in bars)
    assert area == pytest.approx(1.0)


def test_reference_and_truth_are_labelled(release: treedp.Release, values: np.ndarray) -> None:
    public = np.random.default_rng(1).normal(45.0, 12.0, 500)
    _, axes = plot_release(release, reference=public, truth=values, rng=_seed(2))
    labels = _labels(axes["cdf"])
    assert any("public reference" in t for t in labels)
    assert any("NOT private" in t for t in labels)
    assert len(axes["cdf"].get_lines()) == 3
    assert any("NOT private" in t for t in _labels(axes["quantiles"]))
    # the truth's CDF ends at 1, like the estimate
    truth_line = next(ln for ln in axes["cdf"].get_lines() if "NOT private" in ln.get_label())
    assert truth_line.get_ydata()[-1] == pytest.approx(len(values) / release.n)


def test_datetime_axes_are_dates() -> None:
    rng = np.random.default_rng(TEST_SEED)
    days = np.datetime64("2024-01-01") + rng.integers(0, 366, 2000).astype("timedelta64[D]")
    r = treedp.release_cdf(
        days,
        epsilon=1.0,
        bounds=(np.datetime64("2024-01-01"), np.datetime64("2025-01-01")),
        bins=24,
        rng=_seed(),
    )
    from matplotlib.dates import ConciseDateFormatter

    _, axes = plot_release(r, rng=_seed(3))
    for ax in axes.values():
        assert isinstance(ax.xaxis.get_major_formatter(), ConciseDateFormatter)
        assert ax.get_xlabel() == "date"
    lo, hi = axes["cdf"].get_xlim()
    import matplotlib.dates as mdates

    assert mdates.num2date(lo).year <= 2024 and mdates.num2date(hi).year >= 2024


def test_discrete_bins_draw_steps() -> None:
    x = np.random.default_rng(TEST_SEED).integers(17, 91, 3000)
    r = treedp.release_cdf(x, epsilon=1.0, bounds=(17, 90), bins="integers", rng=_seed())
    _, axes = plot_release(r, kind="cdf", rng=_seed(4))
    (line,) = axes["cdf"].get_lines()
    assert line.get_drawstyle() == "steps-post"
    assert line.get_xdata()[1] == 17.0  # P[1] counts the values <= 17


def test_given_axes_and_restyling(release: treedp.Release) -> None:
    fig = Figure()
    a, b = fig.subplots(1, 2)
    out_fig, axes = plot_release(release, [a, b], kind=("histogram", "cdf"), rng=_seed(5))
    assert out_fig is fig and axes == {"histogram": a, "cdf": b}
    axes["cdf"].set_xlabel("age")
    assert b.get_xlabel() == "age"
    with pytest.raises(InvalidParameterError, match="one Axes per kind"):
        plot_release(release, a, kind=("cdf", "histogram"))


def test_release_plot_delegates(release: treedp.Release) -> None:
    _fig, axes = release.plot(kind="cdf", band_method="bonferroni")
    assert list(axes) == ["cdf"] and len(_bands(axes["cdf"])) == 1
    assert "bonferroni" in _labels(axes["cdf"])[1]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"kind": "pie"}, InvalidParameterError, "kind"),
        ({"kind": ()}, InvalidParameterError, "at least one"),
        ({"level": 1.5}, InvalidParameterError, "level"),
        ({"max_bars": 0}, InvalidParameterError, "max_bars"),
        ({"band_method": "magic"}, InvalidParameterError, "method"),
        ({"max_points": 1}, InvalidParameterError, "max_points"),
        ({"simulations": 10}, InvalidParameterError, "simulations"),
    ],
)
def test_bad_parameters(release: treedp.Release, kwargs, error, match) -> None:
    with pytest.raises(error, match=match):
        plot_release(release, **kwargs)


def test_missing_matplotlib_names_the_extra(
    release: treedp.Release, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(MissingDependencyError, match=r"treedp\[plot\]") as info:
        release.plot()
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ImportError)
    # the notebook display still works, without a figure
    html = release._repr_html_()
    assert "treedp[plot]" in html and "<svg" not in html


# ---------------------------------------------------------------------------- groups
@pytest.fixture(scope="module")
def groups(values: np.ndarray) -> dict[str, treedp.Release]:
    return {
        key: treedp.release_cdf(values + shift, epsilon=1.0, bounds=(0, 100), bins=32, rng=_seed(k))
        for k, (key, shift) in enumerate({"north": 0.0, "south": 8.0, "east": -5.0}.items())
    }


def test_groups_overlay(groups: dict[str, treedp.Release]) -> None:
    fig, axes = plot_groups(groups, band_method="bonferroni")
    (ax,) = fig.axes
    assert set(axes) == set(groups) and all(a is ax for a in axes.values())
    assert len(_bands(ax)) == 3 and len(ax.get_lines()) == 3
    assert {ln.get_label() for ln in ax.get_lines()} == set(groups)


def test_groups_small_multiples(groups: dict[str, treedp.Release]) -> None:
    many = {**groups, "west": groups["north"]}
    fig, axes = plot_groups(many, layout="small_multiples", kind="histogram", ncols=3)
    assert len(fig.axes) == 6
    assert sum(a.get_visible() for a in fig.axes) == 4
    assert [axes[k].get_title() for k in many] == [f"{k} (SEEDED)" for k in many]
    fig, axes = plot_groups(groups, layout="small_multiples", band_method="bonferroni")
    assert all(len(_bands(a)) == 1 for a in axes.values())


def test_groups_bad_input(groups: dict[str, treedp.Release]) -> None:
    with pytest.raises(InvalidTypeError, match="mapping"):
        plot_groups(list(groups.values()))
    with pytest.raises(InvalidParameterError, match="at least one"):
        plot_groups({})
    with pytest.raises(InvalidParameterError, match="overlay"):
        plot_groups(groups, kind="histogram")
    with pytest.raises(InvalidParameterError, match="layout"):
        plot_groups(groups, layout="grid")


# ---------------------------------------------------------------------------- svg
def test_figure_svg_is_accessible_and_responsive(release: treedp.Release) -> None:
    fig, _ = plot_release(release, kind="cdf", band_method="bonferroni")
    svg = figure_svg(fig, title="A <CDF>", description="Shows & tells", ident="f1")
    head = svg[: svg.index(">") + 1]
    assert svg.startswith("<svg") and 'role="img"' in head
    assert 'aria-labelledby="f1-title f1-desc"' in head
    assert " width=" not in head and " height=" not in head and "viewBox" in head
    assert '<title id="f1-title">A &lt;CDF&gt;</title>' in svg
    assert '<desc id="f1-desc">Shows &amp; tells</desc>' in svg
    assert "<?xml" not in svg and "<metadata>" not in svg and "<script" not in svg


# ---------------------------------------------------------------------------- the band
def test_band_shape_and_subset(release: treedp.Release) -> None:
    band = cdf_band(release, max_points=9, rng=_seed(6))
    assert band.index[0] == 0 and band.index[-1] == release.bins.n_bins and band.index.size == 9
    assert np.all(np.diff(band.low) >= 0) and np.all(np.diff(band.high) >= 0)
    assert np.all(band.low <= band.high) and band.method == "simulation"
    wide = cdf_band(release, max_points=9, method="bonferroni")
    # the union bound is conservative: never narrower than the calibrated band here
    assert np.all(wide.high - wide.low >= band.high - band.low - 1e-9)


@pytest.mark.parametrize("method", ["simulation", "bonferroni"])
def test_band_covers_the_whole_cdf(method: str) -> None:
    """Simultaneous coverage, between evaluated edges too (monotonicity).

    1000 releases of a fixed dataset (the same tree, fresh noise); the band (level 0.8, 5 of
    17 edges evaluated) must hold at every prefix of all 16 bins at once. Misses are
    Binomial(1000, <= 0.2) if the band is valid: the test fails with probability <= ALPHA (1e-6)
    at the bound below. A pointwise band would miss far more often.
    """
    rng = np.random.default_rng(TEST_SEED)
    x = rng.integers(0, 16, 300)
    source = _seed(7)
    first = treedp.release_cdf(x, epsilon=0.5, bounds=(0, 15), bins="integers", rng=source)
    counts, _ = first.bins.count(x)
    true_prefix = np.concatenate([[0], np.cumsum(counts)])
    reps, level = 1000, 0.8
    misses = 0
    for _ in range(reps):
        r = Release(
            bins=first.bins,
            mechanism=first.mechanism,
            noisy_levels=first.mechanism.measure(counts, source),
            estimator=first.estimator,
            randomness=first.randomness,
            library_version=first.library_version,
        )
        band = cdf_band(r, level=level, max_points=5, method=method, simulations=300, rng=source)
        ok = True
        for k in range(band.index.size - 1):
            seg = true_prefix[band.index[k] : band.index[k + 1] + 1]
            ok &= bool(np.all(seg >= band.low[k] - 1e-9) and np.all(seg <= band.high[k + 1] + 1e-9))
        misses += not ok
    bound = stats.binom.isf(ALPHA, reps, 1 - level)
    assert misses <= bound


def test_many_bins_stay_light() -> None:
    """5000 bins: the curve is drawn at <= 2001 public edges, the histogram in <= 100 bars, and
    the band falls back to the Bonferroni union bound (no simulation over 5001 prefixes)."""
    x = np.random.default_rng(TEST_SEED).integers(0, 5000, 2000)
    r = treedp.release_cdf(x, epsilon=1.0, bounds=(0, 4999), bins="integers", rng=_seed())
    _, axes = plot_release(r, kind=("cdf", "histogram"), truth=x)
    lines = axes["cdf"].get_lines()
    assert all(ln.get_xdata().size <= 2001 for ln in lines) and len(lines) == 2
    assert "bonferroni" in _labels(axes["cdf"])[1]
    assert sum(isinstance(p, Rectangle) for p in axes["histogram"].patches) == 100


# ---------------------------------------------------------------------------- round 4 fixes
@pytest.fixture(scope="module")
def sparse() -> treedp.Release:
    """Few records and little budget: unclipped bands would leave [0, 1] and go below 0."""
    x = np.random.default_rng(TEST_SEED).normal(50.0, 5.0, 60)
    return treedp.release_cdf(x, epsilon=0.2, bounds=(0, 100), bins=32, rng=_seed(7))


def _band_paths(ax) -> np.ndarray:
    (band,) = _bands(ax)
    return np.concatenate([p.vertices for p in band.get_paths()])


def test_cdf_band_is_clipped_to_0_1(sparse: treedp.Release) -> None:
    raw = cdf_band(sparse, method="bonferroni")
    assert np.max(raw.high) / sparse.n > 1.0  # the unclipped band would leave [0, 1]
    _, axes = plot_release(sparse, kind="cdf", band_method="bonferroni")
    ys = _band_paths(axes["cdf"])[:, 1]
    assert ys.min() >= 0.0 and ys.max() <= 1.0
    # as counts: never below 0
    _, axes = plot_release(sparse, kind="cdf", band_method="bonferroni", proportion=False)
    assert _band_paths(axes["cdf"])[:, 1].min() >= 0.0


def test_histogram_intervals_are_never_negative(sparse: treedp.Release) -> None:
    edges = sparse.edges
    unbiased = np.asarray(sparse.range_count(edges[:-1], edges[1:], consistent=False))
    lo, hi = sparse.confidence_interval("range_count", edges[:-1], edges[1:])
    assert np.any(unbiased - (np.asarray(hi) - np.asarray(lo)) / 2 < 0)  # old bars went below
    _, axes = plot_release(sparse, kind="histogram")
    (bars,) = [c for c in axes["histogram"].collections if isinstance(c, LineCollection)]
    ys = np.concatenate([s[:, 1] for s in bars.get_segments()])
    assert ys.min() >= 0.0


def test_axes_are_named_after_the_column(release: treedp.Release) -> None:
    _, axes = plot_release(release, xlabel="income", band_method="bonferroni", rng=_seed(2))
    assert all(a.get_xlabel() == "income" for a in axes.values())
    assert "income" in axes["cdf"].get_ylabel() and "income" in axes["histogram"].get_ylabel()
    _, axes = plot_release(release, kind="cdf", band_method="bonferroni")
    assert axes["cdf"].get_xlabel() == "value"


@pytest.fixture(scope="module")
def grouped_release() -> treedp.GroupedRelease:
    rng = np.random.default_rng(TEST_SEED)
    table = {
        "region": rng.choice(["N", "S"], 3000),
        "sex": rng.choice(["f", "m"], 3000),
        "x": rng.normal(50.0, 10.0, 3000),
    }
    keys = [("N", "f"), ("N", "m"), ("S", "f"), ("S", "m")]
    return treedp.release_grouped(
        table,
        column="x",
        by=["region", "sex"],
        keys=keys,
        epsilon=1.0,
        bounds=(0, 100),
        bins=16,
        rng=_seed(8),
    )


def test_plot_groups_takes_a_grouped_release(grouped_release: treedp.GroupedRelease) -> None:
    fig, axes = plot_groups(grouped_release, band_method="bonferroni", xlabel="x")
    (ax,) = fig.axes
    assert list(axes) == list(grouped_release.keys)
    assert {ln.get_label() for ln in ax.get_lines()} == {"N, f", "N, m", "S, f", "S, m"}
    # one legend entry per key and one for all the bands
    assert len(_labels(ax)) == 5 and ax.get_xlabel() == "x"
    fig, axes = plot_groups(grouped_release, layout="small_multiples", band_method="bonferroni")
    assert [a.get_title() for a in axes.values()] == [
        "N, f (SEEDED)",
        "N, m (SEEDED)",
        "S, f (SEEDED)",
        "S, m (SEEDED)",
    ]
    fig, _ = grouped_release.plot(layout="small_multiples", kind="histogram")
    assert sum(a.get_visible() for a in fig.axes) == 4
