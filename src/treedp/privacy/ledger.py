"""The accountant kept in a file: an SQLite ledger per dataset, shared safely by processes.

A :class:`Ledger` is an :class:`~treedp.privacy.accountant.Accountant` whose state lives in an
SQLite file (the standard library's :mod:`sqlite3`); one file may hold several datasets, each
with its own total. Guarantees:

* **Fail closed.** A charge is committed to the file (``BEGIN IMMEDIATE … COMMIT``, with
  ``PRAGMA synchronous=FULL`` so SQLite fsyncs the journal and the database before ``COMMIT``
  returns) before :meth:`~Accountant.charge` returns, and spending functions draw their noise
  only after it returned. A crash after the charge loses that budget; it never releases
  anything that was not charged.
* **No overspending together.** ``BEGIN IMMEDIATE`` takes the database's write lock before the
  ledger is read, so the read – check – write of a charge is serialised across processes and
  threads: two processes racing for the last budget cannot both get it.
* **Crash consistency.** SQLite's rollback journal makes each transaction atomic: after a
  ``kill -9`` (or a power loss) at any point, the next open rolls back a half-written
  transaction, and the ledger holds exactly the committed charges.
* **Tamper evidence.** Each charge row carries a SHA-256 chain hash over the previous hash and
  the row's content, starting from a hash of the dataset's definition (name, total,
  neighbours); the dataset row stores the number of charges and the chain head. Opening or
  charging re-verifies the whole chain and recomputes the spent budget from the rows (exactly);
  a file that is not a treedp ledger, from an unknown format version, or whose rows, totals
  or chain do not match raises :class:`~treedp.exceptions.LedgerError` without changing the
  file. (The chain detects inconsistent edits and corruption; it is not a defence against
  someone who can rewrite the file and recompute it.)
* **What was released.** Every row records the mechanism, the measure, the neighbour
  relation, the privacy unit, the release's public parameters (JSON) and the time (UTC); the
  parameters' ``"release"`` entry says what it was spent on (column, input as given, public
  bounds, the caller's note: :mod:`treedp.subject`).
* **One privacy unit.** A dataset's privacy unit is the unit of its first charge (a
  chain-hashed row, so it holds across opens and processes and needs no format change; files
  written before it was checked open unchanged). :func:`init_ledger` with ``privacy_unit=``
  fixes it when the dataset is made: charge 1 is then a declaration (mechanism
  :data:`DECLARATION`, a zero spend in that unit, written in the same transaction as the
  total), which the first-charge rule reads like any charge. Inside the write transaction,
  after the rows are re-read, a charge of another unit is refused
  (:meth:`~treedp.privacy.accountant.Accountant.check` refuses it before any data is read);
  ``privacy_unit=`` at open must agree with the charges and binds that ledger object until the
  first charge. A dataset whose charges already mix units (written before the check) opens
  and shows its history, but takes no further charge.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError, LedgerError
from treedp.privacy.accountant import (
    Accountant,
    Charge,
    _check_neighbours,
    _fits,
    _now,
    check_total,
)
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP
from treedp.privacy.spend import SpendRecord, unit_label

__all__ = [
    "DECLARATION",
    "FORMAT_VERSION",
    "MAGIC",
    "Ledger",
    "init_ledger",
    "list_datasets",
    "open_ledger",
]

#: Marks an SQLite file as a treedp ledger (table ``treedp_meta``, key ``magic``).
MAGIC = "treedp-ledger"
#: The schema version written; other versions are refused.
FORMAT_VERSION = "1"
_BUSY_TIMEOUT_S = 60.0
#: The mechanism of the zero-spend row by which :func:`init_ledger` fixes a privacy unit.
DECLARATION = "privacy_unit_declared"

_SCHEMA = (
    "CREATE TABLE treedp_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE datasets (name TEXT PRIMARY KEY, total TEXT NOT NULL, "
    "neighbours TEXT NOT NULL, created TEXT NOT NULL, n_charges INTEGER NOT NULL, "
    "head TEXT NOT NULL)",
    "CREATE TABLE charges (dataset TEXT NOT NULL, seq INTEGER NOT NULL, time TEXT NOT NULL, "
    "mechanism TEXT NOT NULL, measure TEXT NOT NULL, neighbours TEXT NOT NULL, "
    "unit TEXT NOT NULL, parameters TEXT NOT NULL, grp TEXT, hash TEXT NOT NULL, "
    "PRIMARY KEY (dataset, seq))",
)
_KINDS: dict[str, type[Measure]] = {"pure": PureDP, "zcdp": ZCDP, "approx": ApproxDP}


def _measure_json(m: Measure) -> str:
    kind = next(k for k, cls in _KINDS.items() if isinstance(m, cls))
    return json.dumps({"kind": kind, **vars(m)}, sort_keys=True)


def _measure_from_json(text: str) -> Measure:
    data = json.loads(text)
    cls = _KINDS.get(data.pop("kind", None))
    if cls is None:
        raise ValueError("unknown measure kind")
    measure: Measure = cls(**data)
    return measure


def _plain(value: Any) -> Any:
    """A JSON-able stand-in for a public parameter value."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Fraction | datetime | date | np.datetime64 | np.timedelta64):
        return str(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return repr(value)


def _parameters_json(parameters: Any) -> str:
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return repr(v)
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(dict(parameters)), sort_keys=True, default=_plain)


def _chain(previous: str, content: list[Any]) -> str:
    payload = json.dumps([previous, *content], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _genesis(name: str, total: str, neighbours: str, created: str) -> str:
    return _chain("", [MAGIC, name, total, neighbours, created])


def _zero(total: Measure) -> Measure:
    """A spend of nothing, in the total's measure."""
    if isinstance(total, ZCDP):
        return ZCDP(0.0)
    return ApproxDP(0.0, 0.0) if isinstance(total, ApproxDP) else PureDP(0.0)


def _declare(conn: sqlite3.Connection, definition: tuple[str, str, str, str], unit: str) -> None:
    """Write charge 1 of a new dataset: the :data:`DECLARATION` of its privacy unit ``unit``
    (a label), a zero spend, chained to the dataset's genesis (in the caller's transaction)."""
    name, total, neighbours, created = definition
    zero = _measure_json(_zero(_measure_from_json(total)))
    content = [1, created, DECLARATION, zero, neighbours, unit, _parameters_json({}), None]
    digest = _chain(_genesis(*definition), content)
    conn.execute(
        "INSERT INTO charges (dataset, seq, time, mechanism, measure, neighbours, unit, "
        "parameters, grp, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (name, *content, digest),
    )
    conn.execute("UPDATE datasets SET n_charges = 1, head = ? WHERE name = ?", (digest, name))


# -- the file ----------------------------------------------------------------------------------


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    if not create and not path.is_file():
        raise LedgerError(
            f"There is no ledger file at {str(path)!r}. Create one with treedp.init_ledger "
            "(or open_ledger with a total)."
        )
    uri = f"file:{urllib.parse.quote(str(path.resolve()))}?mode={'rwc' if create else 'rw'}"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as exc:
        raise LedgerError(f"Cannot open {str(path)!r} as a treedp ledger: {exc}.") from None
    return conn


@contextmanager
def _transaction(conn: sqlite3.Connection, path: Path, *, write: bool) -> Iterator[None]:
    """One transaction: ``BEGIN IMMEDIATE`` (the write lock first) or a read snapshot."""
    try:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    except sqlite3.DatabaseError as exc:
        raise LedgerError(f"{str(path)!r} is not a treedp ledger ({exc}).") from None
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as exc:  # nothing was committed: the charge did not happen
        conn.execute("ROLLBACK")
        raise LedgerError(f"Could not commit to the ledger {str(path)!r}: {exc}.") from None


def _check_format(conn: sqlite3.Connection, path: Path) -> bool:
    """True for a treedp ledger of this version, False for an empty database; else LedgerError."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return False
        if "treedp_meta" not in tables:
            raise LedgerError(
                f"{str(path)!r} is an SQLite database but not a treedp ledger (no treedp_meta "
                "table). It was not changed."
            )
        meta = dict(conn.execute("SELECT key, value FROM treedp_meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"{str(path)!r} is not a treedp ledger ({exc}). It was not changed."
        ) from None
    if meta.get("magic") != MAGIC:
        raise LedgerError(f"{str(path)!r} is not a treedp ledger (wrong magic marker).")
    if meta.get("version") != FORMAT_VERSION:
        raise LedgerError(
            f"{str(path)!r} is a treedp ledger of format version {meta.get('version')!r}; this "
            f"treedp reads version {FORMAT_VERSION!r} only."
        )
    if not {"datasets", "charges"} <= tables:
        raise LedgerError(f"{str(path)!r} is an inconsistent treedp ledger (tables missing).")
    return True


def _connect_existing(path: Path) -> sqlite3.Connection:
    """A connection to the existing ledger file at ``path`` (its format checked)."""
    conn = _connect(path, create=False)
    try:
        with _transaction(conn, path, write=False):
            if not _check_format(conn, path):
                raise LedgerError(  # an interrupted init leaves one: init again
                    f"{str(path)!r} is an empty database, not a treedp ledger. Create one "
                    "with treedp.init_ledger (or open_ledger with a total)."
                )
    except BaseException:
        conn.close()
        raise
    return conn


class _DatasetExistsError(LedgerError):
    """The dataset already has a total (``init_ledger`` sets it once)."""


def _check_name(dataset: Any) -> str:
    if not isinstance(dataset, str):
        raise InvalidTypeError(must("dataset", f"be a str. Got {dataset!r}."))
    if not dataset or len(dataset) > 200 or not dataset.isprintable():
        raise InvalidParameterError(
            must(
                "dataset",
                f"be a non-empty printable name of at most 200 characters. Got {dataset!r}.",
            )
        )
    return dataset


def _check_path(path: Any) -> Path:
    if not isinstance(path, str | os.PathLike):
        raise InvalidTypeError(f"The ledger 'path' must be a str or a path. Got {path!r}.")
    return Path(path)


class Ledger(Accountant):
    """An :class:`Accountant` kept in an SQLite file (see the module docstring).

    Do not construct directly: use :func:`open_ledger` (an existing dataset, or created with a
    total) or :func:`init_ledger` (a new dataset). A ledger object holds one SQLite connection
    and is used from the thread that opened it; other threads and processes open their own
    (they share the file safely).

    Attributes
    ----------
    path : pathlib.Path
        The ledger file.
    created : str
        When the dataset's budget was set (ISO 8601, UTC).
    DECLARATION : str
        The mechanism of the zero-spend charge 1 by which :func:`init_ledger` fixes a privacy
        unit (:data:`DECLARATION`).
    """

    DECLARATION: ClassVar[str] = DECLARATION

    def __init__(
        self,
        path: Path,
        dataset: str,
        conn: sqlite3.Connection,
        privacy_unit: str | None = None,
    ) -> None:
        self.path = path
        self._conn = conn
        try:
            self._open(dataset, privacy_unit)
        except BaseException:
            conn.close()
            raise

    def _open(self, dataset: str, privacy_unit: str | None) -> None:
        where = f"The ledger {str(self.path)!r}"
        with _transaction(self._conn, self.path, write=False):
            row = self._conn.execute(
                "SELECT total, neighbours, created FROM datasets WHERE name = ?", (dataset,)
            ).fetchone()
        if row is None:
            raise LedgerError(
                f"{where} has no dataset {dataset!r}. Set its budget first "
                "(treedp.init_ledger or 'treedp budget init')."
            )
        total_text, neighbours, self.created = row
        try:
            total = check_total(_measure_from_json(total_text))
        except (ValueError, KeyError, TypeError) as exc:
            raise LedgerError(f"{where} holds an invalid total for {dataset!r} ({exc}).") from None
        if neighbours not in ("add_remove", "replace"):
            raise LedgerError(f"{where} holds an invalid neighbour relation for {dataset!r}.")
        super().__init__(total, dataset=dataset, neighbours=neighbours, privacy_unit=privacy_unit)
        self._refresh()
        charged = list(self._units)
        if self._declared is not None and charged and charged != [self._declared]:
            raise LedgerError(
                f"{where} holds dataset {dataset!r} charged in the privacy unit(s) "
                f"{', '.join(map(repr, charged))}, not {self._declared!r}: a total holds for "
                "one privacy unit. Keep one ledger dataset per privacy unit."
            )

    def _load(self) -> None:
        """Read every charge of the dataset, verify the chain, rebuild the exact state (inside a
        transaction)."""
        bad = f"The ledger {str(self.path)!r} was edited inconsistently"
        if not _check_format(self._conn, self.path):
            raise LedgerError(f"{bad}: its tables disappeared.")
        row = self._conn.execute(
            "SELECT total, neighbours, created, n_charges, head FROM datasets WHERE name = ?",
            (self._dataset,),
        ).fetchone()
        if row is None:
            raise LedgerError(f"{bad}: the dataset {self._dataset!r} disappeared.")
        total_text, neighbours, created, n_charges, head = row
        if total_text != _measure_json(self._total) or neighbours != self._neighbours:
            raise LedgerError(f"{bad}: the total of {self._dataset!r} changed.")
        rows = self._conn.execute(
            "SELECT seq, time, mechanism, measure, neighbours, unit, parameters, grp, hash "
            "FROM charges WHERE dataset = ? ORDER BY seq",
            (self._dataset,),
        ).fetchall()
        self._reset()
        previous = _genesis(self._dataset, total_text, neighbours, created)
        for expected, (*content, digest) in enumerate(rows, start=1):
            seq, time, mech, measure, nb, unit, params, grp = content
            if seq != expected:
                raise LedgerError(f"{bad}: charge {expected} of {self._dataset!r} is missing.")
            previous = _chain(previous, content)
            if previous != digest:
                raise LedgerError(
                    f"{bad}: charge {seq} of {self._dataset!r} does not match its checksum."
                )
            try:
                m = _measure_from_json(measure)
                record = SpendRecord(mech, m, nb, unit, json.loads(params))
                cost = m if grp is not None else self.cost(record)
            except (ValueError, TypeError, KeyError) as exc:
                raise LedgerError(f"{bad}: charge {seq} cannot be read ({exc}).") from None
            self._accept(Charge(seq, time, record, cost, grp))
        if n_charges != len(rows) or head != previous:
            raise LedgerError(
                f"{bad}: the stored number of charges or chain head of {self._dataset!r} does "
                "not match its rows."
            )
        if not _fits(self._total, self._sums):
            raise LedgerError(f"{bad}: the charges of {self._dataset!r} exceed its total.")
        self._head = head

    def _refresh(self) -> None:
        with _transaction(self._conn, self.path, write=False):
            self._load()

    def _charge(self, record: SpendRecord, cost: Measure, group: str | None) -> Charge:
        with _transaction(self._conn, self.path, write=True):
            self._load()  # the state every other process committed, verified
            self._check_unit(record)  # its unit, from the rows just read
            sums = self._sums
            if group is None and not _fits(self._total, sums.plus(cost)):
                raise self._refusal(record, cost, sums)
            seq = len(self._history) + 1
            time = _now()
            content = [
                seq,
                time,
                record.mechanism,
                _measure_json(record.measure),
                record.neighbours,
                record.unit,
                _parameters_json(record.parameters),
                group,
            ]
            digest = _chain(self._head, content)
            self._conn.execute(
                "INSERT INTO charges (dataset, seq, time, mechanism, measure, neighbours, unit, "
                "parameters, grp, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (self._dataset, *content, digest),
            )
            self._conn.execute(
                "UPDATE datasets SET n_charges = ?, head = ? WHERE name = ?",
                (seq, digest, self._dataset),
            )
        charge = Charge(seq, time, record, cost, group)
        self._accept(charge)
        return charge

    def close(self) -> None:
        """Close the file (the ledger object cannot be used afterwards)."""
        self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@accepts_aliases
def init_ledger(
    path: str | os.PathLike[str],
    dataset: str,
    total: Measure,
    *,
    neighbours: str = "add_remove",
    privacy_unit: str | None = None,
) -> Ledger:
    """Set the total budget of a new ``dataset`` in the ledger at ``path`` and open it.

    The file is created if it does not exist; an existing file must be a treedp ledger (a
    foreign file is refused and left unchanged). A dataset's total is set once.

    Parameters
    ----------
    path : str or path
        The ledger file.
    dataset : str
        The dataset's name.
    total : PureDP, ZCDP or ApproxDP
        Its total budget (see :func:`~treedp.privacy.accountant.check_total`).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation the total is stated for.
    privacy_unit : str, optional
        The privacy unit of the total (``"record"`` or the person-id column), as
        :class:`~treedp.privacy.accountant.Accountant` takes it: fixed in the file now, by a
        zero-spend charge 1 (:data:`DECLARATION`), so every later open, in any process, refuses
        a charge of another unit. If None, the dataset's first charge fixes it (see the module
        docstring).

    Raises
    ------
    LedgerError
        If the file is not a treedp ledger or already has ``dataset``.
    """
    where = _check_path(path)
    name = _check_name(dataset)
    total = check_total(total)
    _check_neighbours(neighbours)
    unit = None if privacy_unit is None else unit_label(privacy_unit)  # before the file
    conn = _connect(where, create=True)
    try:
        with _transaction(conn, where, write=True):
            if not _check_format(conn, where):
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.executemany(
                    "INSERT INTO treedp_meta (key, value) VALUES (?, ?)",
                    [("magic", MAGIC), ("version", FORMAT_VERSION)],
                )
            if conn.execute("SELECT 1 FROM datasets WHERE name = ?", (name,)).fetchone():
                raise _DatasetExistsError(
                    f"The ledger {str(where)!r} already has a budget for dataset {name!r}; a "
                    "total is set once."
                )
            definition = (name, _measure_json(total), neighbours, _now())
            conn.execute(
                "INSERT INTO datasets (name, total, neighbours, created, n_charges, head) "
                "VALUES (?, ?, ?, ?, 0, ?)",
                (*definition, _genesis(*definition)),
            )
            if unit is not None:
                _declare(conn, definition, unit)
    except BaseException:
        conn.close()
        raise
    return Ledger(where, name, conn, privacy_unit)


@accepts_aliases
def open_ledger(
    path: str | os.PathLike[str],
    dataset: str,
    *,
    total: Measure | None = None,
    neighbours: str = "add_remove",
    privacy_unit: str | None = None,
) -> Ledger:
    """Open the budget of ``dataset`` kept in the ledger at ``path``.

    Parameters
    ----------
    path : str or path
        The ledger file.
    dataset : str
        The dataset's name.
    total : PureDP, ZCDP or ApproxDP, optional
        If given and the dataset has no budget yet, it is created with this total (as
        :func:`init_ledger`); if the dataset exists, its total and ``neighbours`` must equal
        these. If None, the dataset must exist.
    neighbours : {"add_remove", "replace"}, default="add_remove"
        With ``total``: the neighbour relation of the total.
    privacy_unit : str, optional
        The privacy unit of the total (``"record"`` or the person-id column): the dataset's
        charges must be in it, and this ledger object refuses other units. If None, the unit
        of the dataset's first charge (see the module docstring).

    Raises
    ------
    LedgerError
        If the file is missing (and no ``total`` was given), is not a treedp ledger, was
        edited inconsistently, lacks the dataset, or holds a different total or privacy unit.
    """
    where = _check_path(path)
    name = _check_name(dataset)
    if total is not None:
        try:
            return init_ledger(
                where, name, check_total(total), neighbours=neighbours, privacy_unit=privacy_unit
            )
        except _DatasetExistsError:
            pass  # opened below, and its total compared
    ledger = Ledger(where, name, _connect_existing(where), privacy_unit)
    if total is not None and (ledger.total != total or ledger.neighbours != neighbours):
        ledger.close()
        raise LedgerError(
            f"The ledger {str(where)!r} holds dataset {name!r} with total {ledger.total!r} "
            f"({ledger.neighbours}), not {total!r} ({neighbours})."
        )
    return ledger


def list_datasets(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The names of the datasets in the ledger at ``path``."""
    conn = _connect_existing(_check_path(path))
    try:
        return tuple(r[0] for r in conn.execute("SELECT name FROM datasets ORDER BY name"))
    finally:
        conn.close()
