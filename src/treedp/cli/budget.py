"""``treedp budget``: set (``init``), show and list (``history``) the privacy budget a ledger
file keeps per dataset; the spending commands charge it (``--ledger PATH --dataset NAME``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

import treedp
from treedp.cli._common import Parser, add_neighbours, measure_from
from treedp.cli._ledger import fmt_measure, in_cli_terms, open_cli_ledger, remaining_line
from treedp.cli._output import add_output, budget_json, measure_json, output_of

__all__ = ["fmt_measure", "register", "run"]

#: Where a charge's parameters hold what it paid for (the library's ``SUBJECT_KEY``).
SUBJECT_KEY = "release"


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
    add_neighbours(
        init, "the neighbour relation the total is stated for (default: add_remove)", n=False
    )
    init.add_argument(
        "--privacy-unit",
        metavar="NAME",
        help="fix the privacy unit now: 'record' (one row is one person) or the person-id "
        "column; a charge of another unit is then refused (default: the first charge's unit)",
    )
    add_output(init, " (keys: path, dataset, total, neighbours, privacy_unit)")
    init.set_defaults(run=run)
    show = actions.add_parser("show", help="a dataset's total, spent and remaining budget")
    show.add_argument("path", help="the ledger file")
    show.add_argument("--dataset", metavar="NAME", help="the dataset (default: every dataset)")
    add_output(show, " (key: datasets, each with dataset, total, spent, remaining, ...)")
    show.set_defaults(run=run)
    history = actions.add_parser("history", help="every charge of a dataset")
    history.add_argument("path", help="the ledger file")
    history.add_argument("--dataset", required=True, metavar="NAME", help="the dataset's name")
    add_output(history, " (keys: charges, budget)")
    history.set_defaults(run=run)


def _short(value: Any) -> Any:
    if isinstance(value, list | tuple) and len(value) > 3:
        return f"[{len(value)} values]"
    return value


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _released(c: Any) -> str:
    """What a charge paid for, in one cell: the note, else the column and the input."""
    subject = c.record.parameters.get(SUBJECT_KEY) or {}
    what = " of ".join(str(subject[k]) for k in ("column", "source") if subject.get(k))
    note = subject.get("note")
    return _cut(f"{note} ({what})" if note and what else note or what or "-", 48)


def _row(c: Any) -> list[str]:
    """One charge of the ledger's history (an accountant's charge record) as table cells."""
    shown = {k: _short(v) for k, v in c.record.parameters.items() if k != SUBJECT_KEY}
    return [
        str(c.seq),
        c.time[:19].replace("T", " "),
        c.record.mechanism,
        fmt_measure(c.record.measure),
        c.record.neighbours,
        c.group or "-",
        _released(c),
        _cut(json.dumps(shown, sort_keys=True, default=str), 60),
    ]


def run(args: argparse.Namespace) -> None:
    """Run ``treedp budget ACTION`` with the parsed arguments."""
    out = output_of(args)
    if args.action == "init":
        with treedp.init_ledger(
            args.path,
            args.dataset,
            measure_from(args),
            neighbours=args.neighbours,
            privacy_unit=args.privacy_unit,
        ) as led:
            unit = led.privacy_unit  # written to the file with --privacy-unit, else None
            unit_text = unit or "fixed by the first charge"
            out.line(
                f"{args.path}: dataset {led.dataset!r} has a total of {fmt_measure(led.total)} "
                f"({led.neighbours} neighbours, privacy unit {unit_text})",
                fmt_measure(led.total),
            )
            out.set(
                path=args.path,
                dataset=led.dataset,
                total=measure_json(led.total),
                neighbours=led.neighbours,
                privacy_unit=unit,
            )
        out.finish()
        return
    if args.action == "show":
        try:
            names = [args.dataset] if args.dataset else list(treedp.list_datasets(args.path))
        except treedp.LedgerError as exc:
            raise in_cli_terms(exc, args.path, None) from None
        shown = []
        for name in names:
            with open_cli_ledger(args.path, name) as led:
                n = sum(
                    c.group is None and c.record.mechanism != treedp.Ledger.DECLARATION
                    for c in led.history
                )
                unit = led.privacy_unit  # None until the first charge
                out.line(
                    f"{name}: total {fmt_measure(led.total)} ({led.neighbours} neighbours, "
                    f"privacy unit {unit or 'not fixed yet'}); "
                    f"spent {fmt_measure(led.spent)} in {n} charge{'s' * (n != 1)}; "
                    f"remaining {fmt_measure(led.remaining)}",
                    f"{name} {fmt_measure(led.remaining)}",
                )
                shown.append(
                    {**budget_json(led), "neighbours": led.neighbours, "privacy_unit": unit,
                     "charges": n}
                )  # fmt: skip
        out.set(datasets=shown)
        out.finish()
        return
    with open_cli_ledger(args.path, args.dataset) as led:
        header = [
            "#", "time (UTC)", "mechanism", "spend", "neighbours", "group", "release",
            "parameters",
        ]  # fmt: skip
        rows = [header] + [_row(c) for c in led.history]
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        for i, r in enumerate(rows):
            text = "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            out.line(text, "\t".join(r) if i else None)  # --quiet: the rows, tab-separated
        out.set(charges=[_charge_json(c) for c in led.history])
        out.budget(led, remaining_line(led))
        out.finish()


def _charge_json(c: Any) -> dict[str, Any]:
    """One charge of the history as JSON."""
    return {
        "seq": c.seq,
        "time": c.time,
        "mechanism": c.record.mechanism,
        "spend": measure_json(c.record.measure),
        "neighbours": c.record.neighbours,
        "unit": c.record.unit,
        "group": c.group,
        "release": c.record.parameters.get(SUBJECT_KEY),
        "parameters": {k: _short(v) for k, v in c.record.parameters.items() if k != SUBJECT_KEY},
    }
