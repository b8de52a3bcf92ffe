"""Grouped counting, contribution bounding, and the sensitivity of bounded grouped trees."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp.engines.grouped import (
    GroupedCounts,
    bin_index,
    count_grouped,
    count_grouped_codes,
    encode_keys,
)
from treedp.engines.keys import check_keys
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError
from treedp.privacy.contribution import ContributionBounds, bound_contributions
from treedp.tree import shape_for


def _naive(values, groups, keys, bins):
    out = np.zeros((len(keys), bins.n_bins), dtype=np.int64)
    for v, g in zip(values, groups, strict=True):
        if g in keys:
            j = min(max(int(np.searchsorted(bins.edges, v, side="right")) - 1, 0), bins.n_bins - 1)
            out[keys.index(g), j] += 1
    return out


def test_counts_match_a_naive_loop_and_drop_unlisted_keys() -> None:
    rng = np.random.default_rng(TEST_SEED)
    bins = make_bins(bounds=(0, 10), bins=7)
    values = rng.uniform(-3, 13, 500)
    groups = rng.choice(["a", "b", "c", "z"], 500)
    keys = ("a", "b", "c", "q")
    got = count_grouped(values, [groups], keys, bins)
    assert np.array_equal(got.counts, _naive(values, groups, keys, bins))
    assert got.dropped == int((groups == "z").sum())
    assert got.counts[3].sum() == 0  # a listed key without records: a zero row


def test_counts_are_additive_over_chunks() -> None:
    rng = np.random.default_rng(TEST_SEED + 1)
    bins = make_bins(bounds=(0, 1), bins=16)
    values = rng.uniform(size=1000)
    groups = rng.integers(0, 6, 1000)
    keys = (0, 1, 2, 3, 4)
    whole = count_grouped(values, [groups], keys, bins)
    parts = [
        count_grouped(v, [g], keys, bins)
        for v, g in zip(np.array_split(values, 7), np.array_split(groups, 7), strict=True)
    ]
    assert GroupedCounts.sum(parts) == whole
    assert sum(parts, GroupedCounts.zero(keys, 16)) == whole
    assert whole[2].counts.sum() == int((groups == 2).sum())


def test_several_by_columns() -> None:
    a = np.array(["x", "x", "y", "y", "y", "z"])
    b = np.array([1, 2, 1, 2, 2, 1])
    keys = check_keys([("x", 1), ("y", 2), ("y", 3)], 2)
    codes = encode_keys([a, b], keys)
    assert codes.tolist() == [0, -1, -1, 1, 1, -1]


def test_missing_keys_follow_the_nan_policy() -> None:
    groups = np.array(["a", None, "b"], dtype=object)
    with pytest.raises(DataError) as exc:
        encode_keys([groups], ("a", "b"))
    assert not any(ch.isdigit() for ch in str(exc.value))
    assert encode_keys([groups], ("a", "b"), "drop").tolist() == [0, -1, 1]
    floats = np.array([1.0, np.nan])
    assert encode_keys([floats], (1.0,), "drop").tolist() == [0, -1]


@pytest.mark.parametrize(
    ("keys", "error"),
    [
        (["a", "a"], InvalidParameterError),
        (["a", None], InvalidParameterError),
        ([1, float("nan")], InvalidParameterError),
        ([], InvalidParameterError),
        ("ab", InvalidTypeError),
        ([object()], InvalidTypeError),
        ([1, 1.0], InvalidParameterError),
    ],
)
def test_bad_keys(keys, error) -> None:
    with pytest.raises(error):
        check_keys(keys, 1)


def test_bin_index_is_the_bin_rule() -> None:
    bins = make_bins(bounds=(0, 4), bins=4)
    x = np.array([-1.0, 0.0, 0.999, 1.0, 3.5, 4.0, np.inf, -np.inf])
    assert bin_index(x, bins).tolist() == [0, 0, 0, 1, 3, 3, 3, 0]
    with pytest.raises(DataError):
        bin_index(np.array([np.nan]), bins)
    assert bin_index(np.array([np.nan, 1.5]), bins, "drop").tolist() == [-1, 1]


@pytest.mark.parametrize(
    ("bounds", "n_bins"), [((3.7, 91.3), 4096), ((0.1, 0.7), 1000), ((0.0, 1.0), 64)]
)
def test_bin_index_at_and_around_every_edge(
    bounds: tuple[float, float], n_bins: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every edge and the floats one and two ulps either side, values beyond the bounds and
    NaN, over several chunks and in fewer values than bins: the bin of each is the bin rule
    (the number of inner edges at or below it), with only the values next to an edge
    compared with the edges where the arithmetic is not exact; a zero slack misplaces some."""
    from treedp.engines import edge_exactness, equal_width, grouped_bins

    monkeypatch.setattr(grouped_bins, "CHUNK", 1000)
    bins = make_bins(bounds=bounds, bins=n_bins)
    e = bins.edges
    near = np.concatenate([e, *(np.nextafter(e, d) for d in (-np.inf, np.inf))])
    near = np.concatenate([np.nextafter(near, -np.inf), near, np.nextafter(near, np.inf)])
    far = np.array([-np.inf, np.inf, -1e308, 1e308, e[0] - 1.0, e[-1] + 1.0, np.nan])
    rng = np.random.default_rng(TEST_SEED + 9)
    values = rng.permutation(np.concatenate([near, far, far]))

    def want(v: np.ndarray) -> list[int]:
        out = np.searchsorted(e[1:-1], v, side="right")
        return np.where(np.isnan(v), -1, out).tolist()

    assert bin_index(values, bins, "drop").tolist() == want(values)
    few = values[: n_bins // 2]
    edge_exactness._SLACK_CACHE.clear()
    edge_exactness._EXACT_CACHE.clear()
    assert bin_index(few, bins, "drop").tolist() == want(few)
    if not edge_exactness._arithmetic_is_exact(e, bins._inv_width):
        monkeypatch.setattr(equal_width, "_edge_slack", lambda *a, **k: 0.0)
        assert bin_index(values, bins, "drop").tolist() != want(values)


# ---------------------------------------------------------------------------- bounding
BOUNDS = [
    (3, None, None),
    (None, 2, 2),
    (4, 2, 3),
    (5, 3, 1),
    (2, 3, 3),
    (6, 2, 2),
]


@pytest.mark.parametrize(("m", "g", "c"), BOUNDS)
def test_bounding_keeps_every_person_within_the_bounds(m, g, c) -> None:
    rng = np.random.default_rng(TEST_SEED + 2)
    n = 4000
    person = rng.integers(0, 200, n)
    group = rng.integers(0, 6, n)
    b = ContributionBounds.from_parameters("id", m, g, c)
    kept = bound_contributions(person, group, b, InsecureSeededSource(TEST_SEED))
    assert np.all(np.diff(kept) > 0)
    p, gr = person[kept], group[kept]
    for who in np.unique(person):
        mine = gr[p == who]
        assert mine.size <= b.max_contributions
        assert np.unique(mine).size <= b.max_groups
        if mine.size:
            assert np.bincount(mine).max() <= b.max_contributions_per_group
        # nothing more is dropped than the bounds require: groups are sampled (uniformly),
        # then every chosen group keeps min(rows, c), then at most m rows overall
        all_mine = group[person == who]
        chosen = np.unique(mine)
        assert chosen.size == min(b.max_groups, np.unique(all_mine).size) or (
            mine.size == b.max_contributions
        )
        per = np.minimum(np.bincount(all_mine)[chosen], b.max_contributions_per_group)
        assert mine.size == min(b.max_contributions, int(per.sum()))


def test_bounding_samples_uniformly() -> None:
    """A person with 5 rows and m = 2 keeps each row with probability 2/5 (chi-square)."""
    runs = 4000
    source = InsecureSeededSource(TEST_SEED + 3)
    person = np.repeat(np.arange(runs), 5)
    b = ContributionBounds.from_parameters("id", 2, grouped=False)
    kept = bound_contributions(person, None, b, source)
    slot = np.bincount(kept % 5, minlength=5)
    assert slot.sum() == 2 * runs
    p = stats.chisquare(slot).pvalue
    assert p > ALPHA


def test_bounds_validation() -> None:
    with pytest.raises(InvalidParameterError):
        ContributionBounds.from_parameters(None, 3)
    with pytest.raises(InvalidParameterError):
        ContributionBounds.from_parameters("id", None, 2, None)
    with pytest.raises(InvalidParameterError):
        ContributionBounds.from_parameters("id", 0)
    with pytest.raises(InvalidTypeError):
        ContributionBounds.from_parameters("id", 2.0)
    with pytest.raises(InvalidTypeError):
        ContributionBounds.from_parameters("id", True)
    with pytest.raises(InvalidParameterError):
        ContributionBounds.from_parameters("id", 3, 2, None, grouped=False)
    assert ContributionBounds.from_parameters(None).l1 == 1


# ---------------------------------------------------------------------------- sensitivity
def _person_configurations(n_groups, n_bins, b: ContributionBounds):
    """Every multiset of (group, bin) rows one person can keep under the bounds."""
    cells = [(gg, j) for gg in range(n_groups) for j in range(n_bins)]
    for size in range(1, b.max_contributions + 1):
        for rows in itertools.combinations_with_replacement(cells, size):
            groups = [gg for gg, _ in rows]
            if len(set(groups)) > b.max_groups:
                continue
            if max(groups.count(gg) for gg in set(groups)) > b.max_contributions_per_group:
                continue
            yield rows


@pytest.mark.parametrize(("m", "g", "c"), [(3, None, None), (4, 2, 3), (3, 3, 1), (5, 2, 2)])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_brute_force_sensitivity(m, g, c, neighbours) -> None:
    """Largest change of every tree level over all groups equals the stated L1 / L2."""
    n_groups, n_bins = 3, 4
    shape = shape_for(n_bins, 2)
    b = ContributionBounds.from_parameters("id", m, g, c)
    rng = np.random.default_rng(TEST_SEED + 4)
    base = rng.integers(0, 3, (n_groups, n_bins))  # other persons' (bounded) rows

    def levels(counts):
        per_group = [shape.aggregate(row) for row in counts]
        return [np.concatenate([lv[i] for lv in per_group]) for i in range(len(per_group[0]))]

    def with_rows(rows, sign=1):
        out = base.copy()
        for gg, j in rows:
            out[gg, j] += sign
        return out

    configs = list(_person_configurations(n_groups, n_bins, b))
    ref = levels(base)
    worst_l1, worst_l2 = 0, 0.0
    if neighbours == "add_remove":
        pairs = [(ref, levels(with_rows(rows))) for rows in configs]
    else:  # replace one person's rows by another's: remove ``old``, add ``new``
        sample = configs if len(configs) < 60 else [configs[i] for i in range(0, len(configs), 7)]
        pairs = [
            (levels(with_rows(old)), levels(with_rows(new))) for old in sample for new in sample
        ]
    for a, a2 in pairs:
        for x, y in zip(a, a2, strict=True):
            d = (y - x).astype(np.float64)
            worst_l1 = max(worst_l1, int(np.abs(d).sum()))
            worst_l2 = max(worst_l2, float(np.sqrt((d * d).sum())))
    l1, l2 = b.sensitivity(neighbours)
    assert worst_l1 <= l1 and worst_l2 <= l2 + 1e-12
    if neighbours == "add_remove":  # attained exactly
        assert worst_l1 == l1 and math.isclose(worst_l2, l2)
    else:  # attained when the configurations are enumerated in full
        if len(configs) < 60:
            assert worst_l1 == l1


def test_counting_kernel_handles_empty_input() -> None:
    out = count_grouped_codes(np.zeros(0, np.int64), np.zeros(0, np.int64), ("a",), 3)
    assert out.counts.tolist() == [[0, 0, 0]] and out.dropped == 0


@pytest.mark.parametrize("bounds", [(0.0, 1.0), (-3.3, 7.1), (17, 90)])
def test_bin_index_agrees_with_the_counting_engine(bounds) -> None:
    from treedp.engines import count_chunk

    rng = np.random.default_rng(TEST_SEED + 5)
    bins = make_bins(bounds=bounds, bins=37)
    lo, hi = bounds
    x = np.concatenate([rng.uniform(lo - 1, hi + 1, 20000), bins.edges, [np.inf, -np.inf, 1e308]])
    idx = bin_index(x, bins)
    assert np.array_equal(np.bincount(idx, minlength=37), count_chunk(x, bins).counts)


def test_integer_keys_by_table_and_by_search_agree() -> None:
    rng = np.random.default_rng(TEST_SEED + 6)
    col = rng.integers(-5, 30, 5000)
    keys = (3, -5, 17, 29, 100)
    got = encode_keys([col], keys)
    expect = np.array([keys.index(v) if v in keys else -1 for v in col.tolist()])
    assert np.array_equal(got, expect)
    floats = col.astype(np.float64)
    assert np.array_equal(encode_keys([floats], keys), expect)
    wide = (3, -5, 17, 29, 10**12)  # range too wide for a table: binary search
    assert np.array_equal(encode_keys([col], wide), expect)


@pytest.mark.parametrize(
    "spec",
    [
        {"bounds": (0, 1024), "bins": "integers"},
        {"bounds": (-3.3, 7.7), "bins": 13},
        {"bounds": (0, 1000), "bins": 7},
        {"bounds": (0.5, 0.75), "bins": 3},
        {"bounds": (-1e6, 1e6), "bins": 1000},
    ],
)
def test_integer_values_by_table_are_the_float_rule(spec) -> None:
    """Integer values go through a lookup table over the edges' integer range (clamped ends):
    the same bins as the float rule, for every integer dtype, the dtypes' extremes and values
    beyond 2^53 (which the float rule rounds)."""
    from treedp.engines.grouped_bins import _integer_table, _locate

    rng = np.random.default_rng(TEST_SEED + 7)
    bins = make_bins(**spec)
    lo, hi = int(bins.edges[0]), int(bins.edges[-1])
    assert _integer_table(bins, 10**7) is not None
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32):
        info = np.iinfo(dtype)
        inside = rng.integers(max(info.min, lo - 5), min(info.max, hi + 5) + 1, 3000)
        x = np.concatenate([inside, [info.min, info.max, 0]] * 700).astype(dtype)
        assert np.array_equal(bin_index(x, bins), _locate(x.astype(np.float64), bins)), dtype
    big = np.array([-(2**63), 2**63 - 1, 2**53 + 1, -(2**53) - 1] * 10**6, dtype=np.int64)
    assert np.array_equal(bin_index(big, bins), _locate(big.astype(np.float64), bins))


def test_the_integer_table_is_skipped_when_wider_than_the_rows_or_the_limit() -> None:
    from treedp.engines.grouped_bins import _integer_table

    bins = make_bins(bounds=(0, 1024), bins="integers")
    assert _integer_table(bins, 500) is None  # a table larger than the data
    assert _integer_table(make_bins(bounds=(0, 2**30), bins=8), 2**40) is None
    assert _integer_table(make_bins(bounds=(2.0**52, 2.0**52 + 8), bins=8), 2**40) is None


def test_encoded_keys_are_one_lookup_with_missing_as_minus_one() -> None:
    from treedp._codes import Encoded

    col = Encoded(np.array([0, 2, -1, 1, 2, 0]), np.array(["a", "b", "c"], dtype=object))
    assert encode_keys([col], ("c", "a"), "drop").tolist() == [1, 0, -1, -1, 0, 1]
    with pytest.raises(DataError):
        encode_keys([col], ("c", "a"), "error")


def test_float32_axis_is_located_in_binary64() -> None:
    """A float32 axis is indexed in binary64 (the bound ``0.1`` rounded to float32 moved
    values here by more than the one bin the edge correction repairs)."""
    from treedp.engines.grouped_bins import _locate

    bins = make_bins(bounds=(0.1, 0.1 + 1e-6), bins=1000)
    x = np.float32(0.1) + np.arange(-200, 200, dtype=np.float32) * np.spacing(np.float32(0.1))
    want = np.clip(np.searchsorted(bins.edges, x.astype(np.float64), side="right") - 1, 0, 999)
    assert np.array_equal(_locate(x, bins), want)


def test_a_key_means_the_same_whatever_the_other_keys() -> None:
    """Ints and floats in one key list are looked up apart: each as numpy compares it alone
    (one float64 array of both made ``2**53 + 1`` a float, matching ``2**53`` too; a review)."""
    from treedp.engines.grouped import _codes_for

    big = 2**53
    data = np.array([big, big + 1, big + 2, 7], dtype=np.int64)
    assert _codes_for(data, [big + 1]).tolist() == [-1, 0, -1, -1]
    assert _codes_for(data, [big + 1, 0.5]).tolist() == [-1, 0, -1, -1]
    assert _codes_for(data, [float(big), 7]).tolist() == [0, 0, -1, 1]
    assert _codes_for(data, [7, float(big)]).tolist() == [1, 1, -1, 0]
    floats = data.astype(np.float64)  # numpy: an int key on float data is a float
    assert _codes_for(floats, [big + 1, 0.5]).tolist() == [0, 0, -1, -1]
