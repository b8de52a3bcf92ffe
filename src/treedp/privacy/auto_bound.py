"""``max_contributions="auto"``: the rows kept per person, chosen privately from the data.

A bound ``m`` on the rows each person keeps trades two errors. Every key's tree is noised for a
person moving ``m`` records, so its noise grows like ``m·R`` (``R``: the error of the same tree
at one record per person); every row beyond a person's ``m`` is dropped, a bias that shrinks by
one row per person above ``m`` for each step of ``m``. The sum ``D(m) + G·m·R`` (``D(m)``:
rows dropped, ``G``: the keys) is smallest where the number of persons with more than ``m``
rows crosses ``G·R`` (the bias–variance rule of Amin, Kulesza, Muñoz Medina and Vassilvitskii,
"Bounding User Contributions: A Bias-Variance Trade-off in Differential Privacy", ICML 2019).

Mechanism
---------
The exponential mechanism (McSherry and Talwar 2007) over the public candidates ``m``: the
integers ``round(2**(j/4))`` up to ``cap`` (a geometric grid: about four per doubling, so the
many bounds above every person's rows, which all score alike, do not outweigh the good ones),
with score ``u(m) = -|#{persons with at most m rows} - (P - t)|``, ``P`` the
number of persons and ``t = G·R`` the public target, sampled exactly
(:func:`treedp.noise.exponential.sample_weighted_laplace`, at ``rate ≤ ε_a/2``).

Guarantee
---------
Pure ``ε_a``-DP for the **person** (the release's privacy unit), under adding or removing one
person with all their rows and under replacing one person's rows by another's. Sensitivity:
one person changes the count ``#{r ≤ m}`` of every candidate by at most 1 and ``P`` by at most 1
(add/remove; 0 under replace) in the same direction, so each score moves by at most 1; the
mechanism at rate ``ε_a/2`` is ``ε_a``-DP. The rows a person has are counted after the public
filters (missing values dropped, keys outside the public list dropped), which depend on that
person's rows only. The chosen bound is part of the output (``GroupedRelease.bounds``); the
trees then spend the rest of ε at ``(ε - ε_a)/Δ(m)`` per record, and the two compose to at most
ε (basic composition; :class:`treedp.release.unit.PersonUnit` states the sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import math

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.exponential import sample_weighted_laplace
from treedp.noise.rational import dyadic_lower_bound

__all__ = [
    "AutoBound",
    "auto_split",
    "candidates",
    "choose_bound",
    "read_auto",
    "refuse_auto",
    "score_weights",
]

#: The largest bound ``"auto"`` may choose unless told otherwise.
DEFAULT_CAP = 2**16


@dataclass(frozen=True)
class AutoBound:
    """``max_contributions="auto"`` with its settings.

    Parameters
    ----------
    share : float, default=0.1
        The share of the person's ε spent choosing the bound (in (0, 1)).
    cap : int, default=65536
        The largest bound that can be chosen (public; candidates are ``1..cap``).

    Examples
    --------
    >>> import treedp
    >>> treedp.AutoBound(share=0.2).cap
    65536
    """

    share: float = 0.1
    cap: int = DEFAULT_CAP

    def __post_init__(self) -> None:
        share = self.share
        if isinstance(share, bool) or not isinstance(share, int | float):
            raise InvalidTypeError(
                must("share", f"be a number in (0, 1). Got {type(share).__name__} instead.")
            )
        if not 0 < share < 1:
            raise InvalidParameterError(must("share", f"lie in (0, 1). Got {share!r}."))
        cap = self.cap
        if isinstance(cap, bool) or not isinstance(cap, int | np.integer):
            raise InvalidTypeError(
                must("cap", f"be a positive int. Got {type(cap).__name__} instead.")
            )
        if not 1 <= cap <= 2**24:
            raise InvalidParameterError(must("cap", "lie in [1, 2**24]."))


def read_auto(value: Any) -> AutoBound | None:
    """``"auto"`` or an :class:`AutoBound` as one; anything else None (a fixed bound)."""
    if isinstance(value, AutoBound):
        return value
    if isinstance(value, str):
        if value != "auto":
            raise InvalidParameterError(
                must("max_contributions", f"be a positive int or 'auto'. Got {value!r}.")
            )
        return AutoBound()
    return None


def candidates(cap: int) -> np.ndarray:
    """The public bounds ``"auto"`` chooses among: ``round(2**(j/4))`` up to ``cap``, and
    ``cap`` itself, increasing and distinct."""
    top = int(np.ceil(4 * np.log2(cap))) + 1
    grid = np.unique(np.round(2.0 ** (np.arange(top) / 4)).astype(np.int64))
    out: np.ndarray = np.unique(np.append(grid[grid <= cap], cap))
    return out


def refuse_auto(limits: tuple[Any, ...], rho: float | None, *, private_keys: bool) -> None:
    """What ``"auto"`` does not do (yet), refused before anything is read: other bounds with
    it, Gaussian noise (its cost would need the bounded-range conversion), private keys."""
    if limits[1] is not None or limits[2] is not None:
        raise InvalidParameterError(
            "max_contributions='auto' chooses the rows kept per person; give it without "
            "'max_groups' and 'max_contributions_per_group'."
        )
    if rho is not None:
        raise InvalidParameterError(
            "max_contributions='auto' is for pure epsilon (epsilon=...); under zCDP give a "
            "fixed 'max_contributions'."
        )
    if private_keys:
        raise InvalidParameterError(
            "max_contributions='auto' needs the public 'keys' of a group-by release (private "
            "key selection would have to know the bound first)."
        )


def auto_split(epsilon: float, share: float) -> tuple[float, float]:
    """``(ε_a, ε - ε_a)``: the choice's budget and the trees', adding up to at most ε."""
    first = epsilon * share
    rest = math.nextafter(epsilon - first, 0.0)
    while Fraction(first) + Fraction(rest) > Fraction(epsilon):
        rest = math.nextafter(rest, 0.0)
    return first, rest


def score_weights(rows_per_person: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """How many candidates of ``grid`` have ``i = #{persons with at most m rows}``, for every
    ``i = 0..P``: the exponential mechanism's units per item, in the grid's order."""
    r = np.sort(np.asarray(rows_per_person, dtype=np.int64))
    at_most = np.searchsorted(r, grid, side="right")
    weights: np.ndarray = np.bincount(at_most, minlength=r.size + 1).astype(np.int64)
    return weights


def choose_bound(
    rows_per_person: np.ndarray,
    auto: AutoBound,
    target_above: float,
    epsilon: float,
    source: RandomSource,
) -> tuple[int, Fraction]:
    """The chosen bound and the exact ε it spent (``2·rate``, at most ``epsilon``).

    Parameters
    ----------
    rows_per_person : ndarray of int
        Each person's rows after the public filters (one entry per person, all ``>= 1``).
    auto : AutoBound
        The candidates' cap.
    target_above : float
        ``t``: how many persons should keep fewer rows than they have (public).
    epsilon : float
        The budget of this step (the person's ε times ``auto.share``).
    source : RandomSource
        Randomness (the OS's by default upstream).
    """
    grid = candidates(auto.cap)
    weights = score_weights(rows_per_person, grid)
    persons = weights.size - 1
    center = min(max(Fraction(persons) - Fraction(target_above), Fraction(0)), Fraction(persons))
    rate = dyadic_lower_bound(Fraction(epsilon) / 2)
    (unit,) = sample_weighted_laplace(weights, center, rate, 1, source)
    return int(grid[int(unit)]), 2 * rate
