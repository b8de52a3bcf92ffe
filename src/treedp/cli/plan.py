"""``treedp plan``: choose the tree and budgets before any data is read."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._common import UsageError, add_budget, add_neighbours, budget_from
from treedp.cli._plan_people import add_people, people_lines

__all__ = ["register", "run", "workload_from"]

OBJECTIVES = treedp.PARAMETERS["objective"].choices
WORKLOADS = treedp.PARAMETERS["workload"].choices


def register(sub: Any) -> None:
    """Add the ``plan`` subcommand to the parser's subcommands."""
    pln = sub.add_parser("plan", help="choose the tree and budgets before any data is read")
    pln.add_argument("--bins", type=int, required=True, help="number of bins B")
    add_budget(pln)
    add_neighbours(pln)
    pln.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=OBJECTIVES[0],
        help=f"what the plan minimises (default: {OBJECTIVES[0]})",
    )
    pln.add_argument(
        "--workload",
        default=None,
        metavar="cdf|ranges|LO:HI,...",
        help="the queries to plan for: cdf (all prefixes, default), ranges (all ranges), or "
        "a comma-separated list of bin ranges LO:HI (0 <= LO < HI <= bins; a single M is the "
        "prefix 0:M)",
    )
    add_people(pln)
    pln.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp plan`` with the parsed arguments."""
    people = people_lines(args)  # checked before anything is printed
    chosen = treedp.plan(
        args.bins,
        **budget_from(args),
        neighbours=args.neighbours,
        n=args.n,
        objective=args.objective,
        workload=workload_from(args.workload),
    )
    print(chosen.describe())
    print("  compared:")
    for candidate in chosen.alternatives[:8]:
        shape = "×".join(map(str, candidate.branching))
        if not candidate.offered and candidate.level_budgets[:1] == (0.0,):
            shape += " (root off)" if chosen.neighbours == "add_remove" else ""
        print(f"    {candidate.mechanism:<9} {shape:<32} {candidate.how:<44} {candidate.value:.6g}")
    for line in people:
        print(line)


def workload_from(text: str | None) -> str | list[Any] | None:
    """``--workload``: a name of ``treedp.PARAMETERS["workload"].choices`` or a list of ranges."""
    if text is None or text in WORKLOADS:
        return text
    ranges: list[Any] = []
    for item in text.split(","):
        parts = item.strip().split(":")
        try:
            numbers = [int(p) for p in parts]
        except ValueError:
            raise UsageError(
                f"--workload must be {', '.join(WORKLOADS)} or ranges LO:HI separated by commas"
            ) from None
        if len(numbers) > 2:
            raise UsageError("--workload ranges are LO:HI (two bin indices) or M (a prefix)")
        ranges.append(numbers[0] if len(numbers) == 1 else tuple(numbers))
    return ranges
