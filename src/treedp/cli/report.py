"""``treedp report``: one self-contained HTML page for a saved release."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import UsageError

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``report`` subcommand to the parser's subcommands."""
    rep = sub.add_parser(
        "report", help="write a self-contained HTML page (plots, tables, guarantee) for a release"
    )
    rep.add_argument("release", help="a release file written by 'treedp release'")
    rep.add_argument("--out", required=True, help="the HTML file to write (written atomically)")
    rep.add_argument("--title", help="the page title")
    rep.add_argument(
        "--level", type=float, default=0.95, help="coverage of bands and intervals (default 0.95)"
    )
    rep.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp report`` with the parsed arguments."""
    from treedp.report import write_report

    release = treedp.load_release(args.release)
    if not release.offers_intervals:
        raise UsageError(
            f"a release made with --mechanism {release.mechanism.name} has no error bars, which "
            "the report draws; use 'treedp query' for its answers"
        )
    write_report(release, args.out, title=args.title, level=args.level)
    print(args.out)
