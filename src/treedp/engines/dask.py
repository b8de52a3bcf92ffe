"""The Dask engine: count a Dask DataFrame column, Series or array; only B counts return.

Every partition (or array block) is counted on its worker by the numpy kernel
:func:`treedp.engines.local.count_chunk`, so the bin rule of :mod:`treedp.engines.base` holds
bit for bit by construction. The per-partition count vectors are added in a tree of fan-in
:data:`SPLIT_EVERY` on the workers; the client receives one vector of ``B`` counts and the
number of dropped missing values. Noise, estimation and the release happen on the client, as
for every engine.

Grouped counting and per-person bounding: without a privacy unit each partition is counted by
the numpy kernel (:func:`treedp.engines.grouped.count_bounded`). With one, the DataFrame is
first shuffled by the person id (``DataFrame.shuffle(on=unit)``: all rows of a person land in
one partition), then each partition is bounded and counted by the same kernel, which runs
:func:`treedp.privacy.contribution.bound_contributions` on it. The per-partition ``G·B + 1``
count vectors (the last entry: rows left out) are added in the same tree; only ``G × B``
counts reach the client.

Randomness per partition: with the operating system's source (the default) each task draws
its own from the worker's ``os.urandom``; with :class:`~treedp.InsecureSeededSource` (tests
only) the client draws a 64-bit seed per partition from it, so results are reproducible.
Column names are checked against the schema before any value is read; missing values, keys or
ids follow ``nan`` inside the partitions (the error says no count).

treedp (numpy only) must be importable on the workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from treedp._inputs import as_1d_array
from treedp._validation import must
from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.engines.entry import Engine, frame_column, module_root
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    column_array,
    count_bounded,
    count_keys,
)
from treedp.engines.local import count_chunk
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.rng import InsecureSeededSource, SystemRandomSource, words

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["ENGINE", "DaskEngine", "count_dask", "count_grouped_dask", "key_counts_dask"]

#: Partial count vectors added per tree node.
SPLIT_EVERY = 8


def count_dask(obj: Any, column: str | None, bins: Bins, nan: NanPolicy = "error") -> BinCounts:
    """Count a Dask DataFrame column, Dask Series or 1-D Dask array into ``bins``.

    Parameters
    ----------
    obj : dask.dataframe.DataFrame, dask.dataframe.Series or dask.array.Array
        The data (arrays must be one-dimensional).
    column : str or None
        The column of a DataFrame (``None`` when it has exactly one column); must be ``None``
        for a Series or an array.
    bins : Bins
        The public bins.
    nan : {"error", "drop"}, default="error"
        Missing values (NaN, NaT, null): an error, or left out and reported in
        :attr:`BinCounts.dropped`.

    Returns
    -------
    BinCounts
        Identical, bin for bin, to :func:`treedp.engines.local.count_chunk` on the same values.

    Raises
    ------
    InvalidTypeError
        For anything but a Dask DataFrame, Series or array, or a column that is neither
        numeric nor datetime, or does not fit the bins.
    InvalidParameterError
        If the column is not in the DataFrame.
    DataError
        On a missing value under ``nan="error"`` (the message holds no count).
    """
    check_nan_policy(nan)
    import dask.array as da
    import dask.dataframe as dd
    from dask.delayed import delayed

    if isinstance(obj, dd.DataFrame):
        obj = _pick(obj, column)
    elif isinstance(obj, dd.Series | da.Array):
        if column is not None:
            raise InvalidParameterError(
                "The 'column' parameter applies to DataFrames; the data given is already one "
                "column."
            )
    else:
        raise InvalidTypeError(
            "count_dask counts a Dask DataFrame, Series or array. "
            f"Got {type(obj).__name__} instead."
        )
    if isinstance(obj, da.Array) and obj.ndim != 1:
        raise InvalidTypeError(
            "The 'values' argument must be one-dimensional (one column); flatten it or pick "
            "one column."
        )
    _check_dtype(obj.dtype, bins)
    collection: Any = obj
    delayed_parts = collection.to_delayed()
    blocks = list(delayed_parts.ravel() if isinstance(obj, da.Array) else delayed_parts)
    if not blocks:
        return BinCounts.zero(bins.n_bins)
    shared = _shared_bins(bins)
    parts = [delayed(_counts_of_block, pure=True)(b, shared) for b in blocks]
    total = _tree_reduce(parts, _add_vectors)
    vector = np.asarray(total.compute(), dtype=np.int64)
    dropped = int(vector[-1])
    if dropped and nan == "error":
        raise DataError(
            "The column contains missing (NaN, NaT or null) values. Pass nan='drop' to leave "
            "them out (a per-record filter that keeps the add/remove guarantee; see the docs), "
            "or clean the column first."
        )
    return BinCounts._trusted(vector[:-1].copy(), dropped)


class DaskEngine:
    """A :class:`~treedp.engines.base.CountEngine` over Dask collections."""

    def __init__(self, column: str | None = None) -> None:
        self.column = column

    def __repr__(self) -> str:
        return f"DaskEngine(column={self.column!r})"

    def count(self, source: Any, bins: Bins, *, nan: NanPolicy = "error") -> BinCounts:
        """Count ``source`` into ``bins``; see :func:`count_dask`."""
        return count_dask(source, self.column, bins, nan)


def _pick(frame: Any, column: str | None) -> Any:
    names = list(frame.columns)
    if column is None:
        if len(names) != 1:
            raise InvalidParameterError(
                "The 'column' parameter is needed for a DataFrame with several columns."
            )
        return frame[names[0]]
    if not isinstance(column, str):
        raise InvalidTypeError(must("column", f"be a str. Got {type(column).__name__} instead."))
    if column not in names:
        raise InvalidParameterError(
            f"The column '{column}' is not in the data. Columns: {', '.join(map(str, names))}."
        )
    if names.count(column) > 1:
        raise InvalidParameterError(f"The column '{column}' appears twice in the DataFrame.")
    return frame[column]


def _check_dtype(dtype: Any, bins: Bins) -> None:
    kind = getattr(dtype, "kind", "O")  # pandas extension dtypes have a numpy-like kind
    if kind == "M":
        if bins.datetime_unit is None:
            raise InvalidTypeError(
                "The 'values' argument holds datetimes but the bins are numeric; give "
                "datetime bounds or edges."
            )
        return
    if kind in "iuf":
        if bins.datetime_unit is not None:
            raise InvalidTypeError(
                "The 'values' argument must hold datetimes for datetime bins. "
                f"Got dtype {dtype} instead."
            )
        return
    raise InvalidTypeError(f"The column must hold numbers or datetimes. Got dtype {dtype} instead.")


def _counts_of_block(block: Any, bins: Bins) -> np.ndarray:
    """``B`` counts of one partition, then its dropped missing values (``B + 1`` int64)."""

    arr = as_1d_array(block)
    out = np.empty(bins.n_bins + 1, dtype=np.int64)
    if arr.size == 0:
        out[:] = 0
        return out
    part = count_chunk(arr, bins, "drop")
    out[:-1] = part.counts
    out[-1] = part.dropped
    return out


def _shared_bins(bins: Bins) -> Any:
    """The bins for the partition tasks: with a distributed client, scattered to every worker
    once (the edges of a large ``B`` stay out of the task graph); else one graph node."""
    from dask.delayed import delayed

    try:
        from distributed import default_client

        client = cast(Any, default_client)()
    except (ImportError, ValueError):
        return delayed(bins, pure=True)
    return client.scatter(bins, broadcast=True, hash=False)


def _tree_reduce(tasks: list[Any], combine: Any) -> Any:
    """Combine delayed partial results in a tree of fan-in :data:`SPLIT_EVERY` on the workers."""
    from dask.delayed import delayed

    while len(tasks) > 1:
        tasks = [
            delayed(combine, pure=True)(*tasks[i : i + SPLIT_EVERY])
            for i in range(0, len(tasks), SPLIT_EVERY)
        ]
    return tasks[0]


def _add_vectors(*vectors: np.ndarray) -> np.ndarray:
    total = vectors[0].copy()
    for v in vectors[1:]:
        total += v
    return total


# ---------------------------------------------------------------------- grouped
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
    vector = np.asarray(_tree_reduce(tasks, _add_vectors).compute(), dtype=np.int64)
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


def _count(
    data: Any, column: str | None, bins: Bins, nan: NanPolicy, progress: bool | None, local: Any
) -> BinCounts:
    return count_dask(data, column, bins, nan)


def _collect(frame: Any, column: str) -> Any:
    return frame_column(frame, column).compute()  # collected: these methods hold it


ENGINE = Engine(
    "dask",
    lambda d: module_root(d) in ("dask", "dask_expr"),
    _count,
    local=False,
    grouped=count_grouped_dask,
    key_counts=key_counts_dask,
    collect=_collect,
    schema=lambda d: [str(c) for c in d.columns] if hasattr(d, "columns") else None,
)
