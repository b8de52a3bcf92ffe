"""``treedp median``: a private median of one column, by one of four methods."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import treedp
from treedp.budget import Neighbours
from treedp.cli._common import NEIGHBOURS, SEEDED, bins_arg, fmt
from treedp.cli.budget import add_ledger_options, ledger_from_args, remaining_line
from treedp.io import read_column

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``median`` subcommand to the parser's subcommands."""
    mdn = sub.add_parser("median", help="a private median of one column")
    mdn.add_argument("input", help="a .csv, .csv.gz or .parquet file")
    mdn.add_argument("--column", required=True, help="the column whose median is released")
    mdn.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    mdn.add_argument(
        "--method",
        choices=["tree", "exponential", "stable", "subsample"],
        default="tree",
        help="tree (default, needs bounds and bins), exponential (needs bounds), stable "
        "(PTR, needs delta), subsample (disjoint subsample-and-aggregate, needs delta and m)",
    )
    mdn.add_argument(
        "--bounds",
        nargs=2,
        type=float,
        metavar=("LO", "HI"),
        help="public bounds (tree and exponential)",
    )
    mdn.add_argument(
        "--bins",
        type=bins_arg,
        default=1024,
        help="number of bins for --method tree (default 1024)",
    )
    mdn.add_argument(
        "--delta", type=float, default=1e-6, help="delta for stable and subsample (default 1e-6)"
    )
    mdn.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=NEIGHBOURS,
        help="tree and exponential: default add_remove (tree) / replace (exponential); "
        "stable and subsample are replace only",
    )
    mdn.add_argument("--m", type=int, help="rows per block (subsample)")
    mdn.add_argument("--resolution", type=float, help="round block answers (subsample)")
    mdn.add_argument(
        "--insecure-seed",
        type=int,
        metavar="SEED",
        help="seed the noise (reproducible; for tests and research only, never for publication)",
    )
    add_ledger_options(mdn)

    mdn.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp median`` with the parsed arguments (charging ``--ledger`` if given)."""
    ledger = ledger_from_args(args)
    try:
        _run(args, ledger)
    finally:
        if ledger is not None:
            ledger.close()


def _run(args: argparse.Namespace, ledger: treedp.Ledger | None) -> None:
    values = np.asarray(read_column(args.input, args.column), dtype=np.float64)
    rng = (
        treedp.InsecureSeededSource(args.insecure_seed) if args.insecure_seed is not None else None
    )
    mark = SEEDED if rng is not None else ""
    if args.method in ("tree", "exponential") and args.bounds is None:
        raise treedp.InvalidParameterError(f"--method {args.method} needs public --bounds LO HI.")
    if args.method == "tree":
        neighbours: Neighbours = args.neighbours or "add_remove"
        release = treedp.release_cdf(
            values,
            bounds=tuple(args.bounds),
            bins=args.bins,
            epsilon=args.epsilon,
            neighbours=neighbours,
            n=values.size if neighbours == "replace" else None,
            rng=rng,
            accountant=ledger,
        )
        print(
            f"median = {fmt(release.median())} (tree, epsilon={args.epsilon}, {neighbours}){mark}"
        )
        _show_budget(ledger)
        return
    if args.method == "exponential":
        em = treedp.quantile_exponential(
            values,
            0.5,
            bounds=tuple(args.bounds),
            epsilon=args.epsilon,
            neighbours=args.neighbours or "replace",
            rng=rng,
            details=True,
            accountant=ledger,
        )
        print(
            f"median = {fmt(float(em.values[0]))} (exponential mechanism, "
            f"epsilon={args.epsilon} (spent {em.epsilon_spent:.10g}), {em.neighbours}){mark}"
        )
        _show_budget(ledger)
        return
    if args.neighbours == "add_remove":
        raise treedp.InvalidParameterError(
            f"--method {args.method} is defined for replace neighbours (n public) only; "
            "use --method tree or exponential for add_remove."
        )
    if args.method == "stable":
        result = treedp.stable_median(
            values,
            epsilon=args.epsilon,
            delta=args.delta,
            rng=rng,
            details=True,
            accountant=ledger,
        )
    else:
        if args.m is None:
            raise treedp.InvalidParameterError("--method subsample needs --m (rows per block).")
        result = treedp.subsample_and_aggregate(
            values,
            "median",
            epsilon=args.epsilon,
            delta=args.delta,
            m=args.m,
            variant="disjoint",
            resolution=args.resolution,
            rng=rng,
            details=True,
            accountant=ledger,
        )
    shown = "refused (⊥)" if result.refused else fmt(result.value)
    print(
        f"median = {shown} ({result.mechanism}, epsilon={result.epsilon}, "
        f"delta={result.delta:.3g}, replace){mark}"
    )
    _show_budget(ledger)


def _show_budget(ledger: treedp.Ledger | None) -> None:
    if ledger is not None:
        print(remaining_line(ledger))
