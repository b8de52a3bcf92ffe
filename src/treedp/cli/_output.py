"""``--format json`` and ``--quiet`` for every command that prints answers (shared).

Three ways to print one command's result, chosen by :func:`add_output`'s options:

* ``text`` (the default): the lines people read on stdout; notes and warnings on stderr as
  ``treedp: note: ...`` / ``treedp: warning: ...``.
* ``--quiet``: the answers only, one per line, no prose (no notes; warnings stay on stderr,
  because they say an answer is unreliable).
* ``--format json``: one JSON object on stdout, on one line, with the command's documented
  keys (docs/cli.md) plus ``"warning"`` (a string or null), ``"notes"`` (a list) and, with a
  ledger, ``"budget"``. Nothing else is printed on stdout or stderr (errors still are one line
  on stderr and exit 2).

Numbers in JSON are plain floats and ints (NaN as null), datetimes ISO text, budgets objects
such as ``{"epsilon": 1.0}``, ``{"epsilon": 1.0, "delta": 1e-06}`` or ``{"rho": 0.5}``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import numpy as np

import treedp
from treedp.cli._common import SEEDED
from treedp.cli._describe import plain

__all__ = [
    "NO_ANSWER",
    "Output",
    "add_output",
    "bare",
    "budget_json",
    "jsonable",
    "measure_json",
    "no_answer",
    "output_of",
    "warn_seeded",
    "with_no_answer",
]

#: The warning beside a quantile answered NaN (or NaT): a release whose estimated number of
#: records is not positive holds no quantile (``Release.quantile``).
NO_ANSWER = (
    "The release's estimated number of records is not positive, so it holds no quantile "
    "(printed as nan): give more epsilon or more records."
)


def add_output(parser: Any, json_help: str = "", quiet: bool = True) -> None:
    """``--format {text,json}`` and, with ``quiet``, ``--quiet`` (answers only)."""
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (default) or json: one JSON object on stdout" + json_help,
    )
    if quiet:
        parser.add_argument(
            "--quiet", action="store_true", help="answers only, one per line, no prose"
        )


def measure_json(m: Any) -> dict[str, float]:
    """A measure as JSON: ``{"epsilon": e}``, ``{"epsilon": e, "delta": d}`` or ``{"rho": r}``;
    an amount below the smallest budget any release takes (a float crumb) is 0."""
    smallest = treedp.PARAMETERS["epsilon"].low or 0.0

    def amount(value: float) -> float:
        return 0.0 if value < smallest else float(value)

    if isinstance(m, treedp.ZCDP):
        return {"rho": amount(m.rho)}
    if isinstance(m, treedp.ApproxDP):
        return {"epsilon": amount(m.epsilon), "delta": float(m.delta)}
    return {"epsilon": amount(m.epsilon)}


def budget_json(ledger: Any) -> dict[str, Any]:
    """A ledger dataset's budget: ``dataset``, ``total``, ``spent``, ``remaining``."""
    return {
        "dataset": ledger.dataset,
        "total": measure_json(ledger.total),
        "spent": measure_json(ledger.spent),
        "remaining": measure_json(ledger.remaining),
    }


#: What ``--quiet`` prints on stderr for answers made with ``--insecure-seed`` (their text
#: lines carry the mark; answers alone cannot).
SEEDED_QUIET = (
    "treedp: warning: SEEDED: not for publication (noise from --insecure-seed: reproducible, "
    "for tests and research only)"
)


def warn_seeded() -> None:
    """Say on stderr that ``--quiet``'s answers came from seeded noise."""
    print(SEEDED_QUIET, file=sys.stderr)


def bare(value: Any) -> str:
    """An answer for ``--quiet``: full precision (``repr`` of a float), ISO datetimes, ``nan``
    for a missing one."""
    value = plain(value)
    return "nan" if value is None else str(value)


def jsonable(value: Any) -> Any:
    """Plain JSON data (numpy scalars and arrays, datetimes, tuples, NaN as null, an infinite
    end as the string ``"inf"`` or ``"-inf"``: JSON has no infinity)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist") and getattr(value, "ndim", 0) > 0:
        return [jsonable(v) for v in value.tolist()]
    value = plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None if math.isnan(value) else str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class Output:
    """One command's result, printed as text, answers only or one JSON object."""

    def __init__(self, fmt: str = "text", quiet: bool = False) -> None:
        self.json = fmt == "json"
        self.quiet = quiet and not self.json
        self.document: dict[str, Any] = {}
        self._warning: str | None = None
        self._notes: list[str] = []
        self._budget: dict[str, Any] | None = None
        self._seeded_said = False

    def line(self, text: str, answer: str | None = None) -> None:
        """A line of text output; with ``--quiet`` only ``answer`` (when given) is printed, and
        the seeded mark the text carries goes to stderr (once)."""
        if self.json:
            return
        if self.quiet:
            if answer is not None:
                print(answer)
            if SEEDED.strip() in text and not self._seeded_said:
                warn_seeded()
                self._seeded_said = True
            return
        print(text)

    def set(self, **values: Any) -> None:
        """Keys of the JSON document (ignored in text)."""
        self.document.update(values)

    def note(self, text: str) -> None:
        """A hint for people: stderr in text, dropped with ``--quiet``, ``notes`` in JSON."""
        if self.json:
            self._notes.append(text)
        elif not self.quiet:
            print(f"treedp: note: {text}", file=sys.stderr)

    def warn(self, text: str | None) -> None:
        """An answer's warning: stderr in text and quiet, ``warning`` in JSON (once)."""
        if not text:
            return
        if self.json:
            self._warning = text
        else:
            print(f"treedp: warning: {text}", file=sys.stderr)

    def budget(self, ledger: Any, line: str) -> None:
        """The ledger's budget after the run: ``line`` in text, ``budget`` in JSON."""
        if ledger is None:
            return
        if self.json:
            self._budget = budget_json(ledger)
        else:
            self.line(line)

    def finish(self) -> None:
        """Print the JSON document (one object, one line); nothing in text."""
        if not self.json:
            return
        document = dict(self.document)
        document["warning"] = self._warning
        document["notes"] = self._notes
        if self._budget is not None:
            document["budget"] = self._budget
        print(json.dumps(jsonable(document)))


def output_of(args: argparse.Namespace) -> Output:
    """The :class:`Output` of a command's ``--format`` and ``--quiet``."""
    return Output(getattr(args, "format", "text") or "text", bool(getattr(args, "quiet", False)))


def no_answer(values: Any) -> bool:
    """Whether a quantile answer is NaN or NaT (a release whose estimated count is not
    positive: post-processing of released values). Refusal texts are not answers."""
    array = np.asarray(values)
    if array.dtype.kind == "M":
        return bool(np.isnat(array).any())
    return array.dtype.kind == "f" and bool(np.isnan(array).any())


def with_no_answer(warning: str | None, values: Any) -> str | None:
    """``warning``, with :data:`NO_ANSWER` after it when an answer is NaN or NaT."""
    if not no_answer(values):
        return warning
    return NO_ANSWER if not warning else f"{warning} {NO_ANSWER}"
