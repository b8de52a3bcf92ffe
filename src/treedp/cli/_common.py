"""What every ``treedp`` subcommand shares: the parser class, argument types and formatting."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

__all__ = [
    "NEIGHBOURS",
    "SEEDED",
    "Parser",
    "UsageError",
    "add_neighbours",
    "bins_arg",
    "fmt",
    "number_or_text",
    "points",
]


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def number_or_text(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text  # a datetime such as 2024-01-01; validated by the library
    return (
        int(value)
        if value.is_integer() and "." not in text and "e" not in text.lower()
        else (value)
    )


def bins_arg(text: str) -> int | str:
    if text == "integers":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--bins must be an integer or 'integers', not {text!r}"
        ) from None


#: The neighbour relations (no registry holds them yet).
NEIGHBOURS = ("add_remove", "replace")


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


def points(items: Sequence[str]) -> Any:
    values = [number_or_text(s) for s in items]
    if all(isinstance(v, int | float) for v in values):
        return np.asarray(values, dtype=np.float64)
    return np.asarray(values, dtype="datetime64")


SEEDED = " [SEEDED: not for publication]"


def fmt(value: Any) -> str:
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    return str(value)
