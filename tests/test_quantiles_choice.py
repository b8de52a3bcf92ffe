"""treedp.quantiles_choice: the method rule on wide integer ranges (public bounds only)."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.quantiles_choice import (
    TREE_MIN_LEVELS,
    WIDE_INTEGER_RANGE,
    _fixed_choice,
    choose_method,
)


def test_wide_integer_ranges_take_the_recursion_below_the_tree_threshold() -> None:
    narrow = (0, WIDE_INTEGER_RANGE - 1)  # exactly WIDE_INTEGER_RANGE integers
    wide = (0, WIDE_INTEGER_RANGE)  # one more
    for n in (None, 10, 10**4, 10**9):
        for eps in (0.1, 1.0):
            kw = {"epsilon": eps, "bins": "integers", "n": n}
            assert choose_method(5, bounds=narrow, **kw) == "tree"
            assert choose_method(5, bounds=wide, **kw) == "recursive"
            assert choose_method(2, bounds=(-(10**9), 10**9), **kw) == "recursive"
            assert choose_method(TREE_MIN_LEVELS - 1, bounds=wide, **kw) == "recursive"
            assert choose_method(TREE_MIN_LEVELS, bounds=wide, **kw) == "tree"
            assert choose_method(1, bounds=wide, **kw) == "permute_and_flip"
            # no public bounds (private ones), or not numbers: the integer tree as before
            assert choose_method(5, **kw) == "tree"
            assert choose_method(5, bounds="private", **kw) == "tree"
            assert choose_method(5, bounds=(np.datetime64("2020-01-01"), 1), **kw) == "tree"
    # float bounds: the integers they hold; continuous bins never look at the range
    assert choose_method(5, epsilon=1.0, bins="integers", bounds=(0.5, 4096.5)) == "tree"
    assert choose_method(5, epsilon=1.0, bins="integers", bounds=(-0.5, 4096.0)) == "recursive"
    assert choose_method(29, epsilon=0.1, bounds=(0, 10**6)) == "tree"
    # the same rule decides whether a private count could matter: it cannot here
    assert _fixed_choice(1, 1.0, "integers", "auto", wide) == "permute_and_flip"
    assert _fixed_choice(5, 1.0, "integers", "auto", wide) == "recursive"
    assert _fixed_choice(5, 1.0, "integers", "auto", narrow) == "tree"
    assert _fixed_choice(5, 1.0, "integers", "auto", None) == "tree"
    assert _fixed_choice(TREE_MIN_LEVELS, 1.0, "integers", "auto", wide) == "tree"


@pytest.mark.parametrize("spread", [10.0, 50_000.0])
def test_the_choice_on_a_wide_integer_range_reads_the_bounds_not_the_data(spread: float) -> None:
    # Data in [0, 10] or over half of (0, 10^5): the same public parameters, the same method,
    # nothing spent on a count (a rule that read the data's span would choose differently).
    rng = np.random.default_rng(TEST_SEED)
    x = np.floor(rng.uniform(0, spread, 2000))
    q = [0.1, 0.25, 0.5, 0.75, 0.9]
    res = treedp.quantiles(
        x, q, epsilon=1.0, bounds=(0, 100_000), bins="integers", rng=InsecureSeededSource(1)
    )
    assert res.method == "recursive"
    assert res.n_source == "not needed" and len(res.parts) == 1
    assert res.guarantee.epsilon <= 1.0
    values = np.asarray(res.values)
    assert np.all(values == np.floor(values)) and np.all((values >= 0) & (values <= 100_000))
    assert np.all(np.diff(values) >= 0)
    srt, target = np.sort(x), np.asarray(q) * x.size  # the rank gap to [#{x < v}, #{x <= v}]
    below = np.searchsorted(srt, values, side="left") - target
    above = target - np.searchsorted(srt, values, side="right")
    assert np.max(np.maximum(0, np.maximum(below, above))) < 0.05 * x.size  # ε = 1, 2000


def test_a_range_beyond_the_trees_bins_now_answers() -> None:
    # 10^9 + 1 integers: more than the tree's MAX_BINS (it was refused before any charge);
    # the recursion's integer mode takes it below TREE_MIN_LEVELS levels.
    x = np.floor(np.random.default_rng(TEST_SEED).exponential(1e6, 1000))
    res = treedp.quantiles(
        x, [0.25, 0.5], epsilon=1.0, bounds=(0, 10**9), bins="integers",
        rng=InsecureSeededSource(2),
    )  # fmt: skip
    assert res.method == "recursive"
    with pytest.raises(treedp.InvalidParameterError):  # the tree is still refused there
        treedp.quantiles(x, np.arange(1, 65) / 65, epsilon=1.0, bounds=(0, 10**9), bins="integers")


def test_one_level_on_integers_takes_permute_and_flip_where_it_holds_the_bounds() -> None:
    """Public integer bounds of at most 2**20 integers, pure ε; else the exponential mechanism
    (wider bounds, private or no bounds, continuous bins, a zCDP or (ε, δ) target)."""
    kw = {"epsilon": 0.1, "bins": "integers"}
    assert choose_method(1, bounds=(0, 2**20 - 1), **kw) == "permute_and_flip"
    assert choose_method(1, bounds=(-5.0, 5.0), **kw) == "permute_and_flip"
    assert choose_method(1, bounds=(0, 2**20), **kw) == "exponential"
    assert choose_method(1, bounds=(2**53, 2**53 + 4), **kw) == "exponential"
    assert choose_method(1, **kw) == "exponential"
    assert choose_method(1, bounds=(0, 100), epsilon=0.1) == "exponential"
    assert choose_method(1, bounds=(0, 100), target=True, **kw) == "exponential"


def test_auto_runs_permute_and_flip_on_a_public_integer_median() -> None:
    x = np.random.default_rng(TEST_SEED).geometric(0.05, 1000)
    src = InsecureSeededSource(TEST_SEED)
    res = treedp.quantiles(x, 0.5, bounds=(0, 200), epsilon=1.0, rng=src)
    assert res.method == "permute_and_flip" and res.value == np.median(x)
    target = treedp.quantiles(x, 0.5, bounds=(0, 200), privacy=treedp.ZCDP(0.5), rng=src)
    assert target.method == "exponential"
    found = treedp.quantiles(x, 0.5, bounds="private", epsilon=1.0, rng=src)
    assert found.method != "permute_and_flip"
