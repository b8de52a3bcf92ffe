"""``treedp plan``: choose the tree and budgets before any data is read."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import treedp
from treedp.cli._common import UsageError, add_budget, add_neighbours
from treedp.cli._output import add_output, output_of
from treedp.cli._plan_people import (
    add_people,
    people_lines,
    per_key_rows,
    person_prediction,
    tree_budget,
)

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
    add_output(
        pln,
        " (keys: the plan's fields: mechanism, branching, level_budgets, predicted, ..., and "
        "alternatives)",
    )
    add_people(pln)
    pln.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp plan`` with the parsed arguments: with contribution bounds, the plan of
    each key's tree (at the person's budget over the sensitivity), as a release makes it."""
    found = person_prediction(args)  # checked before anything is printed
    # each key's tree is an add/remove tree without a public n under both person-level
    # relations (replace doubles the sensitivity), as a per-person or group-by release makes it
    per_key = found is not None
    chosen = treedp.plan(
        args.bins,
        **tree_budget(args, None if found is None else found[0]),
        neighbours="add_remove" if per_key else args.neighbours,
        n=None if per_key else args.n,
        objective=args.objective,
        workload=workload_from(args.workload),
    )
    out = output_of(args)
    if out.quiet:  # the answer: the mechanism, its fan-out per level, its level budgets
        out.line("", chosen.mechanism)
        out.line("", ",".join(map(str, chosen.branching)))
        out.line("", ",".join(f"{b:.6g}" for b in chosen.level_budgets))
    if found is not None and found[0].tree_budget is not None:
        pred = found[0]
        out.line(
            f"each key's tree, for the person's budget ({_budget_text(args)}) over sensitivity "
            f"{pred.sensitivity}: {pred.tree_budget:.6g} per record"
        )
    out.line(chosen.describe())
    out.line("  compared:")
    for candidate in chosen.alternatives[:8]:
        shape = "×".join(map(str, candidate.branching))
        if not candidate.offered and candidate.level_budgets[:1] == (0.0,):
            shape += " (root off)" if chosen.neighbours == "add_remove" else ""
        out.line(
            f"    {candidate.mechanism:<9} {shape:<32} {candidate.how:<44} {candidate.value:.6g}"
        )
    fields = {f.name: getattr(chosen, f.name) for f in dataclasses.fields(chosen)}
    fields["alternatives"] = [
        {f.name: getattr(c, f.name) for f in dataclasses.fields(c)} for c in chosen.alternatives
    ]
    for line in people_lines(args, found):
        out.line(line)
    if found is not None:  # each key's figures, as data
        pred = found[0]
        fields["person"] = {
            "unit": pred.unit,
            "neighbours": args.neighbours,
            "sensitivity": pred.sensitivity,
            "tree_budget": pred.tree_budget,
            **budget_json(args),
        }
        fields["per_key"] = per_key_rows(args, found)
    out.set(**fields)
    out.finish()


def _budget_text(args: argparse.Namespace) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in budget_json(args).items())


def budget_json(args: argparse.Namespace) -> dict[str, float]:
    """The person's budget as given on the command line."""
    given = {"epsilon": args.epsilon, "delta": args.delta, "rho": args.rho}
    return {k: float(v) for k, v in given.items() if v is not None}


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
