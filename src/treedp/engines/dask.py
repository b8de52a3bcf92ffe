"""The Dask engine: count a Dask DataFrame column, Series or array; only B counts return.

Every partition (or array block) is counted on its worker by the numpy kernel
:func:`treedp.engines.local.count_chunk`, so the bin rule of :mod:`treedp.engines.base` holds
bit for bit by construction. The per-partition count vectors are added in a tree
(``dask.array.reduction`` with ``split_every``) on the workers; the client receives one
vector of ``B`` counts and the number of dropped missing values. Noise, estimation and the
release happen on the client, as for every engine.

treedp (numpy only) must be importable on the workers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["DaskEngine", "count_dask"]

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
    total = _tree_sum([delayed(_counts_of_block, pure=True)(b, shared) for b in blocks])
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
        raise InvalidTypeError(
            f"The 'column' parameter must be a str. Got {type(column).__name__} instead."
        )
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
    from treedp._inputs import as_1d_array
    from treedp.engines.local import count_chunk

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


def _tree_sum(parts: list[Any]) -> Any:
    """Add the partial vectors in a tree of fan-in ``SPLIT_EVERY`` (a delayed result)."""
    from dask.delayed import delayed

    while len(parts) > 1:
        parts = [
            delayed(_add_vectors, pure=True)(*parts[i : i + SPLIT_EVERY])
            for i in range(0, len(parts), SPLIT_EVERY)
        ]
    return parts[0]


def _add_vectors(*vectors: np.ndarray) -> np.ndarray:
    total = vectors[0].copy()
    for v in vectors[1:]:
        total += v
    return total
