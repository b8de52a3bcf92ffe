"""Contribution bounding over a whole stream: each person keeps at most ``k`` records.

Guarantee
---------
With ``privacy_unit=`` and ``max_contributions=k`` the stream's neighbour relation is one person
added or removed with *all* their records, at any steps, in any bins; the privacy unit is one
person. Before a step's records reach the counter, each person's records are kept in stream
order (earlier steps first; within a step in a random order: records sorted by 64-bit keys
drawn from the stream's randomness, ties kept in row order, so uniform up to a tie's chance,
at most ``C(m, 2)·2**-64`` for ``m`` records of a person; sorted by value, a file used to keep
each person's smallest) until the person has ``k`` kept records over the whole stream; later
records of that person are dropped. The rule is applied per person, and each person's order
is independent of the other records: for the neighbour relation (one person's rows inserted
or deleted, the others' in their order), give the shared rows the same keys and the added
person's fresh ones; then every other person is offered the same records in the same order
and keeps the same ones, and the added person keeps at most ``k``: neighbouring streams differ
by at most ``k`` kept records of one person for each draw of the keys, and the output, a
mixture over the keys with the same weights on both sides, keeps the counters' guarantee
(an independent privacy review, session 25, checked it exactly through the stream's own
selection, ties included).

Sensitivity derivation: the counters are built with ``contributions = k``. A tree level moves
by at most ``k`` in L1 (``k`` records, one node per level each) and ``k²`` in L2² (all in one
node at worst); a factorisation's released vector moves by at most ``k`` columns, so
``||Δy||_2 <= k·max_j ||column j||`` and ``Δ2² <= k²·max_j ||column j||²``.

Hash collisions: a δ
--------------------
Persons are told apart by a keyed hash, so two persons whose digests collide share one
allowance. That never keeps more than ``k`` records under one digest, but it breaks the "only
the added person's records change" step above: if the added person A collides with a person B
already in the stream, A's records can use B's allowance and push B's later records out, so
neighbouring streams differ by up to ``2k`` kept records (``k`` of A's in, ``k`` of B's out)
and the stated loss (computed for ``k``) does not cover that event. The honest statement is
therefore an approximate one. The key is drawn independently of the data, and for every key
under which A collides with no other person the stated loss holds exactly. Modelling keyed
BLAKE2b truncated to 128 bits as a random function, A collides with one given other person
with probability ``2**-128``, so with ``n`` distinct persons in the stream the guarantee is
the stated pure ε (or ρ-zCDP) loss **plus** ``δ <= (n - 1)·2**-128`` (for zCDP: δ-approximate
ρ-zCDP), e.g. ``δ <= 2**-88`` for a trillion (2**40) persons. Equivalently: the stated loss
holds conditioned on the added person colliding with nobody. The spend record's
``parameters["collision_delta_per_person"]`` (``2**-128``) and ``guarantee["collision"]`` say
so. (The chance of *any* collision in the table is at most ``n²/2**129``, by the birthday
bound.) A reader of the key could collide ids on purpose: the key is as secret as the data.

What is stored: no id and no value. The state keeps a random 32-byte key (drawn from the OS
when the stream starts) and, per person seen, the first 16 bytes of the keyed BLAKE2b hash of
the person's id with the number of records kept so far (at most ``k``). The table grows with
the number of distinct persons (one 16-byte hash and one count each). The key and table are as
secret as the data (the key would let a reader test whether an id was seen).
"""

from __future__ import annotations

import csv
import hashlib
import os
import secrets
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treedp._inputs import is_missing
from treedp._validation import must
from treedp.engines.files.paths import resolve_paths
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.privacy.collision import COLLISION, COLLISION_DELTA, DIGEST

__all__ = ["COLLISION", "COLLISION_DELTA", "PersonBound", "canonical_id", "read_ids"]


def canonical_id(value: Any) -> bytes:
    """The bytes an id is hashed from: ``s:<utf-8 text>`` for text and for integers (written in
    decimal, so ``17`` and ``"17"``, as read from a CSV file, are one person), ``b:<bytes>``.

    Anything else (booleans, floats, other objects) is refused with one fixed message that names
    no type or value of the data."""
    if isinstance(value, str):
        return b"s:" + value.encode("utf-8")
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return b"s:" + str(int(value)).encode("ascii")
    if isinstance(value, bytes):
        return b"b:" + value
    raise InvalidTypeError(must("ids", "be text, integers or bytes, one per record."))


def missing_ids_error() -> DataError:
    """The refusal of missing ids under ``nan="error"``: one fixed message, no count or value."""
    return DataError(
        "The 'ids' argument contains missing person ids. Pass nan='drop' to leave those "
        "records out (they are not counted and charged to no person), or clean the ids first."
    )


def _no_id_column(column: str, where: str) -> InvalidParameterError:
    """The stream's person-id column (public, fixed when the stream was created) is missing."""
    return InvalidParameterError(
        must("privacy_unit", f"name a column of {where}: the stream's person ids are read from "
             f"its column {column!r}, set when the stream was created.")
    )  # fmt: skip


def read_ids(path: str | os.PathLike[str], column: str) -> list[Any]:
    """The person ids of a step's file, as read (CSV cells are text, an empty cell is a missing
    id, None; Parquet / Arrow values as stored, null is None). The column name is public; a
    missing column is refused naming it."""
    files, kind = resolve_paths(path)
    out: list[Any] = []
    if kind == "csv":
        for name in files:
            with open(name, newline="", encoding="utf-8") as fh:
                reader = csv.DictReader(fh)
                if reader.fieldnames is None or column not in reader.fieldnames:
                    raise _no_id_column(column, str(name))
                out.extend(row[column] or None for row in reader)
        return out
    from treedp.engines.files.column_types import exact_dataset

    data = exact_dataset(files, "parquet" if kind == "parquet" else "ipc", [column])
    if column not in data.schema.names:
        raise _no_id_column(column, "the step's file")
    return list(data.to_table(columns=[column]).column(column).to_pylist())


@dataclass
class PersonBound:
    """Per-person record counts over the stream, by keyed hash (see the module docstring)."""

    max_contributions: int
    key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    kept: dict[bytes, int] = field(default_factory=dict)

    def _digest(self, value: Any) -> bytes:
        return hashlib.blake2b(canonical_id(value), key=self.key, digest_size=DIGEST).digest()

    def check(self, ids: Any, n_records: int, nan: str = "error") -> tuple[np.ndarray, np.ndarray]:
        """The ids as a 1-D object array, one per record, and which records have an id (bool).

        Missing ids (see :func:`is_missing`) follow the stream's missing-value policy: under
        ``nan="drop"`` their records are left out (not counted, charged to no person); under
        ``nan="error"`` the step is refused with one fixed message. Other kinds are refused
        (:func:`canonical_id`). Nothing changes on a refusal."""
        arr = np.asarray(ids, dtype=object)
        if arr.ndim != 1 or arr.size != n_records:
            raise InvalidParameterError(
                must("ids", "hold one person id per record of the step (a 1-D array).")
            )
        present = np.fromiter((not is_missing(v) for v in arr), dtype=bool, count=arr.size)
        if nan != "drop" and not present.all():
            raise missing_ids_error()
        for value in arr[present]:
            canonical_id(value)  # refuses other kinds with a fixed message
        return arr, present

    def keep(self, ids: np.ndarray) -> tuple[np.ndarray, dict[bytes, int]]:
        """Which records are kept (bool, in order), and the updated table (not applied here:
        the stream applies it only once the step cannot fail)."""
        keep = np.zeros(ids.size, dtype=bool)
        table = dict(self.kept)
        k = self.max_contributions
        for i, value in enumerate(ids):
            h = self._digest(value)
            n = table.get(h, 0)
            if n < k:
                keep[i] = True
                table[h] = n + 1
        return keep, table

    # ----------------------------------------------------------------- state file
    def to_arrays(self) -> dict[str, np.ndarray]:
        """The table as int64 arrays: hashes as two int64 words each, and the counts."""
        hashes = np.frombuffer(b"".join(self.kept), dtype="<i8").reshape(-1, 2)
        counts = np.fromiter(self.kept.values(), dtype=np.int64, count=len(self.kept))
        return {"person_hash": hashes.astype(np.int64), "person_count": counts}

    @classmethod
    def from_state(
        cls, max_contributions: int, key_hex: str, arrays: dict[str, Any]
    ) -> PersonBound:
        """The table :meth:`to_arrays` wrote (with the key kept in the payload)."""
        hashes = np.ascontiguousarray(arrays["person_hash"], dtype="<i8").reshape(-1, 2)
        counts = np.asarray(arrays["person_count"], dtype=np.int64)
        if (
            hashes.shape[0] != counts.size
            or np.any(counts < 1)
            or np.any(counts > max_contributions)
        ):
            raise ValueError("person table")
        raw = hashes.tobytes()
        kept = {raw[i * DIGEST : (i + 1) * DIGEST]: int(c) for i, c in enumerate(counts)}
        return cls(max_contributions, bytes.fromhex(key_hex), kept)
