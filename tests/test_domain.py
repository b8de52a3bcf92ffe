"""Public bins: construction, exact counting with clamping, NaN policy, input types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treedp.domain import MAX_BINS, Bins, make_bins
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError


@settings(max_examples=100, deadline=None)
@given(
    st.floats(-1e6, 1e6),
    st.floats(1e-3, 1e6),
    st.integers(1, 5000),
    st.lists(st.floats(-2e6, 2e6), min_size=1, max_size=300),
)
def test_equal_width_counts_match_edge_search(lo, width, n_bins, values) -> None:
    bins = make_bins(bounds=(lo, lo + width), bins=n_bins)
    x = np.array(values)
    counts, dropped = bins.count(x)
    idx = np.clip(np.searchsorted(bins.edges, x, side="right") - 1, 0, n_bins - 1)
    assert dropped == 0
    assert (counts == np.bincount(idx, minlength=n_bins)).all()


def test_values_on_edges_and_outside_are_clamped() -> None:
    bins = make_bins(bounds=(0.0, 1.0), bins=10)
    counts, _ = bins.count([0.0, 0.1, 0.3, 0.7, 0.9999, 1.0, 5.0, -3.0])
    assert counts.tolist() == [2, 1, 0, 1, 0, 0, 0, 1, 0, 3]
    assert counts.sum() == 8


def test_large_inputs_use_both_threads_and_agree() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=2_000_000)
    bins = make_bins(bounds=(-3.0, 3.0), bins=1000)
    explicit = make_bins(edges=bins.edges)
    assert (bins.count(x)[0] == explicit.count(x)[0]).all()


def test_integer_domain() -> None:
    bins = make_bins(bounds=(17, 20), bins="integers")
    assert bins.n_bins == 4 and bins.discrete
    counts, _ = bins.count([17, 18, 18, 20, 25, 3])
    assert counts.tolist() == [2, 2, 0, 2]


def test_datetime_bins() -> None:
    bins = make_bins(bounds=("2024-01-01", "2024-01-11"), bins=10)
    assert bins.is_datetime and bins.datetime_unit == "s"
    values = np.array(["2024-01-01T12", "2024-01-05", "2023-06-01", "2025-01-01"], "datetime64[s]")
    counts, _ = bins.count(values)
    assert counts.tolist() == [2, 0, 0, 0, 1, 0, 0, 0, 0, 1]
    with pytest.raises(InvalidTypeError, match="datetimes"):
        bins.count([1.0, 2.0])
    with pytest.raises(InvalidTypeError, match="numeric"):
        make_bins(bounds=(0, 1), bins=2).count(values)


def test_nan_policy() -> None:
    bins = make_bins(bounds=(0, 1), bins=4)
    with pytest.raises(DataError, match=r"contains NaN \(missing\) values.*nan='drop'") as info:
        bins.count([0.1, np.nan, np.nan, 0.5])
    assert not any(ch.isdigit() for ch in str(info.value))  # no count of the data
    counts, dropped = bins.count([0.1, np.nan, -np.inf, 0.5], nan="drop")
    assert counts.tolist() == [2, 0, 1, 0] and dropped == 1  # -inf is clamped, not missing
    dt = make_bins(bounds=("2024-01-01", "2024-02-01"), bins=4)
    with pytest.raises(DataError, match="NaT"):
        dt.count(np.array(["2024-01-02", "NaT"], "datetime64[s]"))


def test_input_types() -> None:
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    bins = make_bins(bounds=(0, 10), bins=5)
    expected = [1, 1, 0, 0, 1]
    for values in (
        [1, 3, 9],
        (1.0, 3.0, 9.0),
        np.array([1, 3, 9], dtype=np.int32),
        pd.Series([1, 3, 9]),
        pl.Series([1, 3, 9]),
        pa.array([1, 3, 9]),
        pa.chunked_array([[1], [3, 9]]),
    ):
        assert bins.count(values)[0].tolist() == expected
    with pytest.raises(DataError):
        bins.count(pd.Series([1, None, 9], dtype="Int64"))
    assert bins.count(pl.Series([1, None, 9]), nan="drop")[0].tolist() == [1, 0, 0, 0, 1]
    assert bins.count(pa.array([1, None, 9]), nan="drop")[0].tolist() == [1, 0, 0, 0, 1]
    for bad, match in [
        ("abc", "scalar"),
        (5, "scalar"),
        (np.zeros((2, 2)), "one-dimensional"),
        ([True, False], "booleans"),
        (["a", "b"], "dtype"),
        (np.array([1, "x"], dtype=object), "other objects"),
        (np.array([1.0, np.datetime64("2024-01-01")], dtype=object), "mixes"),
        (pd.DataFrame({"a": [1]}), "DataFrame"),
    ]:
        with pytest.raises(InvalidTypeError, match=match):
            bins.count(bad)


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({}, InvalidParameterError, "never derives bins from the data"),
        ({"bounds": (0, 1)}, InvalidParameterError, "Public bins are required"),
        ({"bounds": (1, 1), "bins": 3}, InvalidParameterError, "lo < hi"),
        ({"bounds": (2, 1), "bins": 3}, InvalidParameterError, "lo < hi"),
        ({"bounds": (0, float("nan")), "bins": 3}, InvalidParameterError, "finite"),
        ({"bounds": (0, float("inf")), "bins": 3}, InvalidParameterError, "finite"),
        ({"bounds": (0,), "bins": 3}, InvalidParameterError, "pair"),
        ({"bounds": "0,1", "bins": 3}, InvalidTypeError, "pair"),
        ({"bounds": 1.0, "bins": 3}, InvalidTypeError, "pair"),
        ({"bounds": (0, "2024-01-01"), "bins": 3}, InvalidTypeError, "mixes"),
        ({"bounds": (0, 1), "bins": 0}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": -5}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": MAX_BINS + 1}, InvalidParameterError, "'bins'"),
        ({"bounds": (0, 1), "bins": 2.5}, InvalidTypeError, "'bins'"),
        ({"bounds": (0, 1), "bins": True}, InvalidTypeError, "'bins'"),
        ({"bounds": (0.5, 3), "bins": "integers"}, InvalidParameterError, "integer bounds"),
        ({"bounds": (1.0, 1.0 + 1e-12), "bins": 10**6}, InvalidParameterError, "float resolution"),
        # strictly increasing edges that rounding moved off equal spacing (found by hypothesis)
        (
            {"bounds": (524288.0, 524288.0 + 1e-6), "bins": 4296},
            InvalidParameterError,
            "float resolution",
        ),
        ({"edges": [0, 1, 1]}, InvalidParameterError, "strictly increasing"),
        ({"edges": [0]}, InvalidParameterError, "at least 2"),
        ({"edges": [0, np.nan, 2]}, InvalidParameterError, "finite"),
        ({"edges": [0, 1], "bins": 3}, InvalidParameterError, "not both"),
        ({"edges": ["a", "b"]}, InvalidTypeError, "edges"),
    ],
)
def test_bad_bins(kwargs: dict, err: type, match: str) -> None:
    with pytest.raises(err, match=match) as info:
        make_bins(**kwargs)
    assert type(info.value) is err


def test_round_trip_dict() -> None:
    for bins in (
        make_bins(bounds=(0, 1), bins=7),
        make_bins(edges=[0, 1, 5, 100]),
        make_bins(bounds=(3, 9), bins="integers"),
        make_bins(edges=np.array(["2024-01-01", "2024-03-01", "2025-01-01"], "datetime64[D]")),
    ):
        again = type(bins).from_dict(bins.to_dict())
        assert (again.edges == bins.edges).all()
        assert (again.discrete, again.equal_width, again.datetime_unit) == (
            bins.discrete,
            bins.equal_width,
            bins.datetime_unit,
        )


# ---------------------------------------------------------------- direct construction
def test_bins_constructed_directly_count_right() -> None:
    from treedp.domain import Bins

    bins = Bins(np.linspace(0, 10, 11), equal_width=True)
    assert bins._inv_width == pytest.approx(1.0)
    assert bins.count([0.5, 3.5, 7.5, 9.5])[0].tolist() == [1, 0, 0, 1, 0, 0, 0, 1, 0, 1]
    plain = Bins(np.linspace(0, 10, 11))
    assert np.array_equal(plain.count([0.5, 3.5, 7.5, 9.5])[0], bins.count([0.5, 3.5, 7.5, 9.5])[0])
    made = make_bins(bounds=(0, 10), bins=10)
    assert np.array_equal(made.edges, bins.edges) and made._inv_width == bins._inv_width
    source = np.array([0.0, 1.0, 4.0])
    copied = Bins(source)
    source[1] = 3.0
    assert copied.edges.tolist() == [0.0, 1.0, 4.0] and not copied.edges.flags.writeable
    ints = Bins(np.arange(-2, 4), discrete=True, equal_width=True)
    assert ints.count([-2, -1.5, 0, 3, 9])[0].tolist() == [2, 0, 1, 0, 2]
    dt = Bins(np.array([0, 10, 20]), datetime_unit="s")
    assert dt.count(np.array([5, 15, 25], dtype="datetime64[s]"))[0].tolist() == [1, 2]
    dt2 = Bins(np.array(["2024-01-01", "2024-01-02"], dtype="datetime64[D]"), datetime_unit="s")
    assert dt2.edges.tolist() == [1704067200, 1704153600]


@pytest.mark.parametrize(
    ("kwargs", "err", "match"),
    [
        ({"edges": [0.0, 1.0, 1.0]}, InvalidParameterError, "strictly increasing"),
        ({"edges": [[0.0, 1.0], [2.0, 3.0]]}, InvalidParameterError, "1-D"),
        ({"edges": [0.0]}, InvalidParameterError, "at least 2"),
        ({"edges": [0.0, np.inf]}, InvalidParameterError, "finite"),
        ({"edges": ["a", "b"]}, InvalidTypeError, "numbers"),
        (
            {"edges": np.array(["2024-01-01", "2024-01-02"], "datetime64[D]")},
            InvalidTypeError,
            "datetime_unit",
        ),
        ({"edges": [0.0, 1.0, 3.0], "equal_width": True}, InvalidParameterError, "equally"),
        ({"edges": [0.0, 1.0], "equal_width": 1}, InvalidTypeError, "'equal_width'"),
        ({"edges": [0.0, 1.0], "discrete": "yes"}, InvalidTypeError, "'discrete'"),
        ({"edges": [0.0, 2.0, 4.0], "discrete": True}, InvalidParameterError, "discrete"),
        ({"edges": [0.5, 1.5], "discrete": True}, InvalidParameterError, "discrete"),
        (
            {"edges": [0, 1], "datetime_unit": "s", "discrete": True},
            InvalidParameterError,
            "cannot be discrete",
        ),
        ({"edges": [0.5, 1.5], "datetime_unit": "s"}, InvalidTypeError, "ticks"),
        ({"edges": [0, 1], "datetime_unit": "fortnight"}, InvalidParameterError, "unit"),
        ({"edges": [0, 1], "datetime_unit": 5}, InvalidTypeError, "unit"),
        ({"edges": np.broadcast_to(0.0, (MAX_BINS + 2,))}, InvalidParameterError, "at most"),
    ],
)
def test_bins_constructor_validates(kwargs: dict, err: type, match: str) -> None:
    from treedp.domain import Bins

    with pytest.raises(err, match=match) as info:
        Bins(**kwargs)
    assert type(info.value) is err


def test_bins_round_trip_through_dict() -> None:
    from treedp.domain import Bins

    for bins in [
        make_bins(bounds=(0, 1), bins=7),
        make_bins(bounds=(-1e308, 1e308), bins=3),
        make_bins(bounds=(3, 9), bins="integers"),
        make_bins(edges=[0, 0.5, 4]),
        make_bins(bounds=("2024-01-01", "2024-02-01"), bins=5),
    ]:
        again = Bins.from_dict(bins.to_dict())
        assert np.array_equal(again.edges, bins.edges) and again.edges.dtype == bins.edges.dtype
        assert (again.discrete, again.equal_width, again.datetime_unit) == (
            bins.discrete,
            bins.equal_width,
            bins.datetime_unit,
        )
        assert again._inv_width == bins._inv_width


@pytest.mark.parametrize(
    ("bins", "err"),
    [
        (2.5, InvalidTypeError),
        (True, InvalidTypeError),
        (b"8", InvalidTypeError),
        ("8", InvalidParameterError),
        ("integer", InvalidParameterError),
        (None, None),
    ],
)
def test_bin_count_error_classes(bins: object, err: type | None) -> None:
    if err is None:
        with pytest.raises(InvalidParameterError) as info:
            make_bins(bounds=(0, 1), bins=bins)  # type: ignore[arg-type]
        assert type(info.value) is InvalidParameterError
        return
    with pytest.raises(err) as info2:
        make_bins(bounds=(0, 1), bins=bins)  # type: ignore[arg-type]
    assert type(info2.value) is err
    for value in (0, -1, MAX_BINS + 1):
        with pytest.raises(InvalidParameterError) as info3:
            make_bins(bounds=(0, 1), bins=value)
        assert type(info3.value) is InvalidParameterError


# ---------------------------------------------------------------- locate
def _today_count_below_terms(bins, t):  # type: ignore[no-untyped-def]
    """Release._count_below / _terms_below as written before Bins.locate (the pin)."""
    edges, n_bins = bins.edges, bins.n_bins
    if bins.discrete:
        idx = np.clip(np.ceil(t) - edges[0], 0, n_bins).astype(np.int64)
        return idx, np.zeros(np.shape(t))
    j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins - 1)
    width = (edges[j + 1] - edges[j]).astype(np.float64)
    with np.errstate(invalid="ignore"):
        frac = np.clip((t - edges[j]).astype(np.float64) / width, 0.0, 1.0)
    return j, frac


def _today_interval_locate(bins, t):  # type: ignore[no-untyped-def]
    """Release._interval_range's locate as written before Bins.locate (the pin)."""
    edges, n_bins = bins.edges, bins.n_bins
    j = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n_bins)
    inner = np.minimum(j, n_bins - 1)
    with np.errstate(invalid="ignore"):
        f = np.clip((t - edges[inner]) / (edges[inner + 1] - edges[inner]), 0.0, 1.0)
    return j, np.where(j == n_bins, 0.0, f)


def _probes(bins) -> np.ndarray:  # type: ignore[no-untyped-def]
    e = bins.edges.astype(np.float64)
    rng = np.random.default_rng(bins.n_bins)
    lo, hi = e[0], e[-1]
    return np.concatenate(
        [
            e,
            np.nextafter(e, -np.inf),
            np.nextafter(e, np.inf),
            (e[:-1] + e[1:]) / 2,
            e[:-1] + 0.25 * np.diff(e),
            lo + (hi - lo) * rng.uniform(-0.2, 1.2, 400),
            [-np.inf, np.inf, -1e300, 1e300, -0.0, 0.0],
        ]
    )


LOCATE_BINS = [
    make_bins(bounds=(0, 1), bins=10),
    make_bins(bounds=(-3.5, 100), bins=37),
    make_bins(edges=[-2.0, 0.0, 1e-9, 3.0, 1e6]),
    make_bins(bounds=(-5, 20), bins="integers"),
    make_bins(bounds=(0, 0), bins="integers"),
    make_bins(bounds=(0, 1), bins=1),
]


@pytest.mark.parametrize(
    "bins", LOCATE_BINS, ids=lambda b: f"B{b.n_bins}{'d' if b.discrete else ''}"
)
def test_locate_matches_todays_queries(bins) -> None:  # type: ignore[no-untyped-def]
    t = _probes(bins)
    j, f = bins.locate(t)
    assert j.dtype == np.int64 and f.dtype == np.float64 and j.shape == f.shape == t.shape
    assert ((j >= 0) & (j <= bins.n_bins)).all() and ((f >= 0) & (f <= 1)).all()
    assert (f[j == bins.n_bins] == 0).all()
    top = bins.edges[-1]
    assert ((j == bins.n_bins) == (t >= top)).all()
    ref_j, ref_f = _today_count_below_terms(bins, t)
    if bins.discrete:
        assert np.array_equal(j + f, ref_j)  # position ceil(t) - lo, clamped
        assert set(np.unique(f)) <= {0.0, 1.0}
        assert ((f == 1) == ((t != np.floor(t)) & (t > bins.edges[0]) & (t < top))).all()
    else:
        # today's count-below terms: the same bin and fraction, or (B-1, 1) where j == B
        at_top = j == bins.n_bins
        assert np.array_equal(np.where(at_top, bins.n_bins - 1, j), ref_j)
        assert np.array_equal(np.where(at_top, 1.0, f), ref_f)
        assert (t[at_top] >= top).all()
        ij, i_f = _today_interval_locate(bins, t)
        assert np.array_equal(j, ij) and np.array_equal(f, i_f)


@pytest.mark.parametrize(
    "bins", LOCATE_BINS, ids=lambda b: f"B{b.n_bins}{'d' if b.discrete else ''}"
)
def test_locate_reproduces_release_answers(bins) -> None:  # type: ignore[no-untyped-def]
    import treedp

    rng = np.random.default_rng(4)
    lo, hi = float(bins.edges[0]), float(bins.edges[-1])
    values = rng.uniform(lo - 1, hi + 1, 300)
    rel = treedp.release_cdf(
        values,
        bounds=(int(lo), int(hi) - 1) if bins.discrete else None,
        bins="integers" if bins.discrete else bins.edges,
        epsilon=1.0,
        mechanism="histogram",
        postprocess="none",
        rng=treedp.InsecureSeededSource(9),
    )
    t = _probes(bins)
    p = np.asarray(rel.prefix_counts, dtype=np.float64)
    n_bins = bins.n_bins

    def below(x: np.ndarray) -> np.ndarray:
        j, f = bins.locate(x)
        inner = np.minimum(j, n_bins - 1)
        return np.where(j == n_bins, p[n_bins], p[inner] + f * (p[inner + 1] - p[inner]))

    query = np.floor(t) + 1 if bins.discrete else t  # cdf: <= x is < floor(x) + 1 on integers
    finite = np.isfinite(query)
    np.testing.assert_allclose(
        below(query[finite]), rel.cdf(t[finite]), rtol=1e-12, atol=1e-9 * (1 + np.abs(p).max())
    )
    a, b = np.sort(rng.choice(t[np.isfinite(t)], (2, 200)), axis=0)
    np.testing.assert_allclose(
        below(b) - below(a), rel.range_count(a, b), rtol=1e-12, atol=1e-9 * (1 + np.abs(p).max())
    )


def test_locate_datetimes_and_validation() -> None:
    bins = make_bins(bounds=("2024-01-01", "2024-01-05"), bins=4)
    x = np.array(
        ["2023-12-31", "2024-01-01", "2024-01-02T06", "2024-01-04T23:59:59", "2024-01-05", "2030"],
        dtype="datetime64[s]",
    )
    j, f = bins.locate(x)
    assert j.tolist() == [0, 0, 1, 3, 4, 4]
    np.testing.assert_allclose(f, [0, 0, 0.25, 86399 / 86400, 0, 0])
    ij, i_f = _today_interval_locate(bins, bins.to_axis(x, "x"))
    assert np.array_equal(j, ij) and np.array_equal(f, i_f)
    j2, f2 = bins.locate(np.datetime64("2024-01-03T12", "h"))
    assert int(j2) == 2 and float(f2) == 0.5
    with pytest.raises(InvalidTypeError):
        bins.locate([1.0])
    with pytest.raises(InvalidParameterError, match="NaN"):
        make_bins(bounds=(0, 1), bins=2).locate([0.5, np.nan])
    with pytest.raises(InvalidTypeError):
        make_bins(bounds=(0, 1), bins=2).locate(np.array(["2024-01-01"], "datetime64[D]"))


@pytest.mark.parametrize(
    ("lo", "hi", "n_bins"),
    [
        (0.0, 2e6, 2**20),
        (-5.0, 7.5, 1000),
        (1e15, 1e15 + 2**30, 2**20),
        (-1e300, 1e300, 7),
        (17.0, 90.5, 3),
        (1e-300, 2e-300, 10),
        (0.1, 0.1 + 2**-30, 2**20),  # near the float resolution: validated by the scans
    ],
)
def test_make_bins_fast_path_equals_full_validation(lo: float, hi: float, n_bins: int) -> None:
    """Edges make_bins proves valid (skipping the O(B) scans) are exactly what validation gives."""
    fast = make_bins(bounds=(lo, hi), bins=n_bins)
    checked = Bins(fast.edges.copy(), equal_width=True)
    assert np.array_equal(fast.edges, checked.edges)
    assert fast._inv_width == checked._inv_width
    assert not fast.edges.flags.writeable
    assert fast.equal_width and not fast.discrete and fast.datetime_unit is None


@pytest.mark.parametrize(("hi", "n_bins"), [(365, 365), (100, 100), (3650, 365), (10**6, 1024)])
def test_bins_of_whole_integers_have_integer_edges(hi: int, n_bins: int) -> None:
    """Integer bounds whose bin width is a whole number get exact integer edges, so every
    integer lands in the bin it starts: ``lo + w·(j/B)·…`` put 19 of the 365 edges of
    ``(0, 365)`` a hair above their integer, and a value on such an edge was counted one bin
    low."""
    bins = make_bins(bounds=(0, hi), bins=n_bins)
    step = hi // n_bins if hi % n_bins == 0 else None
    if step is None:  # not whole: the interpolated edges, unchanged
        assert bins.edges[0] == 0 and bins.edges[-1] == hi
        return
    assert np.array_equal(bins.edges, step * np.arange(n_bins + 1.0))
    counts, _ = bins.count(step * np.arange(n_bins, dtype=np.float64))
    assert counts.tolist() == [1] * n_bins
