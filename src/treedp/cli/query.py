"""``treedp query``: answer queries from a saved release.

Any number of queries of any types in one call (``--cdf``, ``--range``, ``--quantiles``,
``--median``, ``--histogram``, ``--info``), all answered from one loaded release (its estimate
is computed once and every answer reads it). ``--ci`` adds standard errors and intervals at
``--level``; ``--format`` writes text, JSON or CSV. Every answer of a seeded release is marked.
A grouped release (``--by``, ``--privacy-unit``) is answered per key (``--key``: one), as CSV
rows by default.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from typing import Any

import numpy as np

import treedp
from treedp.cli._common import (
    SEEDED,
    UsageError,
    fmt,
    fmt_count,
    level_of,
    number_or_text,
    probabilities,
)
from treedp.cli._describe import info, plain
from treedp.cli._grouped import grouped_info, pick_key
from treedp.cli._output import bare, jsonable, warn_seeded, with_no_answer

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``query`` subcommand to the parser's subcommands."""
    qry = sub.add_parser(
        "query",
        help="answer queries from a saved release",
        description="Answer any number of queries from a saved release; every answer is "
        "post-processing and costs no privacy. Negative numbers may be written in any "
        "notation (-3, -1e3, -.5).",
    )
    qry.add_argument("release", help="a release file written by 'treedp release'")
    qry.add_argument("--cdf", nargs="+", metavar="X", help="count of values <= X (each X)")
    qry.add_argument(
        "--range",
        nargs=2,
        action="append",
        metavar=("A", "B"),
        help="count of values in [A, B) (repeat for several ranges)",
    )
    qry.add_argument("--quantiles", nargs="+", metavar="Q", help="quantiles, Q in [0, 1]")
    qry.add_argument("--median", action="store_true", help="the median (quantile 0.5)")
    qry.add_argument("--histogram", action="store_true", help="estimated count per bin")
    qry.add_argument(
        "--info", action="store_true", help="what was released: mechanism, budget, bins, n̂"
    )
    qry.add_argument(
        "--ci",
        action="store_true",
        help="add the standard error (counts) and a confidence interval at --level to each "
        "answer; count intervals hold at every point, inside bins too, so they also cover the "
        "within-bin uncertainty (the values may sit anywhere in a bin) and can be much wider "
        "than +-2 se",
    )
    qry.add_argument(
        "--level",
        type=float,
        help="coverage of the --ci intervals, in (0, 1) (default 0.95; only with --ci)",
    )
    qry.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        default=None,
        help="output: text (default; csv for a grouped release, one row per key and answer), "
        "json (one document) or csv (one row per answer)",
    )
    qry.add_argument(
        "--quiet",
        action="store_true",
        help="answers only, one per line (with --ci: estimate, low and high), no prose; text "
        "output only",
    )
    qry.add_argument(
        "--key", help="grouped release: answer for this key only (fields joined by commas)"
    )
    qry.set_defaults(run=run)


def _axis_points(release: Any, raw: list[str], option: str) -> Any:
    """Query points for this release's bins, or a one-line error naming ``option``."""
    if release.bins.datetime_unit is not None:
        try:
            if any(not isinstance(number_or_text(x), str) for x in raw):
                raise ValueError  # '40' would be read as the year 40
            if release.bins.timezone is not None:  # wall times in its zone, or with offsets
                try:
                    release.bins.to_axis(np.array(raw, dtype=object), option)
                except treedp.TreeDPError:
                    raise ValueError from None
                return np.array(raw, dtype=object)
            return np.array(raw).astype("datetime64[ns]")
        except ValueError:
            raise UsageError(
                f"{option} takes datetimes for this release (its bins are datetimes), such "
                f"as 2024-01-31; got {' '.join(raw)!r}"
            ) from None
    try:
        return np.array([float(x) for x in raw], dtype=np.float64)
    except ValueError:
        raise UsageError(
            f"{option} takes numbers for this release (its bins are numeric); got {' '.join(raw)!r}"
        ) from None


def answers(release: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every requested answer as a row (``query``, ``args``, ``estimate`` and, with ``--ci``,
    ``stderr``, ``low``, ``high``), in the order the options are documented."""
    rows: list[dict[str, Any]] = []
    level = level_of(args)

    def add(query: str, raws: list[list[str]], est: Any, *ci: Any) -> None:
        """One row per argument; ``ci`` (with ``--ci``): the stderrs, lows and highs."""
        est = np.atleast_1d(est)
        columns = [np.atleast_1d(v) for v in ci]
        for i, raw in enumerate(raws):
            row = {"query": query, "args": raw, "estimate": est[i]}
            if columns:
                row.update(zip(("stderr", "low", "high"), (c[i] for c in columns), strict=True))
            rows.append(row)

    def counted(query: str, *points: Any) -> tuple[Any, ...]:
        """A count query's estimate, and with ``--ci`` its stderr and interval."""
        est = getattr(release, query)(*points)
        if not args.ci:
            return (est,)
        return (
            est,
            release.stderr(query, *points),
            *release.confidence_interval(query, *points, level=level),
        )

    if args.cdf:
        xs = _axis_points(release, args.cdf, "--cdf")
        add("cdf", [[x] for x in args.cdf], *counted("cdf", xs))
    for pair in args.range or []:
        add("range_count", [pair], *counted("range_count", *_axis_points(release, pair, "--range")))
    quantiles = list(args.quantiles or []) + (["0.5"] if args.median else [])
    if quantiles:
        qs = probabilities(quantiles)
        ci = [(None,) * qs.size, *_open_ends(release, qs, level)] if args.ci else []
        add("quantile", [[q] for q in quantiles], release.quantile(qs), *ci)
        if args.median:
            rows[-1].update(query="median", args=[])
    if args.histogram:
        table = release.to_arrays(level=level)
        left, right = table["left"], table["right"]
        edges = [[str(plain(a)), str(plain(b))] for a, b in zip(left, right, strict=True)]
        se = release.stderr("range_count", left, right) if args.ci else None
        ci = [se, table["count_low"], table["count_high"]] if args.ci else []
        add("histogram", edges, table["count"], *ci)
    return [{k: (plain(v) if k != "args" else v) for k, v in row.items()} for row in rows]


def _open_ends(release: Any, qs: np.ndarray, level: float) -> tuple[list[Any], list[Any]]:
    """The quantile intervals, an end beyond the bins (bounds found from the records: the
    clamped records may hold the quantile) written ``-inf`` / ``inf`` on datetime bins too
    (not the first or last instant pandas holds, which reads as a real bound)."""
    low, high = (list(np.atleast_1d(v)) for v in release.quantile_interval(qs, level=level))
    if release.bins.is_datetime:
        first, last = release.edges[0], release.edges[-1]
        low = ["-inf" if v < first else v for v in low]
        high = ["inf" if v > last else v for v in high]
    return low, high


def run(args: argparse.Namespace) -> None:
    """Run ``treedp query`` with the parsed arguments."""
    level = level_of(args)  # before the release is read
    if args.quiet and args.format not in (None, "text"):
        raise UsageError("--quiet is plain text: drop --quiet, or drop --format")
    if args.quiet and args.info:
        raise UsageError("--info is prose: drop --quiet, or drop --info")
    if treedp.is_grouped_file(args.release):
        args.format = args.format or (
            "text" if args.quiet else "csv"
        )  # a grouped release: rows per key by default
        _run_grouped(args, level)
        return
    args.format = args.format or "text"
    if not (args.cdf or args.range or args.quantiles or args.median or args.histogram or args.info):
        raise UsageError(
            "give at least one of --cdf, --range, --quantiles, --median, --histogram, --info"
        )
    if args.key is not None:
        raise UsageError(
            "--key is for a grouped release (made with --by); this file is not one: drop --key"
        )

    release = treedp.load_release(args.release)
    if args.ci and not release.offers_intervals:
        raise UsageError(
            f"--ci: a release made with --mechanism {release.mechanism.name} has no standard "
            "errors or intervals (its answers carry a data-dependent bias); query without --ci"
        )
    if args.info and args.format == "csv":
        raise UsageError("--info is text or json; drop --format csv, or query without --info")
    rows = answers(release, args)
    asked = [  # the rows hold NaN and NaT as None
        np.nan if r["estimate"] is None else r["estimate"]
        for r in rows
        if r["query"] in ("quantile", "median")
    ]
    warning = with_no_answer(release.bounds_warning(), asked)  # released values only
    notes = _kept(release.unit.bounds if release.unit is not None else None, args.ci)
    details = info(release) if args.info else None
    seeded = release.seeded
    if args.format == "json":
        document: dict[str, Any] = {"answers": rows, "seeded": seeded}
        if seeded:
            document["note"] = SEEDED.strip()
        if args.ci:
            document["level"] = level
        if details is not None:
            document["info"] = details
        document["warning"] = warning
        document["notes"] = notes  # every JSON document has both (docs/cli.md)
        print(json.dumps(jsonable(document), indent=2))  # an open end: "inf", never Infinity
        return
    for note in notes:  # the other formats: on standard error, as warnings are
        print(f"treedp: note: {note}", file=sys.stderr)
    if args.format == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        header = ["query", "a", "b", "estimate"] + (["stderr", "low", "high"] if args.ci else [])
        writer.writerow([*header, "note"])
        for row in rows:
            a, b = (row["args"] + ["", ""])[:2]
            cells = [row["query"], a, b, row["estimate"]]
            if args.ci:
                cells += [row["stderr"], row["low"], row["high"]]
            writer.writerow(
                ["" if c is None else c for c in cells] + [SEEDED.strip() if seeded else ""]
            )
        sys.stdout.write(out.getvalue())
        if warning:
            print(f"treedp: warning: {warning}", file=sys.stderr)
        return
    if args.quiet:
        for row in rows:
            cells = [row["estimate"]] + ([row["low"], row["high"]] if args.ci else [])
            print(" ".join(bare(c) for c in cells))
        if seeded:
            warn_seeded()
        if warning:
            print(f"treedp: warning: {warning}", file=sys.stderr)
        return
    mark = SEEDED if seeded else ""
    if details is not None:
        width = max(map(len, details))
        for key, value in details.items():
            print(f"{key + ':':<{width + 1}} {value}")
    for row in rows:
        found = release.bounds_step is not None  # intervals also hold clamped records
        print(_text(row, args.ci, level, not release.bins.discrete, found) + mark)
    if warning:
        print(f"treedp: warning: {warning}", file=sys.stderr)


def _text(
    row: dict[str, Any], ci: bool, level: float, within: bool = True, found: bool = False
) -> str:
    """One answer as a line; ``within``: count intervals also cover where the values sit inside
    their bins (continuous bins; on an integer domain every answer is at an edge); ``found``:
    and the records clamped at a bound found from the data (an end bin's interval is wide
    where the noise's standard error is small)."""
    query, raw = row["query"], row["args"]
    if query == "range_count":
        head = f"range_count([{raw[0]}, {raw[1]}))"
    elif query == "histogram":
        head = f"[{raw[0]}, {raw[1]})"
    elif query == "median":
        head = "median"
    else:
        head = f"{query}({raw[0]})"
    count = query in ("cdf", "range_count", "histogram")
    number = fmt_count if count else fmt  # counts keep their units digit at any size
    text = f"{head} = {number(row['estimate'])}"
    if ci:
        se = f"se {fmt(row['stderr'])}, " if row.get("stderr") is not None else ""
        # a count interval also covers where the values sit inside their bins: wider than
        # the noise's +-2 se alone (Release.confidence_interval)
        parts = [p for p, on in (("within-bin uncertainty", within), ("records clamped at a "
                 "found bound", found)) if on and count]  # fmt: skip
        what = f" incl. {' and '.join(parts)}" if parts else ""
        text += f"  ({se}{level:g} interval{what} [{number(row['low'])}, {number(row['high'])}])"
    return text


def _key_answers(release: Any, args: argparse.Namespace) -> list[list[Any]]:
    """``[query, argument, value, stderr, low, high]`` rows of one key of a grouped release
    (:func:`answers`; with no query asked, the key's estimated number of records)."""
    rows = []
    for row in answers(release, args):
        query, raw = row["query"], row["args"]
        if query in ("range_count", "histogram"):
            arg = f"[{raw[0]}, {raw[1]})"
        elif query == "cdf":
            arg = raw[0]
        else:  # a quantile, or the median
            query, arg = "quantile", f"{float(raw[0] if raw else 0.5):g}"
        rows.append([query, arg, row["estimate"], *(row.get(c) for c in ("stderr", "low", "high"))])
    if not rows:
        extra = [None, None, None]
        if args.ci:  # every record: the CDF at the upper edge (the last bin is closed)
            low, high = release.n_interval(level=level_of(args))
            extra = [release.stderr("cdf", release.edges[-1]), low, high]
        rows.append(["n", "", release.n, *extra])
    return rows


def _grouped_line(
    label: str, row: list[Any], ci: bool, level: float, signal: tuple[float, bool]
) -> str:
    """One answer of a key for people: counts with one decimal, quantile values to 6 digits;
    a quantile with the key's n̂, and marked when the key has too little signal."""
    query, arg, value, se, low, high = row
    show = fmt if query == "quantile" else fmt_count
    name = {"range_count": "range"}.get(query, query)
    text = f"{label}: {name}({arg}) = {show(value)}" if arg else f"{label}: {name} = {show(value)}"
    if ci:
        spread = f"se {fmt(se)}, " if se is not None else ""
        text += f" ({spread}{level:g} interval [{show(low)}, {show(high)}])"
    n_hat, flag = signal
    if query == "quantile" or flag:
        text += f"  [n̂ {fmt_count(n_hat)}{': too little signal' if flag else ''}]"
    return text


_FLAG_NOTE = (
    "n̂ <= 0, or the CDF's standard error at the median above 5% of n̂ (a public key with "
    "no records is released as noise): its quantiles are unreliable"
)


def _cell(value: Any) -> Any:
    """A CSV/JSON cell: counts and values to 1e-6 at any size (not 6 significant digits)."""
    value = plain(value)
    if isinstance(value, float):
        return round(value, 6)
    return value if value is None or isinstance(value, int | str) else str(value)


def _run_grouped(args: argparse.Namespace, level: float) -> None:
    """``treedp query`` on a grouped release: one key (``--key``) or all."""
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
            print(json.dumps({"info": details, "warning": None, "notes": []}))
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
    lines = []  # --format text: one line per answer
    width = 6 if args.ci else 3  # query, argument, value (stderr, low, high)
    n_hat, flags = grouped.n(), grouped.low_signal()  # the HTML report's rule
    for key in keys:
        parts = key if isinstance(key, tuple) else (key,)
        label = ", ".join(f"{b}={p}" for b, p in zip(grouped.by, parts, strict=False)) or "all"
        signal = (n_hat[key], flags[key])
        for row in _key_answers(grouped[key], args):
            rows.append([*parts, *row[:2], *map(_cell, row[2:width]), _cell(signal[0]), signal[1]])
            lines.append(_grouped_line(label, row, args.ci, level, signal))
    header = [*grouped.by, "query", "argument", "value"]
    header += ["stderr", "low", "high"] if args.ci else []
    header += ["n_hat", "low_signal"]
    if args.format == "json":
        out = {
            "seeded": grouped.seeded,
            "guarantee": grouped.metadata()["guarantee"],
            "unit": grouped.unit,
            **({"level": level} if args.ci else {}),
            "rows": [dict(zip(header, row, strict=True)) for row in rows],
            "warning": None,
            "notes": _kept(grouped.bounds, args.ci),
        }
        print(json.dumps(out))
        return
    for note in _kept(grouped.bounds, args.ci):
        print(f"treedp: note: {note}", file=sys.stderr)
    if args.quiet:
        for row in rows:
            print(" ".join(bare(c) for c in row[len(grouped.by) + 2 : -2]))
    elif args.format == "text":
        for line in lines:
            print(line)
        if any(flags[k] for k in keys):
            print(f"too little signal: {_FLAG_NOTE}")
        if grouped.seeded:
            print("[SEEDED: not for publication]")
    else:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        if args.ci:
            exact = bool(keys) and grouped[keys[0]].bins.discrete  # one bin per integer
            within = "" if exact else "; count intervals include within-bin uncertainty"
            print(f"# {level:g} intervals{within}")
        if any(flags[k] for k in keys):
            print(f"# low_signal: {_FLAG_NOTE}")
        if grouped.seeded:
            print("# SEEDED: not for publication")


def _kept(bounds: Any, ci: bool) -> list[str]:
    """With ``--ci``, a per-person release's note: its intervals describe the rows kept."""
    return [bounds.kept()] if ci and bounds is not None and bounds.unit is not None else []
