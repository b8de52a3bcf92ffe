"""``treedp release``: count one column of a file and write its release."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import SEEDED, add_neighbours, bins_arg, points
from treedp.cli.quantiles import bounds_arg
from treedp.engines.base import NAN_POLICIES
from treedp.estimation import ESTIMATORS, POSTPROCESS
from treedp.io import read_column
from treedp.mechanisms.factory import MECHANISMS

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``release`` subcommand to the parser's subcommands."""
    rel = sub.add_parser("release", help="release the distribution of one column")
    rel.add_argument("input", help="a .csv, .csv.gz or .parquet file")
    rel.add_argument("--column", required=True, help="the column to release")
    rel.add_argument(
        "--bounds",
        nargs="+",
        metavar="LO HI",
        help="public bounds LO HI, or 'private' (10%% of epsilon finds them)",
    )
    rel.add_argument("--bins", type=bins_arg, help="number of bins, or 'integers'")
    rel.add_argument("--edges", nargs="+", metavar="E", help="explicit public bin edges")
    rel.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    add_neighbours(rel)
    rel.add_argument(
        "--mechanism",
        choices=("auto", *MECHANISMS),
        default="auto",
        help="auto (default): the planner picks the tree shape and budgets",
    )
    rel.add_argument("--branching", type=int, nargs="+", help="fan-out, common or per level")
    rel.add_argument("--level-budgets", type=float, nargs="+", help="budget per noised level")
    rel.add_argument(
        "--estimator",
        choices=ESTIMATORS,
        help="how prefix counts are estimated from the noisy nodes (default: the library's, "
        f"{ESTIMATORS[0]} where the mechanism supports it)",
    )
    rel.add_argument(
        "--postprocess",
        choices=POSTPROCESS,
        default=POSTPROCESS[0],
        help="post-processing of the consistent answers, no privacy cost: monotone (L2), "
        f"monotone_l1 or none (unbiased) (default: {POSTPROCESS[0]})",
    )
    rel.add_argument(
        "--integer",
        action="store_true",
        help="make the consistent CDF integer-valued (the exact optimum; no privacy cost)",
    )
    rel.add_argument(
        "--nan",
        choices=NAN_POLICIES,
        default="error",
        help="missing values: error (default) or drop them (a per-record filter)",
    )
    rel.add_argument(
        "--insecure-seed",
        type=int,
        metavar="SEED",
        help="seed the noise (reproducible; for tests and research only, never for publication)",
    )
    rel.add_argument("--out", required=True, help="where to write the release (JSON)")

    rel.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp release`` with the parsed arguments."""
    values = read_column(args.input, args.column)
    bounds: Any = bounds_arg(args.bounds)
    edges = points(args.edges) if args.edges else None
    branching: Any = args.branching
    if branching is not None and len(branching) == 1:
        branching = branching[0]
    rng = (
        treedp.InsecureSeededSource(args.insecure_seed) if args.insecure_seed is not None else None
    )
    release = treedp.release_cdf(
        values,
        epsilon=args.epsilon,
        bounds=bounds,
        bins=args.bins,
        edges=edges,
        neighbours=args.neighbours,
        n=args.n,
        mechanism=args.mechanism,
        branching=branching,
        level_budgets=args.level_budgets,
        estimator=args.estimator,
        postprocess=args.postprocess,
        integer=args.integer,
        nan=args.nan,
        rng=rng,
    )
    release.save(args.out)
    shape = f", branching {list(release.branching)}" if release.branching else ""
    warning = SEEDED if release.seeded else ""
    if bounds == "private":  # the rest of epsilon went to the bounds (basic composition)
        warning = f" (the rest of epsilon={args.epsilon} found the bounds){warning}"
    print(
        f"wrote {args.out}: {release.mechanism.name} over {release.bins.n_bins} bins{shape}, "
        f"epsilon={release.epsilon} ({release.neighbours}), n~{release.n:.0f}{warning}"
    )
