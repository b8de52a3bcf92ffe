"""``treedp report``: one self-contained HTML page for a saved release, for a whole grouped
release (every key on one page), or for one key of it (``--key``)."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import treedp
from treedp.cli._common import UsageError
from treedp.cli._grouped import pick_key

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
        "--column",
        metavar="NAME",
        help="the released column's name, for the axes and tables (a release file does not "
        "record it; default 'value')",
    )
    rep.add_argument(
        "--key",
        help="grouped release (--by): the page of this key only (fields joined by commas), "
        "with the grouped release's guarantee; without it, one page for every key",
    )
    rep.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp report`` with the parsed arguments."""
    with warnings.catch_warnings():  # the plot's date axis of tz-aware times is in UTC
        warnings.filterwarnings("ignore", "no explicit representation of timezones")
        _run(args)


def _run(args: argparse.Namespace) -> None:
    if not str(args.out).lower().endswith((".html", ".htm")):
        raise UsageError(
            "--out: the report is an HTML page; give a name ending in .html (for a PDF, open "
            "the page in a browser and print it)"
        )
    options = {"title": args.title, "level": args.level, "column": args.column}
    if args.title is None:
        del options["title"]
    if treedp.is_grouped_file(args.release):
        grouped = treedp.load_grouped_release(args.release)
        if not grouped.by and args.key is not None:
            raise UsageError("--key: this release has no --by (one group); drop --key")
        _check_intervals(grouped[grouped.keys[0]] if len(grouped) else None)
        if grouped.by and args.key is None:  # every key on one page
            treedp.write_report(grouped, args.out, **options)
        else:
            key = pick_key(grouped, args.key) if grouped.by else grouped.keys[0]
            if not grouped.by:
                options.setdefault("title", f"treedp release report: privacy unit {grouped.unit}")
            treedp.write_report(grouped, args.out, key=key, **options)
    else:
        if args.key is not None:
            raise UsageError("--key is for a grouped release (made with --by); drop --key")
        release = treedp.load_release(args.release)
        _check_intervals(release)
        treedp.write_report(release, args.out, **options)
    print(args.out)


def _check_intervals(release: treedp.Release | None) -> None:
    if release is not None and not release.offers_intervals:
        raise UsageError(
            f"a release made with --mechanism {release.mechanism.name} has no error bars, which "
            "the report draws; use 'treedp query' for its answers"
        )
