"""``treedp release``: count one column of a file and write its release."""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._bounds import add_bounds, bounds_arg, found_side
from treedp.cli._common import (
    SEEDED,
    UsageError,
    add_budget,
    add_input_arguments,
    add_neighbours,
    add_seed_and_nan,
    bins_arg,
    bound_arg,
    budget_from,
    csv_delimiter,
    option_of,
    points,
    reading,
    rng_from,
)
from treedp.cli._db import add_db_options, convert_keys, db_data, db_label
from treedp.cli._describe import approx_reading
from treedp.cli._grouped import read_keys, release_of, wrote_grouped
from treedp.cli._ledger import add_ledger_options, ledger_from_args, remaining_line
from treedp.cli._output import Output, add_output, measure_json, output_of

__all__ = ["register", "run"]

ESTIMATORS = treedp.PARAMETERS["estimator"].choices
POSTPROCESS = treedp.PARAMETERS["postprocess"].choices


def register(sub: Any) -> None:
    """Add the ``release`` subcommand to the parser's subcommands."""
    rel = sub.add_parser("release", help="release the distribution of one column")
    add_input_arguments(
        rel,
        "the column to release",
        "a .csv, .csv.gz, .tsv, .parquet, .arrow or .feather file, a directory, a glob "
        "pattern, several files of one format, or - for CSV on standard input; streamed in "
        "bounded memory",
    )
    add_db_options(rel)
    add_bounds(
        rel,
        "public bounds LO HI, or 'private' (10%% of epsilon finds them), or one public "
        "side: LO private, private HI",
    )
    rel.add_argument(
        "--datetimes",
        action="store_true",
        help="the column holds datetimes: for --bounds private on a CSV file, which has no "
        "types (with --tz ZONE when its cells carry UTC offsets)",
    )
    rel.add_argument("--bins", type=bins_arg, help="number of bins, or 'integers'")
    rel.add_argument("--edges", nargs="+", metavar="E", help="explicit public bin edges")
    add_budget(rel)
    add_neighbours(rel)
    rel.add_argument(
        "--mechanism",
        choices=treedp.PARAMETERS["mechanism"].choices,
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
    add_seed_and_nan(rel, "missing values: error (default) or drop them (a per-record filter)")
    rel.add_argument(
        "--out",
        required=True,
        help="where to write the release: a path ending in .json gets the JSON layout, "
        "any other (.tdp, ...) the binary one; a grouped release (--by, --privacy-unit) has "
        "the binary layout only (a zip): give it a .tdp name",
    )
    add_ledger_options(rel)
    add_output(
        rel, " (keys: out, mechanism, bins, branching, guarantee, neighbours, n, ...)", False
    )
    rel.add_argument(
        "--quiet",
        action="store_true",
        help="answers only: the path written, no prose and no progress bar (it shows on a "
        "terminal only)",
    )
    rel.add_argument("--by", nargs="+", metavar="COL", help="group-by column(s): one tree per key")
    rel.add_argument(
        "--keys",
        metavar="FILE",
        help="the public keys, one per line (fields separated by commas for several --by)",
    )
    rel.add_argument(
        "--selection-delta",
        type=float,
        help="with --by and no --keys: select keys privately at this delta",
    )
    rel.add_argument("--privacy-unit", metavar="COL", help="the person-id column")
    rel.add_argument(
        "--max-contributions",
        type=bound_arg,
        metavar="K|auto",
        help="rows kept per person; 'auto': chosen privately with 10%% of the budget "
        "(files; not --db), the choice stated in the release",
    )
    rel.add_argument("--max-groups", type=int, help="groups per person (with --by)")
    rel.add_argument(
        "--max-contributions-per-group",
        type=bound_arg,
        metavar="K|auto",
        help="rows kept per person and group; 'auto' (with a fixed --max-groups): chosen "
        "privately as for --max-contributions",
    )

    rel.set_defaults(run=run)


#: The options of a grouped release only.
_GROUPED_ONLY = (
    "keys",
    "selection_delta",
    "max_contributions",
    "max_groups",
    "max_contributions_per_group",
)


def check_options(args: argparse.Namespace) -> None:
    """The options that go together, in the command line's terms (nothing is read).

    Only what the library cannot say in these words: the flat ``--max-*`` bounds of a
    :class:`treedp.PrivacyUnit`, ``--out`` of a grouped release, and key selection, whose
    ``delta`` is ``--selection-delta`` here (``--delta`` is the budget's). Every other rule is
    the library's query's (:func:`treedp.build_query`), its message translated.
    """
    if args.rho is not None:  # one message for every refused rho (-1 and 0 alike)
        treedp.PARAMETERS["rho"].check(args.rho)
    if not (args.by or args.privacy_unit):
        for dest in _GROUPED_ONLY:
            if getattr(args, dest) is not None:
                option = option_of(dest)
                raise UsageError(
                    f"{option} is for a grouped release: give --by COL and/or --privacy-unit "
                    f"COL, or drop {option}"
                )
        return
    if not args.privacy_unit and any(getattr(args, d) is not None for d in _GROUPED_ONLY[2:]):
        raise UsageError(
            "Contribution bounds (--max-contributions, --max-groups, "
            "--max-contributions-per-group) need a --privacy-unit (the person-id column): "
            "without one, each row is one person and contributes once"
        )
    if args.by and str(args.out).lower().endswith(".json"):
        raise UsageError(
            "--out: a grouped release (--by) is written in the binary layout only (a zip), "
            "not JSON: give --out a name ending in .tdp"
        )
    if not args.by:
        for dest in _GROUPED_ONLY[:2]:
            if getattr(args, dest) is not None:
                option = option_of(dest)
                raise UsageError(
                    f"{option} is for the keys of --by: give --by COL, or drop {option}"
                )
        return
    if args.keys is not None and args.selection_delta is not None:
        raise UsageError(
            "--selection-delta selects keys privately, without --keys: with the public --keys "
            "drop --selection-delta (the release is then pure epsilon-DP), or drop --keys"
        )
    if args.keys is None and (args.rho is not None or args.delta is not None):
        raise UsageError(
            "Gaussian noise (--rho, or --epsilon with --delta) needs the public --keys FILE: "
            "private key selection (--selection-delta) is for pure --epsilon only"
        )
    if args.keys is None and args.selection_delta is None:
        raise UsageError(
            "--by needs the public --keys FILE (one key per line), or --selection-delta D to "
            "select keys privately (a thresholded noisy count per key; the release is then "
            "(epsilon, D)-DP)"
        )


def build_query(args: argparse.Namespace, ledger: treedp.Ledger | None) -> treedp.Query:
    """The library's query of the command line (:func:`treedp.build_query`: every public
    rule checked, ``ledger`` its accountant); only the keys file and the schema are read."""
    by = list(args.by) if args.by else None
    files = db_data(args) or treedp.FileSource(
        _source(args), delimiter=csv_delimiter(args.delimiter), encoding=args.encoding
    )
    keys = convert_keys(read_keys(args.keys, by), files, by) if args.keys and by else None
    branching: Any = args.branching
    if branching is not None and len(branching) == 1:
        branching = branching[0]
    grouped = bool(by or args.privacy_unit)
    return treedp.build_query(
        files,
        **budget_from(args),
        bounds=bounds_arg(args.bounds, args.tz, args.datetimes),
        bins=args.bins,
        edges=points(args.edges) if args.edges else None,
        neighbours=args.neighbours,
        n=args.n,
        mechanism=treedp.MechanismOptions(
            args.mechanism, branching, args.level_budgets, args.estimator
        ),
        postprocess=args.postprocess,
        integer=args.integer,
        nan=args.nan,
        rng=rng_from(args),
        accountant=ledger,
        column=args.column,
        privacy_unit=treedp.PrivacyUnit(
            args.privacy_unit,
            args.max_contributions,
            args.max_groups,
            args.max_contributions_per_group,
        )
        if args.privacy_unit
        else None,
        engine=treedp.LocalEngine(progress=False) if _silent(args) and not grouped else None,
        by=by,
        keys=keys,  # typed from the schema for Parquet and Arrow; text for CSV
        delta=args.selection_delta,
    )


def _silent(args: argparse.Namespace) -> bool:
    """No progress bar: ``--quiet``, or ``--format json`` (stdout and stderr stay clean)."""
    return bool(args.quiet) or args.format == "json"


def _source(args: argparse.Namespace) -> str | list[str]:
    if db_data(args) is not None:  # --db URL --sql QUERY: shown without its password
        return db_label(args)
    return args.input[0] if len(args.input) == 1 else list(args.input)


def run(args: argparse.Namespace) -> None:
    """Run ``treedp release``: every argument checked and the query built before any value
    is read; then one run of it (read, charge ``--ledger`` once, noise) and the file written."""
    check_options(args)
    source = _source(args)
    with reading(source, args.column):
        db_data(args) or treedp.check_files(source)
    with ledger_from_args(args) as ledger:
        query = build_query(args, ledger)
        treedp.PARAMETERS["path"].check(args.out)
        with reading(source, args.column):  # the file is streamed inside the run
            result = release_of(args, query, ledger)
        # The file and the lines saying so, together: a signal arriving between them left the
        # release written but reported as not, and the natural retry charged again (an
        # independent review). Once charged, finished.
        with treedp.interrupts.deferred():
            result.save(args.out)  # a Release, or a GroupedRelease (--by)
            _report(args, result, ledger)


def _report(args: argparse.Namespace, result: Any, ledger: Any) -> None:
    """What was written and the budget left."""
    out = output_of(args)
    if args.by or args.privacy_unit:
        out.line(wrote_grouped(args, result), args.out)
        out.set(out=args.out, **_grouped_json(result))
        out.warn(result.bounds_warning())  # every key's, in one line: post-processing
    else:
        _wrote(args, result, out)
    if ledger is not None:
        out.budget(ledger, remaining_line(ledger))
    out.finish()


def _grouped_json(result: Any) -> dict[str, Any]:
    """The JSON keys of a grouped (or per-person) release."""
    per_key = isinstance(result, treedp.GroupedRelease)
    return {
        "groups": len(result) if per_key else None,
        "by": list(result.by) if per_key else None,
        "guarantee": measure_json(result.guarantee),
        "unit": str(result.unit if per_key else result.unit.label),
        "neighbours": result.neighbours,
        "seeded": result.seeded,
    }


def _wrote(args: argparse.Namespace, release: treedp.Release, out: Output) -> None:
    """What was written, on stdout (with a Gaussian release's (epsilon, delta) reading at
    ``--delta``, and the whole cost when a bounds step took part of it); the bounds warning on
    stderr."""
    shape = f", branching {list(release.branching)}" if release.branching else ""
    guarantee = release.guarantee
    stated = f"epsilon={release.epsilon:.6g}"
    if isinstance(guarantee, treedp.ZCDP):
        reading = approx_reading(guarantee, args.delta)
        stated = f"rho={guarantee.rho:.6g} (zCDP, discrete Gaussian noise{reading})"
    warning = SEEDED if release.seeded else ""
    step = release.bounds_step
    if step is not None:  # part of epsilon went to the bounds: say what the whole cost
        total = release.total_guarantee
        whole = (
            f"pure epsilon={total.epsilon:.6g}" if hasattr(total, "epsilon") else total.describe()
        )
        warning = (
            f" ({found_side(step.get('known'))} found privately with "
            f"epsilon={step['epsilon']:.4g}; total {whole}){warning}"
        )
    out.line(
        f"wrote {args.out}: {release.mechanism.name} over {release.bins.n_bins} bins{shape}, "
        f"{stated} ({release.neighbours}), n~{release.n:.0f}{warning}",
        args.out,
    )
    out.set(
        out=args.out,
        mechanism=release.mechanism.name,
        bins=release.bins.n_bins,
        branching=list(release.branching) if release.branching else None,
        guarantee=measure_json(guarantee),
        total_guarantee=measure_json(release.total_guarantee),
        neighbours=release.neighbours,
        n=release.n,
        seeded=release.seeded,
    )
    out.warn(release.bounds_warning())  # post-processing of the released counts: free
