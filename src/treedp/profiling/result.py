"""What :func:`treedp.profile` returns: column name → :class:`~treedp.release.Release`.

Everything here is post-processing of the released columns (free): the tidy summary
(:meth:`TableProfile.to_frame`, ``to_records``, ``to_json``, ``to_csv``) and the HTML page
(:meth:`TableProfile.write_report`, drawn by :mod:`treedp.report.profile`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treedp.noise import RandomSource
from treedp.privacy.spend import SpendRecord
from treedp.release import Release

__all__ = ["QUARTILES", "TableProfile"]

#: The quantiles of the summary (default).
QUARTILES = (0.25, 0.5, 0.75)


def _plain(x: Any) -> Any:
    """A number or datetime as JSON/CSV writes it."""
    if isinstance(x, np.datetime64):
        return str(x)
    if isinstance(x, np.generic):
        return x.item()
    return x


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
        ``lower_bound`` / ``upper_bound`` (the bins' range: public or private bounds), and
        ``q<level>`` per quantile with a ``level`` confidence interval
        (:meth:`Release.quantile_interval`).
        """
        rows: list[dict[str, Any]] = []
        qs = np.asarray(quantiles, dtype=np.float64)
        for name, rel in self.releases.items():
            base = {"column": name, "kind": self.kinds[name], "epsilon": self.shares[name]}
            n_low, n_high = rel.confidence_interval("cdf", rel.edges[-1], level=level)
            rows.append({**base, "statistic": "n", "estimate": rel.n, "low": n_low, "high": n_high})
            edges = rel.edges  # in the column's time zone for tz-aware datetimes
            hi = edges[-1] - 1 if rel.bins.discrete and not rel.bins.is_datetime else edges[-1]
            for stat, value in (("lower_bound", edges[0]), ("upper_bound", hi)):
                rows.append(
                    {**base, "statistic": stat, "estimate": value, "low": None, "high": None}
                )
            est = np.atleast_1d(rel.quantile(qs))
            low, high = rel.quantile_interval(qs, level=level, rng=rng)
            for i, q in enumerate(qs):
                rows.append(
                    {
                        **base,
                        "statistic": f"q{q:g}",
                        "estimate": est[i],
                        "low": np.atleast_1d(low)[i],
                        "high": np.atleast_1d(high)[i],
                    }
                )
        return [{k: _plain(v) for k, v in row.items()} for row in rows]

    def to_frame(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> Any:
        """The tidy summary (:meth:`to_records`) as a pandas DataFrame (needs pandas)."""
        from treedp.exceptions import MissingDependencyError

        try:
            import pandas as pd
        except ImportError:  # pragma: no cover - pandas is in the test environment
            raise MissingDependencyError("to_frame needs pandas: pip install pandas") from None
        return pd.DataFrame(self.to_records(quantiles, **options))

    def to_json(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> str:
        """The guarantee, the budget split and the tidy summary, as a JSON document."""
        doc = {
            "format": "treedp.profile",
            "guarantee": f"pure {self.epsilon:g}-DP (add_remove neighbours, one row)",
            "epsilon": self.epsilon,
            "epsilon_per_column": self.shares,
            "skipped": self.skipped,
            "summary": self.to_records(quantiles, **options),
        }
        return json.dumps(doc, indent=2)

    def to_csv(self, quantiles: Sequence[float] = QUARTILES, **options: Any) -> str:
        """The tidy summary as CSV text (a header row, then one row per statistic)."""
        rows = self.to_records(quantiles, **options)
        out = io.StringIO()
        fields = ["column", "kind", "epsilon", "statistic", "estimate", "low", "high"]
        writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
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
