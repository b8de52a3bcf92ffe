"""Reading group-by keys and text columns for ``treedp release --by`` and ``treedp query``."""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError, MissingDependencyError

__all__ = ["query_grouped", "read_keys", "read_text_column"]


def read_keys(path: str, n_by: int) -> list[Any]:
    """Public keys from a text file: one per line; comma-separated fields for several ``by``."""
    p = Path(path)
    if not p.is_file():
        raise InvalidParameterError(f"The keys file '{p}' does not exist.")
    lines = [line.rstrip("\n\r") for line in p.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line.strip()]
    if n_by <= 1:
        return lines
    return [tuple(field.strip() for field in line.split(",")) for line in lines]


def read_text_column(path: str, column: str) -> np.ndarray:
    """``column`` of a CSV or Parquet file as text (object array; empty cells are None)."""
    p = Path(path)
    name = p.name.lower()
    if name.endswith((".parquet", ".pq")):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise MissingDependencyError(
                "Reading Parquet needs pyarrow: install treedp[parquet] (pip install pyarrow)."
            ) from None
        if column not in pq.read_schema(p).names:
            raise InvalidParameterError(f"The column '{column}' is not in '{p}'.")
        values = pq.read_table(p, columns=[column]).column(column).to_pylist()
        return np.array([None if v is None else str(v) for v in values], dtype=object)
    opener: Any = gzip.open if name.endswith(".gz") else open
    with opener(p, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, [])
        if column not in header:
            raise InvalidParameterError(f"The column '{column}' is not in '{p}'.")
        idx = header.index(column)
        cells = [row[idx] if idx < len(row) else "" for row in reader]
    return np.array([c if c.strip() else None for c in cells], dtype=object)


def _answers(release: Any, args: argparse.Namespace, grouped: Any, key: Any) -> list[Any]:
    """``(query, argument, value)`` rows of one key, for every query asked."""
    from treedp.cli._common import points

    rows: list[Any] = []
    if args.cdf:
        values = np.atleast_1d(release.cdf(points(args.cdf)))
        rows += [("cdf", raw, v) for raw, v in zip(args.cdf, values, strict=True)]
    for pair in args.range or []:
        a, b = points(pair)
        rows.append(("range_count", f"[{pair[0]}, {pair[1]})", release.range_count(a, b)))
    qs_text = list(args.quantiles or []) + (["0.5"] if getattr(args, "median", False) else [])
    if qs_text:
        try:
            qs = np.asarray([float(q) for q in qs_text])
        except ValueError:
            raise InvalidParameterError("--quantiles takes numbers in [0, 1].") from None
        values = np.atleast_1d(grouped.quantile(qs)[key])
        rows += [("quantile", f"{q:g}", v) for q, v in zip(qs, values, strict=True)]
    if args.histogram:
        counts, edges = release.histogram()
        rows += [
            ("histogram", f"[{lo}, {hi})", c)
            for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True)
        ]
    return rows or [("n", "", release.n)]


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if value != value else round(value, 6)
    return str(value) if not isinstance(value, int | str) else value


def query_grouped(args: argparse.Namespace) -> None:
    """``treedp query`` on a grouped release: one key (``--key``) or all, as CSV or JSON."""
    from treedp.release.grouped import load_grouped_release

    grouped = load_grouped_release(args.release)
    if args.info:
        for name, value in grouped.metadata().items():
            print(f"{name}: {value}")
        print(f"keys: {len(grouped)}; seeded: {grouped.seeded}")
        return
    keys = list(grouped.keys)
    if args.key is not None:
        wanted: Any = args.key
        if len(grouped.by) > 1:
            wanted = tuple(field.strip() for field in args.key.split(","))
        if wanted not in grouped:
            raise InvalidParameterError(f"The key {args.key!r} is not one of the released keys.")
        keys = [wanted]
    rows = []
    for key in keys:
        parts = key if isinstance(key, tuple) else (key,)
        for query, arg, value in _answers(grouped[key], args, grouped, key):
            rows.append([*parts, query, arg, _plain(value)])
    header = [*grouped.by, "query", "argument", "value"]
    if args.format == "json":
        out = {
            "seeded": grouped.seeded,
            "guarantee": grouped.metadata()["guarantee"],
            "unit": grouped.unit,
            "rows": [dict(zip(header, row, strict=True)) for row in rows],
        }
        print(json.dumps(out))
        return
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    if grouped.seeded:
        print("# SEEDED: not for publication")
