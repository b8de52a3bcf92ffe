"""A release as one self-contained static HTML page (``treedp report``), and the notebook
displays (``_repr_html_``) of a release and a grouped release.

What was released and under which guarantee, the plots as inline SVG, tables of quantiles and
CDF values with their intervals, and the expected error: all post-processing of the release
or simulations of its public noise. No network, no JavaScript; figures have text alternatives,
and the page reflows to 400 px and prints cleanly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from html import escape
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from treedp._atomic import atomic_write
from treedp._validation import check_level, each_warning_once
from treedp.accuracy import ErrorPrediction
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.privacy import ZCDP, ApproxDP, PureDP
from treedp.report.numbers import axis_name, chosen_text, level_texts, nice_points, percent
from treedp.report.plot import figure_svg, plot_release, require_matplotlib

if TYPE_CHECKING:
    from treedp.release import Release

__all__ = [
    "CLIPPED",
    "SEEDED_WARNING",
    "cdf_points",
    "expected_error",
    "figure_html",
    "page_document",
    "render_report",
    "write_page",
    "write_report",
]

NEIGHBOUR_TEXT = {
    "add_remove": "add/remove: two datasets are neighbours when one has one record more",
    "replace": "replace: two datasets of the same public size n differ in one record",
}

PERSON_TEXT = {
    "add_remove": "add/remove: two datasets are neighbours when one has one person more",
    "replace": "replace: two datasets differ in one person's rows",
}

SEEDED_WARNING = (
    "SEEDED: this release was made with a fixed seed (reproducible noise). It is for tests "
    "and research only and must not be published."
)

_CSS = """
:root { color-scheme: light; --ink: #1a1a1a; --muted: #555; --line: #d0d0d0; --warn: #b00020; }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
       max-width: 60rem; margin: 0 auto; padding: 1rem; background: #fff; }
h1 { font-size: 1.6rem; margin: 0.2rem 0 0.6rem; }
h2 { font-size: 1.25rem; margin: 1.6rem 0 0.5rem; border-bottom: 1px solid var(--line); }
p.lede, figcaption, .note { color: var(--muted); }
.warning { border: 2px solid var(--warn); color: var(--warn); padding: 0.6rem 0.8rem;
           font-weight: 600; margin: 0.8rem 0; }
table { border-collapse: collapse; margin: 0.4rem 0 0.8rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 0.25rem 0.6rem; text-align: left;
         vertical-align: top; }
td.num { text-align: right; white-space: nowrap; }
.scroll { overflow-x: auto; max-width: 100%; }
figure { margin: 1rem 0; break-inside: avoid; page-break-inside: avoid; }
figure svg { display: block; width: 100%; height: auto; max-width: 48rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; }
dl.facts dt { font-weight: 600; max-width: 18rem; }
h3 { font-size: 1.05rem; margin: 1rem 0 0.4rem; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
footer { margin-top: 2rem; font-size: 0.85rem; color: var(--muted); }
@media (max-width: 520px) {
  body { font-size: 15px; padding: 0.5rem; }
  dl.facts { grid-template-columns: 1fr; }
  dl.facts dd { margin-bottom: 0.4rem; }
  th, td { padding: 0.2rem 0.3rem; }
}
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; page-break-after: avoid; }
  table, figure, .warning { break-inside: avoid; page-break-inside: avoid; }
  .scroll { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
"""


# ---------------------------------------------------------------------------- facts
def expected_error(release: Release) -> ErrorPrediction:
    """The release's expected CDF error, as :func:`treedp.predict_error` gives it for its plan
    (from public parameters only)."""
    var = np.asarray(release.prefix_variance, dtype=np.float64)
    n_bins = release.bins.n_bins
    worst = int(np.argmax(var[1:])) + 1 if n_bins else 0
    return ErrorPrediction(
        mean_cdf_mse=float(var[1:].mean()) if n_bins else 0.0,
        max_cdf_variance=float(var[worst]),
        worst_prefix=worst,
        prefix_variance=var,
        mechanism=release.mechanism.name,
        estimator=release.estimator,
        branching=release.branching,
        level_budgets=release.level_budgets,
    )


def _fmt(value: Any, spec: str = ".6g") -> str:
    if isinstance(value, float | np.floating):
        return "NaN" if np.isnan(value) else format(float(value), spec)
    return str(value)


def _fmt_count(value: Any) -> str:
    """A count with one decimal at any size: ``10000007.6``, never ``1e+07``."""
    return _fmt(value, ".1f")


def _noise_text(release: Release) -> str:
    """The mechanism's noise families, named by their classes (``DiscreteLaplace``: "discrete
    Laplace"), so a new family needs no entry here."""
    names: dict[str, None] = {}
    for family in release.mechanism.families:
        if family is not None:
            first, *rest = re.findall(r"[A-Z][a-z0-9]*|[a-z0-9]+", type(family).__name__)
            names[" ".join([first.lower(), *rest])] = None
    return f"exact {' and '.join(names)} noise (no floating-point noise)"


def _guarantee_rows(release: Release) -> list[tuple[str, str]]:
    g = release.guarantee
    rows = [("Guarantee", g.describe())]
    if isinstance(g, PureDP | ApproxDP):
        rows.append(("ε (epsilon)", f"{g.epsilon:g}"))
    if isinstance(g, ApproxDP):
        rows.append(("δ (delta)", f"{g.delta:.3g}"))
    if isinstance(g, ZCDP):
        rows.append(("ρ (rho, zCDP)", f"{g.rho:g}"))
    target = release.approx_target
    if target is not None:
        implied = f"({target.epsilon:g}, {target.delta:.3g})-DP, implied by ρ above"
        rows.append(("(ε, δ) target", implied + " (tight conversion)"))
    step = release.bounds_step
    if step is not None:
        known = step.get("known")
        which = (
            "the bounds were found privately"
            if known is None
            else f"the {'upper' if known == 'lower' else 'lower'} bound was found privately "
            f"(the {known} one was given as public)"
        )
        if step.get("external"):  # found beforehand by treedp.private_bounds, charged then
            text = f"{which} beforehand (treedp.private_bounds, ε = {step['epsilon']:g}, "
            rows.append(("Bounds", text + "charged on its own, not included above)"))
        else:
            total = f"{release.total_guarantee.describe()}: {which} from the same data with "
            rows.append(("Total guarantee", total + f"ε = {step['epsilon']:g}, not included above"))
    sensitivity = release.mechanism.describe().get("block_sensitivity", [])
    return [
        *rows,
        *_unit_rows(release),
        ("Noise", _noise_text(release)),
        (
            "Budget per noised block (parts of the guarantee above)",
            level_texts(release.level_budgets, release.level_budgets, "g"),
        ),
        ("Sensitivity per block (L1)", ", ".join(_fmt(s) for s in sensitivity)),  # type: ignore[attr-defined]
    ]


def _unit_rows(release: Release) -> list[tuple[str, str]]:
    """Who is protected: one record, or one person with all their (bounded) rows."""
    unit, relation = release.unit, release.neighbours
    if unit is None:
        record = getattr(release.mechanism.spend(), "unit", "record")
        return [
            ("Neighbour relation", NEIGHBOUR_TEXT.get(relation, relation)),
            ("Privacy unit", f"one {record} (one row of the input column)"),
        ]
    bounds = unit.bounds
    return [
        ("Neighbour relation", f"{PERSON_TEXT[relation]} (all of that person's kept rows)"),
        (
            "Privacy unit",
            f"one person (column {bounds.unit!r}), at most {bounds.max_contributions} "
            f"row{'s' if bounds.max_contributions != 1 else ''} "
            f"each{chosen_text(unit.bound_epsilon, unit.bound_rho)}: "
            f"{unit.factor(release.mechanism)} times the loss of the record-level mechanism "
            "below",
        ),
        *collision_rows(unit.collision),
    ]


def collision_rows(collision: str | None) -> list[tuple[str, str]]:
    """The δ of telling persons apart by a keyed hash (text ids on files), as a row, or none."""
    if not collision:
        return []
    return [
        (
            "Person ids",
            "told apart by a keyed 128-bit hash: plus δ ≤ (n − 1)·2⁻¹²⁸ for n persons (a "
            "collision of an added person with another could move up to twice the bound of "
            "kept rows; the stated loss holds given no collision)",
        )
    ]


def _guarantee_section(release: Release, grouped: Sequence[tuple[str, str]] | None) -> str:
    """The guarantee; for one key of a grouped release, the grouped rows (the guarantee that
    holds) first, then this key's tree under a heading that calls it a part of that one, its
    guarantee row saying so too."""
    rows = _guarantee_rows(release)
    if grouped is None:
        return _facts(rows)
    part = (
        " per record: a part of the grouped release's guarantee above, not a guarantee of its own"
    )
    rows = [(k, v + part if k == "Guarantee" else v) for k, v in rows]
    rows = [
        (k, v + " (the tree's records; the release's privacy unit is stated above)")
        if k == "Privacy unit"
        else (k, v)
        for k, v in rows
    ]
    heading = "This key's tree: a part of the guarantee above, not a guarantee on its own"
    return f"{_facts(grouped)}<h3>{escape(heading)}</h3>{_facts(rows)}"


def _release_rows(release: Release, column: str | None = None) -> list[tuple[str, str]]:
    bins, edges, branching = release.bins, release.edges, release.branching
    kind_col = "datetime" if bins.is_datetime else "numeric"
    kind = "integer" if bins.integers else kind_col
    span = f"[{edges[0]}, {edges[-1]})"
    if bins.integers:
        span = f"[{_fmt(edges[0])}, {_fmt(edges[-1] - 1)}]"
    width = " (equal width)" if bins.equal_width else ""
    shape = f"none ({release.mechanism.summary or release.mechanism.name})"
    if branching is not None:
        fan_out = " × ".join(map(str, branching))
        shape = f"{len(branching)} levels below the root, fan-out {fan_out}"
    public = release.mechanism.neighbours == "replace"  # n is public
    return [
        (
            "Released",
            f"the CDF (and everything derived from it) of one {kind_col} column"
            + (f", {column}" if column else ""),
        ),
        ("Mechanism", release.mechanism.name),
        ("Bins", f"{bins.n_bins} {kind} bins over {span}{width}"),
        ("Tree shape", shape),
        ("Records (public n)" if public else "Records (estimated n̂)", _fmt_count(release.n)),
        ("Estimator", f"{release.estimator}; consistent projection: {release.postprocess}"),
        ("Randomness", ", ".join(f"{k}={v}" for k, v in release.randomness.items())),
        ("Made by", f"treedp {release.library_version}"),
    ]


def _facts(rows: Sequence[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<dl class="facts">{items}</dl>'


def _table(caption: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f'<th scope="col">{escape(h)}</th>' for h in header)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{escape(c)}</td>' if i else f'<th scope="row">{escape(c)}</th>'
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return (
        f'<div class="scroll"><table><caption>{escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _quantile_rows(
    release: Release, qs: np.ndarray, level: float, rng: RandomSource | None
) -> list[list[str]]:
    est = np.atleast_1d(release.quantile(qs))
    low, high = (np.atleast_1d(v) for v in release.quantile_interval(qs, level=level, rng=rng))
    # an end beyond the bins is open (bounds found from the records: the clamped records)
    first, last = release.edges[0], release.edges[-1]
    return [
        [f"{q:g}", _fmt(e), "−∞" if lo < first else _fmt(lo), "∞" if hi > last else _fmt(hi)]
        for q, e, lo, hi in zip(qs, est, low, high, strict=True)
    ]


def cdf_points(release: Release) -> np.ndarray:
    """Public points for the table of CDF values: round numbers among the bin edges (for
    integers bins, the last integer below each edge: the CDF there is a prefix, exact in
    the bins), else about 11 evenly spaced edges (datetime bins too)."""
    discrete = release.bins.integers
    all_idx = np.arange(int(discrete), release.bins.n_bins + 1)
    values = release.edges[all_idx] - 1 if discrete else release.edges[all_idx]
    if not release.bins.is_datetime:
        found = nice_points(np.asarray(values, dtype=np.float64))
        if found.size:
            return np.asarray(values[found])
    idx = np.unique(np.linspace(int(discrete), release.bins.n_bins, 11).round()).astype(np.int64)
    return np.asarray(release.edges[idx] - 1 if discrete else release.edges[idx])


def _cdf_rows(release: Release, level: float) -> list[list[str]]:
    xs = cdf_points(release)
    values = np.atleast_1d(release.cdf(xs))
    low, high = release.confidence_interval("cdf", xs, level=level)  # clipped at 0 (and n)
    n_hat = release.n
    rows = []
    for x, v, lo, hi in zip(xs, values, np.atleast_1d(low), np.atleast_1d(high), strict=True):
        share = _fmt(v / n_hat, ".4g") if n_hat > 0 else "—"
        rows.append([_fmt(x), _fmt_count(v), share, _fmt_count(lo), _fmt_count(hi)])
    return rows


# ---------------------------------------------------------------------------- figures
def _figure(
    release: Release,
    kind: str,
    ident: str,
    level: float,
    qs: np.ndarray,
    rng: RandomSource | None,
    caption: str,
    description: str,
    figsize: tuple[float, float] = (6.4, 3.6),
    xlabel: str | None = None,
) -> str:
    # larger type than matplotlib's default, so the figure stays legible at 400 px wide
    with require_matplotlib().rc_context({"font.size": 12}):
        fig, _ = plot_release(
            release,
            kind=kind,
            level=level,
            quantiles=tuple(qs),
            rng=rng,
            figsize=figsize,
            xlabel=xlabel,
        )
        return figure_html(fig, caption, description, ident)


def figure_html(fig: Any, caption: str, description: str, ident: str) -> str:
    """A matplotlib figure as a ``<figure>`` with inline SVG and its caption."""
    svg = figure_svg(fig, title=caption, description=description, ident=ident)
    text = f"{escape(caption)}. {escape(description)}"
    return f"<figure>{svg}<figcaption>{text}</figcaption></figure>"


def render_report(
    release: Release,
    *,
    title: str | None = None,
    level: float = 0.95,
    quantiles: Sequence[float] = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99),
    rng: RandomSource | None = None,
    grouped: Sequence[tuple[str, str]] | None = None,
    column: str | None = None,
) -> str:
    """The release as one self-contained HTML page (a string).

    Parameters
    ----------
    release : Release
        The release to show.
    title : str, optional
        The page title (default: "treedp release report").
    level : float, default=0.95
        Coverage of the band and of every interval.
    quantiles : sequence of float
        The quantiles tabulated and drawn.
    rng : RandomSource, optional
        Randomness for the simulations that calibrate the band and the quantile intervals
        (they use the public noise distribution only; default: the operating system's).
    grouped : sequence of (label, text), optional
        For one key of a grouped release: the grouped release's guarantee rows, shown first;
        the rows of ``release`` are then labelled as parts of that guarantee (use
        :func:`treedp.write_report` with ``key=`` to get them from a ``GroupedRelease``).
    column : str, optional
        The name of the released column, for the axes and tables (a release file does not
        record it; default: "value", or "date" for datetime bins).

    Returns
    -------
    str
        The HTML document.

    Raises
    ------
    MissingDependencyError
        If matplotlib (the ``treedp[plot]`` extra) is not installed.
    """
    if not release.offers_intervals:
        raise InvalidParameterError(
            f"A release of mechanism {release.mechanism.name!r} has no standard errors or "
            "intervals (a data-dependent bias), which the report draws; query it instead."
        )
    require_matplotlib()
    level = check_level(level)
    qs = np.asarray(quantiles, dtype=np.float64)
    title = title or "treedp release report"
    pct = f"{level:.0%}"
    name = axis_name(release, column)
    with each_warning_once():  # the figures, the tables: each read the quantiles
        figures = _figures(release, level, qs, rng, name)  # first: the simulations use rng
        quantile_rows, cdf_rows = _quantile_rows(release, qs, level, rng), _cdf_rows(release, level)
    quantile_table = _table(
        f"Estimated quantiles with {pct} confidence intervals",
        ["q", "estimate", f"{pct} low", f"{pct} high"],
        quantile_rows,
    )
    cdf_table = _table(
        f"Estimated count of values ≤ x at round public points (bin edges), with {pct} "
        "confidence intervals (of the unbiased estimate, clipped at 0)",
        [f"x ({name})", "count ≤ x", "share of n̂", f"{pct} low", f"{pct} high"],
        cdf_rows,
    )
    guarantee = _guarantee_section(release, grouped)
    sections = [  # (id, heading id, heading, body)
        ("released", "released", "What was released", _facts(_release_rows(release, column))),
        ("guarantee", "guarantee", "Privacy guarantee", guarantee),
        ("plots", "plots", "The distribution", figures),
        ("quantiles", "quantiles", "Quantiles", quantile_table),
        ("cdf-values", "cdf", "CDF values", cdf_table),
        ("expected-error", "error", "Expected error (from the plan)", _error(release)),
        ("reading", "reading", "How to read this page", _reading(pct)),
    ]
    return page_document(title, _header(release, title), sections, release.library_version)


def page_document(
    title: str, header: str, sections: Sequence[tuple[str, str, str, str]], version: str
) -> str:
    """A whole page: ``sections`` are ``(id, heading id, heading, body HTML)``."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
        + header
        + "".join(
            f'<section id="{i}" aria-labelledby="h-{h}"><h2 id="h-{h}">{text}</h2>{body}</section>'
            for i, h, text, body in sections
        )
        + f"</main><footer>Generated by treedp {escape(version)}. This file is "
        "self-contained: it loads nothing and runs no script.</footer></body></html>\n"
    )


def _header(release: Release, title: str) -> str:
    """The title, the lede and the warnings (seeded noise, bounds that look too narrow)."""
    narrow = release.bounds_warning()  # post-processing of the released counts and stops
    texts = [SEEDED_WARNING] if release.seeded else []
    if narrow is not None:
        texts.append(f"Warning: {narrow}")
    warnings = "".join(f'<p class="warning" role="note">{escape(t)}</p>' for t in texts)
    return (
        f"<header><h1>{escape(title)}</h1>"
        f'<p class="lede">A differentially private release made by treedp: every number on '
        f"this page is post-processing of one private measurement and costs no further "
        f"privacy.</p>{warnings}</header>"
    )


def _figures(
    release: Release, level: float, qs: np.ndarray, rng: RandomSource | None, name: str
) -> str:
    """The three figures: the CDF with its band, the histogram, the quantiles."""
    pct = f"{level:.0%}"
    q = np.atleast_1d(release.quantile(np.array([0.1, 0.5, 0.9])))
    median = f"estimated median {_fmt(q[1])}, 10% and 90% quantiles {_fmt(q[0])} and {_fmt(q[2])}"
    edges = release.edges
    span = f"{_fmt(edges[0])} to {_fmt(edges[-1] - 1 if release.bins.integers else edges[-1])}"
    listed = ", ".join(f"{q:g}" for q in qs)
    return "".join(
        _figure(release, kind, ident, level, qs, rng, caption, description, xlabel=name)
        for kind, ident, caption, description in (
            (
                "cdf",
                "fig-cdf",
                f"Estimated CDF with its {pct} simultaneous confidence band",
                f"Share of values of {name} at or below x, for x from {span}; {median}. The shaded "
                f"band holds the true CDF everywhere at once with probability {pct}.",
            ),
            (
                "histogram",
                "fig-hist",
                f"Estimated density per bar with {pct} intervals",
                f"Density (share of values per unit of {name}) from {span}; each bar carries a "
                f"pointwise {pct} interval.",
            ),
            (
                "quantiles",
                "fig-quant",
                f"Quantiles with their {pct} intervals",
                f"{len(qs)} quantiles (q = {listed}); {median}. "
                "Each horizontal line is the interval of one quantile.",
            ),
        )
    )


def _error(release: Release) -> str:
    """The expected error of the plan, from public parameters only."""
    err = expected_error(release)
    n_hat = release.n
    rows = [
        (
            "Typical CDF error (RMSE over all edges)",
            f"{err.rmse:.4g} records"
            + (f" ({percent(err.rmse / n_hat)} of n̂)" if n_hat > 0 else ""),
        ),
        (
            "Largest standard error of a CDF value",
            f"{np.sqrt(err.max_cdf_variance):.4g} records "
            f"(at edge {err.worst_prefix} of {release.bins.n_bins})",
        ),
        (
            "Noise variance per level",
            level_texts(release.level_variance, release.level_budgets)
            + (" (off: a level not released)" if 0 in release.level_budgets else ""),
        ),
    ]
    return (
        _facts(rows) + '<p class="note">Exact, from public parameters only (the same '
        "computation as <code>treedp.predict_error</code> makes before any data is read). The "
        "estimates are unbiased before the consistent projection, which only lowers the "
        "error.</p>"
    )


def _reading(pct: str) -> str:
    return (
        f"<p>Interval bounds are {pct} confidence intervals. The CDF band holds "
        "for every x at once (simultaneous); the per-bar and per-value intervals hold for each "
        "one separately (pointwise). Intervals are centred on the unbiased estimates; the "
        "plotted curve and the tabulated counts are the consistent estimates (non-decreasing, "
        f"never negative).</p><p>{CLIPPED}</p>"
    )


#: What every page says about its clipped bands and intervals.
CLIPPED = (
    "Bands and intervals are clipped to what is possible: a CDF between 0 and 1, counts and "
    "densities at least 0 (and counts at most n when n is public). Clipping is "
    "post-processing of the release: it costs no privacy and never lowers the coverage."
)


def write_report(release: Release, path: str | os.PathLike[str], **options: Any) -> None:
    """Write :func:`render_report` to ``path`` atomically (the whole page or no file), readable
    by everyone (mode 0644) like any page meant to be shared.

    Raises
    ------
    OSError
        If ``path`` cannot be written (naming ``path``); nothing is left behind.
    """
    write_page(render_report(release, **options), path)


def write_page(html: str, path: str | os.PathLike[str]) -> None:
    """Write a page to ``path`` atomically, mode 0644; an error names ``path``."""
    data = html.encode("utf-8")

    def write(handle: IO[bytes]) -> None:
        os.fchmod(handle.fileno(), 0o644)
        handle.write(data)

    try:
        atomic_write(path, write)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
