"""The bin rule of :mod:`treedp.engines.base` written in SQL, and the one counting query.

Every SQL engine (DuckDB, SQLite, PostgreSQL) runs the same query shape; a :class:`Dialect`
says only how a public number is written (a bound parameter, or an exact literal), how a
missing value is recognised, and how the database is asked::

    SELECT g, b, count(*) FROM (
      SELECT <key position of the by columns> AS g, <bin of x> AS b
      FROM (SELECT CAST(q."income" AS DOUBLE) AS x, q."state" AS k0 FROM (<user query>) AS q) s
    ) t GROUP BY g, b

The user's query is only ever a subquery (``(<query>) AS q``): it is never concatenated with a
value, and every column name is a quoted identifier (:func:`quote`). Public numbers (edges,
keys) travel as bound parameters, or, for DuckDB relations, as literals that parse to exactly
the same double (``'0.1'::DOUBLE``, correctly rounded). At most ``(G + 1) × (B + 3)`` rows of
counts come back, never a value.

The bin of ``x`` (a double; integers converted to the nearest double, as the local engine
does): ``-2`` a value of no number type (SQLite's dynamic typing), ``-1`` missing (NULL or
NaN), ``-3`` a key not in the public list, else the ``j`` with ``e_j <= x < e_{j+1}``, values
below ``e_0`` (``-inf`` too) in bin 0 and values at or above ``e_B`` (``+inf`` too) in bin
``B - 1``. Exact ways to find ``j``, each the local rule bit for bit (the conformance
tests check all of them on edge values):

* ``"case"``: a balanced tree of ``CASE WHEN x < e_m`` over the ``B - 1`` inner edges
  (``⌈log2 B⌉`` comparisons per value); any edges;
* ``"arith"`` (equal-width bins): the candidate ``c = floor(clamp((x - e_0)·B/(e_B - e_0),
  0, B - 1))``, the local kernel's, which is off by one bin at most (the spacing proof of
  :func:`treedp.bin_edges.equal_width_inverse`), corrected by comparing ``x`` with the exact
  edges ``e_c`` and ``e_{c+1}`` read from an array, then clamped (DuckDB, with a privacy
  unit, only for equal-width bins that :func:`treedp.engines.sql.fast.fast_plan` refuses:
  the others take its ``k`` and ``b`` in :func:`cells_sql`);
* ``"search"`` (DuckDB, explicit edges): a branch-free binary search over a list of the edges,
  after cheap predicates for missing and out-of-range values (:mod:`treedp.engines.sql.search`);
* ``"width_bucket"`` (PostgreSQL, explicit edges, numbers and datetime ticks): cheap
  predicates, then ``width_bucket(x, ARRAY[e_1 .. e_{B-1}])``, the number of inner edges
  ``<= x`` (a binary search in the server, :mod:`treedp.engines.sql.bucket`);
* ``"bisect"`` (SQLite, any edges): the same number from Python's ``bisect_right``, a function
  registered on the connection for the query (:mod:`treedp.engines.sql.callback`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.engines.base import BinCounts, NanPolicy
from treedp.engines.entry import missing_column, missing_values_error
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    missing_key_error,
    person_missing_error,
)
from treedp.engines.sql.bucket import bucket_bin, tick_bucket
from treedp.engines.sql.by_columns import check_by_types, check_unit_type, key_position
from treedp.engines.sql.callback import bisect_bin
from treedp.engines.sql.fast import MISSING_K, fast_plan, one_group_by, plan_bins
from treedp.engines.sql.search import search_bin, search_levels, tick_search, uses_search
from treedp.engines.sql.ticks import Ticks, arith_bin, check_ticks, coarsened, tick_bin
from treedp.exceptions import InvalidParameterError, InvalidTypeError, TreeDPError

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.noise.rng import RandomSource

__all__ = [
    "MISSING",
    "NON_NUMBER",
    "Dialect",
    "Sql",
    "bin_expression",
    "cells_sql",
    "count_grouped_sql",
    "count_sql",
    "datetime_ticks",
    "described",
    "guarded",
    "hex_literal",
    "key_counts_sql",
    "query_failed",
    "quote",
    "refuse_cells",
    "strip_query",
    "the_column",
    "value_column",
]

#: The bin codes that are not bins: a value of no number type, a missing value, a key not
#: listed (dropped, as every engine drops records of keys outside the public list).
NON_NUMBER, MISSING, UNLISTED = -2, -1, -3
_X, _Q, _S = "x", '"__treedp_q"', '"__treedp_s"'


def quote(name: str) -> str:
    """``name`` as a quoted SQL identifier (``"a""b"`` for ``a"b``), the same in all three."""
    if "\x00" in name:
        raise InvalidParameterError("A column name must not contain a NUL character.")
    return '"' + name.replace('"', '""') + '"'


def hex_literal(key: str) -> str:
    """A key drawn by treedp (hex digits only, checked) as an SQL string literal: written in
    the text, so that it never shifts the positions of bound parameters."""
    if not key or any(ch not in "0123456789abcdef" for ch in key):
        raise InvalidParameterError("A hash key must be lower-case hex digits.")
    return f"'{key}'"


def strip_query(sql: Any) -> str:
    """The user's query, checked to be one statement (a trailing ``;`` is dropped)."""
    if not isinstance(sql, str):
        raise InvalidTypeError(
            f"The 'sql' parameter must be a str (one SELECT). Got {type(sql).__name__} instead."
        )
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise InvalidParameterError("The 'sql' parameter must be a query (one SELECT).")
    return text


@dataclass
class Sql:
    """SQL text being built, with its bound parameters in order of appearance and the
    functions the query calls (registered by :attr:`Dialect.session` while it runs)."""

    dialect: Dialect
    params: list[Any] = field(default_factory=list)
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def value(self, v: Any) -> str:
        """A public value (a number, or a key) as a parameter or an exact literal."""
        text, params = self.dialect.literal(v)
        self.params.extend(params)
        return text

    def array(self, values: Any) -> str:
        """A public array of doubles (the edges), for the ``arith`` rule."""
        assert self.dialect.array is not None
        text, params = self.dialect.array([float(v) for v in values])
        self.params.extend(params)
        return text


@dataclass(frozen=True)
class Dialect:
    """What differs between databases; everything else is in this module.

    Attributes
    ----------
    name : str
        ``"duckdb"``, ``"sqlite"`` or ``"postgresql"``.
    double : str
        The SQL type of a double (``DOUBLE``, ``REAL``, ``float8``).
    literal : callable
        ``literal(v) -> (text, params)``: a public value as SQL.
    missing : callable
        ``missing(x) -> text``: whether the double ``x`` is missing (NULL or NaN).
    rule : callable
        ``rule(bins) -> "case" | "arith" | "search" | "width_bucket" | "bisect"``.
    source : callable
        ``source(data) -> text``: what the wrapped query reads (``(<query>)`` with the user's
        query inside).
    run : callable
        ``run(data, text, params) -> rows``; database errors pass through to
        :func:`query_failed`.
    columns : callable
        ``columns(data) -> [(name, kind)]`` from the query's description (no value read);
        ``kind`` is ``"integer"``, ``"float"``, ``"datetime"``, ``"any"`` (SQLite: typed
        per value) or None.
    errors : callable
        ``errors() -> tuple of exception classes`` the driver raises.
    array : callable, optional
        ``array(values) -> (text, params)``: an array of doubles (``arith`` only).
    cast : callable, optional
        ``cast(column) -> text``: the value as a double; None: ``CAST(c AS double)``.
    wide_cast : callable, optional
        ``wide_cast(column, type name) -> text | None``: the value as a double for a column
        of a type whose plain cast can fail on one value (PostgreSQL ``numeric`` beyond the
        double range), which must saturate instead; None: the plain cast.
    nan_null : callable, optional
        ``nan_null(column) -> text``: a float ``by`` or person-id column with NaN as NULL
        (missing); None: the database stores no NaN (SQLite).
    number_guard : callable, optional
        ``number_guard(column) -> text``: whether a value is of a number type (SQLite).
    max_params : int
        The most bound parameters one query may take.
    keyed_hash : callable, optional
        ``keyed_hash(sql, key, columns) -> text``: an orderable keyed pseudo-random function
        of the columns under the hex string ``key`` (:mod:`treedp.engines.sql.bound`).
    session : callable
        ``session(data, functions) -> context manager`` around every counting query: SQLite
        registers the query's ``functions`` (:attr:`Sql.functions`: its keyed hash, its
        bins) on the connection for that query only.
    types : callable, optional
        ``types(data) -> {name: SQL type name}`` from the query's description.
    ticks : callable, optional
        ``ticks(column, type name) -> Ticks | None``: a datetime column as exact integer
        ticks (:mod:`treedp.engines.sql.ticks`); None: that type is not supported.
    one_group_by : bool
        Count the equal-width bins that :func:`treedp.engines.sql.fast.fast_plan` accepts
        with :func:`treedp.engines.sql.fast.one_group_by`.
    inline_bin : bool
        :mod:`treedp.engines.sql.fast`'s bin as one ``CASE`` of ``x``, no subquery for ``k``
        (PostgreSQL: its planner inlines a subquery, computing ``k`` twice per row).
    integer_key : bool
        The direct plan's key as a ``BIGINT`` (DuckDB bounds its range from the statistics
        and groups by a perfect hash).
    float_errors : bool
        The database raises on a double overflow or underflow (PostgreSQL); False: IEEE
        results (DuckDB), which lets :mod:`treedp.engines.sql.fast` start its range test
        at ``e_0``.
    """

    name: str
    double: str
    literal: Callable[[Any], tuple[str, list[Any]]]
    missing: Callable[[str], str]
    rule: Callable[[Bins], str]
    source: Callable[[Any], str]
    run: Callable[[Any, str, list[Any]], list[tuple[Any, ...]]]
    columns: Callable[[Any], list[tuple[str, str | None]]]
    errors: Callable[[], tuple[type[BaseException], ...]]
    array: Callable[[list[float]], tuple[str, list[Any]]] | None = None
    cast: Callable[[str], str] | None = None
    wide_cast: Callable[[str, str], str | None] | None = None
    nan_null: Callable[[str], str] | None = None
    number_guard: Callable[[str], str] | None = None
    max_params: int = 1 << 30
    keyed_hash: Callable[[Sql, str, Sequence[str]], str] | None = None
    session: Callable[[Any, Mapping[str, Callable[..., Any]]], AbstractContextManager[Any]] = (
        lambda data, functions: nullcontext()
    )
    types: Callable[[Any], dict[str, str]] | None = None
    ticks: Callable[[str, str], Ticks | None] | None = None
    one_group_by: bool = False
    inline_bin: bool = False
    integer_key: bool = False
    float_errors: bool = True


def query_failed(dialect: Dialect, exc: BaseException) -> InvalidParameterError:
    """The one error for a query the database refused, or a lost connection: the exception's
    class only, never its message (a database message may quote a value of the data)."""
    return InvalidParameterError(
        f"The SQL query failed in {dialect.name} ({type(exc).__name__}): check the query, its "
        "column names and types, and the connection. Nothing was charged."
    )


def guarded(dialect: Dialect, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except TreeDPError:
        raise
    except dialect.errors() as exc:
        raise query_failed(dialect, exc) from None


# ---------------------------------------------------------------------- the bin rule
def _case_tree(sql: Sql, edges: np.ndarray, lo: int, hi: int) -> str:
    """The bin in ``[lo, hi]`` of ``x``: a balanced tree of comparisons with ``e_mid``."""
    if lo == hi:
        return str(lo)
    mid = (lo + hi + 1) // 2
    edge = sql.value(float(edges[mid]))  # parameters in the order they appear in the text
    below = _case_tree(sql, edges, lo, mid - 1)
    return f"CASE WHEN {_X} < {edge} THEN {below} ELSE {_case_tree(sql, edges, mid, hi)} END"


def _arith(sql: Sql, bins: Bins) -> str:
    """The candidate bin of the equal-width kernel, corrected against the exact edges."""
    edges = bins.edges
    top = bins.n_bins - 1

    def cand() -> str:
        lo, inv = sql.value(float(edges[0])), sql.value(float(bins._inv_width))
        zero, cap = sql.value(0.0), sql.value(float(top))
        return f"CAST(floor(LEAST(GREATEST(({_X} - {lo}) * {inv}, {zero}), {cap})) AS BIGINT)"

    step = (float(edges[-1]) - float(edges[0])) / bins.n_bins
    with np.errstate(over="ignore", invalid="ignore"):
        formula = np.arange(bins.n_bins, dtype=np.float64) * step + float(edges[0])
    if np.isfinite(step) and np.array_equal(edges[:-1], formula):
        # e_j = j·step + e_0 exactly, for j < B (one product, one sum, as numpy computed
        # them): no lookup; e_B is only compared for the clamp, which the final LEAST does
        def edge(plus: int) -> str:
            at = f"CAST({cand()} + {plus} AS {sql.dialect.double})"
            return f"({at} * {sql.value(step)} + {sql.value(float(edges[0]))})"

        below = f"CASE WHEN {_X} < {edge(0)} THEN 1 ELSE 0 END"
        above = f"CASE WHEN {_X} >= {edge(1)} THEN 1 ELSE 0 END"
    else:  # 1-based arrays: e_j is arr[j + 1]
        below = f"CASE WHEN {_X} < {sql.array(edges)}[{cand()} + 1] THEN 1 ELSE 0 END"
        above = f"CASE WHEN {_X} >= {sql.array(edges)}[{cand()} + 2] THEN 1 ELSE 0 END"
    return f"GREATEST(0, LEAST({top}, {cand()} - {below} + {above}))"


def bin_expression(sql: Sql, bins: Bins, searched: bool = False) -> str:
    """The SQL bin of the double column ``x`` (see the module docstring), missing values
    ``-1``; its parameters are appended to ``sql``. ``searched``: the rows carry the column
    ``l`` of :func:`treedp.engines.sql.search.search_levels` (the ``search`` rule)."""
    if bins.datetime_unit is not None:
        raise InvalidParameterError(
            f"Datetime bins are not supported by the {sql.dialect.name} engine yet; release a "
            "number column (for example the epoch seconds) with numeric bounds."
        )
    rule = sql.dialect.rule(bins)
    missing = sql.dialect.missing(_X)
    if searched:
        return search_bin(sql, bins, _X, missing, MISSING)
    if rule == "width_bucket":
        return bucket_bin(sql, bins, _X, missing, MISSING)
    if rule == "arith":
        found = _arith(sql, bins)
    elif rule == "bisect":
        found = bisect_bin(sql, bins, _X, MISSING)
    else:
        if bins.n_bins - 1 + len(sql.params) > sql.dialect.max_params:
            raise InvalidParameterError(
                f"The {sql.dialect.name} engine takes at most {sql.dialect.max_params} bins "
                "with explicit edges; use fewer bins."
            )
        found = _case_tree(sql, bins.edges, 0, bins.n_bins - 1)
    return f"CASE WHEN {missing} THEN {MISSING} ELSE {found} END"


# ---------------------------------------------------------------------- the query
def described(dialect: Dialect, data: Any) -> list[tuple[str, str | None]]:
    """The query's columns and their kinds (no value read); a failing query is one error."""
    out: list[tuple[str, str | None]] = guarded(dialect, lambda: dialect.columns(data))
    return out


def the_column(dialect: Dialect, data: Any, column: str | None) -> str:
    """``column``, or the only column of a one-column query (``treedp.median(con, sql=...)``)."""
    if column is not None:
        return column
    names = [n for n, _ in described(dialect, data)]
    if len(names) != 1:
        raise InvalidParameterError(
            "The 'column' parameter is required for a database query of several columns: name "
            "the column to release."
        )
    return names[0]


def value_column(dialect: Dialect, data: Any, job_columns: Sequence[str], bins: Bins) -> None:
    """Check the columns against the query's description (names, the value's type)."""
    described_ = described(dialect, data)
    names = [n for n, _ in described_]
    for c in job_columns:
        if c not in names:
            raise missing_column(c, names)
        if names.count(c) > 1:
            raise InvalidParameterError(f"The column '{c}' appears twice in the query's result.")
    kind = dict(described_)[job_columns[0]]
    if kind is None:
        what = "datetime" if bins.datetime_unit is not None else "number"
        raise InvalidTypeError(
            f"The column '{job_columns[0]}' must hold {what}s; its SQL type is not a {what} type."
        )
    if kind == "datetime" and bins.datetime_unit is None:
        raise InvalidTypeError(
            f"The column '{job_columns[0]}' holds datetimes but the bins are numeric; give "
            "datetime bounds (or edges)."
        )
    if bins.datetime_unit is not None:
        datetime_ticks(dialect, data, job_columns[0], bins)


def datetime_ticks(dialect: Dialect, data: Any, column: str, bins: Bins) -> Ticks:
    """The datetime column as exact integer ticks, its type read from the query's
    description; a column of another type is one clear error."""
    if dialect.types is None or dialect.ticks is None:
        raise InvalidTypeError(
            f"The {dialect.name} engine does not count datetime columns (see "
            "docs/databases.md); release a number column (for example epoch seconds) with "
            "numeric bounds."
        )
    types = dialect.types
    type_name = guarded(dialect, lambda: types(data))[column]
    kind = dict(described(dialect, data)).get(column)
    ticks = dialect.ticks(f"{_Q}.{quote(column)}", type_name) if kind == "datetime" else None
    if kind != "datetime":
        raise InvalidTypeError(
            f"The column '{column}' must hold datetimes for these datetime bins; its SQL type "
            "is not a datetime type."
        )
    return coarsened(check_ticks(dialect.name, ticks, type_name, bins), bins)


def _key_position(sql: Sql, data: Any, by: Sequence[str], keys: Sequence[Any]) -> str:
    """``-1`` for a missing key, the key's position in the public list, or NULL (unlisted):
    :func:`treedp.engines.sql.by_columns.key_position`, the ``by`` columns' types checked."""
    if not by:
        return "0"
    kinds, types = dict(described(sql.dialect, data)), _types_of(sql.dialect, data)
    check_by_types(sql.dialect.name, by, types)
    return key_position(sql, by, keys, kinds, types)


def _types_of(d: Dialect, data: Any) -> dict[str, str]:
    types = d.types
    return {} if types is None else dict(guarded(d, lambda: types(data)))


def _inner(
    sql: Sql, data: Any, column: str, by: Sequence[str], unit: str | None, x: str | None = None
) -> str:
    """``SELECT x, k0.., p FROM (<user query>) AS q``: the value as a double (or ``x``)."""
    d = sql.dialect
    col = f"{_Q}.{quote(column)}"
    types = _types_of(d, data) if d.wide_cast or unit is not None else {}  # one description
    if x is None and d.wide_cast is not None:
        x = d.wide_cast(col, types.get(column, ""))
    if x is None:
        x = d.cast(col) if d.cast is not None else f"CAST({col} AS {d.double})"
    cols = [f"{x} AS {_X}"]
    if d.number_guard is not None:
        cols.append(f"{d.number_guard(col)} AS isnum")
    if unit is not None:
        check_unit_type(d.name, unit, types)
    named = [*((b, f"k{i}") for i, b in enumerate(by)), *(((unit, "p"),) if unit else ())]
    kinds = dict(described(d, data)) if named and d.nan_null is not None else {}
    for name, alias in named:  # a NaN key or person id is missing, as on every engine
        c = f"{_Q}.{quote(name)}"
        if d.nan_null is not None and kinds.get(name) == "float":
            c = d.nan_null(c)
        cols.append(f"{c} AS {alias}")
    return f"SELECT {', '.join(cols)} FROM {d.source(data)} AS {_Q}"


def _fast_cells(dialect: Dialect, bins: Bins) -> bool:
    """Whether the rows' bins (with a privacy unit) use :mod:`treedp.engines.sql.fast`'s
    ``k`` and ``b`` when it has a plan: DuckDB (PostgreSQL keeps ``width_bucket`` there)."""
    return dialect.one_group_by and dialect.rule(bins) != "width_bucket"


def cells_sql(sql: Sql, data: Any, job: GroupedJob) -> str:
    """The (key position, bin) of every row of the user's query, in SQL."""
    d = sql.dialect
    if job.bins.datetime_unit is not None:
        ticks = datetime_ticks(d, data, job.column, job.bins)
        inner = _inner(sql, data, job.column, job.by, job.unit, ticks.expr)
        found = None
        explicit = arith_bin(ticks, job.bins, MISSING, ticks.div) is None
        if uses_search(sql, job.bins) and explicit:
            found = tick_search(inner, job.bins, ticks, MISSING)
        elif d.rule(job.bins) == "width_bucket" and explicit:
            found = inner, tick_bucket(ticks, job.bins, MISSING)
        g = _key_position(sql, data, job.by, job.keys)
        inner, b = found if found is not None else (inner, tick_bin(ticks, job.bins, MISSING))
    elif _fast_cells(d, job.bins) and (plan := fast_plan(job.bins)) is not None:
        # equal-width bins (with a privacy unit: not one GROUP BY) by fast.py's k and b
        inner = _inner(sql, data, job.column, job.by, job.unit)
        g = _key_position(sql, data, job.by, job.keys)
        b, k = plan_bins(sql, plan, _X, job.bins.edges)  # parameters: g, b, then k
        if k is not None:
            inner = f"SELECT *, {k} AS k FROM ({inner}) AS {quote('__treedp_k')}"
        inner = f"SELECT *, {b} AS b0 FROM ({inner}) AS {quote('__treedp_b')}"
        top = job.bins.n_bins - 1
        b = (
            f"CASE WHEN b0 IS NULL OR b0 < {MISSING_K + 1} THEN {MISSING} ELSE "
            f"CAST(LEAST({top}, GREATEST(0, b0)) AS BIGINT) END"
        )
    else:
        inner = _inner(sql, data, job.column, job.by, job.unit)
        searched = uses_search(sql, job.bins)
        if searched:
            inner = search_levels(sql, inner, job.bins, _X)
        g = _key_position(sql, data, job.by, job.keys)
        b = bin_expression(sql, job.bins, searched)
    guard = f"WHEN isnum = 0 THEN {NON_NUMBER} " if d.number_guard is not None else ""
    unit = ", p" if job.unit is not None else ""
    return (
        f"SELECT g, CASE {guard}WHEN g IS NULL AND b >= 0 THEN {UNLISTED} ELSE b END AS b{unit}"
        f" FROM (SELECT {g} AS g, {b} AS b{', isnum' if guard else ''}{unit} FROM ({inner})"
        f" AS {_S}) AS {quote('__treedp_c')}"
    )


def _grouped_rows(dialect: Dialect, data: Any, job: GroupedJob) -> list[tuple[Any, ...]]:
    value_column(dialect, data, job.columns, job.bins)
    sql = Sql(dialect)
    plan = fast_plan(job.bins) if dialect.one_group_by else None
    if plan is not None:
        text = one_group_by(
            sql,
            job,
            plan,
            lambda: _key_position(sql, data, job.by, job.keys),
            lambda: _inner(sql, data, job.column, job.by, None),
            MISSING,
        )
    else:
        text = f"SELECT g, b, count(*) FROM ({cells_sql(sql, data, job)}) AS t GROUP BY g, b"
    with dialect.session(data, sql.functions):
        return list(guarded(dialect, lambda: dialect.run(data, text, sql.params)))


def refuse_cells(bad: dict[str, int], nan: NanPolicy, column: str | None = None) -> None:
    """The errors for cells that are not counts: no count, value or shape in any message
    (``column``: the column's name, public, for the type error)."""
    if bad["type"]:
        raise not_numbers(column)
    if nan == "error":
        if bad["value"]:
            raise missing_values_error()
        if bad["key"]:
            raise missing_key_error()
        if bad["unit"]:
            raise person_missing_error()


def not_numbers(column: str | None) -> InvalidTypeError:
    """A value column that returned a value of another type: named, no value or count."""
    name = "" if column is None else f" '{column}'"
    return InvalidTypeError(f"The column{name} must hold numbers; the query returned another type.")


def _tally(rows: Sequence[tuple[Any, ...]], keys: int, bins: int, nan: NanPolicy, col: str) -> Any:
    counts = np.zeros((max(keys, 1), bins), dtype=np.int64)
    bad = {"type": 0, "value": 0, "key": 0, "unit": 0}
    dropped = 0
    for g, b, n in rows:
        n, b = int(n), int(b)
        if b == NON_NUMBER:
            bad["type"] += n
        elif b == MISSING:
            bad["value"] += n
        elif g is not None and int(g) == -1:
            bad["key"] += n
        elif b == UNLISTED or g is None:
            pass
        else:
            counts[int(g), b] += n
            continue
        dropped += n
    refuse_cells(bad, nan, col)
    return counts, dropped


def count_sql(dialect: Dialect, data: Any, column: str | None, bins: Bins, nan: NanPolicy) -> Any:
    """Count one column of the query in the database: :class:`BinCounts`, ``B`` counts."""
    column = the_column(dialect, data, column)
    from treedp.privacy.contribution import ContributionBounds

    job = GroupedJob(column, (), ((),), None, ContributionBounds(None, 1, 1, 1), bins, nan)
    counts, dropped = _tally(_grouped_rows(dialect, data, job), 1, bins.n_bins, nan, column)
    return BinCounts._trusted(counts[0], dropped)


def count_grouped_sql(
    dialect: Dialect, data: Any, job: GroupedJob, source: RandomSource
) -> GroupedCounts:
    """The ``G × B`` counts of public keys, counted in the database (no privacy unit; with
    one, :func:`treedp.engines.sql.bound.bounded_counts`)."""
    n_bins, n_keys = job.bins.n_bins, len(job.keys)
    counts, dropped = _tally(_grouped_rows(dialect, data, job), n_keys, n_bins, job.nan, job.column)
    return GroupedCounts(job.keys, counts, dropped)


def key_counts_sql(dialect: Dialect, data: Any, job: GroupedJob, source: Any) -> KeyCounts:
    """Private key selection is not done in the database yet: a clear refusal, before any
    value is read or anything charged."""
    raise InvalidParameterError(
        f"The {dialect.name} engine needs public keys: pass keys=[...] with by= (private key "
        "selection inside a database is not supported yet)."
    )


def collect_sql(dialect: Dialect, data: Any, column: str | None) -> np.ndarray:
    """The column as float64 in memory (missing as NaN), for the quantile methods that hold
    the values; the column's type checked first."""
    from treedp.domain import make_bins

    column = the_column(dialect, data, column)
    if dict(described(dialect, data)).get(column) == "datetime":
        raise InvalidTypeError(
            f"The column '{column}' holds datetimes, which quantile methods that hold the "
            f"values do not collect from {dialect.name}; release the distribution instead "
            "(release_cdf with datetime bounds, then its quantiles)."
        )
    value_column(dialect, data, [column], make_bins(bounds=(0, 1), bins=1))
    sql = Sql(dialect)
    inner = _inner(sql, data, column, (), None)
    guard = "isnum" if dialect.number_guard is not None else "1"
    text = f"SELECT {_X}, {guard} FROM ({inner}) AS {_S}"
    rows = guarded(dialect, lambda: dialect.run(data, text, sql.params))
    if any(int(r[1]) == 0 for r in rows):
        raise not_numbers(column)
    return np.array([np.nan if r[0] is None else r[0] for r in rows], dtype=np.float64)
