"""Grouped releases (``--by``, ``--privacy-unit``) for the commands: keys read from a
``--keys`` file, the run and its line, the ``--info`` description and ``--key`` lookup.

Keys from ``--keys`` are text: ``treedp release`` converts them for Parquet and Arrow inputs to
their ``by`` column's type (from the schema, no values); CSV key columns are text.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import treedp
from treedp.cli._common import SEEDED, option_of
from treedp.cli._describe import (
    approx_reading,
    bound_spent,
    collision_text,
    guarantee_text,
    info,
    target_entry,
)

__all__ = ["grouped_info", "pick_key", "read_keys", "release_of", "wrote_grouped"]


def read_keys(path: str, by: list[str] | int) -> list[Any]:
    """Public keys from a text file: one per line; comma-separated fields for several ``by``.

    A first line that equals the ``--by`` column name (the names, comma-separated, for
    several) is a header row, as a file exported with its column name has: it is skipped and
    a note says so, so it never becomes a key named after the column.
    """
    p = Path(path)
    if p.is_dir():
        raise treedp.InvalidParameterError(
            f"--keys '{path}' is a folder: give the text file of keys, one per line."
        )
    if not p.is_file():
        raise treedp.InvalidParameterError(f"The keys file '{path}' does not exist.")
    lines = [line.rstrip("\n\r") for line in p.read_text(encoding="utf-8").splitlines()]
    lines = [line for line in lines if line.strip()]
    width = by if isinstance(by, int) else len(by)  # an int: the names are not known
    rows: list[Any] = (
        lines if width <= 1 else [tuple(f.strip() for f in line.split(",")) for line in lines]
    )
    header: Any = None if isinstance(by, int) else (by[0] if width <= 1 else tuple(by))
    first = rows[0].strip() if rows and isinstance(rows[0], str) else (rows[0] if rows else None)
    if header is not None and first == header:
        print(
            f"treedp: note: the first line of --keys {path} names the --by column: read as a "
            "header row, not a key",
            file=sys.stderr,
        )
        rows = rows[1:]
    return rows


def release_of(args: argparse.Namespace, query: Any, ledger: Any) -> Any:
    """:func:`treedp.run_query`; when private key selection keeps no key, the message says
    that the budget was spent (and charged to ``--ledger``): the selection's noise was drawn
    after the charge, so the refusal is not free."""
    try:
        return treedp.run_query(query)
    except treedp.DataError as exc:
        if not str(exc).startswith("Private key selection kept no key"):
            raise
        where = f"charged to --ledger {args.ledger}" if ledger is not None else "spent"
        target = f"--epsilon {args.epsilon:g}, --selection-delta {args.selection_delta:g}"
        raise treedp.DataError(
            "Private key selection kept no key, so no release was written, but the budget was "
            f"{where} ({target}): the selection's noise was drawn. Give the public --keys "
            "FILE, or a larger --epsilon."
        ) from None


def wrote_grouped(args: argparse.Namespace, grouped: Any) -> str:
    """The line that says what a grouped release (or a per-person one, without ``--by``)
    holds and guarantees."""
    per_key = isinstance(grouped, treedp.GroupedRelease)
    return (
        f"wrote {args.out}: "
        + (f"{len(grouped)} groups by {', '.join(grouped.by)}, " if per_key else "")
        + f"{guarantee_text(grouped.guarantee)}"
        + collision_text(grouped)
        + approx_reading(grouped.guarantee, args.delta)
        + f" for unit {grouped.unit if per_key else grouped.unit.label} "
        f"({grouped.neighbours}){_chosen(grouped)}{SEEDED if grouped.seeded else ''}"
    )


def _chosen(grouped: Any) -> str:
    """``--max-contributions auto``: the bound chosen and the budget its choice took."""
    choice = getattr(grouped, "bound_choice", None)
    if not choice:  # a per-person release without groups: its unit holds the choice's budget
        person: Any = getattr(grouped, "unit", None)
        chosen = None if person is None else bound_spent(person)
        if chosen is None:
            return ""
        bound = person.bounds.max_contributions
        return f"; --max-contributions {bound} chosen privately (auto, {chosen[0]}={chosen[1]:.6g})"
    name = next(n for n in ("max_contributions_per_group", "max_contributions") if n in choice)
    value = grouped.bounds.describe().get(name)
    unit = "epsilon" if "epsilon_spent" in choice else "rho"
    spent = float(choice.get(f"{unit}_spent", 0.0))
    return f"; {option_of(name)} {value} chosen privately (auto, {unit}={spent:.6g} of the budget)"


def grouped_info(grouped: Any) -> dict[str, str]:
    """What a grouped release holds, in words and the command line's option names."""
    bounds = grouped.bounds.describe()
    limits = [
        f"{option_of(name)} {bounds[name]}"
        for name in ("max_contributions", "max_groups", "max_contributions_per_group")
        if bounds.get(name) is not None
    ]
    unit = grouped.bounds.unit
    selection = grouped.selection
    if selection is None:
        chosen = "public (--keys)" if grouped.by else "no --by: one group of all records"
    else:
        chosen = (
            f"selected privately (epsilon={float(selection['epsilon']):.6g}, "
            f"delta={float(selection['delta']):.3g}, --max-groups {selection['max_groups']})"
        )
    details = {
        "by": ", ".join(grouped.by) or "- (one group)",
        "guarantee": f"{guarantee_text(grouped.guarantee)}{collision_text(grouped)} "
        "for the whole release "
        f"({grouped.neighbours.replace('_', '/')} neighbours)",
        **target_entry(grouped),
        "privacy unit": "one row is one person"
        if unit is None
        else f"a person (--privacy-unit {unit})"
        + (f": {', '.join(limits)}" if limits else "")
        + _chosen(grouped),
        "keys": f"{len(grouped)}, {chosen}",
    }
    if len(grouped):
        first = info(grouped[grouped.keys[0]])
        details["per key"] = f"{first['mechanism']}, {first['bins']}; noise {first['noise']}"
    details["seeded"] = "yes, not for publication" if grouped.seeded else "no"
    return details


def pick_key(grouped: Any, text: str) -> Any:
    """The released key named by ``--key`` (fields joined by commas for several ``by``)."""
    if not grouped.by:
        raise treedp.InvalidParameterError(
            "--key: this grouped release has no --by (one group of all records); drop --key."
        )
    wanted: Any = text
    if len(grouped.by) > 1:
        wanted = tuple(field.strip() for field in text.split(","))
    if wanted not in grouped:  # keys of numeric columns: matched by their text
        by_text = {
            (tuple(map(str, k)) if isinstance(k, tuple) else str(k)): k for k in grouped.keys
        }
        wanted = by_text.get(wanted, wanted)
    if wanted not in grouped:
        raise treedp.InvalidParameterError(f"The key {text!r} is not one of the released keys.")
    return wanted
