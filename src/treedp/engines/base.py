"""The counting engine interface and its additive partial result.

The bin rule
------------
This is the one statement of how a record becomes a count; every engine implements exactly it.
With public edges ``e_0 < e_1 < ... < e_B`` (float64 numbers, or int64 ticks of the bins'
datetime unit), a record with value ``v`` adds one to exactly one bin ``j``:

* ``e_j <= v < e_{j+1}`` puts ``v`` in bin ``j``;
* ``v < e_0`` goes to bin ``0`` and ``v >= e_B`` to bin ``B - 1`` (clamping), so ``-inf`` is
  counted in the first bin and ``+inf`` in the last; ``-0.0`` and ``+0.0`` are the same value;
* integers are compared with the float64 edges after conversion to float64 (round to nearest),
  so an integer beyond 2**53 is counted where its nearest float64 lies;
* datetimes are converted to int64 ticks of the bins' unit by flooring; a datetime beyond the
  int64 range of that unit saturates to the extreme tick instead of wrapping, hence lies beyond
  every edge and is clamped;
* missing values (NaN, NaT, None) are not values: under ``nan="error"`` counting raises
  :class:`~treedp.exceptions.DataError` (whose message holds no count), under ``nan="drop"``
  they are left out and reported in :attr:`BinCounts.dropped`, which is never released.

Clamping is what makes the sensitivity hold: every record, whatever its value, adds exactly
one to exactly one bin (or, when missing and dropped, to none).

Partial results are additive: counting the parts of a column (chunks of a stream, the shards of
a thread pool, the partitions of a Spark or Dask job) and adding the :class:`BinCounts` gives
exactly the counts of the whole column. An engine therefore only needs :func:`count_chunk`
(``treedp.engines.local``) on each part and :func:`sum_counts` to combine them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from treedp._validation import must
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = ["BinCounts", "CountEngine", "NanPolicy", "check_nan_policy", "sum_counts"]

NanPolicy = Literal["error", "drop"]

NAN_POLICIES: tuple[str, ...] = ("error", "drop")


def check_nan_policy(nan: Any) -> NanPolicy:
    """Return ``nan`` if it is a missing-value policy, else raise the matching error."""
    if not isinstance(nan, str):
        raise InvalidTypeError(
            must(
                "nan",
                f"be one of {', '.join(map(repr, NAN_POLICIES))}. "
                f"Got {type(nan).__name__} instead.",
            )
        )
    if nan not in NAN_POLICIES:
        raise InvalidParameterError(
            must("nan", f"be one of {', '.join(map(repr, NAN_POLICIES))}. Got {nan!r} instead.")
        )
    return nan  # type: ignore[return-value]


@dataclass(frozen=True, eq=False)
class BinCounts:
    """Bin counts of (part of) a column, and how many missing values were dropped.

    Attributes
    ----------
    counts : ndarray of int64
        ``B`` non-negative bin counts (read-only).
    dropped : int
        Missing values left out under ``nan="drop"``; never part of a release.

    Notes
    -----
    ``a + b`` counts the union of the two parts; :meth:`zero` is the neutral element, so
    ``sum_counts(parts)`` and ``sum(parts, BinCounts.zero(B))`` are the counts of the whole.

    Examples
    --------
    >>> import numpy as np
    >>> import treedp
    >>> from treedp.engines import count_chunk, sum_counts
    >>> bins = treedp.make_bins(bounds=(0, 4), bins=4)
    >>> column = np.array([0.5, 3.5, np.nan, 9.0, -1.0, 2.0])
    >>> parts = [count_chunk(c, bins, "drop") for c in np.array_split(column, 3)]
    >>> total = sum_counts(parts)
    >>> total.counts.tolist(), total.dropped
    ([2, 0, 1, 2], 1)
    >>> total == count_chunk(column, bins, "drop")
    True
    """

    counts: np.ndarray
    dropped: int = 0

    def __post_init__(self) -> None:
        counts = self.counts
        if not isinstance(counts, np.ndarray):
            raise InvalidTypeError(
                f"The 'counts' field must be a numpy array. Got {type(counts).__name__} instead."
            )
        if counts.dtype != np.int64:
            if counts.dtype.kind not in "iu":
                raise InvalidTypeError(
                    f"The 'counts' field must hold integers. Got dtype {counts.dtype} instead."
                )
            counts = counts.astype(np.int64)
        if counts.ndim != 1 or counts.size < 1:
            raise InvalidParameterError("The 'counts' field must be a non-empty 1-D array.")
        if (counts < 0).any():
            raise InvalidParameterError("The 'counts' field must not hold negative counts.")
        dropped = self.dropped
        if isinstance(dropped, bool) or not isinstance(dropped, int | np.integer):
            raise InvalidTypeError(
                f"The 'dropped' field must be an int. Got {type(dropped).__name__} instead."
            )
        if dropped < 0:
            raise InvalidParameterError("The 'dropped' field must not be negative.")
        if counts is self.counts:
            counts = counts.copy()
        counts.setflags(write=False)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "dropped", int(dropped))

    @classmethod
    def _trusted(cls, counts: np.ndarray, dropped: int) -> BinCounts:
        """Wrap counts an engine has just made (int64, 1-D, non-negative, owned): no copy."""
        out = object.__new__(cls)
        counts.setflags(write=False)
        object.__setattr__(out, "counts", counts)
        object.__setattr__(out, "dropped", int(dropped))
        return out

    @classmethod
    def zero(cls, n_bins: int) -> BinCounts:
        """The counts of an empty column over ``n_bins`` bins (the neutral element of ``+``)."""
        if isinstance(n_bins, bool) or not isinstance(n_bins, int | np.integer):
            raise InvalidTypeError(
                must("n_bins", f"be an int. Got {type(n_bins).__name__} instead.")
            )
        if n_bins < 1:
            raise InvalidParameterError(must("n_bins", "be at least 1."))
        return cls(np.zeros(int(n_bins), dtype=np.int64), 0)

    @property
    def n_bins(self) -> int:
        """The number of bins ``B``."""
        return int(self.counts.size)

    def __add__(self, other: object) -> BinCounts:
        if not isinstance(other, BinCounts):
            return NotImplemented
        if other.counts.size != self.counts.size:
            raise InvalidParameterError(
                "Bin counts over different numbers of bins cannot be added."
            )
        return BinCounts._trusted(self.counts + other.counts, self.dropped + other.dropped)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinCounts):
            return NotImplemented
        return self.dropped == other.dropped and np.array_equal(self.counts, other.counts)

    __hash__ = None  # type: ignore[assignment]

    def as_tuple(self) -> tuple[np.ndarray, int]:
        """``(counts, dropped)``, the form :meth:`treedp.Bins.count` returns."""
        return self.counts, self.dropped


def sum_counts(parts: Iterable[BinCounts], n_bins: int | None = None) -> BinCounts:
    """Add partial counts; ``n_bins`` gives the result for an empty iterable.

    Raises
    ------
    InvalidTypeError
        If a part is not a :class:`BinCounts`.
    InvalidParameterError
        If ``parts`` is empty and ``n_bins`` is not given, or the parts disagree on ``B``.
    """
    counts: np.ndarray | None = None if n_bins is None else BinCounts.zero(n_bins).counts.copy()
    dropped = 0
    for part in parts:
        if not isinstance(part, BinCounts):
            raise InvalidTypeError(
                f"sum_counts adds BinCounts only. Got {type(part).__name__} instead."
            )
        if counts is None:
            counts = part.counts.copy()
        elif part.counts.size != counts.size:
            raise InvalidParameterError(
                "Bin counts over different numbers of bins cannot be added."
            )
        else:
            counts += part.counts
        dropped += part.dropped
    if counts is None:
        raise InvalidParameterError(
            "sum_counts needs at least one part, or 'n_bins' for an empty sum."
        )
    return BinCounts._trusted(counts, dropped)


@runtime_checkable
class CountEngine(Protocol):
    """Something that counts a column into public bins following the bin rule above.

    ``source`` is whatever the engine reads (an in-memory column for the local engine, a
    DataFrame column for a distributed one, an iterable of chunks for a streaming one).
    """

    def count(self, source: Any, bins: Bins, *, nan: NanPolicy = "error") -> BinCounts:
        """Count ``source`` into ``bins``; raise ``DataError`` on missing values under
        ``nan="error"``."""
        ...
