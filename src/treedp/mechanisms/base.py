"""What every mechanism shares: the privacy contract as data, and noise per block.

A mechanism releases one or more *blocks* (integer vectors: the levels of a tree, a histogram,
a list of prefix counts). Each block is declared as a :class:`Block`: its size, its L1 and L2
sensitivities under the stated neighbour relation, and its noise family
(:mod:`treedp.noise.families`). Block ``b`` gets exact discrete Laplace noise of scale
``t_b >= Δ_b / ε_b``; by the Laplace mechanism (the discrete version is exact:
``P(x)/P(x + d) <= exp(|d|_1/t)``) block ``b`` is ``Δ_b/t_b <= ε_b``-DP and, by basic
composition, the whole release is ``Σ ε_b``-DP: :attr:`Mechanism.guarantee`. A block with
``Δ_b = 0`` (for example the root count under ``replace``, where the size is public) is
released exactly (no family).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Literal

import numpy as np

from treedp._validation import check_int, must
from treedp.budget import Neighbours
from treedp.domain import MAX_BINS
from treedp.estimation.covariance import IndependentPrefixCovariance, PrefixCovariance
from treedp.estimation.direct import independent_prefix
from treedp.estimation.dispatch import ESTIMATORS
from treedp.exceptions import DataError, InvalidParameterError
from treedp.noise import RandomSource, noise_scale
from treedp.noise.families import (
    BudgetedFamily,
    DiscreteGaussian,
    DiscreteLaplace,
    NoiseFamily,
    budgeted,
    float_at_least,
    noise_family,
)
from treedp.privacy.measures import Measure, PureDP, compose
from treedp.privacy.spend import SpendRecord
from treedp.tree import TreeShape
from treedp.tree.candidate import PlanCandidate

__all__ = [
    "Block",
    "CalibratedMechanism",
    "Mechanism",
    "TreePlanner",
    "check_replace_bins",
    "zcdp_description",
]

#: A planner of trees: ``(n_bins, epsilon) -> (branching, level_budgets)`` (pure ε,
#: add/remove), handed to mechanisms that plan a tree of their own after seeing their data
#: (:meth:`Mechanism.planned`); :func:`treedp.planning.best_tree` is the project's.
TreePlanner = Callable[[int, float], tuple[Sequence[int], Sequence[float]]]


@dataclass(frozen=True)
class Block:
    """One released vector: ``size`` entries with sensitivities ``l1``, ``l2`` and its noise.

    Attributes
    ----------
    size : int
        Number of entries.
    l1, l2 : int, float
        The L1 and L2 sensitivities of the block under the mechanism's neighbour relation
        (the largest change between neighbouring datasets).
    family : NoiseFamily or None
        The noise added to every entry; None for a block released exactly (sensitivity 0).
    """

    size: int
    l1: int
    l2: float
    family: NoiseFamily | None

    def privacy(self) -> Measure | None:
        """The block's guarantee, or None for an exact block."""
        return None if self.family is None else self.family.privacy(self.l1, self.l2)


class Mechanism(ABC):
    """Base class: a privacy contract (guarantee, neighbours, sensitivities) plus noise.

    Attributes
    ----------
    name : str
        The registered name (see :mod:`treedp.mechanisms.registry`).
    max_bins : int
        The largest number of bins the mechanism takes (a public limit: a caller that learns
        ``B`` from private bounds on integers keeps the found range within it).
    guarantee_kind : {"pure", "zcdp"}
        The kind of guarantee, as written in release files (``"zcdp"``: discrete Gaussian
        noise, see :class:`treedp.mechanisms.TreeMechanism`).
    neighbours : {"add_remove", "replace"}
        The neighbour relation the guarantee is stated for.
    n_bins : int
        The number of bins ``B``.
    n : int or None
        The public dataset size (``replace``), else None.
    epsilon : float
        The total pure-DP budget (``inf`` for Gaussian noise, which has no finite pure ε).
    block_epsilons : tuple of float
        The budget of each block (0 for an exact block).
    block_rhos : tuple of float or None
        The zCDP budget of each block under Gaussian noise, else None.
    block_sensitivity : tuple of int
        The L1 sensitivity of each block under ``neighbours`` (0 for an exact block).
    block_l2 : tuple of float
        The L2 sensitivity of each block under ``neighbours`` (0 for an exact block).
    scales : tuple of Fraction or None
        The exact discrete Laplace scale of each block (None for an exact block).
    """

    name: ClassVar[str]
    #: What the mechanism noises, in a few words (``treedp demo``, the HTML report); a
    #: plug-in without one is shown by its name.
    summary: ClassVar[str] = ""
    max_bins: ClassVar[int] = MAX_BINS
    guarantee_kind: Literal["pure", "zcdp"] = "pure"
    neighbours: Neighbours
    n_bins: int
    n: int | None
    epsilon: float
    block_epsilons: tuple[float, ...]
    block_rhos: tuple[float, ...] | None = None
    block_sensitivity: tuple[int, ...]
    block_l2: tuple[float, ...]
    #: The keys of the noise families it can add (:data:`treedp.noise.families.NOISES`): a
    #: family budgeted in ρ means its :meth:`from_parameters` takes ``rho=`` (:meth:`from_budget`).
    noises: ClassVar[tuple[str, ...]] = (DiscreteLaplace.key,)
    #: False when one instance cannot serve every group of a group-by release (DAWA: its
    #: partition is chosen from one dataset's counts).
    per_group: ClassVar[bool] = True
    #: True when it takes a tree shape and per-level budgets (``branching``, ``level_budgets``).
    takes_shape: ClassVar[bool] = False
    #: True when the first block is a root whose total is the public ``n`` under ``replace``
    #: (the file format then checks it).
    exact_root: ClassVar[bool] = False
    #: The estimators this mechanism offers, the default first (see :meth:`check_estimator`).
    estimators: ClassVar[tuple[str, ...]] = ("efficient", "direct")
    #: Why an estimator outside :attr:`estimators` is refused (appended to the message).
    estimator_hint: ClassVar[str] = ""
    #: True for a mechanism with one estimator, least squares, whichever name is given: the
    #: name recorded (:attr:`Release.estimator`, metadata) is then ``"efficient"``.
    least_squares_only: ClassVar[bool] = False

    def _set_scales(self) -> None:
        self.scales: tuple[Fraction | None, ...] = tuple(
            noise_scale(d, e) if d > 0 else None
            for d, e in zip(self.block_sensitivity, self.block_epsilons, strict=True)
        )

    @classmethod
    def from_parameters(
        cls,
        n_bins: int,
        *,
        epsilon: float | None = None,
        neighbours: Neighbours,
        n: int | None,
        shape: TreeShape | None = None,
        level_budgets: Sequence[float] | None = None,
        rho: float | None = None,
    ) -> Mechanism:
        """Build from the parameters every mechanism is described by (the registry's one
        constructor, through :meth:`from_budget`: no caller switches on the name). The
        default calls ``cls(n_bins, epsilon= or rho=, neighbours=, n=)`` and refuses a tree
        shape or per-level budgets, which only a mechanism that :attr:`takes_shape` uses."""
        for given, label in ((level_budgets, "level_budgets"), (shape, "branching")):
            if given is not None:
                raise InvalidParameterError(
                    f"The {label!r} parameter applies to mechanism='tree' only, not {cls.name!r}."
                )
        budget = {"epsilon": epsilon} if rho is None else {"rho": rho}
        return cls(n_bins, neighbours=neighbours, n=n, **budget)  # type: ignore[call-arg]

    @classmethod
    def from_budget(
        cls,
        n_bins: int,
        *,
        epsilon: float | None,
        rho: float | None,
        neighbours: Neighbours,
        n: int | None,
        shape: TreeShape | None = None,
        level_budgets: Sequence[float] | None = None,
    ) -> Mechanism:
        """The registry's one constructor: built for a pure ``epsilon`` (Laplace noise) or, when
        ``rho`` is given, for ρ-zCDP (Gaussian noise; refused unless :attr:`noises` has it)."""
        family, value = budgeted(epsilon, rho)
        if family.key not in cls.noises:
            label = family.label[0].upper() + family.label[1:]
            raise InvalidParameterError(
                f"{label} noise (a {family.budget_name} budget: privacy=ZCDP(...) or "
                f"ApproxDP(...)) is not available for {cls.name!r}; it adds "
                f"{' or '.join(noise_family(k).label for k in cls.noises)} noise."
            )
        return cls.from_parameters(
            n_bins,
            neighbours=neighbours,
            n=n,
            shape=shape,
            level_budgets=level_budgets,
            **{family.budget_name: value},
        )

    @classmethod
    def from_description(
        cls, meta: Mapping[str, Any], n_bins: int, budget: float, gaussian: bool
    ) -> Mechanism:
        """Rebuild the mechanism of a release file from its metadata (:meth:`describe` plus the
        release's ``neighbours`` and ``n_public``); ``budget`` is the stated total (ε, or ρ
        when ``gaussian``). The generic form builds from the registry's parameters; the file
        format then cross-checks every stated field against the result."""
        if gaussian:
            raise InvalidParameterError(f"Gaussian noise is stated for mechanism {cls.name!r}.")
        return cls.from_parameters(
            n_bins, epsilon=budget, neighbours=meta["neighbours"], n=meta.get("n_public")
        )

    @classmethod
    def plan_candidate(
        cls,
        n_bins: int,
        budget: float,
        neighbours: str,
        noise: str,
        objective: str,
        *,
        workload: Any = None,
    ) -> PlanCandidate | None:
        """What this mechanism offers the planner beyond the trees and histograms it scores
        itself: an exactly scored :class:`~treedp.tree.candidate.PlanCandidate`, or None
        (the default: nothing). ``workload``: an explicit
        :class:`treedp.planning.Workload` to score instead of ``objective`` (None when the
        mechanism cannot score it)."""
        return None

    @classmethod
    def check_estimator(cls, estimator: str | None) -> str:
        """Validate ``estimator`` for this mechanism; None picks its default.

        ``"efficient"`` is the BLUE for trees and histograms; for a baseline with one
        independent noisy value per prefix it is the same as ``"direct"``; the strategies and
        the factorisation always use least squares (both names give it, recorded as
        ``"efficient"``: :attr:`least_squares_only`).
        """
        if estimator is None:
            return cls.estimators[0]
        if estimator not in ESTIMATORS:
            raise InvalidParameterError(
                must(
                    "estimator",
                    f"be one of {', '.join(map(repr, ESTIMATORS))}. Got {estimator!r} instead.",
                )
            )
        if estimator not in cls.estimators:
            raise InvalidParameterError(
                f"estimator={estimator!r} is not available for mechanism={cls.name!r}"
                f"{cls.estimator_hint}."
            )
        return "efficient" if cls.least_squares_only else estimator

    def direct_ranges(
        self, bins: Any, levels: list[np.ndarray], level_variance: Sequence[float]
    ) -> Any:
        """A special unbiased range path of this mechanism's release, or None (the default:
        ranges are differences of prefix estimates). ``bins``, ``levels`` and
        ``level_variance`` are the release's public bins, noisy blocks and block variances."""
        return None

    def max_records(self) -> int | None:
        """The guarantee's domain: datasets of at most this many records (exact integer
        arithmetic), or None for any size (the default). A release refuses a larger dataset
        before anything is charged or drawn."""
        return None

    def check_domain(self, total: int) -> None:
        """Refuse a dataset of ``total`` records outside :meth:`max_records` (before anything
        is charged or drawn; the message holds no count)."""
        limit = self.max_records()
        if limit is not None and total > limit:
            raise DataError(
                f"mechanism={self.name!r} states its guarantee for datasets of at most "
                "max_records() records (its public domain: exact int64 arithmetic); use the "
                "tree mechanism for this release."
            )

    def planned(self, planner: TreePlanner) -> Mechanism:
        """This mechanism, planning any tree it builds later with ``planner`` (most build
        none: they return themselves)."""
        return self

    @abstractmethod
    def true_blocks(self, counts: np.ndarray) -> list[np.ndarray]:
        """The exact blocks for bin ``counts``, before any noise (int64 vectors)."""

    @property
    def families(self) -> tuple[NoiseFamily | None, ...]:
        """The noise family of each block (None for an exact block)."""
        return tuple(None if s is None else DiscreteLaplace(s) for s in self.scales)

    @property
    def blocks(self) -> tuple[Block, ...]:
        """Every released block: size, L1 and L2 sensitivity, noise family."""
        l2 = getattr(self, "block_l2", None) or tuple(
            float(np.sqrt(d)) for d in self.block_sensitivity
        )
        return tuple(
            Block(size, int(d), float(q), fam)
            for size, d, q, fam in zip(
                self._block_sizes(), self.block_sensitivity, l2, self.families, strict=True
            )
        )

    @property
    def block_budgets(self) -> tuple[float, ...]:
        """The budget of each block in the guarantee's own unit (ε; ρ for Gaussian noise)."""
        return self.block_epsilons if self.block_rhos is None else self.block_rhos

    @property
    def guarantee(self) -> Measure:
        """What the release satisfies: the blocks' guarantees composed, rounded up.

        For discrete Laplace blocks this is ``PureDP(Σ Δ_b / t_b)`` computed exactly
        (:meth:`epsilon_spent`) and rounded up to a float, so it never exceeds ``epsilon``.
        """
        if all(isinstance(f, DiscreteLaplace) for f in self.families if f is not None):
            return PureDP(float_at_least(self.epsilon_spent()))
        measures = [m for m in (b.privacy() for b in self.blocks) if m is not None]
        return compose(measures) if measures else PureDP(0.0)

    def spend(self) -> SpendRecord:
        """A frozen record of this release's spend, for an accountant to compose."""
        return SpendRecord(
            mechanism=self.name,
            measure=self.guarantee,
            neighbours=self.neighbours,
            unit="record",
            parameters=self._spend_parameters(),
        )

    def _spend_parameters(self) -> dict[str, Any]:
        pure = math.isfinite(self.epsilon)  # a zCDP release has no ε (its ρ is added below)
        return {
            "n_bins": int(self.n_bins),
            "n": self.n,
            "epsilon": self.epsilon if pure else None,
            **({"block_epsilons": tuple(self.block_epsilons)} if pure else {}),
            "noise": tuple(None if f is None else f.name for f in self.families),
        }

    def prefix_estimate(self, levels: list[np.ndarray], estimator: str) -> np.ndarray:
        """Prefix estimates ``P[m]``, ``m = 0..B``, from the noisy blocks (leading batch axes
        allowed, for simulating many releases at once). Default: the first block holds one
        independent noisy value per prefix
        (:func:`~treedp.estimation.direct.independent_prefix`)."""
        prefix = independent_prefix(levels, self.block_variance(), self.n_bins, self.n)[0]
        return np.asarray(prefix)

    def prefix_covariance(self, estimator: str) -> PrefixCovariance:
        """The exact covariance of the prefix estimates (public parameters only)."""
        return IndependentPrefixCovariance(
            self.n_bins, self.block_variance()[0], self.n is not None
        )

    def block_variance(self) -> tuple[float, ...]:
        """The noise variance of one entry of each block (0 for an exact block)."""
        return tuple(0.0 if f is None else f.variance() for f in self.families)

    def measure(self, counts: np.ndarray, source: RandomSource) -> list[np.ndarray]:
        """Return the noisy blocks for bin ``counts``, drawing noise from ``source``.

        The noise comes from :meth:`noise_only` (one repeat), the same path the privacy
        auditor exercises.
        """
        noise = self.noise_only(1, source)
        # each sum written over its fresh noise draw (no further array of the level's size),
        # then frozen: nothing else holds it, so a release keeps it without a copy
        noisy = [
            np.add(block, z[0], out=z[0])
            for block, z in zip(self.true_blocks(counts), noise, strict=True)
        ]
        for block in noisy:
            block.setflags(write=False)
        return noisy

    def release_blocks(
        self, counts: np.ndarray, source: RandomSource
    ) -> tuple[Mechanism, list[np.ndarray]]:
        """The mechanism that describes the finished release and its noisy blocks. Most
        mechanisms are fixed before the data (this one and :meth:`measure`); a data-aware one
        (DAWA) returns itself bound to what it chose privately."""
        return self, self.measure(counts, source)

    def noise_only(self, repeats: int, source: RandomSource) -> list[np.ndarray]:
        """``repeats`` independent draws of the noise alone, shape ``(repeats, size)`` per block.

        The noise distribution is public, so simulating it costs no privacy: this is what
        calibrates simultaneous bands and checks coverage.
        """
        return [
            np.zeros((repeats, size), dtype=np.int64)
            if family is None
            else family.sample(repeats * size, source).reshape(repeats, size)
            for size, family in zip(self._block_sizes(), self.families, strict=True)
        ]

    def _block_sizes(self) -> list[int]:
        """Entries per block (computed once from the blocks of empty data)."""
        if getattr(self, "_sizes", None) is None:
            empty = np.zeros(self.n_bins, dtype=np.int64)
            self._sizes = [b.size for b in self.true_blocks(empty)]
        return list(self._sizes)

    def epsilon_spent(self) -> Fraction:
        """The exact privacy loss ``Σ Δ_b / t_b``, never above :attr:`epsilon`."""
        pairs = zip(self.block_sensitivity, self.scales, strict=True)
        return sum((Fraction(d) / s for d, s in pairs if s is not None), Fraction(0))

    def privacy_loss(self, d_in: int = 1) -> float:
        """The pure ``epsilon`` guaranteed between datasets ``d_in`` neighbour steps apart.

        Pure DP composes over a chain of neighbours (group privacy): ``d_in · epsilon``.
        Gaussian noise has no finite pure ε: ``inf`` for ``d_in > 0`` (use :attr:`guarantee`
        and group privacy for zCDP, ``d_in²·ρ``).
        """
        d = check_int(d_in, "d_in", lo=0)
        if not math.isfinite(self.epsilon):
            return 0.0 if d == 0 else math.inf
        return d * float(self.epsilon_spent())

    def check(self, d_in: int, epsilon: float) -> bool:
        """Whether datasets ``d_in`` steps apart are ``epsilon``-indistinguishable."""
        return self.privacy_loss(d_in) <= epsilon

    def __repr__(self) -> str:
        """The mechanism's name, neighbours and guarantee (a new user's run printed
        ``<...StrategyMechanism object at 0x...>``); :meth:`describe` has the rest."""
        return (
            f"{type(self).__name__}(name={self.name!r}, neighbours={self.neighbours!r}, "
            f"guarantee={self.guarantee!r})"
        )

    def describe(self) -> dict[str, object]:
        """The contract as plain data (for a release's metadata)."""
        return {
            "mechanism": self.name,
            "guarantee": self.guarantee_kind,
            "neighbours": self.neighbours,
            "epsilon": self.epsilon,
            "block_epsilons": list(self.block_epsilons),
            "block_sensitivity": list(self.block_sensitivity),
            "noise": DiscreteLaplace.name,
            "scales": _fractions(self.scales),
        }


class CalibratedMechanism(Mechanism):
    """A mechanism whose noised blocks all take one budgeted noise family
    (:attr:`noise_family`), calibrated per block; each block's exact parameter is stored under
    the family's file key (``scales`` or ``sigma2``, :meth:`_parameters`) and its exact loss
    is the family's ``loss(L1, L2²)``: ``Δ1/t`` (Laplace) or ``Δ2²/(2σ²)`` (Gaussian)."""

    noise_family: type[BudgetedFamily]
    block_l2_squared: tuple[int, ...]

    @property
    def families(self) -> tuple[NoiseFamily | None, ...]:
        """The noise family of each block (None for an exact block)."""
        return tuple(None if p is None else self.noise_family.of(p) for p in self._parameters())

    def _parameters(self) -> tuple[Fraction | None, ...]:
        """Each block's exact noise parameter (``scales`` or ``sigma2``; tests may replace it)."""
        params: tuple[Fraction | None, ...] = getattr(self, self.noise_family.field)
        return params

    @property
    def guarantee(self) -> Measure:
        """``PureDP(Σ ε'_b)`` (Laplace) or ``ZCDP(Σ ρ'_b)`` (Gaussian), exact and rounded up."""
        return self.noise_family.measure(self._spent(self.noise_family.budget_name))

    def _spent(self, unit: str) -> Fraction:
        """The exact loss summed over the blocks, refused unless the noise states it in
        ``unit`` (Gaussian noise has no finite pure ε; Laplace noise is stated in ε)."""
        family = self.noise_family
        if family.budget_name != unit:
            raise InvalidParameterError(
                f"{unit}_spent() is a loss in {unit}; this mechanism uses {family.label} noise, "
                f"whose loss is {family.budget_name}_spent() ({family.guarantee_kind})."
            )
        blocks = zip(self._parameters(), self.block_sensitivity, self.block_l2_squared, strict=True)
        return sum(
            (family.of(p).loss(l1, sq) for p, l1, sq in blocks if p is not None), Fraction(0)
        )

    def rho_spent(self) -> Fraction:
        """The exact zCDP loss ``Σ_b Δ2_b²/(2σ_b²)`` of Gaussian noise, never above ``rho``."""
        return self._spent("rho")

    def epsilon_spent(self) -> Fraction:
        """The exact pure-DP loss of Laplace noise; refused for Gaussian noise, which has no
        finite pure ε (its loss is :meth:`rho_spent`)."""
        return self._spent("epsilon")


def _fractions(values: Sequence[Fraction | None]) -> list[list[int] | None]:
    """Exact rationals as ``[numerator, denominator]`` pairs (None kept), for a file."""
    return [None if v is None else [v.numerator, v.denominator] for v in values]


def zcdp_description(
    mechanism: Mechanism,
    rho: float,
    l2_squared: Sequence[int],
    sigma2: Sequence[Fraction | None],
    **extra: object,
) -> dict[str, object]:
    """:meth:`Mechanism.describe` for discrete Gaussian blocks (``rho``, ``sigma2``, no ε
    fields: none is finite); ``extra`` fields go before ``sigma2``."""
    return {
        "mechanism": mechanism.name,
        "guarantee": mechanism.guarantee_kind,
        "neighbours": mechanism.neighbours,
        "epsilon": None,
        "block_epsilons": None,
        "rho": rho,
        "block_rhos": list(mechanism.block_budgets),
        "block_sensitivity": list(mechanism.block_sensitivity),
        "block_l2_squared": list(l2_squared),
        "noise": DiscreteGaussian.name,
        "scales": None,
        **extra,
        "sigma2": _fractions(sigma2),
    }


def check_replace_bins(neighbours: str, n_bins: int) -> None:
    """Refuse ``replace`` with a single bin: its only count is the public ``n``."""
    if neighbours == "replace" and n_bins == 1:
        raise InvalidParameterError(
            "With neighbours='replace' and a single bin, the only count is the public n: there "
            "is nothing to release. Use at least 2 bins."
        )
