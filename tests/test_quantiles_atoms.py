"""Point masses (issue #33 item 6): diffprivlib issue #107's input and 99% one value.

Every method returns a finite answer; where the data's atom can be answered (integer data
with ``bins="integers"``, or ``bounds="private"`` whose lattice holds 0 and every integer
below 2**17), the answer at the median is the atom itself, as the best method's.
"""

from __future__ import annotations

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
