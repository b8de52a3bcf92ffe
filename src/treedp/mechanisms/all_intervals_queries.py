"""Range queries answered straight from the all-intervals baseline's interval counts.

The all-intervals baseline releases one noisy count per interval ``[s, t)`` of whole bins.
Its unbiased range answer reads those counts directly — one interval count for the whole
bins plus single-bin counts for the partial end bins — instead of differencing two prefix
estimates, so its error is that of at most three noisy counts. A :class:`Release` reaches
this module through one mechanism hook
(:meth:`treedp.mechanisms.base.Mechanism.direct_ranges`).
"""

from __future__ import annotations

import numpy as np

from treedp.domain import Bins
from treedp.estimation import interval_index

__all__ = ["AllIntervalsQueries"]


class AllIntervalsQueries:
    """Unbiased range counts and their exact variance from the interval block.

    Parameters
    ----------
    bins : Bins
        The public bins.
    block : ndarray
        The noisy interval counts (the mechanism's one block).
    variance : float
        The noise variance of one interval count.
    n_public : int or None
        The exact public ``n`` (``replace``): the interval ``[0, B)`` is then exact.
    """

    def __init__(
        self, bins: Bins, block: np.ndarray, variance: float, n_public: int | None
    ) -> None:
        self.bins = bins
        self.block = block
        self.variance = variance
        self.n_public = n_public

    def _whole(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bin ``j`` in ``[0, B]`` (``B``: at or past the top edge) and the fraction in it."""
        j, f = self.bins.locate_axis(t)  # (B, 0) at or past the last edge
        last = j == self.bins.n_bins
        j, f = np.where(last, j - 1, j), np.where(last, 1.0, f)
        top = np.asarray(t) >= self.bins.edges[-1]
        return np.where(top, self.bins.n_bins, j), np.where(top, 0.0, f)

    def _starts(self, ta: np.ndarray, tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Whole-bin bounds ``[s, e)`` of ``[a, b)`` on discrete (integer) bins."""
        lo, n_bins = self.bins.edges[0], self.bins.n_bins
        s, e = (np.clip(np.ceil(t) - lo, 0, n_bins).astype(np.int64) for t in (ta, tb))
        return s, e

    def interval(self, s: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Noisy interval counts ``[s, t)`` of whole bins (0 for an empty interval)."""
        n_bins = self.bins.n_bins
        s, t = np.broadcast_arrays(np.asarray(s, np.int64), np.asarray(t, np.int64))
        safe_t = np.where(t > s, t, s + 1)
        idx = interval_index(s, np.minimum(safe_t, n_bins), n_bins)
        block = self.block
        out = np.where(t > s, block[np.clip(idx, 0, block.size - 1)], 0).astype(np.float64)
        if self.n_public is not None:
            out[(s == 0) & (t == n_bins)] = float(self.n_public)
        return out

    def range_count(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """Unbiased counts in ``[a, b)`` (axis points, broadcast together)."""
        ta, tb = np.broadcast_arrays(ta, tb)
        if self.bins.discrete:
            return self.interval(*self._starts(ta, tb))
        ja, fa = self._whole(ta)
        jb, fb = self._whole(tb)
        # whole bins [s, jb) from one interval count, partial end bins from single-bin counts
        s = np.where(fa > 0, ja + 1, ja)
        whole = self.interval(s, np.maximum(jb, s))
        left = np.where(fa > 0, (1 - fa) * self.interval(ja, ja + 1), 0.0)
        right = np.where(fb > 0, fb * self.interval(jb, jb + 1), 0.0)
        same = (fb - fa) * self.interval(ja, ja + 1)
        out: np.ndarray = np.where(ja == jb, same, left + whole + right)
        return out

    def range_variance(self, ta: np.ndarray, tb: np.ndarray) -> np.ndarray:
        """The exact variance of :meth:`range_count`, flattened."""
        ta, tb = np.broadcast_arrays(ta, tb)
        var = self.variance
        n_bins = self.bins.n_bins
        if self.bins.discrete:
            s, e = self._starts(ta, tb)
            exact = (s == e) | ((s == 0) & (e == n_bins) & (self.n_public is not None))
            return np.where(exact, 0.0, var).ravel()
        ja, fa = self._whole(ta)
        jb, fb = self._whole(tb)
        same = (fb - fa) ** 2 * var
        s = np.where(fa > 0, ja + 1, ja)
        apart = ((fa > 0) * (1 - fa) ** 2 + (jb > s) + (fb > 0) * fb**2) * var
        if self.n_public is not None:  # the interval [0, B) is the exact public n
            apart = np.where((s == 0) & (jb == n_bins), apart - var, apart)
        var_out: np.ndarray = np.where(ja == jb, same, apart).ravel()
        return var_out
