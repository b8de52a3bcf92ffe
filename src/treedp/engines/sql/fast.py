"""Equal-width bins counted in one cheap ``GROUP BY`` (DuckDB and PostgreSQL).

Per row, for a value ``x``::

    k = floor(y(x) - 0.5)        if s <= x <= e_B        (y ≈ (x - e_0)·B/(e_B - e_0))
    k = -1                       if x < s                (-inf too)
    k = B - 1                    if x > e_B              (+inf too)
    k = NULL                     if x is NULL or NaN
    b = k + [x >= E(k + 1)]

grouped by ``b``; the outer query, over at most ``B + 3`` groups, clamps ``b`` to ``[0, B -
1]`` and maps NULL (and ``b < -1``: :data:`MISSING_K`, below) to missing. The range test
starts at ``s = e_0`` in DuckDB, and in PostgreSQL unless a row just above ``e_0`` could
underflow ``y`` there (then ``s = e_1``; :attr:`Plan.start`, :attr:`Dialect.float_errors
<treedp.engines.sql.rule.Dialect>`). ``y`` and ``E`` are double arithmetic written in SQL
(:class:`Plan`, chosen and checked by :func:`fast_plan` in numpy with the same IEEE
operations, round to nearest, as the database):

* ``y`` (monotone, never overflowing on ``[s, e_B]``): ``(x - e_0)·S`` with
  ``S = B/(e_B - e_0)``; when ``S`` overflows (edges a few subnormals apart)
  ``((x - e_0)·2^1000)·S'`` with ``S' = B/((e_B - e_0)·2^1000)`` (the power of two is
  exact); when ``e_B - e_0`` overflows (bounds near ``±1.8e308``), ``(x - e_0)·S`` for ``x <
  0`` and ``(x - e_B)·S + B`` for ``x >= 0`` (each piece monotone; ``|e_0|, |e_B| >= 2^900``
  there, so ``|x - e_B| >= 2^847`` unless zero and no product underflows);
* ``E(j)`` is the edge ``e_j`` itself, bit for bit, for ``1 <= j <= B - 1``: the formula that
  built the edges, first that matches all of them — ``j·step + e_0``
  (``step = (e_B - e_0)/B``), then :func:`treedp.make_bins`' own ``e_0 + (e_B - e_0)·(j/B)``,
  then its ``e_0·(1 - j/B) + e_B·(j/B)`` (for an overflowing width) — else a lookup in the
  list of the edges. ``E(0)`` and ``E(B)`` need only be finite. (In SQL, ``+ 0.0`` and
  ``1.0·`` are left out for ``e_0 = +0.0`` and ``e_B - e_0 = 1``: the same doubles.)

**Why ``b`` is exactly the local bin** (the largest ``j`` with ``e_j <= x``, clamped to
``[0, B - 1]``). :func:`fast_plan` accepts a plan only if ``K(t) = floor(fl(y(t) - 0.5))``,
computed in numpy as the database computes it, equals ``j - 1`` at every edge ``t = e_j``
in ``[s, e_B]`` (only rows in ``[s, e_B]`` compute ``y``; ``K(e_0) = floor(-0.5) = -1``
always, as ``y(e_0) = 0``), and, for the two-piece ``y``, lies in ``{j - 1, j}`` at the
points ``t = -5e-324`` and ``t = 0`` (each against the bin ``j`` holding ``t``). ``K`` is
non-decreasing on each piece (a rounded subtraction, rounded products by positive
constants, a rounded sum and ``floor`` are each monotone), and pieces meet only at ``0``.
So for ``x`` in ``[e_j, e_{j+1})`` inside ``[s, e_B]``, ``0 <= j <= B - 1``: ``K(x) >=
K(e_j) = j - 1`` and ``K(x) <= K(e_{j+1}) = j`` (for the two-piece ``y`` the bounds come
from ``e_j`` and ``-5e-324`` below ``0``, and from ``0`` and ``e_{j+1}`` above), so ``k`` is
``j - 1`` or ``j``, and one exact comparison with ``E(k + 1) = e_{k+1}`` gives ``b = j``
when ``1 <= k + 1 <= B - 1``. Otherwise ``k + 1`` is ``0`` (``j = 0``: ``b`` is ``-1`` or
``0``, clamped to ``0``) or ``B`` (``j = B - 1``: ``b`` is ``B - 1`` or ``B``, clamped to
``B - 1``). At ``x = e_B``, ``k = B - 1`` and ``b`` is ``B - 1`` or ``B``: clamped to ``B
- 1``. Below ``s``, ``b`` is ``-1`` or ``0`` (``x < s <= e_1``); above ``e_B``, ``B - 1`` or
``B``: clamped to bins ``0`` and ``B - 1``. So ``k + 1`` is always in ``[0, B]``: no edge
outside the bounds is ever computed. (The check asks ``K(e_j) = j - 1``, not only ``j - 1``
or ``j``: ``K(e_{j+1}) = j + 1`` would let a row just below ``e_{j+1}`` take ``k = j + 1``.)

**The direct plan: ``b = floor(y(x))``, no comparison** (below ``s``: ``0``). Accepted only if
``floor(y(e_j)) = j`` and ``floor(y(pred(e_j))) = j - 1`` for ``1 <= j <= B`` (``pred``:
the next double below; one ``y``, not two pieces), computed in numpy as above. For ``x`` in
``[e_j, e_{j+1})`` inside ``[s, e_B]``: ``x >= e_j`` gives ``floor(y(x)) >= j`` (``j = 0``:
``y(e_0) = 0``), and ``x <= pred(e_{j+1})`` (``x`` is a double) gives ``floor(y(x)) <= j``:
``b = j``. At ``x = e_B``, ``b = B``: clamped to ``B - 1``; the rest as above. It holds for
``B = 1024`` over ``(0, 1)`` and unit integer bins (``y`` exact: ``S`` a power of two,
``e_0 = 0``), not for 1,000 or 10 bins over ``(0, 1)`` (``floor(y)`` just below ``0.1`` is
already ``1``). It saves the edge and the comparison per row (measured,
``docs/databases.md``).

**No error in PostgreSQL**, which raises on a float overflow and on a product or quotient
that rounds to zero from non-zero operands: :func:`fast_plan` checks in numpy that every
``E(j)``, ``0 <= j <= B``, and its intermediate products and quotients are finite and do not
round to zero from non-zero operands; ``y`` on ``[s, e_B]`` lies in ``[0, B + 1/2)`` (from
``K``), its difference ``x - e_0`` in ``[0, e_B - e_0]`` (or its piece's range), so nothing
overflows. ``s = e_0`` only if the smallest non-zero ``x - e_0``, one ulp of ``e_0``,
times the factors of ``y`` does not round to zero (each product is monotone in the
difference; a zero difference gives a zero product, no error); otherwise ``s = e_1``, where
``y >= 1/2``; the direct plan has no ``- 0.5`` and no edge. The range test comes first, so
no row outside it computes ``y``.

**Two forms in SQL.** DuckDB computes ``k`` in a subquery and ``b`` above it. PostgreSQL's
planner inlines such a subquery (the ``CASE`` for ``k`` then ran twice per row), so there
``b`` is one ``CASE`` (:attr:`Dialect.inline_bin <treedp.engines.sql.rule.Dialect>`): in
range, ``k + [x >= E(k + 1)]`` with ``k``'s arithmetic written twice (the same double
operations give the same ``k``); below ``s``, ``-1``; above ``e_B``, ``B - 1``; missing, NULL.
These are bins the first form's values clamp to as well: below ``s`` it gives ``-1`` or
``0`` (bin ``0``), above ``e_B`` ``B - 1`` or ``B`` (bin ``B - 1``); the direct plan has no
comparison, and ``0`` below ``s``.

**DuckDB's direct plan groups by a ``BIGINT``** (:attr:`Dialect.integer_key
<treedp.engines.sql.rule.Dialect>`): ``k = CAST(floor(y) AS BIGINT)`` in range (exact:
``floor(y)`` is an integer in ``[0, B]``), ``0`` below ``s``, ``B - 1`` above ``e_B`` and
``MISSING_K = -2``, not NULL, for a missing value. Every other ``b`` of either plan is ``-1``
or more, so the outer query's "NULL or ``b < -1``" is exactly the missing values. Why: DuckDB
derives the key's range from the column's statistics through the ``CASE`` only when every
branch has one (a NULL or a double branch has none), and then groups by a perfect hash, as
for its own ``floor(v·B)::BIGINT`` (measured, ``docs/databases.md``). The comparison plan
keeps a double ``k``: its key as an integer measured no faster.

``±0.0`` compare equal in both databases, as in numpy; NaN fails ``x <= e_B`` and ``x < s``
(it sorts above every number in both) and is then recognised as missing.

**Why ``s = e_0`` when allowed** (measured, ``docs/databases.md``): DuckDB folds a comparison
that its statistics decide (Parquet min/max, a table's row groups) to a constant, so for data
within the bounds the whole ``CASE`` reduces to ``floor(y - 0.5)`` — no per-row range test;
with ``s = e_1`` every row in ``[e_0, e_1)`` keeps it alive.

PostgreSQL's one ``CASE`` replaced a subquery fenced by ``OFFSET 0`` (which kept ``k`` from
being computed twice but cost a ``Subquery Scan`` per row and, estimated at 200 groups, JIT
inlining): ``EXPLAIN ANALYZE`` and timings in ``docs/databases.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

import numpy as np

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.engines.grouped import GroupedJob
    from treedp.engines.sql.rule import Sql

__all__ = ["MISSING_K", "Plan", "fast_plan", "one_group_by", "plan_bins"]

EdgeForm = Literal["step", "lerp", "interp", "list"]
_BOOST = 2.0**1000
_TINY = 5e-324
#: The comparison with ``E(k + 1)`` and the shift of ``y``; the tests replace them (``>``,
#: ``0.0``) and see the counts change.
_GE = ">="
_HALF = 0.5
#: The range test starts at ``e_0`` where allowed (``"lo"``), else at ``e_1``; the tests set
#: ``"e1"`` to count both ways.
_START = "lo"
#: The check of ``floor(y)`` just below each edge for the direct plan; the tests drop it and
#: see the counts change.
_PRED = True
#: Whether to try the direct plan at all; the benchmark turns it off (with ``_START =
#: "e1"``) to time the rule it replaced in the same run.
_DIRECT = True
#: ``k`` of a missing value where the direct plan's key is a ``BIGINT`` (DuckDB); every other
#: ``b`` is ``-1`` or more.
MISSING_K = -2


@dataclass(frozen=True)
class Plan:
    """How :func:`one_group_by` computes ``y`` and the edge ``E(k + 1)`` (module docstring).

    Attributes
    ----------
    lo, hi : float
        ``e_0`` and ``e_B``.
    n : int
        ``B``.
    scale : float
        ``S`` (or ``S'``).
    boost : float
        ``1.0``, or ``2^1000`` for edges a few subnormals apart.
    split : bool
        The two-piece ``y`` (an overflowing width).
    edge : str
        ``"step"``, ``"lerp"``, ``"interp"`` or ``"list"``.
    step : float
        ``(e_B - e_0)/B`` (the ``"step"`` form).
    start : float
        ``s`` for a database that raises on a float underflow (PostgreSQL): ``e_0``, or
        ``e_1`` where a row just above ``e_0`` could underflow ``y``.
    wide : bool
        The check of ``K`` passes from ``e_0``: a database with IEEE results (DuckDB) takes
        ``s = e_0``.
    direct : bool
        ``b = floor(y)``, no comparison with an edge (``y`` exact enough at the edges).
    """

    lo: float
    hi: float
    n: int
    scale: float
    boost: float
    split: bool
    edge: EdgeForm
    step: float
    start: float
    wide: bool
    direct: bool


def _y(plan: Plan, x: np.ndarray) -> np.ndarray:
    """``y`` of the plan, in numpy, with the database's operations."""
    with np.errstate(all="ignore"):
        if plan.split:
            low = (x - plan.lo) * plan.scale
            high = (x - plan.hi) * plan.scale + float(plan.n)
            out: np.ndarray = np.where(x < 0.0, low, high)
            return out
        d = x - plan.lo
        if plan.boost != 1.0:
            d = d * plan.boost
        out = d * plan.scale
        return out


def _edge_terms(plan: Plan, j: np.ndarray) -> tuple[np.ndarray, list[tuple[np.ndarray, ...]]]:
    """``E(j)`` in numpy, and the (result, operand, operand) of each product and quotient."""
    lo, hi, n = plan.lo, plan.hi, float(plan.n)
    with np.errstate(all="ignore"):
        if plan.edge == "step":
            prod = j * plan.step
            return prod + lo, [(prod, j, np.full_like(j, plan.step))]
        s = j / n
        ops: list[tuple[np.ndarray, ...]] = [(s, j, np.full_like(j, n))]
        if plan.edge == "lerp":
            width = hi - lo
            prod = width * s
            return lo + prod, [*ops, (prod, np.full_like(j, width), s)]
        rest = 1.0 - s
        a, b = lo * rest, hi * s
        return a + b, [*ops, (a, np.full_like(j, lo), rest), (b, np.full_like(j, hi), s)]


def _edge_ok(plan: Plan, edges: np.ndarray) -> bool:
    """``E(j) = e_j`` for ``1 <= j <= B - 1``, and no overflow or underflow for ``0..B``."""
    if plan.edge == "list":
        return True
    j = np.arange(plan.n + 1, dtype=np.float64)
    value, ops = _edge_terms(plan, j)
    for out, a, b in ops:
        if not np.isfinite(out).all() or bool(((out == 0) & (a != 0) & (b != 0)).any()):
            return False
    return bool(np.isfinite(value).all()) and np.array_equal(value[1:-1], edges[1:-1])


def _k_ok(plan: Plan, edges: np.ndarray) -> bool:
    """``K(e_j) = j - 1`` at every edge from the range test's start to ``e_B``, and, for two
    pieces, ``K(t)`` in ``{j - 1, j}`` at ``t = -5e-324`` and ``t = 0`` (module docstring)."""
    n = plan.n
    with np.errstate(all="ignore"):
        k = np.floor(_y(plan, edges) - 0.5)
    inside = (edges >= plan.start) & (edges <= edges[-1])  # the only rows that compute y
    ok = bool((~inside | (k == np.arange(n + 1) - 1)).all())
    if plan.split:
        extra = np.array([-_TINY, 0.0])
        extra = extra[(extra >= plan.start) & (extra <= edges[-1])]
        bins = np.searchsorted(edges, extra, "right") - 1
        with np.errstate(all="ignore"):
            kx = np.floor(_y(plan, extra) - 0.5)
        ok = ok and bool(((kx == bins) | (kx == bins - 1)).all())
    return ok


def _direct_ok(plan: Plan, edges: np.ndarray) -> bool:
    """``floor(y(e_j)) = j`` and ``floor(y(pred(e_j))) = j - 1`` for ``1 <= j <= B``
    (``pred``: the next double below; module docstring)."""
    j = np.arange(1, plan.n + 1, dtype=np.float64)
    with np.errstate(all="ignore"):
        at = np.floor(_y(plan, edges[1:]))
        below = np.floor(_y(plan, np.nextafter(edges[1:], -np.inf)))
    return bool((at == j).all()) and (not _PRED or bool((below == j - 1).all()))


def _from_lo(plan: Plan) -> bool:
    """Whether rows in ``[e_0, e_1)`` may compute ``y``: no product of ``y`` rounds to zero
    from non-zero operands there (PostgreSQL raises), checked at the smallest non-zero
    difference ``x - e_0`` (each product is monotone in it)."""
    lo = np.float64(plan.lo)
    with np.errstate(all="ignore"):
        d = np.nextafter(lo, np.inf) - lo  # exact: one ulp
        if plan.boost != 1.0:
            d = d * np.float64(plan.boost)  # a power of two, never to zero from 2^-1074
        return bool(d * np.float64(plan.scale) != 0.0)


def _y_form(lo: float, hi: float, n: int) -> tuple[float, float, bool] | None:
    """``(scale, boost, split)`` for the bounds, or None."""
    with np.errstate(all="ignore"):
        width = float(np.float64(hi) - np.float64(lo))
        if np.isfinite(width) and width > 0:
            scale = float(np.float64(n) / np.float64(width))
            if np.isfinite(scale) and scale > 0:
                return scale, 1.0, False
            scale = float(np.float64(n) / (np.float64(width) * _BOOST))
            return (scale, _BOOST, False) if np.isfinite(scale) and scale > 0 else None
        if min(abs(lo), abs(hi)) < 2.0**900:
            return None
        half = np.float64(hi) * 0.5 - np.float64(lo) * 0.5
        scale = float(np.float64(n) / half * 0.5)
    return (scale, 1.0, True) if np.isfinite(scale) and scale > 0 else None


def fast_plan(bins: Bins, lists: bool = True) -> Plan | None:
    """The :class:`Plan` that counts the equal-width bins exactly (the checks of the module
    docstring), or None (datetime or explicit bins; no plan passes). ``lists``: allow the
    ``"list"`` edge form."""
    if bins.datetime_unit is not None or not bins.equal_width:
        return None
    edges, n = bins.edges, bins.n_bins
    lo, hi = float(edges[0]), float(edges[-1])
    form = _y_form(lo, hi, n)
    if form is None:
        return None
    scale, boost, split = form
    with np.errstate(all="ignore"):
        step = float((np.float64(hi) - np.float64(lo)) / np.float64(n))
    e1 = float(edges[1])
    direct = Plan(lo, hi, n, scale, boost, split, "step", step, e1, True, True)
    if _DIRECT and not split and _direct_ok(direct, edges):
        return replace(direct, start=lo) if _from_lo(direct) else direct
    forms: list[EdgeForm] = ["step", "lerp", "interp", "list"] if lists else ["step"]
    for edge in forms:
        if edge == "step" and not (np.isfinite(step) and step > 0):
            continue
        plan = Plan(lo, hi, n, scale, boost, split, edge, step, e1, False, False)
        if not _edge_ok(plan, edges):
            continue
        if not _k_ok(plan, edges):
            return None
        if _START == "lo" and _k_ok(replace(plan, start=lo), edges):
            return replace(plan, start=lo if _from_lo(plan) else plan.start, wide=True)
        return plan
    return None


def _y_sql(sql: Sql, plan: Plan, x: str, zero: bool) -> str:
    """``y`` of the plan in SQL (parameters appended in order)."""
    v = sql.value
    if plan.split:
        return (
            f"CASE WHEN {x} < {v(0.0)} THEN ({x} - {v(plan.lo)}) * {v(plan.scale)} "
            f"ELSE ({x} - {v(plan.hi)}) * {v(plan.scale)} + {v(float(plan.n))} END"
        )
    d = x if zero else f"({x} - {v(plan.lo)})"
    if plan.boost != 1.0:
        return f"({d} * {v(plan.boost)}) * {v(plan.scale)}"
    return f"{d} * {v(plan.scale)}"


def _edge_sql(sql: Sql, plan: Plan, k: Callable[[], str], edges: np.ndarray, zero: bool) -> str:
    """``E(k + 1)`` in SQL; ``k()`` gives the text of ``k`` where it goes."""
    v, n = sql.value, float(plan.n)
    if plan.edge == "step":
        return f"({k()} + {v(1.0)}) * {v(plan.step)}" + ("" if zero else f" + {v(plan.lo)}")
    if plan.edge == "lerp":  # 1.0·s is s: the product left out for e_B - e_0 = 1
        width = plan.hi - plan.lo
        return ("" if zero else f"{v(plan.lo)} + ") + (
            ("" if width == 1.0 else f"{v(width)} * ") + f"(({k()} + {v(1.0)}) / {v(n)})"
        )
    if plan.edge == "interp":
        return (
            f"{v(plan.lo)} * ({v(1.0)} - ({k()} + {v(1.0)}) / {v(n)}) "
            f"+ {v(plan.hi)} * (({k()} + {v(1.0)}) / {v(n)})"
        )
    return f"({sql.array(edges)})[CAST({k()} AS INTEGER) + 2]"  # 1-based: e_j is a[j + 1]


def plan_bins(sql: Sql, plan: Plan, x: str, edges: np.ndarray) -> tuple[str, str | None]:
    """``(b, k)``: the SQL of ``b`` from the column ``k`` and of ``k`` from ``x`` (``k`` in
    a subquery below ``b``), or, for a dialect with :attr:`Dialect.inline_bin
    <treedp.engines.sql.rule.Dialect>`, ``(b, None)`` with ``b`` one ``CASE`` of ``x``
    (module docstring). Parameters are appended to ``sql`` in order of appearance (``b``'s
    text first; each f-string evaluates its fields left to right). With ``e_0 = +0.0`` the
    subtraction and the sum of ``e_0`` are left out: ``z - 0.0`` and ``z + 0.0`` equal ``z``
    (only ``-0.0`` becomes ``+0.0``, which compares and floors the same)."""
    v, d, top = sql.value, sql.dialect, plan.n - 1
    zero = plan.lo == 0.0 and math.copysign(1.0, plan.lo) > 0
    s = plan.lo if plan.wide and not d.float_errors else plan.start

    def k_in() -> str:  # k for s <= x <= e_B
        if not plan.direct:
            return f"floor({_y_sql(sql, plan, x, zero)} - {v(_HALF)})"
        if d.integer_key:
            return f"CAST(floor({_y_sql(sql, plan, x, zero)}) AS BIGINT)"
        return f"floor({_y_sql(sql, plan, x, zero)})"

    def cmp(k: Callable[[], str]) -> str:  # + [x >= E(k + 1)]
        if plan.direct:
            return ""
        return f" + CAST({x} {_GE} {_edge_sql(sql, plan, k, edges, zero)} AS INTEGER)"

    def case(then: Callable[[], str], ints: bool, below: float) -> str:
        """The range test's ``CASE``; ``ints``: the other values as integer literals and
        missing as ``MISSING_K`` (a key whose range DuckDB can bound), else parameters and
        NULL."""

        def c(value: float) -> str:
            return str(int(value)) if ints else v(value)

        head = (
            f"CASE WHEN {x} >= {v(s)} AND {x} <= {v(plan.hi)} THEN {then()} WHEN {x} < {v(s)} "
            f"THEN {c(below)} "
        )
        miss = str(MISSING_K) if ints else "NULL"
        return head + f"WHEN {d.missing(x)} THEN {miss} ELSE {c(float(top))} END"

    below = 0.0 if plan.direct else -1.0
    if d.inline_bin:  # one CASE: k's arithmetic written twice, no subquery
        return case(lambda: k_in() + cmp(k_in), False, below), None
    return "k" + cmp(lambda: "k"), case(k_in, plan.direct and d.integer_key, below)


def one_group_by(
    sql: Sql,
    job: GroupedJob,
    plan: Plan,
    key: Callable[[], str],
    inner: Callable[[], str],
    missing: int,
) -> str:
    """The counting query of equal-width bins accepted by :func:`fast_plan`: rows of
    ``(g, bin, count)``, bin ``missing`` for NULL and NaN. ``key()`` is the SQL of the key
    position of the by columns ``k0..`` and ``inner()`` the query of ``x, k0..``; each is
    called where its text goes, so that bound parameters stay in order."""
    top = job.bins.n_bins - 1
    keyed = bool(job.by)
    outer_g = "g" if keyed else "0"
    head = (
        f"SELECT {outer_g} AS g, CASE WHEN b IS NULL OR b < {MISSING_K + 1} THEN {missing} "
        f"WHEN b < 0 THEN 0 WHEN b > {top} THEN {top} ELSE CAST(b AS BIGINT) END AS bb, "
        "sum(n) FROM ("
    )
    b, k = plan_bins(sql, plan, "x", job.bins.edges)
    g_col = f"{key()} AS g, " if keyed else ""
    inner_text = inner()
    g_sel = "g, " if keyed else ""
    rows = f"SELECT {g_col}x FROM ({inner_text}) AS s0"
    if k is not None:
        rows = f"SELECT {g_sel}x, {k} AS k FROM ({rows}) AS s1"
    rows = f"SELECT {g_sel}{b} AS b, count(*) AS n FROM ({rows}) AS s2 GROUP BY {g_sel}b"
    return f"{head}{rows}) AS r GROUP BY {'g, ' if keyed else ''}bb"
