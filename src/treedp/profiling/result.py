"""What :func:`treedp.profile` returns: column name → :class:`~treedp.release.Release`.

Everything here is post-processing of the released columns (free): the tidy summary
(:meth:`TableProfile.to_frame`, ``to_records``, ``to_json``, ``to_csv``) and the HTML page
(:meth:`TableProfile.write_report`, drawn by :mod:`treedp.report.profile`).
"""

from __future__ import annotations

import csv
import datetime
import html
import io
import json
import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._frames import pandas_frame, pandas_module, polars_frame, polars_module
from treedp.noise import RandomSource
from treedp.privacy.spend import SpendRecord
from treedp.release import Release

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["QUARTILES", "TableProfile"]

#: The columns of the tidy summary (:meth:`TableProfile.to_records`, ``to_frame``, ``to_csv``).
SUMMARY_COLUMNS = ("column", "kind", "epsilon", "statistic", "estimate", "low", "high")
#: The notebook display lists at most this many columns.
HTML_COLUMNS = 20

#: The quantiles of the summary (default).
QUARTILES = (0.25, 0.5, 0.75)


def _plain(x: Any) -> Any:
    """A number or datetime as JSON/CSV writes it (a time in a zone as ISO 8601 with its
    offset)."""
    if isinstance(x, np.datetime64):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, datetime.datetime):  # pandas Timestamps of tz-aware columns too
        return x.isoformat()
    return x


def _finite_or_text(x: Any) -> Any:
    """JSON has no infinity: an open interval end (bounds found from the records) is the
    string ``"inf"`` or ``"-inf"``, as the CLI writes it; NaN is null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else str(x)
    return x


def _short(x: Any) -> str:
    """A number with 6 significant digits, a datetime as ISO 8601 (the notebook display)."""
    x = _plain(x)
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _columns(rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The summary's rows as columns :data:`SUMMARY_COLUMNS` (also when there are no rows)."""
    return {name: [row[name] for row in rows] for name in SUMMARY_COLUMNS}


@dataclass(frozen=True)
class TableProfile(Mapping[str, Release]):
    """The releases of a profiled table, one per column, under one budget.

    Attributes
    ----------
    releases : dict of str to Release
        Column → its release (private bounds included in its ``total_guarantee``).
    kinds : dict of str to str
        Column → ``"integer"``, ``"float"`` or ``"datetime"`` (from the schema or ``types=``).
    epsilon : float
        The total pure budget (the one charge).
    shares : dict of str to float
        Column → its share of ``epsilon``; the shares add up to ``epsilon`` (as decimals).
    skipped : dict of str to str
        Columns left out, with the public reason (their schema type).
    record : SpendRecord
        The one record charged for the whole profile.
    """

    releases: dict[str, Release]
    kinds: dict[str, str]
    epsilon: float
    shares: dict[str, float]
    skipped: dict[str, str] = field(default_factory=dict)
    record: SpendRecord | None = None

    def __getitem__(self, name: str) -> Release:
        if name not in self.releases:  # the column names are the table's schema: public
            listed = ", ".join(map(str, self.releases))
            raise KeyError(f"No column {name!r} in the profile. Columns: {listed}.")
        return self.releases[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.releases)

    def __len__(self) -> int:
        return len(self.releases)

    def __repr__(self) -> str:
        return (
            f"TableProfile({len(self)} columns, pure {self.epsilon:g}-DP in total, "
            f"{len(self.skipped)} skipped)"
        )

    def to_records(
        self,
        quantiles: Sequence[float] = QUARTILES,
        *,
        level: float = 0.95,
        rng: RandomSource | None = None,
    ) -> list[dict[str, Any]]:
        """The tidy summary: one row per (column, statistic) with its interval.

        Statistics: ``n`` (the estimated count of non-missing records, with its interval),
        ``lower_bound`` / ``upper_bound`` (the bins' range: public or private bounds; for an
        integer column its first and last integer, on one bin per integer or wider), and
        ``q<level>`` per quantile with a ``level`` confidence interval
        (:meth:`Release.quantile_interval`).
        """
        rows: list[dict[str, Any]] = []
        qs = np.asarray(quantiles, dtype=np.float64)
        for name, rel in self.releases.items():
            base = {"column": name, "kind": self.kinds[name], "epsilon": self.shares[name]}
            n_low, n_high = rel.n_interval(level=level)
            rows.append({**base, "statistic": "n", "estimate": rel.n, "low": n_low, "high": n_high})
            edges = rel.edges  # in the column's time zone for tz-aware datetimes
            integers = self.kinds[name] == "integer" and not rel.bins.is_datetime
            hi = edges[-1] - 1 if integers else edges[-1]  # the last integer the bins hold
            for stat, value in (("lower_bound", edges[0]), ("upper_bound", hi)):
                rows.append(
                    {**base, "statistic": stat, "estimate": value, "low": None, "high": None}
                )
            est = np.atleast_1d(rel.quantile(qs))
            low, high = (np.atleast_1d(v) for v in rel.quantile_interval(qs, level=level, rng=rng))
            for i, q in enumerate(qs):
                ends = {"low": low[i], "high": high[i]}
                if rel.bins.is_datetime:  # an open end (found bounds): "-inf"/"inf", not 1677
                    ends = {"low": "-inf" if low[i] < edges[0] else low[i],
                            "high": "inf" if high[i] > edges[-1] else high[i]}  # fmt: skip
                rows.append({**base, "statistic": f"q{q:g}", "estimate": est[i], **ends})
        return [{k: _plain(v) for k, v in row.items()} for row in rows]

    def to_frame(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> pd.DataFrame:
        """The tidy summary (:meth:`to_records`) as a pandas DataFrame (needs
        ``treedp[pandas]``), columns :data:`SUMMARY_COLUMNS`."""
        pandas_module("TableProfile.to_frame")  # before the intervals are computed
        rows = self.to_records(quantiles, **options)
        return pandas_frame(_columns(rows), "TableProfile.to_frame")

    def to_polars(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> pl.DataFrame:
        """The tidy summary as a polars DataFrame (needs ``treedp[polars]``), the columns of
        :meth:`to_frame`; with datetime and numeric columns together, ``estimate``, ``low``
        and ``high`` hold text (ISO 8601 datetimes beside numbers), as in :meth:`to_csv`."""
        polars_module("TableProfile.to_polars")  # before the intervals are computed
        rows = self.to_records(quantiles, **options)
        columns = _columns(rows)
        for name in ("estimate", "low", "high"):
            kinds = {type(v) for v in columns[name] if v is not None}
            if str in kinds and len(kinds) > 1:  # polars columns hold one type
                columns[name] = [None if v is None else str(v) for v in columns[name]]
        return polars_frame(columns, "TableProfile.to_polars")

    def _repr_html_(self) -> str:
        """Notebook display: the guarantee once, then a line per column (first
        :data:`HTML_COLUMNS`): kind, budget share, estimated count, bounds and median."""
        cells = "".join(f"<th>{h}</th>" for h in ("column", "kind", "ε", "n̂", "range", "median"))
        rows = []
        for name in list(self.releases)[:HTML_COLUMNS]:
            rel = self.releases[name]
            edges = rel.bins.edges_as_values()
            values = [name, self.kinds[name], f"{self.shares[name]:g}", f"{rel.n:.6g}"]
            values += [f"[{_short(edges[0])}, {_short(edges[-1])}]", _short(rel.median())]
            tds = "".join(f"<td>{html.escape(v)}</td>" for v in values)
            rows.append(f"<tr>{tds}</tr>")
        more = len(self) - HTML_COLUMNS
        tail = f"<p>… and {more} more columns.</p>" if more > 0 else ""
        skipped = f"; {len(self.skipped)} skipped" if self.skipped else ""
        return (
            f"<div><strong>TableProfile</strong>: {len(self)} columns, pure "
            f"{self.epsilon:g}-DP in total{html.escape(skipped)}"
            f"<table><tr>{cells}</tr>{''.join(rows)}</table>{tail}"
            "<small>Quantiles with intervals: <code>.to_frame()</code>; a column: "
            "<code>profile[name]</code>.</small></div>"
        )

    def to_json(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> str:
        """The guarantee, the budget split and the tidy summary, as a JSON document."""
        doc = {
            "format": "treedp.profile",
            "guarantee": f"pure {self.epsilon:g}-DP (add_remove neighbours, one row)",
            "epsilon": self.epsilon,
            "epsilon_per_column": self.shares,
            "skipped": self.skipped,
            "summary": [
                {k: _finite_or_text(v) for k, v in row.items()}
                for row in self.to_records(quantiles, **options)
            ],
        }
        return json.dumps(doc, indent=2)

    def to_csv(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> str:
        """The tidy summary as CSV text (a header row, then one row per statistic)."""
        rows = self.to_records(quantiles, **options)
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=SUMMARY_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()

    def write_summary(self, path: str | os.PathLike[str], **options: Any) -> None:
        """Write the summary atomically: JSON for a path ending in ``.json``, else CSV."""
        from treedp._atomic import atomic_write_text

        is_json = os.fspath(path).lower().endswith(".json")
        text = self.to_json(**options) if is_json else self.to_csv(**options)
        atomic_write_text(path, text)

    def write_report(self, path: str | os.PathLike[str], **options: Any) -> None:
        """Write one self-contained HTML page, a section per column (needs ``treedp[plot]``)."""
        from treedp.report.profile import write_profile_report

        write_profile_report(self, path, **options)
