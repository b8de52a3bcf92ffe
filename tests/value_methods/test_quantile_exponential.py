"""The exponential-mechanism quantile and median: accuracy, exact law, guarantee, audits."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from tests.privacy.auditor import clopper_pearson
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.exceptions import DataError
from treedp.value_methods import quantile_exponential as med
from treedp.value_methods.exponential_core import Grid
from treedp.value_methods.quantile_exponential import (
    _quantile_exponential_draws,
    quantile_exponential,
)

ALPHA = 1e-6


def test_exponential_quantile_accuracy_and_robustness() -> None:
    rng = np.random.default_rng(TEST_SEED)
    x = rng.lognormal(10, 1, 10**6)
    src = InsecureSeededSource(TEST_SEED)
    out = quantile_exponential(x, [0.1, 0.5, 0.9], bounds=(0, 1e7), epsilon=1.0, rng=src)
    ranks = np.searchsorted(np.sort(x), out) / x.size
    assert np.allclose(ranks, [0.1, 0.5, 0.9], atol=0.01)
    ties = np.repeat([1.0, 2.0, 3.0], 10**6)
    value = quantile_exponential(ties, 0.5, bounds=(0, 10), epsilon=0.5, rng=src)
    assert 1.0 <= value <= 3.0 and math.isfinite(value)
    with pytest.raises(InvalidParameterError, match="'q'"):
        quantile_exponential(x, 1.5, bounds=(0, 1), epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="'bounds'"):
        quantile_exponential(x, 0.5, bounds=(1, 1), epsilon=1.0)


@pytest.mark.slow
@pytest.mark.parametrize("neighbours", ["replace", "add_remove"])
def test_audit_exponential_quantile_and_mutant(
    neighbours: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worst-case neighbours for the median's score; the best interval event on a pilot."""
    eps, q, runs = 1.0, 0.5, 200_000
    x = np.linspace(1, 9, 9)
    x2 = x.copy()
    if neighbours == "replace":
        x2[0] = 9.5  # a low value moved to the top: every rank below shifts by one
    else:
        x2 = np.concatenate([x, [0.5]])  # one record added at the bottom

    def draws(data, seed):
        return _quantile_exponential_draws(
            data,
            q,
            bounds=(0, 10),
            epsilon=eps,
            neighbours=neighbours,
            rng=InsecureSeededSource(seed),
            size=runs,
        )

    def bound() -> float:
        pilot1, pilot2 = draws(x, 1)[:20_000], draws(x2, 2)[:20_000]
        grid = np.linspace(0, 10, 41)
        best, best_event = -np.inf, None
        for lo, hi in itertools.combinations(grid, 2):
            for a, b in ((pilot1, pilot2), (pilot2, pilot1)):
                k1 = ((a >= lo) & (a < hi)).sum()
                k2 = ((b >= lo) & (b < hi)).sum()
                if k1 > 50 and k2 > 0 and math.log(k1 / k2) > best:
                    best, best_event = math.log(k1 / k2), (lo, hi, a is pilot1)
        lo, hi, first = best_event
        f1, f2 = draws(x, 3), draws(x2, 4)
        a, b = (f1, f2) if first else (f2, f1)
        k1, k2 = int(((a >= lo) & (a < hi)).sum()), int(((b >= lo) & (b < hi)).sum())
        return math.log(clopper_pearson(k1, runs, ALPHA)[0] / clopper_pearson(k2, runs, ALPHA)[1])

    assert bound() <= eps
    # mutant: a sensitivity four times too small (e.g. Δ = 1/4 claimed for the rank score)
    right = med._score_sensitivity
    monkeypatch.setattr(med, "_score_sensitivity", lambda level, nb: right(level, nb) / 4)
    assert bound() > eps


@pytest.mark.slow
def test_exponential_quantile_follows_its_exact_law() -> None:
    """End to end: the data interval of the output has P ∝ (grid points) · exp(-rate |i - t|)."""
    x = np.array([1.0, 2.0, 2.0, 2.0, 3.5, 7.0, 7.25, 9.0])
    bounds, eps, q, runs = (0.0, 10.0), 0.8, 0.3, 200_000
    draws = _quantile_exponential_draws(
        x,
        q,
        bounds=bounds,
        epsilon=eps,
        neighbours="replace",
        rng=InsecureSeededSource(TEST_SEED),
        size=runs,
    )
    rank = np.searchsorted(x, draws, side="left")  # #{x_j < y}
    # interval lengths stand in for grid counts: they differ by < 1 point in 2**48
    edges = np.concatenate([[0.0], np.unique(x), [10.0]])
    ranks = np.concatenate([[0], np.searchsorted(x, np.unique(x), side="right")])
    lengths = np.diff(edges)
    rate = eps / 2  # Δ = 1 under replace; the dyadic rounding is below 2**-29 relative
    p = lengths * np.exp(-rate * np.abs(ranks - q * x.size))
    p /= p.sum()
    observed = np.array([(rank == r).sum() for r in ranks])
    assert observed.sum() == runs  # tied ranks (between equal values) never come out
    assert stats.chisquare(observed, p * runs).pvalue > ALPHA


def test_exponential_quantile_states_its_guarantee() -> None:
    x = np.arange(100.0)
    for neighbours, level, delta in (("replace", 0.5, 1.0), ("add_remove", 0.9, 0.9)):
        res = quantile_exponential(
            x, [level, 0.2], bounds=(0, 100), epsilon=0.7, neighbours=neighbours, details=True
        )
        assert res.epsilon == 0.7 and res.neighbours == neighbours
        assert 0.7 * (1 - 2**-28) <= res.epsilon_spent <= 0.7
        assert res.sensitivity[0] == pytest.approx(delta, abs=2**-31)
        assert res.sensitivity[0] >= delta  # the 2**-32 target rounding is paid for
        assert res.grid_points == 2**med.GRID_BITS and res.values.shape == (2,)


def test_grid_counts_are_exact() -> None:
    """count(<= x) is the k with grid(k-1) <= x < grid(k), including on grid points."""
    rng = np.random.default_rng(TEST_SEED)
    cells = 2**med.GRID_BITS
    # ordinary, narrower than float spacing (grid points collapse), and near the largest float
    for lo, hi in ((-3.0, 1e6), (1.0, 1.0 + 1e-12), (-1.7e308, 1.7e308)):
        grid = Grid(lo, hi)
        assert grid.half == hi / 2 ** (med.GRID_BITS + 1) - lo / 2 ** (med.GRID_BITS + 1)
        on_grid = grid.values(rng.integers(0, cells, 1000))
        inside = lo + (hi / 2 - lo / 2) * 2 * rng.uniform(0, 1, 5000)
        x = np.concatenate([inside, on_grid, [lo, hi, -np.inf, np.inf, np.nextafter(hi, 0)]])
        k = grid.count_at_most(x)
        below = grid.values(np.maximum(k - 1, 0))
        above = grid.values(np.minimum(k, cells - 1))
        assert ((k == 0) | (below <= x)).all() and ((k == cells) | (above > x)).all()
        assert np.all(np.diff(grid.values(np.sort(rng.integers(0, cells, 10**4)))) >= 0)
    # small grids (the recursive method's audits): the same counts as an explicit search
    for bits in (1, 3, 8):
        small = Grid(0.0, 8.0, bits)
        x = np.concatenate([rng.uniform(-1, 9, 500), small.values(np.arange(small.cells))])
        points = small.values(np.arange(small.cells))
        assert np.array_equal(small.count_at_most(x), np.searchsorted(points, x, side="right"))


def test_quantile_exponential_has_no_size_parameter() -> None:
    """F1: one call is one ε-release; repeated draws live in a private simulation helper."""
    import inspect

    assert "size" not in inspect.signature(quantile_exponential).parameters
    with pytest.raises(TypeError):
        quantile_exponential([1.0], 0.5, bounds=(0, 1), epsilon=1.0, size=10)  # type: ignore[call-arg]
    draws = _quantile_exponential_draws(
        [1.0, 2.0], [0.2, 0.8], bounds=(0, 3), epsilon=1.0, size=7, rng=InsecureSeededSource(1)
    )
    assert draws.shape == (7, 2)
    assert "separate ε-release" in (med._quantile_exponential_draws.__doc__ or "")


@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_exponential_quantile_on_empty_data_is_uniform(neighbours: str) -> None:
    """F2: n = 0 is a neighbour of n = 1 under add_remove; it is sampled (uniform on the
    grid), not refused."""
    src = InsecureSeededSource(TEST_SEED)
    value = quantile_exponential([], 0.5, bounds=(0, 100), epsilon=1.0, neighbours=neighbours)
    assert 0 <= value <= 100
    res = quantile_exponential(
        np.array([]), [0.1, 0.9], bounds=(0, 100), epsilon=1.0, neighbours=neighbours,
        rng=src, details=True,
    )  # fmt: skip
    assert res.values.shape == (2,) and res.epsilon_spent <= 1.0
    draws = _quantile_exponential_draws(
        [], 0.3, bounds=(0, 100), epsilon=1.0, neighbours=neighbours, size=50_000, rng=src
    )
    counts = np.histogram(draws, bins=20, range=(0, 100))[0]
    assert stats.chisquare(counts).pvalue > ALPHA


def test_exponential_quantile_nan_and_inf_policy() -> None:
    """F2/F3: NaN/NaT raise one data-free message (or are dropped under add_remove); ±inf are
    clamped to the bounds, not refused."""
    x = np.arange(20.0)
    messages = set()
    for bad in ([np.nan], [np.nan] * 5, [np.nan, 3.0, np.nan]):
        with pytest.raises(DataError) as info:
            quantile_exponential(
                np.concatenate([x, bad]), 0.5, bounds=(0, 30), epsilon=1.0, neighbours="add_remove"
            )
        messages.add(str(info.value))
    assert len(messages) == 1
    (message,) = messages
    assert "nan='drop'" in message and not any(ch.isdigit() for ch in message)
    nat = np.array(["2020-01-01", "NaT"], dtype="datetime64[s]")
    with pytest.raises(DataError, match="NaN/NaT"):
        quantile_exponential(nat, 0.5, bounds=(0, 2e9), epsilon=1.0)

    def run(data, **kw):
        return quantile_exponential(
            data, [0.1, 0.5, 0.99], bounds=(0, 30), epsilon=1.0, rng=InsecureSeededSource(3), **kw
        )

    dropped = run(np.concatenate([x, [np.nan] * 3]), neighbours="add_remove", nan="drop")
    assert np.array_equal(dropped, run(x, neighbours="add_remove"))
    with pytest.raises(InvalidParameterError, match="nan='drop' is not allowed"):
        quantile_exponential(x, 0.5, bounds=(0, 30), epsilon=1.0, nan="drop", neighbours="replace")
    with pytest.raises(InvalidParameterError, match="'nan'"):
        quantile_exponential(x, 0.5, bounds=(0, 30), epsilon=1.0, nan="keep")
    for nb in ("replace", "add_remove"):
        with_inf = run(np.concatenate([x, [np.inf, -np.inf]]), neighbours=nb)
        clamped = run(np.concatenate([x, [30.0, 0.0]]), neighbours=nb)
        assert np.array_equal(with_inf, clamped)


def _integer_law(x: np.ndarray, lo: int, hi: int, q: float, rate: float, relation: str) -> dict:
    """The exact law of ``integers=True`` over the integers ``lo..hi``: the output cell's
    probability ∝ Σ over its stretches of equal rank of length · exp(-rate |i - t|), with
    ``i = #{x' < y}`` on the spread data (interval lengths stand in for grid counts: they
    differ by less than one point in 2**48)."""
    xs = med._spread(np.floor(np.clip(np.sort(x.astype(float)), lo, hi)))
    t = math.floor(q * x.size * 2**med.TARGET_BITS) / 2**med.TARGET_BITS
    cuts = np.unique(np.concatenate([np.arange(lo, hi + 2, dtype=float), xs]))
    law = {}
    for v in range(lo, hi + 1):
        inside = cuts[(cuts >= v) & (cuts <= v + 1)]
        mids = (inside[:-1] + inside[1:]) / 2
        i = np.searchsorted(xs, mids, side="left")
        law[v] = float(np.sum(np.diff(inside) * np.exp(-rate * np.abs(i - t))))
    total = sum(law.values())
    return {v: p / total for v, p in law.items()}


def _log_density(x: np.ndarray, lo: int, hi: int, q: float, rate: float, y: np.ndarray):  # type: ignore[no-untyped-def]
    """Log density of the selected grid point at ``y`` (before the floor) in ``integers``
    mode: ``-rate |i(y) - t| - log Z``, ``i(y) = #{x' < y}`` on the spread data."""
    xs = med._spread(np.floor(np.clip(np.sort(x.astype(float)), lo, hi)))
    t = math.floor(q * x.size * 2**med.TARGET_BITS) / 2**med.TARGET_BITS
    cuts = np.unique(np.concatenate([[lo, hi + 1.0], xs]))
    mids = (cuts[:-1] + cuts[1:]) / 2
    log_z = float(
        np.log(np.sum(np.diff(cuts) * np.exp(-rate * np.abs(np.searchsorted(xs, mids) - t))))
    )
    return -rate * np.abs(np.searchsorted(xs, y, side="left") - t) - log_z


def _integer_worst_ratio(eps: float, relation: str, q: float) -> float:
    """Largest log ratio of the selection's densities (the grid point before the floor, a
    finer output than the integer released) over every neighbour of every dataset of up to
    four values in 0..2 (add/remove: one value added; replace: one value changed)."""
    from fractions import Fraction

    rate = eps / (2 * float(med._score_sensitivity(Fraction(q), relation)))
    worst = 0.0
    for n in range(5):
        for d in map(np.array, itertools.combinations_with_replacement(range(3), n)):
            if relation == "replace":
                others = [np.r_[d[:j], [w], d[j + 1 :]] for j in range(d.size) for w in range(3)]
            else:
                others = [np.r_[d, [w]] for w in range(3)] if n < 4 else []
            for e in others:
                cuts = np.unique(
                    np.concatenate(
                        [
                            np.arange(4.0),
                            med._spread(np.sort(d.astype(float))),
                            med._spread(np.sort(e.astype(float))),
                        ]
                    )
                )
                mids = (cuts[:-1] + cuts[1:]) / 2
                gap = _log_density(d, 0, 2, q, rate, mids) - _log_density(e, 0, 2, q, rate, mids)
                worst = max(worst, float(np.abs(gap).max()))
    return worst


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_integer_mode_exact_likelihood_ratio_within_epsilon(relation: str) -> None:
    """The spread keeps the score's sensitivity: over every neighbour of every dataset of up
    to four values in {0, 1, 2}, the exact densities' log ratio stays within ε (q = 0.5,
    0.25), for the grid point selected (a finer output than the integer released)."""
    for q in (0.5, 0.25):
        assert _integer_worst_ratio(1.0, relation, q) <= 1.0 + 1e-9


def test_integer_mode_mutant_whose_positions_do_not_interleave_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A spread at ``v + (i + 1/2)/k**2`` (the block squeezes towards ``v`` as it grows, so
    one added record moves several others past a grid point) exceeds ε on the same
    exhaustive check."""

    def squeezed(x: np.ndarray) -> np.ndarray:
        if x.size == 0:
            return x
        _, start, counts = np.unique(x, return_index=True, return_counts=True)
        k = np.repeat(counts, counts).astype(float)
        i = np.arange(x.size) - np.repeat(start, counts)
        return x + (i + 0.5) / k**2

    monkeypatch.setattr(med, "_spread", squeezed)
    assert _integer_worst_ratio(1.0, "add_remove", 0.5) > 1.0 + 1e-6


@pytest.mark.slow
def test_integer_mode_answers_blocks_of_ties_and_follows_its_law() -> None:
    """Ten 1s, eighty 2s, ten 3s: the median is 2 (the grid's cell of 2 holds the target);
    and the sampler follows the exact law on a small tied dataset (chi-square)."""
    x = np.repeat([1, 2, 3], [10, 80, 10])
    got = quantile_exponential(
        x,
        [0.05, 0.5, 0.95],
        bounds=(0, 5),
        epsilon=50.0,
        integers=True,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert got.tolist() == [1.0, 2.0, 3.0]
    small = np.array([0, 1, 1, 1, 2, 4])
    runs, eps, q = 100_000, 0.8, 0.5
    draws = _quantile_exponential_draws(
        small,
        q,
        bounds=(0, 4),
        epsilon=eps,
        integers=True,
        neighbours="replace",
        rng=InsecureSeededSource(TEST_SEED),
        size=runs,
    )
    law = _integer_law(small, 0, 4, q, eps / 2, "replace")
    observed = np.array([(draws == v).sum() for v in law])
    assert observed.sum() == runs
    assert stats.chisquare(observed, np.array(list(law.values())) * runs).pvalue > ALPHA
    with pytest.raises(InvalidParameterError, match="integer bounds"):
        quantile_exponential(x, 0.5, bounds=(0, 5.5), epsilon=1.0, integers=True)


@pytest.mark.parametrize("v", [7.0, -(2.0**40), 2.0**48, 2.0**49, 2.0**50, -(2.0**50), 2.0**51])
def test_spread_positions_stay_strictly_inside_their_cell(v: float) -> None:
    """Privacy review F1: ``v + (i + 1/2)/k`` rounded in float64 reached ``v + 1`` (the
    cell's end) for ``|v| >= 2**48``, so the recursion's whole-cell split at ``v + 1`` cut a
    block of ties. Every position now lies in ``[v, v + 1)`` (its floor is ``v``), and the
    blocks of ``k`` and ``k + 1`` records still interleave."""
    previous = med._spread(np.full(1, v))
    for k in [*range(2, 70), 1000, 4097]:
        spread = med._spread(np.full(k, v))
        assert (spread >= v).all() and (spread < v + 1).all()
        assert (np.floor(spread) == v).all() and (np.diff(spread) >= 0).all()
        if previous.size == k - 1:  # p'_i <= p_i <= p'_{i+1}: one record added
            assert (spread[:-1] <= previous).all() and (previous <= spread[1:]).all()
        previous = spread


def test_bounds_of_subnormal_width_warn_of_nothing() -> None:
    """Privacy review R8, F4: bounds of subnormal width have a zero grid step; the grid count
    then divided by zero and warned for some data and not others (an output that depends on
    the data). Now silent, and the count stays exact (its correction does the work)."""
    import warnings

    for x in ([], [0.0], [5e-311], [0.0, 0.0, 1e-310], [-np.inf, np.inf]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            med.quantile_exponential(
                np.array(x, dtype=float), 0.5, bounds=(0.0, 1e-310), epsilon=1.0,
                rng=InsecureSeededSource(3),
            )  # fmt: skip
