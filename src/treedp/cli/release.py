"""``treedp release``: count one column of a file and write its release."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import SEEDED, add_neighbours, bins_arg, number_or_text, points
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
    rel.add_argument("--bounds", nargs=2, metavar=("LO", "HI"), help="public bounds")
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
    rel.add_argument("--by", nargs="+", metavar="COL", help="group-by column(s): one tree per key")
    rel.add_argument(
        "--keys",
        metavar="FILE",
        help="the public keys, one per line (fields separated by commas for several --by)",
    )
    rel.add_argument("--delta", type=float, help="select keys privately (no --keys) at this delta")
    rel.add_argument("--privacy-unit", metavar="COL", help="the person-id column")
    rel.add_argument("--max-contributions", type=int, help="rows kept per person")
    rel.add_argument("--max-groups", type=int, help="groups per person (with --by)")
    rel.add_argument(
        "--max-contributions-per-group", type=int, help="rows kept per person and group"
    )

    rel.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp release`` with the parsed arguments."""
    if args.by or args.privacy_unit:
        _run_grouped(args)
        return
    values = read_column(args.input, args.column)
    bounds = tuple(number_or_text(b) for b in args.bounds) if args.bounds else None
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
    print(
        f"wrote {args.out}: {release.mechanism.name} over {release.bins.n_bins} bins{shape}, "
        f"epsilon={release.epsilon} ({release.neighbours}), n~{release.n:.0f}{warning}"
    )


def _run_grouped(args: argparse.Namespace) -> None:
    """``--by`` / ``--privacy-unit``: a grouped release (keys and ids matched as text)."""
    from treedp.cli._grouped import read_keys, read_text_column

    keys = read_keys(args.keys, len(args.by or [])) if args.keys else None
    table: dict[str, Any] = {args.column: read_column(args.input, args.column)}
    for name in [*(args.by or []), *([args.privacy_unit] if args.privacy_unit else [])]:
        table[name] = read_text_column(args.input, name)
    rng = (
        treedp.InsecureSeededSource(args.insecure_seed) if args.insecure_seed is not None else None
    )
    branching: Any = args.branching
    if branching is not None and len(branching) == 1:
        branching = branching[0]
    grouped = treedp.release_grouped(
        table,
        column=args.column,
        by=args.by,
        keys=keys,
        privacy_unit=args.privacy_unit,
        max_contributions=args.max_contributions,
        max_groups=args.max_groups,
        max_contributions_per_group=args.max_contributions_per_group,
        delta=args.delta,
        epsilon=args.epsilon,
        neighbours=args.neighbours,
        nan=args.nan,
        rng=rng,
        bounds=tuple(number_or_text(b) for b in args.bounds) if args.bounds else None,
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
        f"wrote {args.out}: {len(grouped)} groups by {', '.join(grouped.by)}, "
        f"{grouped.guarantee} for unit {grouped.unit} ({grouped.neighbours}){warning}"
    )
