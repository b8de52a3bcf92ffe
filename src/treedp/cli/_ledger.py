"""The ``--ledger PATH --dataset NAME`` options every spending command takes, and how a
ledger and its budgets are printed (shared by the commands; imports no command module)."""

from __future__ import annotations

import argparse
import contextlib
import shlex
from collections.abc import Iterator
from typing import Any

import treedp
from treedp.cli._common import UsageError

__all__ = [
    "add_ledger_options",
    "fmt_measure",
    "in_cli_terms",
    "ledger_from_args",
    "open_cli_ledger",
    "remaining_line",
]


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--ledger PATH --dataset NAME``, as every spending command takes them."""
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="charge this budget ledger (made by 'treedp budget init') before any noise is drawn",
    )
    parser.add_argument("--dataset", metavar="NAME", help="the dataset's name in the ledger")
    parser.add_argument(
        "--note",
        metavar="TEXT",
        help="what this release is, in your words, recorded with its charge in the ledger "
        "(beside the column, the input as given and the public bounds)",
    )


@contextlib.contextmanager
def ledger_from_args(args: argparse.Namespace) -> Iterator[treedp.Ledger | None]:
    """The ledger named by ``--ledger`` and ``--dataset`` (closed on leaving), or None when
    neither is given; every charge made in the block records ``--note``."""
    note = getattr(args, "note", None)
    if args.ledger is None and args.dataset is None:
        if note is not None:
            raise UsageError("--note goes with --ledger: it is recorded with the charge")
        yield None
        return
    if args.ledger is None or args.dataset is None:
        raise UsageError("--ledger and --dataset go together")
    noted = contextlib.nullcontext() if note is None else treedp.noting(note)
    with noted, open_cli_ledger(args.ledger, args.dataset) as ledger:
        yield ledger


#: The library's hints that name a Python function (right for API users), and what the
#: command line says instead (``{init}``: the ``treedp budget init`` command to run).
_API_HINTS = (
    (
        "Create one with treedp.init_ledger (or open_ledger with a total).",
        "Create one with: {init}",
    ),
    (
        "Set its budget first (treedp.init_ledger or 'treedp budget init').",
        "Set its budget first with: {init}",
    ),
)


def open_cli_ledger(path: str, dataset: str) -> treedp.Ledger:
    """:func:`treedp.open_ledger`, with a missing file or dataset reported
    in the command line's terms: the ``treedp budget init`` command to run, not the Python
    function (the library's own message names the function, for API users)."""
    try:
        return treedp.open_ledger(path, dataset)
    except treedp.LedgerError as exc:
        raise in_cli_terms(exc, path, dataset) from None


def in_cli_terms(exc: treedp.LedgerError, path: str, dataset: str | None) -> treedp.LedgerError:
    """``exc`` with the library's Python hint replaced by the ``treedp budget init`` command."""
    message = str(exc)
    named = shlex.quote(dataset) if dataset is not None else "NAME"
    init = f"treedp budget init {shlex.quote(path)} --dataset {named} --epsilon E"
    for api, cli in _API_HINTS:
        if api in message:
            return treedp.LedgerError(message.replace(api, cli.format(init=init)))
    return exc


def fmt_measure(m: Any) -> str:
    """A measure as the CLI prints it: 6 significant digits; a positive amount below the
    smallest budget any release takes (1e-6, what rounding leaves of a total spent in equal
    shares) is shown as used up, its exact value next to it."""
    if isinstance(m, treedp.PureDP):
        return f"epsilon={_amount(m.epsilon)} (pure)"
    if isinstance(m, treedp.ZCDP):
        return f"rho={_amount(m.rho)} (zCDP)"
    return f"epsilon={_amount(m.epsilon)}, delta={m.delta:.3g}"


def _amount(value: float) -> str:
    """An amount of budget for people: 6 significant digits; what rounding leaves below the
    smallest budget any release takes (1e-6) is shown as 0, never as a float crumb such as
    2.3e-12, and never negative."""
    smallest = treedp.PARAMETERS["epsilon"].low or 0.0  # the smallest epsilon any release takes
    if value < smallest:
        return "0"
    return f"{value:.6g}"


def remaining_line(ledger: treedp.Ledger) -> str:
    """One line: what a dataset has spent and what remains."""
    return (
        f"budget of {ledger.dataset!r}: spent {fmt_measure(ledger.spent)} of "
        f"{fmt_measure(ledger.total)}; remaining {fmt_measure(ledger.remaining)}"
    )
