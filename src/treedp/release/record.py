"""The release: a frozen record of one private measurement and every query answered from it.

A :class:`Release` holds the raw noisy blocks (for a tree: one array of noisy node counts per
level, root first), their noise variances, the public bins and the privacy contract. All
queries — CDF values, range counts, quantiles, the histogram — are post-processing of these
numbers and cost no further privacy, however many are asked.

Every count query is a linear function of the prefix counts (:mod:`treedp.release.queries`):
the estimate and its standard error come from the same coefficients. Inference lives in
:mod:`treedp.release.inference`, files in :mod:`treedp.release.format`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, Any

import numpy as np

from treedp.domain import Bins
from treedp.estimation import (
    PrefixCovariance,
    check_postprocess,
    consistent_prefix,
    estimate_prefix,
    prefix_covariance,
)
from treedp.exceptions import InvalidParameterError
from treedp.mechanisms import Mechanism
from treedp.noise import RandomSource
from treedp.privacy import ApproxDP, Measure
from treedp.release import inference, queries

__all__ = ["Release", "ReleaseCodec", "register_codec"]


@dataclass(frozen=True)
class ReleaseCodec:
    """How releases become files and back: :mod:`treedp.release.format` registers the one
    codec when it is imported (the package :mod:`treedp.release` imports it), so the record
    never imports the module that reads and writes it (the layers point one way)."""

    to_document: Callable[[Release], dict[str, Any]]
    from_document: Callable[[Any, str], Release]
    save: Callable[[Release, Any, str | None], None]


_CODECS: list[ReleaseCodec] = []


def register_codec(codec: ReleaseCodec) -> None:
    """Set the file codec of :meth:`Release.to_dict`, :meth:`Release.from_dict` and
    :meth:`Release.save` (the file format's module calls this once)."""
    _CODECS[:] = [codec]


def _codec() -> ReleaseCodec:
    if not _CODECS:  # only when treedp.release.record is used without its package
        raise InvalidParameterError("No release file format is loaded: import treedp.release.")
    return _CODECS[0]


class Release:
    """A differentially private release of one column's distribution.

    Build one with :func:`treedp.release_cdf`, or read one with :func:`treedp.load_release`
    or :meth:`Release.from_dict`. A release is frozen: its attributes cannot be reassigned,
    and its arrays are read-only.

    Attributes
    ----------
    bins : Bins
        The public bins.
    mechanism : Mechanism
        The mechanism, with its privacy contract (``guarantee``, ``neighbours``,
        ``block_sensitivity``, ``block_epsilons``, ``scales``).
    noisy_levels : list of ndarray
        The raw noisy counts, one 1-D int64 array per level, top-down; for a tree level 0 is
        the root (the exact public ``n`` under ``replace``). A baseline has one block: the noisy
        histogram, prefix counts or interval counts.
    level_variance : tuple of float
        The noise variance of each level (0 for an exact level).
    estimator : str
        How counts are estimated from the noisy levels: ``"efficient"`` (best linear unbiased
        estimate from all nodes) or ``"direct"`` (covering sums).
    postprocess : str
        The consistent projection used by default (``"monotone"``, ``"monotone_l1"`` or
        ``"none"``).
    integer : bool
        Whether consistent counts are integers.
    randomness : dict
        Where the noise came from; ``randomness["seeded"]`` is True for a seeded, not
        publishable, release.
    library_version : str
        The treedp version that made the release.
    bounds_step : dict or None
        When the bounds were found privately from the same data (``bounds="private"``): what
        that step spent and released (``method``, ``stops``, ``epsilon``, ``share``, ``lo``,
        ``hi``, the public ``allowance`` of its scans, and ``known``, the public side, if
        any); its budget is not in :attr:`guarantee` (the tree's own) but in
        :attr:`total_guarantee`.
    target : dict or None
        The ``(epsilon, delta)`` target the release was asked for (``privacy=ApproxDP(ε,
        δ)``, ``--epsilon E --delta D``): ``{"epsilon": ε, "delta": δ}``. The guarantee is the
        zCDP ``rho`` that the tight conversion turns into it (:attr:`approx_target`); kept in
        the file so that ``query --info`` and the report can state the target too.
    """

    bins: Bins
    mechanism: Mechanism
    noisy_levels: list[np.ndarray]
    level_variance: tuple[float, ...]
    estimator: str
    postprocess: str
    integer: bool
    randomness: dict[str, Any]
    library_version: str
    bounds_step: dict[str, Any] | None
    target: dict[str, float] | None

    def __init__(
        self,
        *,
        bins: Bins,
        mechanism: Mechanism,
        noisy_levels: Sequence[np.ndarray],
        estimator: str,
        randomness: dict[str, Any],
        library_version: str,
        postprocess: str = "monotone",
        integer: bool = False,
        bounds_step: dict[str, Any] | None = None,
        target: dict[str, float] | None = None,
    ) -> None:
        check_postprocess(postprocess, integer)
        levels = [np.array(level, dtype=np.int64) for level in noisy_levels]
        for level in levels:
            level.setflags(write=False)
        fields = {
            "bins": bins,
            "mechanism": mechanism,
            "noisy_levels": levels,
            "level_variance": mechanism.block_variance(),
            "estimator": mechanism.check_estimator(estimator),
            "postprocess": postprocess,
            "integer": integer,
            "randomness": dict(randomness),
            "library_version": library_version,
            "bounds_step": dict(bounds_step) if bounds_step is not None else None,
            "target": dict(target) if target is not None else None,
        }
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"A Release is frozen: cannot set '{name}'.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"A Release is frozen: cannot delete '{name}'.")

    # ------------------------------------------------------------------ metadata
    @property
    def n(self) -> float:
        """The number of records: the public ``n`` under ``replace``, else its estimate.

        The estimate is the consistent one (not negative; an integer with ``integer=True``)
        unless the release has ``postprocess="none"``; ``prefix_counts[-1]`` is the unbiased one.
        """
        return float(self._counts(None)[-1])

    @property
    def epsilon(self) -> float:
        """The total privacy budget of the release."""
        return self.mechanism.epsilon

    @property
    def neighbours(self) -> str:
        """The neighbour relation of the guarantee."""
        return self.mechanism.neighbours

    @property
    def guarantee(self) -> Measure:
        """The guarantee as a value (:class:`treedp.privacy.PureDP` with the ε spent, or
        :class:`treedp.privacy.ZCDP` with the ρ spent for Gaussian noise)."""
        return self.mechanism.guarantee

    @property
    def approx_target(self) -> ApproxDP | None:
        """The ``(epsilon, delta)`` target asked for, as a guarantee (None without one): the
        release's zCDP :attr:`guarantee` implies it (the tight conversion at ``delta``)."""
        if self.target is None:
            return None
        return ApproxDP(float(self.target["epsilon"]), float(self.target["delta"]))

    @property
    def total_guarantee(self) -> Measure:
        """What the whole release cost: :attr:`guarantee` plus, when the bounds were found
        privately (:attr:`bounds_step`), that step's pure ε (basic composition). This is what
        an accountant is charged for ``release_cdf(..., bounds="private")``."""
        if self.bounds_step is None:
            return self.guarantee
        from treedp.privacy.measures import PureDP, compose

        return compose([self.guarantee, PureDP(float(self.bounds_step["epsilon"]))])

    @property
    def offers_intervals(self) -> bool:
        """Whether standard errors and intervals exist for this release.

        False for a mechanism whose answers carry a data-dependent bias that no public
        quantity bounds (``mechanism="dawa"``: each bucket's count is spread evenly over its
        bins); its :meth:`stderr`, :meth:`confidence_interval` and :meth:`quantile_interval`
        raise, and :meth:`to_arrays` fills the interval columns with NaN. It depends on the
        mechanism only (a public parameter), never on the data.
        """
        return bool(getattr(self.mechanism, "offers_intervals", True))

    @property
    def seeded(self) -> bool:
        """True when the noise came from a seeded, reproducible (not publishable) source."""
        return bool(self.randomness.get("seeded", False))

    @property
    def branching(self) -> tuple[int, ...] | None:
        """The fan-out per level of the tree (None for a baseline)."""
        shape = getattr(self.mechanism, "shape", None)  # a mechanism with a tree has one
        return None if shape is None else tuple(shape.branching)

    @property
    def level_budgets(self) -> tuple[float, ...]:
        """The budget of each noised block (per level for a tree, root first): ε, or ρ for
        Gaussian noise."""
        return self.mechanism.block_budgets

    @property
    def edges(self) -> np.ndarray:
        """The public bin edges (datetime64 for datetime bins)."""
        return self.bins.edges_as_values()

    @cached_property
    def prefix_counts(self) -> np.ndarray:
        """Estimated counts of bins ``[0, m)`` for ``m = 0..B`` (unbiased, may be non-monotone)."""
        prefix = estimate_prefix(self.mechanism, self.noisy_levels, self.estimator)
        prefix.setflags(write=False)
        return prefix

    @cached_property
    def consistent_counts(self) -> np.ndarray:
        """The consistent CDF at the edges: non-decreasing, in ``[0, n̂]``, ending at ``n̂``.

        It is the projection of :attr:`prefix_counts` chosen by ``postprocess`` (squared L2 for
        ``"monotone"``, L1 for ``"monotone_l1"``; L2 when ``postprocess="none"``), integer-valued
        when ``integer=True``.
        """
        loss = "l1" if self.postprocess == "monotone_l1" else "l2"
        fit = consistent_prefix(self.prefix_counts, loss=loss, integer=self.integer)
        fit.setflags(write=False)
        return fit

    def _counts(self, consistent: bool | None) -> np.ndarray:
        if consistent is None:
            consistent = self.postprocess != "none"
        return self.consistent_counts if consistent else self.prefix_counts

    @cached_property
    def covariance(self) -> PrefixCovariance:
        """Exact ``Cov(P[m1], P[m2])`` of the prefix estimates (from public parameters)."""
        return prefix_covariance(self.mechanism, self.estimator)

    @cached_property
    def prefix_variance(self) -> np.ndarray:
        """The exact variance of each entry of :attr:`prefix_counts`."""
        m = np.arange(self.bins.n_bins + 1)
        cov = self.covariance
        var = cov.var(m) if hasattr(cov, "var") else cov.cov(m, m)
        var.setflags(write=False)
        return var

    @cached_property
    def _direct_ranges(self) -> Any:
        return self.mechanism.direct_ranges(self.bins, self.noisy_levels, self.level_variance)

    def metadata(self) -> dict[str, Any]:
        """Everything needed to interpret the release, as plain data."""
        return self._metadata(self.bins.to_dict())

    def _metadata(self, bins: dict[str, Any]) -> dict[str, Any]:
        """:meth:`metadata` with the bins described by ``bins`` (a file may store edges apart)."""
        meta = self.mechanism.describe()
        meta.update(
            {
                "estimator": self.estimator,
                "postprocess": self.postprocess,
                "integer": self.integer,
                "n_public": self.mechanism.n,
                "branching": list(self.branching) if self.branching is not None else None,
                "level_variance": list(self.level_variance),
                "bins": bins,
                "randomness": dict(self.randomness),
                "library_version": self.library_version,
            }
        )
        if self.bounds_step is not None:
            meta["bounds_step"] = dict(self.bounds_step)
        if self.target is not None:
            meta["target"] = dict(self.target)
        return meta

    def __repr__(self) -> str:
        shape = f", branching={list(self.branching)}" if self.branching else ""
        seeded = ", SEEDED (not for publication)" if self.seeded else ""
        return (
            f"Release(mechanism={self.mechanism.name!r}, bins={self.bins.n_bins}{shape}, "
            f"guarantee={self.guarantee.describe()!r}, neighbours={self.neighbours!r}, "
            f"n≈{self.n:.6g}{seeded})"
        )

    # ------------------------------------------------------------------ queries
    def _range_axes(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
        ta = queries.to_axis(self.bins, a, "a")
        tb = queries.to_axis(self.bins, b, "b")
        if np.any(ta > tb):
            raise InvalidParameterError("The range [a, b) needs a <= b for every pair.")
        ta, tb = np.broadcast_arrays(ta, tb)
        return ta, tb

    def cdf(self, x: Any, *, consistent: bool | None = None) -> Any:
        """Estimated number of values ``<= x``.

        Parameters
        ----------
        x : scalar or array-like
            Query points: numbers, or datetimes for datetime bins.
        consistent : bool, optional
            True: read the consistent CDF (non-decreasing, within ``[0, n̂]``; smaller error,
            slightly biased). False: the unbiased estimate (may be negative or decrease).
            Default: consistent unless the release was made with ``postprocess="none"``.

        Returns
        -------
        float or ndarray
            Same shape as ``x``.

        Notes
        -----
        Inside a bin the CDF is interpolated linearly (values spread evenly across the bin),
        so at a bin's left edge ``x`` it counts the values below the edge. Integer data on
        equal-width bins edged at integers (``bounds=(1, 100), bins=99``) therefore get
        ``cdf(40)`` ≈ ``#{x < 40}``: declare them with ``bins="integers"`` (one bin per
        integer ``v``, ``cdf(v)`` estimates ``#{x <= v}``).

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> rel.cdf([0.0, 1.5, 3.0]).shape  # counts of values <= x, non-decreasing
        (3,)
        >>> bool(rel.cdf(3.0) == rel.n)
        True
        """
        t = queries.to_axis(self.bins, x, "x")
        out = queries.cdf_terms(self.bins, t).evaluate(self._counts(consistent))
        return queries.like(x, out.reshape(np.shape(t)))

    def range_count(self, a: Any, b: Any, *, consistent: bool | None = None) -> Any:
        """Estimated number of values in ``[a, b)``; ``a`` and ``b`` broadcast together.

        ``consistent`` is as for :meth:`cdf`; a consistent range count is never negative.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> count = rel.range_count(1.0, 2.0)  # values in [1, 2): bin 1
        >>> bool(count >= 0)
        True
        >>> rel.range_count([0.0, 1.0], 3.0).shape  # a and b broadcast
        (2,)
        """
        ta, tb = self._range_axes(a, b)
        use_consistent = self.postprocess != "none" if consistent is None else consistent
        direct = None if use_consistent else self._direct_ranges
        if direct is not None:
            out = direct.range_count(ta, tb)
        else:
            out = queries.range_terms(self.bins, ta, tb).evaluate(self._counts(use_consistent))
        return queries.like(np.broadcast_to(np.asarray(a), ta.shape), out.reshape(ta.shape))

    def quantile(self, q: Any) -> Any:
        """Estimated ``q``-quantiles, any number of them at no extra privacy cost.

        Quantiles are read from the consistent CDF (:attr:`consistent_counts`): the first point
        where it reaches ``q · n̂``, interpolating linearly inside the bin. On an integer domain
        (``bins="integers"``) a quantile is a value of the domain: the smallest integer whose
        released CDF reaches ``q · n̂`` (the inverse CDF;
        :func:`treedp.release.discrete_quantiles.discrete_quantile_from`), which lands on the
        right side of a block of tied values. They are non-decreasing in ``q``.

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float, datetime64 or ndarray
            Same shape as ``q``; NaN (NaT) when the estimated count is not positive.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> qs = rel.quantile([0.25, 0.5, 0.75])
        >>> bool((qs[:-1] <= qs[1:]).all() and 0 <= qs[0] and qs[-1] <= 3)
        True
        """
        qa = queries.check_q(q)
        return queries.to_output(
            self.bins, queries.quantile_from(self.bins, self.consistent_counts, qa)
        )

    def median(self) -> Any:
        """The estimated median, ``quantile(0.5)``.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> bool(rel.median() == rel.quantile(0.5))
        True
        """
        return self.quantile(0.5)

    def histogram(self, *, consistent: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Estimated count per bin and the edges, like :func:`numpy.histogram`.

        Bin ``i`` is the linear query ``P[i+1] - P[i]``. Consistent counts (the default unless
        ``postprocess="none"``) are non-negative and sum to ``n̂``; integers when the release
        has ``integer=True``. Unbiased counts (``consistent=False``) may be negative.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> counts, edges = rel.histogram()
        >>> edges.tolist(), bool(abs(counts.sum() - rel.n) < 1e-9)
        ([0.0, 1.0, 2.0, 3.0], True)
        """
        return np.diff(self._counts(consistent)), self.edges

    # ------------------------------------------------------------------ inference
    def stderr(self, query: str, *args: Any) -> Any:
        """Exact standard error of a query answer, from the known noise (no simulation).

        It is the error of the unbiased estimate (``consistent=False``) due to the noise; the
        consistent answer trades a small bias for a smaller error. Inside a bin the answer
        also interpolates (the values may sit anywhere in the bin): that part is not in the
        standard error but is in :meth:`confidence_interval`, which covers the true count.

        Parameters
        ----------
        query : {"cdf", "range_count"}
            Which query: ``stderr("cdf", x)`` or ``stderr("range_count", a, b)``.
        *args
            The query's arguments, scalars or arrays as for the query itself.

        Returns
        -------
        float or ndarray
            The standard deviation of the estimate's error, shaped like the answer.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> se = rel.stderr("cdf", [1.0, 2.0])  # known before any data: the noise is public
        >>> bool((se > 0).all())
        True
        >>> se_range = rel.stderr("range_count", 1.0, 2.0)
        """
        if query == "cdf" and len(args) == 1:
            t = queries.to_axis(self.bins, args[0], "x")
            var = queries.cdf_terms(self.bins, t).variance(self.covariance)
            return queries.like(args[0], np.sqrt(var).reshape(np.shape(t)))
        if query == "range_count" and len(args) == 2:
            ta, tb = np.broadcast_arrays(
                queries.to_axis(self.bins, args[0], "a"), queries.to_axis(self.bins, args[1], "b")
            )
            direct = self._direct_ranges
            if direct is not None:
                var = direct.range_variance(ta, tb)
            else:
                var = queries.range_terms(self.bins, ta, tb).variance(self.covariance)
            out = np.sqrt(var).reshape(ta.shape)
            return queries.like(np.broadcast_to(np.asarray(args[0]), ta.shape), out)
        raise InvalidParameterError(
            "stderr takes ('cdf', x) or ('range_count', a, b). "
            f"Got {query!r} with {len(args)} argument(s)."
        )

    def confidence_interval(self, query: str, *args: Any, level: float = 0.95) -> Any:
        """A confidence interval for a ``cdf`` or ``range_count`` answer, valid at every point.

        The true count at a point strictly inside a bin can be anything between the counts at
        the bin's edges (the values may sit anywhere in the bin; :meth:`cdf` interpolates).
        The same holds for ``cdf`` at an edge of continuous bins, since the values equal to
        that edge are in the bin above it (a point mass at ``lo``, say). So the interval runs
        from a lower confidence bound of the count at the left bracketing edge to an upper
        bound at the right one (:func:`treedp.release.inference.bracket_interval`); where the
        answer is exact at an edge (``range_count`` ends on edges, every point of an integer
        domain) both edges coincide and the interval is the usual ``estimate ± c·se``. Each
        bound is one-sided with error probability at most ``(1 - level)/2``, so the interval
        covers the true count with probability at least ``level`` at every query point; it is
        clipped to ``[0, n]`` when ``n`` is public (replace), and at 0 otherwise.

        ``c = max(z, ln(1/(1 - level))/√2)`` is the larger of the normal and the Laplace
        quantile for the same variance: exact or conservative for ``level`` above about 0.85.
        The standard errors are exact (:meth:`stderr` gives the noise part of an answer).

        Parameters
        ----------
        query : {"cdf", "range_count"}
            As for :meth:`stderr`.
        *args
            The query's arguments.
        level : float, default=0.95
            The nominal coverage, in ``(0, 1)``.

        Returns
        -------
        (low, high)
            Arrays (or floats) shaped like the answer.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> low, high = rel.confidence_interval("cdf", 1.5)  # inside bin 1: P[1] <= truth <= P[2]
        >>> bool(low <= 30 + 25 <= high)
        True
        """
        level = inference.check_level(level)
        if query == "cdf" and len(args) == 1:
            t = queries.to_axis(self.bins, args[0], "x")
            m_lo, m_hi = queries.cdf_bracket(self.bins, t)
            shape, like = np.shape(t), args[0]
            lower = self._prefix_query(queries.prefix_terms(self.bins, m_lo))
            upper = self._prefix_query(queries.prefix_terms(self.bins, m_hi))
        elif query == "range_count" and len(args) == 2:
            ta, tb = self._range_axes(args[0], args[1])
            a_lo, a_hi = queries.below_bracket(self.bins, ta)
            b_lo, b_hi = queries.below_bracket(self.bins, tb)
            shape, like = ta.shape, np.broadcast_to(np.asarray(args[0]), ta.shape)
            lower = self._edge_range(b_lo, a_hi)
            upper = self._edge_range(b_hi, a_lo)
        else:
            raise InvalidParameterError(
                "confidence_interval takes ('cdf', x) or ('range_count', a, b). "
                f"Got {query!r} with {len(args)} argument(s)."
            )
        cap = self.mechanism.n if self.neighbours == "replace" else None
        gaussian = getattr(self.mechanism, "noise", "laplace") == "gaussian"
        low, high = inference.bracket_interval(lower, upper, level, cap, gaussian=gaussian)
        return queries.like(like, low.reshape(shape)), queries.like(like, high.reshape(shape))

    def _prefix_query(self, terms: queries.Terms) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased estimate and exact standard error of a linear query on the prefixes."""
        estimate = terms.evaluate(self.prefix_counts)
        return estimate, np.sqrt(terms.variance(self.covariance))

    def _edge_range(self, m_b: np.ndarray, m_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and standard error of ``P[m_b] - P[m_a]`` (clipped at 0 when ``m_a > m_b``).

        The all-intervals baseline answers ranges between edges from its own unbiased path.
        """
        m_a = np.minimum(m_a, m_b)  # an empty range: its count, 0, is known exactly
        direct = self._direct_ranges
        if direct is None:
            return self._prefix_query(queries.prefix_terms(self.bins, m_b, m_a))
        edges = self.bins.edges
        ta, tb = edges[m_a], edges[m_b]
        return direct.range_count(ta, tb).ravel(), np.sqrt(direct.range_variance(ta, tb))

    def quantile_interval(
        self,
        q: Any,
        *,
        level: float = 0.95,
        simulations: int = 1000,
        rng: RandomSource | None = None,
    ) -> tuple[Any, Any]:
        """A confidence interval for each ``q``-quantile, from a simultaneous CDF band.

        For one ``q``, ``G[m] = P[m] - q·P[B]`` estimates ``F(m) - q·n``, which is
        non-decreasing and crosses 0 at the true quantile's bin. A band
        ``Ĝ[m] ± c·se[m]`` holding for *all* ``m`` at once with probability ``level`` brackets
        that crossing. ``se`` is exact (:attr:`covariance`); the critical value ``c`` is the
        ``level``-quantile of ``max_m |error[m]| / se[m]`` over ``simulations`` draws of the
        noise alone — the noise distribution is public, so this costs no privacy. The band is
        tightened by monotonicity (the true ``G`` is non-decreasing), and the interval is
        ``[edge where the upper band reaches 0, edge where the lower band does]``: the true
        quantile lies in it with probability at least ``level`` (up to the simulation's
        accuracy), for each ``q`` separately.

        On an integer domain (``bins="integers"``) the estimate of :meth:`quantile` and the
        target are the inverse-CDF quantile ``v`` (the smallest integer with ``F(v) >= q·n``),
        and the interval runs from the integer where the upper band reaches ``q·n`` to the
        integer where the lower band does.

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.
        level : float, default=0.95
            Coverage, in ``(0, 1)``.
        simulations : int, default=1000
            Noise simulations used to calibrate the band (at least 100).
        rng : RandomSource, optional
            Randomness for the simulation (default: the operating system's).

        Returns
        -------
        (low, high)
            Bounds shaped like ``q`` (datetime64 for datetime bins).

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> low, high = rel.quantile_interval(0.5, simulations=200,
        ...                                   rng=treedp.InsecureSeededSource(2))
        >>> bool(low <= high)
        True
        """
        qa = queries.check_q(q)
        m_lo, m_hi = inference.quantile_band(
            mechanism=self.mechanism,
            estimator=self.estimator,
            covariance=self.covariance,
            prefix=self.prefix_counts,
            qs=np.atleast_1d(qa).ravel(),
            level=inference.check_level(level),
            simulations=inference.check_simulations(simulations),
            rng=rng,
        )
        edges = self.bins.edges.astype(np.float64)
        if self.bins.discrete:  # the integers holding the two crossings
            low = edges[m_lo - 1].reshape(np.shape(qa))
            high = edges[m_hi - 1].reshape(np.shape(qa))
        else:
            low = edges[m_lo - 1].reshape(np.shape(qa))
            high = edges[m_hi].reshape(np.shape(qa))
        return queries.to_output(self.bins, low), queries.to_output(self.bins, high)

    # ------------------------------------------------------------------ tables and warnings
    def to_arrays(self, *, level: float = 0.95) -> dict[str, np.ndarray]:
        """The release as a plain dict of equal-length arrays, one row per bin.

        For notebooks and spreadsheets; every column is post-processing of the release.

        Parameters
        ----------
        level : float, default=0.95
            Coverage of the intervals, as for :meth:`confidence_interval`.

        Returns
        -------
        dict of str to ndarray
            ``left``, ``right`` (the bin's edges; datetime64 for datetime bins), ``count``
            (consistent count per bin), ``count_low``, ``count_high`` (its interval), ``cdf``
            (consistent count below ``right``), ``cdf_low``, ``cdf_high`` (its interval; the
            interval columns are NaN where :attr:`offers_intervals` is False).

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> table = rel.to_arrays()
        >>> sorted(table)
        ['cdf', 'cdf_high', 'cdf_low', 'count', 'count_high', 'count_low', 'left', 'right']
        >>> table["left"].tolist(), table["right"].tolist()
        ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
        """
        level = inference.check_level(level)
        edges = self.edges
        m = np.arange(self.bins.n_bins + 1)
        if self.offers_intervals:
            cap = self.mechanism.n if self.neighbours == "replace" else None
            bins_lo = self._edge_range(m[1:], m[:-1])
            count_low, count_high = inference.bracket_interval(bins_lo, bins_lo, level, cap)
            below = self._prefix_query(queries.prefix_terms(self.bins, m[1:]))
            cdf_low, cdf_high = inference.bracket_interval(below, below, level, cap)
        else:  # no honest interval exists (see offers_intervals): NaN, not a wrong number
            count_low = count_high = cdf_low = cdf_high = np.full(self.bins.n_bins, np.nan)
        return {
            "left": edges[:-1].copy(),
            "right": edges[1:].copy(),
            "count": np.diff(self.consistent_counts),
            "count_low": count_low,
            "count_high": count_high,
            "cdf": np.array(self.consistent_counts[1:]),
            "cdf_low": cdf_low,
            "cdf_high": cdf_high,
        }

    def to_frame(self, *, level: float = 0.95) -> Any:
        """:meth:`to_arrays` as a :class:`pandas.DataFrame` (needs ``treedp[pandas]``).

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> rel.to_frame().shape
        (3, 8)
        """
        try:
            import pandas as pd
        except ImportError:
            from treedp.exceptions import MissingDependencyError

            raise MissingDependencyError(
                "Release.to_frame needs pandas: pip install 'treedp[pandas]' (or use "
                "Release.to_arrays for a dict of numpy arrays)."
            ) from None
        return pd.DataFrame(self.to_arrays(level=level))

    def bounds_warning(self, *, share: float | None = None) -> str | None:
        """A warning when an end bin holds a large share of the released mass (or privately
        found bounds ran off the public grid, or the release counts too few records for the
        private bounds' allowance: :func:`~treedp.value_methods.bounds_warnings
        .few_records_warning`), else None.

        Values outside the public bounds are counted in the end bins, so a first or last bin
        holding much of the mass suggests bounds narrower than the data: values were probably
        clamped, and quantiles near that end are unreliable. The check reads only the
        released (consistent) counts: post-processing, no privacy cost.

        Parameters
        ----------
        share : float, optional
            The share of ``n̂`` an end bin may hold before the warning; default
            ``max(0.1, 5/B)`` (five times an even spread, and at least 10%).

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([0, 1, 2, 0, 0, 0, 1, 0, 0, 900], epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> print(rel.bounds_warning())  # doctest: +ELLIPSIS
        The last bin holds ...% of the released mass: values above the upper bound may ...
        """
        if self.bounds_step is not None:  # bounds found privately: did a scan run off the grid?
            from treedp.value_methods.bounds_warnings import grid_end_warning

            lo, hi = self.bounds_step["stops"]
            off = grid_end_warning(lo, hi, self.bounds_step.get("known"))
            if off is not None:
                return off
            if "cut" in self.bounds_step:  # an integer range cut to the mechanism's limit
                from treedp.value_methods.bounds_split import integer_cut_warning

                return integer_cut_warning(int(self.bounds_step["cut"]))
            if "allowance" in self.bounds_step:  # too few records released for the scans?
                from treedp.value_methods.bounds_warnings import few_records_warning

                few = few_records_warning(
                    self.bounds_step["allowance"], float(self.consistent_counts[-1])
                )
                if few is not None:
                    return few
        n_bins = self.bins.n_bins
        limit = max(0.1, 5.0 / n_bins) if share is None else float(share)
        n_hat = float(self.consistent_counts[-1])
        if n_bins < 3 or not n_hat > 0:
            return None
        counts = np.diff(self.consistent_counts)
        ends = [("first", "below the lower", counts[0]), ("last", "above the upper", counts[-1])]
        found = [(name, side, c / n_hat) for name, side, c in ends if c / n_hat > limit]
        if not found:
            return None
        parts = "; ".join(
            f"The {name} bin holds {100 * frac:.0f}% of the released mass: values {side} bound "
            "may have been clamped into it"
            for name, side, frac in found
        )
        return f"{parts}. The bounds look too narrow; quantiles near that end are unreliable."

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """The release as JSON-ready data (the version-1 JSON document :meth:`save` writes)."""
        return _codec().to_document(self)

    @classmethod
    def from_dict(cls, document: dict[str, Any]) -> Release:
        """Rebuild a release from :meth:`to_dict`'s output, validating it fully.

        Raises
        ------
        ReleaseFormatError
            If the document is not a treedp release, fails its checksum or is inconsistent.
        """
        return _codec().from_document(document, "the document")

    def save(self, path: str | Path | IO[bytes], *, file_format: str | None = None) -> None:
        """Write the release to ``path`` atomically, versioned and checksummed.

        Two layouts, both read by :func:`treedp.load_release`:

        - ``"json"`` (format version 1): one human-readable JSON document; fine for small
          releases, slow and large from about 2^18 bins;
        - ``"binary"`` (format version 2): a zip of ``metadata.json`` and one ``.npy`` array
          per noisy level, stored in the smallest integer type that holds it; a 2^24-bin
          release saves and loads in about a second.

        By default a path ending in ``.json`` gets JSON and any other path (``.tdp``, ``.zip``,
        ...) or a binary file object gets the binary layout. Written to a path, either the
        whole file is written or, on any failure, nothing is (a previous file stays as it was).

        Parameters
        ----------
        path : str, Path or binary file object
            Where to write.
        file_format : {"json", "binary"}, optional
            Force a layout instead of choosing by the file name.
        """
        _codec().save(self, path, file_format)

    # ------------------------------------------------------------------ display
    def plot(self, *args: Any, **kwargs: Any) -> Any:
        """Draw the release: :func:`treedp.plot.plot_release` (needs the ``treedp[plot]`` extra)."""
        from treedp.plot import plot_release

        return plot_release(self, *args, **kwargs)

    def _repr_html_(self) -> str:
        """A compact summary with a small CDF figure, for Jupyter (see ``treedp.report``)."""
        from treedp.report import summary_html

        return summary_html(self)
