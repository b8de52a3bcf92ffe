"""``max_contributions="auto"``: the rows kept per person, chosen privately from the data.

A bound ``m`` on the rows each person keeps trades three errors of a released distribution
(the bias–variance trade-off of Amin, Kulesza, Muñoz Medina and Vassilvitskii, "Bounding User
Contributions: A Bias-Variance Trade-off in Differential Privacy", ICML 2019, here for a
distribution instead of a sum):

* **noise**: every key's tree is noised for a person moving ``m`` records, so its noise is
  ``m·R`` (``R``: the exact RMSE of the same tree at one record per person, public), spread
  over the rows kept, ``N_m = Σ min(r_i, m)``: about ``a·G·m·R / N_m`` per key's CDF (``G``
  keys; ``a`` the largest error over a CDF's points against its RMSE,
  :data:`~treedp.privacy.auto_mass.SUP_NOISE`);
* **sampling**: the rows kept are a subsample of the rows: about
  ``0.87·√(G·(1/N_m − 1/N))`` (the mean sup of a Brownian bridge, with the finite-population
  factor);
* **bias**: rows dropped re-weight persons (``min(r_i, m)`` instead of ``r_i``), which moves a
  key's distribution as far as heavy persons' values differ from the others'.

By default (``AutoBound(heterogeneity=None)``) the bias is **estimated** privately: one
*mass histogram* (:mod:`treedp.privacy.auto_mass`) in which each person adds their own share
of rows in each of 32 public value cells, quantised to ``Q = 128`` integer units, to the row of
the coarse bucket (one per doubling) of their row count. Its row totals count the persons per
bucket (for ``N_m``); its cells predict the bias of every candidate ``m``, shrunk by one of its
own noise standard deviations; the bound minimises ``√(noise² + sampling²) + bias``. With a
number ``h`` (``AutoBound(heterogeneity=h)``: the rule before session 9, kept to reproduce its
choices) the histogram counts persons by their row count on the fine grid and the bias is
*assumed* to be ``h·D_m/N`` (``D_m`` rows dropped), minimising ``G·m·R / N_m + h·D_m / N``.

The per-group variant, ``max_contributions_per_group="auto"`` with a fixed ``max_groups``
``g``, chooses ``c``, the rows kept per person *per key*, the same way from the (person, key)
pairs' rows after each person's ``g`` keys were drawn (the trees' sensitivity is then ``g·c``,
or ``√g·c`` in L2: linear in ``c``, so the objective keeps its form with the pairs in place
of the persons).

Mechanism
---------
The histogram (mass, or counts on a public geometric grid of ``r``, :func:`candidates`: about
four buckets per doubling up to ``cap``, more than ``cap`` rows in the last) gets exact noise of
the budget's family (discrete Laplace at scale ``>= Δ1/ε_a`` for pure ε,
:func:`treedp.noise.sample_discrete_laplace`; discrete Gaussian at ``σ² >= Δ2²/(2ρ_a)`` for
zCDP, :func:`treedp.noise.sample_discrete_gaussian`), and the objective is evaluated on the
noisy histogram for every candidate of the grid — post-processing.

Guarantee
---------
Pure ``ε_a``-DP, or ``ρ_a``-zCDP, for the **person** (the release's privacy unit), one
histogram released. Sensitivity (exact, checked by brute force in the tests):

* mass histogram (:func:`~treedp.privacy.auto_mass.mass_sensitivity`): one person's vector
  is non-negative of sum ``Q`` in one row; add/remove ``Δ1 = Q``, ``Δ2² = Q²`` (all rows in
  one cell); replace ``Δ1 = 2Q``, ``Δ2² = 2Q²``; per group ``g`` pairs: ``gQ``, ``g²Q²``
  (the pairs may share a bucket and a cell), replace ``2gQ``, ``2g²Q²``.
* count histogram (:func:`histogram_sensitivity`), ``max_contributions``: one person is one
  entry. Adding or removing one person (with all their rows) changes one bucket by 1:
  ``Δ1 = 1``, ``Δ2² = 1``. Replacing one person's rows by another's moves one person between
  buckets: ``Δ1 = 2``, ``Δ2² = 2`` (the change ``(-1, +1)``).
* count histogram, ``max_contributions_per_group`` with ``max_groups = g``: one person owns at
  most ``g`` pairs, possibly all in one bucket. Add/remove: ``Δ1 = g``, ``Δ2² = g²`` (not
  ``g``: ``g`` pairs of equal size move one bucket by ``g``); replace: ``Δ1 = 2g``,
  ``Δ2² = 2g²`` (the change ``v' - v`` of two non-negative vectors of sum ``<= g`` has squared
  norm at most ``‖v‖² + ‖v'‖²``; attained by ``(-g, +g)``).

A person's rows, values and row counts are taken after the public filters (missing values,
keys outside the public list) and, per key, after their ``g`` keys are drawn uniformly from
their own rows and fresh randomness: each depends on that person's rows only (the coupling
argument of :mod:`treedp.privacy.contribution`). The chosen bound is part of the output
(``GroupedRelease.bounds``); the trees then spend the rest at ``(ε - ε_a)/Δ1`` or
``(ρ - ρ_a)/Δ2²`` per record, and the two compose (basic composition, exact in rationals) to
at most ε or ρ (:class:`treedp.release.unit.PersonUnit` and ``GroupedRelease.guarantee``
state the sum; the record names the histogram, ``histogram: "mass"``, so a loader recomputes
its loss at the right sensitivity: :func:`check_choice_loss`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from treedp._codes import factorize
from treedp._validation import must
from treedp.budget import rest_below
from treedp.exceptions import InvalidParameterError, InvalidTypeError, ReleaseFormatError
from treedp.noise import RandomSource
from treedp.noise.families import BudgetedFamily, DiscreteGaussian, DiscreteLaplace
from treedp.privacy.auto_mass import (
    estimated_objective,
    mass_counts,
    mass_sensitivity,
    value_cells,
)
from treedp.privacy.contribution import ContributionBounds, bound_contributions, pair_codes

__all__ = [
    "AUTO_NAMES",
    "AutoBound",
    "auto_limits",
    "auto_split",
    "bucket_counts",
    "candidates",
    "check_choice_loss",
    "choice_noise",
    "choice_noises",
    "choice_weight",
    "choose_bound",
    "choose_from_histogram",
    "entry_histograms",
    "histogram_sensitivity",
    "objective",
    "person_codes",
    "read_auto",
]

#: The largest bound ``"auto"`` may choose unless told otherwise.
DEFAULT_CAP = 2**16
#: More rows than any table holds: the stand-in "no bound" of the ``max_groups`` draw.
_UNBOUNDED = 2**62


@dataclass(frozen=True)
class AutoBound:
    """``max_contributions="auto"`` with its settings.

    Parameters
    ----------
    share : float, default=0.1
        The share of the person's ε spent choosing the bound (in (0, 1)).
    cap : int, default=65536
        The largest bound that can be chosen (public; candidates on a geometric grid up to it).
    heterogeneity : float or None, default=None
        None (the default): the bias that dropping rows causes is *estimated* privately from
        one mass histogram at the whole share (:mod:`treedp.privacy.auto_mass`: each person's
        shares of rows in public value cells, by row-count bucket; its row sums also count
        the persons). A number ``h`` in [0, 1]: the rule of versions before
        session 9, kept for reproducing their choices: one histogram (the whole share), and
        the bias *assumed* to be ``h`` times the share of rows dropped (0 keeps as few rows
        as noise allows; 1 assumes the worst case).

    Examples
    --------
    >>> import treedp
    >>> treedp.AutoBound(share=0.2).cap
    65536
    """

    share: float = 0.1
    cap: int = DEFAULT_CAP
    heterogeneity: float | None = None

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
        if h is not None and (isinstance(h, bool) or not isinstance(h, int | float)):
            raise InvalidParameterError(must("heterogeneity", "be None or a number in [0, 1]."))
        if h is not None and not 0 <= h <= 1:
            raise InvalidParameterError(must("heterogeneity", "be None or a number in [0, 1]."))

    @property
    def estimated(self) -> bool:
        """Whether the bias is estimated (from the mass histogram) rather than assumed."""
        return self.heterogeneity is None


def read_auto(value: Any, name: str = "max_contributions") -> AutoBound | None:
    """``"auto"`` or an :class:`AutoBound` as one; anything else None (a fixed bound)."""
    if isinstance(value, AutoBound):
        return value
    if isinstance(value, str):
        if value != "auto":
            raise InvalidParameterError(must(name, f"be a positive int or 'auto'. Got {value!r}."))
        return AutoBound()
    return None


#: The bounds ``"auto"`` can choose, in the order of a privacy unit's limits.
AUTO_NAMES = ("max_contributions", "max_groups", "max_contributions_per_group")


def auto_limits(
    limits: tuple[Any, ...], *, grouped: bool, private_keys: bool
) -> tuple[AutoBound | None, str | None, tuple[Any, ...]]:
    """The ``"auto"`` request among ``(max_contributions, max_groups, per_group)``: its
    settings, the bound's name, and the limits with a stand-in ``1`` for it (bound 1: the
    public noise unit of :func:`objective`). Refused before anything is read: ``"auto"`` with
    bounds it cannot be combined with, ``max_groups="auto"``, private key selection."""
    found = [(read_auto(v, n), n) for v, n in zip(limits, AUTO_NAMES, strict=True)]
    autos = [(a, n) for a, n in found if a is not None]
    if not autos:
        return None, None, limits
    (auto, name), m, g = autos[0], limits[0], limits[1]
    if name == "max_groups" or len(autos) > 1:
        raise InvalidParameterError(
            "'auto' chooses 'max_contributions' (alone) or 'max_contributions_per_group' "
            "(with a fixed 'max_groups'); give the other bounds as positive ints."
        )
    if name == "max_contributions" and (g is not None or limits[2] is not None):
        raise InvalidParameterError(
            "max_contributions='auto' chooses the rows kept per person; give it without "
            "'max_groups' and 'max_contributions_per_group' (or use "
            "max_contributions_per_group='auto' with a fixed 'max_groups')."
        )
    if name == "max_contributions_per_group" and (not grouped or g is None or m is not None):
        raise InvalidParameterError(
            "max_contributions_per_group='auto' needs 'by', a fixed int 'max_groups' and no "
            "'max_contributions' (the rows kept per person are then max_groups times the bound "
            "chosen)."
        )
    if private_keys:
        raise InvalidParameterError(
            f"{name}='auto' needs the public 'keys' of a group-by release (private key "
            "selection would have to know the bound first)."
        )
    stand_in = tuple(1 if n == name else v for v, n in zip(limits, AUTO_NAMES, strict=True))
    return auto, name, stand_in


def histogram_sensitivity(neighbours: str, weight: int = 1) -> tuple[int, int]:
    """``(Δ1, Δ2²)`` of the histogram when each person owns up to ``weight`` entries (1: the
    persons; ``max_groups``: the (person, key) pairs): ``(w, w²)`` under add/remove, ``(2w,
    2w²)`` under replace (module docstring)."""
    k = 2 if neighbours == "replace" else 1
    return k * weight, k * weight * weight


def choice_noise(
    family: type[BudgetedFamily], neighbours: str, weight: int, budget: float
) -> tuple[BudgetedFamily, int, int]:
    """The choice's noise (``family`` calibrated to the budget) and its sensitivity
    ``(Δ1, Δ2²)`` (:func:`histogram_sensitivity`): all public."""
    l1, l2_squared = histogram_sensitivity(neighbours, weight)
    return family.calibrated(l1, l2_squared, budget), l1, l2_squared


def choice_noises(
    family: type[BudgetedFamily], neighbours: str, weight: int, budget: float, estimated: bool
) -> tuple[BudgetedFamily, int, int]:
    """The noise and sensitivity of the one histogram the choice releases: the counts
    (:func:`choice_noise`), or with ``estimated`` the mass histogram
    (:func:`~treedp.privacy.auto_mass.mass_sensitivity`), each at the whole ``budget``."""
    if not estimated:
        return choice_noise(family, neighbours, weight, budget)
    l1, l2_squared = mass_sensitivity(neighbours, weight)
    return family.calibrated(l1, l2_squared, budget), l1, l2_squared


def choice_weight(bounds: ContributionBounds) -> int:
    """The entries one person owns in the histogram of a release at ``bounds``: 1 for
    ``max_contributions`` (its bounds are ``(m, m, m)``), ``max_groups`` per group (bounds
    ``(g·c, g, c)``; with ``m = 1`` both are 1). Read from the bounds, not from a label."""
    m, g, c = bounds.max_contributions, bounds.max_groups, bounds.max_contributions_per_group
    return 1 if g == m and c == m else int(g)


def check_choice_loss(
    stored: dict[str, Any], spent: float, unit: str, neighbours: str, weight: int
) -> None:
    """Refuse a stored choice whose stated spend is below the loss its noise implies.

    ``stored`` holds ``noise_parameter`` (the exact scale, or σ² for ``unit="rho"``, as text
    ``"p/q"``) and ``sensitivity`` (``[Δ1, Δ2²]``) of the histogram released, and
    ``histogram: "mass"`` when it was the mass histogram (the bias estimated, files written
    from session 9 on; older files hold the count histogram and no such field). The
    sensitivity must be at least the variant's (:func:`histogram_sensitivity`, or
    :func:`~treedp.privacy.auto_mass.mass_sensitivity`, at ``weight``) and ``spent`` at least
    the exact loss recomputed from both (a file cannot claim to have spent less than its noise
    costs).

    Raises
    ------
    ReleaseFormatError
        If a field is missing or malformed, or the loss exceeds ``spent``.
    """
    family = DiscreteGaussian if unit == "rho" else DiscreteLaplace
    kind = stored.get("histogram", "counts")
    try:
        parameter = Fraction(str(stored["noise_parameter"]))
        l1, l2_squared = (int(v) for v in stored["sensitivity"])
        noise = family(parameter)
        if kind not in ("counts", "mass"):
            raise ValueError(kind)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, InvalidParameterError):
        raise ReleaseFormatError(
            "the bound choice does not state its noise parameter and sensitivity"
        ) from None
    sensitivity = mass_sensitivity if kind == "mass" else histogram_sensitivity
    need = sensitivity(neighbours, weight)
    if l1 < need[0] or l2_squared < need[1]:
        raise ReleaseFormatError("the bound choice states a sensitivity below its variant's")
    if Fraction(spent) < noise.loss(l1, l2_squared):
        raise ReleaseFormatError("the bound choice states less than its noise spent")


def candidates(cap: int) -> np.ndarray:
    """The public bounds ``"auto"`` chooses among: ``round(2**(j/4))`` up to ``cap``, and
    ``cap`` itself, increasing and distinct."""
    top = int(np.ceil(4 * np.log2(cap))) + 1
    grid = np.unique(np.round(2.0 ** (np.arange(top) / 4)).astype(np.int64))
    out: np.ndarray = np.unique(np.append(grid[grid <= cap], cap))
    return out


def auto_split(epsilon: float, share: float) -> tuple[float, float]:
    """``(ε_a, ε - ε_a)``: the choice's budget and the trees', adding up to at most ε (the
    same for ``ρ``)."""
    first = epsilon * share
    return first, min(rest_below(epsilon, first), math.nextafter(epsilon - first, 0.0))


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


def entry_codes(
    person: np.ndarray,
    group: np.ndarray | None,
    max_groups: int | None,
    source: RandomSource,
    n_groups: int,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Each kept row's entry, as codes in ``[0, n)`` with every code present: persons
    (``max_groups`` None), or (person, key) pairs after each person's ``max_groups`` keys were
    drawn uniformly (as :func:`~treedp.privacy.contribution.bound_contributions` draws them);
    and the rows the draw keeps (None: all). ``np.bincount`` of the codes is each entry's rows.

    ``person`` identifies each row's person by any values numpy can tell apart: a 1-D array
    (codes, ids or 64-bit hashes, any bit patterns) or a 2-D array with one row per record
    (a wide hash in several words; equal rows, same person). It is first turned into dense
    codes (:func:`person_codes`); no arithmetic is done on the ids themselves, so the
    (person, key) pairing is injective. ``group``: codes in ``[0, n_groups)``."""
    p = person_codes(person)
    if p.size == 0 or max_groups is None:
        return p, None
    assert group is not None
    draw = ContributionBounds(None, _UNBOUNDED, max_groups, _UNBOUNDED)
    rows = bound_contributions(p, group, draw, source, n_groups)
    pairs = pair_codes(p[rows], np.asarray(group)[rows], n_groups)  # in [0, n), maybe gaps
    present = np.bincount(pairs) > 0
    dense: np.ndarray = (np.cumsum(present) - 1)[pairs]
    return dense, rows


def entry_histograms(
    person: np.ndarray,
    group: np.ndarray | None,
    bins: np.ndarray | None,
    n_bins: int,
    max_groups: int | None,
    source: RandomSource,
    n_groups: int,
    grid: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The count histogram (entries per bucket of ``grid``), the mass histogram
    (:func:`~treedp.privacy.auto_mass.mass_counts` of each row's bin ``bins`` among
    ``n_bins``; None when ``bins`` is None: the bias is assumed, not estimated) and the rows
    the ``max_groups`` draw keeps (None: all). Each depends on the entries' own rows only, so
    parts holding disjoint persons add up."""
    codes, rows = entry_codes(person, group, max_groups, source, n_groups)
    counts = bucket_counts(np.bincount(codes), grid)
    if bins is None:
        return counts, None, rows
    kept = np.asarray(bins, dtype=np.int64) if rows is None else np.asarray(bins)[rows]
    return counts, mass_counts(codes, value_cells(kept, n_bins), grid), rows


def person_codes(person: np.ndarray) -> np.ndarray:
    """Dense codes in ``[0, n)`` of a per-row person identity: equal identities, equal codes,
    numbered in the identities' order. 1-D: :func:`treedp._codes.factorize`; 2-D (one row per
    record, e.g. a 128-bit hash as two words): ``np.unique(axis=0)``'s inverse."""
    arr = np.asarray(person)
    if arr.ndim == 2:
        if arr.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        _, inverse = np.unique(arr, axis=0, return_inverse=True)
        return np.asarray(inverse).ravel().astype(np.int64)
    if arr.ndim != 1:
        raise InvalidParameterError("A person identity must be a 1-D or 2-D array.")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(factorize(arr)[0], dtype=np.int64).ravel()


def choose_bound(
    rows_per_person: np.ndarray,
    auto: AutoBound,
    noise_unit: float,
    epsilon: float,
    neighbours: str,
    source: RandomSource,
    largest: int | None = None,
    *,
    family: type[BudgetedFamily] = DiscreteLaplace,
    weight: int = 1,
) -> tuple[int, Fraction]:
    """:func:`choose_from_histogram` of the rows per person (or pair) ``rows_per_person``
    (all ``>= 1``) on the grid ``candidates(min(cap, largest))``, the bias assumed (the rows'
    values are not given: ``auto.heterogeneity``, 0.1 when None)."""
    grid = candidates(auto.cap if largest is None else max(1, min(auto.cap, largest)))
    hist = bucket_counts(rows_per_person, grid)
    if auto.estimated:
        auto = AutoBound(auto.share, auto.cap, 0.1)
    return choose_from_histogram(
        hist, grid, auto, noise_unit, epsilon, neighbours, source, family=family, weight=weight
    )


def choose_from_histogram(
    hist: np.ndarray,
    grid: np.ndarray,
    auto: AutoBound,
    noise_unit: float,
    epsilon: float,
    neighbours: str,
    source: RandomSource,
    *,
    family: type[BudgetedFamily] = DiscreteLaplace,
    weight: int = 1,
    mass: np.ndarray | None = None,
    keys: int = 1,
) -> tuple[int, Fraction]:
    """The chosen bound and the exact budget it spent (at most ``epsilon``, in ``family``'s
    unit: ε for discrete Laplace, ρ for discrete Gaussian).

    Parameters
    ----------
    hist : ndarray of int
        The persons (or (person, key) pairs) per bucket of ``grid``
        (:func:`bucket_counts`, summed over parts that hold disjoint persons).
    grid : ndarray of int
        The public candidates (:func:`candidates` up to the largest bound the trees can take:
        their budget at ``Δ(m)`` must stay valid, so that no choice is refused after the
        charge).
    auto : AutoBound
        The settings (``heterogeneity``: None estimates the bias from ``mass``).
    noise_unit : float
        ``G·R``: the keys times one key's CDF RMSE at bound 1 (public).
    epsilon : float
        The budget of this step (the person's ε or ρ times ``auto.share``).
    neighbours : {"add_remove", "replace"}
        The person-level relation (``replace`` doubles the sensitivity).
    source : RandomSource
        Randomness (the OS's by default upstream).
    family : BudgetedFamily subclass, default DiscreteLaplace
        The noise (a registered family: ``calibrated`` to ``(Δ1, Δ2²)`` and the budget).
    weight : int, default=1
        The entries one person owns (``max_groups`` for the per-group variant):
        :func:`histogram_sensitivity`.
    mass : ndarray of int, optional
        The mass histogram (:func:`entry_histograms`), needed when ``auto.estimated``.
    keys : int, default=1
        ``G``, the keys (the sampling error is per key).

    Notes
    -----
    Buckets whose noisy count does not exceed ``s·ln(40·len(grid))/√2`` (``s`` the noise's
    standard deviation; for discrete Laplace of scale ``t``, about ``t·ln(40·len(grid))``) are
    taken as empty (post-processing): a bucket of heavy contributors weighs ``r`` rows per
    person in the objective, so noise alone in the many empty high buckets would otherwise
    pull the choice towards the cap (a false bucket survives in about one release in a
    hundred under discrete Laplace, far fewer under the Gaussian's lighter tail; with every
    bucket empty the smallest bound is chosen).
    """
    noise, l1, l2_squared = choice_noises(family, neighbours, weight, epsilon, auto.estimated)
    if auto.heterogeneity is not None:
        noisy = np.asarray(hist, dtype=np.int64) + noise.sample(grid.size, source)
        floor = math.sqrt(noise.variance() / 2.0) * math.log(40 * grid.size)
        noisy = np.where(noisy > floor, noisy, 0)
        score = objective(noisy, grid, noise_unit, auto.heterogeneity)
    else:
        if mass is None:
            raise ValueError("the estimated bias needs the mass histogram")  # pragma: no cover
        cells = np.asarray(mass, dtype=np.int64)
        noisy_mass = cells + noise.sample(cells.size, source).reshape(cells.shape)
        sd = math.sqrt(noise.variance())
        kind = family.guarantee_kind
        score = estimated_objective(noisy_mass, sd, grid, noise_unit, keys, kind)
    best = int(np.argmin(score))
    return int(grid[best]), noise.loss(l1, l2_squared)
