"""Privacy audits of the recursive quantiles and of the private bounds, with mutants.

Recursive quantiles: on a tiny public grid (``2**3`` points) the joint law of the released
units is computed exactly (a product of exponential-mechanism laws down the recursion, with the
rates the implementation plans), and the largest likelihood ratio over every output of
neighbouring datasets is compared with ``e^ε_spent``: a brute-force check, no sampling. A
chi-square test ties the implementation's sampler to that law (false-failure rate ``ALPHA``).
The audit holds for unequal budget splits over the recursion levels too; the mutants that give
every recursion level the full ε, or scale an unequal split by its largest weight instead of
the sum, must exceed the claim.

Private bounds: a Monte-Carlo audit (Clopper–Pearson at ``AUDIT_ALPHA``, as auditor.py) of the
released upper bound on a worst-case neighbouring pair; the mutant that reads the data's
maximum directly is flagged.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from tests.privacy.auditor import AUDIT_ALPHA, clopper_pearson
from tests.stats import ALPHA, TEST_SEED
from treedp.mechanisms import private_bounds as pb
from treedp.mechanisms import quantiles_recursive as qr
from treedp.noise import InsecureSeededSource

BITS = 3
BOUNDS = (0.0, 8.0)
LEVELS = [0.25, 0.5, 0.75]


def _grid() -> np.ndarray:
    return qr._Grid(BOUNDS[0], BOUNDS[1], BITS).values(np.arange(1 << BITS))


def _node_law(x: np.ndarray, first: int, last: int, level: Fraction, rate: Fraction) -> dict:
    grid = _grid()
    target = math.floor(level * x.size * 2**32) / 2**32
    scores = {k: -abs(int(np.sum(x < grid[k])) - target) for k in range(first, last + 1)}
    top = max(scores.values())
    w = {k: math.exp(float(rate) * (s - top)) for k, s in scores.items()}
    z = sum(w.values())
    return {k: v / z for k, v in w.items()}


def _joint_law(x: np.ndarray, eps: float, relation: str) -> dict:
    """Exact P(units) for LEVELS on the tiny grid, from the implementation's plan."""
    qs = [Fraction(v) for v in LEVELS]
    plan = qr._plan(
        qs,
        0,
        len(qs),
        Fraction(0),
        Fraction(1),
        0,
        qr._level_epsilons(Fraction(eps), len(qs)),
        relation,
    )
    grid = _grid()

    def law(node, data, first, last):
        if node is None:
            return {(): 1.0}
        out = {}
        for unit, p in _node_law(data, first, last, node.level, node.rate).items():
            below = data[data < grid[unit]]
            above = data[data >= grid[unit]]
            for lk, lp in law(node.left, below, first, unit).items():
                for rk, rp in law(node.right, above, unit, last).items():
                    out[((node.mid, unit), *lk, *rk)] = p * lp * rp
        return out

    return {tuple(u for _, u in sorted(k)): p for k, p in law(plan, np.sort(x), 0, 7).items()}


#: Small datasets on the tiny grid's cells; every neighbour of each is enumerated.
BASES = [
    [1.5, 4.5, 6.5],
    [0.5, 0.5, 7.5],
    [3.5, 3.5, 3.5, 5.5],
    [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5],
    [3.5] * 6,
    [0.5] * 3 + [7.5] * 3,
]


def _pairs(relation: str):
    for d in (np.array(b) for b in BASES):
        for v in np.arange(8) + 0.5:
            if relation == "add_remove":
                yield d, np.append(d, v)
            else:
                for i in range(d.size):
                    d2 = d.copy()
                    d2[i] = v
                    yield d, d2


def _max_loss(eps: float, relation: str) -> float:
    worst = 0.0
    for d, d2 in _pairs(relation):
        p, p2 = _joint_law(d, eps, relation), _joint_law(d2, eps, relation)
        for k in set(p) | set(p2):
            worst = max(worst, abs(math.log(p[k] / p2[k])))
    return worst


#: Budget splits over the recursion levels: the default and two unequal ones (the audit
#: must hold for any split the implementation plans, as the claim sums the level budgets).
SPLITS = [qr.SPLIT_POWER, 0.5, -1.0]


@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_recursive_exact_likelihood_ratio_within_claim(
    relation: str, split: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qr, "SPLIT_POWER", split)
    eps = 1.0
    claimed = qr._quantiles_recursive(
        [1.0], LEVELS, BOUNDS, eps, relation, "error", InsecureSeededSource(1), 1, BITS
    )[3]
    assert claimed <= eps
    loss = _max_loss(eps, relation)
    assert loss <= float(claimed) + 1e-9
    assert loss > 0.3 * eps  # the pairs are not vacuous


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_recursive_mutant_full_epsilon_per_level_is_caught(
    relation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        qr, "_level_epsilons", lambda epsilon, m: (epsilon,) * len(qr.level_counts(m))
    )
    assert _max_loss(1.0, relation) > 1.0 + 1e-6


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_recursive_mutant_unequal_split_not_normalised_is_caught(
    relation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unequal split scaled by its largest weight instead of the sum overspends."""

    def by_largest(epsilon: Fraction, m: int) -> tuple[Fraction, ...]:
        weights = [Fraction(float(c) ** 0.5) for c in qr.level_counts(m)]
        return tuple(epsilon * w / max(weights) for w in weights)

    monkeypatch.setattr(qr, "_level_epsilons", by_largest)
    assert _max_loss(1.0, relation) > 1.0 + 1e-6


@pytest.mark.slow
def test_recursive_sampler_follows_the_exact_law() -> None:
    """Chi-square of 20,000 draws of the implementation against the exact joint law."""
    d = np.array([1.5, 4.5, 6.5, 3.5])
    law = _joint_law(d, 2.0, "add_remove")
    draws = qr._quantiles_recursive_draws(
        d,
        LEVELS,
        bounds=BOUNDS,
        epsilon=2.0,
        size=20_000,
        rng=InsecureSeededSource(TEST_SEED),
        grid_bits=BITS,
    )
    units = np.floor(draws / 1.0).astype(int)  # grid point k is k + 0.5 on (0, 8)
    keys = sorted(law, key=lambda k: -law[k])
    probs = np.array([law[k] for k in keys])
    cells = probs * draws.shape[0] >= 20
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    for row in map(tuple, units):
        counts[index[row]] += 1
    obs = np.r_[counts[cells], counts[~cells].sum()]
    exp = np.r_[probs[cells], probs[~cells].sum()] * draws.shape[0]
    if not (~cells).any():
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def _bounds_hi(data: np.ndarray, runs: int, seed: int) -> np.ndarray:
    src = InsecureSeededSource(seed)
    return np.array([pb.private_bounds(data, epsilon=1.0, rng=src).hi for _ in range(runs)])


def _audit_hi(d: np.ndarray, d2: np.ndarray, runs: int) -> float:
    pilot1, pilot2 = _bounds_hi(d, runs // 4, 1), _bounds_hi(d2, runs // 4, 2)
    best, event = -math.inf, None
    for v, first in itertools.product(np.unique(np.r_[pilot1, pilot2]), (True, False)):
        a, b = (pilot1, pilot2) if first else (pilot2, pilot1)
        k1, k2 = int((a == v).sum()), int((b == v).sum())
        if k1 > 20 and math.log(k1 / max(k2, 0.5)) > best:
            best, event = math.log(k1 / max(k2, 0.5)), (v, first)
    assert event is not None
    v, first = event
    f1, f2 = _bounds_hi(d, runs, 3), _bounds_hi(d2, runs, 4)
    a, b = (f1, f2) if first else (f2, f1)
    low = clopper_pearson(int((a == v).sum()), runs, AUDIT_ALPHA)[0]
    high = clopper_pearson(int((b == v).sum()), runs, AUDIT_ALPHA)[1]
    return math.log(low / high) if low > 0 else -math.inf


D_SMALL = np.full(6, 2.0)
D_ADDED = np.r_[D_SMALL, 9.0]


@pytest.mark.slow
def test_private_bounds_audit_passes() -> None:
    assert _audit_hi(D_SMALL, D_ADDED, 4000) <= 1.0


@pytest.mark.slow
def test_private_bounds_mutant_reading_the_maximum_is_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def reads_extreme(x, t_rho, t_nu, allowance, source):
        return int(np.searchsorted(pb.GRID, x.max() if x.size else 0.0))  # no noise

    monkeypatch.setattr(pb, "_scan_up", reads_extreme)
    assert _audit_hi(D_SMALL, D_ADDED, 4000) > 1.0
