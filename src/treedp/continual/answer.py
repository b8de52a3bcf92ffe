"""The running answer after one step: count, and with bins histogram, CDF, ranges, quantiles.

Everything here is post-processing of the step's noisy per-bin estimates: no data, no noise.

Two views are given. The *unbiased* estimates (``raw_histogram``, ``count``) carry exact
standard errors from the mechanism's ``Var(t)``. The *consistent* view (``histogram``, ``cdf``,
``range_count``, ``quantile``) is the least-squares monotone fit of the running CDF (the
prefix sums of the unbiased bins) from 0 to the unbiased count, as a release fits its own
(:func:`treedp.estimation.monotone_l2`): non-negative bins summing to :attr:`count`; ``stderr``
/ intervals refer to the unbiased estimate. Until session 25 each bin was clipped at 0 and at
its previous answer: a running maximum of noise, which piled up in empty bins step after step
(365 steps of 30 records on 64 bins: the histogram summed to 11,571 for 10,950 records, the
90th percentile 55.2 for 45.5; ``benchmarks/continual_distribution.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np
from numpy.typing import NDArray

from treedp._frames import pandas_frame, polars_frame
from treedp._validation import check_level, must
from treedp.continual.intervals import quantile_bins, share_bounds
from treedp.domain import Bins
from treedp.estimation.consistency import monotone_l2
from treedp.exceptions import InvalidParameterError
from treedp.release.atoms import below_points, block_value, point_masses, release_quantiles
from treedp.release.inference import bracket_interval, half_width_factor, slack
from treedp.release.queries import Answers, Points, Scalar, below_bracket, cdf_bracket, check_q
from treedp.release.signal import FLAG_SHARE

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

__all__ = ["StepAnswer", "consistent"]


def consistent(raw: np.ndarray) -> np.ndarray:
    """The consistent running histogram: the differences of the least-squares monotone fit of
    the unbiased running CDF from 0 to the unbiased count (clipped at 0 when that is
    negative); the bins' noise is independent with one variance, so unweighted. Without bins
    (one entry) the count clipped at 0."""
    prefix = np.concatenate([[0.0], np.cumsum(np.asarray(raw, dtype=np.float64))])
    return np.diff(monotone_l2(prefix, overwrite=True))


@dataclass(frozen=True)
class StepAnswer:
    """The running answer after step ``t`` of a stream.

    Attributes
    ----------
    t, horizon : int
        The step (1-based) and the stream's horizon.
    raw_histogram : ndarray
        Unbiased per-bin running counts (one entry without bins).
    histogram : ndarray
        The consistent per-bin running counts (non-negative, summing to :attr:`count`, or 0
        when that is negative; from one step to the next a bin's count may go down by noise).
    bin_variance : float
        The exact variance of each entry of ``raw_histogram``.
    bins : Bins or None
        The stream's public bins.
    seeded : bool
        True when the stream's noise came from a seeded, reproducible source (tests and
        research only): its answers are not for publication, and say so.
    gaussian : bool
        True for a zCDP (discrete Gaussian) stream, False for pure ε (discrete Laplace): which
        tails :meth:`interval` reads.
    held_masses : tuple of int
        Bins an earlier step's answer read as a point mass: read so here too (a stream's
        reading of a bin never flips back; :meth:`mass_bins`).
    """

    t: int
    horizon: int
    raw_histogram: np.ndarray
    histogram: np.ndarray
    bin_variance: float
    bins: Bins | None = None
    seeded: bool = False
    gaussian: bool = False
    held_masses: tuple[int, ...] = ()

    @property
    def count(self) -> float:
        """The unbiased running count of all records so far (with a privacy unit: of the
        records kept, at most ``max_contributions`` per person)."""
        return float(self.raw_histogram.sum())

    @property
    def stderr(self) -> float:
        """The exact standard error of :attr:`count` (bins are independent)."""
        return float(np.sqrt(self.bin_variance * self.raw_histogram.size))

    @property
    def histogram_stderr(self) -> float:
        """The exact standard error of each entry of :attr:`raw_histogram`."""
        return float(np.sqrt(self.bin_variance))

    @property
    def low_signal(self) -> bool:
        """Too little signal, by a release's rule (:func:`treedp.release.signal.low_signal`):
        a count not above 0, or, with bins, the standard error of the unbiased count below
        the running median's bin edge above :data:`~treedp.release.signal.FLAG_SHARE` of the
        count; then the distribution answers (a median of 115 on bounds (0, 120) for a step
        with no records) are noise. Decided from released and public quantities only."""
        n_hat = self.count
        if not n_hat > 0:
            return True
        if self.bins is None:
            return False
        cum = self._points()[1]
        m = int(np.searchsorted(cum, 0.5 * cum[-1], side="left"))
        return bool(np.sqrt(m * self.bin_variance) > FLAG_SHARE * n_hat)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """An interval for :attr:`count` at ``level``: ``count ± c·stderr`` with a release's
        factor (:func:`treedp.release.inference.half_width_factor`: the larger of the normal
        and Laplace quantiles for pure ε, whose error can be one or a few discrete Laplace
        draws at early steps; the normal one for zCDP), plus one record (a lattice step: the
        noise is integer-valued, and with a small standard error a quantile of the continuous
        law falls between lattice points; half a record in session 25 was too little where one
        draw dominates, an independent review in session 26), clipped at 0. The normal
        quantile alone (until session 25) covered 0.931 at 95% and 0.990 at 99.9% at step 1 of
        a pure-ε tree, 0.862 at 90% with ρ = 2 (an independent review, exact)."""
        level = check_level(level)
        half = float(slack(half_width_factor(level, gaussian=self.gaussian), self.stderr))
        return max(self.count - half, 0.0), max(self.count + half, 0.0)

    # ----------------------------------------------------------------- distributions
    def _points(self, raw: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """The bins' edges and the running CDF at them: the consistent one, or (``raw``) the
        unbiased prefix sums of :attr:`raw_histogram`."""
        if self.bins is None:
            raise_no_bins()
        assert self.bins is not None
        edges = np.asarray(self.bins.edges, dtype=np.float64)
        counts = self.raw_histogram if raw else self.histogram
        return edges, np.concatenate([[0.0], np.cumsum(counts)])

    def _masses(self, cum: np.ndarray) -> tuple[tuple[int, float], ...]:
        """The bins the counts read as a point mass: as a release reads them
        (:mod:`treedp.release.atoms`; every bin's standard error is the same public figure),
        and every bin an earlier step read so (``held_masses``). A threshold test on fresh
        noise each step flipped a bin at the edge of it back and forth, and a running count
        with it by a third of the records from one step to the next (an independent review:
        30% of records clamped onto the upper bound, ``range_count(0, 100)`` 1382, 986, ...,
        1987); once read, the mass stays (its records do: a running count never loses them).
        """
        assert self.bins is not None
        se = self.histogram_stderr
        found = dict(point_masses(self.bins, cum, lambda j: np.full(np.shape(j), se)))
        edges = np.asarray(self.bins.edges, dtype=np.float64)
        for j in self.held_masses:
            value = block_value(edges, j, self.bins.integers)
            if j not in found and value is not None and 0 <= j < edges.size - 1:
                found[j] = value
        return tuple(sorted(found.items()))

    def mass_bins(self) -> tuple[int, ...]:
        """The bins this answer's counts read as a point mass (kept by the stream for the
        next steps; empty without bins)."""
        if self.bins is None:
            return ()
        return tuple(j for j, _ in self._masses(self._points()[1]))

    def _below(self, t: np.ndarray, closed: bool = False, consistent: bool = True) -> np.ndarray:
        """The running count below axis points ``t``: consistent (a point mass at its value),
        or the unbiased prefix sums of :attr:`raw_histogram`, linear inside a bin."""
        edges, cum = self._points(raw=not consistent)
        assert self.bins is not None
        moved = np.asarray(t, dtype=np.float64)
        if consistent:
            moved = below_points(self.bins, moved, self._masses(cum), closed=closed)
        if self.bins.integers:  # whole integers: below t is below ceil(t)
            moved = np.ceil(moved)
        return np.asarray(np.interp(moved, edges, cum))

    @overload
    def count_below(self, x: Scalar, *, consistent: bool = True) -> float: ...
    @overload
    def count_below(self, x: Points, *, consistent: bool = True) -> Answers: ...
    @overload
    def count_below(self, x: object, *, consistent: bool = True) -> float | Answers: ...
    def count_below(self, x: Any, *, consistent: bool = True) -> float | Answers:
        """The running count of records below ``x`` (linear inside a bin; on integers bins
        below ``ceil(x)``; a bin read as a point mass at its value): consistent, or with
        ``consistent=False`` the unbiased sum of :attr:`raw_histogram` (at early steps the
        monotone fit moves mass into empty bins: a bias of a third of its error in an
        independent review; the unbiased answer can be negative)."""
        if self.bins is None:
            raise_no_bins()
        assert self.bins is not None
        return _shaped(self._below(self.bins.to_axis(x, "x"), consistent=consistent))

    @overload
    def cdf(self, x: Scalar, *, consistent: bool = True) -> float: ...
    @overload
    def cdf(self, x: Points, *, consistent: bool = True) -> Answers: ...
    @overload
    def cdf(self, x: object, *, consistent: bool = True) -> float | Answers: ...
    def cdf(self, x: Any, *, consistent: bool = True) -> float | Answers:
        """The running CDF at ``x`` (the share ``<= x``; on integers bins ``<= floor(x)``):
        monotone, in ``[0, 1]`` (0 while nothing is counted); ``consistent=False``: the
        unbiased count below over the unbiased :attr:`count` (neither monotone nor bounded)."""
        _, cum = self._points()
        assert self.bins is not None
        t = self.bins.to_axis(x, "x")
        if self.bins.integers:
            t = np.floor(np.asarray(t, dtype=np.float64)) + 1
        below = self._below(t, closed=not self.bins.integers, consistent=consistent)
        total = cum[-1] if consistent else self.count
        return _shaped(below / total if total > 0 else np.zeros_like(below))

    @overload
    def range_count(self, lo: Scalar, hi: Scalar, *, consistent: bool = True) -> float: ...
    @overload
    def range_count(self, lo: Points, hi: Any, *, consistent: bool = True) -> Answers: ...
    @overload
    def range_count(self, lo: Scalar, hi: Points, *, consistent: bool = True) -> Answers: ...
    @overload
    def range_count(
        self, lo: object, hi: object, *, consistent: bool = True
    ) -> float | Answers: ...
    def range_count(self, lo: Any, hi: Any, *, consistent: bool = True) -> float | Answers:
        """The running count in ``[lo, hi)``: consistent (never negative), or unbiased."""
        if not consistent:
            below = self.count_below(hi, consistent=False)
            return _shaped(np.asarray(below - self.count_below(lo, consistent=False)))
        return _shaped(np.asarray(np.maximum(self.count_below(hi) - self.count_below(lo), 0.0)))

    @overload
    def range_interval(
        self, lo: Scalar, hi: Scalar, level: float = 0.95
    ) -> tuple[float, float]: ...
    @overload
    def range_interval(
        self, lo: object, hi: object, level: float = 0.95
    ) -> tuple[float | Answers, float | Answers]: ...
    def range_interval(
        self, lo: Any, hi: Any, level: float = 0.95
    ) -> tuple[float | Answers, float | Answers]:
        """A confidence interval for the running count in ``[lo, hi)``, valid at any points
        (inside a bin too: from a lower bound at the bracketing edges' inner prefixes to an
        upper one at the outer, as :meth:`treedp.Release.confidence_interval`): the unbiased
        bins' sums (independent bins, each of variance :attr:`bin_variance`), a release's
        factor, one record of lattice slack (:func:`~treedp.release.inference.slack`),
        clipped at 0 and widened to hold :meth:`range_count`. Each bound misses with
        probability at most ``(1 - level)/2``."""
        level = check_level(level)
        if self.bins is None:
            raise_no_bins()
        assert self.bins is not None
        ta, tb = np.broadcast_arrays(self.bins.to_axis(lo, "lo"), self.bins.to_axis(hi, "hi"))
        a_lo, a_hi = below_bracket(self.bins, ta)
        b_lo, b_hi = below_bracket(self.bins, tb)
        prefix = self._points(raw=True)[1]

        def part(top: np.ndarray, bottom: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            width = np.maximum(top - bottom, 0)  # an empty range: 0, exactly
            est = np.where(width > 0, prefix[top] - prefix[np.minimum(bottom, top)], 0.0)
            return est, np.sqrt(width * self.bin_variance)

        low, high = bracket_interval(
            part(b_lo, a_hi), part(b_hi, a_lo), level, None, gaussian=self.gaussian
        )
        point = np.ravel(self.range_count(lo, hi))  # the lattice step is the bracket's own
        low, high = np.fmin(low, point), np.fmax(high, point)
        return _shaped(low.reshape(ta.shape)), _shaped(high.reshape(ta.shape))

    @overload
    def quantile(self, q: float) -> float: ...
    @overload
    def quantile(self, q: Sequence[float] | NDArray[Any]) -> Answers: ...
    @overload
    def quantile(self, q: object) -> float | Answers: ...
    def quantile(self, q: Any) -> float | Answers:
        """The running ``q``-quantile, read as :meth:`treedp.Release.quantile` reads its CDF
        (linear in a bin, the smallest integer on integers bins; a point mass's bin answered
        by its bound, 0 or nearer edge: :func:`treedp.release.atoms.release_quantiles`); a
        level inside a bin the counts read as a point mass (:meth:`mass_bins`, held from
        earlier steps too) is answered by the mass's value, as the counts place it."""
        edges, cum = self._points()
        qs = check_q(q)
        assert self.bins is not None
        se = self.histogram_stderr  # every bin's, public
        out = release_quantiles(self.bins, cum, qs, lambda j: np.full(np.shape(j), se))
        target = qs * cum[-1]
        for j, value in self._masses(cum):
            out = np.where((target > cum[j]) & (target <= cum[j + 1]), value, out)
        return _shaped(np.asarray(np.where(cum[-1] > 0, out, edges[0])))  # nothing: the bound

    @overload
    def quantile_interval(self, q: float, level: float = 0.95) -> tuple[float, float]: ...
    @overload
    def quantile_interval(
        self, q: Sequence[float] | NDArray[Any], level: float = 0.95
    ) -> tuple[Answers, Answers]: ...
    @overload
    def quantile_interval(
        self, q: object, level: float = 0.95
    ) -> tuple[float | Answers, float | Answers]: ...
    def quantile_interval(
        self, q: Any, level: float = 0.95
    ) -> tuple[float | Answers, float | Answers]:
        """A confidence interval for each running ``q``-quantile, covering the quantile of the
        records counted so far with probability at least ``level`` for each ``q``.

        From one-sided bounds on ``F(m) - q·n`` at the bins' edges (the unbiased running
        counts, independent bins of variance :attr:`bin_variance`, a release's factor and one
        record of lattice slack), each needed only at the true quantile's bin or the one before it
        (:mod:`treedp.continual.intervals`): no simultaneous band, no simulation. The ends are
        bin edges (on integers bins the last integer of the upper bin), widened to hold
        :meth:`quantile`."""
        level = check_level(level)
        qs = check_q(q)
        edges, prefix = self._points(raw=True)
        assert self.bins is not None
        factor = half_width_factor(level, gaussian=self.gaussian)
        m_lo, m_hi = quantile_bins(prefix, self.bin_variance, qs, factor)
        low, high = edges[m_lo - 1], edges[m_hi]
        if self.bins.integers:  # the last integer of the bin holding the upper end
            high = high - 1
        point = np.ravel(self.quantile(qs))
        low, high = np.fmin(low, point), np.fmax(high, point)
        return _shaped(low.reshape(qs.shape)), _shaped(high.reshape(qs.shape))

    @overload
    def cdf_interval(self, x: Scalar, level: float = 0.95) -> tuple[float, float]: ...
    @overload
    def cdf_interval(self, x: Points, level: float = 0.95) -> tuple[Answers, Answers]: ...
    @overload
    def cdf_interval(
        self, x: object, level: float = 0.95
    ) -> tuple[float | Answers, float | Answers]: ...
    def cdf_interval(self, x: Any, level: float = 0.95) -> tuple[float | Answers, float | Answers]:
        """A confidence interval for the running CDF share at ``x`` (of the records counted so
        far, the share ``<= x``, as :meth:`cdf`), covering with probability at least ``level``.

        Fieller's construction on the unbiased running counts at the edges bracketing ``x``
        (:mod:`treedp.continual.intervals`): the count below and the total are estimated
        from the same bins, so the share's bounds come from one test each, not a ratio of two
        intervals. In ``[0, 1]``, widened to hold :meth:`cdf`."""
        level = check_level(level)
        if self.bins is None:
            raise_no_bins()
        assert self.bins is not None
        t = self.bins.to_axis(x, "x")
        m_low, m_high = cdf_bracket(self.bins, np.asarray(t, dtype=np.float64))
        prefix = self._points(raw=True)[1]
        factor = half_width_factor(level, gaussian=self.gaussian)
        low, high = share_bounds(prefix, self.bin_variance, m_low, m_high, factor)
        point = np.ravel(self.cdf(x))
        low, high = np.fmin(low, point), np.fmax(high, point)
        shape = np.shape(t)
        return _shaped(low.reshape(shape)), _shaped(high.reshape(shape))

    def to_arrays(self, level: float = 0.95) -> dict[str, np.ndarray]:
        """Equal-length columns: one row per bin (``bin_low``, ``bin_high``, ``count`` the
        consistent running count, ``count_raw`` the unbiased one, ``count_stderr`` the exact
        standard error of ``count_raw``: the consistent count has a bias it does not hold), or
        without bins one row (``count``, ``count_stderr``, ``count_low``, ``count_high`` at
        ``level``); ``step`` on every row."""
        if self.bins is None:
            lo, hi = self.interval(level)
            cols = {"count": [self.count], "count_stderr": [self.stderr]}
            cols |= {"count_low": [lo], "count_high": [hi]}
            return {"step": np.array([self.t]), **{k: np.array(v) for k, v in cols.items()}}
        edges = np.asarray(self.bins.edges)
        size = self.histogram.size
        return {
            "step": np.full(size, self.t),
            "bin_low": edges[:-1],
            "bin_high": edges[1:],
            "count": np.asarray(self.histogram, dtype=np.float64),
            "count_raw": np.asarray(self.raw_histogram, dtype=np.float64),
            "count_stderr": np.full(size, self.histogram_stderr),
        }

    def to_frame(self, level: float = 0.95) -> pd.DataFrame:
        """:meth:`to_arrays` as a pandas DataFrame (``treedp[pandas]``)."""
        return pandas_frame(self.to_arrays(level), "StepAnswer.to_frame")

    def to_polars(self, level: float = 0.95) -> pl.DataFrame:
        """:meth:`to_arrays` as a polars DataFrame (``treedp[polars]``)."""
        return polars_frame(self.to_arrays(level), "StepAnswer.to_polars")

    def __repr__(self) -> str:
        bins = "" if self.bins is None else f", {self.bins.n_bins} bins (.histogram, .to_frame())"
        mark = " [SEEDED: not for publication]" if self.seeded else ""
        return (
            f"StepAnswer(step {self.t} of {self.horizon}: count {self.count:.6g} "
            f"± {self.stderr:.3g}{bins}){mark}"
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what the CLI prints)."""
        out: dict[str, Any] = {
            "step": self.t,
            "horizon": self.horizon,
            "count": self.count,
            "stderr": self.stderr,
            "interval_95": list(self.interval(0.95)),
            "seeded": self.seeded,
        }
        if self.bins is not None:
            out["histogram"] = self.histogram.tolist()
            out["histogram_stderr"] = self.histogram_stderr
            out["quartiles"] = np.asarray(self.quantile([0.25, 0.5, 0.75])).tolist()
            low, high = self.quantile_interval([0.25, 0.5, 0.75], 0.95)
            out["quartiles_interval_95"] = [[lo, hi] for lo, hi in zip(low, high, strict=True)]
            out["low_signal"] = self.low_signal
        return out


def raise_no_bins() -> None:
    """The one error of a distribution query on a stream without bins."""
    raise InvalidParameterError(
        must("bins", "be given when the stream is created to ask for a CDF, range or quantile.")
    )


def _shaped(values: Any) -> float | Answers:
    """A float for one point (a 0-d result), else the array: what :class:`treedp.Release`
    answers (an adopter's run: a stream answered ``array(5.)`` where a release answers 5.0)."""
    arr = np.asarray(values, dtype=np.float64)
    return float(arr) if arr.ndim == 0 else arr
