"""The ``Bins`` type: a public partition of the value axis (:mod:`treedp.domain` builds them).

Bins are always public inputs: bounds, a bin count or explicit edges chosen by the analyst,
never read from the data. A value is counted in the bin ``[e_j, e_{j+1})`` that holds it;
values below the lowest edge are counted in the first bin and values at or above the highest
edge in the last bin (clamping). Clamping is what makes the sensitivity hold: every record,
whatever its value, adds exactly one to exactly one bin. The full rule (infinities, integers
beyond 2**53, datetimes, missing values) is stated once, in :mod:`treedp.engines.base`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from treedp._validation import must
from treedp.bin_edges import check_edges, edges_array, equal_width_inverse
from treedp.engines.base import NanPolicy
from treedp.engines.local import LocalEngine
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.timezones import from_ticks, refuse_aware, to_utc, zone_name

__all__ = ["EXACT_INT", "Bins", "finish_bins"]

#: The largest integer up to which every integer is a float64 (bounds beyond are refused).
EXACT_INT = 2**53

_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")

_ENGINE = LocalEngine()


@dataclass(frozen=True, eq=False)
class Bins:
    """A public partition of the value axis into ``B`` consecutive bins.

    Attributes
    ----------
    edges : ndarray
        ``B + 1`` strictly increasing edges: float64 for numbers, int64 ticks of
        ``datetime_unit`` for datetimes.
    discrete : bool
        True for an integer domain (one bin per integer ``v``, the bin ``[v, v + 1)``); queries
        then answer at integers without interpolation. Discrete bins are ``integers`` bins.
    equal_width : bool
        True when the edges are ``lo + j·(hi - lo)/B``; counting then uses arithmetic.
    datetime_unit : str or None
        The numpy datetime unit of datetime bins (for example ``"ns"``), else None.
    timezone : str or None
        The time zone of tz-aware datetime bins (``"UTC"``, ``"America/New_York"``,
        ``"+05:30"``; a ``tzinfo`` is accepted and named), else None. The edges are then
        ticks of UTC instants and the answers are given in this zone (:mod:`treedp.timezones`).
    integers : bool
        True when the values are integers and every edge is an integer (within ``±2**53``): bin
        ``j`` holds the integers ``e_j .. e_{j+1} - 1``, one or many (a private range of more
        integers than ``PrivateBounds.max_bins`` is binned so). Queries then read integer
        data: ``cdf(x)`` counts the values ``<= floor(x)`` (``< floor(x) + 1``), a range
        ``[a, b)`` the integers from ``ceil(a)`` to ``ceil(b) - 1``, and quantiles are integers;
        inside a bin of many integers the count is spread evenly over them. Implied by
        ``discrete``.

    Raises
    ------
    InvalidTypeError
        If ``edges`` is not numeric (int64 ticks or datetime64 for datetime bins) or a flag is
        not a bool.
    InvalidParameterError
        If the edges are not 1-D, strictly increasing and finite with ``1 <= B <= MAX_BINS``,
        or the flags do not describe them (``discrete``: consecutive integers; ``integers``:
        integers within ``±2**53``, not datetimes; ``equal_width``: equally spaced edges).

    Notes
    -----
    Prefer :func:`make_bins`. Constructing ``Bins`` directly validates the same way; the
    edges are copied into a read-only array.
    """

    edges: np.ndarray
    discrete: bool = False
    equal_width: bool = False
    datetime_unit: str | None = None
    timezone: str | None = None
    integers: bool = False
    _inv_width: float = field(default=0.0, init=False, repr=False)

    def __post_init__(self) -> None:
        for flag in ("discrete", "equal_width", "integers"):
            if not isinstance(getattr(self, flag), bool | np.bool_):
                raise InvalidTypeError(
                    must(flag, f"be a bool. Got {type(getattr(self, flag)).__name__} instead.")
                )
            object.__setattr__(self, flag, bool(getattr(self, flag)))
        unit = self.datetime_unit
        if unit is not None and not isinstance(unit, str):
            raise InvalidTypeError(
                must("datetime_unit", f"be a str or None. Got {type(unit).__name__} instead.")
            )
        if unit is not None and unit not in _UNITS:
            raise InvalidParameterError(
                must("datetime_unit", f"be one of {', '.join(_UNITS)}. Got {unit!r} instead.")
            )
        if self.timezone is not None:
            if unit is None:
                raise InvalidParameterError("A 'timezone' applies to datetime bins only.")
            object.__setattr__(self, "timezone", zone_name(self.timezone))
        edges = edges_array(self.edges, unit)
        check_edges(edges, "edges")
        if self.discrete:
            if unit is not None:
                raise InvalidParameterError("Datetime bins cannot be discrete.")
            if not (
                float(edges[0]).is_integer()
                and np.array_equal(edges, edges[0] + np.arange(edges.size, dtype=np.float64))
            ):
                raise InvalidParameterError(
                    "discrete=True needs edges lo, lo + 1, ..., hi + 1 at integers."
                )
            object.__setattr__(self, "integers", True)
        if self.integers and not self.discrete:
            if unit is not None:
                raise InvalidParameterError("Datetime bins cannot be integers bins.")
            if not (np.all(np.abs(edges) <= EXACT_INT) and np.all(edges == np.floor(edges))):
                raise InvalidParameterError(
                    "integers=True needs edges at integers within ±2**53 (9007199254740992)."
                )
        inv = equal_width_inverse(edges) if self.equal_width else 0.0  # checks the spacing
        if unit is not None:
            inv = 0.0  # datetime ticks are counted by binary search on the edges
        if edges.flags.writeable:
            edges.setflags(write=False)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "_inv_width", inv)

    @classmethod
    def _proven(cls, edges: np.ndarray, inv_width: float) -> Bins:
        """Equal-width bins whose edges :func:`make_bins` has just built and proven valid.

        Only for read-only, finite float64 edges covered by :func:`proven_equal_width`: the
        O(B) validation scans are skipped because they cannot fail.
        """
        out = object.__new__(cls)
        for name, value in (
            ("edges", edges),
            ("discrete", False),
            ("equal_width", True),
            ("datetime_unit", None),
            ("timezone", None),
            ("integers", False),
            ("_inv_width", float(inv_width)),
        ):
            object.__setattr__(out, name, value)
        return out

    @property
    def n_bins(self) -> int:
        """The number of bins ``B``."""
        return int(self.edges.size - 1)

    @property
    def is_datetime(self) -> bool:
        """Whether the bins are on a datetime axis."""
        return self.datetime_unit is not None

    def edges_as_values(self) -> np.ndarray:
        """The edges as numbers, or datetime64 for datetime bins (UTC instants when the bins
        have a time zone; :meth:`edges_in_zone` gives them in that zone)."""
        if self.datetime_unit is None:
            return self.edges.copy()
        return self.edges.astype(f"datetime64[{self.datetime_unit}]")

    def edges_in_zone(self) -> np.ndarray:
        """The edges in the user's space: numbers, datetime64 for naive datetime bins, and
        times in :attr:`timezone` (``pandas.Timestamp`` objects) for tz-aware bins."""
        if self.timezone is None or self.datetime_unit is None:
            return self.edges_as_values()
        out: np.ndarray = from_ticks(self.edges, self.datetime_unit, self.timezone)
        return out

    # ------------------------------------------------------------------ conversion
    def to_axis(self, x: Any, name: str) -> np.ndarray:
        """Convert query points or values to the numeric axis of the edges (float64 or int64)."""
        if self.timezone is not None and self.datetime_unit is not None:
            utc = to_utc(x, self.timezone, name)
            return utc.astype(f"datetime64[{self.datetime_unit}]").view(np.int64)
        if self.datetime_unit is not None:
            refuse_aware(x, name)
        arr = np.asarray(x)
        if self.datetime_unit is not None:
            if arr.dtype.kind in "OU":
                try:
                    arr = arr.astype("datetime64[ns]")
                except (ValueError, TypeError):
                    raise InvalidTypeError(
                        f"The '{name}' argument must hold datetimes for these datetime bins."
                    ) from None
            if arr.dtype.kind != "M":
                raise InvalidTypeError(
                    f"The '{name}' argument must hold datetimes for these datetime bins. "
                    f"Got dtype {arr.dtype} instead."
                )
            return arr.astype(f"datetime64[{self.datetime_unit}]").view(np.int64)
        if arr.dtype.kind == "M":
            raise InvalidTypeError(
                f"The '{name}' argument holds datetimes but the bins are numeric."
            )
        if arr.dtype.kind not in "iuf":
            raise InvalidTypeError(
                f"The '{name}' argument must hold numbers. Got dtype {arr.dtype} instead."
            )
        return arr.astype(np.float64, copy=False)

    # ------------------------------------------------------------------ locating
    def locate(self, x: Any, *, name: str = "x") -> tuple[np.ndarray, np.ndarray]:
        """Which bin each query point falls in, and how far into it: ``(j, f)``.

        The one implementation of "value → bin and fraction within the bin" for query points
        (see :meth:`locate_axis` for the rule); ``x`` is converted with :meth:`to_axis` and
        must not hold NaN.

        Parameters
        ----------
        x : scalar or array-like
            Query points: numbers, or datetimes for datetime bins.
        name : str, default="x"
            The argument's name in error messages.

        Returns
        -------
        j : ndarray of int64
            Bin indices in ``[0, B]``, shaped like ``x``.
        f : ndarray of float64
            Fractions in ``[0, 1]``, shaped like ``x``.
        """
        t = self.to_axis(x, name)
        if t.dtype.kind == "f" and np.isnan(t).any():
            raise InvalidParameterError(f"The '{name}' argument must not contain NaN.")
        return self.locate_axis(t)

    def locate_axis(self, t: Any) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`locate` for points already on the edges' axis (float64, or int64 ticks).

        The rule, with edges ``e_0 < ... < e_B``:

        * ``t < e_0``: ``(0, 0.0)``; ``t >= e_B``: ``(B, 0.0)`` (clamped; ``±inf`` included);
        * otherwise ``j`` is the bin with ``e_j <= t < e_{j+1}`` and
          ``f = (t - e_j) / (e_{j+1} - e_j)`` (clipped to ``[0, 1]`` against rounding);
        * discrete bins hold one integer each, so ``f`` is 0 at the integer and 1 strictly
          inside the bin (every value of the bin is then below ``t``): ``j + f == ceil(t) - e_0``
          clipped to ``[0, B]``;
        * other ``integers`` bins hold whole integers, so the values below ``t`` are those below
          ``ceil(t)``: ``t`` is located as ``ceil(t)`` by the rule above.

        So ``j + f`` is the position of ``t`` on ``[0, B]``, and with prefix counts ``p``
        (``p[m]`` values in bins ``< m``) the estimated number of values below ``t`` is
        ``p[j] + f·(p[j+1] - p[j])``, read as ``p[B]`` where ``j == B``.
        """
        t = np.asarray(t)
        edges = self.edges
        n_bins = self.n_bins
        if self.discrete:
            with np.errstate(invalid="ignore"):
                tf = t.astype(np.float64, copy=False)
                k = np.clip(np.ceil(tf) - edges[0], 0, n_bins)
                j = np.clip(np.floor(tf) - edges[0], 0, n_bins)
            j = np.where(k == 0, 0, j).astype(np.int64)
            return j, (k - j).astype(np.float64)
        if self.integers:
            t = np.ceil(t.astype(np.float64, copy=False))
        j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins).astype(np.int64)
        inner = np.minimum(j, n_bins - 1)
        # Clip first: the subtraction then cannot overflow (int64 ticks) or meet infinities.
        tc = np.clip(t, edges[0], edges[-1])
        width = (edges[inner + 1] - edges[inner]).astype(np.float64)
        f = np.clip((tc - edges[inner]).astype(np.float64) / width, 0.0, 1.0)
        return j, np.where(j == n_bins, 0.0, f)

    # ------------------------------------------------------------------ counting
    def count(self, values: Any, *, nan: NanPolicy = "error") -> tuple[np.ndarray, int]:
        """Count ``values`` into the bins, clamping values outside the edges.

        A thin wrapper over the in-memory engine
        (:class:`treedp.engines.local.LocalEngine`); the bin rule is stated in
        :mod:`treedp.engines.base`.

        Parameters
        ----------
        values : array-like
            One column: numpy array, sequence, pandas / polars Series or pyarrow Array.
        nan : {"error", "drop"}, default="error"
            What to do with missing values (NaN, NaT, None): raise :class:`DataError` (whose
            message holds no count), or drop them. Infinities are not missing: they are
            ordered values and are clamped into the first or last bin like any value outside
            the edges.

        Returns
        -------
        counts : ndarray of int64
            ``B`` bin counts.
        dropped : int
            How many values were dropped under ``nan="drop"`` (never part of a release).

        Notes
        -----
        Counting raises only on public conditions (the dtype) and on the documented missing-value
        policy, and it never warns: no value, however extreme, changes what is printed, and no
        message holds a count, value or shape of the data.
        """
        return _ENGINE.count(values, self, nan=nan).as_tuple()

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (edges as exact floats or integer ticks)."""
        return {
            "edges": [int(e) for e in self.edges] if self.datetime_unit else self.edges.tolist(),
            "discrete": self.discrete,
            **({"integers": True} if self.integers and not self.discrete else {}),
            "equal_width": self.equal_width,
            "datetime_unit": self.datetime_unit,
            **({"timezone": self.timezone} if self.timezone is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Bins:
        """Rebuild bins from :meth:`to_dict` output (validated like user input)."""
        unit = data["datetime_unit"]
        dtype = np.int64 if unit else np.float64
        edges = np.asarray(data["edges"], dtype=dtype)
        flags = bool(data["discrete"]), bool(data["equal_width"])
        whole = bool(data.get("integers", False))
        return finish_bins(edges, *flags, unit, data.get("timezone"), integers=whole)


def finish_bins(
    edges: np.ndarray,
    discrete: bool,
    equal_width: bool,
    unit: str | None,
    timezone: str | None = None,
    *,
    integers: bool = False,
) -> Bins:
    """Bins of fresh ``edges`` (kept without a copy), validated as :class:`Bins`."""
    edges.setflags(write=False)  # fresh arrays: Bins keeps them without a copy
    return Bins(edges, discrete, equal_width, unit, timezone, integers)
