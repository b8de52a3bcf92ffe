"""Per-person sampling reads full 64-bit priorities whatever the table's size (issue 27 item 5).

Round 3: the random field packed next to the codes was ``62 − Σ widths`` bits, with widths from
the number of rows, so a person's chance of a tie (and with it which of their rows are kept)
depended on everyone else's row count. A source whose words differ only in their lowest bits
tells the two apart: with the full words the lowest bits decide; with a truncated field every
priority ties and the input order would decide.
"""

from __future__ import annotations

import numpy as np
import pytest

from treedp.privacy.contribution import ContributionBounds, bound_contributions


class _LowBitsSource:
    """Words ``n, n − 1, …, 1``: all equal above their lowest ~20 bits, decreasing by row."""

    seeded = True

    def random_bytes(self, n: int) -> bytes:
        count = n // 8
        return np.arange(count, 0, -1, dtype="<u8").tobytes()

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
    """The fast path (codes and the words' top bits packed, ties put in the order of the whole
    words) gives exactly the lexsort by (codes, 64-bit word), also when only one random bit
    fits next to the codes and most packed keys tie."""
    from treedp.noise import InsecureSeededSource
    from treedp.privacy.contribution import _order, _priorities

    rng = np.random.default_rng(1)
    person, group = rng.integers(0, 50, 20_000), rng.integers(0, 3, 20_000)
    codes = [(person, bounds[0]), (group, bounds[1])]
    words = _priorities(InsecureSeededSource(5), person.size)
    expected = np.lexsort((words, group, person))
    assert np.array_equal(_order(codes, InsecureSeededSource(5)), expected)


# ---------------------------------------------------------------------- linear per-person step
def _check_lowest(impl: object, trials: int = 60) -> None:
    """``impl(codes, k, source)`` keeps exactly the rows of the full sort (``_random_rank <
    k``) for the same seeded words: persons of every size around ``k``, forced word ties."""
    from treedp import InsecureSeededSource
    from treedp.privacy.contribution import _random_rank

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
        want = _random_rank(codes, n, InsecureSeededSource(t)) < k
        got = impl(codes, k, InsecureSeededSource(t))  # type: ignore[operator]
        assert np.array_equal(got, want), (t, k)
        assert np.bincount(codes[got], minlength=persons).tolist() == np.minimum(sizes, k).tolist()


def test_the_linear_step_keeps_exactly_the_rows_of_the_full_sort() -> None:
    """Exact (no false failures): the same kept rows as sorting every row, so the sampling law
    (a uniform ``min(r, k)``-subset of each person's ``r`` rows) and seeded outputs are those
    of the sort; ties are forced through a source of few distinct words as well."""
    from treedp.privacy.contribution import _lowest, _random_rank

    _check_lowest(_lowest)

    class _FewWords:
        seeded = True

        def __init__(self, seed: int) -> None:
            self.rng = np.random.default_rng(seed)

        def random_bytes(self, n: int) -> bytes:
            return (self.rng.integers(0, 4, n // 8).astype("<u8") << np.uint64(62)).tobytes()

        def describe(self) -> dict[str, object]:
            return {"source": "test", "seeded": True}

    codes = np.repeat(np.arange(5), [3, 40, 200, 7, 1000])
    for seed in range(5):
        want = _random_rank(codes, codes.size, _FewWords(seed)) < 7
        assert np.array_equal(_lowest(codes, 7, _FewWords(seed)), want)


def test_the_exactness_check_catches_a_threshold_without_its_fallback() -> None:
    """Mutant: candidates only below a threshold of ``k/r`` (no margin, no fallback) keep
    fewer than ``k`` rows of some persons; the check above must fail on it."""
    from treedp.privacy.contribution import _priorities

    def mutant(codes: np.ndarray, k: int, source: object) -> np.ndarray:
        prio = _priorities(source, codes.size)  # type: ignore[arg-type]
        sizes = np.bincount(codes)
        limit = (np.minimum(1.0, k / np.maximum(sizes, 1)) * 2.0**63 * 1.999).astype(np.uint64)
        return (sizes[codes] <= k) | (prio < limit[codes])

    with pytest.raises(AssertionError):
        _check_lowest(mutant)


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


def _sorted_reference(
    person: np.ndarray, group: np.ndarray, bounds: ContributionBounds, source: object, n_g: int
) -> np.ndarray:
    """Round 4's bounding by full sorts (the code this module replaced), as the reference."""
    from treedp.privacy.contribution import _dense, _order, _random_rank, _rank_in_runs, _starts

    m, g, c = bounds.max_contributions, bounds.max_groups, bounds.max_contributions_per_group
    p = _dense(person)
    n = p.size
    keep = np.arange(n)
    sorted_rows = None
    if c < m:
        order = _order([(p, n), (group, n_g)], source)  # type: ignore[arg-type]
        sorted_rows = order[_rank_in_runs(_starts(p[order], group[order])) < c]
    if g < m:
        if sorted_rows is None:
            sorted_rows = _order([(p, n), (group, n_g)], None)
        ps, gs = p[sorted_rows], group[sorted_rows]
        pair_start = _starts(ps, gs)
        pair_id = np.cumsum(pair_start) - 1
        rank = _random_rank(ps[pair_start], n, source)  # type: ignore[arg-type]
        sorted_rows = sorted_rows[rank[pair_id] < g]
    if sorted_rows is not None:
        keep = np.sort(sorted_rows)
        p = p[keep]
    if not (c < m and g < m and g * c <= m):
        keep = keep[_random_rank(p, n, source) < m]  # type: ignore[arg-type]
    return keep


@pytest.mark.parametrize("mgc", [(6, 2, 2), (10, 3, 1), (4, None, 1), (8, 2, None), (3, 5, 5)])
def test_bounding_keeps_the_rows_of_the_sorting_reference(mgc: tuple) -> None:  # type: ignore[type-arg]
    """Exact: the linear steps keep the very rows of the full sorts for the same seeded words
    (so the law, a uniform sample per person at each step, and seeded outputs are unchanged)."""
    from treedp import InsecureSeededSource

    rng = np.random.default_rng(8)
    bounds = ContributionBounds.from_parameters("p", *mgc)
    for t in range(25):
        n = int(rng.integers(1, 3000))
        person = rng.integers(0, int(rng.integers(1, 200)), n) * 7 + 3  # not dense
        n_g = int(rng.integers(1, 12))
        group = rng.integers(0, n_g, n)
        want = _sorted_reference(person, group, bounds, InsecureSeededSource(t), n_g)
        got = bound_contributions(person, group, bounds, InsecureSeededSource(t), n_g)
        assert np.array_equal(got, want), (t, mgc)
