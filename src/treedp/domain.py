"""Public bins: the domain a release is defined on.

Bins are always public inputs: bounds, a bin count or explicit edges chosen by the analyst,
never read from the data. A value is counted in the bin ``[e_j, e_{j+1})`` that holds it;
values below the lowest edge are counted in the first bin and values at or above the highest
edge in the last bin (clamping). Clamping is what makes the sensitivity hold: every record,
whatever its value, adds exactly one to exactly one bin.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from treedp._inputs import as_1d_array
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

__all__ = ["MAX_BINS", "Bins", "NanPolicy", "make_bins"]

#: The largest number of bins accepted (2**26: the tree then needs about 1.5 GiB at most).
MAX_BINS = 2**26

NanPolicy = Literal["error", "drop"]

_CHUNK = 1 << 16


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
        then answer at integers without interpolation.
    equal_width : bool
        True when the edges are ``lo + j·(hi - lo)/B``; counting then uses arithmetic.
    datetime_unit : str or None
        The numpy datetime unit of datetime bins (for example ``"ns"``), else None.
    """

    edges: np.ndarray
    discrete: bool = False
    equal_width: bool = False
    datetime_unit: str | None = None
    _inv_width: float = field(default=0.0, repr=False)

    @property
    def n_bins(self) -> int:
        """The number of bins ``B``."""
        return int(self.edges.size - 1)

    @property
    def is_datetime(self) -> bool:
        """Whether the bins are on a datetime axis."""
        return self.datetime_unit is not None

    def edges_as_values(self) -> np.ndarray:
        """The edges in the user's space (datetime64 for datetime bins)."""
        if self.datetime_unit is None:
            return self.edges.copy()
        return self.edges.astype(f"datetime64[{self.datetime_unit}]")

    # ------------------------------------------------------------------ conversion
    def to_axis(self, x: Any, name: str) -> np.ndarray:
        """Convert query points or values to the numeric axis of the edges (float64 or int64)."""
        arr = np.asarray(x)
        if self.datetime_unit is not None:
            if arr.dtype.kind == "O" or arr.dtype.kind == "U":
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

    # ------------------------------------------------------------------ counting
    def count(self, values: Any, *, nan: NanPolicy = "error") -> tuple[np.ndarray, int]:
        """Count ``values`` into the bins, clamping values outside the edges.

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
        arr = as_1d_array(values)
        if self.datetime_unit is not None:
            if arr.dtype.kind != "M":
                raise InvalidTypeError(
                    "The 'values' argument must hold datetimes for datetime bins. "
                    f"Got dtype {arr.dtype} instead."
                )
            bad = np.isnat(arr)
            n_bad = int(bad.sum())
            if n_bad:
                arr = _drop(arr, bad, nan, "NaT (missing datetime)")
            return self._count_search(_datetime_ticks(arr, self.datetime_unit)), n_bad
        if arr.dtype.kind == "M":
            raise InvalidTypeError(
                "The 'values' argument holds datetimes but the bins are numeric; give "
                "datetime bounds or edges."
            )
        n_bad = 0
        if arr.dtype.kind == "f":
            bad = np.isnan(arr)
            n_bad = int(bad.sum())
            if n_bad:
                arr = _drop(arr, bad, nan, "NaN (missing)")
        if self.equal_width and self._inv_width > 0.0:
            return self._count_equal_width(arr), n_bad
        return self._count_search(arr.astype(np.float64, copy=False)), n_bad

    def _parallel(self, arr: np.ndarray, kernel: Any) -> np.ndarray:
        n_bins = self.n_bins
        if arr.size < 8 * _CHUNK:
            return kernel(arr)
        half = arr.size // 2
        with ThreadPoolExecutor(max_workers=2) as pool:
            parts = list(pool.map(kernel, (arr[:half], arr[half:])))
        out = parts[0]
        out += parts[1]
        assert out.size == n_bins
        return out

    def _count_equal_width(self, arr: np.ndarray) -> np.ndarray:
        lo = float(self.edges[0])
        hi = float(self.edges[-1])
        inv = self._inv_width
        n_bins = self.n_bins
        edges = self.edges
        top = n_bins - 0.5
        chunk = _chunk_for(n_bins)

        def kernel(part: np.ndarray) -> np.ndarray:
            with np.errstate(all="ignore"):  # per thread: the user's np.seterr must not leak
                return _equal_width_kernel(part)

        def _equal_width_kernel(part: np.ndarray) -> np.ndarray:
            counts = np.zeros(n_bins, dtype=np.int64)
            t = np.empty(min(chunk, part.size), dtype=np.float64)
            for start in range(0, part.size, chunk):
                x = part[start : start + chunk]
                tt = t[: x.size]
                # Clamp first, so (x - lo)·inv never overflows whatever the value: no warning
                # (an observable output) can depend on the data.
                np.clip(x, lo, hi, out=tt)
                tt -= lo
                tt *= inv
                np.clip(tt, 0.0, top, out=tt)
                idx = tt.astype(np.intp)
                # Exactness at the edges: floating-point rounding in (x - lo)·B/(hi - lo) may
                # put a value on the wrong side of an edge; compare with the edges themselves.
                idx -= (x < edges[idx]) & (idx > 0)
                idx += (x >= edges[idx + 1]) & (idx < n_bins - 1)
                counts += np.bincount(idx, minlength=n_bins)
            return counts

        return self._parallel(arr, kernel)

    def _count_search(self, arr: np.ndarray) -> np.ndarray:
        n_bins = self.n_bins
        inner = self.edges[1:-1]
        chunk = _chunk_for(n_bins)

        def kernel(part: np.ndarray) -> np.ndarray:
            counts = np.zeros(n_bins, dtype=np.int64)
            for start in range(0, part.size, chunk):
                idx = np.searchsorted(inner, part[start : start + chunk], side="right")
                counts += np.bincount(idx, minlength=n_bins)
            return counts

        return self._parallel(arr, kernel)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (edges as exact floats or integer ticks)."""
        return {
            "edges": [int(e) for e in self.edges] if self.datetime_unit else self.edges.tolist(),
            "discrete": self.discrete,
            "equal_width": self.equal_width,
            "datetime_unit": self.datetime_unit,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Bins:
        """Rebuild bins from :meth:`to_dict` output (validated like user input)."""
        unit = data["datetime_unit"]
        dtype = np.int64 if unit else np.float64
        edges = np.asarray(data["edges"], dtype=dtype)
        _check_edges(edges, "edges")
        return _finish(edges, bool(data["discrete"]), bool(data["equal_width"]), unit)


def _drop(arr: np.ndarray, bad: np.ndarray, nan: str, what: str) -> np.ndarray:
    """Apply the missing-value policy; the error names no count, value or shape of the data."""
    if nan == "drop":
        return arr[~bad]
    raise DataError(
        f"The 'values' argument contains {what} values. Pass nan='drop' to leave them out "
        "(a per-record filter that keeps the add/remove guarantee; see the docs), or clean "
        "the column first."
    )


_INT64_MAX = int(np.iinfo(np.int64).max)


_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")


def _datetime_ticks(arr: np.ndarray, unit: str) -> np.ndarray:
    """Datetimes (no NaT) as int64 ticks of ``unit``, saturating instead of wrapping.

    numpy's cast to a finer unit wraps silently on overflow (``2500-01-01`` in days becomes
    1915 in nanoseconds). A datetime beyond the int64 range of ``unit`` lies beyond every edge,
    so it saturates to the extreme tick and is clamped into the first or last bin, as the
    clamping rule says.
    """
    src_unit, multiple = np.datetime_data(arr.dtype)
    finer = _UNITS.index(src_unit) - _UNITS.index(unit)
    if arr.size == 0 or finer > 0 or (finer == 0 and multiple == 1):
        return arr.astype(f"datetime64[{unit}]").view(np.int64)  # floors; cannot overflow
    src = arr.view(np.int64)
    if src_unit in ("Y", "M"):  # calendar units: go through days first, saturating
        per_day_max = _INT64_MAX // (366 if src_unit == "Y" else 31)
        src = np.clip(src, -per_day_max, per_day_max)
        src = src.view(arr.dtype).astype("datetime64[D]").view(np.int64)
        src_unit, multiple = "D", 1
    # Linear units: one source tick is ``factor`` target ticks (exact integers); a source tick
    # beyond MAX // factor lies beyond the target unit's range, hence beyond every edge.
    step = np.timedelta64(1, src_unit).astype(f"timedelta64[{unit}]").view(np.int64)
    factor = int(step) * int(multiple)
    limit = _INT64_MAX // factor
    high, low = src > limit, src < -limit
    ticks = np.clip(src, -limit, limit) * factor
    ticks[high] = _INT64_MAX
    ticks[low] = -_INT64_MAX
    return ticks


def _chunk_for(n_bins: int) -> int:
    """Values per chunk: cache-sized, but large enough that the per-chunk bincount of ``B``
    counters stays a small fraction of the work."""
    return int(min(max(_CHUNK, 2 * n_bins), 1 << 22))


def _finish(edges: np.ndarray, discrete: bool, equal_width: bool, unit: str | None) -> Bins:
    inv = 0.0
    if equal_width and unit is None:
        with np.errstate(all="ignore"):
            width = float(edges[-1]) - float(edges[0])
            inv = (edges.size - 1) / width
        if not (math.isfinite(width) and math.isfinite(inv) and inv > 0.0):
            # Bounds so wide or so narrow that (x - lo)·B/(hi - lo) overflows: these bins are
            # counted by binary search on the edges instead (exact, only slower).
            inv = 0.0
    edges.setflags(write=False)
    return Bins(edges, discrete, equal_width, unit, inv)


def _check_edges(edges: np.ndarray, name: str) -> None:
    if edges.ndim != 1 or edges.size < 2:
        raise InvalidParameterError(
            f"The '{name}' parameter must be a 1-D sequence of at least 2 edges. "
            f"Got shape {edges.shape} instead."
        )
    if edges.size - 1 > MAX_BINS:
        raise InvalidParameterError(
            f"The '{name}' parameter gives {edges.size - 1} bins; at most {MAX_BINS} are allowed."
        )
    if edges.dtype.kind == "f" and not np.isfinite(edges).all():
        raise InvalidParameterError(f"The '{name}' parameter must hold finite values only.")
    if not (np.diff(edges) > 0).all():
        raise InvalidParameterError(f"The '{name}' parameter must be strictly increasing.")


def _is_datetime_like(x: Any) -> bool:
    import datetime as _dt

    return isinstance(x, np.datetime64 | _dt.date) or (isinstance(x, str) and not _looks_numeric(x))


def _looks_numeric(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


def _check_number(x: Any, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float | np.integer | np.floating):
        raise InvalidTypeError(
            f"The '{name}' parameter must hold two numbers or two datetimes. "
            f"Got {type(x).__name__} {x!r}."
        )
    v = float(x)
    if not math.isfinite(v):
        raise InvalidParameterError(f"The '{name}' parameter must be finite. Got {x!r} instead.")
    return v


def make_bins(
    *,
    bounds: tuple[Any, Any] | None = None,
    bins: int | str | None = None,
    edges: Any = None,
) -> Bins:
    """Build public bins from ``bounds`` and ``bins``, or from explicit ``edges``.

    Parameters
    ----------
    bounds : (lo, hi), optional
        Public bounds, numbers or datetimes, ``lo < hi``. With ``bins=B``: ``B`` equal-width
        bins covering ``[lo, hi)``. With ``bins="integers"``: integer ``lo`` and ``hi`` and one
        bin per integer in ``lo..hi`` (both included).
    bins : int or "integers", optional
        The number of bins ``B`` (1 to :data:`MAX_BINS`), or ``"integers"``.
    edges : array-like, optional
        ``B + 1`` strictly increasing public edges (numbers or datetimes). Not with ``bounds``.

    Returns
    -------
    Bins

    Raises
    ------
    InvalidParameterError, InvalidTypeError
        Naming the argument and what is allowed.
    """
    if edges is not None:
        if bounds is not None or bins is not None:
            raise InvalidParameterError(
                "Give either 'edges' or 'bounds' with 'bins', not both. Got edges and "
                f"{'bounds' if bounds is not None else 'bins'}."
            )
        arr = np.asarray(edges)
        if arr.dtype.kind == "O" or arr.dtype.kind == "U":
            try:
                arr = arr.astype("datetime64") if arr.dtype.kind == "U" else arr.astype(float)
            except (ValueError, TypeError):
                raise InvalidTypeError(
                    "The 'edges' parameter must hold numbers or datetimes."
                ) from None
        if arr.dtype.kind == "M":
            unit = np.datetime_data(arr.dtype)[0]
            if np.isnat(arr).any():
                raise InvalidParameterError("The 'edges' parameter must not hold NaT.")
            ticks = arr.view(np.int64).copy()
            _check_edges(ticks, "edges")
            return _finish(ticks, False, False, unit)
        if arr.dtype.kind not in "iuf":
            raise InvalidTypeError(
                f"The 'edges' parameter must hold numbers or datetimes. Got dtype {arr.dtype}."
            )
        fl = arr.astype(np.float64)
        _check_edges(fl, "edges")
        return _finish(fl.copy(), False, False, None)

    if bounds is None or bins is None:
        raise InvalidParameterError(
            "Public bins are required: give 'bounds=(lo, hi)' with 'bins=B' (or "
            "bins='integers'), or explicit 'edges'. treedp never derives bins from the data."
        )
    if not isinstance(bounds, tuple | list) or len(bounds) != 2:
        raise InvalidParameterError(
            f"The 'bounds' parameter must be a pair (lo, hi). Got {bounds!r} instead."
        )
    lo_raw, hi_raw = bounds
    if _is_datetime_like(lo_raw) or _is_datetime_like(hi_raw):
        if not (_is_datetime_like(lo_raw) and _is_datetime_like(hi_raw)):
            raise InvalidTypeError("The 'bounds' parameter mixes a datetime and a number.")
        try:
            lo_dt, hi_dt = np.datetime64(lo_raw), np.datetime64(hi_raw)
        except ValueError:
            raise InvalidParameterError(
                f"The 'bounds' parameter could not be read as datetimes: {bounds!r}."
            ) from None
        unit = np.datetime_data(np.array([lo_dt, hi_dt]).dtype)[0]
        if unit in ("Y", "M", "W", "D", "h", "m"):
            unit = "s"
        lo_t = int(np.datetime64(lo_dt, unit).astype(np.int64))
        hi_t = int(np.datetime64(hi_dt, unit).astype(np.int64))
        if bins == "integers":
            raise InvalidParameterError("bins='integers' needs numeric bounds, not datetimes.")
        n_bins = _check_bin_count(bins)
        if not lo_t < hi_t:
            raise InvalidParameterError(
                f"The 'bounds' parameter must satisfy lo < hi. Got {bounds!r} instead."
            )
        if hi_t - lo_t < n_bins:
            raise InvalidParameterError(
                f"The 'bins' parameter ({n_bins}) exceeds the number of {unit} ticks in 'bounds'."
            )
        ticks = lo_t + (np.arange(n_bins + 1, dtype=object) * (hi_t - lo_t)) // n_bins
        edges_dt = np.array([int(t) for t in ticks], dtype=np.int64)
        return _finish(edges_dt, False, False, unit)

    lo, hi = _check_number(lo_raw, "bounds"), _check_number(hi_raw, "bounds")
    if bins == "integers":
        if lo != int(lo) or hi != int(hi):
            raise InvalidParameterError(
                f"bins='integers' needs integer bounds. Got {bounds!r} instead."
            )
        if not lo <= hi:
            raise InvalidParameterError(
                f"The 'bounds' parameter must satisfy lo <= hi for bins='integers'. "
                f"Got {bounds!r} instead."
            )
        n = int(hi) - int(lo) + 1
        if n > MAX_BINS:
            raise InvalidParameterError(
                f"bins='integers' over {bounds!r} gives {n} bins; at most {MAX_BINS} are allowed."
            )
        return _finish(np.arange(int(lo), int(hi) + 2, dtype=np.float64), True, True, None)
    n_bins = _check_bin_count(bins)
    if not lo < hi:
        raise InvalidParameterError(
            f"The 'bounds' parameter must satisfy lo < hi. Got {bounds!r} instead."
        )
    steps = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    # When hi - lo overflows, interpolate without forming it. Subnormal bounds underflow
    # harmlessly; the caller's np.seterr must not turn that into an error.
    width = hi - lo
    with np.errstate(all="ignore"):
        edges_f = lo + width * steps if math.isfinite(width) else lo * (1.0 - steps) + hi * steps
    edges_f[-1] = hi
    if not (np.diff(edges_f) > 0).all():
        raise InvalidParameterError(
            f"The 'bins' parameter ({n_bins}) is too large for the float resolution of "
            f"'bounds' {bounds!r}: edges would coincide."
        )
    return _finish(edges_f, False, True, None)


def _check_bin_count(bins: Any) -> int:
    if isinstance(bins, bool) or not isinstance(bins, int | np.integer):
        raise InvalidParameterError(
            f"The 'bins' parameter must be an int in [1, {MAX_BINS}] or 'integers'. "
            f"Got {bins!r} instead."
        )
    if not 1 <= bins <= MAX_BINS:
        raise InvalidParameterError(
            f"The 'bins' parameter must be an int in [1, {MAX_BINS}] or 'integers'. "
            f"Got {bins!r} instead."
        )
    return int(bins)
