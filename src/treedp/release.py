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
from scipy.optimize import isotonic_regression

from treedp._atomic import atomic_write_text
from treedp.domain import Bins
from treedp.estimation import (
    PrefixCovariance,
    check_estimator,
    estimate_prefix,
    interval_index,
    prefix_covariance,
)
from treedp.exceptions import InvalidParameterError, ReleaseFormatError, TreeDPError
from treedp.mechanisms import Mechanism, TreeMechanism
from treedp.mechanisms.factory import make_mechanism
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
    ) -> None:
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
        self._monotone: np.ndarray | None = None

    # ------------------------------------------------------------------ metadata
    @property
    def n(self) -> float:
        """The number of records: the public ``n`` under ``replace``, else its estimate."""
        return float(self._prefix[-1])

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
            var = self.covariance.cov(m, m)
            var.setflags(write=False)
            self._prefix_variance = var
        return self._prefix_variance

    def metadata(self) -> dict[str, Any]:
        """Everything needed to interpret the release, as plain data."""
        meta = self.mechanism.describe()
        meta.update(
            {
                "estimator": self.estimator,
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

    def _count_below(self, t: np.ndarray) -> np.ndarray:
        """Estimated number of values ``< t`` (interpolated inside bins)."""
        edges = self.bins.edges
        n_bins = self.bins.n_bins
        p = self._prefix
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
        Laplace noises, with standard error ``se`` (:meth:`stderr`). The half-width is
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
        answer = np.asarray(getattr(self, query)(*args))
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

    def cdf(self, x: Any) -> Any:
        """Estimated number of values ``<= x``.

        Parameters
        ----------
        x : scalar or array-like
            Query points: numbers, or datetimes for datetime bins.

        Returns
        -------
        float or ndarray
            Same shape as ``x``. Unbiased (no consistency post-processing), so it may be
            negative or decrease between points.
        """
        t = self._axis(x, "x")
        if self.bins.discrete:
            idx = np.clip(np.floor(t) - self.bins.edges[0] + 1, 0, self.bins.n_bins)
            out = self._prefix[idx.astype(np.int64)]
        else:
            out = self._count_below(t)
        return _like(x, out)

    def range_count(self, a: Any, b: Any) -> Any:
        """Estimated number of values in ``[a, b)``; ``a`` and ``b`` broadcast together."""
        ta = self._axis(a, "a")
        tb = self._axis(b, "b")
        if np.any(ta > tb):
            raise InvalidParameterError("The range [a, b) needs a <= b for every pair.")
        if self.mechanism.name == "all_intervals" and not self.bins.discrete:
            out = self._interval_range(*np.broadcast_arrays(ta, tb))
        elif self.mechanism.name == "all_intervals":
            lo = self.bins.edges[0]
            n_bins = self.bins.n_bins
            s = np.clip(np.ceil(ta) - lo, 0, n_bins).astype(np.int64)
            e = np.clip(np.ceil(tb) - lo, 0, n_bins).astype(np.int64)
            out = self._interval(s, e)
        else:
            out = self._count_below(tb) - self._count_below(ta)
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

    def _monotone_prefix(self) -> np.ndarray:
        """The prefix counts projected onto non-decreasing sequences in ``[0, n_hat]``."""
        if self._monotone is None:
            n_hat = max(self.n, 0.0)
            fit = isotonic_regression(self._prefix).x
            fit = np.clip(fit, 0.0, n_hat)
            fit[0], fit[-1] = 0.0, n_hat
            self._monotone = fit
        return self._monotone

    def quantile(self, q: Any) -> Any:
        """Estimated ``q``-quantiles, any number of them at no extra privacy cost.

        The prefix counts are first made monotone (isotonic regression, clipped to
        ``[0, n_hat]``); the quantile is where this CDF reaches ``q · n_hat``, interpolating
        linearly inside the bin (on an integer domain: the smallest integer that reaches it).

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float, datetime64 or ndarray
            Same shape as ``q``; NaN (NaT) when the estimated count is not positive.
        """
        qa = np.asarray(q, dtype=np.float64) if _is_number_like(q) else None
        if qa is None or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
            raise InvalidParameterError(
                f"The 'q' argument must hold probabilities in [0, 1]. Got {q!r} instead."
            )
        mono = self._monotone_prefix()
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

    def median(self) -> Any:
        """The estimated median, ``quantile(0.5)``."""
        return self.quantile(0.5)

    def histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """Estimated count per bin and the edges, like :func:`numpy.histogram`.

        The counts are differences of the unbiased prefix estimates, so they may be negative
        (see :meth:`prefix_counts`).
        """
        return np.diff(self._prefix), self.edges

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
    )
