"""Queries as one path: every answer is a linear function of the prefix counts.

A query (the CDF at ``x``, a range ``[a, b)``, a bin) becomes :class:`Terms`: signed points
``P[j] + f·(P[j+1] - P[j])`` on the prefix vector ``P[0..B]``. The same terms give the
estimate and its exact variance, so an answer and its standard error cannot disagree on what
was asked. Inside a bin answers interpolate linearly; on an integer domain ``f`` is 0 or 1.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

import numpy as np
from numpy.typing import NDArray

from treedp.domain import Bins
from treedp.estimation import PrefixCovariance
from treedp.exceptions import InvalidParameterError
from treedp.timezones import from_ticks

__all__ = [
    "Answers",
    "ArrayPoints",
    "Points",
    "QuantileValue",
    "Scalar",
    "Terms",
    "below_terms",
    "cdf_terms",
    "range_terms",
    "to_axis",
    "to_output",
]


class ArrayPoints(Protocol):
    """An array of query points: anything with a length that numpy reads as an array (an
    ndarray, a pandas or polars Series, an Arrow array)."""

    def __len__(self) -> int: ...
    def __array__(self) -> np.ndarray[Any, Any]: ...


#: One query point (or probability): a number, a datetime or an ISO 8601 string.
Scalar: TypeAlias = float | np.floating[Any] | np.integer[Any] | np.datetime64 | datetime.date | str
#: Several query points: a list or tuple of scalars, or an array (:class:`ArrayPoints`).
Points: TypeAlias = (
    Sequence[float]
    | Sequence[datetime.date]
    | Sequence[np.datetime64]
    | list[str]
    | tuple[str, ...]
    | ArrayPoints
)
#: Counts (or their standard errors) for several points, shaped like them.
Answers: TypeAlias = NDArray[np.float64]
#: One quantile: a float, a ``numpy.datetime64`` on datetime bins, or a ``datetime`` (a
#: ``pandas.Timestamp``) in the zone of tz-aware bins.
QuantileValue: TypeAlias = float | np.datetime64 | datetime.datetime


def _locate(bins: Bins, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin ``j`` in ``[0, B)`` and fraction ``f`` in ``[0, 1]`` of each axis point ``t``
    (:meth:`Bins.locate_axis`), with ``(B, 0)`` read as ``(B - 1, 1)`` so ``P[j + 1]`` exists."""
    j, f = bins.locate_axis(t)
    top = j == bins.n_bins
    return np.where(top, j - 1, j), np.where(top, 1.0, f)


@dataclass(frozen=True)
class Terms:
    """A batch of linear queries ``Σ_k sign_k · (P[j_k] + f_k·(P[j_k+1] - P[j_k]))``.

    Attributes
    ----------
    index : ndarray of int64, shape (N, K)
        The bin ``j_k`` of each of the ``K`` points of each of the ``N`` queries.
    fraction : ndarray of float64, shape (N, K)
        The fraction ``f_k`` in ``[0, 1]``.
    signs : tuple of float
        The sign (or weight) of each of the ``K`` points.
    """

    index: np.ndarray
    fraction: np.ndarray
    signs: tuple[float, ...]

    def evaluate(self, prefix: np.ndarray) -> np.ndarray:
        """The answers on prefix counts ``prefix``, shape ``(N,)``.

        ``P[j] + f·(P[j+1] - P[j])``, not ``(1-f)·P[j] + f·P[j+1]``, which can drop by one ulp
        where ``P[j] == P[j+1]`` and break a monotone CDF.
        """
        out = np.zeros(self.index.shape[0])
        for k, sign in enumerate(self.signs):
            j, f = self.index[:, k], self.fraction[:, k]
            low, high = prefix[j], prefix[j + 1]
            point = np.where(f == 1.0, high, low + f * (high - low))
            out = out + point if sign == 1.0 else out + sign * point
        return out

    def __sub__(self, other: Terms) -> Terms:
        index = np.hstack([self.index, other.index])
        signs = (*self.signs, *(-sign for sign in other.signs))
        return Terms(index, np.hstack([self.fraction, other.fraction]), signs)

    def coefficients(self) -> tuple[np.ndarray, np.ndarray]:
        """The same queries as ``Σ coef · P[idx]``: ``idx`` and ``coef`` of shape ``(N, 2K)``."""
        idx = np.hstack([np.stack([j, j + 1], 1) for j in self.index.T])
        coef = np.hstack(
            [
                np.stack([sign * (1.0 - f), sign * f], 1)
                for sign, f in zip(self.signs, self.fraction.T, strict=True)
            ]
        )
        return idx, coef

    def variance(self, covariance: PrefixCovariance) -> np.ndarray:
        """The exact variance ``coefᵀ Σ coef`` of each answer, shape ``(N,)``."""
        idx, coef = self.coefficients()
        total = np.zeros(idx.shape[0])
        width = idx.shape[1]
        for i in range(width):
            for j in range(i, width):
                pair = coef[:, i] * coef[:, j] * covariance.cov(idx[:, i], idx[:, j])
                total += pair if i == j else 2 * pair
        return np.maximum(total, 0.0)


def below_terms(bins: Bins, t: np.ndarray) -> Terms:
    """The number of values ``< t`` (axis points ``t``, any shape, flattened)."""
    j, f = _locate(bins, np.asarray(t).ravel())
    return Terms(j[:, None], f[:, None], (1.0,))


def cdf_terms(bins: Bins, t: np.ndarray) -> Terms:
    """The number of values ``<= t``: on integer bins ``<= x`` is ``< floor(x) + 1``."""
    if bins.integers:
        t = np.floor(np.asarray(t, dtype=np.float64)) + 1
    return below_terms(bins, t)


def range_terms(bins: Bins, ta: np.ndarray, tb: np.ndarray) -> Terms:
    """The number of values in ``[a, b)``: ``below(b) - below(a)`` (broadcast, flattened)."""
    ta, tb = np.broadcast_arrays(ta, tb)
    return below_terms(bins, tb) - below_terms(bins, ta)


def to_axis(bins: Bins, x: Any, name: str) -> np.ndarray:
    """Query points on the numeric axis of the edges; NaN is refused."""
    t = bins.to_axis(x, name)
    if t.dtype.kind == "f" and np.isnan(t).any():
        raise InvalidParameterError(f"The '{name}' argument must not contain NaN.")
    return t


def like(x: Any, out: np.ndarray) -> float | Answers:
    """A Python float for scalar input, else a float array of the input's shape."""
    if np.ndim(x) == 0:
        return float(np.asarray(out).reshape(()))
    return np.asarray(out, dtype=np.float64).reshape(np.shape(x))


def to_output(bins: Bins, values: np.ndarray) -> QuantileValue | NDArray[Any]:
    """Axis values in the user's space (datetime64 for datetime bins, times in the bins' zone
    for tz-aware bins, NaN → NaT; 0-d → scalar)."""
    values = np.asarray(values, dtype=np.float64)
    if bins.datetime_unit is not None:
        first, last = _datetime_span(bins.datetime_unit)  # an unbounded end: the span's
        inside = np.clip(np.round(values), first, last)
        ticks = np.where(np.isnan(values), np.iinfo(np.int64).min, inside)
        result = ticks.astype(np.int64).astype(f"datetime64[{bins.datetime_unit}]")
        if bins.timezone is not None:  # tz-aware bins: the answers in their zone
            zoned: QuantileValue | NDArray[Any] = from_ticks(
                result, bins.datetime_unit, bins.timezone
            )
            return zoned
        return result[()] if result.ndim == 0 else result
    return float(values) if values.ndim == 0 else values


def _datetime_span(unit: str) -> tuple[float, float]:
    """A day inside the first and last instant of pandas' nanosecond datetimes (so that any
    time zone holds them), in ticks of ``unit`` (the whole int64 range for finer units): where
    an unbounded end of a datetime interval is placed."""
    tick = np.array([1], dtype=f"timedelta64[{unit}]")
    per_tick = int(tick.astype("timedelta64[ns]").astype(np.int64)[0])
    day = 86_400 * 10**9 // max(per_tick, 1)
    last = (2**63 - 1) // max(per_tick, 1) - day
    # one float step inside: float(2**63 - 1) rounds up to 2**63, beyond int64
    return float(np.nextafter(float(-last), 0.0)), float(np.nextafter(float(last), 0.0))


def check_q(q: Any) -> np.ndarray:
    """``q`` as a float array of probabilities in [0, 1], or a clear error."""
    try:
        kind = np.asarray(q).dtype.kind
    except Exception:  # pragma: no cover - numpy accepts nearly anything
        kind = "O"
    qa = np.asarray(q, dtype=np.float64) if kind in "iuf" else None
    if qa is None or np.isnan(qa).any() or (qa < 0).any() or (qa > 1).any():
        raise InvalidParameterError(
            f"The 'q' argument must hold probabilities in [0, 1]. Got {q!r} instead."
        )
    return qa


def quantile_from(bins: Bins, mono: np.ndarray, qa: np.ndarray) -> np.ndarray:
    """The first axis points where the non-decreasing prefix ``mono`` reaches ``q · n̂``
    (interpolated in the bin; on discrete bins :func:`discrete_quantile_from`; on other integers
    bins the smallest integer ``v`` of the bin whose interpolated count below ``v + 1`` reaches
    it); NaN when ``n̂ <= 0``."""
    if bins.discrete:
        from treedp.release.discrete_quantiles import discrete_quantile_from

        return discrete_quantile_from(bins, mono, qa)
    n_hat = mono[-1]
    edges = bins.edges.astype(np.float64)
    target = qa * n_hat
    j = np.clip(np.searchsorted(mono, target, side="left"), 1, bins.n_bins)
    low, high = mono[j - 1], mono[j]
    span = high - low
    frac = np.clip(np.where(span > 0, (target - low) / np.where(span > 0, span, 1.0), 0.0), 0, 1)
    width = edges[j] - edges[j - 1]
    if bins.integers:  # the smallest integer v of the bin whose CDF (below v + 1) reaches it
        inside = np.ceil(frac * width * (1 - 1e-14)) - 1  # rounding of an integer k: not k + 1
        out = edges[j - 1] + np.clip(inside, 0.0, width - 1)
    else:
        out = edges[j - 1] + frac * width
    return np.where(n_hat > 0, out, np.nan)


# ---------------------------------------------------------------------- brackets
def _edge_index(bins: Bins, t: np.ndarray, side: Literal["left", "right"]) -> np.ndarray:
    return np.searchsorted(bins.edges, np.asarray(t).ravel(), side=side).astype(np.int64)


def below_bracket(bins: Bins, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix indices ``(m_lo, m_hi)`` with ``P[m_lo] <= #(values < t) <= P[m_hi]``: equal at
    an edge and on discrete bins; inside bin ``j``, ``(j, j + 1)`` (integers bins: ``t`` read
    as ``ceil(t)``); at the upper edge of continuous bins ``(B - 1, B)``, as the last bin is
    closed (values equal to the edge are in it; integers bins hold none equal to it)."""
    n_bins = bins.n_bins
    if bins.integers and not bins.discrete:  # integer data: below t is below ceil(t)
        t = np.ceil(np.asarray(t, dtype=np.float64))
    if bins.discrete:
        with np.errstate(invalid="ignore"):
            m = np.clip(np.ceil(np.asarray(t, dtype=np.float64).ravel()) - bins.edges[0], 0, n_bins)
        m = m.astype(np.int64)
        return m, m
    lo = np.clip(_edge_index(bins, t, "right") - 1, 0, n_bins)
    hi = np.clip(_edge_index(bins, t, "left"), 0, n_bins)
    if not bins.integers:  # the last bin is closed: values equal to its upper edge are in
        lo = np.where(np.asarray(t).ravel() == bins.edges[-1], n_bins - 1, lo)  # it, not below
    return lo, hi


def cdf_bracket(bins: Bins, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Prefix indices ``(m_lo, m_hi)`` with ``P[m_lo] <= #(values <= t) <= P[m_hi]``.

    At an edge ``e_j`` the values equal to ``e_j`` lie in bin ``j`` (a point mass at a bound),
    so even there the count is only bracketed; on integer bins ``<= t`` is ``< floor(t) + 1``.
    """
    if bins.integers:
        return below_bracket(bins, np.floor(np.asarray(t, dtype=np.float64)) + 1)
    n_bins = bins.n_bins
    right = _edge_index(bins, t, "right")
    return np.clip(right - 1, 0, n_bins), np.clip(right, 0, n_bins)


def prefix_terms(bins: Bins, plus: np.ndarray, minus: np.ndarray | None = None) -> Terms:
    """The linear query ``P[plus]`` (or ``P[plus] - P[minus]``) as :class:`Terms`."""

    def at(m: np.ndarray) -> Terms:
        m = np.asarray(m, dtype=np.int64)
        top = m == bins.n_bins  # P[B] is read as (B - 1, f = 1) so that P[j + 1] exists
        return Terms(np.where(top, m - 1, m)[:, None], np.where(top, 1.0, 0.0)[:, None], (1.0,))

    return at(plus) if minus is None else at(plus) - at(minus)
