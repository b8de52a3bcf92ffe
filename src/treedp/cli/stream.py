"""``treedp stream``: a stream released step after step (``init``, ``step``, ``show``).

``init`` checks every public argument, charges the ledger (``--ledger --dataset``) the whole
stream once and writes the state file; ``step`` feeds one file and prints the running answers;
``show`` prints the stream's public facts. The state file holds drawn noise and exact,
noiseless sums of the data (e.g. ``sqrt``'s count history, ``blt``'s decayed sums,
``tree_full``'s running count): keep it as private as the data itself.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import treedp
from treedp.cli._common import (
    SEEDED,
    Parser,
    UsageError,
    add_budget,
    add_seed_and_nan,
    bins_arg,
    budget_from,
    fixed_bound_arg,
    fmt,
    fmt_count,
    number_or_text,
    reading,
    rng_from,
)
from treedp.cli._ledger import add_ledger_options, fmt_measure, ledger_from_args
from treedp.cli._output import bare, warn_seeded

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``stream`` subcommand (``init``, ``step``, ``show``)."""
    stream = sub.add_parser("stream", help="release a running count or distribution, step by step")
    actions = stream.add_subparsers(
        dest="action", required=True, parser_class=Parser, help="init, step or show"
    )
    init = actions.add_parser("init", help="start a stream (charges the ledger once)")
    init.add_argument("state", help="the new state file")
    init.add_argument("--horizon", type=int, required=True, help="the number of steps T")
    add_budget(init)
    init.add_argument("--bins", type=bins_arg, help="number of bins (with --bounds)")
    init.add_argument("--bounds", nargs=2, metavar=("LO", "HI"), help="public bounds")
    init.add_argument(
        "--mechanism",
        default="auto",
        help="auto (default), tree, tree_full (pure epsilon), binary; under zCDP also sqrt, "
        "sqrt_norm, opt, blt",
    )
    init.add_argument(
        "--privacy-unit", metavar="COLUMN", help="the person-id column (protect persons)"
    )
    init.add_argument(
        "--max-contributions",
        type=fixed_bound_arg,
        metavar="K",
        help="records kept per person over the whole stream (with --privacy-unit; 'auto' is "
        "refused: the bound is fixed before any step's records exist)",
    )
    add_ledger_options(init)
    init.add_argument("--insecure-seed", type=int, metavar="SEED", help="tests only")
    init.set_defaults(run=run)
    step = actions.add_parser("step", help="feed one step and print the running answers")
    step.add_argument("state", help="the stream's state file")
    step.add_argument("input", nargs="?", help="the step's file (CSV, Parquet, ...)")
    step.add_argument("--column", help="the column to read from the file")
    step.add_argument("--count", type=int, help="the step's count (a stream without bins)")
    step.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    step.add_argument(
        "--quiet", action="store_true", help="answers only: the count, then the quartiles"
    )
    add_seed_and_nan(step, "missing values: error (default) or drop")
    step.set_defaults(run=run)
    show = actions.add_parser("show", help="the stream's public facts and its last answer")
    show.add_argument("state", help="the stream's state file")
    show.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or json"
    )
    show.set_defaults(run=run)


def _init(args: argparse.Namespace) -> None:
    bins: dict[str, Any] = {}
    if (args.bins is None) != (args.bounds is None):
        raise UsageError("--bins and --bounds go together")
    if args.bins is not None:
        bins = {"bins": args.bins, "bounds": tuple(number_or_text(b) for b in args.bounds)}
    with ledger_from_args(args) as ledger:
        s = treedp.continual(
            horizon=args.horizon,
            mechanism=args.mechanism,
            accountant=ledger,
            rng=rng_from(args),
            path=args.state,
            privacy_unit=args.privacy_unit,
            max_contributions=args.max_contributions,
            **budget_from(args),
            **bins,
        )
    seeded = SEEDED if args.insecure_seed is not None else ""
    print(
        f"{args.state}: stream of {s.horizon} steps, mechanism {s.mechanism}, "
        f"{fmt_measure(s.spend.measure)} for the whole stream, privacy unit {s.spend.unit}"
        f"{seeded}"
    )


def _step(args: argparse.Namespace) -> None:
    if (args.input is None) == (args.count is None):
        raise UsageError("give the step's file (with --column), or --count N, not both")
    if args.count is None and args.column is None:
        raise UsageError("--column is required with a file")
    s = treedp.load_continual(args.state, rng=rng_from(args), autosave=False)
    if args.count is not None:
        answer = s.step(args.count)
    else:
        with reading(args.input, args.column):
            answer = s.step(args.input, column=args.column, nan=args.nan)
    # The saved state and the printed answer go together: a signal in between is recorded,
    # not raised (interrupted after the save, the step was taken but reported as not, and
    # its retry fed the same records twice; an independent review).
    with treedp.interrupts.deferred():
        s.save(args.state)
        _print_step(args, answer)


def _print_step(args: argparse.Namespace, answer: Any) -> None:
    out = answer.to_dict()
    if args.format == "json":
        print(json.dumps(out))
        return
    if args.quiet:  # answers only, one per line, at full precision
        for value in [out["count"], *out.get("quartiles", [])]:
            print(bare(value))
        if answer.seeded:
            warn_seeded()
        return
    _print_answer(out)


def _print_answer(out: dict[str, Any], what: str = "") -> None:
    """A step's answer (:meth:`StepAnswer.to_dict`) as text: the count line, the quartiles."""
    lo, hi = out["interval_95"]
    seeded = SEEDED if out.get("seeded") else ""  # the stream's own source, from its state
    print(
        f"step {out['step']}/{out['horizon']}{what}: count {fmt_count(out['count'])} "
        f"(stderr {fmt(out['stderr'])}, 95% [{fmt_count(lo)}, {fmt_count(hi)}]){seeded}"
    )
    if "quartiles" in out:
        flag = "  [too little signal: the quartiles are noise]" if out["low_signal"] else ""
        print("quartiles: " + " ".join(fmt(q) for q in out["quartiles"]) + flag)


def _show(args: argparse.Namespace) -> None:
    s = treedp.load_continual(args.state, autosave=False)
    g = s.guarantee
    last = s.last
    if args.format == "json":
        facts = {
            "step": s.t,
            "horizon": s.horizon,
            "mechanism": s.mechanism,
            "measure": fmt_measure(g["measure"]),
            "neighbours": g["neighbours"],
            "unit": g["unit"],
            "max_contributions": g["max_contributions"],
            "bins": None if s.bins is None else s.bins.n_bins,
            "seeded": s.seeded,
            "last": None if last is None else last.to_dict(),
        }
        print(json.dumps(facts))
        return
    print(f"{args.state}: step {s.t} of {s.horizon}, mechanism {s.mechanism}")
    print(
        f"guarantee: {fmt_measure(g['measure'])} for {g['covers']}, "
        f"{g['neighbours']} neighbours, privacy unit one {g['unit']}, "
        f"at most {g['max_contributions']} record(s) each over the stream"
    )
    if s.bins is not None:
        print(f"bins: {s.bins.n_bins}")
    if last is not None:
        _print_answer(last.to_dict(), " (last answer)")
    elif s.t > 0:
        print("last answer: not kept by this state file (written before treedp kept it)")
    if s.t < s.horizon:
        print(f"next step's stderr: {fmt(float(s.expected_variance(s.t + 1)) ** 0.5)}")


def run(args: argparse.Namespace) -> None:
    """Run ``treedp stream ACTION`` with the parsed arguments."""
    {"init": _init, "step": _step, "show": _show}[args.action](args)
