"""The Arrow PyCapsule engine: any table that speaks the Arrow C stream protocol
(``__arrow_c_stream__``: DataFusion, ibis, nanoarrow, pandas >= 2.2, polars, ...) and that no
engine of its own library takes, read through pyarrow (``treedp[parquet]``) by column name.

The count streams: the producer's record batches are read one at a time and only the named
column of each is converted. The methods that hold the values (``collect``) and group-by
releases (``read``) read the table whole as a pyarrow Table. A stream of one column (not a
table) is counted as that column, with ``column`` refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from treedp._inputs import arrow_to_numpy, check_arrow_type
from treedp.engines import arrow
from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import Engine, need_column, no_column
from treedp.engines.local import count_chunks
from treedp.exceptions import MissingDependencyError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.local import LocalEngine

__all__ = ["ENGINE"]


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError:
        raise MissingDependencyError(
            "Reading a table through the Arrow PyCapsule protocol (__arrow_c_stream__) needs "
            "pyarrow: install treedp[parquet] (pip install pyarrow)."
        ) from None
    return pa


def _stream(data: Any) -> Any:
    """A pyarrow RecordBatchReader over a table's stream, or a ChunkedArray for one column."""
    pa = _pyarrow()
    try:
        return pa.RecordBatchReader.from_stream(data)
    except (TypeError, ValueError, pa.ArrowInvalid):  # a stream of one column, not a table
        return pa.chunked_array(data)


def _count(
    data: Any,
    column: str | None,
    bins: Bins,
    nan: NanPolicy,
    progress: bool | None,
    local: LocalEngine,
) -> BinCounts:
    stream = _stream(data)
    options: dict[str, Any] = {"workers": local.workers, "kernel": local.kernel}
    if not hasattr(stream, "schema"):
        no_column(column)
        return count_chunks((arrow_to_numpy(c) for c in stream.chunks), bins, nan, **options)
    name = need_column(column, "a table", stream.schema.names)
    check_arrow_type(stream.schema.field(name).type, name)
    chunks = (arrow_to_numpy(batch.column(name)) for batch in stream)
    return count_chunks(chunks, bins, nan, **options)


def _table(data: Any) -> Any:
    return _pyarrow().table(data)


def _schema(data: Any) -> list[str] | None:
    stream = _stream(data)
    return [str(n) for n in stream.schema.names] if hasattr(stream, "schema") else None


ENGINE = Engine(
    "arrow-pycapsule",
    lambda d: hasattr(type(d), "__arrow_c_stream__"),
    _count,
    collect=lambda d, column: arrow.ENGINE.collect(_table(d), column),  # type: ignore[misc]
    schema=_schema,
    read=lambda d, name: arrow.ENGINE.read(_table(d), name),  # type: ignore[misc]
)
