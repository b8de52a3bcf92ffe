"""The ``treedp`` command line: a thin shell over the public API.

Every error becomes one line on stderr (``treedp: error: ...``) and a non-zero exit code:
2 for bad usage or input, 1 for anything unexpected. No traceback is printed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

import treedp
from treedp.budget import Neighbours
from treedp.datasets import load_adult
from treedp.engines.base import NAN_POLICIES
from treedp.estimation import ESTIMATORS, POSTPROCESS
from treedp.io import read_column
from treedp.mechanisms.factory import MECHANISMS
from treedp.planning import OBJECTIVES

__all__ = ["main"]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message)


def _number_or_text(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text  # a datetime such as 2024-01-01; validated by the library
    return (
        int(value)
        if value.is_integer() and "." not in text and "e" not in text.lower()
        else (value)
    )


def _bins(text: str) -> int | str:
    if text == "integers":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--bins must be an integer or 'integers', not {text!r}"
        ) from None


#: The neighbour relations (no registry holds them yet).
_NEIGHBOURS = ("add_remove", "replace")


def _add_neighbours(parser: argparse.ArgumentParser) -> None:
    """The neighbour relation and the public n, as ``release`` and ``plan`` take them."""
    parser.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=_NEIGHBOURS,
        default="add_remove",
        help="neighbour relation (default: add_remove)",
    )
    parser.add_argument(
        "--n", type=int, help="public number of records (with --neighbours replace)"
    )


def _build_parser() -> _Parser:
    parser = _Parser(
        prog="treedp",
        description="Differentially private CDFs, range counts and quantiles of one column.",
    )
    parser.add_argument("--version", action="version", version=f"treedp {treedp.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    rel = sub.add_parser("release", help="release the distribution of one column")
    rel.add_argument("input", help="a .csv, .csv.gz or .parquet file")
    rel.add_argument("--column", required=True, help="the column to release")
    rel.add_argument("--bounds", nargs=2, metavar=("LO", "HI"), help="public bounds")
    rel.add_argument("--bins", type=_bins, help="number of bins, or 'integers'")
    rel.add_argument("--edges", nargs="+", metavar="E", help="explicit public bin edges")
    rel.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    _add_neighbours(rel)
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

    qry = sub.add_parser("query", help="answer queries from a saved release")
    qry.add_argument("release", help="a release file written by 'treedp release'")
    group = qry.add_mutually_exclusive_group(required=True)
    group.add_argument("--cdf", nargs="+", metavar="X", help="count of values <= X")
    group.add_argument("--range", nargs=2, metavar=("A", "B"), help="count of values in [A, B)")
    group.add_argument("--quantiles", nargs="+", type=float, metavar="Q", help="quantiles")
    group.add_argument("--histogram", action="store_true", help="noisy count per bin")
    group.add_argument("--info", action="store_true", help="the release's metadata")

    pln = sub.add_parser("plan", help="choose the tree and budgets before any data is read")
    pln.add_argument("--bins", type=int, required=True, help="number of bins B")
    pln.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    _add_neighbours(pln)
    pln.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default=OBJECTIVES[0],
        help=f"what the plan minimises (default: {OBJECTIVES[0]})",
    )

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
        "--bins", type=_bins, default=1024, help="number of bins for --method tree (default 1024)"
    )
    mdn.add_argument(
        "--delta", type=float, default=1e-6, help="delta for stable and subsample (default 1e-6)"
    )
    mdn.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=_NEIGHBOURS,
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

    demo = sub.add_parser("demo", help="release three columns of the UCI Adult census data")
    demo.add_argument("--epsilon", type=float, default=1.0, help="budget per column")
    return parser


def _points(items: Sequence[str]) -> Any:
    values = [_number_or_text(s) for s in items]
    if all(isinstance(v, int | float) for v in values):
        return np.asarray(values, dtype=np.float64)
    return np.asarray(values, dtype="datetime64")


_SEEDED = " [SEEDED: not for publication]"


def _fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    return str(value)


def _cmd_release(args: argparse.Namespace) -> None:
    values = read_column(args.input, args.column)
    bounds = tuple(_number_or_text(b) for b in args.bounds) if args.bounds else None
    edges = _points(args.edges) if args.edges else None
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
    warning = _SEEDED if release.seeded else ""
    print(
        f"wrote {args.out}: {release.mechanism.name} over {release.bins.n_bins} bins{shape}, "
        f"epsilon={release.epsilon} ({release.neighbours}), n~{release.n:.0f}{warning}"
    )


def _cmd_query(args: argparse.Namespace) -> None:
    release = treedp.load_release(args.release)
    mark = _SEEDED if release.seeded else ""  # every answer of a seeded release is marked
    if args.cdf:
        xs = _points(args.cdf)
        for raw, value in zip(args.cdf, np.atleast_1d(release.cdf(xs)), strict=True):
            print(f"cdf({raw}) = {_fmt(value)}{mark}")
    elif args.range:
        a, b = _points(args.range)
        answer = _fmt(release.range_count(a, b))
        print(f"range_count([{args.range[0]}, {args.range[1]})) = {answer}{mark}")
    elif args.quantiles:
        qs = np.asarray(args.quantiles)
        for q, value in zip(qs, np.atleast_1d(release.quantile(qs)), strict=True):
            print(f"quantile({q:g}) = {_fmt(value)}{mark}")
    elif args.histogram:
        counts, edges = release.histogram()
        for lo, hi, c in zip(edges[:-1], edges[1:], counts, strict=True):
            print(f"[{lo}, {hi}) {_fmt(c)}{mark}")
    else:
        for key, value in release.metadata().items():
            print(f"{key}: {value}")
        if mark:
            print(f"seeded:{mark}")


def _cmd_plan(args: argparse.Namespace) -> None:
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


def _cmd_median(args: argparse.Namespace) -> None:
    values = np.asarray(read_column(args.input, args.column), dtype=np.float64)
    rng = (
        treedp.InsecureSeededSource(args.insecure_seed) if args.insecure_seed is not None else None
    )
    mark = _SEEDED if rng is not None else ""
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
        )
        print(
            f"median = {_fmt(release.median())} (tree, epsilon={args.epsilon}, {neighbours}){mark}"
        )
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
        )
        print(
            f"median = {_fmt(float(em.values[0]))} (exponential mechanism, "
            f"epsilon={args.epsilon} (spent {em.epsilon_spent:.10g}), {em.neighbours}){mark}"
        )
        return
    if args.neighbours == "add_remove":
        raise treedp.InvalidParameterError(
            f"--method {args.method} is defined for replace neighbours (n public) only; "
            "use --method tree or exponential for add_remove."
        )
    if args.method == "stable":
        result = treedp.stable_median(
            values, epsilon=args.epsilon, delta=args.delta, rng=rng, details=True
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
        )
    shown = "refused (⊥)" if result.refused else _fmt(result.value)
    print(
        f"median = {shown} ({result.mechanism}, epsilon={result.epsilon}, "
        f"delta={result.delta:.3g}, replace){mark}"
    )


def _cmd_demo(args: argparse.Namespace) -> None:
    data = load_adult()
    qs = np.array([0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    setups: dict[str, dict[str, Any]] = {
        "age": {"bounds": (17, 90), "bins": "integers"},
        "hours_per_week": {"bounds": (1, 99), "bins": "integers"},
        "capital_gain": {"bounds": (0, 99_999), "bins": "integers"},
    }
    print(
        f"UCI Adult census, {data['age'].size} records (Becker & Kohavi 1996, CC BY 4.0).\n"
        f"Each column is released once with epsilon={args.epsilon} (add/remove neighbours, "
        "exact discrete Laplace noise from OS randomness); every number below is read from "
        "that one release.\n"
    )
    header = "  ".join(f"q={q:<5g}" for q in qs)
    for column, setup in setups.items():
        values = data[column]
        release = treedp.release_cdf(values, epsilon=args.epsilon, **setup)
        private = np.atleast_1d(release.quantile(qs))
        exact = np.quantile(values, qs, method="inverted_cdf")
        shape = list(release.branching) if release.branching else "flat histogram"
        print(f"{column}: {release.bins.n_bins} bins, {release.mechanism.name}, {shape}")
        print(f"  {'':<22}{header}")
        print(f"  {'private quantiles':<22}" + "  ".join(f"{v:<7.4g}" for v in private))
        print(f"  {'exact (non-private)':<22}" + "  ".join(f"{v:<7.4g}" for v in exact))
        print(
            f"  private count <= median: {release.cdf(np.median(values)):.0f} "
            f"(exact {int((values <= np.median(values)).sum())}), "
            f"estimated n: {release.n:.0f}\n"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 on success)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        commands = {
            "release": _cmd_release,
            "query": _cmd_query,
            "plan": _cmd_plan,
            "median": _cmd_median,
            "demo": _cmd_demo,
        }
        commands[args.command](args)
    except _UsageError as exc:
        print(f"treedp: error: {exc} (see 'treedp --help')", file=sys.stderr)
        return 2
    except treedp.TreeDPError as exc:
        print(f"treedp: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (for example `| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        print(f"treedp: error: {exc.strerror or exc} ({exc.filename or ''})", file=sys.stderr)
        return 2
    except Exception as exc:  # never a traceback for the user
        print(f"treedp: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
