"""``treedp.profile``: every numeric or datetime column of a table, under one budget.

A front door like :func:`treedp.release_cdf`: for each chosen column it builds the ONE query
of a release (:func:`treedp.build_query`: private bounds where none are given, one bin per
integer for integer columns over at most ``max(bins, 4096)`` integers, equal-width bins
otherwise) and runs it with :func:`treedp.run_query`. Nothing of the pipeline is copied;
what this module adds is the budget split, the column choice and the one charge.

Guarantee. Under ``add_remove`` neighbours (one record, i.e. one row, added or removed) with
privacy unit one row: column ``j`` is released ``ε_j``-DP (its private bounds included) and
the columns compose by basic composition, so the profile is ``ε``-DP with ``ε = Σ_j ε_j``. The
split is equal and stated in decimals that add up to ``ε`` exactly (:func:`split_epsilon`);
the accountant is charged ONE :class:`~treedp.privacy.spend.SpendRecord` (``"profile"``,
``PureDP(ε)``, its parameters listing every column's share), after every column was read and
counted and before any noise is drawn. Every column's query runs on its own thread up to its
charge, where all of them meet (a barrier): the record is charged once, when every read has
succeeded; a refusal or a read that fails charges nothing and draws nothing. The columns then
draw their noise one after the other, in column order, so a seeded source is reproducible.

Column types are public: they come from the schema (pandas / polars dtypes, an Arrow or
Parquet schema, numpy dtypes of a mapping's arrays) or from ``types=``, never from values.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from typing import Any

import numpy as np

from treedp._validation import held_warnings, must, user_stacklevel
from treedp.bin_edges import INTEGER_BINS
from treedp.budget import check_epsilon
from treedp.domain import check_bin_count, integer_range_bins
from treedp.engines.sql.source import sql_input
from treedp.exceptions import BudgetExceededError, InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.rng import check_source
from treedp.options import PrivateBounds
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.measures import PureDP
from treedp.privacy.spend import SUBJECT_KEY, SpendRecord
from treedp.profiling.result import TableProfile
from treedp.profiling.schema import KINDS, column_kinds
from treedp.query import Query, build_query
from treedp.run import run
from treedp.subject import bounds_of, describe_source

__all__ = ["PROFILE_RECORD", "profile", "split_epsilon"]

#: The mechanism name of a profile's one charge (``treedp budget history`` shows it).
PROFILE_RECORD = "profile"

#: Significant digits of each column's share of epsilon (the last column takes the rest).
_DIGITS = 12


def split_epsilon(epsilon: float, k: int) -> tuple[float, ...]:
    """``epsilon`` split equally over ``k`` columns, in decimals that add up to it exactly.

    Each share is ``epsilon / k`` rounded down to 12 significant digits; the last takes the
    remainder. The accountant composes in the decimals written, so ``Σ`` of the shares (as
    decimals) is ``epsilon`` exactly.
    """
    total = Decimal(repr(float(epsilon)))
    exact = total / k
    share = exact.quantize(Decimal(1).scaleb(exact.adjusted() - _DIGITS + 1), ROUND_DOWN)
    last = total - share * (k - 1)
    shares = [float(share)] * (k - 1) + [float(last)]
    if Decimal(repr(shares[-1])) != last:  # an epsilon written with many digits: stay below
        shares[-1] = math.nextafter(shares[-1], 0.0)
    return tuple(shares)


@dataclass(frozen=True)
class _Column:
    name: str
    kind: str
    epsilon: float
    query: Query


def profile(
    table: Any,
    sql: str | None = None,
    *,
    epsilon: float,
    columns: Sequence[str] | None = None,
    types: Mapping[str, str] | None = None,
    bounds: Mapping[str, tuple[Any, Any]] | None = None,
    bins: int = 1024,
    nan: str = "drop",
    timezone: str | None = None,
    accountant: Accountant | None = None,
    rng: RandomSource | None = None,
) -> TableProfile:
    """Release the distribution of every numeric or datetime column of a table, under one ε.

    Parameters
    ----------
    table : DataFrame, pyarrow Table, mapping of columns, or path
        A pandas / polars DataFrame, a pyarrow Table, a mapping of column name to array
        (numpy / pandas arrays are typed by their dtype), or a Parquet / CSV file.
    sql : str, optional
        The query (one SELECT) when ``table`` is a database connection (docs/databases.md).
    epsilon : float
        The total pure-DP budget, split equally over the columns (module docstring).
    columns : sequence of str, optional
        The columns to profile. Default: every column the schema (or ``types``) says is
        integer, floating-point or datetime (the others: :attr:`TableProfile.skipped`).
    types : mapping of str to {"integer", "float", "datetime"}, optional
        Declared column types, over the schema's (required for a CSV file, which has none).
    bounds : mapping of str to (lo, hi), optional
        Public bounds per column; the other columns find theirs privately with 10% of their
        share (:class:`treedp.PrivateBounds`): numbers on a scale-free grid, datetimes on a
        grid of days (:mod:`treedp.value_methods.datetime_bounds`).
    timezone : str, optional
        The zone of datetime columns whose type names none but whose values carry UTC offsets
        (CSV cells ending in ``Z`` or ``+01:00``, which need it; fixed-offset dtypes, which
        default to UTC): their private bounds and answers are in this zone
        (:class:`treedp.PrivateBounds`).
    bins : int, default=1024
        The equal-width bins of a float or datetime column. An integer column gets one bin per
        integer of its range (public or found) up to ``max(bins, 4096)`` integers, else that
        many bins of whole integers (:func:`treedp.domain.integer_range_bins`).
    nan : {"drop", "error"}, default="drop"
        Missing values dropped per column (a per-record filter: add/remove holds), or refused.
    accountant : Accountant, optional
        Charged once, with one record for the whole profile: it records the source as given
        and each column's public bounds (:mod:`treedp.subject`; a note with
        :func:`treedp.noting`).
    rng : RandomSource, optional
        Default: the OS's cryptographic generator.

    Returns
    -------
    TableProfile
        A mapping of column name to its :class:`Release`, with ``to_frame()``, ``to_json()``,
        ``to_csv()`` and ``write_report(path)``.

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        A bad argument, naming it; checked for every column before any value is read, and
        nothing is charged.
    BudgetExceededError
        The accountant cannot take ``epsilon``: nothing is read, drawn or charged.

    Examples
    --------
    >>> import numpy as np, treedp
    >>> data = {"age": np.array([23, 35, 41, 52, 67] * 40), "hours": np.linspace(1, 60, 200)}
    >>> prof = treedp.profile(data, epsilon=1.0, bounds={"age": (0, 100), "hours": (0, 80)},
    ...                       rng=treedp.InsecureSeededSource(7))
    >>> sorted(prof)
    ['age', 'hours']
    """
    table = sql_input(table, sql)  # a connection and its query: one SqlSource
    eps = check_epsilon(epsilon)
    check_accountant(accountant, unit="record", mechanism="profile")  # record-level
    source = check_source(rng)
    bins = check_bin_count(bins, integers=False)
    kinds = column_kinds(table, types)
    chosen, skipped = _choose(kinds, columns, bounds)
    private = PrivateBounds(datetimes=True, timezone=timezone)  # datetimes without bounds
    plan = [
        _column(table, name, kinds[name], share, bounds, bins, nan, source, private)
        for name, share in zip(chosen, split_epsilon(eps, len(chosen)), strict=True)
    ]
    record = _profile_record(eps, chosen, plan, _subject(table, plan))
    if accountant is not None:  # refused before any value is read
        accountant.check(record)
    releases = _run_all(plan, record, accountant)
    return TableProfile(
        releases=dict(zip(chosen, releases, strict=True)),
        kinds={c.name: c.kind for c in plan},
        epsilon=eps,
        shares={c.name: c.epsilon for c in plan},
        skipped=skipped,
        record=record,
    )


def _choose(
    kinds: Mapping[str, str | None],
    columns: Sequence[str] | None,
    bounds: Mapping[str, tuple[Any, Any]] | None,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The columns profiled, and those left out with the public reason."""
    if bounds is not None:
        if not isinstance(bounds, Mapping):
            raise InvalidTypeError(
                must(
                    "bounds",
                    f"be a mapping of column name to (lo, hi). Got {type(bounds).__name__}.",
                )
            )
        for name in bounds:
            if name not in kinds:
                raise InvalidParameterError(
                    f"The 'bounds' parameter names a column the table does not have: {name!r}."
                )
    skipped: dict[str, str] = {}
    if columns is None:
        chosen = []
        for name, kind in kinds.items():
            if kind is None:
                skipped[name] = "not numeric or datetime (schema)"
            else:
                chosen.append(name)
        if not chosen:
            raise InvalidParameterError(
                "The table has no numeric column to profile by its schema: declare column "
                "types with types={'name': 'integer' | 'float' | 'datetime'} (on the command "
                "line --integers / --floats / --datetimes NAME)."
            )
        return tuple(chosen), skipped
    if isinstance(columns, str) or not isinstance(columns, Sequence) or not columns:
        raise InvalidTypeError(must("columns", "be a non-empty list of column names."))
    if len(set(columns)) != len(columns):
        raise InvalidParameterError(must("columns", "name each column once."))
    for name in columns:
        if name not in kinds:
            raise InvalidParameterError(
                f"The 'columns' parameter names a column the table does not have: {name!r}."
            )
        if kinds[name] is None:
            raise InvalidParameterError(
                f"The column {name!r} is not numeric or datetime by the schema; declare its "
                "type with types= (--integers / --floats on the command line) if it holds numbers."
            )
    return tuple(columns), skipped


def _column(
    table: Any,
    name: str,
    kind: str | None,
    share: float,
    bounds: Mapping[str, tuple[Any, Any]] | None,
    bins: int,
    nan: str,
    source: RandomSource,
    private: PrivateBounds,
) -> _Column:
    """A column with its one release query (validated in full: nothing read)."""
    assert kind in KINDS  # _choose keeps typed columns only
    cap = max(bins, INTEGER_BINS)  # an integer column's most bins
    integer_cap = cap if kind == "integer" else None
    found = private if kind == "datetime" else PrivateBounds(datetimes=False, max_bins=integer_cap)
    the_bounds: Any = (bounds or {}).get(name, found)
    the_bins: Any = bins
    if kind == "integer":
        the_bounds, the_bins = _integer_bins(the_bounds, cap)
    by_name = not isinstance(table, Mapping)  # a mapping's column is passed as it is
    query = build_query(
        table if by_name else table[name],
        column=name if by_name else None,
        epsilon=share,
        bounds=the_bounds,
        bins=the_bins,
        nan=nan,
        rng=source,
        accountant=Accountant(PureDP(share), dataset=f"profile[{name}]"),
    )
    return _Column(name, kind, share, query)


def _integer_bins(bounds: Any, cap: int) -> tuple[Any, Any]:
    """An integer column's bounds and bins: one bin per integer up to ``cap`` integers, else
    at most ``cap`` bins of whole integers (public bounds here; private ones in the bounds
    stage, by ``PrivateBounds.max_bins``). Bounds that are not two whole numbers (ints, or
    floats such as ``1e6``) within ±2**53 are passed on as given, for the query's own check."""
    if isinstance(bounds, PrivateBounds) or not isinstance(bounds, Sequence) or len(bounds) != 2:
        return bounds, "integers"
    lo, hi = bounds
    real = int | float | np.integer | np.floating
    if not all(isinstance(v, real) and not isinstance(v, bool) for v in (lo, hi)):
        return bounds, "integers"
    if not all(math.isfinite(v) and float(v).is_integer() and abs(v) <= 2**53 for v in (lo, hi)):
        return bounds, "integers"
    if hi < lo:
        return bounds, "integers"
    the_bins, _ = integer_range_bins(int(lo), int(hi), cap)
    return bounds, the_bins


def _subject(table: Any, plan: Sequence[_Column]) -> dict[str, Any]:
    """What a profile releases, for its charge: the source and each column's bounds."""
    bounds = {c.name: bounds_of(c.query) for c in plan}  # public: charged before any read
    return {"source": describe_source(table), "bounds": bounds}


def _profile_record(
    eps: float, chosen: Sequence[str], plan: Sequence[_Column], subject: dict[str, Any]
) -> SpendRecord:
    """The one spend record of a whole profile."""
    return SpendRecord(
        PROFILE_RECORD,
        PureDP(eps),
        "add_remove",
        "record",
        {
            "epsilon": eps,
            "columns": list(chosen),
            "epsilon_per_column": [c.epsilon for c in plan],
            "split": "equal",
            "composition": "basic (sequential)",
            SUBJECT_KEY: subject,
        },
    )


def _run_all(
    plan: Sequence[_Column], record: SpendRecord, accountant: Accountant | None
) -> list[Any]:
    """Run every column's query: reads in parallel up to the one charge (made here, on the
    caller's thread, where a ledger's connection lives), then noise column by column."""
    k = len(plan)
    arrived = threading.Barrier(k + 1)  # every column at its charge, and this thread
    sync = _Sync(threading.Event(), threading.Condition())
    results: list[Any] = [None] * k
    errors: list[BaseException | None] = [None] * k
    held: list[list[tuple[str, type[Warning]]]] = [[] for _ in range(k)]

    def work(i: int) -> None:
        own = plan[i].query.accountant
        assert own is not None
        gated = _Gated(own, arrived, sync, i)
        try:
            with held_warnings() as held[i]:  # emitted below, on the caller's thread
                results[i] = run(_with_accountant(plan[i].query, gated))
            if not gated.charged:  # every release charges once; never wait for a lost one
                raise RuntimeError("a profile column finished without its charge")
        except BaseException as error:
            errors[i] = error
            arrived.abort()
        finally:
            with sync.turn:
                sync.next = max(sync.next, i + 1)
                sync.turn.notify_all()

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(k)]
    for t in threads:
        t.start()
    try:
        arrived.wait()  # every column read and counted (or one failed: broken)
        if accountant is not None:
            accountant.charge(record)  # the one charge, before any noise
        sync.ok = True
    except threading.BrokenBarrierError:
        pass
    except BaseException:  # a refused charge, Ctrl-C: no column goes on to its noise
        arrived.abort()
        raise
    finally:
        sync.go.set()
        for t in threads:
            t.join()
    for error in errors:
        if error is not None and not isinstance(error, threading.BrokenBarrierError):
            raise error
    for column, kept in zip(plan, held, strict=True):  # in column order, at the user's call
        named = f"Column '{column.name}': "  # a mapping's column is run without its name
        for message, category in kept:
            text = message if message.startswith(named) else named + message
            warnings.warn(text, category, stacklevel=user_stacklevel())
    return results


class _Sync:
    """The go signal after the one charge, and whose turn it is to draw noise."""

    def __init__(self, go: threading.Event, turn: threading.Condition) -> None:
        self.go, self.turn = go, turn
        self.ok = False
        self.next = 0


class _Gated(Accountant):
    """A column's accountant: its own share checked as usual; its charge waits for every
    column's read and the profile's one charge, then for its turn to draw noise."""

    def __init__(
        self, own: Accountant, arrived: threading.Barrier, sync: _Sync, index: int
    ) -> None:
        super().__init__(own.total, dataset=own.dataset, neighbours=own.neighbours)
        self._arrived, self._sync, self._index = arrived, sync, index
        self.charged = False

    def charge(self, record: SpendRecord) -> Any:
        """Check the column's spend fits its share, meet the other columns, wait for the turn."""
        if self.charged:
            raise BudgetExceededError("A profile column may charge once.")
        self.check(record)
        self._arrived.wait()
        self._sync.go.wait()
        if not self._sync.ok:  # the one charge was refused: draw nothing
            raise threading.BrokenBarrierError
        with self._sync.turn:
            self._sync.turn.wait_for(lambda: self._sync.next >= self._index)
        self.charged = True
        return super().charge(record)


def _with_accountant(query: Query, accountant: Accountant) -> Query:
    from dataclasses import replace

    return replace(query, accountant=accountant)
