"""``treedp release --by / --privacy-unit`` and ``treedp query`` on grouped releases.

``treedp release`` with ``--by`` or ``--privacy-unit`` streams every file form the ungrouped
command takes (a file, several files, a directory, a glob; CSV, Parquet, Arrow) through the
grouped files engine (:mod:`treedp.engines.files.grouped`: bounded memory; with a privacy unit,
a two-pass spill by person id). Keys from ``--keys`` are text: for Parquet and Arrow inputs they
are converted to the type of their ``by`` column (read from the schema, no values); CSV key
columns are text. The budget is ``--epsilon`` (Laplace), ``--rho`` or ``--epsilon --delta``
(Gaussian, public keys). ``treedp release`` builds the one query of both (``cli/release.py``);
this module runs it and says what was written.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

import treedp

__all__ = [
    "grouped_info",
    "pick_key",
    "query_grouped",
    "read_keys",
    "release_of",
    "wrote_grouped",
]


def read_keys(path: str, n_by: int) -> list[Any]:
    """Public keys from a text file: one per line; comma-separated fields for several ``by``."""
    p = Path(path)
    if not p.is_file():
        raise treedp.InvalidParameterError(f"The keys file '{p}' does not exist.")
    lines = [line.rstrip("\n\r") for line in p.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line.strip()]
    if n_by <= 1:
        return lines
    return [tuple(field.strip() for field in line.split(",")) for line in lines]


def release_of(args: argparse.Namespace, query: Any, ledger: Any) -> Any:
    """:func:`treedp.run_query`; when private key selection keeps no key, the message says
    that the budget was spent (and charged to ``--ledger``): the selection's noise was drawn
    after the charge, so the refusal is not free."""
    try:
        return treedp.run_query(query)
    except treedp.DataError as exc:
        if not str(exc).startswith("Private key selection kept no key"):
            raise
        where = f"charged to --ledger {args.ledger}" if ledger is not None else "spent"
        target = f"--epsilon {args.epsilon:g}, --selection-delta {args.selection_delta:g}"
        raise treedp.DataError(
            "Private key selection kept no key, so no release was written, but the budget was "
            f"{where} ({target}): the selection's noise was drawn. Give the public --keys "
            "FILE, or a larger --epsilon."
        ) from None


def wrote_grouped(args: argparse.Namespace, grouped: Any) -> str:
    """The line that says what a grouped release (or a per-person one, without ``--by``)
    holds and guarantees."""
    from treedp.cli._common import SEEDED
    from treedp.cli._describe import approx_reading, guarantee_text

    per_key = isinstance(grouped, treedp.GroupedRelease)
    return (
        f"wrote {args.out}: "
        + (f"{len(grouped)} groups by {', '.join(grouped.by)}, " if per_key else "")
        + f"{guarantee_text(grouped.guarantee)}"
        + approx_reading(grouped.guarantee, args.delta)
        + f" for unit {grouped.unit if per_key else grouped.unit.label} "
        f"({grouped.neighbours}){SEEDED if grouped.seeded else ''}"
    )


def _answers(
    release: Any, args: argparse.Namespace, grouped: Any, key: Any, level: float | None
) -> list[Any]:
    """``(query, argument, value, stderr, low, high)`` rows of one key, for every query asked;
    with ``level`` (``--ci``) the key's own standard errors and intervals (its
    :class:`~treedp.Release` has them), else the last three are None."""
    from treedp.cli._common import points

    ci = level is not None
    rows: list[Any] = []
    if args.cdf:
        xs = points(args.cdf, "--cdf")
        values = np.atleast_1d(release.cdf(xs))
        if ci:
            se = np.atleast_1d(release.stderr("cdf", xs))
            lows, highs = (
                np.atleast_1d(v) for v in release.confidence_interval("cdf", xs, level=level)
            )
        for i, raw in enumerate(args.cdf):
            extra = (se[i], lows[i], highs[i]) if ci else (None, None, None)
            rows.append(("cdf", raw, values[i], *extra))
    for pair in args.range or []:
        a, b = points(pair, "--range")
        extra = (None, None, None)
        if ci:
            low, high = release.confidence_interval("range_count", a, b, level=level)
            extra = (release.stderr("range_count", a, b), low, high)
        rows.append(("range_count", f"[{pair[0]}, {pair[1]})", release.range_count(a, b), *extra))
    qs_text = list(args.quantiles or []) + (["0.5"] if getattr(args, "median", False) else [])
    if qs_text:
        from treedp.cli._common import probabilities

        qs = probabilities(qs_text)
        values = np.atleast_1d(grouped.quantile(qs)[key])
        if ci:
            lows, highs = (np.atleast_1d(v) for v in release.quantile_interval(qs, level=level))
        for i, q in enumerate(qs):
            extra = (None, lows[i], highs[i]) if ci else (None, None, None)
            rows.append(("quantile", f"{q:g}", values[i], *extra))
    if args.histogram:
        counts, edges = release.histogram()
        if ci:
            table = release.to_arrays(level=level)
            se = np.atleast_1d(release.stderr("range_count", table["left"], table["right"]))
        for i, (lo, hi, c) in enumerate(zip(edges[:-1], edges[1:], counts, strict=True)):
            extra = (se[i], table["count_low"][i], table["count_high"][i]) if ci else (None,) * 3
            rows.append(("histogram", f"[{lo}, {hi})", c, *extra))
    if not rows:  # the estimated number of records of the key
        extra = (None, None, None)
        if ci:
            lo, hi = release.edges[0], release.edges[-1]
            low, high = release.confidence_interval("range_count", lo, hi, level=level)
            extra = (release.stderr("range_count", lo, hi), low, high)
        rows.append(("n", "", release.n, *extra))
    return rows


def _text_line(
    label: str, query: str, arg: str, values: list[Any], ci: bool, level: float | None
) -> str:
    """One answer for people: counts with one decimal, quantile values to 6 digits."""
    from treedp.cli._common import fmt, fmt_count

    show = fmt if query == "quantile" else fmt_count
    name = {"range_count": "range"}.get(query, query)
    text = (
        f"{label}: {name}({arg}) = {show(values[0])}"
        if arg
        else f"{label}: {name} = {show(values[0])}"
    )
    if ci:
        se, low, high = values[1:4]
        spread = f"se {fmt(se)}, " if se is not None else ""
        text += f" ({spread}{level:g} interval [{show(low)}, {show(high)}])"
    return text


def _plain(value: Any) -> Any:
    """A CSV/JSON cell: counts and values to 1e-6 at any size (not 6 significant digits)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return None if value != value else round(value, 6)
    if value is None:
        return None
    return str(value) if not isinstance(value, int | str) else value


def grouped_info(grouped: Any) -> dict[str, str]:
    """What a grouped release holds, in words and the command line's option names."""
    from treedp.cli._describe import guarantee_text, info

    bounds = grouped.bounds.describe()
    limits = [
        f"{option} {bounds[name]}"
        for name, option in (
            ("max_contributions", "--max-contributions"),
            ("max_groups", "--max-groups"),
            ("max_contributions_per_group", "--max-contributions-per-group"),
        )
        if bounds.get(name) is not None
    ]
    unit = grouped.bounds.unit
    selection = grouped.selection
    if selection is None:
        chosen = "public (--keys)" if grouped.by else "no --by: one group of all records"
    else:
        chosen = (
            f"selected privately (epsilon={float(selection['epsilon']):.6g}, "
            f"delta={float(selection['delta']):.3g}, --max-groups {selection['max_groups']})"
        )
    details = {
        "by": ", ".join(grouped.by) or "- (one group)",
        "guarantee": f"{guarantee_text(grouped.guarantee)} for the whole release "
        f"({grouped.neighbours.replace('_', '/')} neighbours)",
        **(
            {
                "target": f"{guarantee_text(grouped.approx_target)} (asked for; the rho above "
                "implies it by the tight conversion)"
            }
            if grouped.approx_target is not None
            else {}
        ),
        "privacy unit": "one row is one person"
        if unit is None
        else f"a person (--privacy-unit {unit})" + (f": {', '.join(limits)}" if limits else ""),
        "keys": f"{len(grouped)}, {chosen}",
    }
    if len(grouped):
        first = info(grouped[grouped.keys[0]])
        details["per key"] = f"{first['mechanism']}, {first['bins']}; noise {first['noise']}"
    details["seeded"] = "yes, not for publication" if grouped.seeded else "no"
    return details


def pick_key(grouped: Any, text: str) -> Any:
    """The released key named by ``--key`` (fields joined by commas for several ``by``)."""
    if not grouped.by:
        raise treedp.InvalidParameterError(
            "--key: this grouped release has no --by (one group of all records); drop --key."
        )
    wanted: Any = text
    if len(grouped.by) > 1:
        wanted = tuple(field.strip() for field in text.split(","))
    if wanted not in grouped:  # keys of numeric columns: matched by their text
        by_text = {
            (tuple(map(str, k)) if isinstance(k, tuple) else str(k)): k for k in grouped.keys
        }
        wanted = by_text.get(wanted, wanted)
    if wanted not in grouped:
        raise treedp.InvalidParameterError(f"The key {text!r} is not one of the released keys.")
    return wanted


def query_grouped(args: argparse.Namespace) -> None:
    """``treedp query`` on a grouped release: one key (``--key``) or all, as CSV or JSON."""
    from treedp.cli._common import UsageError, level_of

    level = level_of(args) if args.ci else None
    grouped = treedp.load_grouped_release(args.release)
    if args.info:
        asked = args.cdf or args.range or args.quantiles or args.median or args.histogram
        if asked or args.key is not None or args.ci:
            raise UsageError(
                "--info describes the whole grouped release: give it without queries, --key "
                "or --ci (and query the keys in a second call)"
            )
        details = grouped_info(grouped)
        if args.format == "json":
            print(json.dumps({"info": details}))
            return
        width = max(map(len, details))
        for name, value in details.items():
            print(f"{name + ':':<{width + 1}} {value}")
        return
    keys = list(grouped.keys) if args.key is None else [pick_key(grouped, args.key)]
    if args.ci and keys and not grouped[keys[0]].offers_intervals:
        raise UsageError(
            f"--ci: a release made with --mechanism {grouped[keys[0]].mechanism.name} has no "
            "standard errors or intervals; query without --ci"
        )
    rows = []
    lines = []  # --format text: one line per answer, counts with one decimal
    for key in keys:
        parts = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{b}={p}" for b, p in zip(grouped.by, parts, strict=False)) or "all"
        for query, arg, *values in _answers(grouped[key], args, grouped, key, level):
            cells = [_plain(v) for v in (values if args.ci else values[:1])]
            rows.append([*parts, query, arg, *cells])
            lines.append(_text_line(label, query, arg, values, args.ci, level))
    header = [*grouped.by, "query", "argument", "value"] + (
        ["stderr", "low", "high"] if args.ci else []
    )
    if args.format == "json":
        out = {
            "seeded": grouped.seeded,
            "guarantee": grouped.metadata()["guarantee"],
            "unit": grouped.unit,
            **({"level": level} if args.ci else {}),
            "rows": [dict(zip(header, row, strict=True)) for row in rows],
        }
        print(json.dumps(out))
        return
    if args.format == "text":
        for line in lines:
            print(line)
        if grouped.seeded:
            print("[SEEDED: not for publication]")
        return
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    if args.ci:
        print(f"# {level:g} intervals; count intervals include within-bin uncertainty")
    if grouped.seeded:
        print("# SEEDED: not for publication")
