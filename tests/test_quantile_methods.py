"""The quantile methods' table: every method ``treedp.quantiles`` takes has one row, and the
rows' facts are the ones the call checks."""

from __future__ import annotations

import math

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED, z_two_sided
from treedp import quantile_methods
from treedp.quantile_methods import QUANTILE_METHODS, binned_method
from treedp.quantiles_choice import METHODS


def test_every_method_has_one_row() -> None:
    assert set(QUANTILE_METHODS) == set(METHODS) - {"auto"}
    assert all(name == row.name for name, row in QUANTILE_METHODS.items())
    assert binned_method().binned and not binned_method().selections


def test_each_row_runs_as_the_public_call_does() -> None:
    values = np.random.default_rng(3).normal(50, 10, 2000)
    for name in QUANTILE_METHODS:
        integers = QUANTILE_METHODS[name].max_integers is not None  # integer data only
        result = treedp.quantiles(
            np.round(values).astype(int) if integers else values,
            [0.25, 0.5, 0.75],
            epsilon=1.0,
            bounds=(0, 100),
            method=name,
            rng=treedp.InsecureSeededSource(5),
        )
        assert result.method == name and np.all(np.diff(result.value) >= 0)
        assert abs(result.value[1] - 50) < 10


@pytest.mark.parametrize(
    ("bounds", "bins", "match"),
    [
        ("private", "integers", "needs public bounds"),
        ((0, 2**20), "integers", "at most 1048576"),
        ((0, 100), None, "needs bins='integers'"),
        ((0, 100), 64, "needs bins='integers'"),
    ],
)
def test_permute_and_flip_refuses_before_the_charge(
    bounds: object, bins: object, match: str
) -> None:
    acct = treedp.Accountant(treedp.PureDP(1.0))
    with pytest.raises(treedp.InvalidParameterError, match=match):
        treedp.quantiles(
            np.arange(10.0), 0.5, bounds=bounds, bins=bins, epsilon=0.5,
            method="permute_and_flip", accountant=acct,
        )  # fmt: skip
    assert acct.spent.epsilon == 0


Q = np.arange(1, 100) / 100


def _rank_error(x: np.ndarray, v: np.ndarray, q: np.ndarray) -> float:
    xs = np.sort(x)
    lo, hi = np.searchsorted(xs, v, "left"), np.searchsorted(xs, v, "right")
    t = q * x.size
    return float(np.mean(np.maximum(0.0, np.maximum(lo - t, t - hi))))


#: Data for the paired claims below: name, draw, bounds.
_SHAPES = {
    "uniform": (lambda r, n: r.uniform(0.0, 1.0, n), (0.0, 1.0)),
    "lognormal": (lambda r, n: r.lognormal(0.0, 1.0, n), (0.0, 100.0)),
    "normal": (lambda r, n: r.normal(0.0, 5.0, n), (-50.0, 50.0)),
    "u-shaped": (lambda r, n: r.beta(0.5, 0.5, n), (0.0, 1.0)),
    "zero-inflated": (
        lambda r, n: np.where(r.uniform(0.0, 1.0, n) < 0.4, 0.0, r.uniform(0.0, 1.0, n)),
        (0.0, 1.0),
    ),
}


def _paired(
    name: str, n: int, monkeypatch: pytest.MonkeyPatch, method: str = "auto"
) -> tuple[np.ndarray, np.ndarray, list[float | None]]:
    """Rank errors with and without the shrinkage (same data and seeds), and the shrinkage."""
    draw, bounds = _SHAPES[name]
    data = [draw(np.random.default_rng(rep), n) for rep in range(30)]

    def errors(kept: list[float | None]) -> np.ndarray:
        out = []
        for rep, x in enumerate(data):
            seed = treedp.InsecureSeededSource(TEST_SEED + rep)
            res = treedp.quantiles(x, Q, epsilon=0.1, bounds=bounds, rng=seed, method=method)
            assert res.method == "tree"
            kept.append(res.shrinkage)
            out.append(_rank_error(x, np.asarray(res.values, dtype=float), Q))
        return np.asarray(out)

    kept: list[float | None] = []
    shrunk = errors(kept)
    with monkeypatch.context() as m:
        m.setattr(quantile_methods, "shrunk_quantiles", lambda rel, qa: (rel.quantile(qa), 1.0))
        plain = errors([])
    return shrunk, plain, kept


def test_the_tree_reads_uniform_data_toward_the_uniform_law(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``treedp.quantiles``' tree at ``n · ε = 100`` (99 levels, no ``n``), paired with the
    release's own reading: on uniform data most releases are shrunk and the mean rank error
    falls by more than a quarter, beyond ``z(ALPHA)`` standard errors of the paired difference
    (docs/quantiles.md, "Shrinking toward the uniform law": 37 → 18). Fails with the shrinkage
    removed (a mutant)."""
    shrunk, plain, kept = _paired("uniform", 1000, monkeypatch)
    assert sum(k is not None and k < 1 for k in kept) >= 20
    d = shrunk - plain
    assert d.mean() + z_two_sided() * d.std(ddof=1) / math.sqrt(d.size) < -plain.mean() / 4


@pytest.mark.parametrize(
    ("name", "n", "method"),
    [
        ("lognormal", 1000, "auto"),
        ("normal", 1000, "auto"),
        ("lognormal", 200, "auto"),  # n · ε = 20: too noisy for its total, never shrunk
        ("zero-inflated", 1000, "tree"),  # 2048 bins at n · ε = 100: the same
    ],
)
def test_a_clear_shape_or_a_noisy_release_is_read_as_released(
    name: str, n: int, method: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the shape stands out (``R >= 10``) or the release is too noisy for its total
    (:data:`~treedp.estimation.shrinkage.MAX_RELATIVE_NOISE`), the answers are the
    release's own, bit for bit, and :attr:`QuantilesResult.shrinkage` says 1. James–Stein's
    factor, or the factor without its keep-all or its noise rule, fails here (a review's
    cells: lognormal of 200 records lost 12% of its rank error, the 40% zeros 0.3%)."""
    shrunk, plain, kept = _paired(name, n, monkeypatch, method)
    assert kept == [1.0] * len(kept)
    np.testing.assert_array_equal(shrunk, plain)


def test_a_shape_near_its_noise_loses_nothing_measurable(monkeypatch: pytest.MonkeyPatch) -> None:
    """U-shaped data (beta(½, ½), ``R`` about 3.5 at this noise: partly shrunk): the paired
    mean rank error rises by at most 2% of the unshrunk one plus ``z(ALPHA)`` standard errors
    (measured: it falls, 31.2 → 30.0)."""
    shrunk, plain, kept = _paired("u-shaped", 1000, monkeypatch)
    assert any(k is not None and 0 < k < 1 for k in kept)
    d = shrunk - plain
    assert d.mean() - z_two_sided() * d.std(ddof=1) / math.sqrt(d.size) <= 0.02 * plain.mean()


def test_the_result_states_its_shrinkage() -> None:
    """:attr:`QuantilesResult.shrinkage`: None for a selection method and integer bins, the
    share kept for the tree on numeric bins (in the short ``repr`` when below 1)."""
    rng = np.random.default_rng(TEST_SEED)
    x = rng.uniform(0.0, 1.0, 1000)
    seed = treedp.InsecureSeededSource(TEST_SEED)
    assert treedp.quantiles(x, [0.5], epsilon=1.0, bounds=(0, 1), rng=seed).shrinkage is None
    ints = rng.poisson(3, 1000).astype(float)
    res = treedp.quantiles(ints, Q, epsilon=1.0, bounds=(0, 20), bins="integers", rng=seed)
    assert res.method == "tree" and res.shrinkage is None
    kept = [
        treedp.quantiles(x, Q, epsilon=0.1, bounds=(0, 1), rng=treedp.InsecureSeededSource(s))
        for s in range(TEST_SEED, TEST_SEED + 10)
    ]
    shrunk = [r for r in kept if r.shrinkage is not None and r.shrinkage < 1]
    assert shrunk and f"shrinkage={shrunk[0].shrinkage:.3g}" in repr(shrunk[0])
