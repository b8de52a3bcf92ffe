"""Pictures of a release: the CDF with a simultaneous band, the histogram, the quantiles.

Needs matplotlib (``treedp[plot]``). Everything drawn is post-processing of the release or
simulations of its public noise: no privacy cost. The kinds of :func:`plot_release`:

- ``"cdf"``: the consistent CDF (a proportion of ``n̂``, or a count) with the simultaneous
  band of :func:`~treedp.report.band.cdf_band` (as a proportion, divided by ``n̂``, whose own
  noise it does not include);
- ``"histogram"``: density per bar from the consistent counts, with a pointwise interval per
  bar; more than ``max_bars`` bins are grouped into bars of consecutive bins;
- ``"quantiles"``: each quantile with its interval (:meth:`Release.quantile_interval`).

Figures avoid pyplot's global state unless pyplot is already imported (a notebook).
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._validation import check_int, check_level, check_option, must
from treedp.exceptions import InvalidParameterError, InvalidTypeError, MissingDependencyError
from treedp.noise import RandomSource
from treedp.report.band import CDFBand, band_index, cdf_band
from treedp.report.numbers import axis_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from treedp.release import Release
    from treedp.release.grouped import GroupedRelease

__all__ = ["figure_svg", "key_text", "plot_groups", "plot_release", "require_matplotlib"]

KINDS = ("cdf", "histogram", "quantiles")
DEFAULT_QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)
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


@dataclass(frozen=True)
class _Style:
    """The options of :func:`plot_release` that the three kinds read."""

    level: float
    quantiles: Sequence[float]
    proportion: bool
    max_bars: int
    band: dict[str, Any]  # passed to cdf_band
    reference: Any
    truth: Any
    label: str | None
    color: Any
    name: str  # the value axis' name: the column


# ---------------------------------------------------------------------------- axes helpers
def _axis_values(release: Release, edges: np.ndarray) -> np.ndarray:
    """Public edge values on matplotlib's x axis: floats, or date numbers for datetime bins."""
    if release.bins.is_datetime:
        edges = _dates().date2num(edges.astype(f"datetime64[{release.bins.datetime_unit}]"))
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


def _scale(release: Release, proportion: bool = True) -> float:
    return 1.0 / release.n if proportion and release.n > 0 else 1.0


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


def _finish_x(release: Release, ax: Axes, xlabel: str) -> None:
    if release.bins.is_datetime:
        locator = _dates().AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(_dates().ConciseDateFormatter(locator))
    ax.set_xlabel(xlabel)


def _exact_prefix(release: Release, values: Any) -> np.ndarray:
    counts, _ = release.bins.count(values, nan="drop")
    return np.concatenate([[0.0], np.cumsum(counts, dtype=np.float64)])


# ---------------------------------------------------------------------------- the three kinds
def _draw_cdf(release: Release, ax: Axes, style: _Style) -> None:
    scale = _scale(release, style.proportion)
    # at most _MAX_LINE_POINTS edges: a monotone curve looks the same, the SVG stays small
    all_m = band_index(release.bins.n_bins, _MAX_LINE_POINTS)
    pos = _prefix_positions(release, all_m)
    fit = np.asarray(release._counts(None), dtype=np.float64)[all_m] * scale
    step = "steps-post" if release.bins.discrete else "default"
    label = style.label or "private CDF estimate"
    (line,) = ax.plot(pos, fit, drawstyle=step, color=style.color, label=label, zorder=3)
    band = cdf_band(release, level=style.level, **style.band)
    bx, blo, bhi = _band_polygon(release, band)
    top = 1.0 if scale != 1.0 else np.inf  # a share of n̂ is at most 1 (post-processing)
    ax.fill_between(
        bx,
        np.clip(blo * scale, 0.0, top),
        np.clip(bhi * scale, 0.0, top),
        color=line.get_color(),
        alpha=0.25,
        linewidth=0,
        label=f"{style.level:.0%} simultaneous band ({band.method})",
        zorder=2,
    )
    for data, public, dash, color, text in _overlays(style):
        exact = _exact_prefix(release, data)[all_m]
        own = scale  # a public reference is scaled by its own total
        if public:
            own = 1.0 / exact[-1] if style.proportion and exact[-1] > 0 else 1.0
        ax.plot(pos, exact * own, drawstyle=step, linestyle=dash, color=color, label=text, zorder=4)
    what = f"{style.name} ≤ x"
    ax.set_ylabel(f"proportion with {what}" if scale != 1.0 else f"count with {what}")


def _overlays(style: _Style) -> list[tuple[Any, bool, str, str, str]]:
    """``(data, public, dash, colour, label)`` of the reference and the research-only truth."""
    found = [
        (style.reference, True, "--", "0.35", "public reference (not from the release)"),
        (style.truth, False, ":", "black", "true values (NOT private: research only)"),
    ]
    return [entry for entry in found if entry[0] is not None]


def _band_polygon(release: Release, band: CDFBand) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The band as a step region valid for every x (monotonicity between evaluated edges)."""
    pos = _prefix_positions(release, band.index)
    if pos.size == 1:
        return pos, band.low, band.high
    consecutive = np.diff(band.index) == 1
    # on [pos_k, pos_k+1): F >= low_k; F <= high_k+1, or high_k when the bins are discrete and
    # the two edges are neighbours (the CDF is then constant between them)
    upper = np.where(release.bins.discrete & consecutive, band.high[:-1], band.high[1:])
    return np.repeat(pos, 2)[1:-1], np.repeat(band.low[:-1], 2), np.repeat(upper, 2)


def _histogram_groups(n_bins: int, max_bars: int) -> np.ndarray:
    if n_bins <= max_bars:
        return np.arange(n_bins + 1)
    return np.unique(np.linspace(0, n_bins, max_bars + 1).round().astype(np.int64))


def _draw_histogram(release: Release, ax: Axes, style: _Style) -> None:
    groups = _histogram_groups(release.bins.n_bins, style.max_bars)
    edges_axis = _axis_values(release, release.bins.edges)[groups]
    widths = np.diff(edges_axis)
    scale = _scale(release)
    fit = np.asarray(release._counts(None), dtype=np.float64)[groups]
    density = np.diff(fit) * scale / widths
    x_left = edges_axis[:-1] - (0.5 if release.bins.discrete else 0.0)
    ax.bar(
        x_left,
        density,
        width=widths,
        align="edge",
        color=style.color,
        alpha=0.6,
        label=style.label or "private density",
        edgecolor="none",
    )
    left, right = release.edges[groups[:-1]], release.edges[groups[1:]]
    lo, hi = release.confidence_interval("range_count", left, right, level=style.level)
    # the intervals are clipped at 0 (a density is never negative): post-processing
    low = np.maximum(np.asarray(lo, dtype=np.float64), 0.0) * scale / widths
    high = np.maximum(np.asarray(hi, dtype=np.float64), 0.0) * scale / widths
    ax.vlines(
        x_left + widths / 2.0,
        low,
        high,
        colors="0.2",
        linewidth=0.8,
        label=f"{style.level:.0%} interval per bar (pointwise)",
    )
    for data, public, dash, color, text in _overlays(style):
        exact = _exact_prefix(release, data)[groups]
        own = 1.0 / exact[-1] if public and exact[-1] > 0 else scale
        dens = np.diff(exact) * own / widths
        stairs = np.append(x_left, x_left[-1] + widths[-1])
        ax.stairs(dens, stairs, linestyle=dash, color=color, label=text)
    unit = "day" if release.bins.is_datetime else f"unit of {style.name}"
    ax.set_ylabel(f"density (share per {unit})")


def _draw_quantiles(release: Release, ax: Axes, style: _Style) -> None:
    qs = np.asarray(style.quantiles, dtype=np.float64)
    est = np.atleast_1d(release.quantile(qs))
    simulations, rng = style.band["simulations"], style.band["rng"]
    low, high = release.quantile_interval(qs, level=style.level, simulations=simulations, rng=rng)

    def to_x(v: Any) -> np.ndarray:
        return _axis_values(release, np.atleast_1d(v))

    label = f"{style.level:.0%} interval per quantile"
    # An end beyond the bins is open (bounds found from the records, whose scans leave some
    # records beyond them, clamped into the end bin): drawn to the bins' end with an arrow.
    left, right = _axis_values(release, release.bins.edges[[0, -1]])
    x_low, x_high = to_x(low), to_x(high)
    open_low, open_high = x_low < left, x_high > right
    x_low, x_high = np.clip(x_low, left, right), np.clip(x_high, left, right)
    ax.hlines(qs, x_low, x_high, color=style.color, linewidth=2, label=label)
    text: str | None = "interval open beyond a found bound"  # one legend entry
    for shut, x, mark in ((open_low, x_low, "<"), (open_high, x_high, ">")):
        if shut.any():
            ax.plot(x[shut], qs[shut], mark, color=style.color, label=text)
            text = None
    ax.plot(to_x(est), qs, "o", color=style.color, label="private quantile estimate")
    if style.truth is not None:
        exact = _exact_prefix(release, style.truth)
        pos = _prefix_positions(release, np.arange(exact.size))
        # the exact quantile on the same bins: the first edge where the exact CDF reaches q·n
        m = np.searchsorted(exact, qs * exact[-1], side="left")
        text = "true quantile (NOT private: research only)"
        ax.plot(pos[np.clip(m, 0, pos.size - 1)], qs, "x", color="black", label=text)
    ax.set_ylabel("probability q")
    ax.set_ylim(-0.02, 1.02)


_DRAW: dict[str, Callable[[Release, Axes, _Style], None]] = {
    "cdf": _draw_cdf,
    "histogram": _draw_histogram,
    "quantiles": _draw_quantiles,
}


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

    Parameters
    ----------
    release : Release
        What to draw.
    ax : Axes or sequence of Axes, optional
        Where to draw, one Axes per kind; default: a new figure with one Axes per kind.
    kind : str or sequence of str, default=("cdf", "histogram", "quantiles")
        Which plots, in order (see :mod:`treedp.report.plot`).
    reference : array-like, optional
        Public values (last year's published data, say), overlaid as a public reference.
    truth : array-like, optional
        The true, non-private values, overlaid for research only (labelled "NOT private").
    level : float, default=0.95
        Coverage of the band and intervals.
    quantiles : sequence of float, default=(0.1, 0.25, 0.5, 0.75, 0.9)
        The quantiles of the ``"quantiles"`` plot.
    proportion : bool, default=True
        The CDF as a proportion of ``n̂`` (True) or as a count.
    max_points, band_method, simulations, rng
        Passed to :func:`~treedp.report.band.cdf_band` (``band_method`` as ``method``);
        ``simulations`` and ``rng`` also calibrate the quantile intervals.
    max_bars : int, default=100
        At most this many histogram bars.
    xlabel : str, optional
        The name of the released column, on the value axis and in the axis labels (a release
        does not record it; default "value", "date" for datetime bins).
    label, color
        Legend label and colour of the private estimate.
    figsize : (float, float), optional
        Size of a new figure in inches.

    Returns
    -------
    (Figure, dict)
        The figure and a mapping kind → Axes (the band is the ``PolyCollection`` whose label
        starts with the level).

    Raises
    ------
    MissingDependencyError
        If matplotlib is not installed (the ``treedp[plot]`` extra).
    """
    require_matplotlib()
    kinds = _check_kinds(kind)
    style = _Style(
        level=check_level(level),
        quantiles=quantiles,
        proportion=proportion,
        max_bars=check_int(max_bars, "max_bars", lo=1),
        band={
            "max_points": max_points,
            "method": band_method,
            "simulations": simulations,
            "rng": rng,
        },
        reference=reference,
        truth=truth,
        label=label,
        color=color,
        name=axis_name(release, xlabel),
    )
    fig, axes = _target_axes(ax, kinds, figsize)
    for name, a in zip(kinds, axes, strict=True):
        _DRAW[name](release, a, style)
        _finish_x(release, a, style.name)
        if release.seeded:
            a.set_title("SEEDED: not for publication", color="#b00020", fontsize="small")
        a.legend(fontsize="x-small", loc="best")
    return fig, dict(zip(kinds, axes, strict=True))


def _target_axes(
    ax: Any, kinds: tuple[str, ...], figsize: tuple[float, float] | None
) -> tuple[Figure, list[Axes]]:
    """A new figure with one Axes per kind, or the given Axes (one per kind) and their figure."""
    if ax is None:
        return _new_axes(len(kinds), figsize)
    axes = [ax] if _is_axes(ax) else list(ax)
    if len(axes) != len(kinds) or not all(_is_axes(a) for a in axes):
        raise InvalidParameterError(must("ax", f"be one Axes per kind ({len(kinds)} for {kinds})."))
    return axes[0].get_figure(), axes


def plot_groups(
    releases: Mapping[Any, Release] | GroupedRelease,
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
    releases : GroupedRelease or mapping
        A grouped release (every key, in its order), or group key (public) → :class:`Release`.
        A key of several fields is shown joined by commas.
    layout : {"overlay", "small_multiples"}, default="overlay"
        Every group's CDF and band on one Axes (``kind="cdf"`` only), or one Axes per key
        with shared scales.
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
    from treedp.release.grouped import GroupedRelease

    if isinstance(releases, GroupedRelease):
        releases = dict(releases.items())
    if not isinstance(releases, Mapping):
        got = type(releases).__name__
        raise InvalidTypeError(
            must(
                "releases",
                f"be a GroupedRelease or a mapping of group key to Release. Got {got} instead.",
            )
        )
    if not releases:
        raise InvalidParameterError(must("releases", "hold at least one group."))
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
                label=key_text(key),
                **options,
            )
        _key_legend(ax, level)
        return fig, dict.fromkeys(keys, ax)
    cols = min(check_int(ncols, "ncols", lo=1), len(keys))
    rows = -(-len(keys) // cols)
    fig, _ = _new_axes(0, figsize or (3.6 * cols, 2.8 * rows))
    grid = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    out: dict[Any, Axes] = {}
    for i, key in enumerate(keys):
        a = grid[i // cols][i % cols]
        plot_release(releases[key], a, (kind,), level=level, truth=truth.get(key), **options)
        seeded = " (SEEDED)" if releases[key].seeded else ""
        a.set_title(key_text(key) + seeded, fontsize="small")
        out[key] = a
    for j in range(len(keys), rows * cols):
        grid[j // cols][j % cols].set_visible(False)
    return fig, out


def _key_legend(ax: Axes, level: float) -> None:
    """One legend entry per key (its line) and one for all the bands, not one band per key."""
    handles, labels = ax.get_legend_handles_labels()
    band = [(h, t) for h, t in zip(handles, labels, strict=True) if "simultaneous band" in t]
    kept = [(h, t) for h, t in zip(handles, labels, strict=True) if "simultaneous band" not in t]
    if band:
        kept.append((band[0][0], f"{level:.0%} simultaneous bands (one per key)"))
    ax.legend([h for h, _ in kept], [t for _, t in kept], fontsize="x-small", loc="best")


def key_text(key: Any) -> str:
    """A group key as text: the fields of a key of several ``by`` columns joined by commas."""
    return ", ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _is_axes(obj: Any) -> bool:
    from matplotlib.axes import Axes

    return isinstance(obj, Axes)


def _check_kinds(kind: Any) -> tuple[str, ...]:
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    if not kinds:
        raise InvalidParameterError(must("kind", "name at least one plot."))
    for k in kinds:
        check_option(k, "kind", KINDS)
    return kinds


# ---------------------------------------------------------------------------- SVG for HTML
_SVG_OPEN = re.compile(r"<svg\b[^>]*>", re.S)


def figure_svg(fig: Figure, *, title: str, description: str, ident: str) -> str:
    """The figure as an inline, accessible, responsive ``<svg>`` element (no XML header):
    ``role="img"``, a ``<title>`` and a ``<desc>`` referenced by ``aria-labelledby``, no fixed
    width, and text kept as text."""
    mpl = require_matplotlib()
    buffer = io.StringIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": ident}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    match = _SVG_OPEN.search(text)
    if match is None:  # pragma: no cover - matplotlib always writes an <svg> root
        raise InvalidParameterError("matplotlib did not write an SVG document.")
    tag = re.sub(r'\s(width|height)="[^"]*"', "", match.group(0)).replace(
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
