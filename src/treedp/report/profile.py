"""A profiled table (:func:`treedp.profile`) as one self-contained HTML page.

The page states the guarantee of the whole profile (one budget, its split), then has a
summary table and one section per column, built from the same pieces as a release's report
(:mod:`treedp.report.html`): what was released, the guarantee of the column's share, the CDF
and histogram figures, the quantiles with their intervals. All post-processing.
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
from treedp.noise import RandomSource
from treedp.report.html import (
    _CSS,
    CLIPPED,
    SEEDED_WARNING,
    _facts,
    _figure,
    _fmt,
    _fmt_count,
    _guarantee_rows,
    _quantile_rows,
    _release_rows,
    _table,
)
from treedp.report.plot import require_matplotlib

if TYPE_CHECKING:
    from treedp.profiling.result import TableProfile
    from treedp.release import Release

__all__ = ["render_profile_report", "write_profile_report"]


_PART = "This column's share: a part of the profile's guarantee"


def _slug(name: str, i: int) -> str:
    return f"col{i}-" + re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:40]


def _column_section(
    name: str,
    i: int,
    release: Release,
    share: float,
    level: float,
    qs: np.ndarray,
    rng: RandomSource | None,
) -> str:
    pct = f"{level:.0%}"
    slug = _slug(name, i)
    edges = release.bins.edges_as_values()
    hi = edges[-1]
    span = f"{_fmt(edges[0])} to {_fmt(hi)}"
    figures = "".join(
        _figure(release, kind, f"{slug}-{kind}", level, qs, rng, caption, text, xlabel=name)
        for kind, caption, text in (
            (
                "cdf",
                f"{name}: estimated CDF with its {pct} simultaneous band",
                f"Share of values of {name} at or below x, for x from {span}.",
            ),
            (
                "histogram",
                f"{name}: estimated density with {pct} intervals",
                f"Density per unit of {name} from {span}; pointwise {pct} intervals.",
            ),
        )
    )
    quantiles = _table(
        f"{name}: estimated quantiles with {pct} confidence intervals",
        ["q", "estimate", f"{pct} low", f"{pct} high"],
        _quantile_rows(release, qs, level, rng),
    )
    part = " for this column: a part of the profile's guarantee above, not a guarantee of its own"
    rows = [
        ("Share of the budget", f"epsilon = {share:g} (a part of the profile's total)"),
        *((k, v + part if k == "Guarantee" else v) for k, v in _guarantee_rows(release)),
    ]
    step = release.bounds_step
    bounds = "private (found with part of this share)" if step is not None else "public (given)"
    rows.append(("Bounds", bounds))
    warning = release.bounds_warning()
    note = f'<p class="warning" role="note">Warning: {escape(warning)}</p>' if warning else ""
    return (
        f'<section id="{slug}" aria-labelledby="h-{slug}"><h2 id="h-{slug}">'
        f"Column {escape(name)}</h2>{note}{_facts(_release_rows(release, name))}"
        f"<h3>{escape(_PART)}</h3>{_facts(rows)}"
        f"{figures}{quantiles}</section>"
    )


def render_profile_report(
    profile: TableProfile,
    *,
    title: str | None = None,
    level: float = 0.95,
    quantiles: Sequence[float] = (0.05, 0.25, 0.5, 0.75, 0.95),
    rng: RandomSource | None = None,
) -> str:
    """The profile as one self-contained HTML page (a string); needs ``treedp[plot]``. Each
    distinct warning of a column's reading is emitted once, named by its column."""
    with each_warning_once():
        return _render_profile(profile, title, level, quantiles, rng)


def _render_profile(
    profile: TableProfile,
    title: str | None,
    level: float,
    quantiles: Sequence[float],
    rng: RandomSource | None,
) -> str:
    require_matplotlib()
    level = check_level(level)
    qs = np.asarray(quantiles, dtype=np.float64)
    title = title or "treedp table profile"
    names = list(profile)
    seeded = any(profile[c].seeded for c in names)
    lede = (
        f'<p class="lede">{len(names)} columns released by treedp under one budget: pure '
        f"epsilon = {profile.epsilon:g} in total (add/remove neighbours, one row is one "
        "person), split equally over the columns and charged once. Every number on this page "
        "is post-processing of those releases and costs no further privacy. The guarantee "
        f'stated per column below is that column\'s part of this one.</p><p class="note">{CLIPPED}'
        "</p>"
    )
    warn = f'<p class="warning" role="note">{escape(SEEDED_WARNING)}</p>' if seeded else ""
    summary_rows = []
    for name in names:
        rel = profile[name]
        with each_warning_once(f"Column '{name}': "):
            q = np.atleast_1d(rel.quantile(np.array([0.25, 0.5, 0.75])))
        summary_rows.append(
            [name, profile.kinds[name], f"{profile.shares[name]:g}", _fmt_count(rel.n)]
            + [_fmt(v) for v in q]
        )
    summary = _table(
        "Summary: estimated count and quartiles per column",
        ["column", "type", "epsilon", "n̂", "q 0.25", "median", "q 0.75"],
        summary_rows,
    )
    skipped = ""
    if profile.skipped:
        skipped = _facts([(k, v) for k, v in profile.skipped.items()])
        skipped = f"<h3>Columns not profiled</h3>{skipped}"
    sections = ""
    for i, name in enumerate(names):
        with each_warning_once(f"Column '{name}': "):
            sections += _column_section(
                name, i, profile[name], profile.shares[name], level, qs, rng
            )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body><main>"
        f"<header><h1>{escape(title)}</h1>{lede}{warn}</header>"
        f'<section id="summary" aria-labelledby="h-summary"><h2 id="h-summary">Summary</h2>'
        f"{summary}{skipped}</section>{sections}</main><footer>Generated by treedp. This file "
        "is self-contained: it loads nothing and runs no script.</footer></body></html>\n"
    )


def write_profile_report(
    profile: TableProfile, path: str | os.PathLike[str], **options: Any
) -> None:
    """Write :func:`render_profile_report` to ``path`` atomically, mode 0644."""
    data = render_profile_report(profile, **options).encode("utf-8")

    def write(handle: IO[bytes]) -> None:
        os.fchmod(handle.fileno(), 0o644)
        handle.write(data)

    try:
        atomic_write(path, write)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
