"""The release: a frozen record of one private measurement and every query answered from it.

A :class:`Release` holds the raw noisy blocks (for a tree: one array of noisy node counts per
level, root first), their noise variances, the public bins and the privacy contract. All
queries — CDF values, range counts, quantiles, the histogram — are post-processing of these
numbers and cost no further privacy, however many are asked.

Within a bin, answers interpolate linearly: the values in a bin are taken as spread evenly
over it. On an integer domain (``bins="integers"``) queries are answered at integers exactly,
without interpolation.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from treedp._atomic import atomic_write_text
from treedp.domain import Bins
from treedp.estimation import (
    PrefixCovariance,
    band_critical_value,
    check_estimator,
    check_postprocess,
    consistent_prefix,
    estimate_prefix,
    interval_index,
    prefix_covariance,
)
from treedp.exceptions import InvalidParameterError, ReleaseFormatError, TreeDPError
from treedp.mechanisms import Mechanism, TreeMechanism
from treedp.mechanisms.factory import make_mechanism
from treedp.noise import RandomSource, resolve_source
from treedp.tree import TreeShape

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "Release", "load_release"]

FORMAT_NAME = "treedp.release"
FORMAT_VERSION = 1


class Release:
    """A differentially private release of one column's distribution.

    Build one with :func:`treedp.release_cdf`, or read one with :func:`treedp.load_release`.

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
    randomness : dict
        Where the noise came from; ``randomness["seeded"]`` is True for a seeded, not
        publishable, release.
    library_version : str
        The treedp version that made the release.
    """

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
    ) -> None:
        check_postprocess(postprocess, integer)
        self.postprocess = postprocess
        self.integer = integer
        self.bins = bins
        self.mechanism = mechanism
        levels = [np.array(level, dtype=np.int64) for level in noisy_levels]
        for level in levels:
            level.setflags(write=False)
        self.noisy_levels = levels
        self.level_variance = mechanism.block_variance()
        self.randomness = dict(randomness)
        self.library_version = library_version
        self.estimator = check_estimator(estimator, mechanism.name)
        prefix = estimate_prefix(mechanism, levels, self.estimator)
        prefix.setflags(write=False)
        self._prefix = prefix
        self._covariance: PrefixCovariance | None = None
        self._prefix_variance: np.ndarray | None = None
        self._consistent: np.ndarray | None = None

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
    def guarantee(self) -> str:
        """The kind of guarantee: ``"pure"`` epsilon-DP."""
        return self.mechanism.guarantee

    @property
    def seeded(self) -> bool:
        """True when the noise came from a seeded, reproducible (not publishable) source."""
        return bool(self.randomness.get("seeded", False))

    @property
    def branching(self) -> tuple[int, ...] | None:
        """The fan-out per level of the tree (None for a baseline)."""
        if isinstance(self.mechanism, TreeMechanism):
            return self.mechanism.shape.branching
        return None

    @property
    def level_budgets(self) -> tuple[float, ...]:
        """The budget of each noised block (per level for a tree, root first)."""
        return self.mechanism.block_epsilons

    @property
    def edges(self) -> np.ndarray:
        """The public bin edges (datetime64 for datetime bins)."""
        return self.bins.edges_as_values()

    @property
    def prefix_counts(self) -> np.ndarray:
        """Estimated counts of bins ``[0, m)`` for ``m = 0..B`` (unbiased, may be non-monotone)."""
        return self._prefix

    @property
    def consistent_counts(self) -> np.ndarray:
        """The consistent CDF at the edges: non-decreasing, in ``[0, n̂]``, ending at ``n̂``.

        It is the projection of :attr:`prefix_counts` chosen by ``postprocess`` (squared L2 for
        ``"monotone"``, L1 for ``"monotone_l1"``; L2 when ``postprocess="none"``), integer-valued
        when ``integer=True``.
        """
        if self._consistent is None:
            loss = "l1" if self.postprocess == "monotone_l1" else "l2"
            fit = consistent_prefix(self._prefix, loss=loss, integer=self.integer)
            fit.setflags(write=False)
            self._consistent = fit
        return self._consistent

    def _counts(self, consistent: bool | None) -> np.ndarray:
        if consistent is None:
            consistent = self.postprocess != "none"
        return self.consistent_counts if consistent else self._prefix

    @property
    def covariance(self) -> PrefixCovariance:
        """Exact ``Cov(P[m1], P[m2])`` of the prefix estimates (from public parameters)."""
        if self._covariance is None:
            self._covariance = prefix_covariance(self.mechanism, self.estimator)
        return self._covariance

    @property
    def prefix_variance(self) -> np.ndarray:
        """The exact variance of each entry of :attr:`prefix_counts`."""
        if self._prefix_variance is None:
            m = np.arange(self.bins.n_bins + 1)
            cov = self.covariance
            var = cov.var(m) if hasattr(cov, "var") else cov.cov(m, m)
            var.setflags(write=False)
            self._prefix_variance = var
        return self._prefix_variance

    def metadata(self) -> dict[str, Any]:
        """Everything needed to interpret the release, as plain data."""
        meta = self.mechanism.describe()
        meta.update(
            {
                "estimator": self.estimator,
                "postprocess": self.postprocess,
                "integer": self.integer,
                "n_public": self.mechanism.n,
                "branching": list(self.branching) if self.branching is not None else None,
                "level_variance": list(self.level_variance),
                "bins": self.bins.to_dict(),
                "randomness": self.randomness,
                "library_version": self.library_version,
            }
        )
        return meta

    def __repr__(self) -> str:
        shape = f", branching={list(self.branching)}" if self.branching else ""
        seeded = ", SEEDED (not for publication)" if self.seeded else ""
        return (
            f"Release(mechanism={self.mechanism.name!r}, bins={self.bins.n_bins}{shape}, "
            f"epsilon={self.epsilon}, neighbours={self.neighbours!r}, n≈{self.n:.6g}{seeded})"
        )

    # ------------------------------------------------------------------ queries
    def _axis(self, x: Any, name: str) -> np.ndarray:
        t = self.bins.to_axis(x, name)
        if t.dtype.kind == "f" and np.isnan(t).any():
            raise InvalidParameterError(f"The '{name}' argument must not contain NaN.")
        return t

    def _count_below(self, t: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Estimated number of values ``< t`` from prefix counts ``p`` (interpolated in bins).

        Written as ``p[j] + f·(p[j+1] - p[j])`` rather than through :meth:`_terms_below`'s
        ``(1-f)·p[j] + f·p[j+1]``: the latter can drop by one ulp where ``p[j] == p[j+1]``,
        which would break the monotone consistent CDF.
        """
        edges = self.bins.edges
        n_bins = self.bins.n_bins
        if self.bins.discrete:
            idx = np.clip(np.ceil(t) - edges[0], 0, n_bins).astype(np.int64)
            return p[idx]
        j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
        width = (edges[j + 1] - edges[j]).astype(np.float64)
        frac = np.clip((t - edges[j]).astype(np.float64) / width, 0.0, 1.0)
        return p[j] + frac * (p[j + 1] - p[j])

    def _terms_below(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``count_below(t)`` as ``Σ coef · P[idx]`` (two terms per point)."""
        edges = self.bins.edges
        n_bins = self.bins.n_bins
        t = np.asarray(t).ravel()
        if self.bins.discrete:
            idx = np.clip(np.ceil(t) - edges[0], 0, n_bins).astype(np.int64)
            return np.stack([idx, idx], 1), np.stack([np.ones(t.size), np.zeros(t.size)], 1)
        j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
        width = (edges[j + 1] - edges[j]).astype(np.float64)
        frac = np.clip((t - edges[j]).astype(np.float64) / width, 0.0, 1.0)
        return np.stack([j, j + 1], 1), np.stack([1.0 - frac, frac], 1)

    def _terms_cdf(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.bins.discrete:
            t = np.floor(np.asarray(t, dtype=np.float64)) + 1  # <= x  is  < floor(x) + 1
        return self._terms_below(t)

    def _variance_of(self, idx: np.ndarray, coef: np.ndarray) -> np.ndarray:
        cov = self.covariance
        total = np.zeros(idx.shape[0])
        terms = idx.shape[1]
        for i in range(terms):
            for j in range(i, terms):
                pair = coef[:, i] * coef[:, j] * cov.cov(idx[:, i], idx[:, j])
                total += pair if i == j else 2 * pair
        return np.maximum(total, 0.0)

    def stderr(self, query: str, *args: Any) -> Any:
        """Exact standard error of a query answer, from the known noise (no simulation).

        It is the error of the unbiased estimate (``consistent=False``); the consistent answer
        trades a small bias for a smaller error.

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
        """
        if query == "cdf" and len(args) == 1:
            t = self._axis(args[0], "x")
            idx, coef = self._terms_cdf(t)
            return _like(args[0], np.sqrt(self._variance_of(idx, coef)).reshape(np.shape(t)))
        if query == "range_count" and len(args) == 2:
            ta, tb = np.broadcast_arrays(self._axis(args[0], "a"), self._axis(args[1], "b"))
            if self.mechanism.name == "all_intervals":
                var = self._interval_range_variance(ta, tb)
            else:
                ia, ca = self._terms_below(ta)
                ib, cb = self._terms_below(tb)
                var = self._variance_of(np.hstack([ib, ia]), np.hstack([cb, -ca]))
            out = np.sqrt(var).reshape(ta.shape)
            return _like(np.broadcast_to(np.asarray(args[0]), ta.shape), out)
        raise InvalidParameterError(
            "stderr takes ('cdf', x) or ('range_count', a, b). "
            f"Got {query!r} with {len(args)} argument(s)."
        )

    def confidence_interval(self, query: str, *args: Any, level: float = 0.95) -> Any:
        """A confidence interval for a ``cdf`` or ``range_count`` answer.

        The error of an estimate is a known linear combination of independent discrete
        Laplace noises, with standard error ``se`` (:meth:`stderr`). The interval is centred
        on the unbiased estimate (``consistent=False``). The half-width is
        ``se · max(z, ln(1/(1 - level))/√2)``: the larger of the normal quantile and the
        quantile of a Laplace variable with the same variance. One Laplace variable is the
        heaviest-tailed case (sums of several are closer to normal), so the interval is exact
        or conservative for ``level`` above about 0.85; coverage is checked by simulation in
        the tests.

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
        """
        if not (isinstance(level, float | int) and 0 < level < 1):
            raise InvalidParameterError(
                f"The 'level' parameter must be a float in (0, 1). Got {level!r} instead."
            )
        se = np.asarray(self.stderr(query, *args))
        answer = np.asarray(getattr(self, query)(*args, consistent=False))
        half = se * _half_width_factor(float(level))
        low, high = answer - half, answer + half
        if low.ndim == 0:
            return float(low), float(high)
        return low, high

    def _interval_range_variance(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        var = self.level_variance[0]
        if self.bins.discrete:
            lo = self.bins.edges[0]
            s = np.clip(np.ceil(ta) - lo, 0, self.bins.n_bins)
            e = np.clip(np.ceil(tb) - lo, 0, self.bins.n_bins)
            exact = (s == e) | ((s == 0) & (e == self.bins.n_bins) & (self.mechanism.n is not None))
            return np.where(exact, 0.0, var).ravel()
        edges = self.bins.edges
        n_bins = self.bins.n_bins
        ja = np.clip(np.searchsorted(edges, ta, side="right") - 1, 0, n_bins)
        jb = np.clip(np.searchsorted(edges, tb, side="right") - 1, 0, n_bins)
        ia, ib = np.minimum(ja, n_bins - 1), np.minimum(jb, n_bins - 1)
        fa = np.where(
            ja == n_bins, 0.0, np.clip((ta - edges[ia]) / (edges[ia + 1] - edges[ia]), 0, 1)
        )
        fb = np.where(
            jb == n_bins, 0.0, np.clip((tb - edges[ib]) / (edges[ib + 1] - edges[ib]), 0, 1)
        )
        same = (fb - fa) ** 2 * var
        s = np.where(fa > 0, ja + 1, ja)
        apart = ((fa > 0) * (1 - fa) ** 2 + (jb > s) + (fb > 0) * fb**2) * var
        if self.mechanism.n is not None:  # the interval [0, B) is the exact public n
            apart = np.where((s == 0) & (jb == n_bins), apart - var, apart)
        return np.where(ja == jb, same, apart).ravel()

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
        """
        t = self._axis(x, "x")
        p = self._counts(consistent)
        if self.bins.discrete:
            idx = np.clip(np.floor(t) - self.bins.edges[0] + 1, 0, self.bins.n_bins)
            out = p[idx.astype(np.int64)]
        else:
            out = self._count_below(t, p)
        return _like(x, out)

    def range_count(self, a: Any, b: Any, *, consistent: bool | None = None) -> Any:
        """Estimated number of values in ``[a, b)``; ``a`` and ``b`` broadcast together.

        ``consistent`` is as for :meth:`cdf`; a consistent range count is never negative.
        """
        ta = self._axis(a, "a")
        tb = self._axis(b, "b")
        if np.any(ta > tb):
            raise InvalidParameterError("The range [a, b) needs a <= b for every pair.")
        use_consistent = self.postprocess != "none" if consistent is None else consistent
        if use_consistent:
            p = self.consistent_counts
            out = self._count_below(tb, p) - self._count_below(ta, p)
        elif self.mechanism.name == "all_intervals" and not self.bins.discrete:
            out = self._interval_range(*np.broadcast_arrays(ta, tb))
        elif self.mechanism.name == "all_intervals":
            lo = self.bins.edges[0]
            n_bins = self.bins.n_bins
            s = np.clip(np.ceil(ta) - lo, 0, n_bins).astype(np.int64)
            e = np.clip(np.ceil(tb) - lo, 0, n_bins).astype(np.int64)
            out = self._interval(s, e)
        else:
            p = self._prefix
            out = self._count_below(tb, p) - self._count_below(ta, p)
        return _like(np.broadcast_to(np.asarray(a), np.broadcast(ta, tb).shape), out)

    def _interval(self, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Noisy interval counts ``[s, t)`` of whole bins from the all-intervals block."""
        s, t = np.broadcast_arrays(np.asarray(s, np.int64), np.asarray(t, np.int64))
        block = self.noisy_levels[0]
        safe_t = np.where(t > s, t, s + 1)
        idx = interval_index(s, np.minimum(safe_t, self.bins.n_bins), self.bins.n_bins)
        out = np.where(t > s, block[np.clip(idx, 0, block.size - 1)], 0).astype(np.float64)
        if self.mechanism.n is not None:
            whole = (s == 0) & (t == self.bins.n_bins)
            out[whole] = float(self.mechanism.n)
        return out

    def _interval_range(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        edges = self.bins.edges
        n_bins = self.bins.n_bins

        def locate(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # bin index in [0, B] (B: at or past the top edge) and the fraction inside it
            j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins)
            inner = np.minimum(j, n_bins - 1)
            f = np.clip((t - edges[inner]) / (edges[inner + 1] - edges[inner]), 0.0, 1.0)
            return j, np.where(j == n_bins, 0.0, f)

        ja, fa = locate(ta)
        jb, fb = locate(tb)
        # whole bins [s, jb) from one interval count, partial end bins from single-bin counts
        s = np.where(fa > 0, ja + 1, ja)
        whole = self._interval(s, np.maximum(jb, s))
        left = np.where(fa > 0, (1 - fa) * self._interval(ja, ja + 1), 0.0)
        right = np.where(fb > 0, fb * self._interval(jb, jb + 1), 0.0)
        same = (fb - fa) * self._interval(ja, ja + 1)
        return np.where(ja == jb, same, left + whole + right)

    def quantile(self, q: Any) -> Any:
        """Estimated ``q``-quantiles, any number of them at no extra privacy cost.

        Quantiles are read from the consistent CDF (:attr:`consistent_counts`): the first point
        where it reaches ``q · n̂``, interpolating linearly inside the bin (on an integer
        domain: the smallest integer that reaches it). They are non-decreasing in ``q``.

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float, datetime64 or ndarray
            Same shape as ``q``; NaN (NaT) when the estimated count is not positive.
        """
        qa = _check_q(q)
        mono = self.consistent_counts
        n_hat = mono[-1]
        edges = self.bins.edges.astype(np.float64)
        n_bins = self.bins.n_bins
        target = qa * n_hat
        j = np.clip(np.searchsorted(mono, target, side="left"), 1, n_bins)
        if self.bins.discrete:
            out = edges[j - 1]
        else:
            low, high = mono[j - 1], mono[j]
            span = high - low
            frac = np.where(span > 0, (target - low) / np.where(span > 0, span, 1.0), 0.0)
            out = edges[j - 1] + np.clip(frac, 0.0, 1.0) * (edges[j] - edges[j - 1])
        out = np.where(n_hat > 0, out, np.nan)
        if self.bins.datetime_unit is not None:
            ticks = np.where(np.isnan(out), np.iinfo(np.int64).min, np.round(out)).astype(np.int64)
            result = ticks.astype(f"datetime64[{self.bins.datetime_unit}]")
            return result[()] if result.ndim == 0 else result
        return _like(q, out)

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
        """
        qa = _check_q(q)
        if not (isinstance(level, float | int) and 0 < level < 1):
            raise InvalidParameterError(
                f"The 'level' parameter must be a float in (0, 1). Got {level!r} instead."
            )
        if isinstance(simulations, bool) or not isinstance(simulations, int) or simulations < 100:
            raise InvalidParameterError(
                f"The 'simulations' parameter must be an int >= 100. Got {simulations!r}."
            )
        source = resolve_source(rng)
        n_bins = self.bins.n_bins
        m = np.arange(n_bins + 1)
        errors = np.empty((simulations, n_bins + 1))
        for start in range(0, simulations, 256):  # batches bound the memory
            stop = min(start + 256, simulations)
            blocks = self.mechanism.noise_only(stop - start, source)
            errors[start:stop] = estimate_prefix(self.mechanism, blocks, self.estimator)
        cov = self.covariance
        var_m = cov.cov(m, m)
        cov_mb = cov.cov(m, np.full_like(m, n_bins))
        var_b = float(var_m[-1])
        edges = self.bins.edges.astype(np.float64)
        lows, highs = [], []
        for qi in np.atleast_1d(qa).ravel():
            se = np.sqrt(np.maximum(var_m + qi**2 * var_b - 2 * qi * cov_mb, 0.0))
            crit = band_critical_value(errors - qi * errors[:, -1:], se, float(level))
            g_hat = self._prefix - qi * self._prefix[-1]
            upper = np.minimum.accumulate((g_hat + crit * se)[::-1])[::-1]
            lower = np.maximum.accumulate(g_hat - crit * se)
            m_lo = int(np.argmax(upper >= 0)) if (upper >= 0).any() else n_bins
            m_hi = int(np.argmax(lower >= 0)) if (lower >= 0).any() else n_bins
            m_lo, m_hi = max(m_lo, 1), max(m_hi, 1)
            if self.bins.discrete:
                lows.append(edges[m_lo - 1])
                highs.append(edges[m_hi - 1])
            else:
                lows.append(edges[m_lo - 1])
                highs.append(edges[m_hi])
        low = np.array(lows).reshape(np.shape(qa))
        high = np.array(highs).reshape(np.shape(qa))
        if self.bins.datetime_unit is not None:
            unit = f"datetime64[{self.bins.datetime_unit}]"
            low_t = np.round(low).astype(np.int64).astype(unit)
            high_t = np.round(high).astype(np.int64).astype(unit)
            return (low_t[()], high_t[()]) if low_t.ndim == 0 else (low_t, high_t)
        if low.ndim == 0:
            return float(low), float(high)
        return low, high

    def median(self) -> Any:
        """The estimated median, ``quantile(0.5)``."""
        return self.quantile(0.5)

    def histogram(self, *, consistent: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Estimated count per bin and the edges, like :func:`numpy.histogram`.

        Consistent counts (the default unless ``postprocess="none"``) are non-negative and sum
        to ``n̂``; integers when the release has ``integer=True``. Unbiased counts
        (``consistent=False``) may be negative.
        """
        return np.diff(self._counts(consistent)), self.edges

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """The release as JSON-ready data (what :meth:`save` writes)."""
        payload = {
            "metadata": self.metadata(),
            "noisy_levels": [level.tolist() for level in self.noisy_levels],
        }
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "checksum": _checksum(payload),
            "payload": payload,
        }

    def save(self, path: str | Path) -> None:
        """Write the release to ``path`` as versioned JSON, atomically.

        Either the whole file is written or, on any failure, nothing is (a previous file at
        ``path`` stays as it was).
        """
        atomic_write_text(path, json.dumps(self.to_dict(), separators=(",", ":")))


def _half_width_factor(level: float) -> float:
    """``max(normal quantile, Laplace quantile)`` for a two-sided ``level`` interval, in se."""
    z = float(stats.norm.isf((1.0 - level) / 2.0))
    laplace = math.log(1.0 / (1.0 - level)) / math.sqrt(2.0)
    return max(z, laplace)


def _checksum(payload: dict[str, Any]) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _check_q(q: Any) -> np.ndarray:
    """``q`` as a float array of probabilities in [0, 1], or a clear error."""
    qa = np.asarray(q, dtype=np.float64) if _is_number_like(q) else None
    if qa is None or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(
            f"The 'q' argument must hold probabilities in [0, 1]. Got {q!r} instead."
        )
    return qa


def _is_number_like(q: Any) -> bool:
    try:
        arr = np.asarray(q)
    except Exception:  # pragma: no cover - numpy accepts nearly anything
        return False
    return arr.dtype.kind in "iuf"


def _like(x: Any, out: np.ndarray) -> Any:
    """Return a Python float for scalar input, else an array of the input's shape."""
    if np.ndim(x) == 0:
        return float(np.asarray(out).reshape(()))
    return np.asarray(out, dtype=np.float64).reshape(np.shape(x))


def load_release(path: str | Path) -> Release:
    """Read a release written by :meth:`Release.save`, validating it fully.

    Raises
    ------
    ReleaseFormatError
        If the file is not JSON (corrupt or truncated), is not a treedp release, comes from a
        newer format version, fails its checksum, or its contents are inconsistent.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReleaseFormatError(f"No release file at '{p}'.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReleaseFormatError(f"Could not read release file '{p}': {exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        raise ReleaseFormatError(
            f"'{p}' is not valid JSON: the release file is corrupt or truncated."
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise ReleaseFormatError(f"'{p}' is not a treedp release file.")
    version = doc.get("format_version")
    if not isinstance(version, int) or version < 1:
        raise ReleaseFormatError(f"'{p}' has an invalid format version {version!r}.")
    if version > FORMAT_VERSION:
        raise ReleaseFormatError(
            f"'{p}' uses release format version {version}, newer than this treedp reads "
            f"(<= {FORMAT_VERSION}); upgrade treedp."
        )
    payload = doc.get("payload")
    if not isinstance(payload, dict) or doc.get("checksum") != _checksum(payload):
        raise ReleaseFormatError(f"'{p}' failed its checksum: the release file is corrupt.")
    try:
        return _from_payload(payload)
    except (TreeDPError, KeyError, TypeError, ValueError, IndexError) as exc:
        raise ReleaseFormatError(f"'{p}' holds an inconsistent release: {exc}") from None


def _from_payload(payload: dict[str, Any]) -> Release:
    meta = payload["metadata"]
    bins = Bins.from_dict(meta["bins"])
    name = meta["mechanism"]
    neighbours = meta["neighbours"]
    budgets = [float(e) for e in meta["block_epsilons"]]
    shape = None
    if name == "tree":
        shape = TreeShape(bins.n_bins, tuple(int(k) for k in meta["branching"]))
        if neighbours == "replace":
            budgets = budgets[1:]
    mechanism = make_mechanism(
        name,
        n_bins=bins.n_bins,
        epsilon=float(meta["epsilon"]),
        neighbours=neighbours,
        n=meta["n_public"],
        shape=shape,
        level_budgets=budgets if name == "tree" else None,
    )
    if mechanism.describe()["scales"] != meta["scales"]:
        raise ReleaseFormatError("the stored noise scales do not match the stated budgets")
    levels = [np.asarray(level, dtype=np.int64) for level in payload["noisy_levels"]]
    expected = (
        shape.level_sizes()
        if shape is not None
        else [b.size for b in mechanism.true_blocks(np.zeros(bins.n_bins, dtype=np.int64))]
    )
    if [level.size for level in levels] != expected or any(lv.ndim != 1 for lv in levels):
        raise ReleaseFormatError("the noisy levels do not match the tree shape")
    if not all(math.isfinite(v) for v in meta["level_variance"]):
        raise ReleaseFormatError("non-finite level variance")
    return Release(
        bins=bins,
        mechanism=mechanism,
        noisy_levels=levels,
        estimator=meta["estimator"],
        randomness=meta["randomness"],
        library_version=meta["library_version"],
        postprocess=meta.get("postprocess", "monotone"),
        integer=bool(meta.get("integer", False)),
    )
