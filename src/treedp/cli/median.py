"""``treedp median``: a private median of one column, by one of four methods.

The tree and the exponential mechanism default to add/remove neighbours; propose-test-release
and subsample-and-aggregate are defined for replace (the number of records is public). Options
that do not apply to the method are refused before the data is read. ``--bounds private`` (tree
and exponential) runs :func:`treedp.quantiles` at ``q = 0.5`` with the method fixed.
"""

from __future__ import annotations

import argparse
from typing import Any

import treedp
from treedp.cli._bounds import (
    BOUNDS_REQUIRED,
    add_bounds,
    bounds_arg,
    bounds_offsets,
    check_share,
    found_side,
    is_private,
    known_side,
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
    option_of,
    read_inputs,
    rng_from,
)
from treedp.cli._db import add_db_options, db_data
from treedp.cli._files import file_source
from treedp.cli._ledger import add_ledger_options, ledger_from_args, remaining_line
from treedp.cli._output import add_output, bare, output_of, with_no_answer

__all__ = ["register", "run"]

#: The options each method takes (besides the input, --column, --epsilon, --nan, the seed).
APPLIES = {
    "tree": {"bounds", "bins", "neighbours", "bounds_share"},
    "exponential": {"bounds", "bins", "neighbours", "bounds_share"},
    "stable": {"bounds", "delta", "neighbours"},
    "subsample": {"delta", "neighbours", "m", "resolution"},
}
DEFAULT_NEIGHBOURS = {
    "tree": "add_remove",
    "exponential": "add_remove",
    "stable": "replace",
    "subsample": "replace",
}
DEFAULT_BINS = 1024
#: How the answer line names the method that ran.
_METHOD_NAMES = {
    "tree": "tree",
    "exponential": "exponential mechanism",
    "recursive": "recursive mechanism",
}
DEFAULT_DELTA = 1e-6

_REFUSAL = {
    "stable": "refused (⊥): the median is released only when it is stable, i.e. would stay "
    "the same if a few records changed. On a continuous column, where values rarely repeat, "
    "it never is, whatever epsilon: use --method tree or exponential with public --bounds, or "
    "round the column to a coarse grid first",
    "subsample": "refused (⊥): too few blocks agreed on one median. On a continuous column "
    "block medians rarely coincide: set --resolution to round them to a public grid, use "
    "larger blocks (--m), or use --method tree or exponential with public --bounds",
}


def register(sub: Any) -> None:
    """Add the ``median`` subcommand to the parser's subcommands."""
    mdn = sub.add_parser("median", help="a private median of one column")
    add_input_arguments(mdn, "the column whose median is released")
    add_db_options(mdn)
    mdn.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    mdn.add_argument(
        "--method",
        choices=tuple(APPLIES),
        default=None,
        help="tree (default; needs --bounds, takes --bins; with --bounds private and no number "
        "of --bins, the method treedp.quantiles picks, which answers when the bounds step "
        "says nothing), exponential (needs --bounds), "
        "stable (propose-test-release, takes --delta and public --bounds), subsample (disjoint "
        "subsample-and-aggregate, needs --m, takes --delta and --resolution)",
    )
    add_bounds(
        mdn,
        "required for tree and exponential, as for 'treedp quantiles': public bounds LO HI, "
        "numbers or datetimes, or 'private' (a share of the budget finds them; numbers only), "
        "or one public side: LO private, private HI; stable takes public LO HI (values are "
        "clamped into them)",
        share=True,
    )
    mdn.add_argument(
        "--bins",
        type=bins_arg,
        help=f"number of bins or 'integers' (tree; default {DEFAULT_BINS}, or 'integers' for a "
        "column whose type is an integer type: Parquet, Arrow, a database); exponential takes "
        "'integers' only (the median is then an integer of the domain; the default for an "
        "integer-typed column)",
    )
    mdn.add_argument(
        "--delta", type=float, help=f"delta (stable and subsample only; default {DEFAULT_DELTA:g})"
    )
    add_neighbours(
        mdn,
        "neighbour relation; default add_remove for tree and exponential; "
        "stable and subsample are defined for replace only",
        default=None,
        n=False,
    )
    mdn.add_argument("--m", type=int, help="rows per block (subsample only; required there)")
    mdn.add_argument(
        "--resolution", type=float, help="round block answers to this grid (subsample only)"
    )
    add_seed_and_nan(
        mdn,
        "missing values: error (default) or drop them (a per-record filter; not with "
        "replace neighbours, where the number of records is public)",
    )
    add_ledger_options(mdn)
    add_output(mdn, " (keys: median, refused, how, method, neighbours, seeded, integer_mode)")
    mdn.set_defaults(run=run)


def check_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """Refuse options that do not apply to the method and check the rest, before any data
    is read; returns the resolved settings (``auto``: the method left to
    :func:`treedp.quantiles`, for the default method with private bounds)."""
    default = args.method is None
    args.method = method = args.method or "tree"
    bounds = bounds_arg(args.bounds, args.tz)  # a pair, "private" or None; a usage error else
    private = is_private(bounds)
    given = {
        name
        for name in ("bounds", "bins", "delta", "m", "resolution", "neighbours", "bounds_share")
        if getattr(args, name) is not None
    }
    extra = sorted(given - APPLIES[method])
    if extra:
        options = ", ".join(
            "--bounds private" if name == "bounds" and private else option_of(name)
            for name in extra
        )
        verb = "does" if len(extra) == 1 else "do"
        raise treedp.InvalidParameterError(
            f"{options} {verb} not apply to --method {method}; it takes "
            + ", ".join(map(option_of, sorted(APPLIES[method])))
            + "."
        )
    check_share(args.bounds_share, bounds)
    neighbours = args.neighbours or DEFAULT_NEIGHBOURS[method]
    if method in ("stable", "subsample") and neighbours != "replace":
        raise treedp.InvalidParameterError(
            f"--method {method} is defined for replace neighbours (n public) only; "
            "use --method tree or exponential for add_remove."
        )
    if method == "exponential" and args.bins not in (None, "integers"):
        raise treedp.InvalidParameterError(
            "--method exponential takes --bins integers only (for integer data: the median "
            "is then an integer of the domain); it has no bins to count."
        )
    if method in ("tree", "exponential") and args.bounds is None:
        raise UsageError(BOUNDS_REQUIRED)
    if method == "stable" and private:
        raise UsageError(
            "--bounds private does not apply to --method stable; it takes public --bounds LO "
            "HI (values are clamped into them); for bounds found privately use --method tree "
            "or exponential"
        )
    if method == "subsample" and args.m is None:
        raise treedp.InvalidParameterError("--method subsample needs --m (rows per block).")
    bins = args.bins if args.bins is not None else DEFAULT_BINS
    treedp.check_median(  # the nan/replace rule, the budget the bounds step leaves, the bins
        method,
        args.epsilon,
        bounds=bounds,
        bins=bins,
        neighbours=neighbours,
        nan=args.nan,
        bounds_share=args.bounds_share,
    )
    if args.delta is not None and not 0.0 < args.delta < 1.0:
        raise treedp.InvalidParameterError(f"--delta must be in (0, 1). Got {args.delta!r}.")
    for path in args.input:
        treedp.check_files(path)
    return {
        "neighbours": neighbours,
        "bounds": bounds,
        "bins": bins,
        "delta": args.delta if args.delta is not None else DEFAULT_DELTA,
        "auto": default and private and args.bins in (None, "integers"),
    }


def run(args: argparse.Namespace) -> None:
    """Run ``treedp median`` with the parsed arguments (charging ``--ledger`` if given)."""
    settings = check_arguments(args)
    with ledger_from_args(args) as ledger:
        values = db_data(args, args.column) or _inputs(args, settings)
        settings = _typed(args, settings, values)
        out = output_of(args)
        value, how, warning = _median(args, settings, values, rng_from(args), ledger)
        stated = f"{settings['neighbours']} neighbours" + (
            " (the default for this method)" if args.neighbours is None else ""
        )
        mark = SEEDED if args.insecure_seed is not None else ""
        refused = isinstance(value, str)  # the refusal's text (stable, subsample)
        out.line(
            f"median = {fmt(value)} ({how}, {stated}){mark}", "refused" if refused else bare(value)
        )
        out.set(
            median=None if refused else value,
            refused=refused,
            how=how,
            method="auto" if settings.get("auto") else args.method,
            neighbours=settings["neighbours"],
            seeded=args.insecure_seed is not None,
            integer_mode=settings["integer_mode"],
        )
        out.set(refusal=value if refused else None)
        if settings["integer_mode"] == "column type":  # from the schema, never the values
            out.line(TYPED_LINE)
        out.warn(with_no_answer(warning, None if refused else value))  # released values only
        if ledger is not None:
            out.budget(ledger, remaining_line(ledger))
        out.finish()


def _typed(args: argparse.Namespace, settings: dict[str, Any], values: Any) -> dict[str, Any]:
    """The settings with integer mode where ``--bins`` is left out and the column's declared
    type is an integer type (tree and exponential): the rule of :func:`treedp.quantiles`,
    read from the quantile query it builds (the schema of a Parquet file or database query,
    the dtype of the column read; never its values), with its bounds (public sides rounded
    inwards to integers)."""
    mode = "declared" if args.bins == "integers" else None
    if args.bins is None and args.method in ("tree", "exponential"):
        files = isinstance(values, treedp.FileSource)
        query = treedp.build_query(  # public parameters only: nothing is read or charged
            values,
            column=args.column if files else None,
            quantiles=0.5,
            epsilon=args.epsilon,
            bounds=settings["bounds"],
            mechanism=args.method,
            neighbours=settings["neighbours"],
            nan=args.nan,
        )
        assert query.quantiles is not None
        if query.quantiles.integer_mode == "column type":
            mode = "column type"
            settings = {**settings, "bins": "integers", "bounds": query.quantiles.bounds}
    return {**settings, "integer_mode": mode}


def _inputs(args: argparse.Namespace, settings: dict[str, Any]) -> Any:
    """The column in memory, or for the tree with public bounds under add/remove the files
    (read by the library, CSV datetime cells checked against the bounds as ``treedp release``
    checks them)."""
    public = not is_private(settings["bounds"]) and settings["neighbours"] == "add_remove"
    if args.method == "tree" and public:
        return file_source(args)
    return read_inputs(args, bounds_offsets(settings["bounds"]))


def _median(
    args: argparse.Namespace,
    settings: dict[str, Any],
    values: Any,
    rng: Any,
    ledger: treedp.Ledger | None,
) -> tuple[Any, str, str | None]:
    """The median (or the refusal's text), how it was released, for the answer line, and the
    bounds warning of the release (post-processing of released values), if any."""
    neighbours = settings["neighbours"]
    common = {"nan": args.nan, "rng": rng, "accountant": ledger}
    if is_private(settings["bounds"]):
        return _median_private_bounds(args, settings, values, common)
    if args.method == "tree":
        files = isinstance(values, treedp.FileSource)
        release = treedp.release_cdf(
            values,
            column=args.column if files else None,
            bounds=settings["bounds"],
            bins=settings["bins"],
            epsilon=args.epsilon,
            neighbours=neighbours,
            n=len(values) if neighbours == "replace" else None,
            **common,
        )
        return release.median(), f"tree, epsilon={args.epsilon}", release.bounds_warning()
    if args.method == "exponential" and settings["bins"] == "integers":
        res = treedp.quantiles(  # the exponential mechanism on the integers of [lo, hi]
            values,
            0.5,
            epsilon=args.epsilon,
            bounds=settings["bounds"],
            bins="integers",
            method="exponential",
            neighbours=neighbours,
            **common,
        )
        spent = f"epsilon={args.epsilon} (spent {fmt_spent(res.epsilon_spent)})"
        return res.value, f"exponential mechanism on integers, {spent}", res.bounds_warning
    if args.method == "exponential":
        em = treedp.quantile_exponential(
            values,
            0.5,
            bounds=settings["bounds"],
            epsilon=args.epsilon,
            neighbours=neighbours,
            details=True,
            **common,
        )
        spent = f"epsilon={args.epsilon} (spent {fmt_spent(em.epsilon_spent)})"
        return em.values[0], f"exponential mechanism, {spent}", None
    if args.method == "stable":
        result = treedp.stable_median(
            values,
            epsilon=args.epsilon,
            delta=settings["delta"],
            bounds=settings["bounds"],
            details=True,
            **common,
        )
    else:
        result = treedp.subsample_and_aggregate(
            values,
            "median",
            epsilon=args.epsilon,
            delta=settings["delta"],
            m=args.m,
            variant="disjoint",
            resolution=args.resolution,
            details=True,
            **common,
        )
    shown = _REFUSAL[args.method] if result.refused else result.value
    how = f"{result.mechanism}, epsilon={result.epsilon}, delta={result.delta:.3g}"
    return shown, how, None


def _median_private_bounds(
    args: argparse.Namespace, settings: dict[str, Any], values: Any, common: dict[str, Any]
) -> tuple[Any, str, str | None]:
    """``--bounds private``: :func:`treedp.quantiles` at ``q = 0.5`` with the method fixed
    (it finds the bounds with a share of epsilon, releases in them, charges the total once)."""
    integers = settings["bins"] == "integers"
    auto = settings.get("auto", False)  # the default method: treedp.quantiles picks
    result = treedp.quantiles(
        values,
        0.5,
        epsilon=args.epsilon,
        bounds=settings["bounds"],
        bins=settings["bins"] if (args.method == "tree" and not auto) or integers else None,
        method="auto" if auto else args.method,
        neighbours=settings["neighbours"],
        bounds_share=args.bounds_share,  # None: the library's documented default
        **common,
    )
    found = result.parts[0].measure  # the bounds step's spend (pure DP)
    name = _METHOD_NAMES.get(result.method, result.method)
    if result.method == "exponential" and integers:
        name += " on integers"
    if not result.parts[0].mechanism.startswith("private_bounds"):  # no step: every float
        return (
            result.value,
            (
                f"{name} over every float, no bounds step; total pure epsilon="
                f"{fmt_spent(result.epsilon_spent)} of {args.epsilon:g}"
            ),
            result.bounds_warning,
        )
    if result.bounds_collapsed:  # the bounds step said nothing: every float a candidate
        return (
            result.value,
            (
                f"{name} over every float: the bounds step (epsilon="
                f"{getattr(found, 'epsilon', 0.0):.4g}) said nothing; total pure epsilon="
                f"{fmt_spent(result.epsilon_spent)} of {args.epsilon:g}"
            ),
            result.bounds_warning,
        )
    known = known_side(settings["bounds"])
    how = " found privately" if known is None else f", {found_side(known)} found privately"
    shown = ", ".join(fmt(b) for b in result.bounds)
    text = (
        f"{name}, bounds [{shown}]{how} with epsilon={getattr(found, 'epsilon', 0.0):.4g}; "
        f"total pure epsilon={fmt_spent(result.epsilon_spent)} of {args.epsilon:g}"
    )
    return result.value, text, result.bounds_warning
