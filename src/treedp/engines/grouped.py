"""Grouped counting: one row of bin counts per public key, additive like :class:`BinCounts`.

A record with value ``v`` and key ``k`` adds one to ``counts[i, j]`` where ``i`` is the
position of ``k`` in the public key list and ``j`` the bin of ``v`` (the bin rule of
:mod:`treedp.engines.base`). A record whose key is not in the list is dropped (counted in
:attr:`GroupedCounts.dropped`, never released); so is, under ``nan="drop"``, a record whose
value or key is missing (under ``nan="error"`` a missing value or key raises
:class:`~treedp.exceptions.DataError`, whose message holds no count).

The counts of the parts of a table (chunks, partitions) add up to the counts of the whole:
an engine computes :func:`count_grouped_codes` per part and sums. Contribution bounding
(:mod:`treedp.privacy.contribution`) is a separate step run before counting.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp._codes import Encoded, factorize, null_mask
from treedp.domain import Bins
from treedp.engines.auto_pass import AutoPass
from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.grouped_bins import CHUNK, TABLE_MAX, bin_index
from treedp.engines.keys import (
    Key,
    candidate_keys,
    key_ticks,
    person_codes,
    py_scalar,
    sorted_keys,
    unique_pairs,
)
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.privacy.contribution import ContributionBounds, bound_contributions

__all__ = [
    "GroupedCounts",
    "GroupedJob",
    "KeyCounts",
    "bin_index",
    "column_array",
    "count_bounded",
    "count_grouped",
    "count_grouped_codes",
    "count_keys",
    "counted_rows",
    "encode_keys",
    "key_counts",
    "missing_key_error",
    "missing_keys",
    "missing_mask",
    "person_missing_error",
    "present_rows",
]


@dataclass(frozen=True, eq=False)
class GroupedCounts:
    """Bin counts per public key and the number of records left out.

    Attributes
    ----------
    keys : tuple
        The public keys, in order (scalars for one ``by`` column, tuples for several).
    counts : ndarray of int64, shape (G, B)
        ``counts[i]`` are the bin counts of the records with key ``keys[i]`` (read-only).
    dropped : int
        Records not counted (key not in the list, missing value or key under
        ``nan="drop"``); never released.
    """

    keys: tuple[Key, ...]
    counts: np.ndarray
    dropped: int = 0

    def __post_init__(self) -> None:
        counts = self.counts
        if not isinstance(counts, np.ndarray) or counts.dtype.kind not in "iu":
            raise InvalidTypeError("The 'counts' field must be a numpy array of integers.")
        if counts.ndim != 2 or counts.shape[0] != len(self.keys) or counts.shape[1] < 1:
            raise InvalidParameterError(
                "The 'counts' field must have one row per key and at least one bin."
            )
        if (counts < 0).any():
            raise InvalidParameterError("The 'counts' field must not hold negative counts.")
        if isinstance(self.dropped, bool) or not isinstance(self.dropped, int | np.integer):
            raise InvalidTypeError("The 'dropped' field must be an int.")
        if self.dropped < 0:
            raise InvalidParameterError("The 'dropped' field must not be negative.")
        out = counts.astype(np.int64, copy=True)
        out.setflags(write=False)
        object.__setattr__(self, "counts", out)
        object.__setattr__(self, "keys", tuple(self.keys))
        object.__setattr__(self, "dropped", int(self.dropped))

    @classmethod
    def zero(cls, keys: Sequence[Key], n_bins: int) -> GroupedCounts:
        """The counts of an empty table (the neutral element of ``+``)."""
        return cls(tuple(keys), np.zeros((len(keys), n_bins), dtype=np.int64), 0)

    @property
    def n_bins(self) -> int:
        """The number of bins ``B``."""
        return int(self.counts.shape[1])

    def __len__(self) -> int:
        return len(self.keys)

    def __add__(self, other: object) -> GroupedCounts:
        if not isinstance(other, GroupedCounts):
            return NotImplemented
        if other.keys != self.keys or other.counts.shape != self.counts.shape:
            raise InvalidParameterError(
                "Grouped counts over different keys or bins cannot be added."
            )
        return GroupedCounts(self.keys, self.counts + other.counts, self.dropped + other.dropped)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupedCounts):
            return NotImplemented
        return (
            self.keys == other.keys
            and self.dropped == other.dropped
            and np.array_equal(self.counts, other.counts)
        )

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, key: Key) -> BinCounts:
        """The bin counts of one key (``dropped`` is 0: it belongs to no key)."""
        try:
            i = self.keys.index(key)
        except ValueError:
            raise InvalidParameterError("That key is not one of the public keys.") from None
        return BinCounts(self.counts[i].copy(), 0)

    @staticmethod
    def sum(parts: Iterable[GroupedCounts]) -> GroupedCounts:
        """Add partial counts (at least one part)."""
        it = iter(parts)
        try:
            total = next(it)
        except StopIteration:
            raise InvalidParameterError("GroupedCounts.sum needs at least one part.") from None
        for part in it:
            total = total + part
        return total


def column_array(column: Any, name: str) -> np.ndarray:
    """A 1-D numpy array (object for strings with nulls) of a key or person-id column; a
    pandas column of zone-aware datetimes as naive UTC ``datetime64`` (its stored instants,
    as Arrow and polars give them; ``to_numpy`` would give objects that no key matches)."""
    if getattr(getattr(column, "dtype", None), "tz", None) is not None and hasattr(column, "dt"):
        column = column.dt.tz_convert(None)
    if hasattr(column, "to_numpy") and not isinstance(column, np.ndarray):
        arr = np.asarray(column.to_numpy())
    else:
        if isinstance(column, str | bytes) or np.isscalar(column):
            raise InvalidTypeError(f"The '{name}' column must be a 1-D array-like.")
        arr = np.asarray(column)
    if arr.ndim != 1:
        raise InvalidTypeError(f"The '{name}' column must be one-dimensional.")
    return arr


def missing_mask(arr: np.ndarray) -> np.ndarray:
    """True where a key or id is missing (None, NaN, NaT, pandas' NA), vectorised
    (:func:`treedp._codes.null_mask`)."""
    return null_mask(arr)


def _codes_for(arr: np.ndarray, values: Sequence[Any]) -> np.ndarray:
    """Index of each entry of ``arr`` in ``values`` (-1 if absent); ``arr`` has no nulls."""
    index = {v: i for i, v in enumerate(values)}
    if isinstance(arr, Encoded) and arr.uniques.dtype.kind == "M":
        table: np.ndarray = np.append(_instant_codes(arr.uniques, values), -1)
        return table[arr.codes]  # type: ignore[no-any-return]
    if not isinstance(arr, Encoded) and arr.dtype.kind == "M":
        return _instant_codes(arr, values)
    if isinstance(arr, Encoded):  # already encoded: one lookup per distinct value
        table = np.fromiter(
            (index.get(py_scalar(u), -1) for u in arr.uniques),
            dtype=np.int64,
            count=arr.uniques.size,
        )
        out_codes: np.ndarray = np.append(table, -1)[arr.codes]  # code -1 (missing): -1
        return out_codes
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind in "iuf" and all(type(v) in (int, float) for v in values):
        ints = [i for i, v in enumerate(values) if type(v) is int]
        if 0 < len(ints) < len(values):  # each key as numpy compares it alone: one array of
            # both kinds made every int a float (2**53 + 1 then matched 2**53; a review)
            return _mixed_codes(arr, values, ints)
        public = np.asarray(values)
        if public.dtype.kind == "i" and arr.dtype.kind in "iu":
            low, high = int(public.min()), int(public.max())
            if high - low < TABLE_MAX:  # integers over a small public range: a lookup table
                table = np.full(high - low + 1, -1, dtype=np.int64)
                table[public - low] = np.arange(public.size)
                out = np.full(arr.size, -1, dtype=np.int64)
                for start in range(0, arr.size, CHUNK):
                    part = arr[start : start + CHUNK]
                    inside = (part >= low) & (part <= high)
                    pos = np.where(inside, part, low).astype(np.int64) - low
                    out[start : start + CHUNK] = np.where(inside, table[pos], -1)
                return out
        if public.dtype.kind in "if":  # numbers: a binary search in the sorted public keys
            return _sorted_lookup(public, np.arange(public.size), arr)
    inverse, uniq = factorize(arr)  # one hash pass over the rows, a lookup per distinct value
    lookup = np.fromiter(
        (index.get(py_scalar(u), -1) for u in uniq), dtype=np.int64, count=uniq.size
    )
    mapped: np.ndarray = np.where(inverse >= 0, lookup[np.maximum(inverse, 0)], -1)
    return mapped


def _mixed_codes(arr: np.ndarray, values: Sequence[Any], ints: list[int]) -> np.ndarray:
    """:func:`_codes_for` of a key list mixing ints and floats: the ints and the floats looked
    up apart, an int key's match first."""
    floats = [i for i in range(len(values)) if i not in set(ints)]
    parts = []
    for chosen in (ints, floats):
        found = _codes_for(arr, [values[i] for i in chosen])
        parts.append(np.where(found >= 0, np.asarray(chosen, dtype=np.int64)[found], -1))
    return np.where(parts[0] >= 0, parts[0], parts[1]).astype(np.int64)


def _sorted_lookup(public: np.ndarray, positions: np.ndarray, data: np.ndarray) -> np.ndarray:
    """``positions[i]`` where ``data`` equals ``public[i]``, else -1: a binary search in the
    sorted public keys."""
    order = np.argsort(public, kind="stable")
    ordered, where = public[order], positions[order]
    at = np.minimum(np.searchsorted(ordered, data), ordered.size - 1)
    return np.where(ordered[at] == data, where[at], -1).astype(np.int64)


def _instant_codes(arr: np.ndarray, values: Sequence[Any]) -> np.ndarray:
    """Index of each entry of a ``datetime64`` array (no NaT) in ``values``, matched as
    instants (:func:`~treedp.engines.keys.key_ticks` in the array's unit); -1 if absent."""
    unit = np.datetime_data(arr.dtype)[0]
    ticks = [key_ticks(v, unit) for v in values]
    where = [i for i, t in enumerate(ticks) if t is not None]
    if not where or not arr.size:
        return np.full(arr.size, -1, dtype=np.int64)
    public = np.array([ticks[i] for i in where], dtype=np.int64)
    return _sorted_lookup(public, np.asarray(where, dtype=np.int64), arr.view(np.int64))


def missing_keys(by: Sequence[np.ndarray], nan: NanPolicy, size: int) -> np.ndarray:
    """True where a record's key is missing; under ``nan="error"`` a missing key raises."""
    missing = np.zeros(size, dtype=bool)
    for col in by:
        missing |= missing_mask(col)
    if missing.any() and nan == "error":
        raise missing_key_error()
    return missing


def encode_keys(
    columns: Sequence[np.ndarray], keys: tuple[Key, ...], nan: NanPolicy = "error"
) -> np.ndarray:
    """The position of each record's key in ``keys``: ``-1`` when not in the list or missing.

    Raises
    ------
    DataError
        On a missing key under ``nan="error"`` (the message names no count).
    """
    n_by = len(columns)
    if n_by == 1 and isinstance(columns[0], Encoded):  # one gather, missing keys give -1
        if nan == "error" and bool((columns[0].codes < 0).any()):
            raise missing_key_error()
        return _codes_for(columns[0], keys)
    ok = ~missing_keys(columns, nan, columns[0].size)
    if n_by == 1:
        codes = np.full(columns[0].size, -1, dtype=np.int64)
        codes[ok] = _codes_for(columns[0][ok], keys)
        return codes
    combo = np.zeros(int(ok.sum()), dtype=np.int64)
    radix = 1
    per_col: list[list[Any]] = []
    for j, col in enumerate(columns):
        values = list(dict.fromkeys(k[j] for k in keys))
        per_col.append(values)
        c = _codes_for(col[ok], values)
        combo = np.where((combo < 0) | (c < 0), -1, combo + c * radix)
        radix *= len(values)
    lookup: dict[int, int] = {}
    for i, k in enumerate(keys):
        code, r = 0, 1
        for j, v in enumerate(k):
            code += per_col[j].index(v) * r
            r *= len(per_col[j])
        lookup[code] = i
    uniq, inverse = np.unique(combo, return_inverse=True)
    table = np.fromiter((lookup.get(int(u), -1) for u in uniq), dtype=np.int64, count=uniq.size)
    codes = np.full(columns[0].size, -1, dtype=np.int64)
    codes[ok] = table[inverse.ravel()]
    return codes


def count_grouped_codes(
    bin_idx: np.ndarray, codes: np.ndarray, keys: tuple[Key, ...], n_bins: int
) -> GroupedCounts:
    """Count records given their bin (``-1``: dropped) and key position (``-1``: dropped).

    One ``bincount`` over ``code·B + bin``: the per-chunk kernel of every engine.
    """
    ok = (bin_idx >= 0) & (codes >= 0)
    kept = int(np.count_nonzero(ok))
    if kept == ok.size:  # nothing dropped: no gathers through the mask
        flat = np.multiply(codes, n_bins, dtype=np.int64)
        flat += bin_idx
    else:
        flat = codes[ok] * n_bins + bin_idx[ok]
    g = len(keys)
    counts = np.bincount(flat, minlength=g * n_bins).reshape(g, n_bins)
    return GroupedCounts(keys, counts, int(ok.size - kept))


def count_grouped(
    values: np.ndarray,
    by: Sequence[np.ndarray],
    keys: tuple[Key, ...],
    bins: Bins,
    nan: NanPolicy = "error",
) -> GroupedCounts:
    """Count ``values`` per public key of the ``by`` columns (numpy arrays of equal length)."""
    if any(col.size != values.size for col in by):
        raise InvalidParameterError("The value and 'by' columns must have the same length.")
    return count_grouped_codes(
        bin_index(values, bins, nan), encode_keys(by, keys, nan), keys, bins.n_bins
    )


# ---------------------------------------------------------------------- the engines' job
@dataclass(frozen=True)
class GroupedJob:
    """What every grouped engine computes: public inputs only, validated by the caller.

    Attributes
    ----------
    column : str
        The value column.
    by : tuple of str
        The group-by columns (empty: one group keyed ``()``).
    keys : tuple
        The public keys (``((),)`` without ``by``).
    unit : str or None
        The person-id column (None: one row is one person, no bounding).
    bounds : ContributionBounds
        The per-person bounds.
    bins : Bins
        The public bins.
    nan : {"error", "drop"}
        Missing values, keys or person ids.
    auto : AutoPass or None
        ``"auto"``: the bound is chosen between the engine's passes (``bounds`` holds a
        stand-in until then); only engines whose table entry says ``auto_bound`` get one.
    """

    column: str
    by: tuple[str, ...]
    keys: tuple[Key, ...]
    unit: str | None
    bounds: ContributionBounds
    bins: Bins
    nan: NanPolicy
    auto: AutoPass | None = None

    @property
    def columns(self) -> list[str]:
        """The columns an engine reads (value, by, unit), each once."""
        names = [self.column, *self.by, *([self.unit] if self.unit is not None else [])]
        return list(dict.fromkeys(names))


def person_missing_error() -> DataError:
    """The error for a missing person id under ``nan="error"`` (the same on every engine)."""
    return DataError(
        "The 'privacy_unit' column contains missing ids. Pass nan='drop' to leave those "
        "records out, or clean the column first."
    )


def present_rows(
    values: np.ndarray, person: np.ndarray | None, job: GroupedJob
) -> tuple[np.ndarray, np.ndarray]:
    """Each record's bin (``-1``: missing value, under ``nan="drop"``) and whether its value
    and person id are present; missing ones raise under ``nan="error"``."""
    bin_idx = bin_index(values, job.bins, job.nan)
    keep = bin_idx >= 0
    if person is not None:
        gone = missing_mask(person)
        if job.nan == "error" and gone.any():
            raise person_missing_error()
        keep &= ~gone
    return bin_idx, keep


def counted_rows(
    values: np.ndarray, by: Sequence[np.ndarray], person: np.ndarray | None, job: GroupedJob
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(bins, key positions, rows)``: the rows counted before bounding are those with a
    value, key and person id present (else refused, under ``nan="error"``) and a public key."""
    bin_idx, keep = present_rows(values, person, job)
    codes = encode_keys(by, job.keys, job.nan) if by else np.zeros(values.size, dtype=np.int64)
    return bin_idx, codes, np.flatnonzero(keep & (codes >= 0))


def count_bounded(
    values: np.ndarray,
    by: Sequence[np.ndarray],
    person: np.ndarray | None,
    job: GroupedJob,
    source: RandomSource | None,
) -> GroupedCounts:
    """Bound (if ``person`` is given) and count one table's rows: the in-memory pipeline.

    Records with a missing value, key or person id are refused or dropped (``job.nan``);
    records whose key is not public are dropped; then each person's rows beyond the bounds
    are dropped by uniform sampling (:func:`bound_contributions`, randomness from
    ``source``) and the rest counted. It is also every engine's kernel for a chunk or
    partition that holds all rows of its persons (or any chunk without a privacy unit).
    """
    bin_idx, codes, rows = counted_rows(values, by, person, job)
    if person is not None:
        if source is None:
            raise InvalidParameterError("Contribution bounding needs a random source.")
        kept = bound_contributions(
            person[rows], codes[rows] if by else None, job.bounds, source, len(job.keys)
        )
        rows = rows[kept]
    counts = count_grouped_codes(bin_idx[rows], codes[rows], job.keys, job.bins.n_bins)
    return GroupedCounts(job.keys, counts.counts, int(values.size - rows.size))


# ---------------------------------------------------------------------- private key selection
@dataclass(frozen=True, eq=False)
class KeyCounts:
    """The candidate keys present in the data and their selection counts, before any noise.

    The count of a key is the number of distinct persons holding it after each person is cut
    to at most ``max_groups`` keys (uniformly sampled), or its number of rows when one row is
    one person. This is data: private key selection noises and thresholds it on the driver
    (:func:`treedp.api_grouped.choose_keys`), and neither the keys nor the counts are output
    otherwise.

    Attributes
    ----------
    keys : tuple
        The keys present (scalars for one ``by`` column, tuples for several), in sorted order
        once normalised (:meth:`merge`).
    counts : ndarray of int64, shape (len(keys),)
        The selection count of each key (read-only).
    """

    keys: tuple[Key, ...]
    counts: np.ndarray

    def __post_init__(self) -> None:
        counts = self.counts
        if not isinstance(counts, np.ndarray) or counts.dtype.kind not in "iu":
            raise InvalidTypeError("The 'counts' field must be a numpy array of integers.")
        if counts.ndim != 1 or counts.size != len(self.keys):
            raise InvalidParameterError("The 'counts' field must hold one count per key.")
        out = counts.astype(np.int64, copy=True)
        out.setflags(write=False)
        object.__setattr__(self, "counts", out)
        object.__setattr__(self, "keys", tuple(self.keys))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, KeyCounts):
            return NotImplemented
        return self.keys == other.keys and np.array_equal(self.counts, other.counts)

    __hash__ = None  # type: ignore[assignment]

    def as_dict(self) -> dict[Key, int]:
        """``{key: count}`` (for tests and the conformance of the engines)."""
        return {k: int(c) for k, c in zip(self.keys, self.counts, strict=True)}

    @staticmethod
    def merge(parts: Iterable[KeyCounts]) -> KeyCounts:
        """Add the counts of parts (disjoint persons, or rows) by key; keys sorted.

        The sorted order is the order of the in-memory candidates (``np.unique`` per column,
        lexicographic over several columns), so that noise is drawn key by key alike on every
        engine.
        """
        total: dict[Key, int] = {}
        for part in parts:
            for k, c in zip(part.keys, part.counts.tolist(), strict=True):
                total[k] = total.get(k, 0) + int(c)
        keys = sorted_keys(total)
        counts = np.fromiter((total[k] for k in keys), dtype=np.int64, count=len(keys))
        return KeyCounts(tuple(keys), counts)


def missing_key_error() -> DataError:
    """The error for a missing key under ``nan="error"`` (the same on every engine)."""
    return DataError(
        "A 'by' column contains missing keys (None/NaN). Pass nan='drop' to leave those "
        "records out, or clean the column first."
    )


def key_counts(
    by: Sequence[np.ndarray],
    keep: np.ndarray,
    person: np.ndarray | None,
    unit: str | None,
    max_groups: int,
    nan: NanPolicy,
    source: RandomSource | None,
) -> KeyCounts:
    """The selection counts of the rows ``keep`` (value and person id present) of one part
    that holds all rows of its persons (or any part without a person column).

    Rows with a missing key are refused or dropped (``nan``). With ``person``: one entry per
    (person, key) pair, then at most ``max_groups`` keys per person, sampled uniformly
    (:func:`bound_contributions`, randomness from ``source``), and each key counts its kept
    persons; without: each key counts its rows. Keys whose pairs were all dropped are kept
    with count 0 here; :func:`treedp.api_grouped.choose_keys` drops them (no candidate).
    """
    rows = np.flatnonzero(keep & ~missing_keys(by, nan, keep.size))
    if rows.size == 0:
        return KeyCounts((), np.zeros(0, dtype=np.int64))
    codes, candidates = candidate_keys([np.asarray(c[rows]) for c in by])
    if person is None:
        per_key = np.bincount(codes, minlength=len(candidates))
    else:
        if source is None:
            raise InvalidParameterError("Contribution bounding needs a random source.")
        pairs = unique_pairs(person_codes(person[rows]), codes)
        one = ContributionBounds(unit, max_groups, max_groups, 1)
        kept = bound_contributions(pairs[0], pairs[1], one, source)
        per_key = np.bincount(pairs[1][kept], minlength=len(candidates))
    return KeyCounts(tuple(candidates), per_key)


def count_keys(
    values: np.ndarray,
    by: Sequence[np.ndarray],
    person: np.ndarray | None,
    job: GroupedJob,
    source: RandomSource | None,
) -> KeyCounts:
    """:func:`key_counts` of one part of a table (``job.keys`` is not used): records with a
    missing value or person id are refused or dropped first, as for counting."""
    _, keep = present_rows(values, person, job)
    return key_counts(by, keep, person, job.unit, job.bounds.max_groups, job.nan, source)
