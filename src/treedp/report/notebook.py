"""The notebook displays (``_repr_html_``) of a release and of a grouped release."""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from treedp.report.grouped import grouped_guarantee_rows, low_signal
from treedp.report.html import SEEDED_WARNING, _fmt, _fmt_count
from treedp.report.plot import figure_svg, key_text, plot_release

if TYPE_CHECKING:
    from treedp.release import Release
    from treedp.release.grouped import GroupedRelease

__all__ = ["grouped_html", "summary_html"]


def summary_html(release: Release) -> str:
    """A compact HTML summary with a small CDF figure and the fast Bonferroni band (for
    ``Release._repr_html_``); without matplotlib it says why there is no figure."""
    g = release.guarantee.describe()
    unit = "one record" if release.unit is None else f"one person ({release.unit.label})"
    rows = [
        ("mechanism", release.mechanism.name),
        ("guarantee", f"{g}, {release.neighbours} neighbours, unit: {unit}"),
        (
            "bins",
            f"{release.bins.n_bins} over [{_fmt(release.edges[0])}, {_fmt(release.edges[-1])}]",
        ),
        ("n" if release.mechanism.neighbours == "replace" else "n̂", _fmt_count(release.n)),
        ("median", _fmt(release.median())),
    ]
    if release.branching:
        rows.insert(2, ("tree", " × ".join(map(str, release.branching))))
    table = "".join(
        f'<tr><th style="text-align:left;padding-right:1em">{escape(k)}</th>'
        f'<td style="text-align:left">{escape(v)}</td></tr>'
        for k, v in rows
    )
    warn = (
        f'<p style="color:#b00020;font-weight:600">{escape(SEEDED_WARNING)}</p>'
        if release.seeded
        else ""
    )
    try:
        fig, _ = plot_release(
            release, kind="cdf", band_method="bonferroni", max_points=128, figsize=(4.0, 2.6)
        )
        fig.axes[0].legend(fontsize="xx-small")
        svg = figure_svg(
            fig,
            title="Estimated CDF with a 95% simultaneous band",
            description=f"Estimated CDF of {release.bins.n_bins} bins; median "
            f"{_fmt(release.median())}.",
            ident=f"treedp-{id(release):x}",
        )
        figure = f'<div style="max-width:26rem">{svg}</div>'
    except ImportError:
        figure = "<p><em>Install treedp[plot] (matplotlib) for a CDF figure.</em></p>"
    return (
        '<div class="treedp-release" style="display:flex;flex-wrap:wrap;gap:1em;'
        'align-items:flex-start">'
        f"<div><strong>treedp Release</strong>{warn}<table>{table}</table></div>{figure}</div>"
    )


def grouped_html(grouped: GroupedRelease) -> str:
    """The guarantee once (for the privacy unit), then a compact line per key (the first 20),
    with the keys that carry too little signal marked (:func:`treedp.report.grouped.low_signal`)."""
    facts = dict(grouped_guarantee_rows(grouped))
    said = f"{facts['Guarantee']}; privacy unit: {facts['Privacy unit']}"
    rows = []
    for i, (key, release) in enumerate(grouped.items()):
        if i == 20:
            rows.append(f"<tr><td colspan=4>… {len(grouped.keys) - 20} more keys</td></tr>")
            break
        median = release.median()
        shown = "—" if isinstance(median, float) and median != median else _fmt(median)
        flag = "too little signal" if low_signal(release) else ""
        rows.append(
            f"<tr><td>{escape(key_text(key))}</td><td>{_fmt_count(release.n)}</td>"
            f"<td>{escape(shown)}</td><td>{flag}</td></tr>"
        )
    warn = (
        f'<p style="color:#b00020;font-weight:600">{escape(SEEDED_WARNING)}</p>'
        if grouped.seeded
        else ""
    )
    return (
        f"<div><p><strong>treedp GroupedRelease</strong> by {escape(', '.join(grouped.by))}: "
        f"{escape(said)}</p>{warn}<table><tr><th>key</th><th>n̂</th><th>median</th>"
        f"<th>signal</th></tr>{''.join(rows)}</table></div>"
    )
