"""``release_grouped``: one tree per public key, in one call, for a privacy unit.

:func:`treedp.release_cdf` forwards here when ``by`` or ``privacy_unit`` is given.

Order of work: every parameter is validated (and the column names looked up in the table's
schema) before any value is read; then records with a missing value or key are refused or
dropped (``nan``), records whose key is not public are dropped, the rows of each person beyond
the bounds are dropped by uniform random sampling (:mod:`treedp.privacy.contribution`), the
kept rows are counted into a ``(G × B)`` matrix (:mod:`treedp.engines.grouped`), and each row of
it is released as a tree by one mechanism planned once for the common bins.

Privacy. Let ``Δ`` be the L1 change of one level vector over all groups when one person is
added or removed (``min(m, g·c)``; twice that for ``replace``). The mechanism is the record-
level tree at ``ε' = ε/Δ`` (rounded down so ``Δ·ε' <= ε`` exactly): level ``l`` of every group
gets discrete Laplace noise of scale ``t_l >= 1/ε'_l``, so the concatenated level vector over all
groups, whose L1 change is at most ``Δ``, costs ``Δ/t_l``; summed over levels ``Δ·ε' <= ε``.
Disjoint groups compose in parallel (``g = 1``: ``Δ = min(c, m)``), and a person in several
groups is paid for by the sum over at most ``g`` of them. A key with no records is released like
any other key (noise only); a key absent from the list is dropped; the output's shape is the
public key list, so the presence or absence of a key in the data is not visible.

Private key selection (``keys=None``, ``delta`` given) is
:mod:`treedp.mechanisms.key_selection` (its guarantee and derivation are there); the trees then
use ``ε − ε_s`` and the whole release is ``(ε, δ)``-DP under the stated relation.

Selection runs on every engine: the engine computes the pre-noise count of each key present
(:class:`treedp.engines.grouped.KeyCounts`; in memory, on files, in Spark, on Dask) and only the
``(key, count)`` pairs reach the driver, which noises and thresholds them
(:func:`choose_keys`); the release then runs on the selected keys in a second pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
from numpy.typing import NDArray

from treedp import grouped_columns as columns
from treedp._aliases import accepts_aliases
from treedp._inputs import as_1d_array
from treedp.domain import NanPolicy
from treedp.engines.dispatch import pick_engine
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    column_array,
    count_bounded,
    count_keys,
)
from treedp.engines.sql.source import sql_input
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.key_selection import (
    choose_keys,
    selection_delta_factor,
    selection_sensitivity,
    selection_threshold,
)
from treedp.noise import RandomSource
from treedp.noise.rng import resolve_source
from treedp.options import MechanismOptions, PrivacyUnit
from treedp.planning import Plan, PlanCache
from treedp.privacy.accountant import Accountant
from treedp.privacy.auto_bound import AutoBound
from treedp.privacy.contribution import ContributionBounds
from treedp.privacy.measures import Measure
from treedp.query import build_query
from treedp.release import Release
from treedp.release.grouped import GroupedRelease
from treedp.release.queries import ArrayPoints
from treedp.run import run

__all__ = [
    "choose_keys",
    "grouped_counts",
    "release_grouped",
    "selection_counts",
    "selection_delta_factor",
    "selection_sensitivity",
    "selection_threshold",
]


@overload
def release_grouped(
    data: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    column: str | None = None,
    by: None = None,
    keys: Sequence[Any] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | str | AutoBound | None = None,
    max_groups: int | None = None,
    max_contributions_per_group: int | str | AutoBound | None = None,
    delta: float | None = None,
    selection_epsilon: float | None = None,
    neighbours: str = "add_remove",
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    bounds: tuple[Any, Any] | None = None,
    bins: int | str | Any = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
) -> Release: ...


@overload
def release_grouped(
    data: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    column: str | None = None,
    by: str | Sequence[Any] | NDArray[Any] | ArrayPoints,
    keys: Sequence[Any] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | str | AutoBound | None = None,
    max_groups: int | None = None,
    max_contributions_per_group: int | str | AutoBound | None = None,
    delta: float | None = None,
    selection_epsilon: float | None = None,
    neighbours: str = "add_remove",
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    bounds: tuple[Any, Any] | None = None,
    bins: int | str | Any = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
) -> GroupedRelease: ...


@accepts_aliases
def release_grouped(
    data: Any,
    sql: str | None = None,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    column: str | None = None,
    by: Any = None,
    keys: Sequence[Any] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | str | AutoBound | None = None,
    max_groups: int | None = None,
    max_contributions_per_group: int | str | AutoBound | None = None,
    delta: float | None = None,
    selection_epsilon: float | None = None,
    neighbours: str = "add_remove",
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    bounds: tuple[Any, Any] | None = None,
    bins: int | str | Any = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | PlanCache | bool | None = None,
    postprocess: str = "monotone",
    integer: bool = False,
) -> GroupedRelease | Release:
    """Release the distribution of ``column`` per public key of ``by``, for a privacy unit.

    Parameters
    ----------
    data : DataFrame, mapping of columns, table, files, or array-like
        A table of any engine (pandas / polars DataFrame, pyarrow Table, mapping of columns,
        files or :class:`treedp.FileSource`, Spark or Dask DataFrame): ``column``, ``by`` and
        ``privacy_unit`` name its columns, checked before any value is read. Or the value
        column itself, with ``by`` a key array (a tuple of them) and ``privacy_unit`` ids.
    epsilon, privacy : float, or ZCDP, ApproxDP or PureDP, optional
        The pure-DP budget for the privacy unit, or a target guarantee instead (Gaussian noise
        at ``rho / L2²``; needs public ``keys``).
    column : str, optional
        The value column (required for a table).
    by : str, sequence of str, array or tuple of arrays, optional
        The group-by column(s). Without ``by`` (with a ``privacy_unit``) there is one
        distribution: the result is a :class:`treedp.Release` whose guarantee is the
        person's (:attr:`Release.unit`), as from ``release_cdf(privacy_unit=...)``.
    keys : sequence, optional
        The public keys (scalars, or tuples for several ``by``): records of other keys are
        dropped, listed keys without records released as noise. None: selected privately.
    privacy_unit : str, array or PrivacyUnit, optional
        The person-id column (or the ids), or a :class:`treedp.PrivacyUnit` holding it with
        the bounds below. Without it, one row is one person.
    max_contributions, max_groups, max_contributions_per_group : int, optional
        Per-person bounds (:mod:`treedp.privacy.contribution`): rows kept overall, groups
        contributed to, rows kept per group; with a ``privacy_unit``, ``max_contributions`` or
        both group bounds. ``"auto"`` (or a :class:`treedp.AutoBound`) chooses
        ``max_contributions`` privately with 10% of ε or ρ (public keys, in-memory tables;
        :mod:`treedp.privacy.auto_bound`); ``max_contributions_per_group="auto"`` with a
        fixed ``max_groups`` chooses the rows kept per person and key the same way;
        :func:`treedp.predict_error` gives a fixed one's error.
    delta, selection_epsilon : float, optional
        Private key selection: the δ of the ``(ε, δ)`` guarantee, the ε spent on it (half).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        Add or remove one person with all their rows, or replace them (sizes stay private).
    nan : {"error", "drop"}, default="error"
        Missing values, keys or person ids: refused, or the records dropped.
    sql, rng, accountant, bounds, bins, mechanism, plan, postprocess, integer
        As for :func:`treedp.release_cdf` (public bounds; plans for ``epsilon / Δ``).

    Returns
    -------
    GroupedRelease
        (a :class:`Release` without ``by``). Refusals (``InvalidParameterError``,
        ``InvalidTypeError``, ``DataError``) come before any value is read and hold no data.
    """
    unit = _unit(privacy_unit, max_contributions, max_groups, max_contributions_per_group)
    if by is None and unit is None:
        raise InvalidParameterError("release_grouped needs 'by', a 'privacy_unit', or both.")
    query = build_query(
        sql_input(data, sql),  # a connection and its query: one SqlSource
        epsilon=epsilon,
        privacy=privacy,
        column=column,
        by=by,
        keys=keys,
        privacy_unit=unit,
        delta=delta,
        selection_epsilon=selection_epsilon,
        neighbours=neighbours,
        nan=nan,
        rng=rng,
        accountant=accountant,
        bounds=bounds,
        bins=bins,
        mechanism=mechanism,
        plan=plan,
        postprocess=postprocess,
        integer=integer,
    )
    return run(query)  # type: ignore[return-value]


def _unit(unit: Any, *limits: Any) -> PrivacyUnit | None:
    """The privacy unit: a :class:`PrivacyUnit`, or the column and its bounds given flat."""
    if isinstance(unit, PrivacyUnit):
        if any(limit is not None for limit in limits):
            raise InvalidParameterError(
                "Give the contribution bounds once: in treedp.PrivacyUnit(...) or as "
                "'max_contributions' / 'max_groups' / 'max_contributions_per_group'."
            )
        return unit
    if unit is None:
        ContributionBounds.from_parameters(None, *limits)  # bounds without a unit: refused
        return None
    return PrivacyUnit(unit, *limits)


def grouped_counts(data: Any, job: GroupedJob, rng: RandomSource | None = None) -> GroupedCounts:
    """The bounded ``(G × B)`` counts of a table on its engine, before any noise.

    ``data`` is a table of any engine (mapping of columns, pandas / polars DataFrame, pyarrow
    Table, file input, Spark or Dask DataFrame); ``job`` names its columns. This is what
    :func:`release_grouped` noises; it is exposed for the conformance of the engines and is
    not private (never publish its output).
    """
    source = resolve_source(rng)
    engine = pick_engine(data)
    if engine.grouped is not None:
        return engine.grouped(data, job, source)
    return count_bounded(*_memory_columns(data, job), job, source)


def _memory_columns(
    data: Any, job: GroupedJob
) -> tuple[np.ndarray, list[np.ndarray], np.ndarray | None]:
    """The value, ``by`` and person-id columns of an in-memory table (names checked first)."""
    names = columns.table_schema(data) or []
    for name in job.columns:
        columns.check_name(names, name, "column")
    values = as_1d_array(columns.fetch(data, job.column), "values")
    by = [column_array(columns.fetch(data, b), b) for b in job.by]
    person = (
        None if job.unit is None else column_array(columns.fetch(data, job.unit), "privacy_unit")
    )
    return values, by, person


def selection_counts(data: Any, job: GroupedJob, rng: RandomSource | None = None) -> KeyCounts:
    """The selection counts of a table on its engine, before any noise (``job.keys`` unused).

    The per-key counts of distinct bounded persons (or rows without a privacy unit) that
    :func:`release_grouped` noises and thresholds when it selects keys privately; exposed for
    the conformance of the engines and not private (never publish its output).
    """
    source = resolve_source(rng)
    engine = pick_engine(data)
    if engine.key_counts is not None:
        return engine.key_counts(data, job, source)
    return KeyCounts.merge([count_keys(*_memory_columns(data, job), job, source)])
