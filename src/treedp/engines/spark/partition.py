"""``method="partition"``: per-person bounding by the numpy rule inside ``mapInArrow``.

The one Spark path that runs Python on the executors (the default, ``method="window"``, is
pure Spark SQL). One shuffle by person id puts all rows of a person in one partition; each
partition is bounded and counted by :func:`treedp.engines.grouped.count_bounded` (the
in-memory rule, :func:`treedp.privacy.contribution.bound_contributions`), which emits its
non-zero ``(key·B + bin, count)`` pairs and its missing records as cells ``-1`` (value),
``-2`` (key), ``-3`` (person id); Spark adds them. Memory per task is one partition's rows
(raise ``spark.sql.shuffle.partitions`` for larger data).

The executors' Python must import treedp, numpy and pyarrow. When it cannot, the job fails
with one :class:`~treedp.exceptions.MissingDependencyError` naming ``PYSPARK_PYTHON`` and
``spark-submit --py-files``, instead of a Java traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from treedp._inputs import as_1d_array
from treedp.engines.grouped import (
    GroupedJob,
    column_array,
    count_bounded,
    missing_mask,
)
from treedp.engines.spark.count import VALUE, collect_cells
from treedp.exceptions import MissingDependencyError
from treedp.noise import RandomSource

__all__ = ["CELLS", "GroupedKernel", "count_partitions", "emit_cells", "executor_import_error"]

#: Rows per emitted Arrow batch of (cell, count) pairs.
_EMIT_ROWS = 1 << 20
#: What a partition's counting function emits: ``(cell, count)`` rows.
CELLS = "cell long, count long"
_NO_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")


def count_partitions(
    frame: Any, job: GroupedJob, seed_key: str | None, key_missing: Any | None
) -> tuple[np.ndarray, np.ndarray]:
    """Count the rows of ``frame`` (``VALUE``, ``__treedp_key``, ``__treedp_unit``) by
    :class:`GroupedKernel` in ``mapInArrow``: the summed ``(cell, count)`` arrays.

    ``key_missing``: the flag column of records with a missing key (``nan="error"``), or None.
    """
    from pyspark.sql import functions as F

    cols = [F.col(VALUE).alias("v"), F.col("__treedp_key").alias("k")]
    if key_missing is not None:
        cols.append(key_missing.alias("m"))
    if job.unit is not None:
        cols.append(F.col("__treedp_unit").alias("p"))
    selected = frame.select(*cols)
    if job.unit is not None:
        selected = selected.repartition(F.col("p"))
    kernel = GroupedKernel(job, seed_key)
    try:
        return collect_cells(selected.mapInArrow(kernel, CELLS), "count")
    except Exception as error:
        missing = executor_import_error(error)
        if missing is None:
            raise
        raise missing from None


def executor_import_error(error: BaseException) -> MissingDependencyError | None:
    """The clear error for a Spark job that failed because the executors' Python cannot import
    a module the Python step needs (treedp, numpy, pyarrow), else None."""
    found = _NO_MODULE.search(str(error))
    if found is None:
        return None
    return MissingDependencyError(
        f"The Spark executors' Python cannot import {found.group(1).split('.')[0]!r}, which "
        "method='partition' runs there. Point PYSPARK_PYTHON (spark.pyspark.python) at a "
        "Python that has treedp, numpy and pyarrow installed, or ship treedp with "
        "spark-submit --py-files; or use method='window' (the default), which runs in Spark "
        "SQL and needs no Python on the executors."
    )


def emit_cells(counts: np.ndarray, lost: list[int]) -> Iterator[Any]:
    """A partition's :data:`CELLS` as Arrow batches: the non-zero ``counts`` by position, and
    each non-zero ``lost[i]`` as cell ``-1 - i``."""
    import pyarrow as pa

    which = [i for i, m in enumerate(lost) if m]
    nonzero = np.flatnonzero(counts)
    cells = np.concatenate([np.array([-1 - i for i in which], dtype=np.int64), nonzero])
    values = np.concatenate([np.array([lost[i] for i in which], dtype=np.int64), counts[nonzero]])
    for start in range(0, cells.size, _EMIT_ROWS):
        part = slice(start, start + _EMIT_ROWS)
        yield pa.RecordBatch.from_arrays(
            [pa.array(cells[part]), pa.array(values[part])], names=["cell", "count"]
        )


def _np(col: Any) -> np.ndarray:
    """An Arrow Array or ChunkedArray as numpy (strings: object arrays with None)."""
    return np.asarray(col.to_numpy(zero_copy_only=False))


class GroupedKernel:
    """The ``mapInArrow`` function: count a partition's (value, key position) batches; with a
    person column (``p``), bound the whole partition first (it holds all its persons' rows).

    ``seed_key``: for a seeded source, the hex key the partition's seed is derived from
    (SHA-256 of key and partition id); None: the executor's ``os.urandom``.
    """

    def __init__(self, job: GroupedJob, seed_key: str | None = None) -> None:
        self.n_bins = job.bins.n_bins
        self.g = len(job.keys)
        self.seed_key = seed_key
        self.job = GroupedJob(
            job.column,
            ("k",),
            tuple(range(self.g)),
            None if job.unit is None else "p",
            job.bounds,
            job.bins,
            "drop",
        )

    def _count(self, part: Any, total: np.ndarray, lost: np.ndarray) -> None:
        """Count one batch (or a partition's table) into ``total``; tally missing records."""
        import pyarrow.compute as pc

        names = list(part.schema.names)
        values = as_1d_array(part.column(0))
        codes = np.asarray(_np(pc.fill_null(part.column(1), -1)), dtype=np.int64)
        person = None
        if "p" in names:
            person = column_array(_np(part.column(names.index("p"))), "privacy_unit")
        if "m" in names:  # nan="error": report, never count, missing records
            bad_v = missing_mask(values)
            bad_k = np.asarray(_np(part.column(names.index("m"))), dtype=bool)
            bad_p = missing_mask(person) if person is not None else np.zeros_like(bad_v)
            lost += [int(bad_v.sum()), int(bad_k.sum()), int(bad_p.sum())]
            ok = ~(bad_v | bad_k | bad_p)
            if not ok.all():
                values, codes = values[ok], codes[ok]
                person = None if person is None else person[ok]
        source = self._source() if person is not None else None
        result = count_bounded(values, [codes], person, self.job, source)
        total += result.counts.ravel()

    def _source(self) -> RandomSource:
        import hashlib

        from pyspark import TaskContext

        from treedp.noise.rng import InsecureSeededSource, SystemRandomSource

        if self.seed_key is None:
            return SystemRandomSource()
        ctx = TaskContext.get()
        part = 0 if ctx is None else ctx.partitionId()
        digest = hashlib.sha256(f"{self.seed_key}|{part}".encode()).digest()
        return InsecureSeededSource(int.from_bytes(digest[:8], "little"))

    def __call__(self, batches: Iterable[Any]) -> Iterator[Any]:
        import pyarrow as pa

        total = np.zeros(self.g * self.n_bins, dtype=np.int64)
        lost = np.zeros(3, dtype=np.int64)  # values, keys, person ids (nan="error")
        if self.job.unit is not None:  # all rows of the partition's persons, together
            got = [b for b in batches if b.num_rows]
            if got:
                self._count(pa.Table.from_batches(got), total, lost)
        else:
            for batch in batches:
                if batch.num_rows:
                    self._count(batch, total, lost)
        return emit_cells(total, lost.tolist())
