"""``max_contributions="auto"``: the rows kept per person, chosen privately from the data.

A bound ``m`` on the rows each person keeps trades two errors of a released distribution.
Every key's tree is noised for a person moving ``m`` records, so its noise is ``m·R``
(``R``: the exact RMSE of the same tree at one record per person, public), spread over the
rows kept, ``N_m = Σ min(r_i, m)``: a relative error of about ``G·m·R / N_m`` per key (``G``
keys). Rows beyond a person's ``m`` are dropped, which changes the distribution only as far as
heavy contributors differ from the rest: at most the share dropped, ``D_m / N``, times how much
persons' distributions differ (``heterogeneity``, ``h``, a public setting). The bound minimises
``G·m·R / N_m + h·D_m / N`` (the bias–variance trade-off of Amin, Kulesza, Muñoz Medina and
Vassilvitskii, "Bounding User Contributions: A Bias-Variance Trade-off in Differential
Privacy", ICML 2019, for a distribution instead of a sum).

Mechanism
---------
The number of persons with ``r`` rows is counted on a public geometric grid of ``r``
(:func:`candidates`: about four buckets per doubling up to ``cap``; a person with more than
``cap`` rows counts in the last), exact discrete Laplace noise is added to each bucket
(:func:`treedp.noise.sample_discrete_laplace` at scale ``≥ Δ/ε_a``), and the objective above
is evaluated on the noisy histogram for every candidate ``m`` of the grid — post-processing.

Guarantee
---------
Pure ``ε_a``-DP for the **person** (the release's privacy unit). Sensitivity: adding or removing
one person (with all their rows) changes one bucket by 1 (``Δ = 1``); replacing one person's
rows by another's moves one person between buckets (``Δ = 2``). A person's row count is taken
after the public filters (missing values, keys outside the public list), which depend on that
person's rows only. The chosen bound is part of the output (``GroupedRelease.bounds``); the
trees then spend the rest at ``(ε - ε_a)/Δ(m)`` per record and the two compose to at most ε
(:class:`treedp.release.unit.PersonUnit` and ``GroupedRelease.guarantee`` state the sum).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import RandomSource
from treedp.noise.discrete_laplace import sample_discrete_laplace
from treedp.noise.rational import noise_scale

__all__ = [
    "AutoBound",
    "auto_split",
    "bucket_counts",
    "candidates",
    "choose_bound",
    "objective",
    "read_auto",
    "refuse_auto",
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
        The largest bound that can be chosen (public; candidates on a geometric grid up to it).
    heterogeneity : float, default=0.1
        ``h``: how far one person's distribution is assumed to differ from the others' (the
        CDF distance the rows dropped can move a key's distribution by, per unit of share
        dropped). 0 keeps as few rows as noise allows; 1 assumes the worst case.

    Examples
    --------
    >>> import treedp
    >>> treedp.AutoBound(share=0.2).cap
    65536
    """

    share: float = 0.1
    cap: int = DEFAULT_CAP
    heterogeneity: float = 0.1

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
        h = self.heterogeneity
        if isinstance(h, bool) or not isinstance(h, int | float) or not 0 <= h <= 1:
            raise InvalidParameterError(must("heterogeneity", "be a number in [0, 1]."))


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


def bucket_counts(rows_per_person: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Persons per bucket ``[grid[j], grid[j+1])`` of their row count (the last open)."""
    r = np.asarray(rows_per_person, dtype=np.int64)
    bucket = np.searchsorted(grid, r, side="right") - 1
    counts: np.ndarray = np.bincount(np.maximum(bucket, 0), minlength=grid.size)
    return counts


def objective(noisy: np.ndarray, grid: np.ndarray, noise_unit: float, h: float) -> np.ndarray:
    """``G·m·R / N_m + h·D_m / N`` for every candidate ``m = grid[j]`` from (noisy) bucket
    counts: a bucket's persons are taken at the geometric middle of the bucket."""
    cnt = np.maximum(np.asarray(noisy, dtype=np.float64), 0.0)
    upper = np.append(grid[1:], grid[-1])
    rep = np.sqrt(grid * upper.astype(np.float64))
    kept = np.array([float(cnt @ np.minimum(rep, m)) for m in grid])
    total = max(float(cnt @ rep), 1.0)
    relative_noise = noise_unit * grid / np.maximum(kept, 1.0)
    out: np.ndarray = relative_noise + h * (total - kept) / total
    return out


def choose_bound(
    rows_per_person: np.ndarray,
    auto: AutoBound,
    noise_unit: float,
    epsilon: float,
    neighbours: str,
    source: RandomSource,
    largest: int | None = None,
) -> tuple[int, Fraction]:
    """The chosen bound and the exact ε it spent (at most ``epsilon``).

    Parameters
    ----------
    rows_per_person : ndarray of int
        Each person's rows after the public filters (one entry per person, all ``>= 1``).
    auto : AutoBound
        The settings (cap, heterogeneity).
    noise_unit : float
        ``G·R``: the keys times one key's CDF RMSE at one record per person (public).
    epsilon : float
        The budget of this step (the person's ε times ``auto.share``).
    neighbours : {"add_remove", "replace"}
        The person-level relation (``replace`` doubles the sensitivity).
    source : RandomSource
        Randomness (the OS's by default upstream).
    largest : int, optional
        The largest bound the trees can take (public: their budget at ``Δ(m)`` must stay a
        valid ε), so that no choice can be refused after the charge.

    Notes
    -----
    Buckets whose noisy count does not exceed ``scale·ln(40·len(grid))`` are taken as empty
    (post-processing): a bucket of heavy contributors weighs ``r`` rows per person in the
    objective, so noise alone in the many empty high buckets would otherwise pull the choice
    towards the cap (a false bucket survives in about one release in a hundred; with every
    bucket empty the smallest bound is chosen).
    """
    grid = candidates(auto.cap if largest is None else max(1, min(auto.cap, largest)))
    sensitivity = 2 if neighbours == "replace" else 1
    scale = noise_scale(sensitivity, epsilon)
    noisy = bucket_counts(rows_per_person, grid) + sample_discrete_laplace(scale, grid.size, source)
    noisy = np.where(noisy > float(scale) * math.log(40 * grid.size), noisy, 0)
    best = int(np.argmin(objective(noisy, grid, noise_unit, auto.heterogeneity)))
    return int(grid[best]), Fraction(sensitivity) / scale
