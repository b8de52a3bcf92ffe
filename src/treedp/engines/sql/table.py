"""One engine-table row (:class:`~treedp.engines.entry.Engine`) from a SQL :class:`Dialect`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from treedp.engines.entry import Engine, type_name
from treedp.engines.sql.bound import bounded_counts
from treedp.engines.sql.rule import (
    Dialect,
    collect_sql,
    count_grouped_sql,
    count_sql,
    key_counts_sql,
)
from treedp.engines.sql.source import SqlSource

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.base import BinCounts, NanPolicy

__all__ = ["engine_row"]


def engine_row(dialect: Dialect, accepts: Callable[[Any], bool]) -> Engine:
    """The engine of ``dialect``: counts, grouped counts and collection in the database."""

    def count(
        data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: Any, local: Any
    ) -> BinCounts:
        out: BinCounts = count_sql(dialect, data, column, bins, nan)
        return out

    def schema(data: Any) -> list[str]:
        from treedp.engines.sql.rule import described

        return [name for name, _ in described(dialect, data)]

    return Engine(
        dialect.name,
        accepts,
        count,
        local=False,
        grouped=lambda data, job, source: (
            bounded_counts(dialect, data, job, source)
            if job.unit is not None
            else count_grouped_sql(dialect, data, job, source)
        ),
        key_counts=lambda data, job, source: key_counts_sql(dialect, data, job, source),
        collect=lambda data, column: collect_sql(dialect, data, column),
        schema=schema,
        describe=lambda data: (
            f"{dialect.name} query: {data.sql}" if isinstance(data, SqlSource) else type_name(data)
        ),
    )
