"""How the file engine tells persons apart in its spill files: two 64-bit words per id.

Guarantee
---------
A spilled row carries its person as two int64 words ``(p, q)``; two rows belong to one person
iff both words are equal (:func:`person_codes`). The id column has one Arrow type, so in one
release every id is read the same way:

* **Integer ids are exact.** A signed id ``x`` is zigzagged to the unsigned 64-bit
  ``(x << 1) ^ (x >> 63)`` (a bijection of int64 onto uint64: ``0, -1, 1, -2, …`` become
  ``0, 1, 2, 3, …``), an unsigned id is its own value; ``p`` holds that uint64's bit pattern
  and ``q = 0``. The map is injective on each integer type, and every file has one id type
  (below), so no two persons ever merge: the bounding is exactly
  the in-memory one and the release's stated loss holds with no δ.
* **Other ids (text) are hashed:** BLAKE2b of the id's text, keyed with a fresh 32-byte key
  drawn from the release's random source (the operating system's by default) the first time
  an id is hashed, truncated to 128 bits: ``p`` and ``q`` are its two little-endian words.
  Two persons whose digests collide are bounded as one person, and then neighbouring inputs
  can differ by up to ``2m`` kept rows (``m`` of the added person's in, ``m`` of the other's
  out), which the stated sensitivity does not cover. Modelling keyed BLAKE2b as a random
  function, the added person collides with one given other person with probability
  ``2**-128``: with ``n`` distinct persons the guarantee is the stated loss **plus**
  ``δ <= (n - 1)·2**-128`` (:data:`treedp.privacy.collision.COLLISION`, the continual
  module's statement), e.g. ``δ <= 2**-88`` for ``2**40`` persons. The key lives in memory
  for one release and is never written; the spill files hold digests, not ids.

Each distinct id of a batch is hashed once (the batch's ids are dictionary-encoded first).
Float ids are hashed as Python compares them: ``-0.0`` as ``0.0`` (the text of each would
split one person across batches).

**One id type per release** (:func:`check_id_types`). Each Parquet file is read in its own
column type, and a dataset scanner casts each file to the first one's, so ids of different
types across files were not matched as one column's: a float64 ``5.0`` (pandas made the column
float for one missing id) and an int64 ``5`` were two persons, an int64 ``7`` and a uint64
``14`` one (both words ``14``), and a scanner's cast fails or rounds by value (an independent
review: both exceeded the stated sensitivity). Every file's id column must have the first
one's type (dictionary encoding and the large text and binary variants aside), checked from
the files' schemas before any value is read.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from treedp._codes import Encoded, factorize
from treedp.engines.files.column_types import file_schemas
from treedp.engines.keys import py_scalar
from treedp.exceptions import DataError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.privacy.collision import DIGEST
from treedp.privacy.contribution import pair_codes

__all__ = ["KEY_BYTES", "PersonWords", "check_id_types", "person_codes", "zigzag"]

#: Bytes of the per-release hash key.
KEY_BYTES = 32


def zigzag(ids: np.ndarray) -> np.ndarray:
    """Integer ids as the bit patterns (int64) of distinct uint64 values: signed ids
    zigzagged, unsigned ids as they are. Injective on each integer dtype."""
    if ids.dtype.kind == "u":
        unsigned: np.ndarray = ids.astype(np.uint64, copy=False).view(np.int64)
        return unsigned
    x = ids.astype(np.int64, copy=False)
    out: np.ndarray = (x << np.int64(1)) ^ (x >> np.int64(63))
    return out


class PersonWords:
    """The ``(p, q)`` words of one release's person ids (see the module docstring).

    Parameters
    ----------
    source : RandomSource
        The release's random source; the hash key is drawn from it when the first non-integer
        id is met (so releases with integer ids draw nothing more from it).
    may_hash : bool, default=True
        Whether the release decided (from the id column's schema type, before the charge) that
        ids may be hashed; if False, a non-integer id is refused (:class:`DataError`), so a
        release recorded without the collision δ never hashes.
    """

    def __init__(self, source: RandomSource, may_hash: bool = True) -> None:
        self._source = source
        self._key: bytes | None = None
        self._may_hash = may_hash

    @property
    def hashed(self) -> bool:
        """Whether ids were hashed (then the guarantee carries the collision δ)."""
        return self._key is not None

    def _hash_key(self) -> bytes:
        if not self._may_hash:
            raise DataError(
                "The person-id column's schema type is an integer type but some file holds "
                "other ids: give every file the same id type."
            )
        if self._key is None:
            self._key = self._source.random_bytes(KEY_BYTES)
        return self._key

    def __call__(self, ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """The words ``(p, q)`` (int64 each) of present ids (an array or
        :class:`treedp._codes.Encoded`: the distinct values are hashed, then taken)."""
        if isinstance(ids, Encoded):
            p, q = self(ids.uniques)
            return p[ids.codes], q[ids.codes]
        if ids.dtype.kind in "iu":
            return zigzag(ids), np.zeros(ids.size, dtype=np.int64)
        if ids.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        inverse, uniq = factorize(ids)  # a hash pass, no sort of the rows; ids here are present
        if uniq.dtype.kind == "f":
            uniq = uniq + uniq.dtype.type(0.0)  # -0.0 is 0.0, as Python compares them
        key = self._hash_key()
        digests = b"".join(
            hashlib.blake2b(str(py_scalar(u)).encode(), key=key, digest_size=DIGEST).digest()
            for u in uniq
        )
        table = np.frombuffer(digests, dtype="<i8").reshape(-1, 2)
        rows = np.asarray(inverse).ravel()
        return table[rows, 0], table[rows, 1]


def _id_type(kind: Any) -> Any:
    """An id column's Arrow type up to how it is stored: dictionary encoding unwrapped, the
    large and view variants of text and binary as the plain ones."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return pa.binary()
    view = {"string_view": pa.string(), "binary_view": pa.binary()}
    return view.get(str(kind), kind)


def check_id_types(dataset: Any, name: str, *, scanned: bool = False) -> None:
    """Refuse a dataset whose files hold the person-id column ``name`` in different types.

    Read from the files' schemas (public, as the id column's type already is: it decides
    whether ids are hashed), before any value is read or budget charged. A file without the
    column (a hive partition column, typed by the partitioning) is not checked; neither is a
    dataset whose fragments have no schema of their own. ``scanned``: the files are read
    through one schema (Arrow IPC, a dataset), whose scanner cannot cast plain numbers to a
    dictionary type or back, so dictionary encoding must agree too (text aside: it casts)."""
    if name not in dataset.schema.names:
        return  # refused by the column check
    import pyarrow as pa

    raw = dataset.schema.field(name).type  # the scanner's type (its encoding) ...
    files = [(w, s) for w, s in file_schemas(dataset) if name in s.names]
    want = _id_type(files[0][1].field(name).type if files else raw)  # ... the first file's own
    for where, schema in files:
        got_raw = schema.field(name).type
        got = _id_type(got_raw)
        recoded = pa.types.is_dictionary(got_raw) != pa.types.is_dictionary(raw)
        shown = f" in '{where}'"
        if got == want and scanned and recoded and not pa.types.is_string(want):
            raise InvalidTypeError(
                f"The person-id column '{name}' is dictionary-encoded in some files and not in "
                f"others (the first file and the one{shown}): these files are read through one "
                "schema. Give every file the same encoding of the id column."
            )
        if got != want:
            raise InvalidTypeError(
                f"The person-id column '{name}' is {got}{shown} but {want} in the first "
                "file: ids of different types cannot be matched as one person's (5.0 and 5, "
                "or -1 and 2**64 - 1). Give every file the same id type."
            )


def person_codes(rows: np.ndarray, hashed: bool) -> np.ndarray:
    """One int64 code per spilled row, equal iff the rows' ``(p, q)`` words are equal.

    Integer ids (``hashed`` False: ``q`` is 0 throughout) are coded by ``p``, as it is. Hashed
    ids: codes of ``p`` (a hash table, linear time, in order of first appearance: as the
    bounding would compute anyway), then a check that each code's rows share one ``q``. Only
    if two persons of the spill file share a first word (probability below ``r²·2**-65`` for
    ``r`` persons whatever their ids: the key is random) are the pairs coded exactly by a
    slower path; its time reveals only that event, whose chance depends on the number of
    persons alone."""
    if not hashed or rows.size == 0:
        return np.ascontiguousarray(rows["p"])
    codes = _first_word_codes(rows["p"])
    q = rows["q"]
    first_q = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    first_q[codes] = q
    step = 1 << 16  # compared in slices: no row-sized temporary at the peak of the pass
    if all(
        np.array_equal(first_q[codes[i : i + step]], q[i : i + step])
        for i in range(0, codes.size, step)
    ):
        return codes
    return _pair_codes(codes, np.ascontiguousarray(q))


def _first_word_codes(p: np.ndarray) -> np.ndarray:
    """Codes of the first words in order of first appearance (pandas' hash table without the
    sort and remap of :func:`treedp._codes.factorize`: one row-sized array fewer)."""
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is installed wherever the tests run
        return factorize(np.ascontiguousarray(p))[0]
    codes, _ = pd.factorize(p, sort=False)
    return np.asarray(codes, dtype=np.int64)


def _pair_codes(code_p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Codes of the ``(code_p, q)`` pairs, equal iff both are (the exact, slower path)."""
    code_q = np.asarray(factorize(q)[0], dtype=np.int64)
    return pair_codes(code_p, code_q, int(code_q.max()) + 1)
