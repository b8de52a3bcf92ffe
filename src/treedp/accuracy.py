"""Predict the error of a configuration before any data is touched."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from treedp._aliases import accepts_aliases
from treedp.budget import Neighbours
from treedp.config import configure
from treedp.estimation import prefix_covariance
from treedp.options import MechanismOptions
from treedp.planning import Plan
from treedp.privacy.measures import Measure
from treedp.spec import ReleaseSpec

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
    """

    mean_cdf_mse: float
    max_cdf_variance: float
    worst_prefix: int
    prefix_variance: np.ndarray
    mechanism: str
    estimator: str
    branching: tuple[int, ...] | None
    level_budgets: tuple[float, ...]

    @property
    def rmse(self) -> float:
        """Root of :attr:`mean_cdf_mse`: a typical CDF error in records."""
        return float(np.sqrt(self.mean_cdf_mse))


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
        omitted here.

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
    )
