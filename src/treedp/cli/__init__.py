"""The ``treedp`` command line: a thin shell over the public API.

Every error becomes one line on stderr (``treedp: error: ...``) and a non-zero exit code:
2 for bad usage or input, 130 for Ctrl-C and ``128 + n`` for SIGTERM or SIGHUP (signal ``n``:
what ``timeout``, systemd, Kubernetes and Slurm send; unwound like Ctrl-C, so no partial file
is left), 1 for anything unexpected. No traceback is printed. Library messages are
translated into the command line's terms (``--nan drop``, not ``nan='drop'``). Every
subcommand checks its arguments before it reads any data.

Each subcommand is one module of this package with ``register(sub)`` (adds its parser and sets
``run``) and ``run(args)``; a new subcommand is a new module plus one line in ``COMMANDS``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import treedp
from treedp import __version__

if TYPE_CHECKING:
    from treedp.cli._common import Parser

__all__ = ["COMMANDS", "main"]

#: The subcommands (modules of this package), in the order ``treedp --help`` lists them.
#: They are imported when the parser is built, so ``treedp --version`` loads none of them.
COMMANDS = (
    "release",
    "query",
    "plan",
    "median",
    "quantiles",
    "report",
    "budget",
    "demo",
    "profile",
    "stream",
)


def _build_parser() -> Parser:
    from treedp.cli._common import Parser

    parser = Parser(
        prog="treedp",
        description="Differentially private CDFs, range counts and quantiles of one column.",
    )
    parser.add_argument("--version", action="version", version=f"treedp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name in COMMANDS:
        importlib.import_module(f"treedp.cli.{name}").register(sub)
    return parser


def _subparser(parser: Parser, command: str) -> Parser:
    """The parser of one subcommand (its options are the ones a message may name)."""
    return parser.commands.get(command, parser)


_Terminated = treedp.interrupts.Terminated


@contextlib.contextmanager
def _catch_termination() -> Iterator[None]:
    """Record and raise SIGINT, SIGTERM and SIGHUP while the CLI runs
    (:mod:`treedp.interrupts`; main thread only; the caller's handlers are restored
    afterwards)."""
    previous = {}
    treedp.interrupts.RECEIVED.clear()
    for number in treedp.interrupts.SIGNALS:
        with contextlib.suppress(ValueError):  # not the main thread: left as it is
            previous[number] = signal.signal(number, treedp.interrupts.handler)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        treedp.interrupts.RECEIVED.clear()  # nothing recorded outlives the run


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 on success)."""
    with _catch_termination():
        try:
            return _main(argv)
        except _Terminated as exc:  # unwound like Ctrl-C: nothing partial is left
            print(f"treedp: terminated ({signal.Signals(exc.signum).name})", file=sys.stderr)
            return 128 + exc.signum


def _main(argv: Sequence[str] | None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    if words == ["--version"]:  # answered before numpy or any subcommand is imported
        print(f"treedp {__version__}")
        return 0
    try:  # the imports and the parser take a moment: Ctrl-C then is one line too
        import treedp
        from treedp.cli._common import UsageError, translate

        parser = _build_parser()
        treedp.interrupts.check()  # a signal whose exception an import dropped
    except KeyboardInterrupt:
        print("treedp: interrupted", file=sys.stderr)
        return 130
    except ImportError:  # numpy turns an interrupt inside its C-extension import into one
        if not treedp.interrupts.RECEIVED:  # ("bad install", 51 lines: an interrupt review)
            raise
        if treedp.interrupts.RECEIVED[0] != signal.SIGINT:
            raise _Terminated(treedp.interrupts.RECEIVED[0]) from None
        print("treedp: interrupted", file=sys.stderr)
        return 130
    active = parser  # the subcommand's own parser, for messages in its options' names
    try:
        if words and words[0].startswith("-") and words[0] not in ("-h", "--help", "--version"):
            # argparse would say only that the command is missing
            raise UsageError(f"unrecognized option {words[0]}: the command comes first")
        args = parser.parse_args(argv)
        active = _subparser(parser, args.command)
        with warnings.catch_warnings():  # the commands print the bounds warning in one line
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            treedp.interrupts.check()  # the last moment before anything is read or charged
            args.run(args)
    except UsageError as exc:
        command = words[0] if words and not words[0].startswith("-") else None
        sub = parser if command is None else _subparser(parser, command)
        if sub is not parser and len(words) > 1 and words[1] in sub.commands:
            command = f"{command} {words[1]}"  # treedp stream step --help
        where = f"treedp {command} --help" if sub is not parser else "treedp --help"
        print(f"treedp: error: {translate(str(exc), None)} (see '{where}')", file=sys.stderr)
        return 2
    except treedp.TreeDPError as exc:
        print(f"treedp: error: {translate(str(exc), active)}", file=sys.stderr)
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
