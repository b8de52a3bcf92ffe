"""The bin of each value of a grouped table: the bin rule of :mod:`treedp.engines.base`,
vectorised in cache-sized chunks; integer columns over a narrow public range through a lookup
table built by the same rule (:func:`bin_index`, used by :mod:`treedp.engines.grouped`).
"""

from __future__ import annotations

import math

import numpy as np

from treedp._inputs import with_kind
from treedp.domain import Bins
from treedp.engines.base import NanPolicy
from treedp.engines.equal_width import _corrected_near_edges, _edge_proofs, _scaled
from treedp.engines.local import datetime_ticks
from treedp.exceptions import DataError, InvalidTypeError

__all__ = ["CHUNK", "TABLE_MAX", "bin_index"]

#: Rows per chunk of the element-wise passes (cache-sized), and the largest public integer
#: range mapped through a lookup table.
CHUNK = 1 << 18
TABLE_MAX = 1 << 22


def bin_index(values: np.ndarray, bins: Bins, nan: NanPolicy = "error") -> np.ndarray:
    """The bin of each value (the bin rule), ``-1`` for a missing value under ``nan="drop"``.

    Raises
    ------
    InvalidTypeError
        If the dtype does not fit the bins.
    DataError
        On a missing value under ``nan="error"``.
    """
    if bins.datetime_unit is None and values.dtype.kind in "iu" and values.dtype != np.uint64:
        table = _integer_table(bins, values.size)
        if table is not None:  # integers (never missing) over a narrow public range
            return _look_up(values, table)
    values = with_kind(values, bins.datetime_unit is not None)  # untyped, nothing present
    if bins.datetime_unit is not None:
        if values.dtype.kind != "M":
            raise InvalidTypeError("The value column must hold datetimes for datetime bins.")
        bad = np.isnat(values)
        axis = np.zeros(values.size, dtype=np.int64)
        axis[~bad] = datetime_ticks(values[~bad], bins.datetime_unit)
    else:
        if values.dtype.kind not in "iuf":
            # no dtype named: a list's (int64 or float64) comes from its values
            raise InvalidTypeError("The value column must hold numbers or datetimes.")
        axis = values.astype(np.float64, copy=False)
        bad = np.isnan(axis)
    if bad.any() and nan == "error":
        raise DataError(
            "The value column contains missing values (NaN/NaT). Pass nan='drop' to leave "
            "them out, or clean the column first."
        )
    idx = _locate(axis, bins)
    idx[bad] = -1
    return idx


def _integer_table(bins: Bins, rows: int) -> tuple[int, np.ndarray] | None:
    """``(low, table)``: the bin of each integer ``low + i`` in ``[⌊first edge⌋ − 1, ⌈last
    edge⌉ + 1]`` by the float rule (:func:`_locate`), when that public range is narrow (at
    most ``TABLE_MAX`` entries and no more than the rows, with exactly representable ends);
    else None. An integer outside the range falls in the bin of the nearer end: the rule is
    monotone and clamps, and converting to float keeps the order."""
    low = math.floor(float(bins.edges[0])) - 1
    high = math.ceil(float(bins.edges[-1])) + 1
    if not (low > -(2**52) and high < 2**52 and high - low < min(TABLE_MAX, rows)):
        return None
    return low, _locate(np.arange(low, high + 1, dtype=np.float64), bins)


def _look_up(values: np.ndarray, table: tuple[int, np.ndarray]) -> np.ndarray:
    """The bins of integer ``values`` through :func:`_integer_table`'s table."""
    low, bins_of = table
    out = np.empty(values.size, dtype=np.int64)
    for start in range(0, values.size, CHUNK):
        part = values[start : start + CHUNK].astype(np.int64)
        np.clip(part, low, low + bins_of.size - 1, out=part)
        part -= low
        out[start : start + CHUNK] = bins_of[part]
    return out


def _locate(axis: np.ndarray, bins: Bins) -> np.ndarray:
    """The bin of each (non-missing) axis value; arithmetic for equal-width bins, where it is
    not proven exact corrected against the edges themselves for the values next to an edge
    (as ``engines.equal_width`` counts), else a binary search."""
    edges = bins.edges
    inv = bins._inv_width
    if not (bins.equal_width and inv > 0.0) or axis.dtype.kind != "f":
        out: np.ndarray = np.searchsorted(edges[1:-1], axis, side="right").astype(np.int64)
        return out
    n_bins = int(edges.size - 1)
    lo = float(edges[0])
    few = axis.size < n_bins  # the O(B) proofs only for at least about B values (or cached)
    exact, delta, guarded = _edge_proofs(edges, inv, few)
    idx = np.empty(axis.size, dtype=np.int64)
    size = min(CHUNK, axis.size)
    buffers = np.empty(size), np.empty(size, dtype=np.intp), np.empty(size)
    with np.errstate(all="ignore"):  # extreme values overflow to ±inf: clipped below
        for start in range(0, axis.size, CHUNK):
            x = axis[start : start + CHUNK]
            t, part = buffers[0][: x.size], buffers[1][: x.size]
            _scaled(x, lo, inv, t)  # binary64 whatever the dtype
            np.clip(t, 0.0, n_bins - 0.5, out=t)
            t[np.isnan(t)] = 0.0  # missing values: marked by the caller
            np.copyto(part, t, casting="unsafe")  # the floor of t >= 0
            if not exact:
                part = _corrected_near_edges(part, x, buffers, guarded, few, delta)
            idx[start : start + CHUNK] = part
    return idx
