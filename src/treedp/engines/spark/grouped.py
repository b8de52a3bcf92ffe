"""Grouped counting and per-person bounding in Spark SQL; only ``G × B`` counts reach the driver.

Pipeline (all Spark SQL, evaluated by the JVM: the executors need no treedp and no Python):

1. Column names and types are checked against the schema (nothing is read).
2. Each record gets a flag ``__treedp_bad``: ``-1`` a missing value (null, NaN), ``-3`` a
   missing person id, ``-2`` a missing key, ``0`` none. Under ``nan="drop"`` flagged records
   are filtered out; under ``nan="error"`` they are kept, sorted first by every bounding window
   below (so bounding can never drop the last of them) and counted in their own negative
   cell, which the driver refuses (the error holds no count). One pass, no extra scan.
3. Each record gets its key's position in the public list by a broadcast join with a small
   DataFrame of the keys (keys not listed drop out).
4. Bounding, with a privacy unit, by windows over the person id. The sampling priority of a row
   is ``SHA-256(secret ‖ row id)``, its first 15 hex digits (a 60-bit value, compared and
   sorted as text), where ``secret`` is 32 bytes drawn from the release's
   :class:`~treedp.noise.RandomSource` (the operating system's ``os.urandom`` by default;
   reproducible only through :class:`~treedp.InsecureSeededSource`) and passed to Spark as a
   literal (never Spark's ``rand()``), and the row id is ``monotonically_increasing_id()`` in
   decimal (distinct per row, so every row's input is distinct; the person id need not be
   hashed). Without the secret the priorities are unpredictable, and since SHA-256 of distinct
   inputs behaves as independent uniform values, keeping the ``k`` lowest priorities of a
   person is a uniform sample of ``k`` of their rows — the rule of
   :func:`treedp.privacy.contribution.bound_contributions`:

   * ``c < m``: ``row_number()`` over ``(person, key)`` ordered by priority, kept ``<= c``;
   * ``g < m``: every (person, key) pair gets ``SHA-256(secret ‖ person ‖ key ‖ "g")``;
     ``dense_rank()`` over ``person`` ordered by it, kept ``<= g``;
   * ``m``: ``row_number()`` over ``person`` ordered by the priority, kept ``<= m`` (skipped
     when the first two steps already keep at most ``g·c <= m``).

   *The prefilter* (when neither ``c < m`` nor ``g < m`` binds: ``max_contributions`` alone,
   or with bounds per group that cannot bind). Each person's row count ``c_p`` comes from one
   ``groupBy(person).count()``, joined back by a plain join that Spark plans
   (:func:`_prefiltered`). Rows of persons with ``c_p <= m`` get no
   priority (no hash); rows of a person with ``c_p > mu(m)`` pass only if their priority is
   below ``T(c_p)``, so that about ``mu(m) = m + O(sqrt(m))`` of them reach the shuffle and the
   sort instead of ``c_p`` (:mod:`~treedp.engines.spark.prefilter`: the threshold, and the
   Chernoff bound ``P(fewer than m pass) <= 10^-12`` per person). Flagged records always pass
   (and sort first). When at least ``m`` rows pass, they include the person's ``m`` lowest
   priorities, so the window keeps exactly the rows it keeps without the prefilter: a uniform
   sample of ``m``. In the rare event (probability at most ``10^-12`` per person) that fewer
   pass, all of them are kept: fewer rows than ``m``, never more, and not a uniform sample of
   ``m`` then.

   *Privacy, unchanged*: the window caps every person at ``m`` rows (and ``c``, ``g``)
   whatever passed the prefilter, and which rows a person keeps is a function of that
   person's own rows (``c_p`` is their own count), their row ids and the secret only. (The row
   ids depend on where the rows lie in the input; as the priorities of distinct ids are
   independent and uniform, a person's kept rows are distributed alike whatever their ids.)
   The counts ``c_p`` are computed by a separate evaluation of the input, which a changing
   source could make disagree with the rows; the cap does not rely on them: a wrong ``c_p``
   can only drop rows (or, for ``c_p <= m``, keep the first ``m`` by row id), never keep more.

   The row ids are drawn once, where the rows are read, before the one shuffle by person id
   (``repartition(unit)``, of the rows that passed) that every window then reuses; a task
   retried on the same input partition draws the same ids.
5. Counting: each kept row's cell ``key·B + bin`` (the bin rule as the SQL expression of
   :mod:`treedp.engines.spark.bins_sql`), ``groupBy(cell).count()``; at most ``G·B`` rows
   (and the negative cells of step 2) reach the driver.

This is ``method="window"``, the default. ``method="partition"`` shuffles once by person id
and bounds each partition with the numpy rule in ``mapInArrow``: it needs treedp, numpy and
pyarrow on the executors, and says so in one error (naming ``PYSPARK_PYTHON`` and
``--py-files``) when they cannot import it.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.engines.entry import check_value_type, cluster_column, missing_values_error
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    missing_key_error,
    person_missing_error,
)
from treedp.engines.spark.count import (
    VALUE,
    binnable,
    collect_cells,
    is_spark_frame,
    missing,
    quiet_pyspark,
    quoted,
    value_kind,
)
from treedp.engines.spark.instants import DATED, column_text, key_text, key_value
from treedp.engines.spark.key_values import typed_key
from treedp.engines.spark.partition import count_partitions
from treedp.engines.spark.prefilter import PRIORITY_BITS, threshold_hex
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource

__all__ = ["bound_spark", "count_grouped_spark", "key_counts_spark", "spark_secret"]

_CODE = "__treedp_key"
_PRIO = "__treedp_prio"
_ROW = "__treedp_row"
_BAD = "__treedp_bad"
_UNIT = "__treedp_unit"
_COUNT = "__treedp_count"
_LIMIT = "__treedp_limit"
#: The negative cells of records with a missing value, key or person id (``nan="error"``),
#: in the order the in-memory path checks them.
_MISSING_CELLS = {-1: "value", -3: "unit", -2: "key"}


def spark_secret(source: RandomSource) -> str:
    """32 bytes of the release's randomness, as hex: the key of the sampling priorities."""
    return source.random_bytes(32).hex()


def _check_schema(df: Any, job: GroupedJob) -> dict[str, str]:
    """The column types by name, after checking the frame, the columns and the value type."""
    if not is_spark_frame(df):
        raise InvalidTypeError(f"Expected a pyspark.sql.DataFrame. Got {type(df).__name__}.")
    names = [f.name for f in df.schema.fields]
    for c in job.columns:
        cluster_column(c, names)
    types = {f.name: type(f.dataType).__name__ for f in df.schema.fields}
    check_value_type(value_kind(types[job.column]), job.bins, f"a column of {types[job.column]}")
    return types


def _with_codes(frame: Any, df: Any, job: GroupedJob, how: str) -> Any:
    """``frame`` joined (broadcast) with the public keys: their position as ``_CODE``."""
    from pyspark.sql import functions as F

    if not job.by:
        return frame.withColumn(_CODE, F.lit(0).cast("long"))
    spark = df.sparkSession
    columns = [df.schema[b].dataType for b in job.by]
    rows = [
        (*(typed_key(v, t) for v, t in zip(k if isinstance(k, tuple) else (k,), columns,
                                          strict=True)), i)
        for i, k in enumerate(job.keys)
    ]  # fmt: skip
    types = [t.typeName() for t in columns]
    dated = [t in DATED for t in types]
    if any(dated):  # instants: compared as text (a date's, or the wall-clock time to the µs)
        rows = [
            (*(key_text(v, t) if t in DATED else v for v, t in zip(r[:-1], types, strict=True)),
             r[-1])
            for r in rows
        ]  # fmt: skip
        for b, t in zip(job.by, types, strict=True):
            if t in DATED:
                frame = frame.withColumn(b, column_text(quoted(b), t))
    key_schema = ", ".join(
        f"{_q(b)} {'string' if d else df.schema[b].dataType.simpleString()}"
        for b, d in zip(job.by, dated, strict=True)
    )
    try:
        keys_df = spark.createDataFrame(rows, f"{key_schema}, {_CODE} long")
    except Exception:  # keys of another type than the column: compare as text
        text_rows = [(*(str(x) for x in r[:-1]), r[-1]) for r in rows]
        key_schema = ", ".join(f"{_q(b)} string" for b in job.by)
        keys_df = spark.createDataFrame(text_rows, f"{key_schema}, {_CODE} long")
        for b in job.by:
            frame = frame.withColumn(b, quoted(b).cast("string"))
    return frame.join(F.broadcast(keys_df), on=list(job.by), how=how)


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _flagged(df: Any, job: GroupedJob, types: dict[str, str]) -> Any:
    """Rows ``(VALUE, by…, _UNIT, _CODE, _BAD)`` of public keys: flagged missing records kept
    (``nan="error"``) or filtered out (``"drop"``)."""
    from pyspark.sql import functions as F

    value = quoted(job.column)
    if types[job.column] == "DecimalType":  # read as float64, as on every engine
        value = value.cast("double")
    cols = [value.alias(VALUE), *[quoted(b) for b in job.by]]
    if job.unit is not None:
        cols.append(quoted(job.unit).alias(_UNIT))
    frame = df.select(*cols)
    bad = F.when(missing(quoted(VALUE), types[job.column]), F.lit(-1))
    if job.unit is not None:
        bad = bad.when(missing(quoted(_UNIT), types[job.unit]), F.lit(-3))
    for b in job.by:
        bad = bad.when(missing(quoted(b), types[b]), F.lit(-2))
    frame = frame.withColumn(_BAD, bad.otherwise(F.lit(0)))
    if job.nan == "drop":
        return _with_codes(frame.filter(F.col(_BAD) == 0), df, job, "inner")
    joined = _with_codes(frame, df, job, "left")  # keep records with a missing key
    return joined.filter((F.col(_BAD) != 0) | F.col(_CODE).isNotNull())


def _bounded(frame: Any, job: GroupedJob, secret: str) -> Any:
    """The rows of :func:`_flagged` that the windows keep (see the module docstring)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    assert job.unit is not None
    m = job.bounds.max_contributions
    g = job.bounds.max_groups
    c = job.bounds.max_contributions_per_group
    by_group = job.by != ()
    per_group = by_group and (c < m or g < m)
    person = F.col(_UNIT).cast("string")
    frame = frame.withColumn(_ROW, F.monotonically_increasing_id())
    if per_group:
        frame = frame.withColumn(_PRIO, _row_priority(secret))
    else:  # the prefilter: only persons with more than m rows need priorities
        frame = _prefiltered(frame, m, secret)
    # one shuffle by person serves every window below (their partitions refine it)
    frame = frame.repartition(F.col(_UNIT))
    unit_col, bad = F.col(_UNIT), F.col(_BAD)  # flagged records sort first: never dropped
    if by_group and c < m:
        w = Window.partitionBy(unit_col, F.col(_CODE)).orderBy(bad, _PRIO, _ROW)
        frame = frame.withColumn("__rank", F.row_number().over(w)).filter(F.col("__rank") <= c)
    if by_group and g < m:
        parts = (F.lit(secret), person, F.col(_CODE).cast("string"), F.lit("g"))
        pair = F.substring(F.sha2(F.concat_ws("|", *parts), 256), 1, PRIORITY_BITS // 4)
        w = Window.partitionBy(unit_col).orderBy(bad, pair, F.col(_CODE))
        frame = frame.withColumn("__grank", F.dense_rank().over(w)).filter(F.col("__grank") <= g)
    if not (by_group and c < m and g < m and g * c <= m):
        w = Window.partitionBy(unit_col).orderBy(bad, _PRIO, _ROW)
        frame = frame.withColumn("__mrank", F.row_number().over(w)).filter(F.col("__mrank") <= m)
    return frame


def _row_priority(secret: str) -> Any:
    """``SHA-256(secret ‖ row id)`` (the secret's 32 bytes, the row id in decimal), its first
    15 hex digits: a 60-bit priority, compared and sorted as text."""
    from pyspark.sql import functions as F

    message = F.concat(F.unhex(F.lit(secret)), F.col(_ROW).cast("string").cast("binary"))
    return F.substring(F.sha2(message, 256), 1, PRIORITY_BITS // 4)


def _prefiltered(frame: Any, m: int, secret: str) -> Any:
    """``frame`` with the priorities of the rows of persons with more than ``m`` rows (null for
    the others), and without the rows that :mod:`~treedp.engines.spark.prefilter` drops.

    The busy persons' counts are one aggregation over ``frame``, joined back by a plain left
    join on the person id. Spark plans it (with adaptive execution it may broadcast the counts
    or shuffle both sides, after measuring them): the choice is Spark's and depends on the
    data, and so may the time taken (a stated limit: timing is not protected); the kept rows
    do not depend on it. treedp collects, broadcasts and checkpoints nothing here (what Spark
    keeps of a query, such as its shuffle files, it cleans up as for any query).
    """
    from pyspark.sql import functions as F

    counts = frame.groupBy(_UNIT).agg(F.count(F.lit(1)).alias(_COUNT))
    busy = counts.filter(F.col(_COUNT) > F.lit(m))
    busy = busy.select(_UNIT, _COUNT, threshold_hex(F.col(_COUNT), m).alias(_LIMIT))
    frame = frame.join(busy, on=_UNIT, how="left")
    frame = frame.withColumn(_PRIO, F.when(F.col(_COUNT).isNotNull(), _row_priority(secret)))
    keep = (F.col(_BAD) != 0) | F.col(_LIMIT).isNull() | (F.col(_PRIO) < F.col(_LIMIT))
    return frame.filter(keep).drop(_COUNT, _LIMIT)


def bound_spark(df: Any, job: GroupedJob, source: RandomSource) -> Any:
    """The rows kept by the bounds, as a Spark DataFrame: ``__treedp_v`` (the value), the
    ``by`` columns, ``__treedp_unit`` (the person id), ``__treedp_key`` (the key's position),
    ``__treedp_bad`` (non-zero: a missing value, id or key, under ``nan="error"``). With a
    privacy unit the frame also carries the bounding's working columns (the row id, its
    priority, the person's row count, the windows' ranks; all named ``__treedp_*``): select
    the columns above to use the rows elsewhere.

    See the module docstring: windows over the person id ordered by keyed SHA-256 priorities.
    Nothing is computed here: the rows (and, with ``max_contributions`` alone, the per-person
    counts joined back to them) are read when the returned frame is.
    """
    types = _check_schema(df, job)
    frame = _flagged(df, job, types)
    if job.unit is None:
        return frame
    return _bounded(frame, job, spark_secret(source))


def count_grouped_spark(
    df: Any, job: GroupedJob, source: RandomSource, *, method: str = "window"
) -> GroupedCounts:
    """Bound and count a Spark DataFrame; only the non-zero of ``G × B`` counts are collected.

    ``method="window"`` (default): all in Spark SQL (module docstring); the executors need no
    treedp. ``method="partition"``: one shuffle by person id, then each partition (all rows of
    its persons) is bounded and counted by the numpy kernel in ``mapInArrow``
    (:func:`treedp.privacy.contribution.bound_contributions`; randomness from the executor's
    ``os.urandom``, or, for a seeded source, a seed per partition derived from 32 bytes of
    it); it needs treedp on the executors.

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        Unknown column, wrong type (from the schema, before any value is read).
    DataError
        A missing value, key or person id under ``nan="error"`` (no count in the message).
    MissingDependencyError
        ``method="partition"`` on executors whose Python cannot import treedp.
    """
    from pyspark.sql import functions as F

    if method not in ("partition", "window"):
        raise InvalidParameterError(must("method", "be 'partition' or 'window'."))
    types = _check_schema(df, job)
    n_bins = job.bins.n_bins
    with quiet_pyspark():
        if method == "partition":
            frame = _flagged(df, job, types)
            key_missing = (F.col(_BAD) == -2) if job.nan == "error" else None
            # randomness only for bounding, and drawn here only for a seeded (test) source
            seeded = bool(getattr(source, "seeded", False)) and job.unit is not None
            seed_key = spark_secret(source) if seeded else None
            cells, count = count_partitions(frame, job, seed_key, key_missing)
        else:
            frame = _flagged(df, job, types)
            if job.unit is not None:
                frame = _bounded(frame, job, spark_secret(source))
            frame, bin_col = binnable(frame, types[job.column], job.bins)
            good = F.col(_CODE).cast("long") * F.lit(n_bins) + bin_col
            cell = F.when(F.col(_BAD) != 0, F.col(_BAD).cast("long")).otherwise(good)
            cells, count = collect_cells(frame.select(cell.alias("cell")))
    present = set(cells[(cells < 0) & (count > 0)].tolist())
    for lost, what in _MISSING_CELLS.items():
        if lost in present:
            raise _missing_error(what)
    g = len(job.keys)
    counts = np.zeros(g * n_bins, dtype=np.int64)
    counts[cells[cells >= 0]] = count[cells >= 0]
    return GroupedCounts(job.keys, counts.reshape(g, n_bins), 0)


def _missing_error(what: str) -> DataError:
    if what == "unit":
        return person_missing_error()
    return missing_key_error() if what == "key" else missing_values_error()


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

    types = _check_schema(df, job)
    by_cols = [quoted(b) for b in job.by]
    with quiet_pyspark():
        frame = df.select(*[quoted(c) for c in job.columns])
        frame = _refuse_or_drop(frame, job, types)
        if job.unit is None:
            summed = frame.groupBy(*by_cols).agg(F.count(F.lit(1)).alias(_PRIO))
        else:
            g = job.bounds.max_groups
            unit_col = quoted(job.unit)
            pairs = frame.select(unit_col, *by_cols).distinct()
            parts = [unit_col.cast("string"), *[c.cast("string") for c in by_cols]]
            digest = F.sha2(F.concat_ws("|", F.lit(spark_secret(source)), *parts, F.lit("s")), 256)
            prio = F.conv(F.substring(digest, 1, 15), 16, 10).cast("long")
            w = Window.partitionBy(unit_col).orderBy(prio, *by_cols)
            ranked = pairs.withColumn("__srank", F.row_number().over(w))
            kept = (F.col("__srank") <= g).cast("long")
            summed = ranked.groupBy(*by_cols).agg(F.sum(kept).alias(_PRIO))
        types_by = [df.schema[b].dataType.typeName() for b in job.by]
        texts = [column_text(c, t).alias(b) if t in DATED else c
                 for c, t, b in zip(by_cols, types_by, job.by, strict=True)]  # fmt: skip
        rows = summed.select(*texts, _PRIO).collect()  # dates as text: no year limit
    n_by = len(job.by)
    rows = [
        (*(key_value(v, t) if t in DATED else v for v, t in zip(r[:n_by], types_by, strict=True)),
         *r[n_by:])
        for r in rows
    ]  # fmt: skip
    keys = [r[0] if n_by == 1 else tuple(r[:n_by]) for r in rows]
    counts = np.fromiter((int(r[n_by]) for r in rows), dtype=np.int64, count=len(rows))
    return KeyCounts.merge([KeyCounts(tuple(keys), counts)])


def _refuse_or_drop(frame: Any, job: GroupedJob, types: dict[str, str]) -> Any:
    """``frame`` without its records with a missing value, key or id (``nan="drop"``), or
    checked to have none (``"error"``: one ``limit(1)`` query finds whether any is missing, a
    second says which; the error holds no count)."""
    checks = [
        (job.column, "value"),
        *([(job.unit, "unit")] if job.unit else []),
        *[(b, "key") for b in job.by],
    ]
    masks = [(missing(quoted(name), types[name]), what) for name, what in checks]
    any_missing = functools.reduce(operator.or_, (m for m, _ in masks))
    if job.nan == "drop":
        return frame.filter(~any_missing)
    if frame.filter(any_missing).limit(1).count():
        for mask, what in masks:
            if frame.filter(mask).limit(1).count():
                raise _missing_error(what)
    return frame
