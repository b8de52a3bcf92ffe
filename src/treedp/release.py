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
from scipy.optimize import isotonic_regression

from treedp._atomic import atomic_write_text
from treedp.domain import Bins
from treedp.estimation import baseline_prefix, interval_index, tree_prefix
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
        How prefix counts are estimated from the noisy levels (``"direct"``).
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
        self.estimator = estimator
        self.randomness = dict(randomness)
        self.library_version = library_version
        if isinstance(mechanism, TreeMechanism):
            prefix, variance = tree_prefix(mechanism.shape, levels, self.level_variance)
        else:
            prefix, variance = baseline_prefix(
                mechanism.name, levels, self.level_variance, bins.n_bins, mechanism.n
            )
        prefix.setflags(write=False)
        variance.setflags(write=False)
        self._prefix = prefix
        self._prefix_variance = variance
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
    def prefix_variance(self) -> np.ndarray:
        """The variance of each entry of :attr:`prefix_counts`."""
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
            j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
            f = np.clip((t - edges[j]) / (edges[j + 1] - edges[j]), 0.0, 1.0)
            return j, f

        ja, fa = locate(ta)
        jb, fb = locate(tb)
        same = ja == jb
        bin_a = self._interval(ja, ja + 1)
        bin_b = self._interval(jb, jb + 1)
        middle = self._interval(ja + 1, np.maximum(jb, ja + 1))
        apart = (1 - fa) * bin_a + middle + fb * bin_b
        return np.where(same, (fb - fa) * bin_a, apart)

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

        The counts are differences of the unbiased prefix estimates, so they may be negative.
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
