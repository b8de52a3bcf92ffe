"""The read-and-count stage of a per-person or group-by query, and its one charge.

:func:`run_grouped` runs a :class:`~treedp.query.Query` with a
:class:`~treedp.query.Grouping`: an engine that counts tables itself (files, Spark, Dask: the
engine table's ``grouped`` and ``key_counts``) bounds and counts there; an in-memory table or
column is read here. Records with a missing value, key or person id are refused or dropped
(``nan``), records whose key is not public are dropped, each person's rows beyond the bounds
are dropped by uniform random sampling (:mod:`treedp.privacy.contribution`), and the kept rows
are counted into a ``(G × B)`` matrix. With private key selection the selection counts are read
first. The whole query is charged once, after the data were read (and, with public keys,
counted and checked against the mechanism's domain) and before any noise.

Where an engine tells persons apart by a keyed 128-bit hash (text ids on files: the engine's
``person_hash``, decided from the input kind and schema before the charge, never from values),
the charge's parameters carry ``collision_delta_per_person`` and the release states
:data:`~treedp.privacy.collision.COLLISION` (its guarantee plus ``δ <= (n - 1)·2**-128``).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any, cast

import numpy as np

from treedp import grouped_columns as columns
from treedp._codes import encoded_column, factorize_column
from treedp._inputs import as_1d_array
from treedp._validation import warn_user
from treedp._version import __version__
from treedp.config import configure
from treedp.domain import NanPolicy
from treedp.engines.dispatch import pick_engine
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    bin_index,
    column_array,
    encode_keys,
    key_counts,
)
from treedp.exceptions import BoundsWarning, DataError, InvalidParameterError
from treedp.grouped_auto import (
    Chosen,
    auto_of,
    auto_target,
    bound_record,
    choose_auto,
    engine_pass,
    key_top,
    person_unit,
    with_bound,
)
from treedp.mechanisms.key_selection import choose_keys
from treedp.noise import RandomSource
from treedp.noise.families import float_at_least
from treedp.privacy.collision import COLLISION, COLLISION_DELTA
from treedp.privacy.contribution import ContributionBounds, bound_contributions
from treedp.privacy.measures import ZCDP, ApproxDP, PureDP
from treedp.privacy.spend import SpendRecord
from treedp.query import Grouping, Query, approx_target, charged_measure
from treedp.release import Release
from treedp.release.grouped import GroupedRelease
from treedp.release.record import handed_over

__all__ = ["release_grouped_counts", "run_grouped"]


def run_grouped(query: Query) -> Any:
    """Read, count, charge once, noise and wrap a per-person or group-by query."""
    grouping, spec = query.grouping, query.release_spec
    assert grouping is not None and query.bins is not None
    mech, est = configure(spec, plan=query.plan, plan_cache=query.plan_cache)
    hashed = _ids_hashed(query.data, grouping)
    charge = SpendRecord(
        mechanism=f"grouped_{mech.name}" if grouping.by else f"person_{mech.name}",
        measure=charged_measure(grouping),
        neighbours=grouping.neighbours,
        unit=grouping.bounds.unit_label,
        parameters={
            "n_bins": query.bins.n_bins,
            "epsilon": grouping.epsilon,
            **grouping.bounds.describe(),
            **({} if grouping.auto is None else auto_of(grouping)),
            **({"collision_delta_per_person": COLLISION_DELTA} if hashed else {}),
        },
    )
    accountant = query.accountant
    if accountant is not None:  # a charge it cannot take is refused before any data is read
        accountant.check(charge)

    def commit(counted: GroupedCounts | int | None = None) -> None:
        """Charge the whole query once: after the data were read (and, with public keys,
        counted and checked against the mechanism's domain: the counts, or with "auto" an
        int bounding every key's total before bounding), before any noise."""
        if counted is not None:
            mech.check_domain(
                counted
                if isinstance(counted, int)
                else int(counted.counts.sum(axis=1).max(initial=0))
            )
        if accountant is not None:
            accountant.charge(charge)

    target = None if grouping.auto is None else auto_target(mech, est, grouping)
    counts, selection, chosen = _count(query, grouping, commit, target)
    if chosen is not None:  # max_contributions="auto": the trees at the bound chosen
        grouping, spec = with_bound(grouping, spec, chosen[0])
        mech, est = configure(spec, plan=query.plan, plan_cache=query.plan_cache)
        # each key's rows before bounding were checked before the charge (stand-in bound);
        # this refuses only a chosen mechanism whose domain depends on its noise scale
        mech.check_domain(int(counts.counts.sum(axis=1).max(initial=0)))
    if not grouping.by:  # one distribution per person: a Release with its person-level unit
        return _warned(_person_release(counts, query, grouping, mech, est, chosen, hashed))
    grouped = release_grouped_counts(
        counts,
        mech=mech,
        estimator=est,
        spec_postprocess=spec.postprocess,
        integer=spec.integer,
        bins=query.bins,
        by=grouping.by,
        bounds=grouping.bounds,
        neighbours=grouping.neighbours,
        epsilon=np.inf if grouping.epsilon is None else grouping.epsilon,
        source=query.rng,
        selection=selection,
        delta=0.0 if grouping.delta is None else grouping.delta,
        target=approx_target(grouping.privacy),
        bound_choice=None if chosen is None else bound_record(grouping, chosen[1]),
        collision=hashed,
    )
    return _warned(grouped)


def _warned(release: Any) -> Any:
    """``release`` after its bounds warning, if any (much released mass in end bins; for a
    grouped release, one for all its keys): post-processing of released counts."""
    warning = release.bounds_warning()
    if warning is not None:
        warn_user(warning, BoundsWarning)
    return release


def _ids_hashed(data: Any, grouping: Grouping) -> bool:
    """Whether the engine will tell persons apart by a keyed hash: public information only
    (the engine's ``person_hash``: input kind and the id column's schema type)."""
    if grouping.unit is None:
        return False
    decide = pick_engine(data).person_hash
    return decide is not None and decide(data, grouping.unit)


def _person_release(
    counts: GroupedCounts,
    query: Query,
    grouping: Grouping,
    mech: Any,
    est: str,
    chosen: Chosen | None = None,
    hashed: bool = False,
) -> Release:
    """The one row of a per-person query without ``by``, noised as a grouped release's
    row is (the same draws), as a :class:`Release` whose guarantee is the person's (with
    ``hashed`` ids, plus the collision δ: :attr:`PersonUnit.collision`)."""
    unit = person_unit(grouping, chosen)
    (release,) = noised_rows(
        counts,
        mech,
        est,
        query.rng,
        bins=query.bins,
        postprocess=query.release_spec.postprocess,
        integer=query.release_spec.integer,
        target=approx_target(grouping.privacy),
        unit=replace(unit, collision=COLLISION) if hashed else unit,
    )
    return release


def noised_rows(
    counts: GroupedCounts,
    mech: Any,
    estimator: str,
    source: RandomSource,
    **common: Any,
) -> list[Release]:
    """One :class:`Release` per row of bounded counts; all rows' noise drawn in one batch
    (``common``: the releases' shared fields: bins, postprocess, integer, ...)."""
    noise = mech.noise_only(len(counts.keys), source)
    randomness = source.describe()
    return [
        Release(
            mechanism=mech,
            noisy_levels=handed_over(
                b + z[i] for b, z in zip(mech.true_blocks(row), noise, strict=True)
            ),
            estimator=estimator,
            randomness=randomness,
            library_version=__version__,
            **common,
        )
        for i, row in enumerate(counts.counts)
    ]


def _count(
    query: Query, grouping: Grouping, commit: Any, target: float | None = None
) -> tuple[GroupedCounts, dict[str, Any] | None, Chosen | None]:
    """The bounded counts, the selection's record with private key selection, and with
    ``max_contributions="auto"`` the bound chosen (``target``: :func:`auto_target`)."""
    data, source, nan = query.data, query.rng, cast(NanPolicy, query.release_spec.nan)
    assert query.bins is not None
    engine = pick_engine(data)
    if engine.grouped is None:
        return _count_memory(query, grouping, commit, target)
    the_keys, selection = grouping.keys, None
    auto, chosen = (
        (None, None)
        if target is None
        else engine_pass(grouping, target, source, commit, query.bins.n_bins)
    )
    job = GroupedJob(
        column=grouping.value.name,
        by=grouping.by,
        keys=(),
        unit=grouping.unit,
        bounds=grouping.bounds,
        bins=query.bins,
        nan=nan,
        auto=auto,
    )
    if the_keys is None:  # pass 1: the selection counts, in the engine; noise here
        assert grouping.delta is not None and engine.key_counts is not None
        found = engine.key_counts(data, job, source)
        commit()  # the selection counts were read; the selection noise comes next
        the_keys, selection = choose_keys(
            found,
            grouping.bounds.max_groups,
            grouping.selection_epsilon,
            grouping.delta,
            source,
            grouping.neighbours,
        )
    counted = engine.grouped(data, _with_keys(job, the_keys), source)
    if selection is None and chosen is None:  # public keys: charged once the counts were read
        commit(counted)
    return counted, selection, None if chosen is None else chosen()


def _with_keys(job: GroupedJob, keys: tuple[Any, ...]) -> GroupedJob:
    return replace(job, keys=keys)


def _count_memory(
    query: Query, grouping: Grouping, commit: Any, target: float | None
) -> tuple[GroupedCounts, dict[str, Any] | None, Chosen | None]:
    """An in-memory table or column: read here, after every public check."""
    data, source, bins = query.data, query.rng, query.bins
    nan = cast(NanPolicy, query.release_spec.nan)
    assert bins is not None
    values = as_1d_array(columns.read(data, grouping.value), "values")
    cols = _by_columns(data, grouping)
    person = _person_codes(data, grouping)
    if any(c.size != values.size for c in cols) or (
        person is not None and person.size != values.size
    ):
        raise InvalidParameterError("The value, 'by' and 'privacy_unit' columns differ in length.")
    bin_idx = bin_index(values, bins, nan)
    keep = bin_idx >= 0
    if person is not None:
        person_missing = person < 0
        if person_missing.any() and nan == "error":
            raise DataError(
                "The 'privacy_unit' column contains missing ids. Pass nan='drop' to leave those "
                "records out, or clean the column first."
            )
        keep &= ~person_missing
    the_keys, selection = grouping.keys, None
    if the_keys is None:
        assert grouping.delta is not None
        found = key_counts(
            cols, keep, person, grouping.unit, grouping.bounds.max_groups, nan, source
        )
        commit()  # every column was read and checked; the selection noise comes next
        the_keys, selection = choose_keys(
            KeyCounts.merge([found]),
            grouping.bounds.max_groups,
            grouping.selection_epsilon,
            grouping.delta,
            source,
            grouping.neighbours,
        )
    codes = encode_keys(cols, the_keys, nan) if cols else np.zeros(values.size, dtype=np.int64)
    keep &= codes >= 0
    rows = _rows(keep)
    chosen, bounds = None, grouping.bounds
    if person is not None:
        if grouping.auto is not None:
            assert target is not None
            if isinstance(rows, slice):  # every row kept: the choice indexes them
                rows = np.arange(values.size)[rows]
            group_codes = codes[rows] if cols else None
            commit(key_top(group_codes, rows.size))  # domain checked; the choice's noise next
            chosen, sub = choose_auto(
                person[rows],
                group_codes,
                bin_idx[rows],
                bins.n_bins,
                grouping,
                target,
                source,
                len(the_keys),
            )
            rows, bounds = rows[sub], chosen[0]
        group_codes = codes[rows] if cols else None
        kept = bound_contributions(person[rows], group_codes, bounds, source, len(the_keys))
        rows = kept if isinstance(rows, slice) else rows[kept]
    counts = _count_rows(bin_idx, codes, rows, the_keys, bins.n_bins)
    if selection is None and chosen is None:  # public keys: every column read and counted
        commit(counts)
    return counts, selection, chosen


def _by_columns(data: Any, grouping: Grouping) -> list[Any]:
    """The ``by`` columns: with public keys, text columns encoded by pandas (no Python
    objects), Arrow text looked up in each column's public values; else as numpy arrays."""
    out = []
    for j, (c, n) in enumerate(zip(grouping.by_columns, grouping.by, strict=True)):
        column = columns.read(data, c)
        if grouping.keys is None:
            out.append(column_array(column, n))
            continue
        keys = grouping.keys
        values = list(keys) if len(grouping.by) == 1 else list(dict.fromkeys(k[j] for k in keys))
        out.append(encoded_column(column, lambda col, n=n: column_array(col, n), values))
    return out


def _person_codes(data: Any, grouping: Grouping) -> np.ndarray | None:
    """The person ids dictionary-encoded once (``-1`` where missing), None without a unit.

    Numbered in the ids' order where the sampling's seeded draws follow the numbering (steps
    over (person, group) pairs, a bound chosen from the data, private key selection); else
    in order of first appearance, which keeps the same rows (each row's word is drawn in row
    order and ranked within its person only) without a remapping pass."""
    if grouping.unit_column is None:
        return None
    b = grouping.bounds
    pairs = bool(grouping.by) and min(b.max_groups, b.max_contributions_per_group) < (
        b.max_contributions
    )
    ordered = pairs or grouping.auto is not None or grouping.keys is None
    codes, _ = factorize_column(
        columns.read(data, grouping.unit_column),
        lambda col: column_array(col, "privacy_unit"),
        sort=ordered,
    )
    return codes


def _rows(keep: np.ndarray) -> np.ndarray | slice:
    """The rows to count (``keep``): every row as a slice (no copies of the columns), else
    their indices."""
    return slice(None) if keep.all() else np.flatnonzero(keep)


def _count_rows(
    bin_idx: np.ndarray, codes: np.ndarray, rows: np.ndarray | slice, keys: Any, n_bins: int
) -> GroupedCounts:
    """:func:`count_grouped_codes` of ``rows``, whose bins and key positions are all present
    (``>= 0``): one ``bincount`` over ``code·B + bin``."""
    flat = codes[rows] * n_bins
    flat += bin_idx[rows]
    counts = np.bincount(flat, minlength=len(keys) * n_bins).reshape(len(keys), n_bins)
    return GroupedCounts(keys, counts, 0)


def release_grouped_counts(
    counts: GroupedCounts,
    *,
    mech: Any,
    estimator: str,
    spec_postprocess: str,
    integer: bool,
    bins: Any,
    by: tuple[str, ...],
    bounds: ContributionBounds,
    neighbours: str,
    epsilon: float,
    source: RandomSource,
    selection: dict[str, Any] | None = None,
    delta: float = 0.0,
    target: dict[str, float] | None = None,
    bound_choice: dict[str, Any] | None = None,
    collision: bool = False,
) -> GroupedRelease:
    """Noise bounded grouped counts (made by any engine): the one place budget is spent.

    ``mech`` is the record-level mechanism at ``ε/Δ``; all groups' noise is drawn in one batch.
    ``bound_choice``: how an ``"auto"`` bound was chosen (its ε or ρ adds to the guarantee).
    ``collision``: persons were told apart by a keyed hash (the release states the δ).
    """
    stated = COLLISION if collision else None
    releases = noised_rows(
        counts, mech, estimator, source, bins=bins, postprocess=spec_postprocess, integer=integer
    )
    factor, _ = bounds.sensitivity(neighbours)
    guarantee: PureDP | ApproxDP | ZCDP
    if mech.guarantee_kind == "zcdp":  # Gaussian noise: the person's rho
        rho = Fraction(bounds.l2_squared(neighbours)) * mech.rho_spent()
        rho += Fraction(bound_choice["rho_spent"]) if bound_choice else 0
        return GroupedRelease(
            keys=counts.keys,
            by=by,
            releases=releases,
            bounds=bounds,
            neighbours=neighbours,
            epsilon=epsilon,
            guarantee=ZCDP(float_at_least(rho)),
            selection=None,
            target=target,
            bound_choice=bound_choice,
            collision=stated,
        )
    tree_eps = Fraction(factor) * mech.epsilon_spent()
    if bound_choice is not None:
        tree_eps += Fraction(bound_choice["epsilon_spent"])
    if selection is None:
        guarantee = PureDP(float_at_least(tree_eps))
    else:
        total = tree_eps + Fraction(selection["epsilon_spent"])
        guarantee = ApproxDP(float_at_least(total), delta)
    return GroupedRelease(
        keys=counts.keys,
        by=by,
        releases=releases,
        bounds=bounds,
        neighbours=neighbours,
        epsilon=epsilon,
        guarantee=guarantee,
        selection=selection,
        bound_choice=bound_choice,
        collision=stated,
    )
