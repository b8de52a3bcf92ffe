"""A database query as a release's input: :class:`SqlSource` (a connection and one SELECT)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treedp.engines.sql.rule import strip_query

__all__ = ["SqlSource", "connection_kind", "sql_arguments", "sql_input"]

#: The top-level package of a connection's type -> the engine that counts its queries.
_KINDS = {"duckdb": "duckdb", "_duckdb": "duckdb", "sqlite3": "sqlite", "psycopg": "postgresql"}


@dataclass(frozen=True)
class SqlSource:
    """A query on an open database connection, counted inside the database.

    ``release_cdf(treedp.SqlSource(con, "SELECT income, state FROM people"),
    column="income", ...)``: the query is wrapped as a subquery (never concatenated with a
    value), the bin rule runs in the database and only bin counts come back.

    Parameters
    ----------
    connection : duckdb.DuckDBPyConnection, sqlite3.Connection or psycopg.Connection
        An open connection; treedp only reads through it and never closes it.
    sql : str
        One SELECT (a trailing ``;`` is dropped). Its column names are what ``column``,
        ``by`` and ``privacy_unit`` name.

    Raises
    ------
    InvalidTypeError
        If ``sql`` is not a str or ``connection`` is not one of the three.
    InvalidParameterError
        If ``sql`` is empty.
    """

    connection: Any
    sql: str

    def __post_init__(self) -> None:
        from treedp.exceptions import InvalidTypeError

        object.__setattr__(self, "sql", strip_query(self.sql))
        if connection_kind(self.connection) is None:
            raise InvalidTypeError(
                "The 'connection' parameter must be a duckdb, sqlite3 or psycopg connection. "
                f"Got {type(self.connection).__name__} instead."
            )

    def __repr__(self) -> str:  # the connection's repr may hold a password: never shown
        return f"SqlSource({connection_kind(self.connection)} connection, sql={self.sql!r})"


def connection_kind(con: Any) -> str | None:
    """``"duckdb"``, ``"sqlite"`` or ``"postgresql"`` for a connection of that database."""
    root = (type(con).__module__ or "").split(".")[0]
    kind = _KINDS.get(root)
    if kind == "sqlite" and type(con).__name__ != "Connection":
        return None
    if kind == "duckdb" and type(con).__name__ != "DuckDBPyConnection":
        return None
    if kind == "postgresql" and not hasattr(con, "cursor"):
        return None
    return kind


def sql_input(values: Any, sql: Any) -> Any:
    """The input of a front door given ``values`` and its ``sql=`` argument.

    ``release_cdf(con, sql="SELECT ...")`` is ``release_cdf(SqlSource(con, "SELECT ..."))``:
    a connection and the query that selects the rows. Checked before anything is read.

    Raises
    ------
    InvalidTypeError
        ``sql`` given with ``values`` that is not a duckdb, sqlite3 or psycopg connection,
        or a connection given without ``sql``.
    """
    from treedp.exceptions import InvalidTypeError

    if sql is None:
        if connection_kind(values) is not None:
            raise InvalidTypeError(
                "A database connection needs the query that selects the rows: pass "
                "sql='SELECT ...' with it (or a treedp.SqlSource)."
            )
        return values
    if connection_kind(values) is None:
        raise InvalidTypeError(
            "The 'sql' parameter needs a duckdb, sqlite3 or psycopg connection as the data. "
            f"Got {type(values).__name__} instead."
        )
    return SqlSource(values, sql)


def sql_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A front door's arguments with ``values`` and ``sql`` made one input
    (:func:`sql_input`): ``build_query(**sql_arguments(locals()))``."""
    out = dict(arguments)
    out["values"] = sql_input(out["values"], out.pop("sql"))
    return out
