"""One validated query: what every release call builds, before any value is read.

:func:`build_query` turns the keywords of :func:`treedp.release_cdf`,
:func:`treedp.release_grouped`, :func:`treedp.release_counts`, :func:`treedp.quantiles` and
:func:`treedp.median` into one frozen :class:`Query`: the privacy (budget, relation, unit and
contribution bounds), the domain (public bins, or a request for private bounds and their
share), the strategy (a validated :class:`~treedp.spec.ReleaseSpec` and its plan, or the
quantile request of :mod:`treedp.quantile_query`), the output options and the source. Every
public rule is checked here, once; :func:`treedp.run.run` then runs the query and checks only
what needs the data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from treedp import grouped_columns as columns
from treedp._aliases import accepts_aliases
from treedp._validation import must
from treedp.budget import check_epsilon, check_neighbours, rest_below
from treedp.domain import Bins, public_bins
from treedp.engines.dispatch import check_local_engine, pick_engine
from treedp.engines.progress import wants_progress
from treedp.engines.schema import integer_typed
from treedp.exceptions import InvalidParameterError
from treedp.found_bounds import split_found
from treedp.grouped_checks import (
    check_key_types,
    grouped_budget,
    key_plan,
    refuse_unless_per_group,
)
from treedp.noise import RandomSource
from treedp.noise.rng import check_source
from treedp.options import MechanismOptions, PrivacyUnit, PrivateBounds
from treedp.planning import Plan, PlanCache
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.auto_bound import AutoBound, auto_limits, auto_split
from treedp.privacy.contribution import ContributionBounds, scaled_budget
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP
from treedp.quantile_query import QuantilesRequest, quantiles_request, typed_bins
from treedp.query_args import (
    is_edges,
    mechanism_options,
    plan_and_cache,
    privacy_unit_of,
    private_bounds_of,
)
from treedp.spec import ReleaseSpec, make_spec
from treedp.timezones import UNKNOWN, check_agrees, data_zone, quantile_bounds

__all__ = ["Grouping", "Query", "approx_target", "build_query"]


@dataclass(frozen=True)
class Grouping:
    """The per-person part of a query: keys, the privacy unit and its bounds, the budget split.

    ``keys`` None means private key selection with ``selection_epsilon`` and ``delta``; one
    key ``()`` without ``by`` is a per-person release of one distribution. ``epsilon`` and
    ``rho`` are the person-level budgets (one of them set); the query's spec holds the
    record-level mechanism at ``epsilon / Δ`` (or ``rho / L2²``). ``auto``: the settings of
    the bound named ``auto_name`` chosen privately when the query runs (``bounds`` holds 1 in
    its place until then, and the spec the budget left after the choice's share).
    """

    value: Any
    by: tuple[str, ...]
    by_columns: tuple[Any, ...]
    unit: str | None
    unit_column: Any
    bounds: ContributionBounds
    keys: tuple[Any, ...] | None
    selection_epsilon: float
    delta: float | None
    neighbours: str
    epsilon: float | None
    rho: float | None
    privacy: Measure | None
    auto: AutoBound | None = None
    auto_name: str | None = None


@dataclass(frozen=True)
class Query:
    """A release request, validated: nothing in it is read from the data.

    Attributes
    ----------
    data : object
        The source: a column, table, files or cluster DataFrame (any engine of
        :data:`treedp.engines.dispatch.ENGINES`), or bin counts (``counts=True``).
    column : str or None
        The value column of a table.
    spec : ReleaseSpec or None
        The record-level mechanism's public parameters (with private bounds: on stand-in
        bins of the same number, and the budget left after the bounds); None for a quantile
        query, whose method and bins are chosen when it runs (from public parameters and a
        public or privately counted ``n``).
    bins : Bins or None
        The public bins; None when they come from the private-bounds stage.
    private_bounds : PrivateBounds or None
        The private-bounds request (``bins_request`` is then the number of bins or
        ``"integers"``).
    grouping : Grouping or None
        None: one row is one person and there is one distribution.
    timezone : str or None
        The zone of a quantile query's answers (its bounds are then UTC instants).
    quantiles : QuantilesRequest or None
        A quantile query's levels, method and ``n`` policy; None for a release.
    found : dict or None
        The record of bounds found beforehand (``bounds=`` a ``BoundsResult``:
        :func:`treedp.found_bounds.split_found`), kept by the release.
    """

    data: Any
    column: str | None
    spec: ReleaseSpec | None
    bins: Bins | None
    plan: Plan | None
    plan_cache: PlanCache | bool | None
    rng: RandomSource
    accountant: Accountant | None
    counts: bool = False
    private_bounds: PrivateBounds | None = None
    bins_request: Any = None
    total_epsilon: float | None = None
    grouping: Grouping | None = None
    progress: bool | None = None
    engine: Any = None
    quantiles: QuantilesRequest | None = None
    timezone: str | None = None
    found: dict[str, Any] | None = None

    @property
    def release_spec(self) -> ReleaseSpec:
        """The spec of a release query (every query but a quantile one has one)."""
        if self.spec is None:
            raise TypeError("a quantile query has no release spec")  # pragma: no cover
        return self.spec

    @property
    def epsilon(self) -> float | None:
        """The total pure budget asked for (person-level for a grouped query; with private
        bounds, the bounds' share included)."""
        if self.grouping is not None:
            return self.grouping.epsilon
        if self.total_epsilon is not None or self.spec is None:
            return self.total_epsilon
        return self.spec.epsilon


@accepts_aliases
def build_query(
    values: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    bounds: Any = None,
    bins: Any = None,
    edges: Any = None,
    neighbours: str = "add_remove",
    n: int | str | None = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
    nan: str = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    column: str | None = None,
    privacy_unit: Any = None,
    progress: bool | None = None,
    engine: Any = None,
    by: Any = None,
    keys: Any = None,
    delta: float | None = None,
    selection_epsilon: float | None = None,
    counts: bool = False,
    quantiles: Any = None,
    n_share: float | None = None,
) -> Query:
    """Check every public parameter of a release, once, and freeze them (no value is read).

    The keywords are those of :func:`treedp.release_cdf` and :func:`treedp.release_grouped`
    (``bins`` also a :class:`Bins` or edges; ``plan`` a :class:`PlanCache` or False);
    ``quantiles=q``: quantiles at levels ``q``, as :func:`treedp.quantiles` (``mechanism``
    the quantile method).

    Returns
    -------
    Query
        Run it with :func:`treedp.run_query`; a refusal names the argument and what is allowed.
    """
    check_accountant(accountant, unit="record" if privacy_unit is None else None)  # read nothing
    if quantiles is not None:
        extras = {
            "edges": edges, "plan": plan, "privacy_unit": privacy_unit,
            "progress": progress, "engine": engine, "by": by, "keys": keys, "delta": delta,
            "selection_epsilon": selection_epsilon,
            "postprocess": None if postprocess == "monotone" else postprocess,
            "integer": integer or None, "counts": counts or None,
        }  # fmt: skip
        request = (quantiles, epsilon, mechanism, bins, bounds, n, n_share, neighbours, nan)
        return _quantile_query(values, column, request, extras, privacy, rng, accountant)
    if n_share is not None:
        raise InvalidParameterError(
            "The 'n_share' parameter applies only to a quantile query with n='private'."
        )
    wants_progress(progress)  # its type
    if engine is not None:
        check_local_engine(engine, values)
        progress = engine.progress if progress is None else progress
    options = mechanism_options(mechanism)
    (the_plan, cache), (bounds, found) = plan_and_cache(plan), split_found(bounds)
    private = private_bounds_of(bounds)
    if isinstance(bins, Bins) or is_edges(bins):
        if edges is not None:
            raise InvalidParameterError("Give the bins once: 'bins' as edges, or 'edges'.")
        bins, edges = (None, bins) if not isinstance(bins, Bins) else (bins, None)
    common: dict[str, Any] = {
        "data": values,
        "column": column,
        "plan": the_plan,
        "plan_cache": cache,
        "rng": check_source(rng),
        "accountant": accountant,
        "counts": counts,
    }
    unit = privacy_unit_of(privacy_unit)
    if by is not None or unit is not None:
        if (private, found, n, engine, progress) != (None,) * 5:
            _refuse_for_people(private or found, cast(int | None, n))
        refuse_unless_per_group(options.name)
        grouping, spec_budget = _grouping(
            values, column, by, keys, unit, (epsilon, privacy), delta, selection_epsilon, neighbours
        )
        the_bins = zoned_bins(values, column, bins, bounds, edges)
        spec = _spec(the_bins, spec_budget, "add_remove", None, options, postprocess, integer, nan)
        return Query(spec=spec, bins=the_bins, grouping=grouping, **common)
    if (keys, delta, selection_epsilon) != (None, None, None):
        raise InvalidParameterError(
            "The 'keys', 'delta' and 'selection_epsilon' parameters belong to a group-by "
            "release: give 'by' (treedp.release_grouped)."
        )
    common.update(progress=progress, engine=engine, found=found)
    output = (options, postprocess, integer, nan)
    domain = (private, bins, bounds, edges)
    return _distribution_query(domain, (epsilon, privacy), neighbours, n, output, common)


def _distribution_query(
    domain: tuple[PrivateBounds | None, Any, Any, Any],
    budget: tuple[float | None, Measure | None],
    neighbours: str,
    n: Any,
    output: tuple[MechanismOptions, str, bool, str],
    common: dict[str, Any],
) -> Query:
    """A query for one distribution of one row per record: public or private bounds."""
    private, bins, bounds, edges = domain
    n = cast(int | None, n)  # the spec refuses a str (n="private" is for quantiles)
    if private is None:
        the_bins = zoned_bins(
            common["data"], common["column"], bins, bounds, edges, common["counts"]
        )
        spec = _spec(the_bins, budget, neighbours, n, *output)
        spec.require_n()  # a release (not a plan) needs the public n under replace
        return Query(spec=spec, bins=the_bins, **common)
    has_plan = common["plan"] is not None
    spec = _private_spec(private, bins, edges, budget, neighbours, n, *output, has_plan)
    spec.require_n()
    return Query(
        spec=spec,
        bins=None,
        private_bounds=private,
        bins_request=bins,
        total_epsilon=check_epsilon(budget[0]),
        **common,
    )


def _quantile_domain(
    values: Any, column: str | None, bins: Any, bounds: Any
) -> tuple[Any, Any, str | None, str | None]:
    """A quantile query's bins and bounds (on the UTC timeline), the zone of its answers and
    its integer mode: without bins, integers for an integer column type (the schema, never
    the values; :func:`treedp.quantile_query.typed_bins`)."""
    bounds, zone = quantile_bounds(values, column, bounds)
    bins, bounds, mode = typed_bins(bins, bounds, lambda: integer_typed(values, column))
    return bins, bounds, zone, mode


def _quantile_query(
    values: Any,
    column: str | None,
    request: tuple[Any, ...],
    extras: dict[str, Any],
    privacy: Measure | None,
    rng: RandomSource | None,
    accountant: Accountant | None,
) -> Query:
    """A quantile query: no spec (the method and bins are chosen when it runs). ``request``:
    the levels, epsilon, method, bins, bounds, n, n_share, neighbours and nan as given;
    ``extras``: the release keywords a quantile query refuses when given."""
    q, epsilon, method, bins, bounds, n, n_share, neighbours, nan = request
    bins, bounds, zone, mode = _quantile_domain(values, column, bins, bounds)
    checked = quantiles_request(
        q, epsilon, method, bins, bounds, n, n_share, neighbours, nan, extras, privacy, mode
    )
    return Query(
        data=values,
        column=column,
        spec=None,
        bins=None,
        plan=None,
        plan_cache=None,
        rng=check_source(rng),
        accountant=accountant,
        total_epsilon=checked.eps,
        quantiles=checked,
        timezone=zone,
    )


def _refuse_for_people(private: PrivateBounds | dict[str, Any] | None, n: int | None) -> None:
    """What a per-person or group-by release does not take (``private``: private bounds, or
    the record of bounds found by treedp.private_bounds)."""
    if private is not None:
        raise InvalidParameterError(
            "Private bounds are not available for a per-person or group-by release (with "
            "'by' or 'privacy_unit'): give public bounds=(lo, hi) for all groups."
        )
    if n is not None:
        raise InvalidParameterError(
            "The 'n' parameter is not taken by a per-person or group-by release: group "
            "sizes stay private."
        )
    raise InvalidParameterError(
        "The 'engine' and 'progress' parameters are not taken by a per-person or group-by release."
    )


def _spec(
    the_bins: Bins,
    budget: tuple[float | None, Measure | None],
    neighbours: str,
    n: int | None,
    options: MechanismOptions,
    postprocess: str,
    integer: bool,
    nan: str,
) -> ReleaseSpec:
    return make_spec(
        the_bins,
        budget[0],
        neighbours,  # type: ignore[arg-type]
        n,
        options.name,
        options.branching,
        options.level_budgets,
        options.estimator,
        postprocess,
        integer,
        nan=nan,
        privacy=budget[1],
    )


def _private_spec(
    private: PrivateBounds,
    bins: Any,
    edges: Any,
    budget: tuple[float | None, Measure | None],
    neighbours: str,
    n: int | None,
    options: MechanismOptions,
    postprocess: str,
    integer: bool,
    nan: str,
    has_plan: bool = False,
) -> ReleaseSpec:
    """The stand-in spec of a private-bounds release: the same number of bins, on ``(0, 1)``,
    with the budget the release will have after the bounds (public)."""
    from treedp.value_methods.bounds_split import remaining_epsilon
    from treedp.value_methods.private_bounds import check_known_bound

    epsilon, privacy = budget
    if edges is not None:
        raise InvalidParameterError("bounds='private' cannot be combined with explicit edges.")
    if epsilon is None or privacy is not None:
        raise InvalidParameterError(
            "bounds='private' takes 'epsilon' (pure DP): find the bounds with "
            "treedp.private_bounds, then pass its result as bounds= with the other budget."
        )
    if bins is None:
        raise InvalidParameterError(
            "bounds='private' needs 'bins' (a number of equal-width bins, or "
            "bins='integers'): the range is found privately, the bins stay public."
        )
    if private.max_bins is not None and bins != "integers":
        raise InvalidParameterError(
            "treedp.PrivateBounds(max_bins=...) is for bins='integers' (the most bins of a "
            "found integer range); with a number of bins it would be ignored."
        )
    if bins == "integers" and (
        options.level_budgets is not None or isinstance(options.branching, tuple) or has_plan
    ):
        raise InvalidParameterError(
            "bounds='private' with bins='integers' cannot take 'level_budgets', per-level "
            "'branching' or a 'plan': the number of bins, hence of levels, comes with the "
            "bounds."
        )
    known = check_known_bound(private.lower, private.upper, bins == "integers", "bounds")
    nb, _ = check_neighbours(neighbours, n, require_n=False)
    rest = remaining_epsilon(epsilon, private.share, nb, known is not None)
    stand_in = public_bins((0, 1), bins, None)
    return _spec(stand_in, (rest, None), nb, n, options, postprocess, integer, nan)


def _grouping(
    data: Any,
    column: Any,
    by: Any,
    keys: Any,
    unit: PrivacyUnit | None,
    budget: tuple[float | None, Measure | None],
    delta: float | None,
    selection_epsilon: float | None,
    neighbours: str,
) -> tuple[Grouping, tuple[float | None, Measure | None]]:
    """The per-person part (its column names checked against the table's schema, no value
    read), and the record-level budget of its mechanism."""
    epsilon, rho = grouped_budget(*budget)
    if neighbours not in ("add_remove", "replace"):
        raise InvalidParameterError(
            must("neighbours", f"be 'add_remove' or 'replace'. Got {neighbours!r}.")
        )
    names = columns.table_schema(data)  # read once (a file's header or schema)
    value = columns.value_column(data, column, names)
    by_names, by_cols = columns.by_columns(by, names)
    unit_name, unit_col = columns.unit_column(None if unit is None else unit.column, names)
    if not by_cols and unit_col is None:
        raise InvalidParameterError(
            "A per-person or group-by release needs 'by' columns, a 'privacy_unit' column, or both."
        )
    limits = (
        (None, None, None)
        if unit is None
        else (unit.max_contributions, unit.max_groups, unit.max_contributions_per_group)
    )
    # "auto": the bound is chosen when the query runs; 1 stands in until then
    auto, auto_name, limits = auto_limits(
        limits, grouped=by_cols != [], private_keys=keys is None and by_cols != []
    )
    engine = pick_engine(data)
    if auto is not None and engine.grouped is not None and not engine.auto_bound:
        raise InvalidParameterError(
            f"{auto_name}='auto' is for in-memory tables, columns and files (Parquet, CSV, "
            f"Arrow); give {engine.name} data a fixed bound (treedp plan with "
            "--max-contributions shows each choice's error before any data is read)."
        )
    bounds = ContributionBounds.from_parameters(unit_name, *limits, grouped=by_cols != [])
    if rho is not None and keys is None and by_cols:
        raise InvalidParameterError(
            "Gaussian noise (privacy=ZCDP or ApproxDP) needs the public 'keys' (private key "
            "selection is for pure epsilon)."
        )
    if not by_cols and (delta is not None or selection_epsilon is not None):
        raise InvalidParameterError(
            "The 'delta' and 'selection_epsilon' parameters are for private key selection, "
            "which needs 'by'; without it the release is pure epsilon-DP."
        )
    the_keys, eps_sel, delta = key_plan(keys, len(by_cols), delta, selection_epsilon, epsilon)
    check_key_types(data, by_names, by_cols, the_keys)  # from the schema, no value read
    factor, _ = bounds.sensitivity(neighbours)
    record_level: tuple[float | None, Measure | None]
    if rho is None:
        assert epsilon is not None
        rest = rest_below(epsilon, eps_sel) if auto is None else auto_split(epsilon, auto.share)[1]
        record_level = (scaled_budget(rest, factor), None)
    else:
        rest = rho if auto is None else auto_split(rho, auto.share)[1]
        record_level = (None, ZCDP(scaled_budget(rest, bounds.l2_squared(neighbours))))
    grouping = Grouping(
        value=value,
        by=tuple(by_names),
        by_columns=tuple(by_cols),
        unit=unit_name,
        unit_column=unit_col,
        bounds=bounds,
        keys=the_keys,
        selection_epsilon=eps_sel,
        delta=delta,
        neighbours=neighbours,
        epsilon=epsilon,
        rho=rho,
        privacy=budget[1],
        auto=auto,
        auto_name=auto_name,
    )
    return grouping, record_level


def charged_measure(grouping: Grouping) -> Measure:
    """The person-level guarantee a grouped query charges (the target, before rounding)."""
    if grouping.rho is not None:
        return ZCDP(grouping.rho)
    assert grouping.epsilon is not None
    if grouping.delta is None:
        return PureDP(grouping.epsilon)
    return ApproxDP(grouping.epsilon, grouping.delta)


def zoned_bins(
    values: Any, column: Any, bins: Any, bounds: Any, edges: Any, counts: bool = False
) -> Bins:
    """The public bins, datetime bins in the data's time zone (from its type), checked
    against it (:mod:`treedp.timezones`)."""
    zone = UNKNOWN if counts else data_zone(values, column)  # counts made elsewhere: no values
    the_bins = bins if isinstance(bins, Bins) else public_bins(bounds, bins, edges, zone)
    check_agrees(zone, the_bins)
    return the_bins


def approx_target(privacy: Measure | None) -> dict[str, float] | None:
    """The ``(epsilon, delta)`` target of ``privacy=ApproxDP(...)``, kept on the release."""
    if isinstance(privacy, ApproxDP):
        return {"epsilon": float(privacy.epsilon), "delta": float(privacy.delta)}
    return None
