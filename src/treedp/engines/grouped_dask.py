"""Grouped counting and per-person bounding on Dask; only ``G × B`` counts reach the client.

Without a privacy unit each partition is counted by the numpy kernel
(:func:`treedp.engines.grouped.count_bounded`). With one, the DataFrame is first shuffled by
the person id (``DataFrame.shuffle(on=unit)``: all rows of a person land in one partition),
then each partition is bounded and counted by the same kernel, which runs
:func:`treedp.privacy.contribution.bound_contributions` on it. The per-partition ``G·B + 1``
count vectors (the last entry: rows left out) are added in a tree of fan-in
:data:`treedp.engines.dask.SPLIT_EVERY` on the workers.

Randomness per partition: with the operating system's source (the default) each task draws
its own from the worker's ``os.urandom``; with :class:`~treedp.InsecureSeededSource` (tests
only) the client draws a 64-bit seed per partition from it, so results are reproducible.
Column names are checked against the schema before any value is read; missing values, keys or
ids follow ``nan`` inside the partitions (the error says no count).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    column_array,
    count_bounded,
    count_keys,
)
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.rng import InsecureSeededSource, SystemRandomSource, words

__all__ = ["count_grouped_dask", "key_counts_dask"]

SPLIT_EVERY = 8


def count_grouped_dask(ddf: Any, job: GroupedJob, source: RandomSource) -> GroupedCounts:
    """Bound (after a shuffle by person id) and count a Dask DataFrame, on the workers.

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        Unknown column, or not a Dask DataFrame (before any value is read).
    DataError
        A missing value, key or id under ``nan="error"`` (raised from the partition).
    """

    tasks = _partition_tasks(ddf, job, source, _count_partition)
    if not tasks:
        return GroupedCounts.zero(job.keys, job.bins.n_bins)
    vector = np.asarray(_tree_reduce(tasks, _add).compute(), dtype=np.int64)
    g, n_bins = len(job.keys), job.bins.n_bins
    return GroupedCounts(job.keys, vector[:-1].reshape(g, n_bins), int(vector[-1]))


def _seeds(source: RandomSource, n: int) -> list[int | None]:
    return [int(s) for s in words(source, 64, n)]


def _partition_tasks(ddf: Any, job: GroupedJob, source: RandomSource, kernel: Any) -> list[Any]:
    """Check the frame (type and columns, before any value is read), shuffle it by person id
    when there is a privacy unit, and make one delayed ``kernel(partition, job, seed)`` per
    partition (seeds only for a seeded source and only for bounding: without a privacy unit
    nothing is drawn from the source)."""
    import dask.dataframe as dd
    from dask.delayed import delayed

    if not isinstance(ddf, dd.DataFrame):
        raise InvalidTypeError(f"Expected a Dask DataFrame. Got {type(ddf).__name__} instead.")
    names = [str(c) for c in ddf.columns]
    for c in job.columns:
        if c not in names:
            raise InvalidParameterError(
                f"The column '{c}' is not in the data. Columns: {', '.join(names)}."
            )
    frame = ddf[job.columns]
    if job.unit is not None:
        frame = frame.shuffle(on=job.unit)
    parts = list(frame.to_delayed())
    seeded = bool(getattr(source, "seeded", False))
    seeds = _seeds(source, len(parts)) if seeded and job.unit is not None else [None] * len(parts)
    return [delayed(kernel, pure=False)(p, job, seed) for p, seed in zip(parts, seeds, strict=True)]


def _tree_reduce(tasks: list[Any], combine: Any) -> Any:
    """Combine delayed partial results in a tree of fan-in :data:`SPLIT_EVERY` on the workers."""
    from dask.delayed import delayed

    while len(tasks) > 1:
        tasks = [
            delayed(combine, pure=True)(*tasks[i : i + SPLIT_EVERY])
            for i in range(0, len(tasks), SPLIT_EVERY)
        ]
    return tasks[0]


def key_counts_dask(ddf: Any, job: GroupedJob, source: RandomSource) -> KeyCounts:
    """The selection counts of a Dask DataFrame, on the workers (``job.keys`` unused).

    As :func:`count_grouped_dask`: with a privacy unit the frame is shuffled by person id
    first, then each partition runs :func:`treedp.engines.grouped.count_keys` (each person cut
    to ``max_groups`` keys); the partitions' ``(key, count)`` pairs are merged in a tree of
    fan-in :data:`SPLIT_EVERY` on the workers and only those pairs reach the client.
    """

    tasks = _partition_tasks(ddf, job, source, _keys_partition)
    if not tasks:
        return KeyCounts((), np.zeros(0, dtype=np.int64))
    result: KeyCounts = _tree_reduce(tasks, _merge).compute()
    return KeyCounts.merge([result])


def _keys_partition(frame: Any, job: GroupedJob, seed: int | None) -> KeyCounts:
    from treedp._inputs import as_1d_array

    if len(frame) == 0:
        return KeyCounts((), np.zeros(0, dtype=np.int64))
    source: RandomSource = SystemRandomSource() if seed is None else InsecureSeededSource(seed)
    values = as_1d_array(frame[job.column])
    by = [_column(frame[b], b) for b in job.by]
    person = None if job.unit is None else _column(frame[job.unit], "privacy_unit")
    return count_keys(values, by, person, job, source if person is not None else None)


def _merge(*parts: KeyCounts) -> KeyCounts:
    return KeyCounts.merge(parts)


def _count_partition(frame: Any, job: GroupedJob, seed: int | None) -> np.ndarray:
    from treedp._inputs import as_1d_array

    source: RandomSource = SystemRandomSource() if seed is None else InsecureSeededSource(seed)
    g, n_bins = len(job.keys), job.bins.n_bins
    out = np.zeros(g * n_bins + 1, dtype=np.int64)
    if len(frame) == 0:
        return out
    values = as_1d_array(frame[job.column])
    by = [_column(frame[b], b) for b in job.by]
    person = None if job.unit is None else _column(frame[job.unit], "privacy_unit")
    part = count_bounded(values, by, person, job, source if person is not None else None)
    out[:-1] = part.counts.ravel()
    out[-1] = part.dropped
    return out


def _column(series: Any, name: str) -> np.ndarray:
    """A key or id column as numpy, pandas' missing markers (``pd.NA`` of the string and
    nullable dtypes, which numpy cannot compare) as None."""
    arr = column_array(series, name)
    gone = np.asarray(series.isna())
    if arr.dtype.kind == "O" and gone.any():
        arr = arr.copy()
        arr[gone] = None
    return arr


def _add(*vectors: np.ndarray) -> np.ndarray:
    total = vectors[0].copy()
    for v in vectors[1:]:
        total += v
    return total
