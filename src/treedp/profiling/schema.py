"""The public type of every column of a table, from its schema or the user's declaration.

A kind is ``"integer"`` (one bin per integer), ``"float"`` (equal-width bins), ``"datetime"``,
or None (not profiled: text, booleans, anything else). It is read from the table's schema
(:func:`treedp.engines.schema.schema_kinds`); ``types=`` overrides it. No value is read. A
CSV file has no schema: its columns are typed by ``types=`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from treedp._validation import must
from treedp.engines.schema import schema_kinds
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["KINDS", "column_kinds"]

#: The declared types a column may have.
KINDS = ("integer", "float", "datetime")


def column_kinds(table: Any, types: Mapping[str, str] | None) -> dict[str, str | None]:
    """Every column of ``table`` with its kind (schema first, then ``types=``)."""
    declared = _check_types(types)
    kinds = schema_kinds(table)
    if kinds is None:  # no schema: the declaration is all there is
        if not declared:
            raise InvalidParameterError(
                "This table has no schema (a CSV file, a SQLite query, or columns without a "
                "dtype): declare the columns to profile with types={'name': 'integer' | 'float' "
                "| 'datetime'} (on the command line --integers / --floats / --datetimes NAME)."
            )
        return dict(declared)
    for name in declared:
        if name not in kinds:
            raise InvalidParameterError(
                f"The 'types' parameter names a column the table does not have: {name!r}."
            )
    kinds.update(declared)
    return kinds


def _check_types(types: Any) -> dict[str, str]:
    if types is None:
        return {}
    if not isinstance(types, Mapping):
        raise InvalidTypeError(
            must("types", f"be a mapping of column name to a type. Got {type(types).__name__}.")
        )
    for name, kind in types.items():
        if not isinstance(name, str) or kind not in KINDS:
            raise InvalidParameterError(
                must("types", "map column names to 'integer', 'float' or 'datetime'.")
            )
    return dict(types)
