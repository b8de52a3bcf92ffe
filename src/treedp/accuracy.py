"""Predict the error of a configuration before any data is touched."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from treedp._aliases import accepts_aliases
from treedp._frames import pandas_frame, polars_frame
from treedp._validation import must
from treedp.budget import Neighbours
from treedp.config import configure
from treedp.estimation import prefix_covariance
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.options import MechanismOptions, PrivacyUnit
from treedp.planning import Plan
from treedp.privacy.auto_bound import AUTO_NAMES, read_auto
from treedp.privacy.contribution import ContributionBounds, scaled_budget
from treedp.privacy.measures import ZCDP, Measure, PureDP
from treedp.spec import ReleaseSpec

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["ErrorPrediction", "predict_error"]


@dataclass(frozen=True)
class ErrorPrediction:
    """The exact expected error of a release configuration (from public parameters only).

    Attributes
    ----------
    mean_cdf_mse : float
        Mean over the ``B`` prefixes ``[0, m)``, ``m = 1..B``, of the prefix estimate's mean
        squared error, in records² (the estimators are unbiased, so MSE = variance).
    max_cdf_variance : float
        The largest of those variances.
    worst_prefix : int
        The ``m`` where it is reached.
    prefix_variance : ndarray
        The variance of every prefix estimate, ``m = 0..B``.
    mechanism, estimator : str
        What was evaluated.
    branching : tuple of int or None
        The tree's fan-out per level (None for a baseline).
    level_budgets : tuple of float
        Budget per noised block (root first for a tree): ε, or ρ for Gaussian noise.
    unit : str
        ``"record"``, or ``"person:<column>"`` when a privacy unit was given: then every
        figure above is the error of **each key's tree** (all keys share one plan and noise
        scale), whose record-level budget is the person's divided by the sensitivity.
    sensitivity : int
        Records one person can move in one level's vector over all groups (``L1``; for
        Gaussian noise the factor is ``L2²``), under the person-level ``neighbours``
        (``replace`` doubles it): 1 without a privacy unit or keys (2 under ``replace``).
    tree_budget : float or None
        Each key's tree's record-level budget (``ε/Δ`` or ``ρ/L2²``) with a privacy unit or
        keys, else None.
    keys : dict
        The public keys given, each with its guessed size (None when not given).
    """

    mean_cdf_mse: float
    max_cdf_variance: float
    worst_prefix: int
    prefix_variance: np.ndarray
    mechanism: str
    estimator: str
    branching: tuple[int, ...] | None
    level_budgets: tuple[float, ...]
    unit: str = "record"
    sensitivity: int = 1
    tree_budget: float | None = None
    keys: dict[Any, int | None] = field(default_factory=dict)

    def quantile_error(self, n: float) -> float:
        """The typical error of a quantile's level in a distribution of ``n`` records.

        A quantile is read where the released CDF crosses ``q·n``; an error of ``e`` records
        in that CDF moves the answer by ``e/n`` in level. This is ``rmse / n``: e.g. 0.01 means
        a released median lies between about the 49th and the 51st percentile. ``n`` is a
        public guess (never read from the data). Truncation by contribution bounds adds a bias
        that depends on the data and is not part of this figure.
        """
        if isinstance(n, bool) or not isinstance(n, int | float | np.integer | np.floating):
            raise InvalidTypeError(must("n", f"be a number. Got {type(n).__name__} instead."))
        if not n > 0:
            raise InvalidParameterError(must("n", "be positive."))
        return self.rmse / float(n)

    def per_key(self) -> dict[Any, dict[str, float | None]]:
        """The expected error of every key given: CDF RMSE (records) and quantile error
        (:meth:`quantile_error` at the key's guessed size; None without one)."""
        return {
            key: {
                "cdf_rmse": self.rmse,
                "quantile_error": None if size is None else self.quantile_error(size),
            }
            for key, size in self.keys.items()
        }

    @property
    def rmse(self) -> float:
        """Root of :attr:`mean_cdf_mse`: a typical CDF error in records."""
        return float(np.sqrt(self.mean_cdf_mse))

    def to_arrays(self) -> dict[str, np.ndarray]:
        """One row per prefix ``[0, m)``, ``m = 0..B``: ``prefix`` (``m``) and ``variance``
        (:attr:`prefix_variance`, records²); the columns of :meth:`to_frame`."""
        variance = np.asarray(self.prefix_variance, dtype=np.float64)
        return {"prefix": np.arange(variance.size, dtype=np.int64), "variance": variance}

    def to_frame(self) -> pd.DataFrame:
        """:meth:`to_arrays` as a :class:`pandas.DataFrame` (needs ``treedp[pandas]``).

        Raises
        ------
        MissingDependencyError
            If pandas is not installed.
        """
        return pandas_frame(self.to_arrays(), "ErrorPrediction.to_frame")

    def to_polars(self) -> pl.DataFrame:
        """:meth:`to_arrays` as a :class:`polars.DataFrame` (needs ``treedp[polars]``).

        Raises
        ------
        MissingDependencyError
            If polars is not installed.
        """
        return polars_frame(self.to_arrays(), "ErrorPrediction.to_polars")


@accepts_aliases
def predict_error(
    bins: int | ReleaseSpec,
    *,
    epsilon: float | None = None,
    neighbours: Neighbours = "add_remove",
    n: int | None = None,
    mechanism: str | MechanismOptions = "auto",
    plan: Plan | None = None,
    privacy: Measure | None = None,
    privacy_unit: PrivacyUnit | None = None,
    keys: Sequence[Any] | Mapping[Any, int] | None = None,
) -> ErrorPrediction:
    """The exact expected CDF error of a configuration, before any data is read.

    Parameters
    ----------
    bins : int or ReleaseSpec
        The number of bins ``B``, or a whole :class:`treedp.ReleaseSpec` (the keywords are
        then ignored).
    epsilon, neighbours, mechanism, plan, privacy
        As for :func:`treedp.release_cdf`: ``mechanism`` a name or a
        :class:`treedp.MechanismOptions` (a tree's shape, budgets or estimator);
        ``privacy=ZCDP(ρ)`` or ``ApproxDP(ε, δ)``: the exact error of the Gaussian tree.
    n : int, optional
        The public size under ``replace``; the error does not depend on it, so it may be
        omitted here. Refused with ``privacy_unit`` or ``keys``, as those releases refuse it.
    privacy_unit : PrivacyUnit, optional
        The person and the contribution bounds of a per-person or grouped release
        (``treedp.PrivacyUnit("person_id", max_contributions=50)``, or ``max_groups`` with
        ``max_contributions_per_group`` when ``keys`` are given): the budget is the person's,
        and the prediction is that of each key's tree, at the record-level budget
        ``ε/Δ`` (``ρ/L2²`` for Gaussian noise), exactly as :func:`treedp.release_grouped`
        and :func:`treedp.release_cdf` noise it (:mod:`treedp.privacy.contribution`). The
        ``neighbours`` relation is then the person's: each key's tree is an add/remove tree
        without a public size under both relations, ``replace`` doubling ``Δ`` (``L2²``).
    keys : sequence or mapping, optional
        The public keys of a group-by release, or a mapping from each key to a public guess of
        its size (for :meth:`ErrorPrediction.per_key`'s quantile-scale error). Every key gets
        the same tree and noise, so the CDF error is the same for every key. Without a
        ``privacy_unit`` each row is one person (``Δ = 1``, 2 under ``replace``).

    Returns
    -------
    ErrorPrediction

    Examples
    --------
    >>> import treedp
    >>> tree = treedp.MechanismOptions("tree", branching=32)
    >>> p = treedp.predict_error(1024, epsilon=1.0, mechanism=tree)
    >>> p.branching
    (32, 32)
    """
    if isinstance(bins, ReleaseSpec):
        spec = bins
    else:
        options = (
            mechanism if isinstance(mechanism, MechanismOptions) else MechanismOptions(mechanism)
        )
        spec = ReleaseSpec(
            bins=bins,
            epsilon=epsilon,
            neighbours=neighbours,
            n=n,
            mechanism=options.name,
            # ReleaseSpec validates any sequence of ints and normalises it to a tuple.
            branching=options.branching,  # type: ignore[arg-type]
            level_budgets=options.level_budgets,  # type: ignore[arg-type]
            estimator=options.estimator,
            privacy=privacy,
        )
    bounds = _bounds(privacy_unit, keys)
    person_neighbours = spec.neighbours
    tree_budget = None
    if privacy_unit is not None or keys is not None:
        spec, tree_budget = _per_key_spec(spec, bounds)
    if spec.neighbours == "replace" and spec.n is None:
        # The mechanism object needs a public size; the covariance does not read it (it only
        # uses that the total is public), so any valid size gives the same prediction.
        spec = replace(spec, n=0)
    mech, est = configure(spec, plan=plan)
    m = np.arange(spec.n_bins + 1)
    var = prefix_covariance(mech, est).cov(m, m)
    worst = int(np.argmax(var[1:])) + 1
    return ErrorPrediction(
        mean_cdf_mse=float(var[1:].mean()),
        max_cdf_variance=float(var[worst]),
        worst_prefix=worst,
        prefix_variance=var,
        mechanism=mech.name,
        estimator=est,
        branching=getattr(getattr(mech, "shape", None), "branching", None),
        level_budgets=mech.block_budgets,
        unit=bounds.unit_label,
        sensitivity=bounds.sensitivity(person_neighbours)[0]
        if spec.rho is None
        else bounds.l2_squared(person_neighbours),
        tree_budget=tree_budget,
        keys=_keys(keys),
    )


def _bounds(privacy_unit: Any, keys: Any) -> ContributionBounds:
    """The contribution bounds of a prediction (public parameters only)."""
    if privacy_unit is None:
        return ContributionBounds.from_parameters(None)
    if not isinstance(privacy_unit, PrivacyUnit):
        raise InvalidTypeError(
            must(
                "privacy_unit",
                "be a treedp.PrivacyUnit(column, max_contributions=...). "
                f"Got {type(privacy_unit).__name__} instead.",
            )
        )
    limits = (
        privacy_unit.max_contributions,
        privacy_unit.max_groups,
        privacy_unit.max_contributions_per_group,
    )
    for value, bound in zip(limits, AUTO_NAMES, strict=True):
        if read_auto(value, bound) is not None:
            raise InvalidParameterError(
                f"{bound}='auto' chooses the bound from the data (privately, with a share of "
                "the budget), so no error can be predicted before the data are read: predict "
                "each candidate bound (an int) instead; the release states the bound it chose."
            )
    name = privacy_unit.column if isinstance(privacy_unit.column, str) else "ids"
    return ContributionBounds.from_parameters(
        name,
        privacy_unit.max_contributions,
        privacy_unit.max_groups,
        privacy_unit.max_contributions_per_group,
        grouped=keys is not None,
    )


def _per_key_spec(spec: ReleaseSpec, bounds: ContributionBounds) -> tuple[ReleaseSpec, float]:
    """The record-level spec of each key's tree, as a per-person or group-by release builds it
    (:func:`treedp.query.build_query`): an add/remove tree without a public size, at the
    person's budget over the person-level sensitivity under ``spec.neighbours`` (``Δ1``, or
    ``L2²`` for Gaussian noise; twice that under ``replace``)."""
    if spec.n is not None:
        raise InvalidParameterError(  # the release's own words (query.py)
            "The 'n' parameter is not taken by a per-person or group-by release: group sizes "
            "stay private."
        )
    neighbours = spec.neighbours
    if spec.rho is not None:
        rho = scaled_budget(spec.rho, bounds.l2_squared(neighbours))
        return replace(spec, neighbours="add_remove", epsilon=None, privacy=ZCDP(rho)), rho
    total = spec.epsilon
    if total is None:
        assert isinstance(spec.privacy, PureDP)
        total = spec.privacy.epsilon
    eps = scaled_budget(total, bounds.sensitivity(neighbours)[0])
    return replace(spec, neighbours="add_remove", epsilon=eps, privacy=None), eps


def _keys(keys: Any) -> dict[Any, int | None]:
    """``keys=``: a sequence of public keys, or a mapping from key to a guessed size."""
    if keys is None:
        return {}
    if isinstance(keys, Mapping):
        for size in keys.values():
            if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
                raise InvalidParameterError(
                    must("keys", "map each key to a positive int (a public guess of its size).")
                )
        return {key: int(size) for key, size in keys.items()}
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence | np.ndarray):
        raise InvalidTypeError(
            must(
                "keys",
                "be a sequence of public keys or a mapping from key to a guessed size. "
                f"Got {type(keys).__name__} instead.",
            )
        )
    return dict.fromkeys(keys)
