"""``treedp report``: one self-contained HTML page for a saved release (or one key of a
grouped release, ``--key``)."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import treedp
from treedp.cli._common import UsageError
from treedp.cli._grouped import grouped_info, pick_key

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``report`` subcommand to the parser's subcommands."""
    rep = sub.add_parser(
        "report", help="write a self-contained HTML page (plots, tables, guarantee) for a release"
    )
    rep.add_argument("release", help="a release file written by 'treedp release'")
    rep.add_argument(
        "--out",
        required=True,
        help="the HTML file to write, ending in .html or .htm (written atomically; the page "
        "is HTML only: print it to PDF from a browser)",
    )
    rep.add_argument("--title", help="the page title")
    rep.add_argument(
        "--level", type=float, default=0.95, help="coverage of bands and intervals (default 0.95)"
    )
    rep.add_argument(
        "--key",
        help="grouped release (--by): the page of this key (fields joined by commas), with "
        "the grouped release's guarantee",
    )
    rep.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp report`` with the parsed arguments."""
    if not str(args.out).lower().endswith((".html", ".htm")):
        raise UsageError(
            "--out: the report is an HTML page; give a name ending in .html (for a PDF, open "
            "the page in a browser and print it)"
        )
    grouped_rows = None
    title = args.title
    if treedp.is_grouped_file(args.release):
        grouped = treedp.load_grouped_release(args.release)
        by = ", ".join(grouped.by)
        if by and args.key is None:
            raise UsageError(
                f"{args.release!r} is a grouped release (--by): give --key K for the page of "
                "one key ('treedp query FILE --info' describes the grouped release; 'treedp "
                "query FILE' answers every key)"
            )
        if not by and args.key is not None:
            raise UsageError("--key: this release has no --by (one group); drop --key")
        key = pick_key(grouped, args.key) if by else grouped.keys[0]
        release = grouped[key]
        details = grouped_info(grouped)
        shown = f"{by} = {args.key}" if by else f"all records, privacy unit {grouped.unit}"
        grouped_rows = [
            (
                "Grouped release",
                f"one tree per key of {by}; this page: {shown}" if by else f"one tree: {shown}",
            ),
            ("Guarantee of the grouped release", details["guarantee"]),
            *([("(ε, δ) target", details["target"])] if "target" in details else []),
            ("Privacy unit of the grouped release", details["privacy unit"]),
            ("Keys", details["keys"]),
        ]
        title = title or f"treedp release report: {shown}"
    else:
        if args.key is not None:
            raise UsageError("--key is for a grouped release (made with --by); drop --key")
        release = treedp.load_release(args.release)
    if not release.offers_intervals:
        raise UsageError(
            f"a release made with --mechanism {release.mechanism.name} has no error bars, which "
            "the report draws; use 'treedp query' for its answers"
        )
    with warnings.catch_warnings():  # the plot's date axis of tz-aware times is in UTC
        warnings.filterwarnings("ignore", "no explicit representation of timezones")
        treedp.write_report(release, args.out, title=title, level=args.level, grouped=grouped_rows)
    print(args.out)
