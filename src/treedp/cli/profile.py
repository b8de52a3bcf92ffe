"""``treedp profile``: every numeric or datetime column of one file, under one budget.

Runs :func:`treedp.profile` (one release per column, the budget split equally, one charge)
and writes one HTML page with a section per column (``--out``), plus the tidy summary as JSON
or CSV (``--summary``). Column types come from the file's schema (Parquet, Arrow); a CSV file
has none, so its columns are declared with ``--integers`` / ``--floats`` / ``--datetimes``
(and ``--tz ZONE`` when its datetime cells carry UTC offsets).
"""

from __future__ import annotations

import argparse
import importlib.util
import warnings
from typing import Any

import treedp
from treedp.cli._common import SEEDED, UsageError, rng_from
from treedp.cli._db import add_db_options, db_data
from treedp.cli._ledger import add_ledger_options, ledger_from_args, remaining_line
from treedp.cli._output import add_output, output_of

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add the ``profile`` subcommand to the parser's subcommands."""
    pro = sub.add_parser(
        "profile", help="profile every numeric column of a file under one budget (HTML page)"
    )
    pro.add_argument("input", help="a .parquet, .arrow or .csv file (or a Parquet directory)")
    pro.add_argument("--epsilon", type=float, required=True, help="total privacy budget")
    pro.add_argument(
        "--out", required=True, help="the HTML page to write (ending in .html or .htm)"
    )
    pro.add_argument("--summary", help="also write the tidy summary: a .json or .csv path")
    pro.add_argument(
        "--columns", nargs="+", metavar="NAME", help="the columns (default: every numeric one)"
    )
    pro.add_argument(
        "--integers", nargs="+", metavar="NAME", default=[], help="declare integer columns"
    )
    pro.add_argument(
        "--floats", nargs="+", metavar="NAME", default=[], help="declare non-integer columns"
    )
    pro.add_argument(
        "--datetimes", nargs="+", metavar="NAME", default=[], help="declare datetime columns"
    )
    pro.add_argument(
        "--tz",
        metavar="ZONE",
        help="the zone of datetime columns whose cells carry UTC offsets (e.g. UTC, "
        "Europe/Paris): their bounds and answers are in it",
    )
    pro.add_argument(
        "--bins", type=int, default=1024, help="bins of a non-integer column (default 1024)"
    )
    pro.add_argument(
        "--nan",
        choices=("drop", "error"),
        default="drop",
        help="missing values: drop them per column (default) or refuse",
    )
    pro.add_argument(
        "--insecure-seed",
        type=int,
        metavar="SEED",
        help="seed the noise (reproducible; for tests and research only, never for publication)",
    )
    add_ledger_options(pro)
    add_output(pro, " (keys: out, summary, columns, epsilon, per_column, skipped, seeded)")
    add_db_options(pro, "--columns, or every numeric one")
    pro.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp profile`` with the parsed arguments."""
    if not str(args.out).lower().endswith((".html", ".htm")):
        raise UsageError("--out: the profile is an HTML page; give a name ending in .html")
    if args.summary is not None and not str(args.summary).lower().endswith((".json", ".csv")):
        raise UsageError("--summary: give a name ending in .json or .csv")
    treedp.PARAMETERS["path"].check(args.out)
    if args.summary is not None:
        treedp.PARAMETERS["path"].check(args.summary)
    if importlib.util.find_spec("matplotlib") is None:  # the page's plots: before any charge
        raise treedp.MissingDependencyError(
            "Plotting needs matplotlib: install the treedp[plot] extra "
            '(pip install "treedp[plot]").'
        )
    is_csv = str(args.input).lower().endswith((".csv", ".csv.gz", ".tsv", ".txt"))
    if is_csv and not (args.integers or args.floats or args.datetimes):
        raise UsageError(
            "a CSV file has no schema: declare the columns to profile with --integers NAME ..., "
            "--floats NAME ... and/or --datetimes NAME ..."
        )
    declared = {"--integers": args.integers, "--floats": args.floats, "--datetimes": args.datetimes}
    seen: dict[str, str] = {}
    for flag, names in declared.items():
        for name in names:
            if name in seen:
                raise UsageError(f"{seen[name]} and {flag} both name {name!r}")
            seen[name] = flag
    types = {
        **dict.fromkeys(args.floats, "float"),
        **dict.fromkeys(args.integers, "integer"),
        **dict.fromkeys(args.datetimes, "datetime"),
    }
    rng = rng_from(args)
    with ledger_from_args(args) as ledger:
        with warnings.catch_warnings(record=True) as caught:  # the columns' warnings, below
            warnings.simplefilter("always", treedp.BoundsWarning)
            prof = treedp.profile(
                db_data(args) or args.input,
                epsilon=args.epsilon,
                columns=args.columns,
                types=types or None,
                bins=args.bins,
                nan=args.nan,
                timezone=args.tz,
                accountant=ledger,
                rng=rng,
            )
        # The page, the summary and the lines saying so, together: a signal arriving between
        # them left the page without its summary, or the outputs written but reported as not
        # (charged; a retry charged again; independent reviews). Once charged, finished.
        with treedp.interrupts.deferred():
            _write_outputs(args, prof, rng)
            _report(args, prof, rng, caught, ledger)


def _report(
    args: argparse.Namespace, prof: Any, rng: Any, caught: list[warnings.WarningMessage],
    ledger: Any,
) -> None:  # fmt: skip
    """What was written, the columns' warnings and the budget left."""
    seeded = SEEDED if rng is not None else ""
    out = output_of(args)
    out.line(
        f"wrote {args.out}: {len(prof)} columns, pure epsilon={prof.epsilon:g} in total "
        f"(epsilon={min(prof.shares.values()):.6g} per column){seeded}",
        args.out,
    )
    if prof.skipped:
        out.line(f"not profiled: {', '.join(prof.skipped)}")
    out.set(
        out=args.out,
        summary=args.summary,
        columns=list(prof.shares),
        epsilon=prof.epsilon,
        per_column=dict(prof.shares),
        skipped=list(prof.skipped),
        seeded=rng is not None,
    )
    _warn_columns(out, caught)
    if ledger is not None:
        out.budget(ledger, remaining_line(ledger))
    out.finish()


def _write_outputs(args: argparse.Namespace, prof: Any, rng: Any) -> None:
    """The page and, when asked for, the summary."""
    prof.write_report(args.out, rng=rng)
    if args.summary is not None:
        prof.write_summary(args.summary, rng=rng)


def _warn_columns(out: Any, caught: list[warnings.WarningMessage]) -> None:
    """The columns' bounds warnings (each starts with its column's name; post-processing of
    released counts), as ``treedp release`` prints its one: a line each on stderr, or together
    as the JSON ``warning``; any other warning is shown as Python shows it."""
    texts = []
    for w in caught:
        if issubclass(w.category, treedp.BoundsWarning):
            texts.append(str(w.message))
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    for text in [" ".join(texts)] if out.json else texts:
        out.warn(text)
