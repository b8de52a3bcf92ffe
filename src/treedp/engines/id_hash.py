"""Person ids hashed to 64 bits under a secret key, vectorised, equal ids equal in any form.

An engine that must bring each person's rows together before bounding them (the Dask engine)
routes each row by a 64-bit hash of its id (the id travels with it). :func:`hash_ids`
computes it without a Python object per row: integers, floats and datetimes in numpy; text
and bytes on the Arrow buffers (dictionary-encoded by Arrow, then each distinct value's UTF-8
bytes hashed as 8-byte words, each word mixed with a key of its position, plus its length); an
object column is encoded by pandas' hash table and only its distinct values are looked at in
Python.

The rule (equal ids, equal hashes)
----------------------------------
Two ids that the in-memory path counts as one person (``pandas.factorize``: Python equality)
get the same hash whatever their column's type, so that one person's rows land in one part
even when the parts of a table differ in type (text as ``object``, ``string[python]``,
``string[pyarrow]``, categories; ``5``, ``5.0``, ``True``/``1`` and ``Decimal(5)`` alike):

* integers (and booleans, and integral floats, Decimals and Fractions) in ``[-2^63, 2^64)`` by
  their 64-bit two's-complement word; larger ones by their float64 value when exact (so
  ``2.0**70 == 2**70`` agree), else by their low 64 bits;
* other floats by their float64 bits (missing values never reach the hash);
* text by its UTF-8 bytes, bytes by themselves (a separate domain: ``b"a" != "a"``);
* datetimes by their nanoseconds since the epoch (UTC for zoned ones), timedeltas by theirs;
* rationals that no float equals by their reduced fraction; a value of any other type (tuples,
  custom objects) by nothing: all of them are routed to one bucket (never split; told apart
  there by the exact identity of the bucket).

Privacy: the hash only routes rows (the Dask engine's buckets); it never decides who is one
person: each bucket identifies its persons exactly from the ids themselves
(:func:`treedp.engines.dask_persons.person_codes`). Two persons whose hashes collide, and ids
of the types the rule does not read (all hashed alike), share a bucket and stay two persons,
so a collision costs neither privacy nor accuracy (among ``N`` distinct ids some pair
collides with probability about ``N²/2^65``, ``3·10^-6`` at ``10^7`` ids: a fuller bucket).
What the guarantee needs from the hash is that one person's ids never get two hashes (their
rows would be bounded apart in two buckets), which is why the rule above errs only towards
routing together. The sampling of rows is not done here: it draws from treedp's random
source. The key (:meth:`IdHashKey.draw`) is drawn from that source too, the operating
system's by default, so nobody can choose ids that share a bucket.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import numbers
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from treedp.noise import RandomSource
from treedp.noise.rng import words

__all__ = ["IdHashKey", "hash_ids"]

_M1 = np.uint64(0xFF51AFD7ED558CCD)
_M2 = np.uint64(0xC4CEB9FE1A85EC53)
_GOLD = 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1
#: Domains (each has its own key word): integers, floats, text, bytes, datetimes, timedeltas,
#: other objects; the last word is added between the two mixing rounds.
_INT, _FLOAT, _STR, _BYTES, _TIME, _DELTA, _OTHER, _FINAL = range(8)


def _fmix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place on a uint64 array (a bijection)."""
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(33)
        x *= _M1
        x ^= x >> np.uint64(33)
        x *= _M2
        x ^= x >> np.uint64(33)
    return x


def _mix1(value: int) -> np.uint64:
    return np.uint64(_fmix(np.array([value & _MASK], dtype=np.uint64))[0])


@dataclass(frozen=True)
class IdHashKey:
    """The secret key of :func:`hash_ids`: eight 64-bit words, one per domain and a last one.

    Attributes
    ----------
    words : tuple of int
        The key words (each in ``[0, 2^64)``).
    """

    words: tuple[int, ...]

    @classmethod
    def draw(cls, source: RandomSource) -> IdHashKey:
        """A fresh key from ``source`` (the operating system's by default upstream)."""
        return cls(tuple(int(w) for w in words(source, 64, 8)))

    def word(self, domain: int) -> np.uint64:
        """The key word of one domain."""
        return np.uint64(self.words[domain])


def _hash_words(w: np.ndarray, key: IdHashKey, domain: int) -> np.ndarray:
    """A bijective keyed mix of 64-bit words: no two words of one domain collide."""
    x = np.asarray(w, dtype=np.uint64) ^ key.word(domain)  # a copy: the input is not changed
    _fmix(x)
    with np.errstate(over="ignore"):
        x += key.word(_FINAL)
    return _fmix(x)


def _hash_floats(f: np.ndarray, key: IdHashKey) -> np.ndarray:
    """Integral floats in ``[-2^63, 2^64)`` as the integers they equal, others by their bits."""
    f = np.asarray(f, dtype=np.float64)
    out = np.empty(f.size, dtype=np.uint64)
    with np.errstate(invalid="ignore"):
        integral = np.isfinite(f) & (f == np.floor(f)) & (f >= -(2.0**63)) & (f < 2.0**64)
    neg = integral & (f < 0)
    pos = integral & ~neg
    as_int = np.zeros(f.size, dtype=np.uint64)
    as_int[neg] = f[neg].astype(np.int64).view(np.uint64)
    as_int[pos] = f[pos].astype(np.uint64)
    out[integral] = _hash_words(as_int[integral], key, _INT)
    out[~integral] = _hash_words(f[~integral].view(np.uint64), key, _FLOAT)
    return out


def _hash_buffers(arr: Any, key: IdHashKey, domain: int) -> np.ndarray:
    """The hash of each value of an Arrow ``large_binary`` array without nulls: the sum of its
    8-byte little-endian words (zero-padded), each mixed with its position's key, plus its
    length, mixed again. Two values of one length that differ in one word never collide."""
    bufs = arr.buffers()
    n = len(arr)
    off = np.frombuffer(bufs[1], dtype=np.int64, count=n + 1, offset=arr.offset * 8)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    first, last = int(off[0]), int(off[-1])
    pad = np.zeros(last - first + 8, dtype=np.uint8)
    if last > first:
        pad[: last - first] = np.frombuffer(bufs[2], dtype=np.uint8)[first:last]
    lo = off[:-1] - first
    length = np.diff(off)
    rows8 = np.lib.stride_tricks.as_strided(pad, shape=(pad.size - 7, 8), strides=(1, 1))
    acc = np.zeros(n, dtype=np.uint64)
    for j in range(int((int(length.max()) + 7) // 8)):
        live = np.flatnonzero(length > 8 * j)
        rest = length[live] - 8 * j
        w = np.ascontiguousarray(rows8[lo[live] + 8 * j]).view("<u8").ravel()
        short = rest < 8
        if short.any():
            w[short] &= (np.uint64(1) << (rest[short].astype(np.uint64) * np.uint64(8))) - 1
        w ^= _mix1(int(key.word(domain)) + (j + 1) * _GOLD)
        with np.errstate(over="ignore"):
            acc[live] += _fmix(w)
    tail = _fmix(length.astype(np.uint64) ^ key.word(domain))
    with np.errstate(over="ignore"):
        acc += tail
    return _hash_words(acc, key, domain)


def _hash_arrow(column: Any, key: IdHashKey) -> np.ndarray:
    """A pyarrow Array or ChunkedArray (no nulls): text and bytes dictionary-encoded by Arrow,
    each distinct value hashed once; other types through numpy."""
    import pyarrow as pa

    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out = [np.zeros(0, dtype=np.uint64)]
    for chunk in chunks:
        t = chunk.type
        if pa.types.is_dictionary(t):
            table = _hash_arrow(chunk.dictionary, key)
            out.append(table[chunk.indices.fill_null(0).to_numpy(zero_copy_only=False)])
        elif pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t, "string"):
            out.append(_hash_text(chunk, key, _STR))
        elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_view(t, "binary"):
            out.append(_hash_text(chunk, key, _BYTES))
        elif pa.types.is_fixed_size_binary(t):
            out.append(_hash_text(chunk.cast(pa.large_binary()), key, _BYTES))
        else:
            out.append(_hash_numpy(chunk.to_numpy(zero_copy_only=False), key))
    return np.concatenate(out)


def _is_view(t: Any, name: str) -> bool:
    import pyarrow as pa

    check = getattr(pa.types, f"is_{name}_view", None)  # pyarrow >= 16
    return bool(check(t)) if check is not None else False


def _hash_text(chunk: Any, key: IdHashKey, domain: int) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(chunk)
    table = _hash_buffers(enc.dictionary.cast(pa.large_binary()), key, domain)
    idx = enc.indices.fill_null(0).to_numpy(zero_copy_only=False)
    taken: np.ndarray = table[idx]
    return taken


def _hash_numpy(arr: np.ndarray, key: IdHashKey) -> np.ndarray:
    kind = arr.dtype.kind
    if kind in "iub":
        wide = arr.astype(np.uint64 if kind == "u" else np.int64, copy=False)
        return _hash_words(wide.view(np.uint64), key, _INT)
    if kind == "f":
        return _hash_floats(arr, key)
    if kind in "mM":
        return _hash_times(arr, key, _TIME if kind == "M" else _DELTA)
    # numpy text ("U"/"S", which pandas never holds) goes by objects: Arrow's conversion of
    # "U" stops at a NUL inside a value
    return _hash_objects(np.asarray(arr, dtype=object), key)


def _hash_times(arr: np.ndarray, key: IdHashKey, domain: int) -> np.ndarray:
    """Datetimes or timedeltas by their nanoseconds; those that nanoseconds cannot hold (as
    for pandas' objects, :func:`_time_rule`) all in the domain of other objects."""
    unit = "datetime64[ns]" if domain == _TIME else "timedelta64[ns]"
    with np.errstate(all="ignore"):
        ns = arr.astype(unit)
        exact = ns.astype(arr.dtype) == arr
    out = _hash_words(ns.view(np.int64).view(np.uint64), key, domain)
    if not exact.all():
        out[~exact] = _hash_words(np.zeros(int((~exact).sum()), np.uint64), key, _OTHER)
    return out


def _hash_objects(arr: np.ndarray, key: IdHashKey) -> np.ndarray:
    """An object array: pandas' hash table per row (Python equality, no new object per row),
    then each distinct value hashed by the module's rule."""
    import pandas as pd

    codes, uniques = pd.factorize(arr, sort=False, use_na_sentinel=True)
    uniq = np.asarray(uniques, dtype=object)
    table = _hash_distinct(uniq, key)
    out: np.ndarray = table[np.maximum(np.asarray(codes), 0)] if table.size else table
    return out


def _hash_distinct(uniq: np.ndarray, key: IdHashKey) -> np.ndarray:
    import pandas as pd
    import pyarrow as pa

    kind = pd.api.types.infer_dtype(uniq, skipna=True) if uniq.size else "empty"
    try:
        if kind == "string":
            return _hash_text(pa.array(uniq, type=pa.large_string()), key, _STR)
        if kind == "bytes":
            return _hash_text(pa.array(uniq, type=pa.large_binary()), key, _BYTES)
    except (pa.ArrowException, UnicodeError):  # e.g. lone surrogates: value by value below
        pass
    return _hash_canonical(uniq, key)


def _int_rule(i: int) -> tuple[int, Any]:
    if -(2**63) <= i < 2**64:
        return _INT, i & _MASK
    try:
        f = float(i)
    except OverflowError:
        return _INT, i & _MASK
    return (_FLOAT, f) if f == i else (_INT, i & _MASK)


def _number_rule(x: Any) -> tuple[int, Any]:
    try:
        i = int(x)
    except (OverflowError, ValueError):  # inf; NaN is missing and never hashed
        i = None
    if i is not None and i == x:
        return _int_rule(i)
    f = float(x)
    if f == x:
        return _FLOAT, f
    try:
        return _STR, ("q:" + str(fractions.Fraction(x))).encode()
    except (ValueError, TypeError, OverflowError):
        return _OTHER, 0


def _canonical(x: Any) -> tuple[int, Any]:
    """The domain and payload of one distinct id (the module's rule)."""
    if isinstance(x, str):
        return _STR, x.encode("utf-8", "surrogatepass")
    if isinstance(x, bytes | bytearray | memoryview):
        return _BYTES, bytes(x)
    if isinstance(x, datetime.datetime | np.datetime64):  # before integers: numpy's
        return _time_rule(x, _TIME)  # timedelta64 is an integer type
    if isinstance(x, datetime.timedelta | np.timedelta64):
        return _time_rule(x, _DELTA)
    if isinstance(x, bool | np.bool_ | numbers.Integral):
        return _int_rule(int(x))
    if isinstance(x, numbers.Real | decimal.Decimal):
        return _number_rule(x)
    if isinstance(x, numbers.Complex):
        return _number_rule(x.real) if x.imag == 0 else (_OTHER, 0)
    return _OTHER, 0


def _time_rule(x: Any, domain: int) -> tuple[int, Any]:
    import pandas as pd

    make: Callable[[Any], Any] = pd.Timestamp if domain == _TIME else pd.Timedelta
    try:
        return domain, int(make(x).as_unit("ns").value) & _MASK
    except (ValueError, OverflowError, pd.errors.OutOfBoundsDatetime):
        return _OTHER, 0


def _hash_canonical(uniq: np.ndarray, key: IdHashKey) -> np.ndarray:
    """Distinct values of mixed types: each classified in Python, then hashed per domain."""
    import pyarrow as pa

    rules = [_canonical(x) for x in uniq]
    out = np.zeros(len(rules), dtype=np.uint64)
    for domain in range(_FINAL):
        at = [i for i, (d, _) in enumerate(rules) if d == domain]
        if not at:
            continue
        payload = [rules[i][1] for i in at]
        if domain in (_STR, _BYTES):
            got = _hash_buffers(pa.array(payload, type=pa.large_binary()), key, domain)
        elif domain == _FLOAT:
            got = _hash_words(np.array(payload, dtype=np.float64).view(np.uint64), key, domain)
        elif domain == _OTHER:
            got = _hash_words(np.zeros(len(at), dtype=np.uint64), key, domain)
        else:
            got = _hash_words(np.array(payload, dtype=np.uint64), key, domain)
        out[np.array(at)] = got
    return out


def hash_ids(column: Any, key: IdHashKey) -> np.ndarray:
    """The keyed 64-bit hash of each id of a column without missing ids (the module's rule).

    Parameters
    ----------
    column : pandas Series, numpy array, pyarrow Array or ChunkedArray
        Person ids, all present (the caller removes missing ones first: their hash is
        arbitrary).
    key : IdHashKey
        The secret key (one per release, shared by every part of the table).

    Returns
    -------
    ndarray of uint64
        One hash per row; equal ids (Python equality, across representations) hash equal.
    """
    pd = _pandas()
    if pd is not None and isinstance(column, pd.Index):
        column = pd.Series(column)
    if pd is not None and isinstance(column, pd.Series):
        return _hash_series(column, key, pd)
    if type(column).__module__.startswith("pyarrow"):
        return _hash_arrow(column, key)
    return _hash_numpy(np.asarray(column), key)


def _hash_series(column: Any, key: IdHashKey, pd: Any) -> np.ndarray:
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        table = hash_ids(pd.Series(dtype.categories), key)
        taken: np.ndarray = table[np.maximum(column.cat.codes.to_numpy(), 0)]
        return taken
    if isinstance(dtype, np.dtype):
        return _hash_numpy(column.to_numpy(), key)
    if isinstance(dtype, pd.StringDtype) or _arrow_text(dtype):
        import pyarrow as pa

        return _hash_arrow(pa.array(column.array), key)
    arr = column.to_numpy()
    return _hash_numpy(arr, key)


def _arrow_text(dtype: Any) -> bool:
    pa_type = getattr(dtype, "pyarrow_dtype", None)
    if pa_type is None:
        return False
    import pyarrow as pa

    return bool(
        pa.types.is_string(pa_type)
        or pa.types.is_large_string(pa_type)
        or pa.types.is_binary(pa_type)
        or pa.types.is_large_binary(pa_type)
        or pa.types.is_dictionary(pa_type)
    )


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - the engines that hash ids bring pandas
        return None
    return pandas
