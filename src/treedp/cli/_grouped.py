"""``treedp release --by / --privacy-unit`` and ``treedp query`` on grouped releases.

``treedp release`` with ``--by`` or ``--privacy-unit`` streams every file form the ungrouped
command takes (a file, several files, a directory, a glob; CSV, Parquet, Arrow) through the
grouped files engine (:mod:`treedp.engines.grouped_files`: bounded memory; with a privacy unit,
a two-pass spill by person id). Keys from ``--keys`` are text: for Parquet and Arrow inputs they
are converted to the type of their ``by`` column (read from the schema, no values); CSV key
columns are text. The budget is ``--epsilon`` (Laplace), ``--rho`` or ``--epsilon --delta``
(Gaussian, public keys); ``--ledger`` is charged before any value is read.
"""

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

__all__ = ["query_grouped", "read_keys", "read_text_column", "run_grouped", "typed_keys"]


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


def typed_keys(keys: list[Any], source: Any, by: list[str]) -> list[Any]:
    """Text keys converted to the types of the ``by`` columns of a Parquet / Arrow input (its
    schema only is read); CSV inputs keep text keys."""
    from treedp.engines.grouped_files import _Input

    inp = _Input(source)
    if inp.dataset is None:
        return keys
    import pyarrow as pa

    def convert(text: Any, name: str) -> Any:
        if name not in inp.names:
            return text  # the release reports the unknown column
        t = inp.dataset.schema.field(name).type
        if pa.types.is_dictionary(t):
            t = t.value_type
        try:
            if pa.types.is_integer(t):
                return int(text)
            if pa.types.is_floating(t):
                return float(text)
            if pa.types.is_boolean(t):
                return {"true": True, "false": False}[str(text).strip().lower()]
        except (ValueError, KeyError):
            raise InvalidParameterError(
                f"A key in --keys is not a value of the column '{name}' (type {t})."
            ) from None
        return text

    if len(by) == 1:
        return [convert(k, by[0]) for k in keys]
    return [tuple(convert(v, n) for v, n in zip(k, by, strict=False)) for k in keys]


def run_grouped(args: argparse.Namespace) -> None:
    """Run ``treedp release`` with ``--by`` and/or ``--privacy-unit`` (any file form)."""
    import treedp
    from treedp.cli._common import SEEDED, points
    from treedp.cli.budget import ledger_from_args, remaining_line
    from treedp.cli.plan import budget_from
    from treedp.cli.quantiles import bounds_arg
    from treedp.engines.files import FileSource

    delimiter = args.delimiter
    if delimiter is not None and delimiter in ("\\t", "tab"):
        delimiter = "\t"
    source = FileSource(
        args.input[0] if len(args.input) == 1 else list(args.input),
        delimiter=delimiter,
        encoding=args.encoding,
    )
    by = list(args.by or [])
    keys = read_keys(args.keys, len(by)) if args.keys else None
    if keys is not None and by:
        keys = typed_keys(keys, source, by)
    rng = (
        treedp.InsecureSeededSource(args.insecure_seed) if args.insecure_seed is not None else None
    )
    branching: Any = args.branching
    if branching is not None and len(branching) == 1:
        branching = branching[0]
    ledger = ledger_from_args(args)
    try:
        grouped = treedp.release_grouped(
            source,
            **budget_from(args),
            column=args.column,
            by=by or None,
            keys=keys,
            privacy_unit=args.privacy_unit,
            max_contributions=args.max_contributions,
            max_groups=args.max_groups,
            max_contributions_per_group=args.max_contributions_per_group,
            delta=args.selection_delta,
            neighbours=args.neighbours,
            nan=args.nan,
            rng=rng,
            accountant=ledger,
            bounds=bounds_arg(args.bounds),
            bins=args.bins,
            edges=points(args.edges) if args.edges else None,
            mechanism=args.mechanism,
            branching=branching,
            level_budgets=args.level_budgets,
            estimator=args.estimator,
            postprocess=args.postprocess,
            integer=args.integer,
        )
        grouped.save(args.out)
        warning = SEEDED if grouped.seeded else ""
        print(
            f"wrote {args.out}: {len(grouped)} groups by {', '.join(grouped.by) or '-'}, "
            f"{grouped.guarantee} for unit {grouped.unit} ({grouped.neighbours}){warning}"
        )
        if ledger is not None:
            print(remaining_line(ledger))
    finally:
        if ledger is not None:
            ledger.close()


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
        if wanted not in grouped:  # keys of numeric columns: matched by their text
            by_text = {
                (tuple(map(str, k)) if isinstance(k, tuple) else str(k)): k for k in grouped.keys
            }
            wanted = by_text.get(wanted, wanted)
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
