"""A grouped release (one tree per public key) as one self-contained HTML page.

The page states the guarantee once, for the privacy unit (with its contribution bounds), and
labels every per-tree figure as a part of it. Then the CDFs of all keys (overlaid, or small
multiples beyond :data:`OVERLAY_KEYS` keys), a table of quartiles per key with their intervals,
and the expected error per key from each key's exact variances, with the keys that carry too
little signal flagged by a rule on released and public quantities only
(:func:`treedp.release.signal.low_signal`, the rule ``GroupedRelease.to_frame`` and
``treedp query`` use too). Everything is post-processing of the release, or simulations of its
public noise: no privacy cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._validation import check_level, must
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.privacy import ZCDP, ApproxDP, PureDP
from treedp.release.signal import FLAG_SHARE, low_signal, median_stderr
from treedp.report.html import (
    CLIPPED,
    NEIGHBOUR_TEXT,
    PERSON_TEXT,
    SEEDED_WARNING,
    _facts,
    _fmt,
    _fmt_count,
    _noise_text,
    _table,
    collision_rows,
    expected_error,
    figure_html,
    page_document,
    render_report,
)
from treedp.report.numbers import axis_name, chosen_bound, level_texts, percent
from treedp.report.plot import key_text, plot_groups, require_matplotlib

if TYPE_CHECKING:
    from treedp.release.grouped import GroupedRelease

__all__ = [
    "FLAG_SHARE",
    "grouped_guarantee_rows",
    "low_signal",
    "render_grouped_report",
    "render_key_report",
]

#: Up to this many keys are overlaid on one plot; more are drawn as small multiples.
OVERLAY_KEYS = 6
#: At most this many keys are drawn (every key is in the tables).
MAX_DRAWN = 36
_QUARTILES = (0.25, 0.5, 0.75)


# ---------------------------------------------------------------------------- guarantee
def grouped_guarantee_rows(grouped: GroupedRelease) -> list[tuple[str, str]]:
    """The guarantee of the whole grouped release, stated once for its privacy unit, and how
    the per-key trees are parts of it."""
    g = grouped.guarantee
    rows = [("Guarantee", f"{g.describe()} for the whole release: every key together")]
    if isinstance(g, PureDP | ApproxDP):
        rows.append(("ε (epsilon)", f"{g.epsilon:g}"))
    if isinstance(g, ApproxDP):
        rows.append(("δ (delta)", f"{g.delta:.3g}"))
    if isinstance(g, ZCDP):
        rows.append(("ρ (rho, zCDP)", f"{g.rho:g}"))
    target = grouped.approx_target
    if target is not None:
        implied = f"({target.epsilon:g}, {target.delta:.3g})-DP, implied by ρ above"
        rows.append(("(ε, δ) target", implied + " (tight conversion)"))
    b = grouped.bounds
    if b.unit is None:
        rows += [
            ("Neighbour relation", NEIGHBOUR_TEXT.get(grouped.neighbours, grouped.neighbours)),
            ("Privacy unit", "one record (one row is one person)"),
        ]
    else:
        rows += [
            (
                "Neighbour relation",
                f"{PERSON_TEXT[grouped.neighbours]} (all of that person's kept rows)",
            ),
            (
                "Privacy unit",
                f"one person (column {b.unit!r}) with all their rows: at most "
                f"max_contributions = {b.max_contributions} rows kept per person, in at most "
                f"max_groups = {b.max_groups} keys, at most max_contributions_per_group = "
                f"{b.max_contributions_per_group} rows per key"
                f"{chosen_bound(grouped.bound_choice)}",
            ),
            *collision_rows(grouped.collision),
        ]
    selection = grouped.selection
    if selection is None:
        keys = f"{len(grouped)}, public (given, not read from the data)"
    else:
        keys = (
            f"{len(grouped)}, selected privately (ε = {float(selection['epsilon']):g}, δ = "
            f"{float(selection['delta']):.3g}, part of the guarantee above)"
        )
    rows.append(("Keys", keys))
    if len(grouped):
        first = grouped[grouped.keys[0]]
        per = first.guarantee.describe()
        rows += [
            (
                "Per-key trees",
                f"parts of the guarantee above: each key's tree is noised by a record-level "
                f"mechanism with {per} per record, not a guarantee on its own; one person's "
                f"rows change all trees together by at most Δ = {grouped.contribution_factor} "
                "records, which the guarantee above accounts for",
            ),
            ("Noise", _noise_text(first)),
            (
                "Budget per block of a tree",
                level_texts(first.level_budgets, first.level_budgets, "g")
                + " per record (parts of the guarantee above; off: a level not released)",
            ),
        ]
    return rows


# ---------------------------------------------------------------------------- tables
def _interval(est: Any, low: Any, high: Any) -> str:
    shown = "—" if isinstance(est, float) and math.isnan(est) else _fmt(est)
    return f"{shown} [{_fmt(low)}, {_fmt(high)}]"


def _quantile_table(
    grouped: GroupedRelease, level: float, rng: RandomSource | None, flag: float
) -> str:
    pct = f"{level:.0%}"
    qs = np.asarray(_QUARTILES)
    rows = []
    for key, rel in grouped.items():
        est = np.atleast_1d(rel.quantile(qs))
        low, high = rel.quantile_interval(qs, level=level, rng=rng)
        cells = [
            _interval(e, lo, hi)
            for e, lo, hi in zip(est, np.atleast_1d(low), np.atleast_1d(high), strict=True)
        ]
        mark = "too little signal" if low_signal(rel, flag) else ""
        rows.append([key_text(key), _fmt_count(rel.n), *cells, mark])
    return _table(
        f"Estimated quartiles per key, each with its {pct} confidence interval [low, high]",
        ["key", "n̂", "q 0.25", "median", "q 0.75", "signal"],
        rows,
    )


def _error_table(grouped: GroupedRelease, flag: float) -> str:
    rows = []
    for key, rel in grouped.items():
        err = expected_error(rel)
        n_hat = rel.n
        se_n = math.sqrt(max(float(rel.prefix_variance[-1]), 0.0))
        se_med = median_stderr(rel)
        share = percent(se_med / n_hat) if n_hat > 0 else "—"
        rows.append(
            [
                key_text(key),
                _fmt_count(n_hat),
                f"{se_n:.4g}",
                f"{err.rmse:.4g}",
                percent(err.rmse / n_hat) if n_hat > 0 else "—",
                share,
                "too little signal" if low_signal(rel, flag) else "",
            ]
        )
    table = _table(
        "Expected error per key, exact from each key's noise (public parameters) and n̂",
        [
            "key",
            "n̂",
            "standard error of n̂",
            "typical CDF error (RMSE, records)",
            "RMSE as a share of n̂",
            "CDF standard error at the median, share of n̂",
            "signal",
        ],
        rows,
    )
    return table + (
        f'<p class="note">A key is flagged <strong>too little signal</strong> when its '
        f"estimated count n̂ is at most 0, or when the standard error of its CDF at its "
        f"released median exceeds {flag:.0%} of n̂ (a 95% interval for the share of values "
        f"below the median is then wider than about ±{200 * flag:.0f} percentage points): its "
        "quantiles are unreliable. The rule reads only released and public quantities, never "
        "the data. Every tree has the same noise, so the error in records is the same for "
        "every key; as a share it shrinks as n̂ grows.</p>"
    )


def _released_rows(grouped: GroupedRelease, name: str) -> list[tuple[str, str]]:
    first = grouped[grouped.keys[0]]
    bins, edges = first.bins, first.edges
    span = f"[{_fmt(edges[0])}, {_fmt(edges[-1] - 1 if bins.integers else edges[-1])}]"
    kind = "integer" if bins.integers else "public"
    shape = f"none ({first.mechanism.summary or first.mechanism.name})"
    if first.branching is not None:
        shape = f"{len(first.branching)} levels below the root, fan-out " + " × ".join(
            map(str, first.branching)
        )
    return [
        ("Released", f"the distribution (CDF) of {name} for every key, one tree per key"),
        ("Grouped by", ", ".join(grouped.by) or "— (one group of all records)"),
        ("Keys", str(len(grouped))),
        ("Bins (the same for every key)", f"{bins.n_bins} {kind} bins over {span}"),
        ("Mechanism", f"{first.mechanism.name}; tree shape: {shape}"),
        ("Estimator", f"{first.estimator}; consistent projection: {first.postprocess}"),
        ("Made by", f"treedp {first.library_version}"),
    ]


# ---------------------------------------------------------------------------- page
def _plot(grouped: GroupedRelease, level: float, rng: RandomSource | None, name: str) -> str:
    pct = f"{level:.0%}"
    # a key with n̂ <= 0 has no share to draw (its CDF would be a count, on another scale)
    drawable = [k for k in grouped.keys if grouped[k].n > 0]
    keys = drawable[:MAX_DRAWN]
    if not keys:
        return '<p class="note">No key has an estimated count above 0: nothing to draw.</p>'
    chosen = {k: grouped[k] for k in keys}
    overlay = len(keys) <= OVERLAY_KEYS
    layout = "overlay" if overlay else "small_multiples"
    with require_matplotlib().rc_context({"font.size": 11}):
        fig, _ = plot_groups(chosen, layout=layout, level=level, rng=rng, xlabel=name)
        drawn = "every key" if len(keys) == len(grouped) else f"{len(keys)} keys"
        empty, beyond = len(grouped) - len(drawable), len(drawable) - len(keys)
        left = [f"{empty} with n̂ at most 0"] if empty else []
        left += [f"{beyond} beyond the first {MAX_DRAWN}"] if beyond else []
        if left:
            drawn += f" (not drawn: {' and '.join(left)}; every key is in the tables)"
        how = "overlaid" if overlay else "one small plot per key, on shared scales"
        return figure_html(
            fig,
            f"Estimated CDF of {name} per key with {pct} simultaneous bands",
            f"Share of values at or below x for {drawn}, {how}; each shaded band holds "
            f"its key's true CDF everywhere at once with probability {pct}.",
            "fig-groups",
        )


def render_grouped_report(
    grouped: GroupedRelease,
    *,
    title: str | None = None,
    level: float = 0.95,
    rng: RandomSource | None = None,
    column: str | None = None,
    flag_share: float = FLAG_SHARE,
) -> str:
    """A grouped release as one self-contained HTML page (a string); needs ``treedp[plot]``.

    Parameters
    ----------
    grouped : GroupedRelease
        The release to show.
    title : str, optional
        The page title.
    level : float, default=0.95
        Coverage of the bands and intervals.
    rng : RandomSource, optional
        Randomness for the simulations that calibrate the bands and quantile intervals (the
        public noise only; default: the operating system's).
    column : str, optional
        The name of the released column (a release file does not record it).
    flag_share : float, default=0.05
        The rule of :func:`low_signal`.
    """
    require_matplotlib()
    level = check_level(level)
    if not (isinstance(flag_share, float | int) and 0 < flag_share < 1):
        raise InvalidParameterError(
            must("flag_share", f"be a float in (0, 1). Got {flag_share!r} instead.")
        )
    if not len(grouped):
        raise InvalidParameterError("A grouped release with no key has no page to show.")
    first = grouped[grouped.keys[0]]
    if not first.offers_intervals:
        raise InvalidParameterError(
            f"A release of mechanism {first.mechanism.name!r} has no standard errors or "
            "intervals, which the report draws; query it instead."
        )
    name = axis_name(first, column)
    title = title or f"treedp grouped release report: {name} by {', '.join(grouped.by) or '-'}"
    figure = _plot(grouped, level, rng, name)  # first: the simulations draw from rng in order
    warn = f'<p class="warning" role="note">{escape(SEEDED_WARNING)}</p>' if grouped.seeded else ""
    header = (
        f'<header><h1>{escape(title)}</h1><p class="lede">A differentially private grouped '
        "release made by treedp: one tree per key under one guarantee, stated once below. "
        "Every number on this page is post-processing of that release and costs no further "
        f"privacy.</p>{warn}</header>"
    )
    sections = [
        ("released", "released", "What was released", _facts(_released_rows(grouped, name))),
        ("guarantee", "guarantee", "Privacy guarantee", _facts(grouped_guarantee_rows(grouped))),
        ("plots", "plots", "The distributions", figure),
        (
            "quantiles",
            "quantiles",
            "Quartiles per key",
            _quantile_table(grouped, level, rng, flag_share),
        ),
        ("expected-error", "error", "Expected error per key", _error_table(grouped, flag_share)),
        ("reading", "reading", "How to read this page", f"<p>{CLIPPED}</p>"),
    ]
    return page_document(title, header, sections, first.library_version)


def render_key_report(
    grouped: GroupedRelease, key: Any, *, column: str | None = None, **options: Any
) -> str:
    """The page of one key of a grouped release: the grouped guarantee first, then the key's
    tree, labelled as a part of it (:func:`treedp.report.html.render_report`)."""
    release = grouped[key]
    by = ", ".join(grouped.by)
    shown = f"{by} = {key_text(key)}" if by else f"all records, privacy unit {grouped.unit}"
    options.setdefault("title", f"treedp release report: {shown}")
    what = f"one tree per key of {by}; this page: {shown}" if by else f"one tree: {shown}"
    rows: Sequence[tuple[str, str]] = [
        ("Grouped release", what),
        *grouped_guarantee_rows(grouped),
    ]
    return render_report(release, grouped=rows, column=column, **options)
