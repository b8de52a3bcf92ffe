"""A Dask column read straight from Parquet: counted from the files' row groups on the workers.

``dd.read_parquet(path)[column]`` is, partition by partition, the Parquet column converted to
pandas. Counting the pandas partitions (:func:`treedp.engines.dask.count_dask`'s general path)
costs that conversion (each partition's row groups concatenated into one new array) and
Dask's partition sizes (large: a few hundred MB a column, and as few as the file's size
allows, so two workers may count four unequal partitions). When nothing stands between the
files and the column, the same values are counted from the files instead: each task reads its
row groups with pyarrow, one batch of :data:`~treedp.engines.files.paths.BATCH_ROWS` rows at a
time, as the local file path does (:func:`treedp._inputs.arrow_to_numpy`, then
:func:`treedp.engines.local.count_chunk`), and returns ``B + 1`` counts.

When is it the same column? :func:`parquet_plan` returns a plan only when all of these hold,
and None (the general path) otherwise, before any value is read:

* the collection's expression is Dask's own ``ReadParquetFSSpec`` (``dd.read_parquet`` with
  the default fsspec filesystem), or a one-column projection of it: any other step
  (``persist``, ``map_partitions``, a filter, arithmetic, ``repartition``) changes the
  expression and is counted by the general path;
* no ``filters`` (row filtering), no ``categories``, and no reader options but
  ``dtype_backend`` (which only chooses pandas' dtypes for the same values);
* the column is a physical column of the files (not a Hive partition key) of an integer or
  floating Arrow type (not dictionary-encoded). For these types Dask's pandas column holds
  the Arrow values, nulls as NaN / ``NA`` (missing), and the count converts both to float64
  with the same IEEE rounding (the tests compare the two paths bin for bin, integers beyond
  2**53 and nulls included).

The row groups read are the ones Dask's own plan assigns to the collection's partitions (a
selection ``df.partitions[...]`` takes the general path). With fewer partitions than
:data:`TASKS_PER_WORKER` per worker, the row groups are cut into that many tasks, so that the
workers share the rows evenly. Memory per task is one batch of the column, whatever the
partition size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["TASKS_PER_WORKER", "ParquetPlan", "count_pieces", "parquet_plan", "split_pieces"]

#: Tasks per worker at least when Dask's plan has fewer partitions (row groups permitting).
TASKS_PER_WORKER = 4
#: Reader options a plan may carry (any other ``dd.read_parquet`` keyword: the general path).
_OPTIONS = frozenset({"dtype_backend"})

#: One file's share: its path and row groups (None: all of them).
Piece = tuple[str, "list[int] | None"]


@dataclass(frozen=True)
class ParquetPlan:
    """The Parquet files and row groups behind a Dask column, and how to open them.

    Attributes
    ----------
    fs : object
        Dask's filesystem for the paths (fsspec; pyarrow opens a local one natively).
    column : str
        The column's name in the files.
    pieces : list of (str, list of int or None)
        Dask's partitions, in order: each a file and its row groups (None: the whole file).
    """

    fs: Any
    column: str
    pieces: list[Piece]


def parquet_plan(obj: Any, column: str | None) -> ParquetPlan | None:
    """The files behind ``obj[column]`` (or the Series ``obj``) when it is a column read
    unchanged by ``dd.read_parquet`` (the conditions of this module), else None. Reads no
    value (Dask's own plan reads the first file's footer, as ``npartitions`` does).

    The match uses public Dask only: the expression's read (``expr`` itself, or its one
    dependency) is wrapped as a collection again and ``obj`` must be it, or its ``[column]``,
    token for token (``dask.base.tokenize``); so a column selection is recognised, and any other
    step between the read and ``obj`` is not.
    """
    try:
        from dask.base import tokenize
        from dask.dataframe.dask_expr import new_collection  # type: ignore[attr-defined]
        from dask.dataframe.dask_expr.io.parquet import ReadParquetFSSpec
    except ImportError:  # another Dask layout: the general path
        return None
    expr: Any = getattr(obj, "expr", None)
    if column is None:
        column = getattr(obj, "name", None)
    if expr is None or not isinstance(column, str):
        return None
    try:
        read = expr if isinstance(expr, ReadParquetFSSpec) else None
        if read is None:
            below = expr.dependencies()
            if len(below) != 1 or not isinstance(below[0], ReadParquetFSSpec):
                return None
            read = below[0]
            if tokenize(obj) != tokenize(new_collection(read)[column]):
                return None
        return _plan_of(read, column)
    except (KeyError, AttributeError, TypeError, ValueError, IndexError):
        return None  # another shape than the one read here: the general path


def _plan_of(expr: Any, column: str) -> ParquetPlan | None:
    """:func:`parquet_plan` once the expression is a ``ReadParquetFSSpec``: its plan is read
    from Dask's (non-public) ``_dataset_info`` and ``_plan``; a plan of any other shape raises
    and takes the general path, and the tests pin the shape on the installed Dask."""
    import pyarrow as pa

    if expr.operand("filters") or expr.operand("categories"):
        return None
    if set(expr.operand("kwargs") or {}) - _OPTIONS:
        return None
    info = expr._dataset_info
    if column in (info["partition_names"] or ()):
        return None
    schema = info["physical_schema"]
    if column not in schema.names:
        return None
    t = schema.field(column).type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
        return None
    plan = expr._plan
    if plan["empty"]:
        return None
    if expr.operand("_partitions") is not None:  # a selection of partitions
        return None
    parts = plan["parts"]
    pieces: list[Piece] = []
    for part in parts:  # a partition: one piece, or a list of them (files aggregated)
        for one in part if isinstance(part, list) else [part]:
            path, groups = one["piece"][0], one["piece"][1]
            if not isinstance(path, str) or not (groups is None or isinstance(groups, list)):
                return None
            pieces.append((path, None if groups is None else [int(g) for g in groups]))
    return ParquetPlan(info["fs"], column, pieces)


def split_pieces(plan: ParquetPlan, tasks: int) -> list[list[Piece]]:
    """The plan's pieces as at least ``tasks`` lists of pieces (when it has fewer partitions
    and enough row groups): whole files' row groups are looked up in their footers only then,
    and the row groups dealt into runs of near-equal length."""
    if len(plan.pieces) >= tasks:
        return [[p] for p in plan.pieces]
    import pyarrow.parquet as pq

    groups: list[tuple[str, int]] = []
    for path, rows in plan.pieces:
        if rows is None:
            rows = list(range(pq.ParquetFile(path, filesystem=plan.fs).num_row_groups))
        groups.extend((path, g) for g in rows)
    if not groups:
        return [[p] for p in plan.pieces]
    runs = np.array_split(np.arange(len(groups)), min(tasks, len(groups)))
    out: list[list[Piece]] = []
    for run in runs:
        task: list[Piece] = []
        for i in run:
            path, g = groups[int(i)]
            if task and task[-1][0] == path:
                rows = task[-1][1]
                assert rows is not None
                rows.append(g)
            else:
                task.append((path, [g]))
        out.append(task)
    return out


def count_pieces(fs: Any, pieces: list[Piece], column: str, bins: Bins) -> np.ndarray:
    """``B`` counts of ``column`` in the pieces' row groups, then the missing values
    (``B + 1`` int64), read a batch at a time (runs on a worker)."""
    import pyarrow.parquet as pq

    from treedp._inputs import arrow_to_numpy
    from treedp.engines.files.paths import BATCH_ROWS
    from treedp.engines.local import count_chunk

    out = np.zeros(bins.n_bins + 1, dtype=np.int64)
    for path, groups in pieces:
        pf = pq.ParquetFile(path, filesystem=fs, pre_buffer=False)
        rows = list(range(pf.num_row_groups)) if groups is None else groups
        batches = pf.iter_batches(
            batch_size=BATCH_ROWS, row_groups=rows, columns=[column], use_threads=False
        )
        for batch in batches:
            part = count_chunk(arrow_to_numpy(batch.column(0)), bins, "drop")
            out[:-1] += part.counts
            out[-1] += part.dropped
    return out
