"""Per-person sampling: exact, full 64-bit words whatever the table's size, uniform subsets.

Round 3: the random field packed next to the codes was ``62 − Σ widths`` bits, with widths from
the number of rows, so a person's chance of a tie (and with it which of their rows are kept)
depended on everyone else's row count. A source whose words differ only in their lowest bits
tells the two apart: with the full words the lowest bits decide; with a truncated field every
priority ties and the input order would decide.

Session 7: each word is drawn in two parts, its top 8 bits for every row and its low 56 bits
for the rows that can be among their person's lowest (the candidates) only, and the rows are
sorted by value (codes, top bits and position packed in one uint64) instead of a stable
argsort. The exactness tests below compare with a full sort of every row by (person, word,
row) given the same words; seeded outputs changed with the draw order (CHANGELOG).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp.privacy import contribution
from treedp.privacy.contribution import ContributionBounds, bound_contributions

_LO = contribution._LO
_MASK = np.uint64((1 << _LO) - 1)


class _LowBitsSource:
    """Words whose top 8 bits are all zero and whose low bits decrease by row: the calls
    alternate between the words' top parts (zeros) and their low parts (``n, n − 1, …, 1``,
    seven bytes each), as :func:`treedp.privacy.contribution._lowest` draws them."""

    seeded = True

    def __init__(self) -> None:
        self.calls = 0

    def random_bytes(self, n: int) -> bytes:
        self.calls += 1
        if self.calls % 2:
            return bytes(n)
        count = n // 7
        low = np.arange(count, 0, -1, dtype="<u8").view(np.uint8).reshape(count, 8)
        return low[:, :7].tobytes()

    def describe(self) -> dict[str, object]:
        return {"source": "test", "seeded": True}


@pytest.mark.parametrize("rows", [10, 1000, 300_000])
def test_the_lowest_priority_bits_decide_at_every_table_size(rows: int) -> None:
    person = np.zeros(rows, dtype=np.int64)  # one person holds every row
    person[rows // 2 :] = 1  # two persons, to exercise runs
    bounds = ContributionBounds.from_parameters("p", 3, None, None, grouped=False)
    kept = bound_contributions(person, None, bounds, _LowBitsSource())
    # priorities decrease with the row: each person keeps their last three rows
    half = rows // 2
    assert kept.tolist() == [half - 3, half - 2, half - 1, rows - 3, rows - 2, rows - 1]


def test_the_grouped_steps_read_full_words_too() -> None:
    rows = 4000
    person = np.repeat(np.arange(2), rows // 2)
    group = np.tile(np.arange(4), rows // 4)
    bounds = ContributionBounds.from_parameters("p", 2, 4, 1, grouped=True)
    kept = bound_contributions(person, group, bounds, _LowBitsSource(), n_groups=4)
    assert kept.size == 4
    # per (person, group) the last row wins; then the two last of those four per person
    assert kept.tolist() == [rows // 2 - 2, rows // 2 - 1, rows - 2, rows - 1]


@pytest.mark.parametrize("bounds", [(50, 3), (2**31, 2**31), (2**40, 2**22)])
def test_the_packed_sort_is_the_order_by_codes_and_whole_words(bounds: tuple[int, int]) -> None:
    """The fast path (codes, the words' top bits and the position packed and sorted by value,
    ties put in the order of the whole words) gives exactly the lexsort by (codes, 64-bit
    word), also when only one random bit fits next to the codes and most packed keys tie."""
    from treedp.noise import InsecureSeededSource
    from treedp.privacy.contribution import _order, _priorities

    rng = np.random.default_rng(1)
    person, group = rng.integers(0, 50, 20_000), rng.integers(0, 3, 20_000)
    codes = [(person, bounds[0]), (group, bounds[1])]
    words = _priorities(InsecureSeededSource(5), person.size)
    expected = np.lexsort((words, group, person))
    assert np.array_equal(_order(codes, InsecureSeededSource(5)), expected)
    assert np.array_equal(_order(codes, None), np.lexsort((group, person)))  # stable


# ---------------------------------------------------------------------- linear per-person step
def _full_sort(codes: np.ndarray, k: int, words: np.ndarray) -> np.ndarray:
    """The reference: every row sorted by (person, word, row); each person's first ``k``."""
    order = np.lexsort((words, codes))
    ordered = codes[order]
    start = np.r_[True, ordered[1:] != ordered[:-1]]
    rank = np.empty(codes.size, dtype=np.int64)
    rank[order] = np.arange(codes.size) - np.flatnonzero(start)[np.cumsum(start) - 1]
    kept: np.ndarray = rank < k
    return kept


def _given(impl: object, codes: np.ndarray, k: int, words: np.ndarray) -> np.ndarray:
    """``impl`` (a ``_lowest_of``) fed the parts of the given 64-bit ``words``."""
    return impl(  # type: ignore[operator, no-any-return]
        codes, k, lambda n: words[:n] >> np.uint64(_LO), lambda rows: words[rows] & _MASK
    )


def _check_lowest(impl: object, trials: int = 60) -> None:
    """``impl`` keeps exactly the rows of the full sort for the same words: persons of every
    size around ``k``, random words, words with few distinct values (forced ties), and words
    equal in their top bits (every row a candidate)."""
    rng = np.random.default_rng(29)
    for t in range(trials):
        k = int(rng.integers(1, 60))
        persons = int(rng.integers(1, 40))
        sizes = rng.integers(0, 8 * k, persons)
        codes = np.repeat(np.arange(persons), sizes)
        rng.shuffle(codes)
        n = codes.size
        if n == 0:
            continue
        words = rng.integers(0, 2**64, n, dtype=np.uint64)
        if t % 3 == 1:
            words = rng.integers(0, 4, n).astype(np.uint64) << np.uint64(62)
        elif t % 3 == 2:
            words &= np.uint64(0x00FF_FFFF_0000_000F)
        got = _given(impl, codes, k, words)
        assert np.array_equal(got, _full_sort(codes, k, words)), (t, k)
        assert np.bincount(codes[got], minlength=persons).tolist() == np.minimum(sizes, k).tolist()


def test_the_linear_step_keeps_exactly_the_rows_of_the_full_sort() -> None:
    """Exact (no false failures): the rows a sort of every row by (person, word, row) keeps,
    so the sampling law is that of independent uniform 64-bit words per row (a uniform
    ``min(r, k)``-subset of each person's ``r`` rows, up to ties of whole words)."""
    _check_lowest(contribution._lowest_of)


def test_the_exactness_check_catches_a_threshold_without_its_fallback() -> None:
    """Mutant: candidates only below a threshold of ``k/r`` (no margin, no fallback) keep
    fewer than ``k`` rows of some persons; the check above must fail on it."""

    def mutant(codes: np.ndarray, k: int, high: object, low: object) -> np.ndarray:
        words = (high(codes.size).astype(np.uint64) << np.uint64(_LO)) | low(  # type: ignore[operator]
            np.arange(codes.size)
        )
        sizes = np.bincount(codes)
        limit = (np.minimum(1.0, k / np.maximum(sizes, 1)) * 2.0**63 * 1.999).astype(np.uint64)
        kept: np.ndarray = (sizes[codes] <= k) | (words < limit[codes])
        return kept

    with pytest.raises(AssertionError):
        _check_lowest(mutant)


def test_the_drawn_words_are_one_byte_per_row_then_seven_per_candidate() -> None:
    """``_lowest`` draws the top byte of every row's word, then seven bytes per candidate,
    and nothing when no person is over the bound."""

    class _Counting:
        seeded = True

        def __init__(self) -> None:
            self.asked: list[int] = []
            self.rng = np.random.default_rng(3)

        def random_bytes(self, n: int) -> bytes:
            self.asked.append(n)
            return self.rng.bytes(n)

        def describe(self) -> dict[str, object]:
            return {"source": "test", "seeded": True}

    codes = np.repeat(np.arange(3), [5, 400, 2])
    source = _Counting()
    kept = contribution._lowest(codes, 5, source)  # type: ignore[arg-type]
    assert source.asked[0] == codes.size and source.asked[1] % 7 == 0
    assert 5 * 7 <= source.asked[1] < 400 * 7 and len(source.asked) == 2
    assert np.bincount(codes[kept]).tolist() == [5, 5, 2]
    quiet = _Counting()
    assert contribution._lowest(codes, 400, quiet).all() and quiet.asked == []  # type: ignore[arg-type]


# ---------------------------------------------------------------------- uniform subsets
_LAWS = [(6, 2, 3000), (30, 2, 12_000), (200, 1, 5000)]  # rows per person, k, persons


def _subset_pvalue(rows: int, k: int, persons: int, seed: int) -> float:
    """Chi-square p-value of the kept subsets against the uniform law on the
    ``C(rows, k)`` subsets, each person's rows interleaved with the others' in the table."""
    from treedp import InsecureSeededSource

    codes = np.tile(np.arange(persons), rows)  # row i: person i % persons, slot i // persons
    kept = np.flatnonzero(contribution._lowest(codes, k, InsecureSeededSource(seed)))
    slots = (kept // persons).reshape(-1)[np.argsort(kept % persons, kind="stable")]
    slots = slots.reshape(persons, k)  # each person's kept slots, increasing
    index = {c: i for i, c in enumerate(itertools.combinations(range(rows), k))}
    cells = np.fromiter((index[tuple(s)] for s in slots.tolist()), dtype=np.int64)
    observed = np.bincount(cells, minlength=math.comb(rows, k))
    return float(stats.chisquare(observed).pvalue)


@pytest.mark.parametrize(("rows", "k", "persons"), _LAWS)
def test_each_person_keeps_a_uniform_subset(rows: int, k: int, persons: int) -> None:
    """False-failure rate ``ALPHA`` per case (fixed seed): every ``k``-subset of a person's
    rows is kept equally often, with every row a candidate (6 rows), through the threshold
    (30 and 200 rows); each cell expects at least 25 persons."""
    assert persons / math.comb(rows, k) >= 25
    assert _subset_pvalue(rows, k, persons, TEST_SEED) > ALPHA


@pytest.mark.parametrize(
    ("mutant", "rows", "k", "persons"),
    [("row order", *_LAWS[1]), ("row order", *_LAWS[2]), ("top byte only", *_LAWS[2])],
)
def test_the_uniformity_check_catches_a_biased_order(
    mutant: str, rows: int, k: int, persons: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutants of the candidates' order: by row instead of by word (the first candidates
    win), and by the words' top byte only (ties to the earlier row: seen where a person's
    candidates share few top-byte values, 200 rows and ``k = 1``); the check must fail."""
    real = contribution._order

    def biased(codes: list, source: object, prio: np.ndarray | None = None) -> np.ndarray:  # type: ignore[type-arg]
        if prio is not None:
            prio = None if mutant == "row order" else prio >> np.uint64(_LO) << np.uint64(_LO)
        return real(codes, None, prio)  # type: ignore[arg-type]

    monkeypatch.setattr(contribution, "_order", biased)
    assert _subset_pvalue(rows, k, persons, TEST_SEED) < ALPHA


def test_seeded_bounding_is_unchanged_by_string_ids() -> None:
    """String ids and their integer codes in value order give the same kept rows (one
    encoding, no sort of the rows)."""
    from treedp import InsecureSeededSource

    rng = np.random.default_rng(5)
    codes = rng.integers(0, 300, 20_000)
    names = np.array([f"N{c:05d}" for c in codes], dtype=object)
    group = rng.integers(0, 4, codes.size)
    for m, g, c in [(5, None, None), (6, 2, 2), (10, 3, 1)]:
        b = ContributionBounds.from_parameters("p", m, g, c)
        a = bound_contributions(codes, group, b, InsecureSeededSource(1), 4)
        s = bound_contributions(names, group, b, InsecureSeededSource(1), 4)
        assert np.array_equal(a, s)


class _TopZero:
    """Seeded words whose top parts are zero (every row of a person over the bound is then a
    candidate), so that a full sort can draw the same low parts in the same order."""

    seeded = True

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.calls = 0

    def random_bytes(self, n: int) -> bytes:
        self.calls += 1
        return bytes(n) if self.calls % 2 else self.rng.bytes(n)

    def describe(self) -> dict[str, object]:
        return {"source": "test", "seeded": True}


def _full_sort_step(codes: np.ndarray, k: int, source: _TopZero) -> np.ndarray:
    """One step by a full sort: the top parts (one byte per row), then a seven-byte low
    part per row of each person over ``k`` in row order (nothing drawn when none is)."""
    big = np.bincount(codes, minlength=1) > k
    if not big.any():
        return np.ones(codes.size, dtype=bool)
    source.random_bytes(codes.size)
    over = np.flatnonzero(big[codes])
    low = np.zeros((over.size, 8), dtype=np.uint8)
    low[:, :7] = np.frombuffer(source.random_bytes(7 * over.size), np.uint8).reshape(-1, 7)
    words = np.zeros(codes.size, dtype=np.uint64)
    words[over] = low.view("<u8").ravel()
    return _full_sort(codes, k, words)


def _sorted_reference(
    person: np.ndarray, group: np.ndarray, bounds: ContributionBounds, source: _TopZero, n_g: int
) -> np.ndarray:
    """The three steps by full sorts (round 4's structure), drawing as the linear steps do."""
    from treedp.privacy.contribution import _dense, _order

    m, g, c = bounds.max_contributions, bounds.max_groups, bounds.max_contributions_per_group
    p = _dense(person)
    n = p.size
    keep = np.arange(n)
    sorted_rows = None
    pair = _dense(p * n_g + group)
    if c < m:
        sorted_rows = np.flatnonzero(_full_sort_step(pair, c, source))
    if g < m:
        rows = np.arange(n) if sorted_rows is None else sorted_rows
        by_pair = rows[_order([(pair[rows], n)], None)]
        ordered = pair[by_pair]
        first = np.r_[True, ordered[1:] != ordered[:-1]] if n else np.zeros(0, bool)
        pair_rows = by_pair[first]  # one row per pair present, in (person, group) order
        chosen = _full_sort_step(p[pair_rows], g, source)
        pair_id = np.cumsum(first) - 1
        sorted_rows = np.sort(by_pair[chosen[pair_id]])
    if sorted_rows is not None:
        keep = sorted_rows
        p = p[keep]
    if not (c < m and g < m and g * c <= m):
        keep = keep[_full_sort_step(p, m, source)]
    return keep


@pytest.mark.parametrize("mgc", [(6, 2, 2), (10, 3, 1), (4, None, 1), (8, 2, None), (3, 5, 5)])
def test_bounding_keeps_the_rows_of_the_sorting_reference(mgc: tuple) -> None:  # type: ignore[type-arg]
    """Exact: the linear steps keep the very rows of full sorts for the same words, drawn
    in the same order (top parts zero, so that every row over a bound is a candidate; the
    candidate threshold is checked against the full sort above)."""
    rng = np.random.default_rng(8)
    bounds = ContributionBounds.from_parameters("p", *mgc)
    for t in range(25):
        n = int(rng.integers(1, 3000))
        person = rng.integers(0, int(rng.integers(1, 200)), n) * 7 + 3  # not dense
        n_g = int(rng.integers(1, 12))
        group = rng.integers(0, n_g, n)
        want = _sorted_reference(person, group, bounds, _TopZero(t), n_g)
        got = bound_contributions(person, group, bounds, _TopZero(t), n_g)  # type: ignore[arg-type]
        assert np.array_equal(got, want), (t, mgc)
