"""``treedp query``: answer queries from a saved release."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import treedp
from treedp.cli._common import SEEDED, fmt, points

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``query`` subcommand to the parser's subcommands."""
    qry = sub.add_parser("query", help="answer queries from a saved release")
    qry.add_argument("release", help="a release file written by 'treedp release'")
    group = qry.add_mutually_exclusive_group(required=True)
    group.add_argument("--cdf", nargs="+", metavar="X", help="count of values <= X")
    group.add_argument("--range", nargs=2, metavar=("A", "B"), help="count of values in [A, B)")
    group.add_argument("--quantiles", nargs="+", type=float, metavar="Q", help="quantiles")
    group.add_argument("--histogram", action="store_true", help="noisy count per bin")
    group.add_argument("--info", action="store_true", help="the release's metadata")
    qry.add_argument(
        "--key", help="grouped release: answer for this key only (fields joined by commas)"
    )
    qry.add_argument(
        "--format",
        choices=("csv", "json"),
        default="csv",
        help="grouped release: output for all keys as CSV (default) or JSON",
    )

    qry.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp query`` with the parsed arguments."""
    from treedp.release.grouped import is_grouped_file

    if is_grouped_file(args.release):
        from treedp.cli._grouped import query_grouped

        query_grouped(args)
        return
    release = treedp.load_release(args.release)
    mark = SEEDED if release.seeded else ""  # every answer of a seeded release is marked
    if args.cdf:
        xs = points(args.cdf)
        for raw, value in zip(args.cdf, np.atleast_1d(release.cdf(xs)), strict=True):
            print(f"cdf({raw}) = {fmt(value)}{mark}")
    elif args.range:
        a, b = points(args.range)
        answer = fmt(release.range_count(a, b))
        print(f"range_count([{args.range[0]}, {args.range[1]})) = {answer}{mark}")
    elif args.quantiles:
        qs = np.asarray(args.quantiles)
        for q, value in zip(qs, np.atleast_1d(release.quantile(qs)), strict=True):
            print(f"quantile({q:g}) = {fmt(value)}{mark}")
    elif args.histogram:
        counts, edges = release.histogram()
        for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True):
            print(f"[{lo}, {hi}) {fmt(c)}{mark}")
    else:
        for key, value in release.metadata().items():
            print(f"{key}: {value}")
        if mark:
            print(f"seeded:{mark}")
