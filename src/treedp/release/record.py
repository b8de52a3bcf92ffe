"""The release: a frozen record of one private measurement and every query answered from it.

A :class:`Release` holds the raw noisy blocks (for a tree: noisy node counts per level, root
first), their noise variances, the public bins and the privacy contract. Every query is
post-processing of these numbers and costs no further privacy (:mod:`.queries`,
:mod:`.intervals`; files: :mod:`.format`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, overload

import numpy as np
from numpy.typing import NDArray

from treedp._frames import polars_frame, polars_module
from treedp._validation import warn_user
from treedp._views import view
from treedp.domain import Bins
from treedp.estimation import (
    PrefixCovariance,
    check_postprocess,
    consistent_prefix,
    estimate_prefix,
    prefix_covariance,
)
from treedp.exceptions import BoundsWarning, InvalidParameterError
from treedp.mechanisms import Mechanism
from treedp.release import queries
from treedp.release.atoms import below_points, bin_stderr, point_masses, release_quantiles
from treedp.release.contract import PrivacyContract
from treedp.release.intervals import IntervalQueries
from treedp.release.queries import Answers, Points, QuantileValue, Scalar
from treedp.release.unit import PersonUnit

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Release", "ReleaseCodec", "handed_over", "register_codec"]


@dataclass(frozen=True)
class ReleaseCodec:
    """How releases become files and back, registered by :mod:`treedp.release.format` (so the
    record never imports the module that reads and writes it)."""

    to_document: Callable[[Release], dict[str, Any]]
    from_document: Callable[[Any, str], Release]
    save: Callable[[Release, Any, str | None], None]


_CODECS: list[ReleaseCodec] = []


def register_codec(codec: ReleaseCodec) -> None:
    """Set the codec of :meth:`Release.to_dict`, :meth:`Release.from_dict`, :meth:`Release.save`."""
    _CODECS[:] = [codec]


def handed_over(levels: Iterable[np.ndarray]) -> list[np.ndarray]:
    """Fresh noisy blocks that nothing else holds, made read-only so that a :class:`Release`
    keeps them without a copy (a grouped release's keys: one copy of every key's levels
    fewer)."""
    out = list(levels)
    for level in out:
        level.setflags(write=False)
    return out


def _frozen_level(level: Any) -> np.ndarray:
    """``level`` as a read-only int64 array: an int64 array already read-only is kept as it is
    (the mechanisms hand over their fresh noisy blocks frozen: at 2^24 bins a copy is 139 MB
    of memory touched for nothing); anything else is copied, so later writes by the caller
    cannot change the release."""
    if isinstance(level, np.ndarray) and level.dtype == np.int64 and not level.flags.writeable:
        return level
    frozen = np.array(level, dtype=np.int64)
    frozen.setflags(write=False)
    return frozen


def _codec() -> ReleaseCodec:
    if not _CODECS:  # only when treedp.release.record is used without its package
        raise InvalidParameterError("No release file format is loaded: import treedp.release.")
    return _CODECS[0]


class Release(IntervalQueries, PrivacyContract):
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
        The raw noisy counts, one 1-D int64 array per level, root first (the exact public
        ``n`` under ``replace``); a baseline has one block.
    level_variance : tuple of float
        The noise variance of each level (0 for an exact level).
    estimator : str
        ``"efficient"`` (best linear unbiased estimate from all nodes) or ``"direct"``.
    postprocess : str
        The default consistent projection: ``"monotone"``, ``"monotone_l1"`` or ``"none"``.
    integer : bool
        Whether consistent counts are integers.
    randomness : dict
        Where the noise came from (``"seeded"``: True when not publishable).
    library_version : str
        The treedp version that made the release.
    bounds_step : dict or None
        With ``bounds="private"``: what the bounds step spent and released (``method``,
        ``stops``, ``epsilon``, ``share``, ``lo``, ``hi``, ``allowance``, ``known``); its
        budget is in :attr:`total_guarantee`, not :attr:`guarantee`.
    target : dict or None
        The ``(epsilon, delta)`` target asked for (``privacy=ApproxDP(ε, δ)``), which the zCDP
        guarantee implies by the tight conversion (:attr:`approx_target`).
    unit : PersonUnit or None
        For a release per person without groups: the contribution bounds and the
        person-level neighbour relation (:attr:`guarantee` and :attr:`neighbours` are then
        the person's). None: one row is one person.
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
    unit: PersonUnit | None

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
        unit: PersonUnit | None = None,
    ) -> None:
        check_postprocess(postprocess, integer)
        levels = [_frozen_level(level) for level in noisy_levels]
        vars(self).update(  # past the frozen __setattr__
            bins=bins,
            mechanism=mechanism,
            noisy_levels=levels,
            level_variance=mechanism.block_variance(),
            estimator=mechanism.check_estimator(estimator),
            postprocess=postprocess,
            integer=integer,
            randomness=dict(randomness),
            library_version=library_version,
            bounds_step=dict(bounds_step) if bounds_step is not None else None,
            target=dict(target) if target is not None else None,
            unit=unit,
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"A Release is frozen: cannot set '{name}'.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"A Release is frozen: cannot delete '{name}'.")

    # ------------------------------------------------------------------ metadata
    @property
    def n(self) -> float:
        """The number of records: the public ``n`` under ``replace``, else its (consistent,
        unless ``postprocess="none"``) estimate; ``prefix_counts[-1]`` is the unbiased one."""
        return float(self._counts(None)[-1])

    @property
    def offers_intervals(self) -> bool:
        """Whether standard errors and intervals exist (a public property of the mechanism).

        False for a data-dependent bias no public quantity bounds (``mechanism="dawa"``): the
        interval methods then raise and :meth:`to_arrays` fills its interval columns with NaN.
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
        """The budget (ε, or ρ for Gaussian noise) of each noised block, root first."""
        return self.mechanism.block_budgets

    @property
    def edges(self) -> NDArray[Any]:
        """The public bin edges (datetime64 for datetime bins, times in the bins' zone for
        tz-aware bins)."""
        return self.bins.edges_in_zone()

    @cached_property
    def prefix_counts(self) -> np.ndarray:
        """Estimated counts of bins ``[0, m)`` for ``m = 0..B`` (unbiased, may be non-monotone)."""
        prefix = estimate_prefix(self.mechanism, self.noisy_levels, self.estimator)
        prefix.setflags(write=False)
        return prefix

    @cached_property
    def consistent_counts(self) -> np.ndarray:
        """The consistent CDF at the edges (non-decreasing, in ``[0, n̂]``): the L1 projection of
        :attr:`prefix_counts` for ``"monotone_l1"``, else the L2 one; integers if ``integer``."""
        prefix = vars(self).get("prefix_counts")  # cached when it was asked for first
        if prefix is None:  # a fresh estimate nobody else holds: the fit is written over it
            fresh = estimate_prefix(self.mechanism, self.noisy_levels, self.estimator)
            fit = self._fit(fresh, bool(fresh.flags.writeable))  # every mechanism's is (tested)
        else:
            fit = self._fit(prefix, False)
        fit.setflags(write=False)
        return fit

    def _fit(self, prefix: np.ndarray, overwrite: bool) -> np.ndarray:
        """The consistent fit of a prefix estimate (this release's own, or one post-processed
        from it: :mod:`treedp.release.shrunk`), by the release's loss and integer rule."""
        loss = "l1" if self.postprocess == "monotone_l1" else "l2"
        return consistent_prefix(prefix, loss=loss, integer=self.integer, overwrite=overwrite)

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
        """:meth:`metadata` with the bins as given (a file may store the edges apart)."""
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
        if self.unit is not None:
            meta["unit"] = self.unit.describe(self.mechanism)
        return meta

    def __repr__(self) -> str:
        shape = f", branching={list(self.branching)}" if self.branching else ""
        seeded = ", SEEDED (not for publication)" if self.seeded else ""
        unit = "" if self.unit is None else f", unit={self.unit.label!r}"
        total = "" if self._charged_step is None else f", total={self.total_guarantee.describe()!r}"
        return (
            f"Release(mechanism={self.mechanism.name!r}, bins={self.bins.n_bins}{shape}, "
            f"guarantee={self.guarantee.describe()!r}{total}, "
            f"neighbours={self.neighbours!r}{unit}, n≈{self.n:.6g}{seeded})"
        )

    # ------------------------------------------------------------------ queries
    @cached_property
    def _masses(self) -> tuple[tuple[int, float], ...]:
        """The bins read as a point mass (an end bin at its bound, an inner bin at 0) by
        :meth:`cdf` and :meth:`range_count`, as :meth:`quantile` answers them
        (:func:`~treedp.release.atoms.point_masses`; none without a public noise to test them
        against)."""
        if not self.offers_intervals or self.postprocess == "none":  # no fit to read: raw
            return ()
        noise = lambda j: bin_stderr(self.covariance, self._direct_ranges, self.bins, j)  # noqa: E731
        return point_masses(self.bins, self.consistent_counts, noise)

    def _cdf_axis(self, x: Any, masses: bool = True) -> np.ndarray:
        """``x`` as points of "values below": ``floor(x) + 1`` on integers bins, else ``x``;
        with ``masses`` moved for a bin's point mass (the consistent reading,
        :func:`~treedp.release.atoms.below_points`), else as they are (the unbiased one)."""
        t = queries.to_axis(self.bins, x, "x")
        if self.bins.integers:
            t = np.floor(np.asarray(t, dtype=np.float64)) + 1
        held = self._masses if masses else ()
        return below_points(self.bins, t, held, closed=not self.bins.integers)

    def _range_axes(self, a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
        ta = queries.to_axis(self.bins, a, "a")
        tb = queries.to_axis(self.bins, b, "b")
        if np.any(ta > tb):
            raise InvalidParameterError("The range [a, b) needs a <= b for every pair.")
        ta, tb = np.broadcast_arrays(ta, tb)
        return ta, tb

    @overload
    def cdf(self, x: Scalar, *, consistent: bool | None = None) -> float: ...
    @overload
    def cdf(self, x: Points, *, consistent: bool | None = None) -> Answers: ...
    @overload
    def cdf(self, x: object, *, consistent: bool | None = None) -> float | Answers: ...
    def cdf(self, x: Any, *, consistent: bool | None = None) -> float | Answers:
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
            A float for one point, else a float64 array of the shape of ``x`` (typed by
            overloads: ``float`` for a scalar, ``NDArray[np.float64]`` for a list or array).

        Notes
        -----
        Inside a bin the CDF is interpolated linearly, so at a bin's left edge it counts the
        values below the edge: integer data on bins edged at integers get ``cdf(40)`` ≈
        ``#{x < 40}``. Declare them with ``bins="integers"`` for ``cdf(v)`` ≈ ``#{x <= v}``.
        A bin that :meth:`quantile` answers as a point mass is read as one by the consistent
        answer: an end bin's count at its bound, an inner bin's holding 0 at 0
        (:func:`~treedp.release.atoms.point_masses`; a block of zeros is counted by
        ``cdf(0)``). The unbiased answer (``consistent=False``) interpolates linearly inside
        every bin, as :meth:`stderr` describes it.

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
        use_consistent = self.postprocess != "none" if consistent is None else consistent
        t = self._cdf_axis(x, masses=use_consistent)  # unbiased: no point-mass reading
        out = queries.below_terms(self.bins, t).evaluate(self._counts(use_consistent))
        return queries.like(x, out.reshape(np.shape(t)))

    @overload
    def range_count(self, a: Scalar, b: Scalar, *, consistent: bool | None = None) -> float: ...
    @overload
    def range_count(
        self, a: Points, b: Scalar | Points, *, consistent: bool | None = None
    ) -> Answers: ...
    @overload
    def range_count(self, a: Scalar, b: Points, *, consistent: bool | None = None) -> Answers: ...
    @overload
    def range_count(
        self, a: object, b: object, *, consistent: bool | None = None
    ) -> float | Answers: ...
    def range_count(self, a: Any, b: Any, *, consistent: bool | None = None) -> float | Answers:
        """Estimated number of values in ``[a, b)``; ``a`` and ``b`` broadcast together.

        ``consistent`` is as for :meth:`cdf`; a consistent range count is never negative. A
        float when both ends are scalars, else a float64 array of their broadcast shape.

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
        use_consistent = self.postprocess != "none" if consistent is None else consistent
        held = self._masses if use_consistent else ()  # unbiased: no point-mass reading
        ta, tb = (below_points(self.bins, t, held) for t in self._range_axes(a, b))
        direct = None if use_consistent else self._direct_ranges
        if direct is not None:
            out = direct.range_count(ta, tb)
        else:
            out = queries.range_terms(self.bins, ta, tb).evaluate(self._counts(use_consistent))
        return queries.like(np.broadcast_to(np.asarray(a), ta.shape), out.reshape(ta.shape))

    @overload
    def quantile(self, q: float) -> QuantileValue: ...
    @overload
    def quantile(self, q: Sequence[float] | NDArray[Any]) -> NDArray[Any]: ...
    @overload
    def quantile(self, q: object) -> QuantileValue | NDArray[Any]: ...
    def quantile(self, q: Any) -> QuantileValue | NDArray[Any]:
        """Estimated ``q``-quantiles, any number of them at no extra privacy cost.

        The first point where the consistent CDF reaches ``q · n̂``, interpolated inside the
        bin; on an integer domain the smallest integer whose CDF reaches it (the inverse CDF,
        :func:`~treedp.release.discrete_quantiles.discrete_quantile_from`). In a bin that
        looks like a point mass (a block of tied values: at least 2% of ``n̂``, ten times each
        neighbouring bin and six standard errors of its count) the answer is the bound in an
        end bin, 0 in an inner bin holding it, else the bin's nearer edge in rank:
        :func:`~treedp.release.atoms.snap_to_atoms`, post-processing. Non-decreasing in ``q``.
        On privately found bounds, a level within two of the scans' allowances of records of
        an end answered in its end bin emits a :class:`~treedp.BoundsWarning`.

        Parameters
        ----------
        q : float or array-like
            Probabilities in ``[0, 1]``.

        Returns
        -------
        float, datetime64 or ndarray
            Same shape as ``q``; NaN (NaT) when the estimated count is not positive. Typed
            ``float | numpy.datetime64`` for a scalar ``q`` (a float on numeric bins) and
            ``NDArray`` for a list or array.

        Examples
        --------
        >>> import treedp
        >>> rel = treedp.release_counts([30, 50, 20], bounds=(0, 3), bins=3, epsilon=1.0,
        ...                              rng=treedp.InsecureSeededSource(1))
        >>> qs = rel.quantile([0.25, 0.5, 0.75])
        >>> bool((qs[:-1] <= qs[1:]).all() and 0 <= qs[0] and qs[-1] <= 3)
        True
        """
        return self._quantile_of(queries.check_q(q), self.consistent_counts)

    def _quantile_of(self, qa: Any, cdf: np.ndarray) -> QuantileValue | NDArray[Any]:
        """:meth:`quantile` of checked levels read off ``cdf`` (the consistent CDF, or a fit
        post-processed from it: :mod:`treedp.release.shrunk`), with its warning."""
        out = self._quantile_axis(qa, cdf)
        clamped = self.bounds_step and view("clamped_quantiles")(self, np.ravel(qa), np.ravel(out))
        if clamped:  # post-processing: an end bin's clamped records may hold a quantile
            warn_user(clamped, BoundsWarning)
        return queries.to_output(self.bins, out)

    def _quantile_axis(self, qa: Any, cdf: np.ndarray | None = None) -> np.ndarray:
        """:meth:`quantile` of checked levels, on the bins' numeric axis (off ``cdf``, by default
        the consistent CDF)."""
        noise = lambda j: bin_stderr(self.covariance, self._direct_ranges, self.bins, j)  # noqa: E731
        public = noise if self.offers_intervals else None  # DAWA: no public noise to test against
        fit = self.consistent_counts if cdf is None else cdf
        return release_quantiles(self.bins, fit, qa, public)

    def median(self) -> QuantileValue:
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

    def histogram(self, *, consistent: bool | None = None) -> tuple[Answers, NDArray[Any]]:
        """Estimated count per bin and the edges, like :func:`numpy.histogram`.

        Consistent counts (the default unless ``postprocess="none"``) are non-negative and sum
        to ``n̂``; unbiased ones (``consistent=False``) may be negative.

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

    # ------------------------------------------------------------------ views (treedp.report)
    def to_arrays(self, *, level: float = 0.95) -> dict[str, np.ndarray]:
        """One row per bin with intervals: :func:`treedp.report.tables.release_arrays`."""
        table: dict[str, np.ndarray] = view("to_arrays")(self, level=level)
        return table

    def to_frame(self, *, level: float = 0.95) -> pd.DataFrame:
        """:meth:`to_arrays` as a :class:`pandas.DataFrame` (needs ``treedp[pandas]``).

        Columns ``left``, ``right``, ``count``, ``count_low``, ``count_high``, ``cdf``,
        ``cdf_low``, ``cdf_high``, one row per bin (see ``docs/results.md``).
        """
        frame: pd.DataFrame = view("to_frame")(self, level=level)
        return frame

    def to_polars(self, *, level: float = 0.95) -> pl.DataFrame:
        """:meth:`to_arrays` as a :class:`polars.DataFrame`, the columns of :meth:`to_frame`
        (needs ``treedp[polars]``)."""
        polars_module("Release.to_polars")  # before the intervals are computed
        return polars_frame(self.to_arrays(level=level), "Release.to_polars")

    def bounds_warning(self, *, share: float | None = None) -> str | None:
        """A warning when much released mass sits in an end bin (clamped records, a point
        mass at a bound, or bounds much wider than the data: the counts cannot tell which),
        else None: :func:`treedp.report.tables.bounds_warning`."""
        warning: str | None = view("bounds_warning")(self, share=share)
        return warning

    def plot(self, *args: Any, **kwargs: Any) -> tuple[Figure, dict[str, Axes]]:
        """Draw the release: :func:`treedp.report.plot.plot_release` (needs ``treedp[plot]``);
        the figure and its axes by kind."""
        drawn: tuple[Figure, dict[str, Axes]] = view("plot")(self, *args, **kwargs)
        return drawn

    def _repr_html_(self) -> str:
        """A compact summary with a small CDF figure, for Jupyter (see ``treedp.report``)."""
        html: str = view("_repr_html_")(self)
        return html

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

        Two layouts, both read by :func:`treedp.load_release`: ``"json"`` (one human-readable
        document; slow and large from about 2^18 bins) and ``"binary"`` (a zip of one ``.npy``
        array per noisy level; a 2^24-bin release saves and loads in about a second). A path
        ending in ``.json`` gets JSON by default, any other path or a file object the binary
        layout. Written to a path, either the whole file is written or nothing is.

        Parameters
        ----------
        path : str, Path or binary file object
            Where to write.
        file_format : {"json", "binary"}, optional
            Force a layout instead of choosing by the file name.
        """
        _codec().save(self, path, file_format)
