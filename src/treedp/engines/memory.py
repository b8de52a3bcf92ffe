"""The in-memory engine, last in the table: numpy arrays, sequences, and mappings of columns.

A single column is counted by the :class:`~treedp.engines.local.LocalEngine`; a mapping
(``{"income": [...], "region": [...]}``) is a table whose columns grouped releases read.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import Engine, no_column
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.local import LocalEngine

__all__ = ["ENGINE", "count_memory"]


def count_memory(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    """Count one in-memory column (``column`` refused, a mapping refused)."""
    if isinstance(data, dict):
        raise InvalidTypeError(
            "The 'values' argument must be a column or a table, not a dict; pass a DataFrame "
            "with column=..., or the column itself."
        )
    no_column(column)
    return local.count(data, bins, nan=nan)


def _schema(data: Any) -> list[str] | None:
    return [str(k) for k in data] if isinstance(data, Mapping) else None


ENGINE = Engine("memory", lambda d: True, count_memory, schema=_schema, read=operator.getitem)
