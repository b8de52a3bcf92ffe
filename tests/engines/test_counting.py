"""Counting engines: additive partial counts, and one bin rule bin for bin.

Every engine path (the whole column, random chunks added up, two threads, one thread) must give
the counts of the reference rule of :mod:`treedp.engines.base`, written here independently with
``np.searchsorted`` on the edges.
"""

from __future__ import annotations

import numpy as np
import pytest

from treedp import make_bins
from treedp.domain import Bins
from treedp.engines import (
    BinCounts,
    CountEngine,
    LocalEngine,
    count_chunk,
    edge_exactness,
    equal_width,
    sum_counts,
)
from treedp.engines import local as local_engine
from treedp.engines.local import count_chunks
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError


def reference(values: np.ndarray, bins: Bins) -> np.ndarray:
    """The bin rule, independently: index = #inner edges <= v, on float64 or saturated ticks."""
    if bins.datetime_unit is not None:
        ticks = _saturated_ticks(values, bins.datetime_unit)
        idx = np.searchsorted(bins.edges[1:-1], ticks, side="right")
    else:
        idx = np.searchsorted(bins.edges[1:-1], values.astype(np.float64), side="right")
    return np.bincount(idx, minlength=bins.n_bins).astype(np.int64)


_ATTO = {
    "W": 7 * 86400 * 10**18,
    "D": 86400 * 10**18,
    "h": 3600 * 10**18,
    "m": 60 * 10**18,
    "s": 10**18,
    "ms": 10**15,
    "us": 10**12,
    "ns": 10**9,
}


def _saturated_ticks(values: np.ndarray, unit: str) -> np.ndarray:
    """Exact ticks through Python integers, saturated to ±(2**63 - 1)."""
    limit = 2**63 - 1
    out = []
    for v in values:
        src_unit, _ = np.datetime_data(v.dtype)
        n = int(v.astype(np.int64))
        if src_unit in ("Y", "M"):
            n = int(v.astype("datetime64[D]").astype(np.int64))  # small test values only
            src_unit = "D"
        ticks = (n * _ATTO[src_unit]) // _ATTO[unit]
        out.append(max(-limit, min(limit, ticks)))
    return np.array(out, dtype=np.int64)


def _random_chunks(arr: np.ndarray, rng: np.random.Generator) -> list[np.ndarray]:
    cuts = np.sort(rng.integers(0, arr.size + 1, size=rng.integers(0, 8)))
    return np.split(arr, cuts)


def _all_paths_agree(values: np.ndarray, bins: Bins, nan: str = "error") -> BinCounts:
    rng = np.random.default_rng(values.size)
    whole = count_chunk(values, bins, nan)
    chunked = sum_counts(count_chunk(c, bins, nan) for c in _random_chunks(values, rng))
    serial = LocalEngine(workers=1).count(values, bins, nan=nan)
    threaded = LocalEngine(workers=3).count(values, bins, nan=nan)
    assert whole == chunked == serial == threaded
    counts, dropped = bins.count(values, nan=nan)
    assert np.array_equal(counts, whole.counts) and dropped == whole.dropped
    return whole


def _edge_probes(edges: np.ndarray) -> np.ndarray:
    """Every edge, one ulp either side, midpoints, and values far outside."""
    e = edges.astype(np.float64)
    probes = [e, np.nextafter(e, -np.inf), np.nextafter(e, np.inf), (e[:-1] + e[1:]) / 2]
    far = [-np.inf, np.inf, -1e308, 1e308, -0.0, 0.0, 5e-324, -5e-324, 2.2250738585072014e-308]
    return np.concatenate([*probes, np.array(far)])


NUMERIC_BINS = [
    make_bins(bounds=(0.0, 1.0), bins=10),
    make_bins(bounds=(-3.0, 7.0), bins=7),
    make_bins(bounds=(-1e-300, 1e-300), bins=5),
    make_bins(bounds=(-1e308, 1e308), bins=6),  # hi - lo overflows: binary search path
    make_bins(bounds=(1e-310, 3e-310), bins=4),  # subnormal edges
    make_bins(bounds=(-5, 20), bins="integers"),
    make_bins(edges=[-2.0, -0.0, 1e-9, 3.0, 1e6]),
    make_bins(bounds=(0.1, 0.7), bins=1000),
]


@pytest.mark.parametrize("bins", NUMERIC_BINS, ids=lambda b: f"B{b.n_bins}")
def test_numeric_paths_equal_the_reference_at_and_around_edges(bins: Bins) -> None:
    probes = _edge_probes(bins.edges)
    rng = np.random.default_rng(1)
    lo, hi = float(bins.edges[0]), float(bins.edges[-1])
    span = hi - lo if np.isfinite(hi - lo) else hi
    inside = lo + rng.random(5000) * span if np.isfinite(span) else rng.normal(0, 1e307, 5000)
    values = rng.permutation(np.concatenate([probes, inside, probes]))
    got = _all_paths_agree(values, bins)
    assert np.array_equal(got.counts, reference(values, bins))
    assert got.dropped == 0 and int(got.counts.sum()) == values.size


@pytest.mark.parametrize("nan", ["error", "drop"])
def test_missing_values_follow_the_policy(nan: str) -> None:
    bins = make_bins(bounds=(0.0, 4.0), bins=4)
    values = np.array([0.5, np.nan, -np.inf, np.inf, 3.999, np.nan, 4.0, -0.0])
    if nan == "error":
        with pytest.raises(DataError, match="nan='drop'"):
            count_chunk(values, bins, nan)
        with pytest.raises(DataError):
            LocalEngine(workers=2).count(np.tile(values, 200_000), bins, nan=nan)
        return
    got = _all_paths_agree(values, bins, nan)
    assert got.dropped == 2
    assert np.array_equal(got.counts, reference(values[~np.isnan(values)], bins))
    assert got.counts.tolist() == [3, 0, 0, 3]


def test_missing_datetimes_and_objects() -> None:
    bins = make_bins(bounds=("2024-01-01", "2024-01-05"), bins=4)
    values = np.array(["2024-01-02", "NaT", "2024-01-04T12", "NaT"], dtype="datetime64[s]")
    with pytest.raises(DataError, match="NaT"):
        bins.count(values)
    got = _all_paths_agree(values, bins, "drop")
    assert got.dropped == 2 and got.counts.tolist() == [0, 1, 0, 1]
    counts, dropped = make_bins(bounds=(0, 2), bins=2).count([0.5, None, 1.5], nan="drop")
    assert counts.tolist() == [1, 1] and dropped == 1


def test_integers_beyond_two_to_the_53() -> None:
    big = 2**53
    bins = make_bins(edges=[0.0, float(big), float(big + 2), float(big + 8)])
    values = np.array([big - 1, big, big + 1, big + 2, big + 3, big + 7, 2**62, -(2**63)])
    got = _all_paths_agree(values, bins)
    assert np.array_equal(got.counts, reference(values, bins))
    uvalues = np.array([2**64 - 1, 0, big + 1], dtype=np.uint64)
    assert np.array_equal(_all_paths_agree(uvalues, bins).counts, reference(uvalues, bins))


FAR_DATES = ["1900-01-01", "1678-01-01", "2262-04-01", "2015-06-15"]


@pytest.mark.parametrize("unit", ["D", "s", "ms", "us", "ns"])
def test_datetimes_of_several_units(unit: str) -> None:
    bins = make_bins(bounds=("2000-01-01", "2030-01-01"), bins=9)
    edges = bins.edges_as_values().astype(f"datetime64[{unit}]")
    one = np.timedelta64(1, unit)
    values = np.concatenate(
        [
            edges,
            edges - one,
            edges + one,
            np.array(FAR_DATES if unit != "ns" else FAR_DATES[1:], f"datetime64[{unit}]"),
        ]
    )
    got = _all_paths_agree(values, bins)
    assert np.array_equal(got.counts, reference(values, bins))


def test_datetimes_saturate_instead_of_wrapping() -> None:
    bins = make_bins(
        edges=np.array(["2000-01-01", "2010-01-01", "2020-01-01"], dtype="datetime64[ns]")
    )
    far = np.array(["2500-01-01", "1000-01-01", "2005-01-01", "9999-12-31"], dtype="datetime64[D]")
    got = _all_paths_agree(far, bins)
    assert got.counts.tolist() == [2, 2]
    assert np.array_equal(got.counts, reference(far, bins))
    years = np.array(["3000", "1000"], dtype="datetime64[Y]")
    assert _all_paths_agree(years, bins).counts.tolist() == [1, 1]


@pytest.mark.parametrize("unit", ["D", "W", "h", "s"])
def test_the_first_ticks_of_nanoseconds_floor_into_the_first_bin(unit: str) -> None:
    """numpy's cast of nanoseconds to a coarser unit wraps within a day of int64's minimum
    (``1677-09-21T12:00`` became 2262 in days: the last bin instead of the first; a
    re-review); the engine floors by integer division, as numpy does everywhere else."""
    edges = np.array(["1800-01-01", "1970-01-01", "2200-01-01"], dtype=f"datetime64[{unit}]")
    bins = make_bins(edges=edges)
    near = np.array(["1677-09-21T00:12:43.145224193", "1677-09-21T12:00", "1677-09-22"],
                    dtype="datetime64[ns]")  # fmt: skip
    got = _all_paths_agree(near, bins)
    assert got.counts.tolist() == [3, 0]
    assert np.array_equal(got.counts, reference(near, bins))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_missing_values_found_chunk_by_chunk(dtype: type) -> None:
    """The equal-width kernel finds NaN per cache-sized chunk (from the sum of the clipped
    indices): NaN alone in a chunk, next to ±inf (whose clipped indices are finite), in
    every chunk or in none, at either end, and in the last partial chunk; the counts and the
    dropped number equal the reference, and nan="error" raises wherever the NaN is."""
    rng = np.random.default_rng(11)
    chunk = equal_width._chunk_for(64)
    values = rng.normal(0.3, 1.0, 5 * chunk + 123).astype(dtype)
    values[chunk + 7] = np.nan  # alone in its chunk
    values[3 * chunk : 3 * chunk + 40 : 3] = np.nan  # next to infinities
    values[3 * chunk + 1 : 3 * chunk + 40 : 3] = np.inf
    values[3 * chunk + 2 : 3 * chunk + 40 : 3] = -np.inf
    values[[0, -1]] = np.nan  # first and last (partial) chunk
    for bins in (make_bins(bounds=(-1.0, 2.0), bins=64), make_bins(bounds=(0.0, 2.0), bins=64)):
        got = _all_paths_agree(values, bins, "drop")
        kept = values[~np.isnan(values)]
        assert got.dropped == values.size - kept.size
        assert np.array_equal(got.counts, reference(kept, bins))
        assert _all_paths_agree(kept, bins, "error") == BinCounts(got.counts, 0)
        for where in (0, chunk + 7, values.size - 1):
            one = np.where(np.isnan(values), 0.5, values).astype(dtype)
            one[where] = np.nan
            with pytest.raises(DataError, match="nan='drop'"):
                count_chunk(one, bins, "error", kernel="numpy")
            with pytest.raises(DataError):
                LocalEngine(workers=2, kernel="numpy").count(one, bins)
    few = np.array([np.nan, 0.1, 0.7, np.nextafter(0.4, 0.0), 0.4, np.inf, np.nan, -1.0])
    bins = make_bins(bounds=(0.1, 0.7), bins=1000)  # fewer values than bins, inexact edges
    got = count_chunk(few.astype(dtype), bins, "drop", kernel="numpy")
    kept = few.astype(dtype)[~np.isnan(few)]
    assert got.dropped == 2 and np.array_equal(got.counts, reference(kept, bins))


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-0.3, 0.7)])
def test_the_inside_short_path_equals_the_reference(
    bounds: tuple[float, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunks whose ``t = (x - lo)·inv`` lies in ``[0, B)`` skip the clip and the NaN test (their
    maximum decides it, and their minimum unless the arithmetic is exact, where ``np.bincount``
    refuses the negative indices instead). After an inside chunk: a chunk holding the upper bound
    itself (``t = B``, which must be clipped), one whose only NaN sits among inside values, one in
    the last half-bin (``B - 1/2 < t < B``) and one at ``lo`` and ``-0.0`` (both inside); a chunk
    outside ends the tries for the column. The counts equal the reference under both policies, and a
    spy on the flag shows which path each chunk took, so that a wrong test (``max <= B``, NaN taken
    as inside) fails here."""
    rng = np.random.default_rng(5)
    bins = make_bins(bounds=bounds, bins=64)
    lo, hi = bounds
    chunk = equal_width._chunk_for(64)
    flags: list[object] = []
    real_inside, real_clip = equal_width._inside_indices, equal_width._bin_indices

    def inside_spy(*args: object, **kwargs: bool) -> np.ndarray | None:
        out = real_inside(*args, **kwargs)  # type: ignore[arg-type]
        flags.append(out is not None)
        return out

    def clip_spy(*args: object) -> tuple[np.ndarray, np.ndarray]:
        flags.append("clip")
        return real_clip(*args)  # type: ignore[arg-type]

    def counted(*special: tuple[int, float], nan: str = "error") -> list[object]:
        values = lo + rng.random(3 * chunk) * (hi - lo)
        for where, value in special:
            values[where] = value
        flags.clear()
        got = count_chunk(values, bins, nan, kernel="numpy")  # type: ignore[arg-type]
        kept = values[~np.isnan(values)]
        assert got.dropped == values.size - kept.size
        assert np.array_equal(got.counts, reference(kept, bins))
        return list(flags)

    monkeypatch.setattr(equal_width, "_inside_indices", inside_spy)
    monkeypatch.setattr(equal_width, "_bin_indices", clip_spy)
    c = "clip"
    assert counted() == [True, True, True]
    assert counted((chunk + 5, hi)) == [True, False, c, c]
    assert counted((chunk + 11, np.nan), nan="drop") == [True, False, c, c, c]
    with pytest.raises(DataError, match="nan='drop'"):
        counted((chunk + 11, np.nan))
    below_hi = float(np.nextafter(hi, -np.inf))
    edge_values = [(chunk + i, below_hi) for i in range(9)]
    edge_values += [(2 * chunk + 1, lo), (2 * chunk + 2, -0.0 if lo == 0.0 else lo)]
    assert counted(*edge_values) == [True, True, True]
    width = (hi - lo) / 64
    if edge_exactness._arithmetic_is_exact(bins.edges, bins._inv_width):
        # Exact arithmetic tests the maximum only: t in (-1, 0) truncates to bin 0 (as the
        # clip puts it) and stays on the short path; t <= -1 (or -inf) is a negative index
        # that np.bincount refuses, and that chunk is counted again on the clipping path.
        assert counted((chunk + 3, lo - width / 2)) == [True, True, True]
        assert counted((3, lo - 1.0)) == [True, c, c, c]
        assert counted((chunk + 3, -np.inf)) == [True, True, c, c]
        assert counted((chunk + 3, lo - width)) == [True, True, c, c]
    else:  # the minimum is tested too: the corrections index the edges by it
        assert counted((chunk + 3, lo - width / 2)) == [True, False, c, c]
        assert counted((3, lo - 1.0)) == [False, c, c, c]


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_narrow_floats_are_binned_by_their_binary64_value(dtype: type) -> None:
    """float32 and float16 columns are indexed in binary64, as every other engine and the
    exactness proof compute: a float32 product put values next to an edge of these bins in
    the neighbouring bin (found on ``(68.4, 111.2)`` with 4 bins, whose arithmetic is exact in
    binary64). Values at, just below and just above every edge, in their own precision."""
    rng = np.random.default_rng(11)
    for bounds, n_bins in [((68.4, 111.2), 4), ((0.0, 3.0), 7), ((-2.5, 7.5), 40)]:
        bins = make_bins(bounds=bounds, bins=n_bins)
        edges = bins.edges.astype(dtype)
        near = np.concatenate(
            [edges, np.nextafter(edges, dtype(-np.inf)), np.nextafter(edges, dtype(np.inf))]
        )
        values = rng.permutation(np.tile(near, 3000 // near.size + 1))
        for kernel_values in (values, values[: n_bins - 1]):  # the proof, and few values
            got = count_chunk(kernel_values, bins, "error", kernel="numpy").counts
            want = reference(kernel_values.astype(np.float64), bins)
            assert np.array_equal(got, want)


def test_threaded_equals_serial_on_a_large_column() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0.5, 0.4, 3 * local_engine.PARALLEL_MIN + 17)
    values[::1001] = np.inf
    for bins in (make_bins(bounds=(0, 1), bins=1000), make_bins(edges=np.sort(rng.random(50)))):
        serial = LocalEngine(workers=1).count(values, bins)
        for workers in (2, 3, 8):
            assert LocalEngine(workers=workers).count(values, bins) == serial
        assert np.array_equal(serial.counts, reference(values, bins))


def test_bin_counts_are_additive() -> None:
    a = BinCounts(np.array([1, 0, 2]), 1)
    b = BinCounts(np.array([0, 5, 1], dtype=np.int32), 0)
    total = a + b
    assert total.counts.tolist() == [1, 5, 3] and total.dropped == 1
    assert total.counts.dtype == np.int64
    zero = BinCounts.zero(3)
    assert a + zero == a and zero + a == a
    assert sum_counts([a, b]) == total == sum([a, b], BinCounts.zero(3))
    assert sum_counts([], n_bins=3) == zero
    assert (a + b) + total == a + (b + total)
    with pytest.raises(InvalidParameterError):
        sum_counts([])
    with pytest.raises(InvalidParameterError):
        a + BinCounts.zero(4)
    with pytest.raises(InvalidParameterError):
        sum_counts([a, BinCounts.zero(4)])
    with pytest.raises(InvalidTypeError):
        sum_counts([a, (np.zeros(3), 0)])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        a + 1  # type: ignore[operator]


def test_bin_counts_validate_and_are_frozen() -> None:
    source = np.array([1, 2])
    c = BinCounts(source, 0)
    source[0] = 9
    assert c.counts.tolist() == [1, 2]  # copied
    with pytest.raises(ValueError, match="read-only"):
        c.counts[0] = 5
    with pytest.raises(AttributeError):
        c.dropped = 3  # type: ignore[misc]
    for bad, err in [
        ([1, 2], InvalidTypeError),
        (np.array([1.0, 2.0]), InvalidTypeError),
        (np.array([1, -1]), InvalidParameterError),
        (np.zeros((2, 2), dtype=np.int64), InvalidParameterError),
        (np.zeros(0, dtype=np.int64), InvalidParameterError),
    ]:
        with pytest.raises(err):
            BinCounts(bad, 0)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        BinCounts(np.zeros(2, dtype=np.int64), 1.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        BinCounts(np.zeros(2, dtype=np.int64), -1)
    with pytest.raises(InvalidTypeError):
        BinCounts.zero(2.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        BinCounts.zero(0)


def test_local_engine_is_a_count_engine_and_validates() -> None:
    assert isinstance(LocalEngine(), CountEngine)
    with pytest.raises(InvalidTypeError):
        LocalEngine(workers=2.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        LocalEngine(workers=0)
    bins = make_bins(bounds=(0, 1), bins=2)
    with pytest.raises(InvalidParameterError, match="'nan'"):
        LocalEngine().count([0.5], bins, nan="zero")  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="'nan'"):
        LocalEngine().count([0.5], bins, nan=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError):
        count_chunk([0.5], bins)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="datetimes"):
        count_chunk(np.array(["2024-01-01"], "datetime64[D]"), bins)


class ChunkStream:
    """A minimal streaming engine: the source is an iterable of chunks."""

    def count(self, source: object, bins: Bins, *, nan: str = "error") -> BinCounts:
        parts = (count_chunk(np.asarray(c), bins, nan) for c in source)  # type: ignore[attr-defined]
        return sum_counts(parts, n_bins=bins.n_bins)


def test_a_streaming_engine_is_a_few_lines() -> None:
    engine = ChunkStream()
    assert isinstance(engine, CountEngine)
    bins = make_bins(bounds=(0, 10), bins=5)
    rng = np.random.default_rng(3)
    values = rng.uniform(-2, 12, 10_000)
    chunks = _random_chunks(values, rng)
    assert engine.count(chunks, bins) == LocalEngine().count(values, bins)
    assert engine.count([], bins) == BinCounts.zero(5)


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-5.0, 5.0), (0.1, 0.7)])
def test_few_values_in_many_bins_equal_the_reference(bounds: tuple[float, float]) -> None:
    """Fewer values than bins: the per-value correction without the O(B) proof or the
    NaN-guarded copy of the edges (indices clamped instead), and, once the proof is cached,
    the uncorrected path: both give the reference counts at and around sampled edges."""
    bins = make_bins(bounds=bounds, bins=1 << 16)
    rng = np.random.default_rng(7)
    picked = bins.edges[rng.choice(bins.edges.size, 1500, replace=False)]
    values = rng.permutation(_edge_probes(picked))
    assert values.size < bins.n_bins
    expected = reference(values, bins)
    edge_exactness._EXACT_CACHE.clear()
    few = count_chunk(values, bins)
    assert len(edge_exactness._EXACT_CACHE) == 0  # no O(B) proof for a few values
    assert np.array_equal(few.counts, expected)
    edge_exactness._arithmetic_is_exact(bins.edges, bins._inv_width)  # now cached
    assert np.array_equal(count_chunk(values, bins).counts, expected)
    assert np.array_equal(LocalEngine(workers=2).count(values, bins).counts, expected)


@pytest.mark.parametrize(
    ("bounds", "n_bins"), [((3.7, 91.3), 4096), ((0.1, 0.7), 1000), ((-1e5, 3e5), 999)]
)
def test_only_values_near_an_edge_are_compared_with_the_edges(
    bounds: tuple[float, float], n_bins: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the arithmetic is not exact, a value is compared with the edges only when its
    fractional index lies within the edges' slack of an integer. Every edge and the floats
    one and two ulps either side, inside chunks and in a chunk that is clipped, on one and two
    threads: the reference counts, with a few of the values compared; on random values almost
    none are. A slack of zero (trusting the arithmetic) misplaces some edge, so this test fails
    for it."""
    bins = make_bins(bounds=bounds, bins=n_bins)
    assert not edge_exactness._arithmetic_is_exact(bins.edges, bins._inv_width)
    e = bins.edges
    near = np.concatenate([e, *(np.nextafter(e, d) for d in (-np.inf, np.inf))])
    near = np.concatenate([near, np.nextafter(near[e.size :], near[e.size :])])
    near = np.concatenate([np.nextafter(near, -np.inf), near, np.nextafter(near, np.inf)])
    inside = near[(near >= e[0]) & (near < e[-1])]
    rng = np.random.default_rng(3)
    chunk = equal_width._chunk_for(n_bins)
    random = e[0] + rng.random(2 * chunk) * (e[-1] - e[0])
    values = np.concatenate([rng.permutation(np.resize(inside, chunk)), random])
    values[-5:] = [e[0] - 1.0, e[-1], -np.inf, np.inf, e[-1] + 1.0]  # the last chunk clips
    compared: list[int] = []
    real = equal_width._corrected

    def spy(idx: np.ndarray, *args: object) -> np.ndarray:
        compared.append(idx.size)
        return real(idx, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(equal_width, "_corrected", spy)
    expected = reference(values, bins)
    assert np.array_equal(count_chunk(values, bins, kernel="numpy").counts, expected)
    assert 0 < compared[0] <= chunk and sum(compared[1:]) <= 5  # the clipped values below lo
    parts = np.array_split(values, 3)
    assert np.array_equal(count_chunks(parts, bins, workers=2, kernel="numpy").counts, expected)
    compared.clear()
    count_chunk(random, bins, kernel="numpy")
    assert sum(compared) <= 1e-3 * random.size  # random values: almost never near an edge
    monkeypatch.setattr(equal_width, "_edge_slack", lambda *a, **k: 0.0)
    wrong = LocalEngine(1, "numpy").count(values, bins).counts
    assert not np.array_equal(wrong, expected)


@pytest.mark.parametrize("bounds", [(0.0, 1000.0), (0.0, 1.0), (-3.0, 7.0)])
def test_a_chunk_of_missing_values_only_is_dropped_like_any_other(bounds: tuple) -> None:
    """nan='drop' with a whole counting chunk (2**17 values) of NaN: the release is made, with
    as when one of those NaNs is a value (a new user's run:
    the chunk left nothing to compare and the release raised, whether it did depending on
    where the missing values lay)."""
    import treedp

    values = np.r_[np.linspace(bounds[0], bounds[1], 3000), np.full(2**17, np.nan)]
    near = values.copy()
    near[-1] = bounds[0]
    for x in (values, near):
        rel = treedp.release_cdf(x, bounds=bounds, bins=1024, nan="drop", epsilon=1.0,
                                 rng=treedp.InsecureSeededSource(1))  # fmt: skip
        assert rel.bins.n_bins == 1024
    only_nan = np.full(2**17 + 5, np.nan)
    rel = treedp.release_cdf(only_nan, bounds=bounds, bins=1024, nan="drop", epsilon=1.0,
                             rng=treedp.InsecureSeededSource(1))  # fmt: skip
    assert rel.bins.n_bins == 1024
