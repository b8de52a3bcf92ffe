"""``treedp.bin_edges``: the bins of an integer range (one per integer, or whole-integer
bins of one width)."""

from __future__ import annotations

import itertools

from treedp.bin_edges import integer_bins


def test_integer_bins_are_the_fewest_of_the_least_width() -> None:
    for lo, size, cap in itertools.product(
        (-7, 0, 3), (1, 2, 99, 100, 101, 1000, 4099), (1, 3, 100)
    ):
        hi = lo + size - 1
        (a, b), bins, width = integer_bins(lo, hi, cap)
        if size <= cap:
            assert ((a, b), bins, width) == ((lo, hi), "integers", 1)
            continue
        assert isinstance(bins, int) and a == lo and b == lo + bins * width
        assert bins <= cap and bins * width >= size  # every integer of the range is in a bin
        assert (width - 1) * cap < size  # no smaller width fits in cap bins
        assert (bins - 1) * width < size  # no empty bin at the top


def test_whole_integer_bins_near_two_to_the_53_have_exact_edges() -> None:
    """A found range ending at 2**53 - 1 (its upper bound clamped there): the bins' top would
    pass 2**53, where the edges were interpolated and 1,792 of them, below 2**53, missed their
    integer by one (an independent review). They now end at 2**53 and every edge is exact."""
    from treedp.domain import make_bins

    lo, hi = 4503599627370495, 2**53 - 1
    (a, b), k, width = integer_bins(lo, hi, 4096)
    assert isinstance(k, int) and a <= lo and b == hi + 1 and (k - 1) * width < b - a
    edges = make_bins(bounds=(a, b), bins=k).edges
    assert [int(e) for e in edges.tolist()] == [int(a) + width * j for j in range(k + 1)]
