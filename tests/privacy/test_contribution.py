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
