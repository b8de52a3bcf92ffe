"""The in-memory counting engine: numpy kernels, two threads for large columns.

:func:`count_chunk` is the pure kernel: it counts one 1-D numpy array into the bins following
the bin rule of :mod:`treedp.engines.base`, with the numpy kernels of
:mod:`treedp.engines.equal_width` (or the compiled one below). Everything else (streams,
thread pools, distributed partitions) counts parts with it and adds the
:class:`~treedp.engines.base.BinCounts`; :func:`count_chunks` does so for a stream of chunks
(tables, datasets, files) on a few threads.

float64 columns into equal-width bins can instead go through a compiled kernel
(:mod:`treedp.engines._kernel_numba`, the optional extra ``treedp[fast]`` = numba): the same
counts, bin for bin, in one pass per value without the GIL. ``kernel="auto"`` (the default)
uses it when numba is installed and either the kernel is already loaded in this process or the
column has at least :data:`AUTO_MIN` values, so that numba's import and the kernel's compile
(or cache load) cannot dominate; smaller columns never import numba.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from treedp._inputs import as_1d_array, with_kind
from treedp._validation import check_option, must
from treedp.engines.base import BinCounts, NanPolicy, check_nan_policy, sum_counts
from treedp.engines.edge_exactness import _arithmetic_is_exact, _edge_slack
from treedp.engines.equal_width import (
    CHUNK,
    _count_equal_width_missing,
    _count_search,
    _drop,
    _missing_error,
)
from treedp.exceptions import InvalidParameterError, InvalidTypeError

if TYPE_CHECKING:
    from treedp.domain import Bins

__all__ = [
    "AUTO_MIN",
    "KERNELS",
    "Kernel",
    "LocalEngine",
    "count_chunk",
    "count_chunks",
    "datetime_ticks",
]

#: The column size below which the local engine counts on one thread (``CHUNK``, the values
#: per kernel chunk at least, is the kernels': :mod:`treedp.engines.equal_width`).
PARALLEL_MIN = 8 * CHUNK

Kernel = Literal["auto", "numpy", "numba"]
KERNELS: tuple[str, ...] = ("auto", "numpy", "numba")

#: The column size (values) from which ``kernel="auto"`` imports numba and loads the compiled
#: kernel when it is not loaded yet: about where a fresh process's first count, numba's import
#: and the kernel's cached load included (about 0.5 s), takes no longer than numpy's on two
#: cores (docs/benchmarks.md, "the compiled kernel"). Once loaded, ``"auto"`` uses it for any
#: float64 column of at least :data:`CHUNK` values.
AUTO_MIN = 1 << 28

T = TypeVar("T")
R = TypeVar("R")

_INT64_MAX = int(np.iinfo(np.int64).max)
_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as")


def count_chunk(
    values: np.ndarray, bins: Bins, nan: NanPolicy = "error", *, kernel: Kernel = "auto"
) -> BinCounts:
    """Count one 1-D numpy array into ``bins`` (the bin rule of :mod:`treedp.engines.base`).

    Parameters
    ----------
    values : ndarray
        One-dimensional, of an integer, float or datetime64 dtype (see
        :func:`treedp._inputs.as_1d_array` for turning other columns into one).
    bins : Bins
        The public bins.
    nan : {"error", "drop"}, default="error"
        The missing-value policy.
    kernel : {"auto", "numpy", "numba"}, default="auto"
        The kernel for float64 values into equal-width bins (every other input is counted by
        numpy): ``"numba"`` the compiled kernel (``treedp[fast]``), ``"auto"`` the compiled
        kernel when it is loaded or the array has at least :data:`AUTO_MIN` values and numba
        is installed. The counts are the same, bin for bin.

    Returns
    -------
    BinCounts

    Raises
    ------
    InvalidTypeError
        If the dtype does not fit the bins (datetimes for numeric bins or the reverse).
    InvalidParameterError
        If ``kernel`` is unknown, or ``"numba"`` and numba cannot be imported.
    DataError
        On a missing value under ``nan="error"`` (the message holds no count).
    """
    check_option(kernel, "kernel", KERNELS)
    if kernel == "numba":
        _load_numba(required=True)  # a clear error even where numpy would count this input
    if not isinstance(values, np.ndarray) or values.ndim != 1:
        raise InvalidTypeError("count_chunk counts a 1-D numpy array.")
    values = with_kind(values, bins.datetime_unit is not None)  # untyped, nothing present
    if bins.datetime_unit is not None:
        if values.dtype.kind != "M":
            # no dtype named: a list's (int64 or float64) comes from its values
            raise InvalidTypeError(
                "The 'values' argument must hold datetimes for datetime bins. Got numbers."
            )
        bad = np.isnat(values)
        n_bad = int(bad.sum())
        if n_bad:
            values = _drop(values, bad, nan, "NaT (missing datetime)")
        ticks = datetime_ticks(values, bins.datetime_unit)
        return BinCounts._trusted(_count_search(ticks, bins.edges), n_bad)
    if values.dtype.kind == "M":
        raise InvalidTypeError(
            "The 'values' argument holds datetimes but the bins are numeric; give "
            "datetime bounds or edges."
        )
    if values.dtype.kind not in "iuf":
        raise InvalidTypeError("The 'values' argument must hold numbers.")
    inv = bins._inv_width
    if _use_numba(kernel, values, bins):
        return _count_numba(values, bins, nan)
    if bins.equal_width and inv > 0.0:  # finds the missing values chunk by chunk
        return BinCounts._trusted(*_count_equal_width_missing(values, bins.edges, inv, nan))
    n_bad = 0
    if values.dtype.kind == "f":
        bad = np.isnan(values)
        n_bad = int(np.count_nonzero(bad))
        if n_bad:
            values = _drop(values, bad, nan, "NaN (missing)")
    floats = values.astype(np.float64, copy=False)
    return BinCounts._trusted(_count_search(floats, bins.edges), n_bad)


class LocalEngine:
    """Count an in-memory column: numpy, sequences, pandas / polars Series, pyarrow Arrays.

    Columns of at least ``PARALLEL_MIN`` values are split in ``workers`` contiguous parts
    counted on as many threads (numpy and the compiled kernel release the GIL) and added; the
    result is the same, bin for bin, as counting on one thread.

    Parameters
    ----------
    workers : int, default=2
        Counting threads for large columns.
    kernel : {"auto", "numpy", "numba"}, default="auto"
        The kernel for float64 columns into equal-width bins (see :func:`count_chunk`; other
        columns are counted by numpy). ``"auto"`` decides once per column, from its size.
        ``"numba"`` loads the compiled kernel here, so that its import and compile (or cache
        load) are not part of the first count.
    progress : bool, optional
        A progress bar while streaming a file or dataset: None (default) shows it on an
        interactive terminal only, never in pipes or CI; needs ``treedp[progress]`` (tqdm).

    Raises
    ------
    InvalidParameterError
        If ``kernel="numba"`` and numba cannot be imported (install ``treedp[fast]``).
    """

    def __init__(
        self, workers: int = 2, kernel: Kernel = "auto", *, progress: bool | None = None
    ) -> None:
        from treedp.engines.progress import wants_progress

        wants_progress(progress)  # its type
        if isinstance(workers, bool) or not isinstance(workers, int):
            raise InvalidTypeError(
                must("workers", f"be an int. Got {type(workers).__name__} instead.")
            )
        if workers < 1:
            raise InvalidParameterError(must("workers", "be at least 1."))
        check_option(kernel, "kernel", KERNELS)
        if kernel == "numba":
            _load_numba(required=True)
        self.workers = workers
        self.kernel: Kernel = kernel
        self.progress = progress

    def __repr__(self) -> str:
        shown = "" if self.progress is None else f", progress={self.progress}"
        return f"LocalEngine(workers={self.workers}, kernel={self.kernel!r}{shown})"

    def count(self, source: Any, bins: Bins, *, nan: NanPolicy = "error") -> BinCounts:
        """Count ``source`` into ``bins``.

        Parameters
        ----------
        source : array-like
            One column.
        bins : Bins
            The public bins.
        nan : {"error", "drop"}, default="error"
            The missing-value policy.

        Returns
        -------
        BinCounts
        """
        check_nan_policy(nan)
        # the bins type an untyped column with no value present (as_1d_array: kindless)
        arr = as_1d_array(source, kind="datetime" if bins.datetime_unit is not None else "number")
        # decided once for the whole column: its parts are smaller than it
        kernel: Kernel = "numba" if _use_numba(self.kernel, arr, bins) else "numpy"
        # each thread fills its own B-vector: with few values per bin one thread is faster
        if self.workers == 1 or arr.size < max(PARALLEL_MIN, 4 * bins.n_bins):
            return count_chunk(arr, bins, nan, kernel=kernel)
        parts = np.array_split(arr, self.workers)
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            results = list(
                pool.map(lambda part: count_chunk(part, bins, nan, kernel=kernel), parts)
            )
        return sum_counts(results)


# ------------------------------------------------------------------ the compiled kernel
_NUMBA_LOCK = threading.Lock()
#: The loaded kernel module; ``False`` once an import under ``kernel="auto"`` failed (not
#: retried: ``"auto"`` then counts with numpy); ``None`` before any attempt.
_NUMBA: ModuleType | Literal[False] | None = None


def _load_numba(*, required: bool) -> ModuleType | None:
    """The compiled kernel's module, imported (and compiled) once per process.

    With ``required`` a failed import raises :class:`InvalidParameterError` naming the extra;
    otherwise it returns None (and ``"auto"`` counts with numpy, silently: the choice of kernel
    changes only the speed).
    """
    global _NUMBA
    with _NUMBA_LOCK:
        if _NUMBA is None or (_NUMBA is False and required):
            try:
                from treedp.engines import _kernel_numba

                _kernel_numba.load()
            except Exception as exc:  # not installed, or a numba/LLVM that cannot compile
                _NUMBA = False
                if required:
                    raise InvalidParameterError(
                        "kernel='numba' needs numba, the optional extra treedp[fast] "
                        "(pip install 'treedp[fast]'); it could not be loaded "
                        f"({type(exc).__name__}: {exc}). Use kernel='auto' or 'numpy'."
                    ) from exc
                return None
            _NUMBA = _kernel_numba
        return _NUMBA or None


def _use_numba(kernel: str, values: np.ndarray, bins: Bins) -> bool:
    """Whether ``kernel`` means the compiled kernel for ``values`` into ``bins``: float64
    values, equal-width numeric bins, and ``"numba"``, or ``"auto"`` with the kernel loaded and
    at least :data:`CHUNK` values, or importable and at least :data:`AUTO_MIN` values."""
    if kernel == "numpy" or values.dtype != np.float64:
        return False
    if bins.datetime_unit is not None or not bins.equal_width or not bins._inv_width > 0.0:
        return False
    if kernel == "numba":
        return _load_numba(required=True) is not None
    if _NUMBA is False or values.size < CHUNK:
        return False
    if _NUMBA is None and values.size < AUTO_MIN:
        return False
    return _load_numba(required=False) is not None


def _count_numba(values: np.ndarray, bins: Bins, nan: NanPolicy) -> BinCounts:
    """float64 values into equal-width bins with the compiled kernel (loaded by the caller)."""
    module = _load_numba(required=True)
    assert module is not None
    edges, inv = bins.edges, bins._inv_width
    # as in _count_equal_width: the O(B) proofs only for at least about B values (or cached)
    few = values.size < int(edges.size - 1)
    exact = _arithmetic_is_exact(edges, inv, compute=not few)
    delta = 0.0 if exact else _edge_slack(edges, inv, compute=not few)
    counts, missing = module.count_float64(values, edges, inv, exact=exact, delta=delta)
    if missing and nan == "error":
        raise _missing_error("NaN (missing)")
    return BinCounts._trusted(counts, missing)


def datetime_ticks(arr: np.ndarray, unit: str) -> np.ndarray:
    """Datetimes (no NaT) as int64 ticks of ``unit``, saturating instead of wrapping.

    numpy's cast to a finer unit wraps silently on overflow (``2500-01-01`` in days becomes
    1915 in nanoseconds). A datetime beyond the int64 range of ``unit`` lies beyond every edge,
    so it saturates to the extreme tick and is clamped into the first or last bin, as the
    clamping rule says.
    """
    src_unit, multiple = np.datetime_data(arr.dtype)
    finer = _UNITS.index(src_unit) - _UNITS.index(unit)
    linear = unit not in ("Y", "M") and src_unit not in ("Y", "M")
    if finer > 0 and multiple == 1 and linear:  # a floor division: numpy's cast to a coarser
        # unit wraps within a day of int64's minimum (1677-09-21T12:00 in ns became 2262 in
        # days, the last bin instead of the first; a re-review)
        one = np.timedelta64(1).astype(f"timedelta64[{unit}]")
        per = one.astype(f"timedelta64[{src_unit}]").view(np.int64)
        out: np.ndarray = arr.view(np.int64) // per
        return out
    if arr.size == 0 or finer > 0 or (finer == 0 and multiple == 1):
        return arr.astype(f"datetime64[{unit}]").view(np.int64)  # floors
    src = arr.view(np.int64)
    if src_unit in ("Y", "M"):  # calendar units: go through days first, saturating
        per_day_max = _INT64_MAX // (366 if src_unit == "Y" else 31)
        src = np.clip(src, -per_day_max, per_day_max)
        src = src.view(arr.dtype).astype("datetime64[D]").view(np.int64)
        src_unit, multiple = "D", 1
    # Linear units: one source tick is ``factor`` target ticks (exact integers); a source tick
    # beyond MAX // factor lies beyond the target unit's range, hence beyond every edge.
    # np.timedelta64(1) has the generic unit; astype gives one tick of a unit held in a str.
    step = np.timedelta64(1).astype(f"timedelta64[{src_unit}]")
    step = step.astype(f"timedelta64[{unit}]").view(np.int64)
    factor = int(step) * int(multiple)
    limit = _INT64_MAX // factor
    high, low = src > limit, src < -limit
    ticks = np.clip(src, -limit, limit) * factor
    ticks[high] = _INT64_MAX
    ticks[low] = -_INT64_MAX
    return ticks


def count_chunks(
    chunks: Iterable[np.ndarray],
    bins: Bins,
    nan: NanPolicy = "error",
    *,
    workers: int = 2,
    progress: Callable[[int], None] | None = None,
    kernel: Kernel = "auto",
) -> BinCounts:
    """Count a stream of 1-D numpy chunks on ``workers`` threads and add the counts.

    At most ``2 * workers`` chunks are held at once; the result is the same, bin for bin, as
    counting the concatenated column in one call. ``progress`` is called with the length of
    each chunk once it is counted. On an error (a missing value under ``nan="error"``) the
    chunks not yet counted are abandoned and the error is raised.
    """
    check_nan_policy(nan)

    def count(chunk: np.ndarray) -> BinCounts:
        part = count_chunk(chunk, bins, nan, kernel=kernel)
        if progress is not None:
            progress(int(chunk.size))
        return part

    return sum_counts(pooled(count, chunks, workers), bins.n_bins)


def pooled(task: Callable[[T], R], items: Iterable[T], workers: int) -> Iterator[R]:
    """``task(item)`` of each item, run on ``workers`` threads, in order; at most
    ``2 * workers`` items are in flight, and on an error the rest are cancelled."""
    pending: deque[Future[R]] = deque()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            for item in items:
                pending.append(pool.submit(task, item))
                while len(pending) >= 2 * workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BaseException:
            for future in pending:
                future.cancel()
            raise
