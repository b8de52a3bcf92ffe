"""An optimised linear strategy (integer p-Identity) under pure ε-DP with discrete Laplace.

Beyond trees: the released vector is ``W x`` for an integer matrix ``W = [diag(d); A]``
optimised (on public parameters only) for the expected squared error of the CDF, see
:mod:`treedp.strategy`. Every entry gets exact discrete Laplace noise of one scale
``t >= Δ_1 / ε``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from treedp._validation import must
from treedp.budget import Neighbours, check_epsilon, check_neighbours
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms.base import Mechanism, check_replace_bins
from treedp.mechanisms.results import Contract
from treedp.privacy.measures import PureDP
from treedp.strategy.candidate import plan_candidate
from treedp.strategy.model import Strategy, StrategyCovariance
from treedp.strategy.store import MAX_STRATEGY_BINS, StrategyCache, get_strategy
from treedp.tree.candidate import PlanCandidate

__all__ = ["CONTRACT", "RangeStrategyMechanism", "StrategyMechanism"]

#: The privacy contract as data.
CONTRACT = Contract(
    name="strategy",
    measure=PureDP,
    neighbours=("add_remove", "replace"),
    sensitivity=(
        "one block W x, W = [diag(d); A] integer, non-negative: add_remove "
        "L1 = max_j (d_j + sum_i A_ij); replace L1 = max_{j!=k} (d_j + d_k + "
        "sum_i |A_ij - A_ik|); one discrete Laplace scale t >= L1/epsilon on every entry"
    ),
)


class StrategyMechanism(Mechanism):
    """Noise every entry of ``W x``, an optimised integer strategy: pure ``epsilon``-DP.

    Parameters
    ----------
    n_bins : int
        ``B``.
    epsilon : float
        The pure-DP budget (one block: all of it).
    neighbours : {"add_remove", "replace"}, default="add_remove"
        The neighbour relation.
    n : int, optional
        The public size (``replace`` only).
    strategy : Strategy, optional
        The strategy to release; default :func:`treedp.strategy.get_strategy` for ``B``
        (shipped for common ``B``, else optimised, deterministically, and kept in ``cache``).
    cache : StrategyCache, optional
        A caller-owned cache of optimised strategies.

    Notes
    -----
    Guarantee: pure ``ε``-DP (``PureDP(Δ_1 / t)`` exactly, ``t`` the rational scale rounded up
    from ``Δ_1 / ε``). Privacy unit: one record; every record is counted in exactly one bin
    (out-of-range values are clamped into the end bins by the public bin rule).
    Neighbour relations: ``add_remove`` (``n`` private) and ``replace`` (``n`` public).

    Sensitivity derivation. The released block is ``y = W x`` with ``W`` the
    ``(B + p) × B`` integer matrix ``[diag(d); A]``, ``d_j >= 1``, ``A_ij >= 0``.
    ``add_remove``: a record in bin ``j`` changes ``x`` by ``±e_j`` and ``y`` by ``±W e_j``,
    whose L1 norm is the column sum ``d_j + Σ_i A_ij``; the L1 sensitivity is its maximum
    over ``j``. ``replace``: moving a record from ``j`` to ``k`` changes ``y`` by
    ``W (e_k - e_j)``, of L1 norm ``d_j + d_k + Σ_i |A_ij - A_ik|`` (the identity rows of ``j``
    and ``k`` each change); the maximum over all pairs is computed. Each entry of ``y`` is an
    integer and gets independent discrete Laplace noise of scale ``t``, so
    ``P(y + z = o) / P(y' + z = o) <= exp(|y - y'|_1 / t) <= exp(Δ_1 / t)`` with
    ``Δ_1 / t <= ε``. The aggregate rows' real weights of the optimised strategy are folded
    into the integers ``A`` (lattice ``q``, :mod:`treedp.strategy.model`): the sensitivity is
    that of the integers released, so rounding costs accuracy, never privacy.
    ``tests/mechanisms/test_strategy_sensitivity.py`` enumerates every neighbouring move on
    small ``B`` and checks the claim is the exact maximum.
    """

    name = "strategy"
    least_squares_only = True  # one estimator: least squares, whichever name is given
    summary = "an optimised integer strategy matrix, every entry noised"
    max_bins = MAX_STRATEGY_BINS
    #: The workload the default strategy is optimised for.
    workload: ClassVar[str] = "prefix"

    def __init__(
        self,
        n_bins: int,
        *,
        epsilon: float,
        neighbours: Neighbours = "add_remove",
        n: int | None = None,
        strategy: Strategy | None = None,
        cache: StrategyCache | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.neighbours, self.n = check_neighbours(neighbours, n)
        if strategy is None:
            strategy = self.default_strategy(n_bins, cache)
        elif not isinstance(strategy, Strategy):
            raise InvalidTypeError(
                must(
                    "strategy",
                    f"be a treedp.strategy.Strategy. Got {type(strategy).__name__} instead.",
                )
            )
        if strategy.n_bins != n_bins:
            raise InvalidParameterError(
                "The 'strategy' parameter was made for another number of bins than 'n_bins'."
            )
        self.n_bins = strategy.n_bins
        check_replace_bins(self.neighbours, self.n_bins)
        self.strategy = strategy
        l1, l2 = strategy.sensitivity(self.neighbours)
        self.block_epsilons = (self.epsilon,)
        self.block_sensitivity = (l1,)
        self.block_l2 = (l2,)
        self._set_scales()

    @classmethod
    def default_strategy(cls, n_bins: int, cache: StrategyCache | None) -> Strategy:
        """The strategy released when none is given: shipped, cached or optimised
        (:func:`treedp.strategy.get_strategy`)."""
        return get_strategy(n_bins, cls.workload, cache)

    def max_records(self) -> int:
        """The guarantee's domain: at most :meth:`Strategy.max_total` records (exact int64
        arithmetic), refused before anything is charged or drawn."""
        return self.strategy.max_total()

    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The exact block ``W x`` (int64)."""
        return [self.strategy.apply(counts)]

    @classmethod
    def plan_candidate(cls, *args: Any, **kwargs: Any) -> PlanCandidate | None:
        """The better of the shipped prefix and range strategies
        (:func:`treedp.strategy.candidate.plan_candidate`), offered by this class only (the
        range class offers nothing of its own: this one scores both)."""
        return plan_candidate(*args, **kwargs) if cls is StrategyMechanism else None

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """Least squares (GLS) whatever the estimator's name; ``n`` imposed when public."""
        return self.prefix_covariance(estimator).estimate(np.asarray(levels[0]), self.n)

    def prefix_covariance(self, estimator: str) -> StrategyCovariance:
        return StrategyCovariance(self.strategy, self.block_variance()[0], self.n is not None)

    def _spend_parameters(self) -> dict[str, Any]:
        return {**super()._spend_parameters(), "strategy": self.strategy.digest}

    def describe(self) -> dict[str, object]:
        """The contract as plain data; adds the strategy's digest and shape."""
        out = super().describe()
        out["strategy"] = {
            "kind": "p_identity",
            "workload": self.strategy.workload,
            "aggregates": int(self.strategy.aggregates.shape[0]),
            "sha256": self.strategy.digest,
        }
        return out


class RangeStrategyMechanism(StrategyMechanism):
    """:class:`StrategyMechanism` with a strategy optimised for all ranges ``[s, t)``.

    The same contract and sensitivity derivation; only the default strategy differs
    (``workload="range"``, shipped for the same ``B`` as the prefix strategies).
    """

    name = "strategy_range"
    summary = "an integer strategy optimised for all ranges, every entry noised"
    workload: ClassVar[str] = "range"
