"""The ``treedp`` command line: a thin shell over the public API.

Every error becomes one line on stderr (``treedp: error: ...``) and a non-zero exit code:
2 for bad usage or input, 130 for Ctrl-C (no partial file is left), 1 for anything
unexpected. No traceback is printed. Library messages are translated into the command line's
terms (``--nan drop``, not ``nan='drop'``). Every subcommand checks its arguments before it
reads any data.

Each subcommand is one module of this package with ``register(sub)`` (adds its parser and sets
``run``) and ``run(args)``; a new subcommand is a new module plus one line in ``COMMANDS``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import treedp
from treedp.cli import budget, demo, median, plan, quantiles, query, release, report
from treedp.cli._common import Parser, UsageError, translate

__all__ = ["COMMANDS", "main"]

#: The subcommands, in the order ``treedp --help`` lists them.
COMMANDS = (release, query, plan, median, quantiles, report, budget, demo)


def _build_parser() -> Parser:
    parser = Parser(
        prog="treedp",
        description="Differentially private CDFs, range counts and quantiles of one column.",
    )
    parser.add_argument("--version", action="version", version=f"treedp {treedp.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 on success)."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
        args.run(args)
    except UsageError as exc:
        print(f"treedp: error: {translate(str(exc), None)} (see 'treedp --help')", file=sys.stderr)
        return 2
    except treedp.TreeDPError as exc:
        print(f"treedp: error: {translate(str(exc), parser)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # files are written atomically: nothing partial is left
        print("treedp: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (for example `| head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"treedp: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 2
    except Exception as exc:  # never a traceback for the user
        text = " ".join(str(exc).split())
        print(f"treedp: internal error: {type(exc).__name__}: {text}", file=sys.stderr)
        return 1
    return 0
