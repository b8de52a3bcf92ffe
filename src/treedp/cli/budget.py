"""``treedp budget``: set, show and list the privacy budget kept in a ledger file.

``treedp budget init PATH --dataset NAME --epsilon E`` (or ``--rho R``, or ``--epsilon E
--delta D``) sets a dataset's total once; ``show`` prints the total, what was spent and what
remains; ``history`` prints every charge. The spending commands (``release``, ``median``) take
``--ledger PATH --dataset NAME`` (:func:`add_ledger_options`) and charge the ledger before any
noise is drawn.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any

from treedp.cli._common import NEIGHBOURS, Parser, UsageError
from treedp.exceptions import LedgerError
from treedp.privacy.accountant import Charge
from treedp.privacy.ledger import Ledger, init_ledger, list_datasets, open_ledger
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP

__all__ = [
    "add_ledger_options",
    "fmt_measure",
    "ledger_from_args",
    "open_cli_ledger",
    "register",
    "run",
]


def add_ledger_options(parser: argparse.ArgumentParser) -> None:
    """``--ledger PATH --dataset NAME``, as every spending command takes them."""
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        help="charge this budget ledger (made by 'treedp budget init') before any noise is drawn",
    )
    parser.add_argument("--dataset", metavar="NAME", help="the dataset's name in the ledger")


def ledger_from_args(args: argparse.Namespace) -> Ledger | None:
    """The ledger named by ``--ledger`` and ``--dataset``, or None when neither is given."""
    if args.ledger is None and args.dataset is None:
        return None
    if args.ledger is None or args.dataset is None:
        raise UsageError("--ledger and --dataset go together")
    return open_cli_ledger(args.ledger, args.dataset)


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


def open_cli_ledger(path: str, dataset: str) -> Ledger:
    """:func:`~treedp.privacy.ledger.open_ledger`, with a missing file or dataset reported
    in the command line's terms: the ``treedp budget init`` command to run, not the Python
    function (the library's own message names the function, for API users)."""
    try:
        return open_ledger(path, dataset)
    except LedgerError as exc:
        raise _in_cli_terms(exc, path, dataset) from None


def _in_cli_terms(exc: LedgerError, path: str, dataset: str | None) -> LedgerError:
    """``exc`` with the library's Python hint replaced by the ``treedp budget init`` command."""
    message = str(exc)
    named = shlex.quote(dataset) if dataset is not None else "NAME"
    init = f"treedp budget init {shlex.quote(path)} --dataset {named} --epsilon E"
    for api, cli in _API_HINTS:
        if api in message:
            return LedgerError(message.replace(api, cli.format(init=init)))
    return exc


def fmt_measure(m: Measure) -> str:
    """A measure as the CLI prints it: 6 significant digits; a positive amount below the
    smallest budget any release takes (1e-6, what rounding leaves of a total spent in equal
    shares) is shown as used up, its exact value next to it."""
    if isinstance(m, PureDP):
        return f"epsilon={_amount(m.epsilon)} (pure)"
    if isinstance(m, ZCDP):
        return f"rho={_amount(m.rho)} (zCDP)"
    return f"epsilon={_amount(m.epsilon)}, delta={m.delta:.3g}"


def _amount(value: float) -> str:
    from treedp.budget import MIN_EPSILON

    if 0 < value < MIN_EPSILON:
        return f"0 ({value:.2g} left, less than any release takes)"
    return f"{value:.6g}"


def remaining_line(ledger: Ledger) -> str:
    """One line: what a dataset has spent and what remains."""
    return (
        f"budget of {ledger.dataset!r}: spent {fmt_measure(ledger.spent)} of "
        f"{fmt_measure(ledger.total)}; remaining {fmt_measure(ledger.remaining)}"
    )


def register(sub: Any) -> None:
    """Add the ``budget`` subcommand (``init``, ``show``, ``history``)."""
    budget = sub.add_parser("budget", help="set and show the privacy budget kept in a ledger")
    actions = budget.add_subparsers(
        dest="action", required=True, parser_class=Parser, help="init, show or history"
    )
    init = actions.add_parser("init", help="set a dataset's total budget (once)")
    init.add_argument("path", help="the ledger file (created if missing)")
    init.add_argument("--dataset", required=True, metavar="NAME", help="the dataset's name")
    init.add_argument("--epsilon", type=float, help="total epsilon (pure, or with --delta)")
    init.add_argument("--delta", type=float, help="total delta, in (0, 1e-3]")
    init.add_argument("--rho", type=float, help="total rho (zCDP)")
    init.add_argument(
        "--neighbours",
        "--neighbors",
        dest="neighbours",
        choices=NEIGHBOURS,
        default="add_remove",
        help="the neighbour relation the total is stated for (default: add_remove)",
    )
    init.set_defaults(run=run)
    show = actions.add_parser("show", help="a dataset's total, spent and remaining budget")
    show.add_argument("path", help="the ledger file")
    show.add_argument("--dataset", metavar="NAME", help="the dataset (default: every dataset)")
    show.set_defaults(run=run)
    history = actions.add_parser("history", help="every charge of a dataset")
    history.add_argument("path", help="the ledger file")
    history.add_argument("--dataset", required=True, metavar="NAME", help="the dataset's name")
    history.set_defaults(run=run)


def _total(args: argparse.Namespace) -> Measure:
    if args.rho is not None:
        if args.epsilon is not None or args.delta is not None:
            raise UsageError("give --rho alone, or --epsilon (with --delta for (epsilon, delta))")
        return ZCDP(args.rho)
    if args.epsilon is None:
        raise UsageError("give the total: --epsilon E, --rho R, or --epsilon E --delta D")
    if args.delta is not None:
        return ApproxDP(args.epsilon, args.delta)
    return PureDP(args.epsilon)


def _short(value: Any) -> Any:
    if isinstance(value, list | tuple) and len(value) > 3:
        return f"[{len(value)} values]"
    return value


def _row(c: Charge) -> list[str]:
    shown = {k: _short(v) for k, v in c.record.parameters.items()}
    params = json.dumps(shown, sort_keys=True, default=str)
    if len(params) > 60:
        params = params[:57] + "..."
    return [
        str(c.seq),
        c.time[:19].replace("T", " "),
        c.record.mechanism,
        fmt_measure(c.record.measure),
        c.record.neighbours,
        c.group or "-",
        params,
    ]


def run(args: argparse.Namespace) -> None:
    """Run ``treedp budget ACTION`` with the parsed arguments."""
    if args.action == "init":
        with init_ledger(args.path, args.dataset, _total(args), neighbours=args.neighbours) as led:
            print(
                f"{args.path}: dataset {led.dataset!r} has a total of {fmt_measure(led.total)} "
                f"({led.neighbours} neighbours)"
            )
        return
    if args.action == "show":
        try:
            names = [args.dataset] if args.dataset else list(list_datasets(args.path))
        except LedgerError as exc:
            raise _in_cli_terms(exc, args.path, None) from None
        for name in names:
            with open_cli_ledger(args.path, name) as led:
                n = sum(c.group is None for c in led.history)
                print(
                    f"{name}: total {fmt_measure(led.total)} ({led.neighbours} neighbours); "
                    f"spent {fmt_measure(led.spent)} in {n} charge{'s' * (n != 1)}; "
                    f"remaining {fmt_measure(led.remaining)}"
                )
        return
    with open_cli_ledger(args.path, args.dataset) as led:
        header = ["#", "time (UTC)", "mechanism", "spend", "neighbours", "group", "parameters"]
        rows = [header] + [_row(c) for c in led.history]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for r in rows:
            print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
        print(remaining_line(led))
