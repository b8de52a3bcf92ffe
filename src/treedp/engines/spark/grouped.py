"""Grouped counting and per-person bounding inside Spark; only ``G × B`` counts reach the driver.

Pipeline (all Spark SQL until the counting):

1. Column names and types are checked against the schema (nothing is read).
2. Missing values, keys or ids: under ``nan="error"`` one ``limit(1)`` query looks for one
   (the error says no count); under ``nan="drop"`` they are filtered out.
3. Each row gets its key's position in the public list by a broadcast join with a small
   DataFrame of the keys (keys not listed drop out).
4. Bounding, with a privacy unit, by windows over the person id. The sampling priority of a row
   is ``SHA-256(secret ‖ person id ‖ row id)`` read as a 60-bit integer, where ``secret`` is 32
   bytes drawn from the release's :class:`~treedp.noise.RandomSource` (the operating system by
   default; reproducible only through :class:`~treedp.InsecureSeededSource`) and passed to
   Spark as a literal, and the row id is ``monotonically_increasing_id()`` (distinct per row).
   Without the secret the priorities are unpredictable, and since SHA-256 of distinct inputs
   behaves as independent uniform values, keeping the ``k`` lowest priorities of a person is a
   uniform sample of ``k`` of their rows — the rule of
   :func:`treedp.privacy.contribution.bound_contributions`:

   * ``c < m``: ``row_number()`` over ``(person, key)`` ordered by priority, kept ``<= c``;
   * ``g < m``: every (person, key) pair gets ``SHA-256(secret ‖ person ‖ key ‖ "g")``;
     ``dense_rank()`` over ``person`` ordered by it, kept ``<= g``;
   * ``m``: ``row_number()`` over ``person`` ordered by the priority, kept ``<= m`` (skipped
     when the first two steps already keep at most ``g·c <= m``).

   The row ids are drawn once, where the rows are read, before the one shuffle by person id
   (``repartition(unit)``) that every window then reuses; a task retried on the same input
   partition draws the same ids.
   This is ``method="window"``. The default, ``method="partition"``, shuffles once by person
   id and bounds each partition with the numpy rule in ``mapInArrow`` (see
   :func:`count_grouped_spark`): no window, no SHA-256 per row; memory per task is one
   partition's rows (raise ``spark.sql.shuffle.partitions`` for larger data).
5. Counting: ``mapInArrow`` runs the numpy kernel (:func:`treedp.engines.grouped.count_bounded`,
   the bin rule of :mod:`treedp.engines.base` bit for bit) on each partition, which emits its
   non-zero ``(key·B + bin, count)`` pairs; Spark adds them with ``groupBy``; at most ``G·B``
   rows reach the driver, packed as Arrow.

treedp (numpy) must be importable on the executors.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from treedp._inputs import as_1d_array
from treedp._validation import must
from treedp.engines.entry import check_value_type, cluster_column, missing_values_error
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    column_array,
    count_bounded,
    missing_key_error,
    missing_mask,
    person_missing_error,
)
from treedp.engines.spark.count import CELLS, collect_cells, emit_cells, quiet_pyspark, value_kind
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource

__all__ = ["bound_spark", "count_grouped_spark", "key_counts_spark", "spark_secret"]

_CODE = "__treedp_key"
_PRIO = "__treedp_prio"
_ROW = "__treedp_row"
_KMISS = "__treedp_kmiss"
#: Cells the kernel emits for missing records (value, key, person id) under ``nan="error"``.
_MISSING_CELLS = {-1: "value", -2: "key", -3: "unit"}


def spark_secret(source: RandomSource) -> str:
    """32 bytes of the release's randomness, as hex: the key of the sampling priorities."""
    return source.random_bytes(32).hex()


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _check_schema(df: Any, job: GroupedJob) -> None:
    from pyspark.sql import DataFrame

    if not isinstance(df, DataFrame):
        raise InvalidTypeError(f"Expected a pyspark.sql.DataFrame. Got {type(df).__name__}.")
    names = [f.name for f in df.schema.fields]
    for c in job.columns:
        cluster_column(c, names)
    type_name = type(df.schema[job.column].dataType).__name__
    check_value_type(value_kind(type_name), job.bins, f"a column of {type_name}")


def _missing(col: Any, type_name: str) -> Any:
    from pyspark.sql import functions as F

    if type_name in ("FloatType", "DoubleType"):
        return col.isNull() | F.isnan(col)
    return col.isNull()


def _prepared(df: Any, job: GroupedJob, defer: bool = False) -> Any:
    """Rows with their key position (``_CODE``), missing records refused or dropped.

    ``defer`` (with ``nan="error"``): no scan for missing records here; rows keep a flag
    ``_KMISS`` (a missing key) and a null ``_CODE`` for unlisted keys (a left join), and the
    counting kernel reports missing values, keys and ids, which the driver refuses.
    """
    from pyspark.sql import functions as F

    types = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    cols = job.columns
    frame = df.select(*[F.col(_q(c)) for c in cols])
    if types[job.column] == "DecimalType":
        frame = frame.withColumn(job.column, F.col(_q(job.column)).cast("double"))
    if defer and job.nan == "error":
        key_missing = F.lit(False)
        for b in job.by:
            key_missing = key_missing | _missing(F.col(_q(b)), types[b])
        frame = frame.withColumn(_KMISS, key_missing)
    else:
        frame = _refuse_or_drop(frame, job, types)
    if not job.by:
        return frame.withColumn(_CODE, F.lit(0).cast("long"))
    spark = df.sparkSession
    rows = [(*(k if isinstance(k, tuple) else (k,)), i) for i, k in enumerate(job.keys)]
    key_schema = ", ".join(f"{_q(b)} {df.schema[b].dataType.simpleString()}" for b in job.by)
    try:
        keys_df = spark.createDataFrame(rows, f"{key_schema}, {_CODE} long")
    except Exception:  # keys of another type than the column: compare as text
        text_rows = [(*(str(x) for x in r[:-1]), r[-1]) for r in rows]
        key_schema = ", ".join(f"{_q(b)} string" for b in job.by)
        keys_df = spark.createDataFrame(text_rows, f"{key_schema}, {_CODE} long")
        for b in job.by:
            frame = frame.withColumn(b, F.col(_q(b)).cast("string"))
    how = "left" if defer and job.nan == "error" else "inner"
    return frame.join(F.broadcast(keys_df), on=list(job.by), how=how)


def _refuse_or_drop(frame: Any, job: GroupedJob, types: dict[str, str]) -> Any:
    """``frame`` without its records with a missing value, key or id (``nan="drop"``), or
    checked to have none (``"error"``: one ``limit(1)`` query finds whether any is missing, a
    second says which; the error holds no count)."""
    from pyspark.sql import functions as F

    checks = [
        (job.column, "value"),
        *[(b, "key") for b in job.by],
        *([(job.unit, "unit")] if job.unit else []),
    ]
    masks = [(_missing(F.col(_q(name)), types[name]), what) for name, what in checks]
    any_missing = functools.reduce(operator.or_, (m for m, _ in masks))
    if job.nan == "drop":
        return frame.filter(~any_missing)
    if frame.filter(any_missing).limit(1).count():
        for mask, what in masks:
            if frame.filter(mask).limit(1).count():
                raise _missing_error(what)
    return frame


def _np(col: Any) -> np.ndarray:
    """An Arrow Array or ChunkedArray as numpy (strings: object arrays with None)."""
    return np.asarray(col.to_numpy(zero_copy_only=False))


def _missing_error(what: str) -> DataError:
    if what == "unit":
        return person_missing_error()
    return missing_key_error() if what == "key" else missing_values_error()


def bound_spark(df: Any, job: GroupedJob, source: RandomSource) -> Any:
    """The rows kept by the bounds, as a Spark DataFrame (value, by, unit, ``__treedp_key``).

    See the module docstring: windows over the person id ordered by keyed SHA-256 priorities.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    _check_schema(df, job)
    frame = _prepared(df, job)
    if job.unit is None:
        return frame
    m = job.bounds.max_contributions
    g = job.bounds.max_groups
    c = job.bounds.max_contributions_per_group
    secret = F.lit(spark_secret(source))
    person = F.col(_q(job.unit)).cast("string")
    # one shuffle by person serves every window below (their partitions refine it)
    frame = frame.withColumn(_ROW, F.monotonically_increasing_id()).repartition(F.col(_q(job.unit)))

    def prio(*parts: Any) -> Any:
        digest = F.sha2(F.concat_ws("|", secret, *parts), 256)
        return F.conv(F.substring(digest, 1, 15), 16, 10).cast("long")

    frame = frame.withColumn(_PRIO, prio(person, F.col(_ROW).cast("string")))
    by_group = job.by != ()
    unit_col = F.col(_q(job.unit))
    if by_group and c < m:
        w = Window.partitionBy(unit_col, F.col(_CODE)).orderBy(_PRIO, _ROW)
        frame = frame.withColumn("__rank", F.row_number().over(w)).filter(F.col("__rank") <= c)
    if by_group and g < m:
        pair = prio(person, F.col(_CODE).cast("string"), F.lit("g"))
        w = Window.partitionBy(unit_col).orderBy(pair, F.col(_CODE))
        frame = frame.withColumn("__grank", F.dense_rank().over(w)).filter(F.col("__grank") <= g)
    if not (by_group and c < m and g < m and g * c <= m):
        w = Window.partitionBy(unit_col).orderBy(_PRIO, _ROW)
        frame = frame.withColumn("__mrank", F.row_number().over(w)).filter(F.col("__mrank") <= m)
    return frame


def count_grouped_spark(
    df: Any, job: GroupedJob, source: RandomSource, *, method: str = "partition"
) -> GroupedCounts:
    """Bound and count a Spark DataFrame; only the non-zero of ``G × B`` counts are collected.

    ``method="partition"`` (default, faster): one shuffle by person id, then each partition
    (all rows of its persons) is bounded and counted by the numpy kernel in ``mapInArrow``
    (:func:`treedp.privacy.contribution.bound_contributions`; randomness from the executor's
    ``os.urandom``, or, for a seeded source, a seed per partition derived from 32 bytes of
    it). ``method="window"``: the SQL windows of :func:`bound_spark`, then the kernel counts.

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        Unknown column, wrong type (from the schema, before any value is read).
    DataError
        A missing value, key or person id under ``nan="error"`` (no count in the message).
    """
    from pyspark.sql import functions as F

    if method not in ("partition", "window"):
        raise InvalidParameterError(must("method", "be 'partition' or 'window'."))
    defer = job.nan == "error" and (method == "partition" or job.unit is None)
    with quiet_pyspark():
        if method == "window" and job.unit is not None:
            kept = bound_spark(df, job, source)
            selected = kept.select(F.col(_q(job.column)).alias("v"), F.col(_CODE).alias("k"))
            plain = GroupedKernel(  # the rows are bounded already: count them
                GroupedJob(job.column, job.by, job.keys, None, job.bounds, job.bins, job.nan)
            )
        else:
            _check_schema(df, job)
            frame = _prepared(df, job, defer=defer)
            cols = [F.col(_q(job.column)).alias("v"), F.col(_CODE).alias("k")]
            if defer:
                cols.append(F.col(_KMISS).alias("m"))
            if job.unit is not None:
                cols.append(F.col(_q(job.unit)).alias("p"))
            selected = frame.select(*cols)
            if job.unit is not None:
                selected = selected.repartition(F.col("p"))
            seeded = bool(getattr(source, "seeded", False))
            # randomness only for bounding: without a privacy unit nothing is drawn
            bounding = seeded and job.unit is not None
            plain = GroupedKernel(job, spark_secret(source) if bounding else None)
        cells, count = collect_cells(selected.mapInArrow(plain, CELLS))
    for cell in cells[(cells < 0) & (count > 0)]:
        raise _missing_error(_MISSING_CELLS[int(cell)])
    n_bins, g = job.bins.n_bins, len(job.keys)
    counts = np.zeros(g * n_bins, dtype=np.int64)
    counts[cells[cells >= 0]] = count[cells >= 0]
    return GroupedCounts(job.keys, counts.reshape(g, n_bins), 0)


def key_counts_spark(df: Any, job: GroupedJob, source: RandomSource) -> KeyCounts:
    """The selection counts of a Spark DataFrame, in Spark SQL (``job.keys`` unused).

    Records with a missing value, key or person id are refused (one ``limit(1)`` query; the
    error says no count) or filtered out (``nan``). Without a privacy unit: ``groupBy(by)
    .count()``. With one: the distinct ``(person, key)`` pairs, each with the priority
    ``SHA-256(secret ‖ person ‖ key)`` (the secret: 32 bytes of ``source``, as in
    :func:`bound_spark`), ``row_number()`` over the person ordered by it, kept ``<= g`` (a
    uniform sample of ``g`` of the person's keys), then per key the sum of the kept flags (a
    key whose pairs were all dropped stays, with 0). Only the ``(key, count)`` rows are
    collected.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    _check_schema(df, job)
    types = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    by_cols = [F.col(_q(b)) for b in job.by]
    with quiet_pyspark():
        frame = df.select(*[F.col(_q(c)) for c in job.columns])
        frame = _refuse_or_drop(frame, job, types)
        if job.unit is None:
            summed = frame.groupBy(*by_cols).agg(F.count(F.lit(1)).alias(_PRIO))
        else:
            g = job.bounds.max_groups
            unit_col = F.col(_q(job.unit))
            pairs = frame.select(unit_col, *by_cols).distinct()
            parts = [unit_col.cast("string"), *[c.cast("string") for c in by_cols]]
            digest = F.sha2(F.concat_ws("|", F.lit(spark_secret(source)), *parts, F.lit("s")), 256)
            prio = F.conv(F.substring(digest, 1, 15), 16, 10).cast("long")
            w = Window.partitionBy(unit_col).orderBy(prio, *by_cols)
            ranked = pairs.withColumn("__srank", F.row_number().over(w))
            kept = (F.col("__srank") <= g).cast("long")
            summed = ranked.groupBy(*by_cols).agg(F.sum(kept).alias(_PRIO))
        rows = summed.collect()
    n_by = len(job.by)
    keys = [r[0] if n_by == 1 else tuple(r[:n_by]) for r in rows]
    counts = np.fromiter((int(r[n_by]) for r in rows), dtype=np.int64, count=len(rows))
    return KeyCounts.merge([KeyCounts(tuple(keys), counts)])


class GroupedKernel:
    """The ``mapInArrow`` function: count a partition's (value, key position) batches; with a
    person column (third), bound the whole partition first (it holds all its persons' rows).

    ``seed_key``: for a seeded source, the hex key the partition's seed is derived from
    (SHA-256 of key and partition id); None: the executor's ``os.urandom``.
    """

    def __init__(self, job: GroupedJob, seed_key: str | None = None) -> None:
        self.n_bins = job.bins.n_bins
        self.g = len(job.keys)
        self.unit = job.unit
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

    def _count(self, part: Any, total: np.ndarray, missing: np.ndarray) -> None:
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
            missing += [int(bad_v.sum()), int(bad_k.sum()), int(bad_p.sum())]
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
        missing = np.zeros(3, dtype=np.int64)  # values, keys, person ids (nan="error")
        if self.job.unit is not None:  # all rows of the partition's persons, together
            got = [b for b in batches if b.num_rows]
            if got:
                self._count(pa.Table.from_batches(got), total, missing)
        else:
            for batch in batches:
                if batch.num_rows:
                    self._count(batch, total, missing)
        return emit_cells(total, missing.tolist())
