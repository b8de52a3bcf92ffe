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

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._inputs import as_1d_array
from treedp._version import __version__
from treedp.config import configure
from treedp.domain import NanPolicy, public_bins
from treedp.engines.base import check_nan_policy
from treedp.engines.dispatch import pick_engine
from treedp.engines.grouped import (
    GroupedCounts,
    GroupedJob,
    KeyCounts,
    bin_index,
    column_array,
    count_bounded,
    count_grouped_codes,
    count_keys,
    encode_keys,
    key_counts,
    missing_mask,
)
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.grouped_checks import check_options, grouped_budget, key_plan
from treedp.mechanisms.key_selection import (
    choose_keys,
    selection_delta_factor,
    selection_sensitivity,
    selection_threshold,
)
from treedp.noise import RandomSource
from treedp.noise.families import float_at_least
from treedp.noise.rng import check_source, resolve_source
from treedp.privacy.accountant import Accountant, check_accountant
from treedp.privacy.contribution import ContributionBounds, bound_contributions
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP
from treedp.privacy.spend import SpendRecord
from treedp.release import Release
from treedp.release.grouped import GroupedRelease
from treedp.spec import make_spec

__all__ = [
    "choose_keys",
    "grouped_counts",
    "release_grouped",
    "selection_counts",
    "selection_delta_factor",
    "selection_sensitivity",
    "selection_threshold",
]


def release_grouped(
    data: Any,
    *,
    epsilon: float | None = None,
    privacy: Measure | None = None,
    column: str | None = None,
    by: Any = None,
    keys: Sequence[Any] | None = None,
    privacy_unit: Any = None,
    max_contributions: int | None = None,
    max_groups: int | None = None,
    max_contributions_per_group: int | None = None,
    delta: float | None = None,
    selection_epsilon: float | None = None,
    neighbours: str = "add_remove",
    nan: NanPolicy = "error",
    rng: RandomSource | None = None,
    accountant: Accountant | None = None,
    **release_options: Any,
) -> GroupedRelease:
    """Release the distribution of ``column`` per public key of ``by``, for a privacy unit.

    Parameters
    ----------
    data : DataFrame, mapping of columns, table, files, or array-like
        A pandas or polars DataFrame, a pyarrow Table, a mapping of column name to 1-D array,
        a file input (a path, directory, glob, list of paths, :class:`treedp.FileSource` or
        pyarrow Dataset: streamed, see :mod:`treedp.engines.grouped_files`), a Spark
        DataFrame (:mod:`treedp.engines.grouped_spark`) or a Dask DataFrame
        (:mod:`treedp.engines.grouped_dask`) — then ``column``, ``by`` and ``privacy_unit``
        name columns, checked before any value is read; or the value column itself as
        an array (then ``by`` is a key array, or a tuple of key arrays for several ``by``
        columns, and ``privacy_unit`` a person-id array).
    epsilon : float, optional
        The total pure-DP budget, for the privacy unit (discrete Laplace noise). Give this or
        ``privacy``.
    privacy : ZCDP, ApproxDP or PureDP, optional
        A target guarantee for the privacy unit instead: ``ZCDP(rho)`` noises every key's tree
        with exact discrete Gaussian noise at ``rho / L2²`` per person-level L2² (see the
        module docstring); ``ApproxDP(epsilon, delta)`` does the same at the largest ``rho``
        whose tight conversion is ``(epsilon, delta)``-DP. Needs public ``keys``.
    column : str, optional
        The value column (required for a table).
    by : str, sequence of str, array or tuple of arrays, optional
        The group-by column(s). Without ``by`` (with a ``privacy_unit``) the release has one
        group, keyed ``()``.
    keys : sequence, optional
        The public keys (scalars for one ``by`` column, tuples for several): unique, not null.
        Records whose key is not listed are dropped; listed keys without records are released
        as noise. Without ``keys``, keys are selected privately (needs ``delta``).
    privacy_unit : str or array, optional
        The person-id column. Without it, one row is one person.
    max_contributions, max_groups, max_contributions_per_group : int, optional
        Per-person bounds (see :mod:`treedp.privacy.contribution`): rows kept overall, groups
        contributed to, rows kept per group. With a ``privacy_unit``, give ``max_contributions``
        or both group bounds.
    delta : float, optional
        For private key selection only: the δ of the ``(ε, δ)`` guarantee.
    selection_epsilon : float, optional
        For private key selection: the part of ``epsilon`` spent on it (default half).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        Add or remove one person with all their rows, or replace one person's rows by
        another's (group sizes stay private either way, so ``n`` is not taken).
    nan : {"error", "drop"}, default="error"
        Missing values, keys or person ids: refused, or the records dropped.
    rng : RandomSource, optional
        Noise and sampling randomness (default: the operating system's).
    **release_options
        ``bounds``, ``bins``, ``edges``, ``mechanism``, ``branching``, ``level_budgets``,
        ``estimator``, ``postprocess``, ``integer``, ``plan``, ``plan_cache`` as for
        :func:`treedp.release_cdf` (a plan is made for ``epsilon / Δ``).

    Returns
    -------
    GroupedRelease

    Raises
    ------
    InvalidParameterError, InvalidTypeError, DataError
        Parameters and column names are checked before any value is read; no message holds a
        count or value of the data.
    """
    check_options(release_options)
    epsilon, rho_total = grouped_budget(epsilon, privacy)
    nan = check_nan_policy(nan)
    if neighbours not in ("add_remove", "replace"):
        raise InvalidParameterError(
            f"The 'neighbours' parameter must be 'add_remove' or 'replace'. Got {neighbours!r}."
        )
    table = _is_table(data)
    value_col = _value_column(data, column, table)
    by_names, by_cols = _by_columns(data, by, table)
    unit_name, unit_col = _unit_column(data, privacy_unit, table)
    bounds = ContributionBounds.from_parameters(
        unit_name, max_contributions, max_groups, max_contributions_per_group, grouped=by_cols != []
    )
    if not by_cols and privacy_unit is None:
        raise InvalidParameterError("release_grouped needs 'by', a 'privacy_unit', or both.")
    if rho_total is not None and keys is None and by_cols:
        raise InvalidParameterError(
            "Gaussian noise (privacy=ZCDP or ApproxDP) needs the public 'keys' (private key "
            "selection is for pure epsilon)."
        )
    engine = pick_engine(data)
    the_keys, eps_sel, delta = key_plan(keys, len(by_cols), delta, selection_epsilon, epsilon)
    factor, _ = bounds.sensitivity(neighbours)
    tree_privacy: Measure | None = None
    eps_tree: float | None = None
    if rho_total is None:
        assert epsilon is not None
        eps_tree = _scaled_epsilon(epsilon - eps_sel, factor)
    else:
        tree_privacy = ZCDP(_scaled_epsilon(rho_total, bounds.l2_squared(neighbours)))
    opts = dict(release_options)
    the_bins = public_bins(
        opts.pop("bounds", None), opts.pop("bins", None), opts.pop("edges", None)
    )
    plan, plan_cache = opts.pop("plan", None), opts.pop("plan_cache", None)
    spec = make_spec(
        the_bins,
        eps_tree,
        "add_remove",
        None,
        opts.pop("mechanism", "auto"),
        opts.pop("branching", None),
        opts.pop("level_budgets", None),
        opts.pop("estimator", None),
        opts.pop("postprocess", "monotone"),
        opts.pop("integer", False),
        nan=nan,
        privacy=tree_privacy,
    )
    mech, est = configure(spec, plan=plan, plan_cache=plan_cache)
    source = check_source(rng)
    check_accountant(accountant)
    charge = SpendRecord(
        mechanism=f"grouped_{mech.name}",
        measure=_target(epsilon, delta, rho_total),
        neighbours=neighbours,
        unit=bounds.unit_label,
        parameters={"n_bins": the_bins.n_bins, "epsilon": epsilon, **bounds.describe()},
    )

    if accountant is not None:  # a charge it cannot take is refused before any data is read
        accountant.check(charge)

    def commit(counted: GroupedCounts | None = None) -> None:
        """Charge the whole release once: after the data were read (and, with public keys,
        counted and checked against the mechanism's domain), before any noise."""
        if counted is not None:
            mech.check_domain(int(counted.counts.sum(axis=1).max(initial=0)))
        if accountant is not None:
            accountant.charge(charge)

    shared: dict[str, Any] = {
        "mech": mech,
        "estimator": est,
        "spec_postprocess": spec.postprocess,
        "integer": spec.integer,
        "bins": the_bins,
        "by": tuple(by_names),
        "bounds": bounds,
        "neighbours": neighbours,
        "epsilon": math.inf if epsilon is None else epsilon,
        "source": source,
        "target": (
            {"epsilon": float(privacy.epsilon), "delta": float(privacy.delta)}
            if isinstance(privacy, ApproxDP)
            else None
        ),
    }
    selection: dict[str, Any] | None = None
    if engine.grouped is not None:  # files, Spark, Dask: bounded and counted by the engine
        if the_keys is None:  # pass 1: the selection counts, in the engine; noise here
            assert delta is not None
            sel_job = GroupedJob(
                column=value_col.name,
                by=tuple(by_names),
                keys=(),
                unit=unit_name,
                bounds=bounds,
                bins=the_bins,
                nan=nan,
            )
            assert engine.key_counts is not None  # every such engine counts keys too
            found = engine.key_counts(data, sel_job, source)
            commit()  # the selection counts were read; the selection noise comes next
            the_keys, selection = choose_keys(
                found, bounds.max_groups, eps_sel, delta, source, neighbours
            )
        job = GroupedJob(
            column=value_col.name,
            by=tuple(by_names),
            keys=the_keys,
            unit=unit_name,
            bounds=bounds,
            bins=the_bins,
            nan=nan,
        )
        counted = engine.grouped(data, job, source)
        if selection is None:  # public keys: charged once the counts were read
            commit(counted)
        return release_grouped_counts(  # pass 2: the release on the selected keys
            counted,
            **shared,
            selection=selection,
            delta=0.0 if delta is None else delta,
        )

    # ---- data is read from here on
    values = as_1d_array(_read(data, value_col), "values")
    cols = [column_array(_read(data, c), n) for c, n in zip(by_cols, by_names, strict=True)]
    person = None if unit_col is None else column_array(_read(data, unit_col), "privacy_unit")
    if any(c.size != values.size for c in cols) or (
        person is not None and person.size != values.size
    ):
        raise InvalidParameterError("The value, 'by' and 'privacy_unit' columns differ in length.")
    bin_idx = bin_index(values, the_bins, nan)
    keep = bin_idx >= 0
    if person is not None:
        person_missing = missing_mask(person)
        if person_missing.any() and nan == "error":
            raise DataError(
                "The 'privacy_unit' column contains missing ids. Pass nan='drop' to leave those "
                "records out, or clean the column first."
            )
        keep &= ~person_missing
    if the_keys is None:
        assert delta is not None
        found = key_counts(cols, keep, person, unit_name, bounds.max_groups, nan, source)
        commit()  # every column was read and checked; the selection noise comes next
        the_keys, selection = choose_keys(
            KeyCounts.merge([found]), bounds.max_groups, eps_sel, delta, source, neighbours
        )
    codes = encode_keys(cols, the_keys, nan) if cols else np.zeros(values.size, dtype=np.int64)
    keep &= codes >= 0
    rows = np.flatnonzero(keep)
    if person is not None:
        pcodes = person[rows]
        group_codes = codes[rows] if cols else None
        kept = bound_contributions(pcodes, group_codes, bounds, source, len(the_keys))
        rows = rows[kept]
    counts = count_grouped_codes(bin_idx[rows], codes[rows], the_keys, the_bins.n_bins)
    if selection is None:  # public keys: every column read, checked and counted
        commit(counts)
    return release_grouped_counts(
        counts, **shared, selection=selection, delta=0.0 if delta is None else delta
    )


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
) -> GroupedRelease:
    """Noise bounded grouped counts (made by any engine): the one place budget is spent.

    ``mech`` is the record-level mechanism at ``ε/Δ``; all groups' noise is drawn in one batch.
    """
    g = len(counts.keys)
    noise = mech.noise_only(g, source)
    randomness = source.describe()
    releases = []
    for i in range(g):
        blocks = mech.true_blocks(counts.counts[i])
        releases.append(
            Release(
                bins=bins,
                mechanism=mech,
                noisy_levels=[b + z[i] for b, z in zip(blocks, noise, strict=True)],
                estimator=estimator,
                randomness=randomness,
                library_version=__version__,
                postprocess=spec_postprocess,
                integer=integer,
            )
        )
    factor, _ = bounds.sensitivity(neighbours)
    guarantee: PureDP | ApproxDP | ZCDP
    if mech.guarantee_kind == "zcdp":  # Gaussian noise: the person's rho
        rho = Fraction(bounds.l2_squared(neighbours)) * mech.rho_spent()
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
        )
    tree_eps = Fraction(factor) * mech.epsilon_spent()
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
    )


def _target(epsilon: float | None, delta: float | None, rho: float | None) -> Measure:
    """The guarantee an accountant is charged (the target, before any rounding down)."""
    if rho is not None:
        return ZCDP(rho)
    assert epsilon is not None
    return PureDP(epsilon) if delta is None else ApproxDP(epsilon, delta)


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
    for name in job.columns:
        _check_name(data, name, "column")
    values = as_1d_array(_fetch(data, job.column), "values")
    by = [column_array(_fetch(data, b), b) for b in job.by]
    person = None if job.unit is None else column_array(_fetch(data, job.unit), "privacy_unit")
    return values, by, person


def _scaled_epsilon(epsilon: float, factor: int) -> float:
    """The largest float ``e <= epsilon/factor`` with ``factor·e <= epsilon`` exactly."""
    e = epsilon / factor
    while Fraction(e) * factor > Fraction(epsilon):
        e = math.nextafter(e, 0.0)
    return e


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


# ---------------------------------------------------------------------- columns
def _is_table(data: Any) -> bool:
    return (
        isinstance(data, Mapping)
        or hasattr(data, "columns")
        or hasattr(data, "column_names")
        or pick_engine(data).columns is not None
    )


def _schema(data: Any) -> list[str]:
    if isinstance(data, Mapping):
        return [str(k) for k in data]
    read_columns = pick_engine(data).columns
    if read_columns is not None:  # files: the schema, no value read
        return read_columns(data)
    if hasattr(data, "column_names"):  # a pyarrow Table
        return [str(c) for c in data.column_names]
    return [str(c) for c in data.columns]


def _check_name(data: Any, name: Any, param: str) -> str:
    """Check ``name`` against the table's schema (no value is read)."""
    if not isinstance(name, str):
        raise InvalidTypeError(
            f"The '{param}' parameter must name a column of the table (a str). "
            f"Got {type(name).__name__} instead."
        )
    if name not in _schema(data):
        raise InvalidParameterError(
            f"The '{param}' parameter names a column the table does not have: {name!r}."
        )
    return name


def _fetch(data: Any, name: str) -> Any:
    if hasattr(data, "get_column"):  # polars
        return data.get_column(name)
    if hasattr(data, "column_names"):  # a pyarrow Table: a ChunkedArray, as numpy
        col = data.column(name)
        if type(col.type).__name__ == "DictionaryType":
            col = col.cast(col.type.value_type)
        if col.null_count and col.type.num_fields == 0 and _arrow_numeric(col.type):
            col = col.cast("float64")  # integers with nulls: NaN, as the file engine reads
        return col.to_numpy()
    return data[name]


def _arrow_numeric(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_integer(t) or pa.types.is_floating(t))


def _named(data: Any, name: Any, param: str) -> Any:
    return _fetch(data, _check_name(data, name, param))


class _Lazy:
    """A table column named but not read yet."""

    def __init__(self, name: str) -> None:
        self.name = name


def _read(data: Any, col: Any) -> Any:
    return _fetch(data, col.name) if isinstance(col, _Lazy) else col


def _value_column(data: Any, column: Any, table: bool) -> Any:
    if table:
        if column is None:
            raise InvalidParameterError("With a table, 'column' must name the value column.")
        return _Lazy(_check_name(data, column, "column"))
    if column is not None:
        raise InvalidParameterError(
            "The 'column' parameter names a column of a table; the data is a single column."
        )
    return data


def _by_columns(data: Any, by: Any, table: bool) -> tuple[list[str], list[Any]]:
    if by is None:
        return [], []
    if table:
        names = [by] if isinstance(by, str) else list(by) if isinstance(by, Sequence) else [by]
        if not names:
            raise InvalidParameterError("The 'by' parameter must name at least one column.")
        if len(set(map(str, names))) != len(names):
            raise InvalidParameterError("The 'by' parameter names a column twice.")
        return [_check_name(data, n, "by") for n in names], [_Lazy(n) for n in names]
    if isinstance(by, str):
        raise InvalidTypeError(
            "The 'by' parameter names a column, but the data is a single column: pass a "
            "table (DataFrame or mapping), or 'by' as a key array."
        )
    if isinstance(by, tuple):
        return [f"by_{i}" for i in range(len(by))], list(by)
    return ["by"], [by]


def _unit_column(data: Any, unit: Any, table: bool) -> tuple[str | None, Any]:
    if unit is None:
        return None, None
    if table:
        return _check_name(data, unit, "privacy_unit"), _Lazy(str(unit))
    if isinstance(unit, str):
        raise InvalidTypeError(
            "The 'privacy_unit' parameter names a column, but the data is a single column: "
            "pass a table, or the person ids as an array."
        )
    return "privacy_unit", unit
