"""The input files of ``treedp median`` and ``treedp quantiles``, handed to the library."""

from __future__ import annotations

import argparse

import treedp
from treedp.cli._common import csv_delimiter, reading

__all__ = ["file_source"]


def file_source(args: argparse.Namespace) -> treedp.FileSource:
    """The ``input`` files (each checked first) for the library to read: CSV datetime cells
    are then checked against the bounds as ``treedp release`` checks them (a cell with a UTC
    offset under naive bounds is refused), before any budget is charged."""
    for path in args.input:
        with reading(path, args.column):
            treedp.check_files(path)
    source = args.input[0] if len(args.input) == 1 else list(args.input)
    return treedp.FileSource(
        source, delimiter=csv_delimiter(args.delimiter), encoding=args.encoding
    )
