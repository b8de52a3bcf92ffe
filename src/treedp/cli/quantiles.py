"""``treedp quantiles``: private quantiles of one column, by the best method for the request."""

from __future__ import annotations

import argparse
import math
from typing import Any

import treedp
from treedp.cli._bounds import (
    BOUNDS_REQUIRED,
    add_bounds,
    bounds_arg,
    check_share,
    found_text,
    is_private,
)
from treedp.cli._common import (
    SEEDED,
    TYPED_LINE,
    UsageError,
    add_input_arguments,
    add_neighbours,
    add_seed_and_nan,
    bins_arg,
    fmt,
    fmt_spent,
    rng_from,
)
from treedp.cli._db import add_db_options, db_data
from treedp.cli._files import file_source
from treedp.cli._ledger import add_ledger_options, ledger_from_args, remaining_line
from treedp.cli._output import add_output, bare, output_of, with_no_answer

__all__ = ["n_arg", "register", "run"]

METHODS = treedp.PARAMETERS["method"].choices


def n_arg(text: str) -> int | str:
    """``--n N`` as an int, ``--n private`` as ``"private"`` (argparse type)."""
    if text == "private":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of records or the word 'private', got {text!r}"
        ) from None


def register(sub: Any) -> None:
    """Add the ``quantiles`` subcommand to the parser's subcommands."""
    qs = sub.add_parser("quantiles", help="private quantiles of one column")
    add_input_arguments(qs, "the column")
    add_db_options(qs)
    qs.add_argument("--q", type=float, nargs="+", required=True, help="levels in [0, 1]")
    qs.add_argument("--epsilon", type=float, required=True, help="privacy budget (in total)")
    add_bounds(
        qs,
        "required, as for 'treedp median': public bounds LO HI, or 'private' (a share of the "
        "budget finds them), or one public side: LO private, private HI",
        share=True,
    )
    qs.add_argument(
        "--bins",
        type=bins_arg,
        help="tree bins (--method tree or auto), or 'integers' for integer or count data (ages, "
        "amounts in whole units): quantiles are then values of the domain; left out, a "
        "column whose type is an integer type (Parquet, Arrow, a database) is read as "
        "'integers', any other as continuous",
    )
    qs.add_argument(
        "--method",
        choices=METHODS,
        default="auto",
        help="auto (default): chosen from the number of levels and the bins only",
    )
    add_neighbours(qs, "add_remove (default) or replace (the number of records is public)", n=False)
    qs.add_argument(
        "--n",
        type=n_arg,
        metavar="N",
        help="public number of records, if known from elsewhere: it only chooses the method "
        "and the tree's bins (a wrong N costs accuracy, never privacy); with --neighbours "
        "replace it is public anyway; 'private': a share of epsilon releases a noisy count "
        "that chooses them (--n-share); left out with --method auto and public --bounds, as "
        "'private'",
    )
    qs.add_argument(
        "--n-share",
        type=float,
        metavar="S",
        help="share of epsilon spent on the count with --n private or --method auto "
        "without --n (default 0.02)",
    )
    add_seed_and_nan(qs, "missing values: error or drop")
    add_ledger_options(qs)
    add_output(
        qs,
        " (keys: quantiles, method, bounds, epsilon_spent, neighbours, seeded, integer_mode, n,"
        " concentration_gate, shrinkage)",
    )
    qs.set_defaults(run=run)


def _check_options(args: argparse.Namespace, bounds: Any) -> None:
    """Options that would be silently ignored are refused (public parameters only)."""
    check_share(args.bounds_share, bounds)
    counted = args.n == "private" or (
        args.n is None and args.method == "auto" and not is_private(bounds)
    )
    if args.n_share is not None and not counted:
        raise UsageError(
            "--n-share applies only with --n private, or --method auto with public "
            "--bounds and no --n."
        )
    if args.n_share is not None and not 0 < args.n_share < 1:
        raise UsageError("--n-share must be in (0, 1).")
    if counted and is_private(bounds):
        b_share, n_share = (
            treedp.PARAMETERS[name].default if given is None else given
            for name, given in (("bounds_share", args.bounds_share), ("n_share", args.n_share))
        )
        if 0 < b_share < 1 and not b_share + n_share < 1:
            raise UsageError(
                "--bounds-share and --n-share must add up to less than 1 (the rest releases "
                "the quantiles)."
            )
    if isinstance(args.bins, int) and args.method in ("exponential", "recursive"):
        raise UsageError(
            f"--bins B does not apply to --method {args.method} (it releases points of a fine "
            "public grid); it sets the tree's bins for --method tree or auto. --bins integers "
            "is allowed: quantiles are then integers."
        )


def run(args: argparse.Namespace) -> None:
    """Run ``treedp quantiles`` with the parsed arguments (charging ``--ledger`` if given)."""
    if args.bounds is None:
        raise UsageError(BOUNDS_REQUIRED)
    bounds = bounds_arg(args.bounds, args.tz)
    _check_options(args, bounds)
    values, column = db_data(args, args.column), None
    if values is None:  # files: read by the library, CSV cells checked against the bounds
        values, column = file_source(args), args.column
    with ledger_from_args(args) as ledger:
        result = treedp.quantiles(
            values,
            args.q,
            column=column,
            epsilon=args.epsilon,
            bounds=bounds,
            bins=args.bins,
            method=args.method,
            neighbours=args.neighbours,
            n=args.n,
            nan=args.nan,
            bounds_share=args.bounds_share,  # None: the library's documented default
            n_share=args.n_share,
            rng=rng_from(args),
            accountant=ledger,
        )
        out = output_of(args)
        for level, value in zip(args.q, result.values, strict=True):
            out.line(f"q={level:g}: {fmt(value)}", bare(value))
        shown = ", ".join(_bound_text(b) for b in result.bounds)
        stepped = is_private(bounds) and result.parts[0].mechanism.startswith("private_bounds")
        step = result.parts[0].measure if stepped else None  # the bounds step's
        found = found_text(bounds, getattr(step, "epsilon", None))
        if is_private(bounds) and not stepped:  # the method needs no bounds
            found = " (no bounds step: every float a candidate)"
        elif result.bounds_collapsed:  # the bounds step said nothing
            spent = fmt_spent(getattr(step, "epsilon", 0.0))
            found = f" (the bounds step, epsilon={spent}, said nothing: every float a candidate)"
        out.line(
            f"method {result.method}, bounds [{shown}]{found}, epsilon spent "
            f"{fmt_spent(result.epsilon_spent)} ({result.neighbours})"
            f"{SEEDED if result.seeded else ''}"
        )
        out.set(
            quantiles=[
                {"q": level, "value": value}
                for level, value in zip(args.q, result.values, strict=True)
            ],
            method=result.method,
            bounds=[_open_end(b) for b in result.bounds],  # JSON: "-inf"/"inf" at the lattice end
            # the reported bounds came from a bounds step (not: none ran, or it said nothing)
            bounds_found_privately=stepped and not result.bounds_collapsed,
            epsilon_spent=result.epsilon_spent,
            neighbours=result.neighbours,
            seeded=result.seeded,
            integer_mode=result.integer_mode,
        )
        if result.integer_mode == "column type":  # from the schema, never the values
            out.line(TYPED_LINE)
        if args.n == "private" or result.n_source == "private":
            out.line(_n_line(result))
            out.set(n={"source": result.n_source, "released": result.n_released})
        gate = _gate_line(result)
        if gate is not None:  # the released bit chose the tree's bins: say so (no count)
            out.line(gate)
            out.set(concentration_gate={"bins": result.grid_points})
        if result.shrinkage is not None and result.shrinkage < 1:  # from the release alone
            out.line(
                f"the tree's CDF was read toward the uniform law over the bounds, keeping "
                f"{result.shrinkage:.2f} of its deviation (its shape hardly stands out from "
                "its noise; docs/quantiles.md)"
            )
        out.set(shrinkage=result.shrinkage)
        out.warn(with_no_answer(result.bounds_warning, result.values))  # released values only
        if result.method in ("recursive", "exponential") and result.integer_mode is None:
            out.note(  # from public parameters only: the method, not the data
                f"the {result.method} method reads the column as continuous; if it holds few "
                "distinct integers (ages, small counts: many tied values), --bins integers "
                "answers on the right side of ties."
            )
        if ledger is not None:
            out.budget(ledger, remaining_line(ledger))
        out.finish()


def _open_end(bound: Any) -> Any:
    """A reported bound, the float lattice's end (no bound: every float a candidate) as an
    infinity rather than ``±8.98847e+307``."""
    if isinstance(bound, float) and abs(bound) >= 2.0**1023:
        return math.inf if bound > 0 else -math.inf
    return bound


def _bound_text(bound: Any) -> str:
    """A bound for the answer line: ``-inf`` / ``inf`` at the float lattice's end."""
    bound = _open_end(bound)
    return str(bound) if isinstance(bound, float) and math.isinf(bound) else str(fmt(bound))


def _n_line(result: Any) -> str:
    """What ``--n private`` did: the count's epsilon and released count, or why nothing."""
    if result.n_source == "private":
        (count,) = (p for p in result.parts if p.mechanism == "private_count")
        return (
            f"n private: epsilon {fmt_spent(count.measure.epsilon)} spent on a noisy count of the "
            f"records, released {result.n_released} (it chose the method and bins)"
        )
    if result.n_source == "public":
        return "n private: nothing spent (under replace the number of records is public)"
    return "n private: nothing spent (the method and bins cannot depend on n here)"


def _gate_line(result: Any) -> str | None:
    """What the concentration gate spent and the bins the tree then ran on, or None."""
    for part in result.parts:
        if part.mechanism == "concentration_gate":
            return (
                f"concentration gate: epsilon {fmt_spent(part.measure.epsilon)} spent; the tree "
                f"ran on {result.grid_points} bins"
            )
    return None
