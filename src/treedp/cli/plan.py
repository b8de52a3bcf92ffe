"""``treedp plan``: choose the tree and budgets before any data is read."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import add_neighbours
from treedp.planning import OBJECTIVES

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``plan`` subcommand to the parser's subcommands."""
    pln = sub.add_parser("plan", help="choose the tree and budgets before any data is read")
    pln.add_argument("--bins", type=int, required=True, help="number of bins B")
    pln.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    add_neighbours(pln)
    pln.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=OBJECTIVES[0],
        help=f"what the plan minimises (default: {OBJECTIVES[0]})",
    )

    pln.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp plan`` with the parsed arguments."""
    chosen = treedp.plan(
        args.bins,
        epsilon=args.epsilon,
        neighbours=args.neighbours,
        n=args.n,
        objective=args.objective,
    )
    print(chosen.describe())
    print("  compared:")
    for candidate in chosen.alternatives[:8]:
        shape = "×".join(map(str, candidate.branching))
        print(f"    {candidate.mechanism:<9} {shape:<24} {candidate.how:<36} {candidate.value:.6g}")
