"""What every ``treedp`` subcommand shares: the parser class, argument types and formatting."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import numpy as np

import treedp

__all__ = [
    "NEIGHBOURS",
    "SEEDED",
    "Parser",
    "UsageError",
    "add_budget",
    "add_input_arguments",
    "add_neighbours",
    "bins_arg",
    "budget_from",
    "check_input",
    "csv_delimiter",
    "fmt",
    "fmt_count",
    "level_of",
    "number_or_text",
    "points",
    "probabilities",
    "read_inputs",
    "read_values",
    "translate",
]


class UsageError(Exception):
    pass


#: A negative number in any notation (``-3``, ``-1e3``, ``-.5``, ``-inf``): an argument,
#: never an option (argparse alone reads ``-1e3`` as an unknown option).
_NEGATIVE_NUMBER = re.compile(
    r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity)$", re.IGNORECASE
)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are exceptions and that takes ``-1e3`` as a number."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``dest`` -> the first long option string, over a parser and all its subparsers."""
    found: dict[str, str] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                for dest, option in _options(child).items():
                    found.setdefault(dest, option)
            continue
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs and action.dest not in found:
            found[action.dest] = longs[0]
    return found


#: Library parameter names that the command line spells differently.
_ALIASES = {
    "rng": "--insecure-seed",
    "file_format": "--out (its suffix)",
    "q": "--quantiles",  # 'treedp query --quantiles'; 'treedp quantiles' has its own --q
    "values": "the --column",  # the library's data argument is the file's column here
}


#: Library hints that name Python calls, and what the command line says instead (the
#: accountant's total is a ledger dataset's total set by ``treedp budget init``).
_CLI_HINTS = (
    (
        "Open the accountant with a ZCDP(rho) or ApproxDP(epsilon, delta) total.",
        "Charge a dataset whose total is zCDP or (epsilon, delta): 'treedp budget init PATH "
        "--dataset NAME --rho R' (or --epsilon E --delta D).",
    ),
    (
        "Open the accountant with an ApproxDP(epsilon, delta) total.",
        "Charge a dataset whose total is (epsilon, delta): 'treedp budget init PATH --dataset "
        "NAME --epsilon E --delta D'.",
    ),
    (
        "The 'n' parameter is the public dataset size used with neighbours='replace'; with "
        "neighbours='add_remove' the size is private, so n must be None.",
        "--n is the public number of records, for --neighbours replace only; with --neighbours "
        "add_remove (the default) it stays private: drop --n, or add --neighbours replace.",
    ),
    (
        "bounds='private' takes 'epsilon' (pure DP): find the bounds with "
        "treedp.private_bounds, then pass them with the other budget.",
        "--bounds private takes --epsilon (pure DP): with --rho or --delta give public "
        "--bounds LO HI (for example found by an earlier 'treedp quantiles ... --bounds "
        "private' run, charged to the same ledger).",
    ),
    (
        "Private bounds are not available for a per-person or group-by release (with 'by' or "
        "'privacy_unit'): give public bounds=(lo, hi) for all groups.",
        "--bounds private is not available with --by or --privacy-unit (a group-by release): "
        "give public --bounds LO HI for all groups.",
    ),
    (
        "The 'n' parameter is not taken by a per-person or group-by release: group sizes stay "
        "private.",
        "--n is not used by a grouped release (--by, --privacy-unit): under --neighbours "
        "replace its trees are add/remove trees at half the budget and need no public number "
        "of records; drop --n.",
    ),
)


def translate(message: str, parser: argparse.ArgumentParser | None) -> str:
    """A library message in the command line's terms: ``nan='drop'`` becomes ``--nan drop``.

    Only names the CLI has an option for are rewritten (``The 'epsilon' parameter`` becomes
    ``--epsilon``); everything else is left as the library wrote it.
    """
    names = dict(_options(parser)) if parser is not None else {}
    for name, option in _ALIASES.items():  # a command's own option wins
        names.setdefault(name, option)

    def keyword(match: re.Match[str]) -> str:
        option = names.get(match.group(1))
        if option is None:
            return match.group(0)
        value = match.group(3)
        return f"{option} {'(not given)' if value == 'None' else value}"

    def parameter(match: re.Match[str]) -> str:
        option = names.get(match.group(1))
        return option if option is not None else match.group(0)

    for api, cli in _CLI_HINTS:  # whole sentences first, before the keyword rewrites
        message = message.replace(api, cli)
    message = message.replace("'bounds=(lo, hi)'", "--bounds LO HI")
    message = re.sub(r"\b([a-z_]+)=('?)([\w.+\-]+)\2", keyword, message)
    message = re.sub(r"[Tt]he '([a-z_]+)' (?:parameter|argument)", parameter, message)
    message = re.sub(r"'([a-z_]{2,})'", parameter, message)  # a parameter quoted alone
    message = re.sub(r"'(--[a-z\-]+(?: \w+)?)'", r"\1", message)  # no quotes around options
    return " ".join(message.split())  # one line, always


def check_input(path: str) -> None:
    """The input exists (a file, a directory or a glob of data files, as ``treedp release``
    and ``treedp quantiles`` take; ``-`` is standard input): checked before anything is
    read."""
    treedp.check_files(path)


def read_values(
    path: str | list[str], column: str, reader: Callable[..., Any], **options: Any
) -> Any:
    """``reader(path, column, **options)``; any failure of the reader becomes one clear line.

    The reader's own errors (missing file, unknown column, ...) are treedp errors and pass
    through. Anything else (a decoding error, a malformed row reported by a parser) is
    reported by kind only: its text may quote the file's contents, which are private.
    """
    label = path if isinstance(path, str) else ", ".join(path)
    try:
        return reader(path, column, **options)
    except (treedp.TreeDPError, KeyboardInterrupt, MemoryError):
        raise
    except UnicodeError:
        raise treedp.DataError(
            f"'{label}' is not valid text in the expected encoding (UTF-8): it cannot be read "
            "as CSV."
        ) from None
    except OSError as exc:
        raise treedp.InvalidParameterError(
            f"Could not read '{label}': {exc.strerror or _io_cause(exc)}."
        ) from None
    except Exception as exc:
        raise treedp.DataError(
            f"Could not read column '{column}' of '{label}': the file is malformed "
            f"({type(exc).__name__}; for example rows with different numbers of fields)."
        ) from None


def _io_cause(exc: OSError) -> str:
    """The cause of a reader's input/output error without an operating-system text, by kind
    only (the reader's own text is not quoted: it may hold the file's contents)."""
    text = str(exc).lower()
    if "compress" in text or "gzip" in text or "eof" in text or "truncat" in text:
        return "its compressed stream is truncated or corrupt (an incomplete download or copy?)"
    return f"an input/output error ({type(exc).__name__})"


def number_or_text(text: str) -> Any:
    """An int (exactly, at any size), a float, or the text itself (a datetime, say)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text  # a datetime such as 2024-01-01; validated by the library


def bins_arg(text: str) -> int | str:
    if text == "integers":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--bins must be an integer or 'integers', not {text!r}"
        ) from None


#: The neighbour relations (the library's).
NEIGHBOURS = treedp.PARAMETERS["neighbours"].choices


def add_neighbours(parser: argparse.ArgumentParser) -> None:
    """The neighbour relation and the public n, as ``release`` and ``plan`` take them."""
    parser.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=NEIGHBOURS,
        default="add_remove",
        help="neighbour relation (default: add_remove)",
    )
    parser.add_argument(
        "--n", type=int, help="public number of records (with --neighbours replace)"
    )


def points(items: Sequence[str], option: str = "--edges") -> Any:
    """Numbers, or datetimes when none of them is a number; anything else a one-line error."""
    values = [number_or_text(s) for s in items]
    if all(isinstance(v, int | float) for v in values):
        return np.asarray([float(v) for v in values], dtype=np.float64)
    if any(isinstance(v, int | float) for v in values):
        raise UsageError(f"{option} mixes numbers and datetimes: {' '.join(items)!r}")
    try:
        return np.asarray(values, dtype="datetime64")
    except ValueError:
        raise UsageError(
            f"{option} takes numbers or datetimes (such as 2024-01-31); got {' '.join(items)!r}"
        ) from None


SEEDED = " [SEEDED: not for publication]"


def fmt(value: Any) -> str:
    """A number for people: 6 significant digits; a missing answer (None) is ``nan``."""
    if value is None:
        return "nan"
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    return str(value)


def fmt_count(value: Any) -> str:
    """A count for people: one decimal at any size (``6555520.3``, never ``6.55552e+06``: a
    count of millions keeps its units digit); a missing answer (None, NaN) is ``nan``."""
    if value is None:
        return "nan"
    if isinstance(value, float | np.floating):
        v = float(value)
        return "nan" if v != v else f"{v:.1f}"
    return str(value)


def add_input_arguments(parser: Any) -> None:
    """The inputs of a command that holds one column in memory (``quantiles``, ``median``):
    one or more files, directories or quoted globs, read as ``treedp release`` reads them,
    with ``--delimiter`` and ``--encoding`` for CSV."""
    parser.add_argument(
        "input",
        nargs="+",
        help="one or more .csv, .csv.gz or .parquet files, directories or quoted globs",
    )
    parser.add_argument("--delimiter", help="CSV field delimiter (default: ',', tab for .tsv)")
    parser.add_argument("--encoding", help="CSV text encoding (default: UTF-8)")


def csv_delimiter(text: str | None) -> str | None:
    """``--delimiter`` as given, with ``\\t`` or ``tab`` meaning a tab."""
    return "\t" if text in ("\\t", "tab") else text


def read_inputs(args: Any) -> Any:
    """The ``--column`` of every input of ``args``, one array (each checked first, then read
    with :func:`read_values`)."""
    inputs = [args.input] if isinstance(args.input, str) else list(args.input)
    for path in inputs:
        check_input(path)
    delimiter = csv_delimiter(args.delimiter)
    options = {"delimiter": delimiter, "encoding": args.encoding}
    parts = [read_values(path, args.column, treedp.read_column, **options) for path in inputs]
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def add_budget(parser: Any) -> None:
    """``--epsilon`` (pure DP), ``--epsilon --delta`` ((ε, δ)-DP) or ``--rho`` (zCDP)."""
    parser.add_argument("--epsilon", type=float, help="privacy budget (pure DP, Laplace noise)")
    parser.add_argument(
        "--delta", type=float, help="with --epsilon: an (epsilon, delta)-DP target (Gaussian)"
    )
    parser.add_argument("--rho", type=float, help="a rho-zCDP target (Gaussian noise)")


def budget_from(args: argparse.Namespace) -> dict[str, Any]:
    """The budget keyword of the library call: ``epsilon=`` or ``privacy=``."""
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise UsageError("give either --rho, or --epsilon (with --delta for (ε, δ)), not both")
        return {"privacy": treedp.ZCDP(args.rho)}
    if args.epsilon is None:
        raise UsageError("a budget is required: --epsilon E, --epsilon E --delta D, or --rho R")
    if args.delta is not None:
        return {"privacy": treedp.ApproxDP(args.epsilon, args.delta)}
    return {"epsilon": args.epsilon}


def level_of(args: argparse.Namespace) -> float:
    """The ``--ci`` coverage: ``--level`` (refused without ``--ci``: it would do nothing), else
    0.95; checked before the release is read."""
    if args.level is None:
        return 0.95
    if not args.ci:
        raise UsageError("--level sets the coverage of --ci intervals: add --ci, or drop --level")
    level: float = treedp.PARAMETERS["level"].check(args.level)
    return level


def probabilities(raw: list[str]) -> Any:
    """``--quantiles`` as probabilities in [0, 1], or a one-line usage error."""
    try:
        qs = np.array([float(x) for x in raw], dtype=np.float64)
    except ValueError:
        qs = np.array([np.nan])
    if not np.all((qs >= 0) & (qs <= 1)):
        raise UsageError(f"--quantiles takes probabilities in [0, 1]; got {' '.join(raw)!r}")
    return qs
