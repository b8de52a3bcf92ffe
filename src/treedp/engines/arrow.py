"""The pyarrow engine: an Array or ChunkedArray, or a Table's or RecordBatch's column, counted
chunk by chunk on this machine's threads (a Dataset is the files engine's: it streams)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._inputs import arrow_to_numpy, check_arrow_type, join_chunks
from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import Engine, missing_column, module_root, need_column, no_column
from treedp.engines.local import count_chunks
from treedp.exceptions import InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.local import LocalEngine

__all__ = ["ENGINE"]


def _count(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    import pyarrow as pa

    options: dict[str, Any] = {"workers": local.workers, "kernel": local.kernel}
    if isinstance(data, pa.Table | pa.RecordBatch):
        name = need_column(column, "a Table", data.schema.names)
        check_arrow_type(data.schema.field(name).type, name)
        return count_chunks((arrow_to_numpy(c) for c in _chunks(data, name)), bins, nan, **options)
    if isinstance(data, pa.ChunkedArray):
        no_column(column)
        return count_chunks((arrow_to_numpy(c) for c in data.chunks), bins, nan, **options)
    if isinstance(data, pa.Array):
        no_column(column)
        return local.count(arrow_to_numpy(data), bins, nan=nan)
    raise InvalidTypeError(
        f"The 'values' argument is a pyarrow {type(data).__name__}, which treedp does not "
        "count; pass an Array, ChunkedArray, Table, RecordBatch or Dataset."
    )


def _chunks(table: Any, name: str) -> list[Any]:
    col = table.column(name)
    return list(col.chunks) if hasattr(col, "chunks") else [col]


def _collect(table: Any, column: str) -> np.ndarray:
    """A Table's or RecordBatch's column as numpy (its name and type checked)."""
    if not hasattr(table, "schema") or not hasattr(table, "column"):
        raise InvalidTypeError(
            "The 'column' parameter applies to a Table or a file; a "
            f"{type(table).__name__} is one column already: drop 'column'."
        )
    if column not in table.schema.names:
        raise missing_column(column, table.schema.names)
    check_arrow_type(table.schema.field(column).type, column)
    chunks = _chunks(table, column)
    if not chunks:  # no chunk (a filter that kept no row): an empty column of the type
        import pyarrow as pa

        return arrow_to_numpy(pa.array([], type=table.schema.field(column).type))
    return join_chunks([arrow_to_numpy(c) for c in chunks])


def _schema(data: Any) -> list[str] | None:
    """A Table's or RecordBatch's column names; None for an Array or ChunkedArray."""
    return [str(c) for c in data.column_names] if hasattr(data, "column_names") else None


def _read(data: Any, name: str) -> np.ndarray:
    """A column of a Table as numpy, any type: dictionary columns as their values, integer or
    floating columns with nulls as float64 (NaN), as the file engine reads them."""
    import pyarrow as pa

    col = data.column(name)
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if col.null_count and (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
        col = col.cast(pa.float64(), safe=False)  # beyond 2**53: nearest, as numpy
    if isinstance(col, pa.Array):  # a RecordBatch's column
        return np.asarray(col.to_numpy(zero_copy_only=False))
    return np.asarray(col.to_numpy())


ENGINE = Engine(
    "pyarrow",
    lambda d: module_root(d) == "pyarrow",
    _count,
    collect=_collect,
    schema=_schema,
    read=_read,
)
