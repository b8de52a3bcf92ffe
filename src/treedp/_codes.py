"""Dictionary-encoding of id and key columns in time linear in rows, and their null rule.

A person-id or key column is turned once into integer codes: equal values get equal codes, a
missing value gets ``-1``. **Missing** means ``None``, a float NaN, a NaT or pandas' ``NA``
(what :func:`pandas.isna` calls missing); nothing else is (an empty string is an id).

With pandas installed (any DataFrame input brings it) the encoding is its hash table
(:func:`pandas.factorize`): one pass over the rows, no sort of the rows, no Python call per
row; only the distinct values are sorted, so that codes follow the values' order (the codes
an ``np.unique`` would give, hence the same seeded sampling as before). Values whose types do
not compare (``5`` and ``"p1"``) are ordered by pandas' rule for mixed values, never an error:
which types a column holds is data. Without pandas: numeric and datetime columns use numpy
(``np.unique``), other columns a sort of the values (``O(n log n)``) and a per-value null test.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp.exceptions import InvalidTypeError

__all__ = ["Encoded", "encoded_column", "factorize", "factorize_column", "null_mask"]


@dataclass(frozen=True, eq=False)
class Encoded:
    """A column held as its codes (``-1``: missing) and its distinct values, sliced like an
    array (``size``, ``col[mask]``) so that key matching needs one lookup per distinct value."""

    codes: np.ndarray
    uniques: np.ndarray

    @property
    def size(self) -> int:
        """The number of rows."""
        return int(self.codes.size)

    def __getitem__(self, rows: Any) -> Encoded:
        return Encoded(self.codes[rows], self.uniques)


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is installed wherever the tests run
        return None
    return pandas


def _is_null(x: Any) -> bool:
    if x is None:
        return True
    try:
        return bool(x != x)  # NaN, NaT
    except (TypeError, ValueError):  # pandas.NA: its comparisons are NA
        return type(x).__name__ == "NAType"


def null_mask(arr: np.ndarray) -> np.ndarray:
    """True where an entry of a 1-D array is missing (the module's rule), vectorised."""
    out: np.ndarray
    kind = "" if isinstance(arr, Encoded) else arr.dtype.kind
    if isinstance(arr, Encoded):
        out = arr.codes < 0
    elif kind == "f":
        out = np.isnan(arr)
    elif kind in "mM":
        out = np.isnat(arr)
    elif kind == "O":
        pd = _pandas()
        if pd is not None:
            out = np.asarray(pd.isna(arr), dtype=bool)
        else:
            out = np.fromiter((_is_null(x) for x in arr), dtype=bool, count=arr.size)
    else:
        out = np.zeros(arr.size, dtype=bool)
    return out


def factorize(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(codes, uniques)``: ``uniques[codes[i]] == arr[i]``, ``codes[i] == -1`` where
    ``arr[i]`` is missing; ``uniques`` sorted (mixed types: pandas' order), codes int64."""
    pd = _pandas()
    if pd is not None:
        codes, uniques = pd.factorize(arr, sort=True, use_na_sentinel=True)
        return np.asarray(codes, dtype=np.int64), np.asarray(uniques)
    missing = null_mask(arr)  # pragma: no cover - without pandas
    codes = np.full(arr.size, -1, dtype=np.int64)  # pragma: no cover
    present = arr[~missing]  # pragma: no cover
    try:  # pragma: no cover
        uniq, inv = np.unique(present, return_inverse=True)
        codes[~missing] = inv.ravel()
        return codes, uniq
    except TypeError:  # pragma: no cover - mixed types: by first appearance
        first: dict[Any, int] = {}
        codes[~missing] = np.fromiter(
            (first.setdefault(x, len(first)) for x in present), dtype=np.int64
        )
        return codes, np.array(list(first), dtype=object)


UNHASHABLE = (
    "A key or person-id column holds values that are not keys (lists, dicts, arrays); keys "
    "and ids must be numbers, text, dates or datetimes."
)


def factorize_column(
    column: Any, as_array: Any, *, sort: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`factorize` of a column as given: a pandas Series is encoded by pandas itself
    (an Arrow-backed string column without a detour through Python strings); anything else
    through ``as_array(column)`` (the caller's 1-D numpy conversion and checks). With
    ``sort=False`` a Series' codes follow the values' first appearance (no remapping pass)."""
    pd = _pandas()
    try:
        if pd is not None and isinstance(column, pd.Series):
            codes, uniques = pd.factorize(column, sort=sort, use_na_sentinel=True)
            return np.asarray(codes, dtype=np.int64), np.asarray(uniques)
        return factorize(as_array(column))
    except TypeError:  # pandas' message names the value's type: ours names none of the data
        raise InvalidTypeError(UNHASHABLE) from None


def encoded_column(column: Any, as_array: Any, values: Sequence[Any] | None = None) -> Any:
    """A pandas Series of text, categories or Arrow values as :class:`Encoded` (encoded by
    pandas, never turned into Python objects row by row; codes in order of first appearance,
    as only the distinct values are looked up); any other column as ``as_array(column)``,
    unchanged.

    ``values``: the public values the column is matched against (its keys). An Arrow-backed
    text Series is then looked up in them directly (:func:`_arrow_lookup`: one hash probe a
    row, no encoding of the column's own values)."""
    pd = _pandas()
    if pd is not None and isinstance(column, pd.Series) and column.dtype.kind not in "iufbmM":
        looked_up = None if values is None else _arrow_lookup(pd, column, values)
        if looked_up is not None:
            return looked_up
        return Encoded(*factorize_column(column, as_array, sort=False))
    return as_array(column)


class _Other:
    """Stands for every value of a column outside its public values (matches no key)."""

    def __repr__(self) -> str:
        return "<any other value>"


_OTHER = _Other()


def _arrow_lookup(pd: Any, column: Any, values: Sequence[Any]) -> Encoded | None:
    """An Arrow-backed text Series as :class:`Encoded` over ``values`` plus one entry for
    any other value: codes ``i`` where a row equals ``values[i]`` (text compares as its
    code points, as Python's ``==`` does), ``len(values)`` for an unlisted value, ``-1``
    where missing (Arrow's null); None for any other Series."""
    dtype = column.dtype
    arrow = isinstance(dtype, pd.ArrowDtype) or (
        isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"
    )
    if not arrow:
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    data = column.array.__arrow_array__()
    kind = data.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    text = [i for i, v in enumerate(values) if isinstance(v, str)]
    found = pc.index_in(data, value_set=pa.array([values[i] for i in text], type=kind))
    codes = np.asarray(found.fill_null(len(text)).to_numpy(), dtype=np.int64)
    if len(text) < len(values):  # positions among the text values -> among all values
        codes = np.append(np.asarray(text, dtype=np.int64), len(values))[codes]
    if data.null_count:
        codes[np.asarray(data.is_null().to_numpy(), dtype=bool)] = -1
    uniques = np.empty(len(values) + 1, dtype=object)
    uniques[: len(values)] = list(values)
    uniques[-1] = _OTHER
    return Encoded(codes, uniques)
