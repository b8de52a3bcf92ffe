"""What every ``treedp`` subcommand shares: the parser class, argument types and formatting."""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import sys
from collections.abc import Iterator, Sequence
from decimal import ROUND_CEILING, Decimal
from typing import Any, NoReturn

import numpy as np

import treedp

__all__ = [
    "SEEDED",
    "TYPED_LINE",
    "Parser",
    "UsageError",
    "add_budget",
    "add_input_arguments",
    "add_neighbours",
    "add_seed_and_nan",
    "bins_arg",
    "budget_from",
    "csv_delimiter",
    "fmt",
    "fmt_count",
    "fmt_spent",
    "level_of",
    "measure_from",
    "number_or_text",
    "option_of",
    "points",
    "probabilities",
    "read_inputs",
    "reading",
    "rng_from",
    "translate",
]


class UsageError(Exception):
    pass


#: A negative number in any notation (``-3``, ``-1e3``, ``-.5``, ``-inf``): an argument,
#: never an option (argparse before Python 3.14 reads ``-1e3`` as an unknown option).
_NEGATIVE_NUMBER = re.compile(
    r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity)$", re.IGNORECASE
)


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are exceptions and that takes ``-1e3`` as a number.

    It records the options and subcommands it is given (:attr:`options`, :attr:`commands`), so
    messages can name an option without walking argparse's internals.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: ``dest`` -> the first long option string, in the order the arguments were added.
        self.options: dict[str, str] = {}
        self._subcommands: list[argparse.Action] = []
        super().__init__(*args, **kwargs)  # adds --help through add_argument
        if sys.version_info < (3, 14):
            # Python 3.14's argparse reads -1e3, -.5 and -1_000 as numbers itself (cpython
            # gh-123945, gh-124321); before it, its own matcher is the only hook there is.
            self._negative_number_matcher = _NEGATIVE_NUMBER

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs:
            self.options.setdefault(action.dest, longs[0])
        return action

    def add_subparsers(self, **kwargs: Any) -> Any:
        action = super().add_subparsers(**kwargs)
        self._subcommands.append(action)
        return action

    @property
    def commands(self) -> dict[str, Parser]:
        """The subcommands' parsers by name (from each subparsers action's public ``choices``)."""
        found: dict[str, Parser] = {}
        for action in self._subcommands:
            choices: Any = action.choices
            found.update({name: child for name, child in choices.items()})
        return found

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``dest`` -> the first long option string, over a parser and all its subparsers."""
    if not isinstance(parser, Parser):
        return {}
    found = dict(parser.options)
    for child in parser.commands.values():
        for dest, option in _options(child).items():
            found.setdefault(dest, option)
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
        "treedp.private_bounds, then pass its result as bounds= with the other budget.",
        "--bounds private takes --epsilon (pure DP): with --rho or --delta give public "
        "--bounds LO HI (for example found by an earlier 'treedp quantiles ... --bounds "
        "private' run, charged to the same ledger).",
    ),
    (
        "bounds='private' read datetimes in a column its type did not declare as "
        "datetimes (a CSV file has no types): give bounds=treedp.PrivateBounds("
        "datetimes=True), or public datetime bounds=(lo, hi).",
        "--bounds private read datetimes in a column whose type did not declare them (a CSV "
        "file has no types): declare it with --datetimes (and --tz ZONE when its cells carry "
        "UTC offsets), or give public datetime --bounds LO HI.",
    ),
    (
        "Private bounds are not available for a per-person or group-by release (with 'by' or "
        "'privacy_unit'): give public bounds=(lo, hi) for all groups.",
        "--bounds private is not available with --by or --privacy-unit (a group-by or "
        "per-person release): give public --bounds LO HI.",
    ),
    (  # streams: the state file is STATE, the batch --count (a new user's run)
        "The 'path' parameter must name a new file (load a saved stream with load_continual).",
        "the stream file exists: give 'treedp stream init' a new file name, or continue this "
        "stream with 'treedp stream step'.",
    ),
    ("The 'batch' parameter must be a count (an int >= 0).", "--count must be 0 or more."),
    (
        "The 'n' parameter is not taken by a per-person or group-by release: group sizes stay "
        "private.",
        "--n is not used by a group-by or per-person release (--by, --privacy-unit): under "
        "--neighbours replace its trees are add/remove trees at half the budget and need no "
        "public number of records; drop --n.",
    ),
)


#: How the accountant states an amount of budget (kept as written by :func:`translate`).
_MEASURE = re.compile(
    r"pure epsilon=[\w.+\-]+|rho=[\w.+\-]+ \(zCDP\)|\(epsilon=[\w.+\-]+, delta=[\w.+\-]+\)"
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
    # an amount of budget (``pure epsilon=1``, ``rho=0.5 (zCDP)``, ``(epsilon=1, delta=1e-06)``:
    # the accountant's words for a measure) is not a parameter: kept as written
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group(0))
        return f"\x00{len(kept) - 1}\x00"

    message = _MEASURE.sub(keep, message)
    message = re.sub(r"\b([a-z_]+)=('?)([\w.+\-]+)\2", keyword, message)
    message = re.sub(r"[Tt]he '([a-z_]+)' (?:parameter|argument)", parameter, message)
    message = re.sub(r"'([a-z_]{2,})'", parameter, message)  # a parameter quoted alone
    message = re.sub(r"'(--[a-z\-]+(?: \w+)?)'", r"\1", message)  # no quotes around options
    message = re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], message)
    return " ".join(message.split())  # one line, always


@contextlib.contextmanager
def reading(path: str | list[str], column: str) -> Iterator[None]:
    """Any failure of the reader inside becomes one clear line.

    The reader's own errors (missing file, unknown column, ...) are treedp errors and pass
    through. Anything else (a decoding error, a malformed row reported by a parser) is
    reported by kind only: its text may quote the file's contents, which are private.
    """
    label = path if isinstance(path, str) else ", ".join(path)
    try:
        yield
    except (treedp.TreeDPError, KeyboardInterrupt, MemoryError, ImportError):
        raise  # a missing extra is not a malformed file
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
    """An input/output error by kind only (its text may quote the file's contents)."""
    text = str(exc).lower()
    if "compress" in text or "gzip" in text or "eof" in text or "truncat" in text:
        return "its compressed stream is truncated or corrupt (an incomplete download or copy?)"
    return f"an input/output error ({type(exc).__name__})"


def option_of(dest: str) -> str:
    """The command line's option for an argument's ``dest`` (``max_groups``: ``--max-groups``)."""
    return "--" + dest.replace("_", "-")


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


def _int_or(text: str, word: str, expected: str) -> int | str:
    """``word`` itself, else ``text`` as an int; argparse's one-line error otherwise."""
    if text == word:
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{expected}, not {text!r}") from None


def bins_arg(text: str) -> int | str:
    return _int_or(text, "integers", "--bins must be an integer or 'integers'")


def bound_arg(text: str) -> int | str:
    """A contribution bound: an int, or ``auto`` (chosen privately by the library)."""
    return _int_or(text, "auto", "expected a positive integer or 'auto'")


def fixed_bound_arg(text: str) -> int | str:
    """A contribution bound where only an int is meaningful (``treedp plan``, ``treedp stream
    init``): ``auto`` is passed on for the library to say why it is refused there."""
    return _int_or(text, "auto", "expected a positive integer")


def add_neighbours(
    parser: argparse.ArgumentParser,
    help: str = "neighbour relation (default: add_remove)",
    default: str | None = "add_remove",
    n: bool = True,
) -> None:
    """``--neighbours`` (the library's relations) and, with ``n``, the public ``--n``."""
    parser.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=treedp.PARAMETERS["neighbours"].choices,
        default=default,
        help=help,
    )
    if n:
        parser.add_argument(
            "--n", type=int, help="public number of records (with --neighbours replace)"
        )


def add_seed_and_nan(parser: argparse.ArgumentParser, nan_help: str) -> None:
    """``--nan`` (the library's policies) and ``--insecure-seed``."""
    parser.add_argument(
        "--nan", choices=treedp.PARAMETERS["nan"].choices, default="error", help=nan_help
    )
    parser.add_argument(
        "--insecure-seed",
        type=int,
        metavar="SEED",
        help="seed the noise (reproducible; for tests and research only, never for publication)",
    )


def rng_from(args: argparse.Namespace) -> treedp.InsecureSeededSource | None:
    """The seeded source of ``--insecure-seed``, else None (the operating system's)."""
    seed = args.insecure_seed
    return None if seed is None else treedp.InsecureSeededSource(seed)


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
#: ``treedp quantiles`` and ``treedp median``: integer mode came from the column's type.
TYPED_LINE = (
    "integer mode: the column's type is an integer type, so the answers are integers of the "
    "domain (as with --bins integers; cast the column to a float type for continuous ones)"
)


def fmt(value: Any, spec: str = ".6g") -> str:
    """A number for people: 6 significant digits; a missing answer (None, NaN) is ``nan``."""
    if value is None:
        return "nan"
    if isinstance(value, float | np.floating):
        return f"{float(value):{spec}}"
    return str(value)


def fmt_spent(value: float) -> str:
    """A budget spent, for people: rounded up to 6 significant digits, so that it is never
    shown below what was spent (``0.9999999997`` of 1, what rounding the parts down leaves,
    is ``1``; the JSON output keeps the exact float)."""
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        return f"{x:g}"
    exact = Decimal(repr(x))
    step = Decimal(1).scaleb(exact.adjusted() - 5)
    return f"{float(exact.quantize(step, rounding=ROUND_CEILING)):.6g}"


def fmt_count(value: Any) -> str:
    """A count for people: one decimal at any size (``6555520.3``, never ``6.55552e+06``: a
    count of millions keeps its units digit); a missing answer (None, NaN) is ``nan``."""
    return fmt(value, ".1f")


def add_input_arguments(
    parser: Any,
    column_help: str,
    input_help: str = "one or more .csv, .csv.gz, .tsv, .parquet, .arrow or .feather files, "
    "directories or quoted globs, or - for CSV on standard input",
) -> None:
    """The inputs (files, directories or quoted globs), ``--column``, and ``--delimiter`` and
    ``--encoding`` for CSV."""
    parser.add_argument("input", nargs="+", help=input_help)
    parser.add_argument("--column", required=True, help=column_help)
    parser.add_argument("--delimiter", help="CSV field delimiter (default: ',', tab for .tsv)")
    parser.add_argument("--encoding", help="CSV text encoding (default: UTF-8)")


def csv_delimiter(text: str | None) -> str | None:
    """``--delimiter`` as given, with ``\\t`` or ``tab`` meaning a tab."""
    return "\t" if text in ("\\t", "tab") else text


def read_inputs(args: Any, offsets: bool | None = None) -> Any:
    """The ``--column`` of every input of ``args``, one array (each input checked first);
    ``offsets``: CSV datetime cells must carry a UTC offset (True) or none (False), as the
    bounds are aware or naive (:func:`treedp.read_column`)."""
    for path in args.input:
        treedp.check_files(path)
    options = {
        "delimiter": csv_delimiter(args.delimiter),
        "encoding": args.encoding,
        "offsets": offsets,
    }
    parts = []
    for path in args.input:
        with reading(path, args.column):
            parts.append(treedp.read_column(path, args.column, **options))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def add_budget(parser: Any) -> None:
    """``--epsilon`` (pure DP), ``--epsilon --delta`` ((ε, δ)-DP) or ``--rho`` (zCDP)."""
    parser.add_argument("--epsilon", type=float, help="privacy budget (pure DP, Laplace noise)")
    parser.add_argument(
        "--delta", type=float, help="with --epsilon: an (epsilon, delta)-DP target (Gaussian)"
    )
    parser.add_argument("--rho", type=float, help="a rho-zCDP target (Gaussian noise)")


def measure_from(args: argparse.Namespace) -> treedp.PureDP | treedp.ApproxDP | treedp.ZCDP:
    """``--epsilon`` (pure DP), ``--epsilon --delta`` ((ε, δ)-DP) or ``--rho`` (zCDP)."""
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise UsageError("give either --rho, or --epsilon (with --delta for (ε, δ)), not both")
        return treedp.ZCDP(args.rho)
    if args.epsilon is None:
        raise UsageError("a budget is required: --epsilon E, --epsilon E --delta D, or --rho R")
    if args.delta is not None:
        return treedp.ApproxDP(args.epsilon, args.delta)
    return treedp.PureDP(args.epsilon)


def budget_from(args: argparse.Namespace) -> dict[str, Any]:
    """The budget keyword of the library call: ``epsilon=`` (pure DP) or ``privacy=``."""
    if args.rho is None and args.delta is None and args.epsilon is not None:
        return {"epsilon": args.epsilon}  # checked by the library, in its own words
    return {"privacy": measure_from(args)}


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
