"""The interval queries of a release: exact standard errors and confidence intervals.

:class:`IntervalQueries` is a base of :class:`~treedp.release.Release`, whose methods these
are; the rules (bracketing edges, half-widths, simultaneous bands) are in
:mod:`treedp.release.inference`. Everything uses the public noise distribution only: no
privacy cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from treedp.exceptions import InvalidParameterError
from treedp.noise import RandomSource
from treedp.release import inference, queries

if TYPE_CHECKING:
    from treedp.domain import Bins
    from treedp.estimation import PrefixCovariance
    from treedp.mechanisms import Mechanism

__all__ = ["IntervalQueries"]


class IntervalQueries:
    """:meth:`stderr`, :meth:`confidence_interval` and :meth:`quantile_interval` of a
    :class:`~treedp.release.Release`."""

    if TYPE_CHECKING:  # what they read of the release
        bins: Bins
        mechanism: Mechanism
        estimator: str

        @property
        def prefix_counts(self) -> np.ndarray: ...
        @property
        def covariance(self) -> PrefixCovariance: ...
        @property
        def _direct_ranges(self) -> Any: ...

        def _range_axes(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]: ...

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
        cap = self.mechanism.n if self.mechanism.neighbours == "replace" else None
        gaussian = self.mechanism.guarantee_kind == "zcdp"  # zCDP here: Gaussian tails
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
