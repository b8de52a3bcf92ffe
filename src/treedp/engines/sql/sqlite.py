"""The SQLite engine: a :class:`SqlSource` on a ``sqlite3`` connection.

SQLite types values, not columns, so the query cannot say a column's type before it runs:
each value's ``typeof`` is checked in the counting query itself (a text or blob value is
one clear error, after the query ran and before anything is charged). Integers are
converted with ``CAST(v AS REAL)`` (nearest double, as the local engine); SQLite stores no
NaN (it becomes NULL, a missing value). Public numbers are bound parameters; the bins are
found by Python's ``bisect`` over the edges, a function registered on the connection for the
one query (:mod:`treedp.engines.sql.callback`; SQLite has no arrays), any number of bins.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from treedp.engines.entry import Engine
from treedp.engines.sql.rule import Dialect, Sql, hex_literal
from treedp.engines.sql.source import SqlSource, connection_kind
from treedp.engines.sql.table import engine_row
from treedp.exceptions import InvalidParameterError, InvalidTypeError

__all__ = ["DIALECT", "ENGINE"]


def _literal(v: Any) -> tuple[str, list[Any]]:
    if isinstance(v, bool):
        v = int(v)
    if not isinstance(v, int | float | str):
        raise InvalidTypeError(
            f"The sqlite engine compares keys that are numbers or strings. Got {type(v).__name__}."
        )
    return "?", [v]


#: Every statement on a SQLite connection, one at a time (re-entrant: a query runs inside its
#: session). Python's sqlite3 calls some of SQLite's API while holding the GIL
#: (``create_function``, and ``execute``'s checks of the connection's state), and those wait
#: for the connection's mutex; a running query holds that mutex while its registered Python
#: functions (the bin rule, the keyed hash) wait for the GIL. Two threads sharing a connection
#: (``treedp.profile`` reads columns in threads) then deadlock: a profile of a SQLite table hung
#: in the test suite with one thread reading the schema while another counted. Waiting on this
#: lock releases the GIL.
_SESSION_LOCK = threading.RLock()


@contextmanager
def _threads_named() -> Iterator[None]:
    """A connection used from another thread than its own is refused by sqlite3 itself:
    named in treedp's terms (``treedp.profile`` reads each column on a thread of its own)."""
    import sqlite3

    try:
        yield
    except sqlite3.ProgrammingError as exc:
        if "thread" not in str(exc):
            raise
        raise InvalidParameterError(
            "treedp reads this SQLite connection from a thread other than the one that opened "
            "it (treedp.profile reads each column on its own thread): open it with "
            "sqlite3.connect(..., check_same_thread=False)."
        ) from None


def _columns(data: Any) -> list[tuple[str, str | None]]:
    with _SESSION_LOCK, _threads_named():
        cur = data.connection.execute(f"SELECT * FROM ({data.sql}\n) LIMIT 0")
        try:
            return [(str(d[0]), "any") for d in cur.description]
        finally:
            cur.close()


def _run(data: Any, text: str, params: list[Any]) -> list[tuple[Any, ...]]:
    with _SESSION_LOCK, _threads_named():
        cur = data.connection.execute(text, params)
        try:
            return list(cur.fetchall())
        finally:
            cur.close()


def _errors() -> tuple[type[BaseException], ...]:
    import sqlite3

    return (sqlite3.Error, OverflowError)


_HASH = "treedp_keyed_hash"


def _blake2b(key: str, *values: Any) -> int:
    """Keyed BLAKE2b of the values' reprs: a 63-bit int (SQLite's integers are signed)."""
    digest = hashlib.blake2b(repr(values).encode(), key=bytes.fromhex(key), digest_size=8)
    return int.from_bytes(digest.digest(), "big") >> 1


def _keyed_hash(sql: Sql, key: str, columns: Sequence[str]) -> str:
    """The keyed BLAKE2b, registered for the query under this thread's name (a connection may
    serve several threads: one thread's query never unregisters another's function)."""
    name = f"{_HASH}_{threading.get_ident()}"
    sql.functions[name] = _blake2b
    return f"{name}({hex_literal(key)}, {', '.join(columns)})"


@contextmanager
def _session(data: Any, functions: Mapping[str, Callable[..., Any]]) -> Iterator[None]:
    """The query's functions (keyed hash, bins) registered on the connection for that query,
    then removed; one such query at a time (:data:`_SESSION_LOCK`)."""
    con = data.connection
    with _SESSION_LOCK, _threads_named():
        for name, fn in functions.items():
            con.create_function(name, -1, fn, deterministic=True)
        try:
            yield
        finally:
            for name in functions:
                con.create_function(name, -1, None)


DIALECT = Dialect(
    name="sqlite",
    double="REAL",
    literal=_literal,
    missing=lambda x: f"{x} IS NULL",
    rule=lambda bins: "bisect",
    source=lambda data: f"({data.sql}\n)",  # a trailing -- comment ends
    run=_run,
    columns=_columns,
    errors=_errors,
    cast=lambda c: f"CASE WHEN typeof({c}) IN ('integer', 'real') THEN CAST({c} AS REAL) END",
    number_guard=lambda c: f"CASE WHEN typeof({c}) IN ('text', 'blob') THEN 0 ELSE 1 END",
    max_params=32000,
    keyed_hash=_keyed_hash,
    session=_session,
)


def _accepts(data: Any) -> bool:
    return isinstance(data, SqlSource) and connection_kind(data.connection) == "sqlite"


ENGINE: Engine = engine_row(DIALECT, _accepts)
