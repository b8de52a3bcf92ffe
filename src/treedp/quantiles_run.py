"""The run of a quantile query (:func:`treedp.quantiles`, :func:`treedp.median`): choose,
charge, run, report.

:func:`run_quantiles` is the quantile stage of :func:`treedp.run.run`: it asks the accountant
before reading, reads the column once (a refusal spends nothing), decides the steps, charges
the whole epsilon once, and runs them.
:func:`plan_steps` decides, from public parameters and the public (or, under replace, the
counted) ``n``, the method, whether ``n="private"`` spends on a count, and the budget left,
and makes every public check a method would make later, so that nothing public refuses after
the charge. :func:`run_steps` then runs private bounds, the private count, the method and the
warnings, and assembles the :class:`QuantilesResult`: the one place quantiles spend budget.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._inputs import Kind, as_1d_array, join_chunks
from treedp._validation import held_warnings, must, warn_user
from treedp.budget import check_epsilon
from treedp.engines.dispatch import pick_engine
from treedp.engines.sql.source import SqlSource
from treedp.exceptions import BoundsWarning, DataError, InvalidParameterError, InvalidTypeError
from treedp.mechanisms.results import QuantileResult
from treedp.noise import RandomSource
from treedp.privacy import PureDP
from treedp.privacy.measures import ZCDP, ApproxDP
from treedp.privacy.spend import SpendRecord
from treedp.quantile_checks import (
    calibrated_epsilon,
    check_bounds,
    check_kinds,
    check_private_bounds,
    check_rest,
    check_selection_records,
)
from treedp.quantile_methods import (
    QUANTILE_METHODS,
    binned_method,
    inside_integer_limit,
)
from treedp.quantile_query import QuantilesRequest
from treedp.quantiles_choice import MAX_TREE_BINS, _fixed_choice, choose_method, tree_bins
from treedp.quantiles_fallback import (
    FOUND_RANGE_KEYS,
    fallback_warning,
    found_range_takes,
    plan_fallback,
    plan_found_range,
    within_public_side,
)
from treedp.query import Query
from treedp.timezones import expect_offsets, result_in_zone
from treedp.value_methods._column import describe, float_up, is_datetime_like, read_column
from treedp.value_methods.bounds_split import (
    cut_integer_range,
    integer_cut_warning,
    remaining_epsilon,
    split_private_bounds,
)
from treedp.value_methods.bounds_warnings import grid_end_warning, restated, scans_warning
from treedp.value_methods.concentration_gate import GATE_SHARE, plan_gate, run_gate
from treedp.value_methods.datetime_bounds import CONTRACT as DATETIME_CONTRACT
from treedp.value_methods.private_count import CONTRACT as COUNT_CONTRACT
from treedp.value_methods.private_count import count_scale, release_count

__all__ = ["QuantilesResult", "Steps", "plan_steps", "record", "run_quantiles", "run_steps"]


@dataclass(frozen=True, repr=False, kw_only=True)
class QuantilesResult(QuantileResult):
    """The result of :func:`quantiles`.

    Attributes
    ----------
    method : str
        The method used: ``"exponential"``, ``"recursive"`` or ``"tree"``.
    bounds : (lo, hi)
        The bounds used (found privately with ``bounds="private"``).
    parts : tuple of SpendRecord
        What each step spent (private bounds, then the quantiles); ``guarantee`` is their
        sum (basic composition) and is what an accountant is charged.
    bounds_warning : str or None
        With ``bounds="private"``: a warning when a scan ran off the public grid, stopped at
        once or the scans crossed (:func:`treedp.value_methods.bounds_warnings.grid_end_warning`),
        or when a count known to the call — a public ``n``, the private count of
        ``n="private"``, the tree's released total or the recursion's (its root's side
        counts, two levels or more) — is below ten times the scans' allowance
        (:func:`~treedp.value_methods.bounds_warnings.few_records_warning`), else when a
        level within two allowances of records of an end of that count is answered at that
        found bound (``near_found_end``); the exponential method without ``n`` releases no
        count and warns when an answer equals a found bound (``at_bound_warning``). Also
        emitted as a :class:`treedp.BoundsWarning`. Post-processing: no privacy cost.
    n_source : str
        Where the ``n`` that chose the method and the tree's bins came from (one of
        :data:`N_SOURCES`): ``"none"`` (no ``n``: the rules without it), ``"public"`` (the
        user's ``n``, or under ``"replace"`` the number of values), ``"private"`` (``n =
        "private"``: a noisy count was released, :attr:`n_released`), ``"not needed"`` (``n
        = "private"`` where neither the method nor the bins can depend on ``n``: nothing was
        spent on it).
    n_released : int or None
        With ``n_source == "private"``: the released noisy count of the records (a DP
        release, ``max(0, n + Z)``, part of the guarantee; its spend is in :attr:`parts`);
        else None.
    integer_mode : str or None
        Why the quantiles are integers of the domain (integer mode, ``bins="integers"``):
        ``"declared"`` (``bins="integers"`` was given) or ``"column type"`` (no ``bins``, and
        the column's declared type is an integer type: its schema, never its values;
        :func:`treedp.quantile_query.typed_bins`); None: continuous (or equal-width bins).
    bounds_collapsed : bool
        With ``bounds="private"`` and ``method="auto"``: the bounds step said nothing (its
        scans collapsed) and the quantiles came from :attr:`method` over every float instead
        (:mod:`treedp.quantiles_fallback`); :attr:`bounds` are then the float lattice's ends
        (or a public side). Post-processing of the released stops.
    shrinkage : float or None
        The tree on numeric bins: the share ``f`` of its CDF's deviation from the uniform law
        over the bounds that the answers keep (:mod:`treedp.estimation.shrinkage`; 1: read as
        released; below 1: pulled toward the uniform law, a bias of the order of the noise;
        ``release_cdf(...).quantile`` reads the same release unshrunk). Post-processing of the
        release. None for the other methods, integer or datetime bins.
    """

    method: str
    bounds: tuple[Any, Any]
    parts: tuple[SpendRecord, ...]
    bounds_warning: str | None = None
    n_source: str = "none"
    n_released: int | None = None
    integer_mode: str | None = None
    bounds_collapsed: bool = False
    shrinkage: float | None = None

    def _summary(self) -> str:
        """The short ``repr``'s summary: integer mode from the column's type, the shrinkage
        if the answers were shrunk, and a pointer to :attr:`bounds_warning` if any."""
        typed = ", integer_mode='column type'" if self.integer_mode == "column type" else ""
        shrunk = "" if self.shrinkage in (None, 1.0) else f", shrinkage={self.shrinkage:.3g}"
        warned = ", bounds_warning=(see .bounds_warning)" if self.bounds_warning else ""
        return f"{super()._summary()}{typed}{shrunk}{warned}"


@dataclass(frozen=True)
class Steps:
    """What :func:`plan_steps` decided: the method (or its record name, with a private count
    still to choose it), where ``n`` comes from, the count's ``(scale, ε)`` and the rest;
    ``fallback``: the method run instead if the bounds step collapses, ``wide``: if the found
    integer bounds call for it, wide or narrow (:mod:`treedp.quantiles_fallback`)."""

    chosen: str
    n: int | None
    n_source: str
    count: tuple[Any, float] | None
    after_bounds: float
    m: int
    unbounded: bool = False
    gate: tuple[Any, float, float] | None = None
    fallback: str | None = None
    wide: str | None = None


def run_quantiles(query: Query) -> QuantilesResult:
    """Run a quantile query: check the accountant, read, decide, charge once, run."""
    req, acc = query.quantiles, query.accountant
    assert req is not None
    whole = req.privacy if req.privacy is not None else PureDP(req.eps)  # what is charged
    if acc is not None:  # refused before reading if it must
        acc.check(record(req.method, whole, req.relation, req.qa, req.bounds, 0.0))
    aware = expect_offsets(req.bounds, query.timezone)  # CSV cells checked as release checks
    values = _column_of(query.data, query.column, aware)
    name = "values" if query.column is None else f"column '{query.column}'"  # for messages
    dated = isinstance(req.bounds, tuple | list) and any(map(is_datetime_like, req.bounds))
    kind: Kind | None = "datetime" if dated else None
    # tz-aware: read on the UTC timeline, answers zoned at the end; datetime bounds: an
    # untyped column with nothing present is typed by them (kindless)
    if query.timezone is not None or kind is not None:
        values = as_1d_array(values, name, kind)
    # Read once before any charge (shape, type, missing values): a refusal spends nothing.
    data, unit = read_column(values, req.nan, req.relation, name)
    steps = plan_steps(req, int(data.size), unit)
    if req.privacy is not None:  # the method is chosen: its ε for the target (public)
        req = _calibrated(req, steps)
    if acc is not None:  # the whole budget (bounds, count and quantiles), before any randomness
        gate = GATE_SHARE if steps.gate is not None else 0.0
        acc.charge(
            record(steps.chosen, whole, req.relation, req.qa, req.bounds, req.count_share, gate,
                   (steps.fallback, steps.wide))
        )  # fmt: skip
    result = run_steps(values, req, steps, query.rng, (data, unit))
    return result_in_zone(result, query.timezone)  # type: ignore[no-any-return]


def _calibrated(req: QuantilesRequest, steps: Steps) -> QuantilesRequest:
    """The request at the ε its chosen method runs with for a zCDP or (ε, δ) target, refused
    before the charge where the method would refuse it (:func:`calibrated_epsilon`)."""
    return replace(req, eps=calibrated_epsilon(req, steps.chosen, steps.unbounded, steps.m))


def _column_of(values: Any, column: Any, aware: bool | None = None) -> Any:
    """``values`` itself, or its ``column`` collected into memory by the engine that reads
    ``values`` (:data:`treedp.engines.dispatch.ENGINES`: a DataFrame's, a cluster's, files').
    ``aware`` (:func:`treedp.timezones.expect_offsets`) refuses CSV datetime cells written
    with a UTC offset under naive bounds, or without one under aware bounds, as
    :func:`treedp.release_cdf` does; the refusal comes before any budget is charged."""
    engine = pick_engine(values)
    if column is None and isinstance(values, SqlSource):  # a one-column query is a column
        return engine.collect(values, None)  # type: ignore[misc, arg-type]
    if column is None:
        if isinstance(values, str | os.PathLike):  # a file: a schema, not a column
            raise InvalidParameterError(
                "A file given as 'values' needs 'column' (the column to read)."
            )
        return values
    if not isinstance(column, str):
        raise InvalidTypeError(must("column", f"be a str. Got {type(column).__name__} instead."))
    if engine.collect is None:
        raise InvalidTypeError(
            "The 'column' parameter applies to a pandas, polars, Dask or Spark DataFrame or a "
            f"file; a {type(values).__name__} is one column already: drop 'column'."
        )
    if aware is not None and engine.name == "files":
        return _file_column(values, column, aware)
    return engine.collect(values, column)


def _file_column(values: Any, column: str, aware: bool) -> Any:
    """The column of files (a path, a list of them or a ``FileSource``) in memory, CSV cells
    checked against ``aware`` (tz-aware bins or naive ones) while they are read."""
    from treedp.engines.files.count import iter_path_chunks
    from treedp.engines.files.paths import FileSource

    options: dict[str, Any] = {}
    if isinstance(values, FileSource):
        options = {"delimiter": values.delimiter, "encoding": values.encoding}
        values = values.path
    paths = list(values) if isinstance(values, list | tuple) else [values]
    chunks = [
        chunk
        for path in paths
        for chunk in iter_path_chunks(path, None, column, expect_aware=aware, **options)
    ]
    return join_chunks(chunks)  # no rows or no value: kindless, the public bounds decide


def _public_n(req: QuantilesRequest, size: int) -> tuple[int | None, str]:
    """The public ``n`` and where it came from; under ``replace`` the number of values."""
    if req.relation != "replace":
        return req.n, "none" if req.n is None else "public"
    if req.n is not None and req.n != size:  # n is public by definition under replace
        raise DataError(  # the same check for every method; it names no count
            "With neighbours='replace' the 'n' parameter must be the public number of "
            "records, and the column's number of records differs from it. Pass the true "
            "public n, or leave 'n' out (under replace it is the number of values)."
        )
    return size, "public"


def plan_steps(req: QuantilesRequest, size: int, unit: str | None) -> Steps:
    """Decide the method and the count, and check what the methods would check later."""
    n, n_source = _public_n(req, size)
    m = int(np.unique(req.qa).size)
    eps, method, bins = req.eps, req.method, req.bins
    # No bounds step over the float lattice (a public side clamps); datetimes take one.
    no_bounds = req.request is not None and unit is None
    # With n="private": the budget left after the bounds (from public parameters only)
    # decides whether n can matter; if it can, the count's exact loss comes off it too.
    private = req.request is not None
    public = None if private else req.bounds  # a wide integer range changes the choice
    target = req.privacy is not None
    chosen, both = method, no_bounds and (req.known is None or target)  # a scan: both sides
    if method == "auto":
        chosen = choose_method(m, epsilon=eps, bins=bins, n=n, no_bounds=both,
                               bounds=public, target=target)  # fmt: skip
    # Bounds private and a method that needs none: no bounds step, the whole ε to it.
    unbounded = (
        no_bounds
        and chosen in QUANTILE_METHODS
        and QUANTILE_METHODS[chosen].unbounded
        and not (req.private_n and req.relation == "add_remove")
    )
    after_bounds = (
        remaining_epsilon(eps, req.share, req.relation, req.known is not None)
        if private and not unbounded
        else eps
    )
    count: tuple[Any, float] | None = None
    gate: tuple[Any, float, float] | None = None
    rest = after_bounds
    if req.private_n and req.relation == "add_remove":
        fixed = _fixed_choice(m, after_bounds, bins, method, public)
        if fixed is None:  # the method or the bins depend on n: spend on a count
            count = count_scale(check_epsilon(eps * req.count_share))
            rest = math.nextafter(after_bounds - count[1], 0.0)
            if not rest > 0:
                raise InvalidParameterError(
                    "The 'bounds_share' and 'n_share' parameters leave no budget for the "
                    "quantiles; give smaller shares."
                )
            chosen, n_source = f"{method}, private n", "private"  # the method comes later
            if method == "auto" and bins is None and not private and unit is None:
                gate = plan_gate(rest)  # a share of the rest, spent if the count picks the tree
        else:
            chosen, n_source = fixed, "not needed"
    check_as = binned_method().name if count is not None else chosen  # any the count may pick
    if private:  # the share, and the tree's bins on stand-in bounds: before the charge
        if unit is not None and req.known is not None:
            raise InvalidParameterError(
                "Private datetime bounds search both sides: a public side is for numbers; "
                "give public 'bounds=(lo, hi)' for both."
            )
        if unit is not None and bins == "integers":
            raise InvalidParameterError(
                "bins='integers' needs numeric bounds: datetimes take a number of bins."
            )
        side = (None, None) if unbounded else req.request or (None, None)
        check_private_bounds(check_as, bins, rest, n, side)
    else:  # public parameters the methods check later: before anything is charged
        check_bounds(check_as, req.bounds, bins, rest, n)
        check_kinds(check_as, req.bounds, unit)
    rest = rest if gate is None else math.nextafter(rest - gate[1], 0.0)
    check_rest(rest, m, count is not None or QUANTILE_METHODS[chosen].selections)
    fallback = plan_fallback(req, chosen, unit=unit, unbounded=unbounded,
                             counted=count is not None, rest=rest, m=m)  # fmt: skip
    wide = plan_found_range(req, chosen, unbounded=unbounded, counted=count is not None,
                            rest=rest, m=m)  # fmt: skip
    if count is not None or fallback or wide or QUANTILE_METHODS[chosen].selections:
        check_selection_records(size)  # before the charge, whichever selection may run (all named)
    return Steps(chosen, n, n_source, count, after_bounds, m, unbounded, gate, fallback, wide)


def run_steps(
    values: Any,
    req: QuantilesRequest,
    steps: Steps,
    source: RandomSource,
    read: tuple[np.ndarray, str | None],
) -> QuantilesResult:
    """Private bounds, the private count, the method: the randomness, after the charge.
    ``read``: the column as :func:`read_column` read it before the charge, and its unit."""
    size = int(read[0].size)
    parts: list[SpendRecord] = []
    spent = Fraction(0)  # exact sum of the parts' (rounded-up) losses
    chosen, n = steps.chosen, steps.n
    off_grid: str | None = None
    collapsed = False  # the bounds step said nothing: the fallback ran
    bres: Any = None
    the_bounds: Any
    if steps.unbounded:  # no bounds step: the method's lattice covers every float
        the_bounds, eps_rest = None, req.eps
    elif req.request is not None:
        the_bounds, eps_rest, bres = _bounds_step(values, read, req, chosen, source)
        parts.append(bres.spend)
        spent += Fraction(bres.epsilon_spent)
        lo, hi = bres.stops
        grid = "days" if bres.mechanism == DATETIME_CONTRACT.name else None
        off_grid = grid_end_warning(lo, hi, bres.known, grid)  # post-processing of the stops
        if steps.fallback is not None and off_grid is not None:  # the scans said nothing
            chosen, the_bounds, off_grid = steps.fallback, None, fallback_warning(off_grid)
            collapsed = True
        elif steps.wide is not None and found_range_takes(steps.m, the_bounds, steps.wide):
            chosen = steps.wide
    else:
        the_bounds, eps_rest = (req.bounds[0], req.bounds[1]), req.eps
    n_released: int | None = None
    if steps.count is not None:  # the private count, then the choice from it (post-processing)
        scale, count_spent = steps.count
        n_released = release_count(size, scale, source)
        parts.append(_count_record(req, scale, count_spent))
        spent += Fraction(count_spent)
        eps_rest = math.nextafter(eps_rest - count_spent, 0.0)
        n = n_released
        chosen = req.method
        if req.method == "auto":
            public = None if req.request is not None else req.bounds
            chosen = choose_method(steps.m, epsilon=eps_rest, bins=req.bins, n=n, bounds=public,
                                   gated=steps.gate is not None)  # fmt: skip
    bins = req.bins
    if steps.gate is not None and chosen == "tree":  # most records in two bins: finer bins
        bins_at = lambda e: tree_bins(e, n)  # noqa: E731 - public rules and the released n̂
        ran = run_gate(read[0], the_bounds, eps_rest, steps.gate, bins_at, MAX_TREE_BINS,
                       req.relation, source)  # fmt: skip
        if ran is not None:
            bins, eps_rest, gate_part = ran
            parts.append(gate_part)
            spent += Fraction(steps.gate[1])  # the gate's loss, rounded up
    method = QUANTILE_METHODS[chosen]
    if bres is not None and req.bins == "integers" and method.binned:  # one bin per integer
        from treedp.domain import MAX_BINS

        cut = cut_integer_range(the_bounds[0], the_bounds[1], bres.known, MAX_BINS)
        if cut != tuple(the_bounds):  # post-processing of the released bounds
            the_bounds, off_grid = cut, off_grid or integer_cut_warning(MAX_BINS)
    # Each distinct level is released once, in increasing order, then put back in the
    # caller's order; the exponential method's answers are sorted after (post-processing).
    levels, where = np.unique(req.qa, return_inverse=True)
    # No bounds (the_bounds None): the lattice, on a public side if any (req.request).
    with held_warnings() as held:  # the tree's own release: restated for found bounds
        distinct, method_record, grid_points, guarantee_eps, released_n, kept = method.run(
            values, levels, eps_rest, the_bounds or req.request, bins, req.relation, n, req.nan,
            source, req.privacy,
        )  # fmt: skip
    if req.privacy is not None:  # its tightest cost for the target (bounded range)
        from treedp.quantile_privacy import spend_record

        method_record = spend_record(
            method_record, req.privacy, levels, req.relation, chosen, eps_rest
        )
    if bres is not None:  # from released values only: the stops, a count, the answers
        known_count = n if n is not None else released_n  # public, private, the method's n̂
        off_grid = scans_warning(off_grid, bres, known_count, distinct, the_bounds, levels)
    off_grid = restated(held, bres is not None, off_grid)  # the tree release's, if any
    if method.sorted_after:
        distinct = np.sort(np.asarray(distinct), kind="stable")
    if the_bounds is None:  # the lattice: answers inside a public side, the ends reported
        sides = req.request or (None, None)  # private bounds: a request, never None
        distinct, the_bounds, beyond = within_public_side(distinct, sides, req.bins == "integers")
        off_grid = off_grid or beyond
    if off_grid is not None:  # post-processing of released values: a warning costs nothing
        warn_user(off_grid, BoundsWarning)
    parts.append(method_record)
    spent += Fraction(guarantee_eps)
    out = np.asarray(distinct)[np.reshape(where, -1)]
    result = _result(
        req, steps, out, chosen, the_bounds, parts, spent, grid_points, off_grid, n_released, source
    )
    return replace(result, bounds_collapsed=collapsed, shrinkage=kept)


def _bounds_step(
    values: Any,
    read: tuple[np.ndarray, str | None],
    req: QuantilesRequest,
    chosen: str,
    source: RandomSource,
) -> tuple[tuple[Any, Any], float, Any]:
    """The private bounds: found with the share, the budget left, the bounds' result."""
    assert req.request is not None
    data, unit = read  # read once, before the charge
    if unit is not None:  # datetimes: the scans on the public day grid
        return _datetime_bounds_step(data, unit, req, source)
    found, eps_rest, bres = split_private_bounds(
        values,
        epsilon=req.eps,
        share=req.share,
        integers=req.bins == "integers",
        neighbours=req.relation,
        nan=req.nan,
        rng=source,
        lower=req.request[0],
        upper=req.request[1],
        max_bins=None,  # cut by run_steps, for the tree only: the other methods use no bins
    )
    the_bounds: tuple[Any, Any] = found
    if req.bins == "integers" and QUANTILE_METHODS[chosen].integer_mode:  # the mode's range
        the_bounds = inside_integer_limit(found)  # post-processing of released bounds
    return the_bounds, eps_rest, bres


def _datetime_bounds_step(
    ticks: np.ndarray, unit: str, req: QuantilesRequest, source: RandomSource
) -> tuple[tuple[Any, Any], float, Any]:
    """Private bounds of datetimes (:mod:`treedp.value_methods.datetime_bounds`): the ticks
    floored to whole seconds (``x < c`` and ``x >= c`` are unchanged for whole-second ``c``),
    counted on the day grid; the bounds as naive ``datetime64[us]`` on the data's timeline."""
    from treedp.value_methods.datetime_bounds import DayCounts, split_datetime_bounds

    seconds = ticks.astype(f"datetime64[{unit}]").astype("datetime64[s]").view(np.int64)
    bres, rest = split_datetime_bounds(
        DayCounts.from_seconds(seconds),
        epsilon=req.eps,
        share=req.share,
        neighbours=req.relation,
        rng=source,
    )
    lo, hi = (np.datetime64(int(v) * 1_000_000, "us") for v in bres.value)
    return (lo, hi), rest, bres


def _count_record(req: QuantilesRequest, scale: Any, count_spent: float) -> SpendRecord:
    return SpendRecord(
        mechanism=COUNT_CONTRACT.name,
        measure=PureDP(count_spent),
        neighbours=req.relation,
        unit="record",
        parameters={
            "epsilon": req.eps * req.count_share,
            "n_share": req.count_share,
            "sensitivity": 1,
            "scale": str(scale),
        },
    )


def _result(
    req: QuantilesRequest,
    steps: Steps,
    out: np.ndarray,
    chosen: str,
    the_bounds: tuple[Any, Any],
    parts: list[SpendRecord],
    spent: Fraction,
    grid_points: int,
    off_grid: str | None,
    n_released: int | None,
    source: RandomSource,
) -> QuantilesResult:
    bounds = req.bounds
    private = req.request is not None
    guarantee: Any = PureDP(float_up(spent))
    if req.privacy is not None:  # one part (no bounds step, no count): its measure
        guarantee = parts[-1].measure
    return QuantilesResult(
        value=out[0] if req.scalar else out,
        guarantee=guarantee,
        neighbours=req.relation,
        mechanism=f"quantiles[{chosen}]",
        epsilon=req.eps,
        sensitivity=(),
        parameters={
            "epsilon": req.eps,
            "q": tuple(float(v) for v in req.qa),
            "bounds": (bounds if isinstance(bounds, str) else tuple(bounds))
            if private
            else the_bounds,
            "bins": req.bins,
            **({"integer_mode": req.integer_mode} if req.integer_mode is not None else {}),
            "method": req.method,
            "nan": req.nan,
            **({"n": "private", "n_share": req.count_share} if req.private_n else {}),
            **({"privacy": req.privacy.describe()} if req.privacy is not None else {}),
        },
        randomness=describe(source),
        q=req.qa,
        grid_points=grid_points,
        method=chosen,
        bounds=the_bounds,
        parts=tuple(parts),
        bounds_warning=off_grid,
        n_source=steps.n_source,
        n_released=n_released,
        integer_mode=req.integer_mode,
    )


def record(
    chosen: str,
    eps: Any,
    relation: str,
    qa: np.ndarray,
    bounds: Any,
    count_share: float,
    gate_share: float = 0.0,
    instead: tuple[str | None, str | None] = (None, None),
) -> SpendRecord:
    """The one record charged for a call: the whole ε (bounds, count, gate and quantiles), or
    the whole target (a measure). ``gate_share``: the share of the rest after the count that
    the concentration gate spends if the count picks the tree (0: no gate planned);
    ``instead``: the methods run instead of the tree if the bounds step collapses
    (``if_bounds_collapse``) and if its integer bounds call for another method
    (:data:`~treedp.quantiles_fallback.FOUND_RANGE_KEYS`): plans, charged before the scans run."""
    charged: dict[str, Any] = {
        "q": tuple(float(v) for v in qa),
        "bounds": bounds if isinstance(bounds, str) else str(tuple(bounds)),
    }
    if count_share:
        charged.update({"n": "private", "n_share": count_share})
    if gate_share:
        charged["gate_share"] = gate_share
    if instead[0] is not None:
        charged["if_bounds_collapse"] = instead[0]
    if instead[1] is not None:
        charged[FOUND_RANGE_KEYS[instead[1]]] = instead[1]
    return SpendRecord(
        mechanism=f"quantiles[{chosen}]",
        measure=eps if isinstance(eps, PureDP | ZCDP | ApproxDP) else PureDP(eps),
        neighbours=relation,
        unit="record",
        parameters=charged,
    )
