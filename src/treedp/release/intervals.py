"""The interval queries of a release (a base of :class:`~treedp.release.Release`): exact
standard errors and confidence intervals, from the public noise distribution only (no privacy
cost; the rules are in :mod:`treedp.release.inference`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
from numpy.typing import NDArray

from treedp._validation import enough_simulations
from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.noise.rng import check_source
from treedp.release import inference, queries
from treedp.release.queries import Answers, Points, QuantileValue, Scalar

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.estimation import PrefixCovariance
    from treedp.mechanisms import Mechanism

__all__ = ["IntervalQueries"]


#: Up to this many bins a quantile interval also runs the simultaneous band by default (its
#: simulations draw ``B + 1`` noise values each: past it, minutes); past it the one-sided
#: bounds alone (:func:`~treedp.release.inference.crossing_bins`), unless ``simulations``.
BAND_LIMIT = 2**16
#: The share of ``1 - level`` the band takes when both run (Bonferroni).
BAND_SHARE = 0.2


def _default_simulations(n_bins: int, level: float) -> int:
    """The simulations a quantile band draws by default: 1000, fewer past 2^16 bins (a
    release of 2^19 integer bins took about a minute at 1000), at least 200 and at least
    :func:`~treedp._validation.enough_simulations` of ``level``."""
    return max(enough_simulations(level), min(1000, max(200, 2**26 // (n_bins + 1))))


def _which(method: str, query: str, args: tuple[Any, ...]) -> str:
    """``query`` when it is ``("cdf", x)`` or ``("range_count", a, b)``, else an error."""
    if (query, len(args)) not in (("cdf", 1), ("range_count", 2)):
        raise InvalidParameterError(
            f"{method} takes ('cdf', x) or ('range_count', a, b). "
            f"Got {query!r} with {len(args)} argument(s)."
        )
    return query


class IntervalQueries:
    """:meth:`stderr`, :meth:`confidence_interval` and :meth:`quantile_interval` of a
    :class:`~treedp.release.Release`."""

    if TYPE_CHECKING:  # what they read of the release
        bins: Bins
        mechanism: Mechanism
        estimator: str
        bounds_step: dict[str, Any] | None

        @property
        def prefix_counts(self) -> np.ndarray: ...
        @property
        def covariance(self) -> PrefixCovariance: ...
        @property
        def _direct_ranges(self) -> Any: ...

        @property
        def n(self) -> float: ...
        @property
        def _masses(self) -> tuple[tuple[int, float], ...]: ...

        def _range_axes(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]: ...
        def _cdf_axis(self, x: Any, masses: bool = True) -> np.ndarray: ...
        def _quantile_axis(self, qa: Any) -> np.ndarray: ...
        def cdf(self, x: Any) -> Any: ...
        def range_count(self, a: Any, b: Any) -> Any: ...

    @overload
    def stderr(self, query: Literal["cdf"], x: Scalar, /) -> float: ...
    @overload
    def stderr(self, query: Literal["cdf"], x: Points, /) -> Answers: ...
    @overload
    def stderr(self, query: Literal["range_count"], a: Scalar, b: Scalar, /) -> float: ...
    @overload
    def stderr(
        self, query: Literal["range_count"], a: Points, b: Scalar | Points, /
    ) -> Answers: ...
    @overload
    def stderr(self, query: Literal["range_count"], a: Scalar, b: Points, /) -> Answers: ...
    @overload
    def stderr(self, query: str, *args: Any) -> float | Answers: ...
    def stderr(self, query: str, *args: Any) -> float | Answers:
        """Exact standard error of a query answer, from the known noise (no simulation).

        It is the noise error of the unbiased estimate (``consistent=False``, linear inside
        every bin); the consistent answer trades a bias for a smaller error (and reads a bin
        it takes for a point mass as one: a block of tied values off the bound can then be
        off by up to the bin's count, which no standard error describes). The interpolation
        inside a bin is not in it, but is in :meth:`confidence_interval`, which covers the
        true count.

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
        if _which("stderr", query, args) == "cdf":
            t = self._cdf_axis(args[0], masses=False)  # as cdf(consistent=False) reads it
            var = queries.below_terms(self.bins, t).variance(self.covariance)
            return queries.like(args[0], np.sqrt(var).reshape(np.shape(t)))
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

    @overload
    def confidence_interval(
        self, query: Literal["cdf"], x: Scalar, /, *, level: float = 0.95
    ) -> tuple[float, float]: ...
    @overload
    def confidence_interval(
        self, query: Literal["cdf"], x: Points, /, *, level: float = 0.95
    ) -> tuple[Answers, Answers]: ...
    @overload
    def confidence_interval(
        self, query: Literal["range_count"], a: Scalar, b: Scalar, /, *, level: float = 0.95
    ) -> tuple[float, float]: ...
    @overload
    def confidence_interval(
        self,
        query: Literal["range_count"],
        a: Points,
        b: Scalar | Points,
        /,
        *,
        level: float = 0.95,
    ) -> tuple[Answers, Answers]: ...
    @overload
    def confidence_interval(
        self, query: Literal["range_count"], a: Scalar, b: Points, /, *, level: float = 0.95
    ) -> tuple[Answers, Answers]: ...
    @overload
    def confidence_interval(
        self, query: str, *args: Any, level: float = 0.95
    ) -> tuple[float, float] | tuple[Answers, Answers]: ...
    def confidence_interval(
        self, query: str, *args: Any, level: float = 0.95
    ) -> tuple[float, float] | tuple[Answers, Answers]:
        """A confidence interval for a ``cdf`` or ``range_count`` answer, valid at every point.

        Inside a bin (and for ``cdf`` at an edge of continuous bins, whose values lie in the
        bin above) the true count is anywhere between the counts at the bracketing edges, so
        the interval runs from a lower bound at the left edge to an upper bound at the right
        one (:func:`treedp.release.inference.bracket_interval`); where the answer is exact the
        edges coincide and it is ``estimate ± c·se``. Each bound misses with probability at
        most ``(1 - level)/2``, so the interval covers with probability at least ``level`` at
        every point; it is clipped at 0, and at ``n`` when ``n`` is public (replace), and
        widened to hold the point answer (:meth:`cdf` / :meth:`range_count`, consistent by
        default), which the monotone fit can move outside it. With a privacy unit the truth
        is that of the rows kept (at most ``k`` per person): a person's rows past the bound are
        dropped before counting, and that bias is in no interval.
        ``c = max(z, ln(1/(1 - level))/√2)``, the larger of the normal and Laplace quantiles:
        exact or conservative for ``level`` above about 0.85.

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
            Floats for one point, else float64 arrays shaped like the answer.

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
        if _which("confidence_interval", query, args) == "cdf":
            t = queries.to_axis(self.bins, args[0], "x")
            m_lo, m_hi = self._clamped_ends(*queries.cdf_bracket(self.bins, t))
            shape, like = np.shape(t), args[0]
            lower = self._prefix_query(queries.prefix_terms(self.bins, m_lo))
            upper = self._prefix_query(queries.prefix_terms(self.bins, m_hi))
        else:
            ta, tb = self._range_axes(args[0], args[1])
            a_lo, a_hi = self._clamped_ends(*queries.below_bracket(self.bins, ta))
            b_lo, b_hi = self._clamped_ends(*queries.below_bracket(self.bins, tb))
            shape, like = ta.shape, np.broadcast_to(np.asarray(args[0]), ta.shape)
            lower = self._edge_range(b_lo, a_hi)
            upper = self._edge_range(b_hi, a_lo)
        point = np.ravel(self.cdf(args[0]) if len(args) == 1 else self.range_count(*args))
        low, high = self._bracketed(lower, upper, level, point)
        ends = queries.like(like, low.reshape(shape)), queries.like(like, high.reshape(shape))
        return ends  # type: ignore[return-value]  # both floats or both arrays

    def n_interval(self, *, level: float = 0.95) -> tuple[float, float]:
        """A confidence interval for the number of records :attr:`n` (every record, those
        clamped into an end bin included), covering with probability at least ``level``;
        ``(n, n)`` for a public ``n`` (replace). With a privacy unit, the records kept
        (:attr:`PersonUnit.kept <treedp.release.unit.PersonUnit.kept>`), as for every answer.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> low, high = rel.n_interval()
        >>> bool(low <= 100 <= high)
        True
        """
        level = inference.check_level(level)
        top = np.array([self.bins.n_bins], dtype=np.int64)
        total = self._prefix_query(queries.prefix_terms(self.bins, top))
        low, high = self._bracketed(total, total, level, np.array([self.n]))
        return float(low[0]), float(high[0])

    def _bracketed(
        self,
        lower: tuple[np.ndarray, np.ndarray],
        upper: tuple[np.ndarray, np.ndarray],
        level: float,
        point: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`~treedp.release.inference.bracket_interval` for this release's noise, widened
        to hold the point answer."""
        cap = self.mechanism.n if self.mechanism.neighbours == "replace" else None
        gaussian = self.mechanism.guarantee_kind == "zcdp"  # zCDP here: Gaussian tails
        low, high = inference.bracket_interval(lower, upper, level, cap, gaussian=gaussian)
        # The point answer (consistent: post-processed) can lie outside a band built on the
        # unbiased estimates; widened to it, as the quantiles' are (a superset covers no less).
        return np.fmin(low, np.broadcast_to(point, low.shape)), np.fmax(high, point)

    def _found_sides(self) -> tuple[bool, bool]:
        """Whether the lower and the upper bound were found from the records (the records a
        scan leaves beyond a found bound are clamped into its end bin), not given."""
        step = self.bounds_step
        if step is None:
            return False, False
        known = step.get("known")
        return known != "lower", known != "upper"

    def _clamped_ends(self, m_lo: np.ndarray, m_hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Brackets ``P[m_lo] <= count <= P[m_hi]`` of a count of records below (or at most)
        a point, widened for the records clamped into an end bin at a found bound: beyond
        (or at) the upper bound the count lies between ``P[B - 1]`` and ``P[B]`` (the clamped
        records are in the last bin but above the point), below the lower bound between
        ``P[0] = 0`` and ``P[1]`` (the clamped records are in the first bin, below the
        point). Post-processing of public facts: the bounds the release stated."""
        low_found, high_found = self._found_sides()
        if high_found:
            m_lo = np.minimum(m_lo, self.bins.n_bins - 1)
        if low_found:
            m_hi = np.maximum(m_hi, 1)
        return m_lo, m_hi

    def _prefix_query(self, terms: queries.Terms) -> tuple[np.ndarray, np.ndarray]:
        """Unbiased estimate and exact standard error of a linear query on the prefixes."""
        estimate = terms.evaluate(self.prefix_counts)
        return estimate, np.sqrt(terms.variance(self.covariance))

    def _edge_range(self, m_b: np.ndarray, m_a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Estimate and standard error of ``P[m_b] - P[m_a]`` (empty when ``m_a > m_b``), from
        the mechanism's own direct ranges when it has them."""
        m_a = np.minimum(m_a, m_b)  # an empty range: its count, 0, is known exactly
        direct = self._direct_ranges
        if direct is None:
            return self._prefix_query(queries.prefix_terms(self.bins, m_b, m_a))
        edges = self.bins.edges
        ta, tb = edges[m_a], edges[m_b]
        return direct.range_count(ta, tb).ravel(), np.sqrt(direct.range_variance(ta, tb))

    def _quantile_bins(
        self, qs: np.ndarray, level: float, simulations: int | None, rng: RandomSource | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The bins bracketing each quantile: the first and last crossings of one-sided bounds
        (:func:`~treedp.release.inference.crossing_bins`: no simulation, valid at one index),
        intersected, up to :data:`BAND_LIMIT` bins or with ``simulations`` given, with the
        simultaneous band (:func:`~treedp.release.inference.quantile_band`), which is narrower
        where the signal is low (a tail with few records a bin: the first crossing comes early
        by noise), simulated only where it can narrow them. The miss probability ``1 - level``
        is split (Bonferroni): the band takes :data:`BAND_SHARE` of it, or the least its
        simulations allow, at most half; else the bounds take all of it. The split is fixed
        before the release is read, so skipping the band (a choice made from the release)
        leaves bounds that cover at their share."""
        alpha = 1.0 - level
        band_alpha = 0.0
        if simulations is not None or self.bins.n_bins <= BAND_LIMIT:
            runs = inference.check_simulations(
                _default_simulations(self.bins.n_bins, level) if simulations is None
                else simulations, level,
            )  # fmt: skip
            band_alpha = max(BAND_SHARE * alpha, 1.0 / runs)
            if band_alpha > alpha / 2 or runs < enough_simulations(1.0 - band_alpha):
                band_alpha = 0.0
        gaussian = self.mechanism.guarantee_kind == "zcdp"  # zCDP: Gaussian tails
        factor = inference.tail_factor(alpha - band_alpha, gaussian=gaussian)
        prefix, cov = self.prefix_counts, self.covariance
        ses = inference.band_ses(cov, self.bins.n_bins, qs)  # once, for both brackets
        m_lo, m_hi = inference.quantile_pointwise(cov, prefix, qs, factor, ses)
        # A band simulated only where it can narrow the bounds (for every q then: one
        # simulation, shared by a grouped release's keys as before)
        narrows = band_alpha > 0 and bool(
            np.any((qs != 0) & inference.band_may_narrow(
                cov, prefix, qs, (m_lo, m_hi), band_alpha, ses
            ))
        )  # fmt: skip
        if narrows:
            b_lo, b_hi = inference.quantile_band(
                mechanism=self.mechanism,
                estimator=self.estimator,
                covariance=cov,
                prefix=prefix,
                qs=qs,
                level=1.0 - band_alpha,
                simulations=runs,
                rng=rng,
                ses=ses,
            )
            lo, hi = np.maximum(m_lo, b_lo), np.minimum(m_hi, b_hi)
            apart = lo > hi  # both miss on one side, rarely: their hull
            lo = np.where(apart, np.minimum(m_lo, b_lo), lo)
            hi = np.where(apart, np.maximum(m_hi, b_hi), hi)
            # q = 0: G[0] = 0 exactly, so the band's crossing is the lower bound, not the
            # minimum's bin (an independent review: 0.19 coverage): the bounds alone there
            m_lo, m_hi = np.where(qs == 0, m_lo, lo), np.where(qs == 0, m_hi, hi)
        return m_lo, m_hi

    @overload
    def quantile_interval(
        self,
        q: float,
        *,
        level: float = 0.95,
        simulations: int | None = None,
        rng: RandomSource | None = None,
    ) -> tuple[QuantileValue, QuantileValue]: ...
    @overload
    def quantile_interval(
        self,
        q: Sequence[float] | NDArray[Any],
        *,
        level: float = 0.95,
        simulations: int | None = None,
        rng: RandomSource | None = None,
    ) -> tuple[NDArray[Any], NDArray[Any]]: ...
    @overload
    def quantile_interval(
        self,
        q: object,
        *,
        level: float = 0.95,
        simulations: int | None = None,
        rng: RandomSource | None = None,
    ) -> tuple[QuantileValue | NDArray[Any], QuantileValue | NDArray[Any]]: ...
    def quantile_interval(
        self,
        q: Any,
        *,
        level: float = 0.95,
        simulations: int | None = None,
        rng: RandomSource | None = None,
    ) -> tuple[QuantileValue | NDArray[Any], QuantileValue | NDArray[Any]]:
        """A confidence interval for each ``q``-quantile, covering it with probability at
        least ``level`` for each ``q``.

        ``G[m] = P[m] - q·P[B]`` estimates ``F(m) - q·n``, non-decreasing and crossing 0 at the
        true quantile's bin ``m*``. Two brackets of that crossing, intersected:

        * **one-sided bounds** ``Ĝ[m] ± c·se[m]`` (``se`` exact, ``c`` the release's factor):
          the interval runs from the first edge where the upper bound reaches 0 to one past
          the last where the lower bound is below 0. Each end misses only if the bound at one
          index fails (``m*``, or ``m* - 1``), so no simultaneous band is needed
          (:func:`~treedp.release.inference.crossing_bins`); no simulation, any number of bins.
        * up to :data:`BAND_LIMIT` bins, or when ``simulations`` is given, a **simultaneous
          band** ``Ĝ[m] ± c'·se[m]`` (``c'`` calibrated on simulations of the public noise
          alone: no privacy cost), tightened by monotonicity: narrower where the signal is low
          (a tail with few records a bin, where the first crossing comes early by noise).
          Simulated only where it can narrow the bounds
          (:func:`~treedp.release.inference.band_may_narrow`: a band at the normal quantile,
          whose factor the simulated one exceeds, already holding them gives the same
          interval); with many records a bin it never does, and the interval takes
          milliseconds.

        The miss probability ``1 - level`` is split between them (Bonferroni: the band takes
        :data:`BAND_SHARE` of it, or the least its simulations allow, at most half). Measured
        (``benchmarks/quantile_intervals.py``): 0.64–0.85× the band's width on 4096 bins, up
        to 1.43× in a sparse tail (the 5% level of 1,000 records at ε = 0.5). On an integer
        domain the target is the inverse-CDF quantile (:meth:`quantile`) and the ends are
        integers. The interval always holds the
        point answer (:meth:`quantile`): where the brackets and the point disagree (a point
        mass answered at its bound or edge, a bin's interpolation) it is widened to the point,
        which cannot lose coverage. On bounds found from the records (``bounds="private"``)
        the records a scan leaves beyond a found bound are clamped into its end bin, so an
        interval reaching that bin runs to ``-inf`` or ``inf`` (datetime bins: a day inside
        the first or last instant pandas holds) on that side.

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.
        level : float, default=0.95
            Coverage, in ``(0, 1)``.
        simulations : int, optional
            Noise simulations that calibrate the band: at least 100, and at least
            ``level / (1 - level)`` (999 for ``level=0.999``). Default: 1000 up to
            :data:`BAND_LIMIT` bins (at least ``level / (1 - level)``); past it no band (the
            one-sided bounds alone: a band on 2^16 bins took 40–50 s), unless given (then
            ``2^26/(B + 1)`` is a sensible number: each draw is ``B + 1`` values). Too few for
            the band's share of ``1 - level`` leave the one-sided bounds alone. Fewer
            simulations widen the interval a little on average, never its coverage.
        rng : RandomSource, optional
            Randomness for the simulation (default: the operating system's).

        Returns
        -------
        (low, high)
            Bounds shaped like ``q`` (datetime64 for datetime bins): typed as
            :meth:`quantile`'s answer.

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
        level = inference.check_level(level)
        if rng is not None:  # checked whether or not a band is simulated
            check_source(rng)
        m_lo, m_hi = self._quantile_bins(np.atleast_1d(qa).ravel(), level, simulations, rng)
        edges = self.bins.edges.astype(np.float64)
        low, high = (edges[m].reshape(np.shape(qa)) for m in (m_lo - 1, m_hi))
        if self.bins.integers:  # the last integer of the bin holding the upper crossing
            high = high - 1
        # An end bin at a found bound holds the records clamped into it from beyond: a
        # quantile the band puts in it may lie anywhere out there.
        low_found, high_found = self._found_sides()
        if low_found:
            low = np.where((m_lo == 1).reshape(low.shape), -np.inf, low)
        if high_found:
            high = np.where((m_hi == self.bins.n_bins).reshape(high.shape), np.inf, high)
        point = np.reshape(self._quantile_axis(qa), np.shape(qa)).astype(np.float64)
        low, high = np.fmin(low, point), np.fmax(high, point)  # NaN point: the band's ends
        return queries.to_output(self.bins, low), queries.to_output(self.bins, high)
