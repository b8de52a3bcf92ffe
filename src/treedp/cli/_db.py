"""``--db URL --sql QUERY``: a database as the input of a command, counted inside it.

``treedp release --db duckdb:///people.duckdb --sql "SELECT income, state FROM people"
--column income ...``: the connection is opened (read-only where the database allows it) and
the query becomes a :class:`treedp.SqlSource`; everything else is the command's own. URLs:

* ``duckdb:///file.duckdb`` (DuckDB, opened read-only; ``duckdb:////abs/path.duckdb`` for an
  absolute path, as SQLAlchemy writes it),
* ``sqlite:///file.db`` (``sqlite3``, opened read-only; ``sqlite:////abs/path.db``),
* ``postgresql://user:password@host:port/dbname`` (psycopg 3; ``postgres://`` too; the
  password may instead come from ``PGPASSWORD`` or ``~/.pgpass``).

A password in the URL is never printed: messages show the URL with ``***`` in its place, and
a failed connection is reported by the exception's class only (a driver's message may echo
the connection string). The connection is closed when the command's arguments go away.
"""

from __future__ import annotations

import argparse
import urllib.parse
import weakref
from typing import Any

import treedp
from treedp.cli._common import UsageError

__all__ = ["add_db_options", "convert_keys", "db_data", "db_label", "redact"]

_SCHEMES = ("duckdb", "sqlite", "postgresql", "postgres")
_OPENED = "_treedp_db_source"


def add_db_options(parser: Any, columns: str = "--column and the other column options") -> None:
    """``--db URL`` and ``--sql QUERY``; the positional input becomes optional (one of the
    two is required, checked when the command runs). ``columns``: the options that name the
    query's columns, for ``--sql``'s help."""
    for action in parser._actions:
        if action.dest == "input" and action.option_strings == []:
            action.nargs = "*" if action.nargs == "+" else "?"
            action.required = False
    group = parser.add_argument_group("database input (instead of files)")
    group.add_argument(
        "--db",
        metavar="URL",
        help="count inside a database: duckdb:///file.duckdb, sqlite:///file.db or "
        "postgresql://user@host:port/dbname (a password may be in the URL or PGPASSWORD; it "
        "is never printed); only bin counts come back",
    )
    group.add_argument(
        "--sql", metavar="QUERY", help=f"with --db: the SELECT of the rows (its columns are "
        f"named by {columns})",
    )  # fmt: skip


def redact(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
        if parts.password is None:
            return url
        host = parts.hostname or ""
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        user = urllib.parse.quote(parts.username or "", safe="")
        return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))
    except ValueError:
        return "<a database URL>"


def db_label(args: argparse.Namespace) -> str:
    """The ``--db`` URL as it may be shown (password hidden)."""
    return redact(str(args.db))


def _check(args: argparse.Namespace) -> bool:
    """Whether ``--db`` is given; the input options checked to go together."""
    db, sql = getattr(args, "db", None), getattr(args, "sql", None)
    files = getattr(args, "input", None)
    if db is None:
        if sql is not None:
            raise UsageError("--sql is the query of --db URL: give --db, or drop --sql")
        if not files:
            raise UsageError("give the input file(s), or --db URL --sql QUERY")
        return False
    if files:
        raise UsageError("give input files or --db URL, not both")
    if sql is None:
        raise UsageError("--db needs --sql QUERY (the SELECT of the rows)")
    return True


def _connect(url: str) -> Any:
    scheme = url.split(":", 1)[0].lower()
    if scheme not in _SCHEMES or "://" not in url:
        raise UsageError(
            f"--db: {redact(url)!r} is not a database URL: use duckdb:///PATH, sqlite:///PATH "
            "or postgresql://USER@HOST:PORT/DBNAME"
        )
    path = url.split("://", 1)[1]
    path = path[1:] if path.startswith("/") else path  # ///rel.db, ////abs/path.db
    try:
        if scheme == "duckdb":
            import duckdb

            return duckdb.connect(path, read_only=True)
        if scheme == "sqlite":
            import sqlite3

            target = "file:" + urllib.parse.quote(path) + "?mode=ro"
            return sqlite3.connect(target, uri=True, check_same_thread=False)
        import psycopg

        return psycopg.connect(url, autocommit=True)
    except ImportError:
        raise UsageError(
            f"--db {scheme}: its driver is not installed (pip install treedp[sql])"
        ) from None
    except Exception as exc:  # the driver's message may quote the URL: its class only
        raise treedp.InvalidParameterError(
            f"Could not connect to {redact(url)} ({type(exc).__name__}): check the URL, the "
            "server and the credentials."
        ) from None


def db_data(args: argparse.Namespace, column: str | None = None) -> Any:
    """The :class:`treedp.SqlSource` of ``--db``/``--sql`` (None without ``--db``), opened
    once per command; with ``column``, a one-column query of it (for the commands that hold
    one column)."""
    if not _check(args):
        return None
    source = getattr(args, _OPENED, None)
    if source is None:
        con = _connect(str(args.db))
        weakref.finalize(args, con.close)
        source = treedp.SqlSource(con, args.sql)
        setattr(args, _OPENED, source)
    if column is None:
        return source
    name = '"' + str(column).replace('"', '""') + '"'
    return treedp.SqlSource(source.connection, f"SELECT {name} FROM ({source.sql}) AS q")


def convert_keys(keys: Any, data: Any, by: Any) -> Any:
    """:func:`treedp.convert_keys`: keys read as text become values of their ``by`` columns'
    types, from a file's schema or a database query's description (number columns in DuckDB
    and PostgreSQL refused text keys by type; a docs check, session 27)."""
    return treedp.convert_keys(keys, data, by)
