"""Point masses (issue #33 item 6): diffprivlib issue #107's input and 99% one value.

Every method returns a finite answer; where the data's atom can be answered (integer data
with ``bins="integers"``, or ``bounds="private"`` whose lattice holds 0 and every integer
below 2**17), the answer at the median is the atom itself, as the best method's.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import treedp
from treedp.noise import InsecureSeededSource


def _issue_107(n: int) -> np.ndarray:
    rng = np.random.RandomState(0)
    atom = np.full(int(0.8 * n), 65_000, dtype=np.int64)
    return np.concatenate([atom, rng.randint(0, 500_000, size=n - atom.size)])


def _gap(x: np.ndarray, est: np.ndarray, q: np.ndarray) -> np.ndarray:
    xs = np.sort(x)
    below = np.searchsorted(xs, est, side="left") - q * xs.size
    above = q * xs.size - np.searchsorted(xs, est, side="right")
    return np.maximum(0, np.maximum(below, above))


@pytest.mark.slow
@pytest.mark.parametrize("method", ["exponential", "recursive", "tree"])
@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_issue_107_integer_atom(method: str, eps: float) -> None:
    """n = 10^5 and 10^6, 80% at 65,000: finite for every method and bounds; the median is
    65,000 with bins='integers' and with bounds='private'."""
    for n in (10**5, 10**6):
        x = _issue_107(n)
        for bounds, bins in (((0, 500_000), "integers"), ((0, 500_000), None), ("private", None)):
            if bounds == "private" and method == "tree":
                bins = "integers"
            res = treedp.quantiles(
                x, [0.25, 0.5, 0.75], epsilon=eps, bounds=bounds, bins=bins, method=method,
                rng=InsecureSeededSource(n),
            )  # fmt: skip
            values = np.asarray(res.values, dtype=float)
            assert np.all(np.isfinite(values))
            if bins == "integers" or bounds == "private":  # the atom can be answered
                assert values[1] == 65_000 and _gap(x, values[1:2], np.array([0.5]))[0] == 0


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # the tree's scans meet at 7
def test_ninety_nine_percent_one_value() -> None:
    """99% at 7.0 (a lattice point): the unbounded methods answer it at every level that
    lies in the block on the median's side; the tree gives a finite answer."""
    x = np.r_[np.full(9_900, 7.0), np.random.default_rng(1).normal(0, 100, 100)]
    for method in ("exponential", "recursive"):
        res = treedp.quantiles(
            x, [0.25, 0.5], epsilon=0.5, bounds="private", method=method,
            rng=InsecureSeededSource(5),
        )  # fmt: skip
        assert np.all(np.asarray(res.values) == 7.0)
    tree = treedp.quantiles(
        x, [0.25, 0.5, 0.75], epsilon=0.5, bounds="private", method="tree",
        rng=InsecureSeededSource(6),
    )  # fmt: skip
    assert np.all(np.isfinite(np.asarray(tree.values, dtype=float)))


def test_recursive_integers_answer_the_block_on_the_split_side() -> None:
    """The recursion on integers spreads ties in their cell and splits on whole cells: the
    median and the level below it inside an 80% block are the block's value."""
    x = _issue_107(10**5)
    res = treedp.quantiles(
        x, [0.25, 0.5], epsilon=0.5, bounds=(0, 500_000), bins="integers",
        method="recursive", rng=InsecureSeededSource(7),
    )  # fmt: skip
    assert np.all(np.asarray(res.values) == 65_000)


@pytest.mark.parametrize("bounds", [(-400.0, 400.0), "private"])
def test_tree_on_real_bins_answers_beside_a_block_on_the_near_side(bounds: object) -> None:
    """99% at 7.3 (no grid point of the tree's real-valued bins, nor of the float lattice):
    no answer but 7.3 itself holds the block's ranks, so the best any method does is the
    block's nearer side, ``min(q - F(7.3-), F(7.3) - q)``; the tree now answers there at
    every level (before: interpolated inside the block's bin, 0.745 n off at q = 0.75).
    Fixed seed; tolerance 0.002 n (the noise of the released CDF at the bin's edges)."""
    x = np.r_[np.full(9_900, 7.3), np.random.default_rng(1).normal(0, 100, 100)]
    xs = np.sort(x)
    q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    below = np.searchsorted(xs, 7.3, side="left") / xs.size
    top = np.searchsorted(xs, 7.3, side="right") / xs.size
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)  # the scans meet at the block
        res = treedp.quantiles(x, q, epsilon=1.0, bounds=bounds, method="tree",
                               rng=InsecureSeededSource(11))  # fmt: skip
    gaps = _gap(x, np.asarray(res.values, dtype=float), q) / x.size
    assert np.all(gaps <= np.minimum(q - below, top - q) + 0.002), gaps


def test_tree_answers_a_block_of_zeros_on_the_public_lower_bound_exactly() -> None:
    """70% zeros on public bounds (0, 5000) with real-valued bins: the levels inside the
    block are answered 0 (rank gap 0, the best method's; before: 0.60 n, 0.45 n, 0.20 n at
    0.1, 0.25, 0.5 for every method with these bounds)."""
    r = np.random.default_rng(1)
    x = np.where(r.random(10**4) < 0.7, 0.0, r.lognormal(5, 1, 10**4))
    for seed in range(3):
        res = treedp.quantiles(x, [0.1, 0.25, 0.5], epsilon=0.3, bounds=(0.0, 5000.0),
                               method="tree", rng=InsecureSeededSource(seed))  # fmt: skip
        assert np.all(np.asarray(res.values) == 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_issue_107_every_method_at_most_the_best_methods_rank_gap(eps: float) -> None:
    """#107, n = 10^5, levels 0.1 .. 0.9: each method's rank gap is at most the best
    method's plus 0.001 n (fixed seed) where the block can be answered (bins='integers' or
    the float lattice). The recursion included: its children are anchored on noisy side
    counts (before: 0.163 n at q = 0.75 and 0.065 n at 0.9, the block's far side)."""
    x = _issue_107(10**5)
    q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    gaps = {}
    for method in ("exponential", "recursive", "tree"):
        configs = (((0, 500_000), "integers"), ("private", "integers"), ("private", None))
        for bounds, bins in configs:
            if method == "tree" and bins is None:
                continue  # the tree's private bounds on real bins: the real-bins test above
            res = treedp.quantiles(x, q, epsilon=eps, bounds=bounds, bins=bins, method=method,
                                   rng=InsecureSeededSource(3))  # fmt: skip
            values = np.asarray(res.values, dtype=float)
            assert np.all(np.isfinite(values))
            gaps[(method, str(bounds), bins)] = _gap(x, values, q) / x.size
    best = np.min(np.array(list(gaps.values())), axis=0)
    for key, g in gaps.items():
        assert np.all(g <= best + 0.001), (key, g, best)


def _blocks() -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    """99% at 7.0 (n = 10^4) and 70% zeros with lognormal(5, 1) otherwise (n = 10^5)."""
    r = np.random.default_rng(1)
    return {
        "99% at 7.0": (np.r_[np.full(9_900, 7.0), r.normal(0, 100, 100)], (-400.0, 400.0)),
        "70% zeros": (
            np.where(r.random(10**5) < 0.7, 0.0, r.lognormal(5, 1, 10**5)),
            (0.0, 5000.0),
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["99% at 7.0", "70% zeros"])
@pytest.mark.parametrize("eps", [0.3, 1.0])
def test_blocks_every_method_at_most_the_best_methods_rank_gap(name: str, eps: float) -> None:
    """A block at a lattice point (7.0; 0, also a public lower bound): the exponential and
    recursive methods with private bounds and the tree on public bounds answer, in mean rank
    gap over 10 fixed seeds, within the best method's plus 0.0025 n at levels 0.1 .. 0.9
    (before the recursion's count anchors it answered 0.10 / 0.25 n at q = 0.1 / 0.25 on 99%
    at 7.0, 0.098 n at q = 0.75 on 70% zeros, the block's far side). The recursion still
    trails there: 0.0020 n at q = 0.75 on 70% zeros at ε = 0.3 against the exponential
    mechanism's 0.0003 n, the same with and without the base measures of
    :mod:`treedp.value_methods.lattice_prior` (one seed of the ten reaches 0.009 n: a test of
    one seed passed or failed by its draw)."""
    x, public = _blocks()[name]
    q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    gaps = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", treedp.BoundsWarning)
        for method, bounds in (("exponential", "private"), ("recursive", "private"),
                               ("tree", public), ("tree", "private")):  # fmt: skip
            runs = []
            for seed in range(4, 14):
                res = treedp.quantiles(x, q, epsilon=eps, bounds=bounds, method=method,
                                       rng=InsecureSeededSource(seed))  # fmt: skip
                values = np.asarray(res.values, dtype=float)
                assert np.all(np.isfinite(values))
                runs.append(_gap(x, values, q) / x.size)
            gaps[(method, str(bounds))] = np.mean(runs, axis=0)
    best = np.min(np.array(list(gaps.values())), axis=0)
    for key in (("exponential", "private"), ("recursive", "private")):
        assert np.all(gaps[key] <= best + 0.0025), (key, gaps[key], best)


def test_median_methods_answer_the_block() -> None:
    """stable_median and subsample_and_aggregate (δ = 1e-6, 100 blocks) release the block's
    value itself on #107 (n = 10^5) and on 99% at 7.3 (fixed seeds; rank gap 0, the best)."""
    blocks = (
        (_issue_107(10**5), 65_000.0),
        (np.r_[np.full(9_900, 7.3), np.random.default_rng(1).normal(0, 100, 100)], 7.3),
    )
    for x, value in blocks:
        for seed in range(3):
            rng = InsecureSeededSource(seed)
            assert treedp.stable_median(x, epsilon=1.0, delta=1e-6, rng=rng) == value
            agg = treedp.subsample_and_aggregate(x, "median", epsilon=1.0, delta=1e-6, m=100,
                                                 rng=InsecureSeededSource(seed))  # fmt: skip
            assert agg == value


def test_lattice_answer_is_the_next_point_in_the_upper_half_of_a_cell_not_round() -> None:
    """``answer_of`` (post-processing of a selected unit): a round point (0, an integer, at
    most 8 significant bits) answers its whole cell; a cell whose point is not round (the
    cell holding 7.3) answers its point from its lower half of units, the next point from its
    upper half."""
    from treedp.value_methods.float_lattice import SUB_BITS, answer_of, cell_of, cell_value

    values = np.array([0.0, 7.0, 65_000.0, 0.5, -7.0, 7.3, -7.3, 0.1])
    cells = cell_of(values)
    low, high = cells << SUB_BITS, (cells << SUB_BITS) + (3 << (SUB_BITS - 2))
    np.testing.assert_array_equal(answer_of(low), cell_value(cells))
    moved = answer_of(high)
    np.testing.assert_array_equal(moved[:5], values[:5])
    np.testing.assert_array_equal(moved[5:], cell_value(cells[5:] + 1))
    assert np.all(cell_value(cells[5:]) < values[5:]) and np.all(values[5:] < moved[5:])


@pytest.mark.parametrize("method", ["exponential", "recursive"])
def test_lattice_methods_answer_beside_a_block_that_is_no_lattice_point(method: str) -> None:
    """99% at 7.3 with bounds='private': the block's nearer side at every level, as the tree
    (before: the lattice point below 7.3 at every level, 0.744 n off at q = 0.75). Fixed
    seed; tolerance 0.002 n."""
    x = np.r_[np.full(9_900, 7.3), np.random.default_rng(1).normal(0, 100, 100)]
    xs = np.sort(x)
    q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
    below = np.searchsorted(xs, 7.3, side="left") / xs.size
    top = np.searchsorted(xs, 7.3, side="right") / xs.size
    res = treedp.quantiles(x, q, epsilon=0.3, bounds="private", method=method,
                           rng=InsecureSeededSource(12))  # fmt: skip
    gaps = _gap(x, np.asarray(res.values, dtype=float), q) / x.size
    allowed = np.minimum(q - below, top - q) + 0.002
    assert np.all(gaps <= allowed), gaps
