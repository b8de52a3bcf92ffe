"""The ``"auto"`` contribution bound inside an engine's own per-person pass.

An engine that bounds persons where the data lives (files: between its spill passes) gets
this hook in its :class:`~treedp.engines.grouped.GroupedJob`: it adds up :meth:`histogram`
over parts that hold disjoint persons (each part's histogram depends on its persons only),
calls :attr:`AutoPass.choose` once with the sum (which charges the query, noises the
histogram and chooses: :mod:`treedp.grouped_auto`), and bounds with the bounds returned. The
grid and ``max_groups`` are public; nothing here is noised or released.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from treedp.noise import RandomSource
from treedp.privacy.auto_bound import entry_histograms
from treedp.privacy.contribution import ContributionBounds

__all__ = ["AutoPass"]


@dataclass(frozen=True, eq=False)
class AutoPass:
    """What an engine needs to let ``"auto"`` choose the bound between its passes.

    Attributes
    ----------
    grid : ndarray of int
        The public candidates (the histogram's buckets).
    max_groups : int or None
        Per-group variant: each person's ``max_groups`` keys are drawn first and the
        (person, key) pairs counted; None: persons are counted.
    choose : callable
        ``choose(histogram, mass)`` → the bounds to apply (called once, with the whole sums;
        ``mass`` None when the bias is assumed).
    n_bins : int or None
        The release's bins, for the mass histogram of each entry's values
        (:mod:`treedp.privacy.auto_mass`); None: no mass histogram (the bias is assumed).
    totals : list of ndarray
        Each part's rows per key before bounding, appended by :meth:`histogram` (for
        :meth:`key_top`; never released).
    """

    grid: np.ndarray
    max_groups: int | None
    choose: Callable[[np.ndarray, np.ndarray | None], ContributionBounds]
    n_bins: int | None = None
    totals: list[np.ndarray] = field(default_factory=list)

    def key_top(self) -> int:
        """The largest key's rows over the parts seen so far, before any bounding (it bounds
        every key's bounded total: the mechanism's domain is checked on it before the
        charge)."""
        if not self.totals:
            return 0
        width = max(t.size for t in self.totals)
        summed = np.zeros(width, dtype=np.int64)
        for t in self.totals:
            summed[: t.size] += t
        return int(summed.max(initial=0))

    def histogram(
        self,
        person: np.ndarray,
        group: np.ndarray,
        bins: np.ndarray,
        source: RandomSource,
        n_groups: int,
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """One part's bucket counts and mass histogram (its persons whole; the mass None
        without :attr:`n_bins`) and, per group, the rows of the keys drawn (the part must then
        hold only them; None: every row stays).

        ``person``: each row's person identity, 1-D (ids, codes or 64-bit hashes, any bit
        patterns) or 2-D (one row of words per record, e.g. a 128-bit hash); it is
        dictionary-encoded before the (person, key) pairs are formed
        (:func:`~treedp.privacy.auto_bound.entry_histograms`), never combined
        arithmetically. ``bins``: each row's bin."""
        codes = np.asarray(group, dtype=np.int64)
        self.totals.append(np.bincount(codes, minlength=n_groups) if codes.size else codes)
        return entry_histograms(
            person,
            group,
            None if self.n_bins is None else bins,
            self.n_bins or 1,
            self.max_groups,
            source,
            n_groups,
            self.grid,
        )
