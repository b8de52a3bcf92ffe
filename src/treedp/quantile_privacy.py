"""Privacy targets of a quantile query other than a pure ε: ``privacy=ZCDP(ρ)`` or
``ApproxDP(ε, δ)``, each method charged at its tightest proven cost.

* The exponential and recursive methods (bounded or not) are compositions of exponential
  mechanisms; one of pure loss ``ε_j`` (rate ``ε_j/(2Δ)``) is ``ε_j``-bounded range, hence
  ``ε_j²/8``-zCDP (Cesar and Rogers 2021, "Bounding, concentrating and truncating: unifying
  privacy loss composition for data analytics", ALT 2021, Lemma 3.2; Durfee and Rogers 2019
  for bounded range), and zCDP adds up: ``ρ = Σ ε_j²/8``
  (:func:`treedp.value_methods.unbounded_quantiles.zcdp_cost`), four times less than the
  ``ε_j²/2`` of the generic pure-to-zCDP conversion. The recursion's side counts (discrete
  Laplace, pure loss ``c`` per level) cost ``c²/2`` each (Bun and Steinke 2016), added per
  node to its selection's ``e²/8`` (:func:`~.quantiles_recursive.depth_zcdp`). A zCDP target
  is met by the largest ε whose steps cost at most ρ (:func:`calibrate`); an ``(ε, δ)``
  target by whichever is larger of the pure ε itself and the ε of the largest ρ whose CKS
  conversion at δ is at most ε.
* The tree releases with discrete Gaussian noise (the library's zCDP path) at ``ρ`` (an
  ``(ε, δ)`` target converted by the release).
* A private bounds step (pure AboveThreshold scans: the tree's, both sides or one) and
  ``n="private"`` stay pure-ε only: refused with a target, before anything is read. Private
  bounds without a step (the exponential and recursive methods over every float, on a public
  side if one is given) take a target.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy.measures import ZCDP, ApproxDP, Measure, PureDP, zcdp_to_epsilon
from treedp.privacy.spend import SpendRecord
from treedp.spec import check_target

__all__ = ["calibrate", "check_privacy", "equivalent_epsilon", "spend_record"]

#: The methods run on exponential mechanisms (their cost is computed from their steps).
SELECTION_METHODS = ("exponential", "recursive")


def check_privacy(epsilon: Any, privacy: Any) -> tuple[float | None, Measure | None]:
    """``(epsilon, None)`` for a pure budget, ``(None, target)`` for a zCDP or (ε, δ) one.

    Raises
    ------
    InvalidParameterError
        Both or neither given, ``ApproxDP`` with ``δ = 0`` (give ``epsilon``), or a target
        out of range (:func:`treedp.spec.check_target`, as for :func:`treedp.release_cdf`:
        a ``ZCDP`` names ``'rho'``).
    InvalidTypeError
        ``privacy`` is not a measure.
    """
    if privacy is None:
        if epsilon is None:
            raise InvalidParameterError(
                "Give the budget: 'epsilon' (pure DP) or 'privacy' (ZCDP(rho) or "
                "ApproxDP(epsilon, delta))."
            )
        return epsilon, None
    if epsilon is not None:
        raise InvalidParameterError(
            "Give 'epsilon' or 'privacy', not both (with privacy=..., pass epsilon=None)."
        )
    if isinstance(privacy, PureDP):
        return privacy.epsilon, None
    if not isinstance(privacy, ZCDP | ApproxDP):
        raise InvalidTypeError(
            "The 'privacy' parameter must be a treedp.ZCDP(rho), treedp.ApproxDP(epsilon, "
            f"delta) or treedp.PureDP(epsilon). Got {type(privacy).__name__} instead."
        )
    if isinstance(privacy, ApproxDP) and privacy.delta == 0:
        raise InvalidParameterError(
            "The 'privacy' parameter: ApproxDP with delta=0 is pure DP; give 'epsilon'."
        )
    return None, check_target(privacy)  # 'rho' named for ZCDP, as release_cdf does


def _rho_for(target: ApproxDP) -> float:
    """The largest ρ (bisection, rounded down) with ρ-zCDP ⇒ (ε, δ)-DP."""
    lo, hi = 0.0, target.epsilon
    for _ in range(100):
        mid = (lo + hi) / 2
        if zcdp_to_epsilon(mid, target.delta) <= target.epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def equivalent_epsilon(privacy: Measure) -> float:
    """A pure ε standing for the target in the public choice rules (method, tree bins)."""
    if isinstance(privacy, PureDP):
        return privacy.epsilon
    rho = privacy.rho if isinstance(privacy, ZCDP) else _rho_for(privacy)
    return max(math.sqrt(2 * rho), privacy.epsilon if isinstance(privacy, ApproxDP) else 0.0)


def _rho(levels: np.ndarray, eps: float, relation: str, method: str) -> Fraction:
    from treedp.value_methods.unbounded_quantiles import rho_of

    return rho_of(levels, eps, relation, method == "exponential")


def _largest_epsilon(rho: float, levels: np.ndarray, relation: str, method: str) -> float:
    """The largest ε whose steps cost at most ``rho`` under bounded range."""
    unit = float(_rho(levels, 1.0, relation, method))
    eps = math.sqrt(rho / unit) if unit > 0 else 0.0
    while eps > 0 and _rho(levels, eps, relation, method) > Fraction(rho):
        eps = math.nextafter(eps * (1 - 1e-12), 0.0)
    return eps


def calibrate(privacy: Measure, levels: np.ndarray, relation: str, method: str) -> float:
    """The pure ε the method runs with so that its cost meets ``privacy`` (the selection
    methods), or the target's equivalent ε for the tree (which releases at the target)."""
    if method not in SELECTION_METHODS:
        return equivalent_epsilon(privacy)
    if isinstance(privacy, PureDP):
        return privacy.epsilon
    if isinstance(privacy, ZCDP):
        return _largest_epsilon(privacy.rho, levels, relation, method)
    by_zcdp = _largest_epsilon(_rho_for(privacy), levels, relation, method)
    return max(privacy.epsilon, by_zcdp)


def spend_record(
    record: SpendRecord, privacy: Measure, levels: np.ndarray, relation: str, method: str,
    eps: float,
) -> SpendRecord:  # fmt: skip
    """The method's record restated at its tightest cost for the target: ``ZCDP(Σ ε_j²/8)``
    (bounded range) when that is how the target was met, else the record as it is."""
    from treedp.value_methods._column import float_up

    if method not in SELECTION_METHODS or isinstance(privacy, PureDP):
        return record
    if isinstance(privacy, ApproxDP) and eps == privacy.epsilon:  # met as pure ε
        return record
    rho = _rho(levels, eps, relation, method)
    parameters = {
        **dict(record.parameters),
        "zcdp": (
            "bounded range: rho = sum of eps_j**2/8 over the selections (Cesar and Rogers "
            "2021), plus c**2/2 for each pure-c step of the recursion's counts"
        ),
        "rho": float_up(rho),
    }
    return SpendRecord(record.mechanism, ZCDP(float_up(rho)), relation, record.unit, parameters)
