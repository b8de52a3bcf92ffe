"""Pictures of a release: the CDF with a simultaneous band, the histogram, the quantiles.

Needs matplotlib, the optional extra ``treedp[plot]`` (``pip install "treedp[plot]"``). Everything
drawn is post-processing of the release (and of simulations of its public noise), so drawing
costs no privacy. The functions return the matplotlib objects so they can be restyled.

Figures are made without pyplot's global state (:class:`matplotlib.figure.Figure`) unless
pyplot is already imported (as in a notebook with ``%matplotlib inline``), where the figure
joins the session like any ``plt.subplots()`` figure.
"""

from __future__ import annotations

import io
import math
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._validation import check_level, check_option, check_simulations
from treedp.estimation import band_critical_value, estimate_prefix
from treedp.exceptions import InvalidParameterError, InvalidTypeError, MissingDependencyError
from treedp.noise import RandomSource, resolve_source

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from treedp.release import Release

__all__ = ["CDFBand", "cdf_band", "figure_svg", "plot_groups", "plot_release"]

KINDS = ("cdf", "histogram", "quantiles")
DEFAULT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
#: Band calibration by simulation when ``(B + 1) · simulations`` is at most this (about a second).
_SIMULATION_BUDGET = 2**22
#: At most this many points on a drawn CDF curve.
_MAX_LINE_POINTS = 2001


def require_matplotlib() -> Any:
    """Import matplotlib, or raise :class:`MissingDependencyError` naming the extra."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependencyError(
            "Plotting needs matplotlib: install the treedp[plot] extra "
            '(pip install "treedp[plot]").'
        ) from None
    return matplotlib


# ---------------------------------------------------------------------------- the band
@dataclass(frozen=True)
class CDFBand:
    """A simultaneous confidence band for the CDF, at a public subset of the bin edges.

    Attributes
    ----------
    index : ndarray of int
        The prefix indices ``m`` evaluated (``P[m]`` counts the values in bins ``[0, m)``).
    estimate : ndarray
        The unbiased prefix estimates at ``index``.
    low, high : ndarray
        The band: with probability at least ``level``, ``low[k] <= P[index[k]] <= high[k]``
        for every ``k`` at once. Tightened by monotonicity, so it also bounds the CDF between
        evaluated edges: ``low[k] <= F(x) <= high[k + 1]`` for ``x`` between them.
    level : float
        The simultaneous coverage.
    method : str
        ``"simulation"`` or ``"bonferroni"`` (see :func:`cdf_band`).
    """

    index: np.ndarray
    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    method: str


def _band_index(n_bins: int, max_points: int) -> np.ndarray:
    """Evaluated prefix indices: all of ``0..B``, or an evenly spaced public subset with both
    ends."""
    if n_bins + 1 <= max_points:
        return np.arange(n_bins + 1)
    return np.unique(np.linspace(0, n_bins, max_points).round().astype(np.int64))


def cdf_band(
    release: Release,
    *,
    level: float = 0.95,
    max_points: int = 256,
    method: str = "auto",
    simulations: int = 1000,
    rng: RandomSource | None = None,
) -> CDFBand:
    """A simultaneous confidence band for the CDF of a release (no matplotlib needed).

    The band is ``P̂[m] ± c·se[m]`` over the evaluated prefix indices ``m``, around the unbiased
    prefix estimates ``P̂`` with their exact standard errors ``se`` (:attr:`Release.covariance`),
    then tightened by monotonicity (the true CDF is non-decreasing and not negative). Two ways
    to choose ``c`` so that the band holds for all evaluated ``m`` at once with probability
    ``level``:

    - ``"simulation"``: ``c`` is the ``level``-quantile of ``max_m |error[m]| / se[m]`` over
      ``simulations`` draws of the noise alone (the noise is public, so this costs no privacy) —
      the calibration of :meth:`Release.quantile_interval`;
    - ``"bonferroni"``: no simulation; each of the ``k`` evaluated points gets the per-point
      interval of :meth:`Release.confidence_interval` at level ``1 - (1 - level)/k`` (the larger
      of the normal and Laplace quantiles), and the union bound makes them simultaneous. It is
      conservative (wider), and fast for any number of bins.

    ``"auto"`` simulates when ``(B + 1)·simulations <= 2**22`` (about a second) and uses the
    Bonferroni band otherwise. Evaluating a public subset of at most ``max_points`` edges is no
    loss of validity: the CDF is non-decreasing, so between two evaluated edges it lies between
    the lower bound at the left one and the upper bound at the right one.

    Parameters
    ----------
    release : Release
        The release.
    level : float, default=0.95
        Simultaneous coverage, in ``(0, 1)``.
    max_points : int, default=256
        At most this many edges are evaluated (at least 2).
    method : {"auto", "simulation", "bonferroni"}, default="auto"
        How the critical value is chosen.
    simulations : int, default=1000
        Noise simulations for ``"simulation"`` (at least 100).
    rng : RandomSource, optional
        Randomness for the simulation (default: the operating system's).

    Returns
    -------
    CDFBand
    """
    level = check_level(level)
    if isinstance(max_points, bool) or not isinstance(max_points, int) or max_points < 2:
        raise InvalidParameterError(
            f"The 'max_points' parameter must be an int >= 2. Got {max_points!r} instead."
        )
    method = check_option(method, "method", ("auto", "simulation", "bonferroni"))
    simulations = check_simulations(simulations)
    n_bins = release.bins.n_bins
    idx = _band_index(n_bins, max_points)
    estimate = np.asarray(release.prefix_counts, dtype=np.float64)[idx]
    se = np.sqrt(np.maximum(np.asarray(release.prefix_variance, dtype=np.float64)[idx], 0.0))
    if method == "auto":
        method = "simulation" if (n_bins + 1) * simulations <= _SIMULATION_BUDGET else "bonferroni"
    if method == "simulation":
        source = resolve_source(rng)
        errors = np.empty((simulations, idx.size))
        batch = max(1, min(256, 2**21 // (n_bins + 1)))  # batches bound the memory
        for start in range(0, simulations, batch):
            stop = min(start + batch, simulations)
            blocks = release.mechanism.noise_only(stop - start, source)
            errors[start:stop] = estimate_prefix(release.mechanism, blocks, release.estimator)[
                :, idx
            ]
        crit = band_critical_value(errors, se, level)
    else:
        live = int(np.count_nonzero(se > 0)) or 1
        crit = _half_width_factor_tail((1.0 - level) / live)
    low = np.maximum.accumulate(np.maximum(estimate - crit * se, 0.0))
    high = np.minimum.accumulate((estimate + crit * se)[::-1])[::-1]
    high = np.maximum(high, low)  # an empty band after tightening still brackets nothing wrongly
    return CDFBand(idx, estimate, low, high, level, method)


def _half_width_factor_tail(alpha: float) -> float:
    """``inference.half_width_factor`` for a two-sided miss probability ``alpha`` (may be tiny)."""
    z = -NormalDist().inv_cdf(alpha / 2.0)
    laplace = math.log(1.0 / alpha) / math.sqrt(2.0)
    return max(z, laplace)


# ---------------------------------------------------------------------------- axes helpers
def _axis_values(release: Release, edges: np.ndarray) -> np.ndarray:
    """Public edge values on matplotlib's x axis: floats, or date numbers for datetime bins."""
    if release.bins.is_datetime:
        mdates = _dates()
        values = edges.astype(f"datetime64[{release.bins.datetime_unit}]")
        return np.asarray(mdates.date2num(values), dtype=np.float64)
    return np.asarray(edges, dtype=np.float64)


def _prefix_positions(release: Release, idx: np.ndarray) -> np.ndarray:
    """Where ``P[m]`` sits on the x axis: at edge ``m`` (discrete bins: the integer before it)."""
    edges = _axis_values(release, release.bins.edges)
    pos = np.asarray(edges[idx], dtype=np.float64)
    return pos - 1.0 if release.bins.discrete else pos


def _dates() -> Any:
    """``matplotlib.dates`` (untyped functions, hence Any)."""
    import importlib

    return importlib.import_module("matplotlib.dates")


def _scale(release: Release, proportion: bool) -> float:
    n_hat = release.n
    return 1.0 / n_hat if proportion and n_hat > 0 else 1.0


def _new_axes(count: int, figsize: tuple[float, float] | None) -> tuple[Figure, list[Axes]]:
    require_matplotlib()
    size = figsize or (4.8 * count, 3.4)
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=size, layout="constrained")
    else:
        from matplotlib.figure import Figure

        fig = Figure(figsize=size, layout="constrained")
    axes = [fig.add_subplot(1, count, i + 1) for i in range(count)]
    return fig, axes


def _finish_x(release: Release, ax: Axes, xlabel: str | None) -> None:
    if release.bins.is_datetime:
        mdates = _dates()
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    ax.set_xlabel(
        xlabel if xlabel is not None else ("date" if release.bins.is_datetime else "value")
    )


def _exact_prefix(release: Release, values: Any) -> np.ndarray:
    counts, _ = release.bins.count(values, nan="drop")
    return np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])


def _seeded_title(release: Release, ax: Axes) -> None:
    if release.seeded:
        ax.set_title("SEEDED: not for publication", color="#b00020", fontsize="small")


# ---------------------------------------------------------------------------- the three kinds
def _draw_cdf(
    release: Release,
    ax: Axes,
    *,
    level: float,
    proportion: bool,
    band: CDFBand | None,
    reference: Any,
    truth: Any,
    label: str | None,
    color: Any,
    band_options: dict[str, Any],
) -> None:
    scale = _scale(release, proportion)
    n_bins = release.bins.n_bins
    # every edge up to _MAX_LINE_POINTS, else an evenly spaced public subset (a monotone curve
    # looks the same at any screen resolution, and the SVG stays small)
    all_m = _band_index(n_bins, _MAX_LINE_POINTS)
    pos = _prefix_positions(release, all_m)
    fit = np.asarray(release._counts(None), dtype=np.float64)[all_m] * scale
    step = "steps-post" if release.bins.discrete else "default"
    (line,) = ax.plot(
        pos, fit, drawstyle=step, color=color, label=label or "private CDF estimate", zorder=3
    )
    if band is None:
        band = cdf_band(release, level=level, **band_options)
    bx, blo, bhi = _band_polygon(release, band)
    ax.fill_between(
        bx,
        blo * scale,
        bhi * scale,
        color=line.get_color(),
        alpha=0.25,
        linewidth=0,
        label=f"{level:.0%} simultaneous band ({band.method})",
        zorder=2,
    )
    if reference is not None:
        ref = _exact_prefix(release, reference)[all_m]
        ref_scale = 1.0 / ref[-1] if proportion and ref[-1] > 0 else 1.0
        ax.plot(
            pos,
            ref * ref_scale,
            drawstyle=step,
            linestyle="--",
            color="0.35",
            label="public reference (not from the release)",
            zorder=4,
        )
    if truth is not None:
        exact = _exact_prefix(release, truth)[all_m]
        ax.plot(
            pos,
            exact * scale,
            drawstyle=step,
            linestyle=":",
            color="black",
            label="true values (NOT private: research only)",
            zorder=4,
        )
    ax.set_ylabel("proportion of values ≤ x" if scale != 1.0 else "count of values ≤ x")


def _band_polygon(release: Release, band: CDFBand) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band as a step region valid for every x (monotonicity between evaluated edges)."""
    pos = _prefix_positions(release, band.index)
    if pos.size == 1:
        return pos, band.low, band.high
    xs = np.repeat(pos, 2)[1:-1]
    lows = np.repeat(band.low[:-1], 2)
    consecutive = np.diff(band.index) == 1
    # on [pos_k, pos_k+1): F >= low_k; F <= high_k+1, or high_k when the bins are discrete and
    # the two edges are neighbours (the CDF is then constant between them)
    upper = np.where(release.bins.discrete & consecutive, band.high[:-1], band.high[1:])
    highs = np.repeat(upper, 2)
    return xs, lows, highs


def _histogram_groups(n_bins: int, max_bars: int) -> np.ndarray:
    if n_bins <= max_bars:
        return np.arange(n_bins + 1)
    return np.unique(np.linspace(0, n_bins, max_bars + 1).round().astype(np.int64))


def _draw_histogram(
    release: Release,
    ax: Axes,
    *,
    level: float,
    max_bars: int,
    reference: Any,
    truth: Any,
    label: str | None,
    color: Any,
) -> None:
    n_bins = release.bins.n_bins
    groups = _histogram_groups(n_bins, max_bars)
    edges_axis = _axis_values(release, release.bins.edges)[groups]
    widths = np.diff(edges_axis)
    n_hat = release.n
    scale = 1.0 / n_hat if n_hat > 0 else 1.0
    fit = np.asarray(release._counts(None), dtype=np.float64)[groups]
    density = np.diff(fit) * scale / widths
    x_left = edges_axis[:-1] - (1.0 if release.bins.discrete else 0.0) * 0.5
    bars = ax.bar(
        x_left,
        density,
        width=widths,
        align="edge",
        color=color,
        alpha=0.6,
        label=label or "private density",
        edgecolor="none",
    )
    values = release.edges
    lo, hi = release.confidence_interval(
        "range_count", values[groups[:-1]], values[groups[1:]], level=level
    )
    unbiased = np.asarray(
        release.range_count(values[groups[:-1]], values[groups[1:]], consistent=False),
        dtype=np.float64,
    )
    half = (np.asarray(hi) - np.asarray(lo)) / 2.0
    centres = x_left + widths / 2.0
    ax.errorbar(
        centres,
        unbiased * scale / widths,
        yerr=half * scale / widths,
        fmt="none",
        ecolor="0.2",
        elinewidth=0.8,
        capsize=0,
        label=f"{level:.0%} interval per bar (pointwise)",
    )
    for data, style, text in (
        (reference, "--", "public reference (not from the release)"),
        (truth, ":", "true values (NOT private: research only)"),
    ):
        if data is None:
            continue
        exact = _exact_prefix(release, data)[groups]
        own = 1.0 / exact[-1] if data is reference and exact[-1] > 0 else scale
        dens = np.diff(exact) * own / widths
        ax.stairs(
            dens,
            np.append(x_left, x_left[-1] + widths[-1]),
            linestyle=style,
            color="black" if data is truth else "0.35",
            label=text,
        )
    del bars
    unit = "day" if release.bins.is_datetime else "unit"
    ax.set_ylabel(f"density (share of values per {unit})")


def _draw_quantiles(
    release: Release,
    ax: Axes,
    *,
    level: float,
    quantiles: Sequence[float],
    simulations: int,
    rng: RandomSource | None,
    truth: Any,
    color: Any,
) -> None:
    qs = np.asarray(quantiles, dtype=np.float64)
    est = np.atleast_1d(release.quantile(qs))
    low, high = release.quantile_interval(qs, level=level, simulations=simulations, rng=rng)
    to_x = (
        (lambda v: _axis_values(release, np.atleast_1d(v)))
        if release.bins.is_datetime
        else (lambda v: np.atleast_1d(np.asarray(v, dtype=np.float64)))
    )
    ax.hlines(
        qs,
        to_x(low),
        to_x(high),
        color=color,
        linewidth=2,
        label=f"{level:.0%} interval per quantile",
    )
    ax.plot(to_x(est), qs, "o", color=color, label="private quantile estimate")
    if truth is not None:
        exact = _exact_prefix(release, truth)
        pos = _prefix_positions(release, np.arange(exact.size))
        # the exact quantile on the same bins: the first edge where the exact CDF reaches q·n
        m = np.searchsorted(exact, qs * exact[-1], side="left")
        ax.plot(
            pos[np.clip(m, 0, pos.size - 1)],
            qs,
            "x",
            color="black",
            label="true quantile (NOT private: research only)",
        )
    ax.set_ylabel("probability q")
    ax.set_ylim(-0.02, 1.02)


# ---------------------------------------------------------------------------- public API
def plot_release(
    release: Release,
    ax: Axes | Sequence[Axes] | None = None,
    kind: str | Sequence[str] = KINDS,
    *,
    reference: Any = None,
    truth: Any = None,
    level: float = 0.95,
    quantiles: Sequence[float] = DEFAULT_QUANTILES,
    proportion: bool = True,
    max_points: int = 256,
    max_bars: int = 100,
    band_method: str = "auto",
    simulations: int = 1000,
    rng: RandomSource | None = None,
    xlabel: str | None = None,
    label: str | None = None,
    color: Any = None,
    figsize: tuple[float, float] | None = None,
) -> tuple[Figure, dict[str, Axes]]:
    """Draw a release: its CDF with a simultaneous band, its histogram, its quantiles.

    - ``"cdf"``: the consistent CDF (as a proportion of the estimated ``n̂``, or a count),
      with the simultaneous ``level`` band of :func:`cdf_band` (a filled region; with
      ``proportion=True`` the band is divided by ``n̂``, whose own noise it does not include —
      under ``replace`` neighbours ``n`` is public and exact);
    - ``"histogram"``: density per bar (share of values per unit of x; per day on a datetime
      axis) from the consistent counts, with a pointwise ``level`` interval per bar
      (:meth:`Release.confidence_interval`, centred on the unbiased estimate). More than
      ``max_bars`` bins are grouped into at most ``max_bars`` bars of consecutive bins (public
      groups; each bar is still an exact range query);
    - ``"quantiles"``: each requested quantile with its ``level`` interval
      (:meth:`Release.quantile_interval`).

    Datetime bins give date axes. A seeded release is titled as not for publication.

    Parameters
    ----------
    release : Release
        What to draw.
    ax : Axes or sequence of Axes, optional
        Where to draw, one Axes per kind; default: a new figure with one Axes per kind.
    kind : str or sequence of str, default=("cdf", "histogram", "quantiles")
        Which plots, in order.
    reference : array-like, optional
        Public values (for example last year's published data) whose empirical distribution,
        counted on the same bins, is overlaid and labelled as a public reference.
    truth : array-like, optional
        The true, non-private values, overlaid for research (labelled "NOT private"): a
        figure with the truth must not be published.
    level : float, default=0.95
        Coverage of the band and intervals.
    quantiles : sequence of float, default=(0.1, 0.25, 0.5, 0.75, 0.9)
        The quantiles of the ``"quantiles"`` plot.
    proportion : bool, default=True
        The CDF as a proportion of ``n̂`` (True) or as a count.
    max_points, band_method, simulations, rng
        Passed to :func:`cdf_band` (``band_method`` as ``method``); ``simulations`` and ``rng``
        also calibrate the quantile intervals.
    max_bars : int, default=100
        At most this many histogram bars.
    xlabel, label, color
        Axis label, legend label and colour of the private estimate.
    figsize : (float, float), optional
        Size of a new figure in inches.

    Returns
    -------
    (Figure, dict)
        The figure and a mapping kind → Axes. The band is the ``PolyCollection`` whose label
        starts with the level; restyle anything through the Axes.

    Raises
    ------
    MissingDependencyError
        If matplotlib is not installed (the ``treedp[plot]`` extra).
    """
    require_matplotlib()
    kinds = _check_kinds(kind)
    level = check_level(level)
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 1:
        raise InvalidParameterError(
            f"The 'max_bars' parameter must be an int >= 1. Got {max_bars!r} instead."
        )
    if ax is None:
        fig, axes = _new_axes(len(kinds), figsize)
    else:
        axes = [ax] if _is_axes(ax) else list(ax)  # type: ignore[arg-type, list-item]
        if len(axes) != len(kinds) or not all(_is_axes(a) for a in axes):
            raise InvalidParameterError(
                f"The 'ax' parameter must be one Axes per kind ({len(kinds)} for {kinds})."
            )
        fig = axes[0].get_figure()  # type: ignore[assignment]
    band_options = {
        "max_points": max_points,
        "method": band_method,
        "simulations": simulations,
        "rng": rng,
    }
    out: dict[str, Axes] = {}
    for name, a in zip(kinds, axes, strict=True):
        if name == "cdf":
            _draw_cdf(
                release,
                a,
                level=level,
                proportion=proportion,
                band=None,
                reference=reference,
                truth=truth,
                label=label,
                color=color,
                band_options=band_options,
            )
        elif name == "histogram":
            _draw_histogram(
                release,
                a,
                level=level,
                max_bars=max_bars,
                reference=reference,
                truth=truth,
                label=label,
                color=color,
            )
        else:
            _draw_quantiles(
                release,
                a,
                level=level,
                quantiles=quantiles,
                simulations=simulations,
                rng=rng,
                truth=truth,
                color=color,
            )
        _finish_x(release, a, xlabel)
        _seeded_title(release, a)
        a.legend(fontsize="x-small", loc="best")
        out[name] = a
    return fig, out


def plot_groups(
    releases: Mapping[Any, Release],
    *,
    layout: str = "overlay",
    kind: str = "cdf",
    level: float = 0.95,
    truth: Mapping[Any, Any] | None = None,
    ncols: int = 3,
    figsize: tuple[float, float] | None = None,
    **options: Any,
) -> tuple[Figure, dict[Any, Axes]]:
    """Draw several releases (one per group key): overlaid CDFs or small multiples.

    Parameters
    ----------
    releases : mapping
        Group key → :class:`Release` (for example a grouped release's groups). Keys are shown
        with ``str``; they are public inputs.
    layout : {"overlay", "small_multiples"}, default="overlay"
        ``"overlay"``: every group's CDF and band on one Axes, one colour per key (``kind``
        must be ``"cdf"``). ``"small_multiples"``: one Axes per key with ``kind`` drawn by
        :func:`plot_release`, sharing the axes' scales.
    kind : {"cdf", "histogram", "quantiles"}, default="cdf"
        What each small multiple shows.
    level : float, default=0.95
        Coverage of the bands and intervals.
    truth : mapping, optional
        Key → true (non-private) values, for research only.
    ncols : int, default=3
        Columns of the small-multiples grid.
    figsize : (float, float), optional
        Size of the figure in inches.
    **options
        Passed to :func:`plot_release` (for example ``proportion``, ``band_method``, ``rng``).

    Returns
    -------
    (Figure, dict)
        The figure and key → Axes (with ``"overlay"`` every key maps to the one Axes).
    """
    require_matplotlib()
    if not isinstance(releases, Mapping):
        raise InvalidTypeError(
            "The 'releases' parameter must be a mapping of group key to Release. "
            f"Got {type(releases).__name__} instead."
        )
    if not releases:
        raise InvalidParameterError("The 'releases' parameter must hold at least one group.")
    layout = check_option(layout, "layout", ("overlay", "small_multiples"))
    (kind,) = _check_kinds(kind)
    truth = {} if truth is None else truth
    keys = list(releases)
    if layout == "overlay":
        if kind != "cdf":
            raise InvalidParameterError(
                "layout='overlay' draws CDFs only: use kind='cdf' or layout='small_multiples'."
            )
        fig, (ax,) = _new_axes(1, figsize or (6.4, 4.0))
        for key in keys:
            plot_release(
                releases[key],
                ax,
                ("cdf",),
                level=level,
                truth=truth.get(key),
                label=str(key),
                **options,
            )
        return fig, dict.fromkeys(keys, ax)
    if isinstance(ncols, bool) or not isinstance(ncols, int) or ncols < 1:
        raise InvalidParameterError(f"The 'ncols' parameter must be an int >= 1. Got {ncols!r}.")
    cols = min(ncols, len(keys))
    rows = -(-len(keys) // cols)
    fig, _ = _new_axes(0, figsize or (3.6 * cols, 2.8 * rows))
    grid = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    out: dict[Any, Axes] = {}
    for i, key in enumerate(keys):
        a = grid[i // cols][i % cols]
        plot_release(releases[key], a, (kind,), level=level, truth=truth.get(key), **options)
        a.set_title(str(key) + (" (SEEDED)" if releases[key].seeded else ""), fontsize="small")
        out[key] = a
    for j in range(len(keys), rows * cols):
        grid[j // cols][j % cols].set_visible(False)
    return fig, out


def _is_axes(obj: Any) -> bool:
    from matplotlib.axes import Axes

    return isinstance(obj, Axes)


def _check_kinds(kind: Any) -> tuple[str, ...]:
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    if not kinds:
        raise InvalidParameterError("The 'kind' parameter must name at least one plot.")
    for k in kinds:
        check_option(k, "kind", KINDS)
    return kinds


# ---------------------------------------------------------------------------- SVG for HTML
_SVG_OPEN = re.compile(r"<svg\b[^>]*>", re.S)


def figure_svg(fig: Figure, *, title: str, description: str, ident: str) -> str:
    """The figure as an inline, accessible, responsive ``<svg>`` element (no XML header).

    The SVG gets ``role="img"``, a ``<title>`` and a ``<desc>`` (referenced by
    ``aria-labelledby``), and no fixed width, so it scales to its container. Text stays text
    (``svg.fonttype = "none"``), so it is readable, searchable and small.
    """
    mpl = require_matplotlib()
    buffer = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": ident}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    match = _SVG_OPEN.search(text)
    if match is None:  # pragma: no cover - matplotlib always writes an <svg> root
        raise InvalidParameterError("matplotlib did not write an SVG document.")
    tag = match.group(0)
    tag = re.sub(r'\s(width|height)="[^"]*"', "", tag)
    tag = tag.replace(
        "<svg",
        f'<svg role="img" aria-labelledby="{ident}-title {ident}-desc" '
        'preserveAspectRatio="xMidYMid meet"',
        1,
    )
    body = re.sub(r"<metadata>.*?</metadata>", "", text[match.end() :], count=1, flags=re.S)
    head = (
        f'<title id="{ident}-title">{escape(title)}</title>'
        f'<desc id="{ident}-desc">{escape(description)}</desc>'
    )
    return tag + head + body
