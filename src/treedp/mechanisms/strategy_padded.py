"""A shipped strategy on the first ``B`` of its bins, for any ``B`` up to 4096 (pure ε).

The optimised integer p-Identity strategies ship for ``B`` on a grid of ratio at most 1.5
from 32 to 4096, and about 1.15 from 12 to 256 for the prefix workload
(:data:`treedp.strategy.store.SHIPPED_SIZES`); the planner never optimises (a strategy for
1,000 bins takes seconds to minutes). For a ``B`` between two shipped sizes, releasing the
shipped strategy of the next size ``S >= B`` with its ``S - B`` last bins always empty beats
the planned tree from about ``B = 11``: mean prefix MSE at ε = 1, 36.2 against 42.3 at
``B = 100``, 92.3 against 114.7 at ``B = 1000`` (docs/strategies.md). Padding with bins that
are always empty is the same release as dropping their columns:
``W' = [diag(d[:B]); A[:, :B]]``, the aggregate rows left all zero removed (they would release
noise only). That integer matrix is released exactly as
:class:`~treedp.mechanisms.strategy.StrategyMechanism` releases its own, with least squares on
it (which uses that the padding is empty).
"""

from __future__ import annotations

from typing import Any, ClassVar

from treedp.exceptions import InvalidParameterError
from treedp.mechanisms.results import Contract
from treedp.mechanisms.strategy import StrategyMechanism
from treedp.privacy.measures import PureDP
from treedp.strategy.candidate import plan_candidate
from treedp.strategy.model import Strategy
from treedp.strategy.store import StrategyCache, padded_strategy
from treedp.tree.candidate import PlanCandidate

__all__ = ["CONTRACT", "PADDED_MAX_BINS", "PaddedStrategyMechanism"]

#: The largest ``B``: the largest shipped prefix strategy's.
PADDED_MAX_BINS = 4096

#: The privacy contract as data (that of :mod:`treedp.mechanisms.strategy`, for ``W'``).
CONTRACT = Contract(
    name="strategy_padded",
    measure=PureDP,
    neighbours=("add_remove", "replace"),
    sensitivity=(
        "one block W' x, W' = [diag(d[:B]); A[:, :B]] the first B columns of a shipped integer "
        "strategy (zero rows dropped): add_remove L1 = max_{j<B} (d_j + sum_i A_ij); replace "
        "L1 = max_{j!=k<B} (d_j + d_k + sum_i |A_ij - A_ik|); one discrete Laplace scale "
        "t >= L1/epsilon on every entry"
    ),
)


class PaddedStrategyMechanism(StrategyMechanism):
    """The shipped prefix strategy of the next size ``S >= B`` on its first ``B`` bins: pure
    ``epsilon``-DP.

    Parameters
    ----------
    n_bins, epsilon, neighbours, n, strategy, cache
        As :class:`StrategyMechanism` takes them; ``B`` at most :data:`PADDED_MAX_BINS`, the
        default strategy :func:`treedp.strategy.store.padded_strategy` (shipped: ``cache``
        is not used).

    Notes
    -----
    Guarantee: pure ``ε``-DP (``PureDP(Δ_1 / t)`` exactly, ``t`` the rational scale rounded up
    from ``Δ_1 / ε``). Privacy unit: one record; every record is counted in exactly one of the
    ``B`` bins (out-of-range values are clamped into the end bins by the public bin rule).
    Neighbour relations: ``add_remove`` (``n`` private) and ``replace`` (``n`` public).

    Sensitivity derivation: that of :class:`StrategyMechanism` for the integer matrix
    ``W' = [diag(d'); A']`` released, ``d' = d[:B]`` and ``A'`` the columns ``< B`` of the
    shipped ``A`` (rows left all zero dropped). A record in bin ``j < B`` changes ``W' x`` by
    ``W' e_j`` (``add_remove``; L1 ``d_j + Σ_i A_ij``) and a move from ``j`` to ``k`` by
    ``W' (e_k - e_j)`` (``replace``); the maxima are computed exactly on ``W'``
    (:meth:`Strategy.sensitivity`), never taken from the shipped ``S``-bin matrix, and are
    at most its own (the same columns, fewer of them).
    ``tests/mechanisms/test_strategy_padded.py`` enumerates every neighbouring move on small
    ``B`` and checks the claim is the exact maximum.
    """

    name = "strategy_padded"
    summary = "a shipped strategy on its first B bins (the rest empty), every entry noised"
    max_bins = PADDED_MAX_BINS
    workload: ClassVar[str] = "prefix"

    @classmethod
    def default_strategy(cls, n_bins: int, cache: StrategyCache | None) -> Strategy:
        """:func:`treedp.strategy.store.padded_strategy` (shipped: no cache, no optimisation)."""
        strategy = padded_strategy(n_bins, cls.workload)
        if strategy is None:
            raise InvalidParameterError(
                f"mechanism='strategy_padded' releases 1 to {PADDED_MAX_BINS} bins (a shipped "
                "strategy on its first bins); use 'strategy_tree' or 'auto' for more."
            )
        return strategy

    @classmethod
    def plan_candidate(cls, *args: Any, **kwargs: Any) -> PlanCandidate | None:
        """The padded strategy for a ``B`` no strategy ships for, scored exactly
        (:func:`treedp.strategy.candidate.plan_candidate` with ``padded=True``); None where one
        ships (``"strategy"`` offers it), above :data:`PADDED_MAX_BINS`, under ``replace`` or
        for Gaussian noise."""
        return plan_candidate(*args, **kwargs, padded=True)
