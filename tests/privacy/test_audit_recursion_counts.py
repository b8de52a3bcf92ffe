"""Exact audit of the recursive quantiles with their anchoring side counts, with mutants.

On a tiny public grid (``2**3`` points, levels 1/4, 1/2, 3/4: a root with two leaf children)
the law of the whole output, the root's unit ``u``, its two noisy side counts ``(L̂, R̂)``
and the children's units, is a product of the implementation's pieces: the root's
exponential-mechanism law, two discrete Laplace laws centred on
:func:`~treedp.value_methods.quantiles_recursive.side_counts`, and each child's law given the
counts (:func:`~treedp.value_methods.recursion_anchor.anchored_level`: a point mass on the
child's end, or the exponential mechanism at the level and rate the implementation chooses).
Given ``(u, L̂, R̂)`` the children are independent, so the largest log-ratio over all outputs
of two neighbouring datasets is the maximum over ``(u, L̂, R̂)`` of the root's, the counts'
and each child's largest log-ratio, added: computed exactly over a window of counts
(``WINDOW`` beyond the data's counts on each side, which holds every branch of the children's
rule: rescaled, anchored inside, either end), and compared with the claimed ``ε_spent``.
The rule's threshold (:data:`~treedp.value_methods.recursion_anchor.SIGMAS`) is public
post-processing: the audit runs with it forced to 0 (the anchored branch almost everywhere)
and to infinity (Kaplan et al.'s rescaled levels), and with the default. The counts' step is
also audited on its own against its claim (exact: it reaches it); mutants with the wrong
count sensitivity under ``replace`` or a count over overlapping sides exceed it, and one
that gives the counts the level's whole budget exceeds the whole claim. A chi-square test ties
the implementation's sampler to the law of the units (the counts summed out).

Below the root (which the exact audits' two recursion levels never reach with counts), two
spies: every count draw of a 7-level recursion has at least the scale its level is charged
for (catches counts below the root drawn at 4x their budget), and with the counts' noise
fixed far above ``n`` every anchor a child reads, at depths 1 and 2 (``Anchor.children``),
holds the released counts, not the exact ones (catches anchors on exact counts at the root or
deeper).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp.noise import InsecureSeededSource
from treedp.noise.discrete_laplace import discrete_laplace_pmf
from treedp.value_methods import quantiles_recursive as qr
from treedp.value_methods import recursion_anchor as ra
from treedp.value_methods.exponential_core import Grid

BITS = 3
BOUNDS = (0.0, 8.0)
LEVELS = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
WINDOW = 8
BASES = [
    [1.5, 4.5, 6.5],
    [0.5, 0.5, 7.5],
    [3.5, 3.5, 3.5, 5.5],
    [0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5],
    [3.5] * 6,
]
GRID = Grid(BOUNDS[0], BOUNDS[1], BITS)
POINTS = GRID.values(np.arange(1 << BITS))


def _plan(eps: float, relation: str) -> Any:
    plan = qr._plan(LEVELS, 0, 3, Fraction(0), Fraction(1), 0,
                    qr._level_epsilons(Fraction(eps), 3), relation)  # fmt: skip
    assert plan is not None and plan.left is not None and plan.right is not None
    return plan


def _em_log_law(x: np.ndarray, first: int, last: int, level: Fraction, rate: Fraction) -> Any:
    """``log P(unit)`` of one selection on units ``first..last`` (the implementation's score:
    ``-|#{x < point} - t|``, ``t`` the target rounded down to ``2**-32``)."""
    target = math.floor(level * x.size * 2**32) / 2**32
    ranks = np.searchsorted(x, POINTS[first : last + 1], side="left")
    score = -float(rate) * np.abs(ranks - target)
    top = score.max()
    return np.asarray(score - top - math.log(np.exp(score - top).sum()))


def _child_log_law(node: Any, x: np.ndarray, first: int, last: int, key: Any,
                   relation: str) -> np.ndarray:  # fmt: skip
    """A child's ``log P(unit)`` over ``first..last`` given its rule's outcome ``key``."""
    if key in (ra.LOW, ra.HIGH):
        out = np.full(last - first + 1, -np.inf)
        out[0 if key == ra.LOW else -1] = 0.0
        return out
    return _em_log_law(x, first, last, key, qr._anchored_rate(node, key, relation))


def _pieces(x: np.ndarray, plan: Any, relation: str, windows: Any) -> dict:
    """For each root unit: its log-probability, the counts' centres, and each child's
    log-law for each count pair of the window."""
    x = np.sort(x)
    root = _em_log_law(x, 0, 7, plan.level, plan.rate)
    out = {}
    for u in range(8):
        point = qr._split_point(plan, GRID, u)
        below, above = qr.side_counts(x, point)
        split = int(np.searchsorted(x, point, side="left"))
        kids, seen = {}, {}
        for lh, rh in windows:
            left, right = ra.root_anchor(np.array([lh]), np.array([rh]), plan.count_scale)
            kl = ra.anchored_level(plan.left.q, plan.left.level, left, 0)
            kr = ra.anchored_level(plan.right.q, plan.right.level, right, 0)
            if (0, kl) not in seen:
                seen[(0, kl)] = _child_log_law(plan.left, x[:split], 0, u, kl, relation)
            if (1, kr) not in seen:
                seen[(1, kr)] = _child_log_law(plan.right, x[split:], u, 7, kr, relation)
            kids[(lh, rh)] = (seen[(0, kl)], seen[(1, kr)])
        out[u] = (root[u], below, above, kids)
    return out


def _worst(d: np.ndarray, d2: np.ndarray, eps: float, relation: str) -> tuple[float, float]:
    """The exact largest log-ratio of the whole output over the window, and of the counts'
    step alone, for the pair ``(d, d2)``."""
    plan = _plan(eps, relation)
    top = max(d.size, d2.size) + WINDOW
    windows = [(a, b) for a in range(-WINDOW, top + 1) for b in range(-WINDOW, top + 1)]
    p, p2 = _pieces(d, plan, relation, windows), _pieces(d2, plan, relation, windows)
    scale = plan.count_scale
    worst, counts = 0.0, 0.0
    for u in range(8):
        r1, b1, a1, k1 = p[u]
        r2, b2, a2, k2 = p2[u]
        counts = max(counts, (abs(b1 - b2) + abs(a1 - a2)) / float(scale))
        for lh, rh in windows:
            c = float(
                np.log(discrete_laplace_pmf(np.array([lh - b1, rh - a1]), scale)).sum()
                - np.log(discrete_laplace_pmf(np.array([lh - b2, rh - a2]), scale)).sum()
            )
            for sign in (1.0, -1.0):
                total = sign * (r1 - r2 + c)
                for law1, law2 in zip(k1[(lh, rh)], k2[(lh, rh)], strict=True):
                    held = np.isfinite(law1) | np.isfinite(law2)
                    total += float(np.max(sign * (law1[held] - law2[held])))
                worst = max(worst, total)
    return worst, counts


def _pairs(relation: str):
    for base in BASES:
        d = np.array(base)
        for v in (0.5, 3.5, 4.5, 7.5):
            if relation == "add_remove":
                yield d, np.append(d, v)
            else:
                for i in (0,):
                    d2 = d.copy()
                    d2[i] = v
                    yield d, d2


def _audit(eps: float, relation: str) -> tuple[float, float]:
    worst, counts = 0.0, 0.0
    for d, d2 in _pairs(relation):
        w, c = _worst(d, d2, eps, relation)
        worst, counts = max(worst, w), max(counts, c)
    return worst, counts


def _claims(eps: float, relation: str) -> tuple[float, float]:
    plan = _plan(eps, relation)
    spent = float(sum(qr._depth_losses(plan, relation), Fraction(0)))
    return spent, float(qr._node_parts(plan, relation)[1])


@pytest.mark.slow
@pytest.mark.parametrize("sigmas", [0.0, ra.SIGMAS, math.inf])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_recursion_with_counts_exact_loss_within_claim(
    relation: str, sigmas: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole output's exact largest log-ratio stays within ``ε_spent``, and the counts'
    step within its own claim, which it reaches (the claim is not loose). ``COUNT_SHARE`` is
    raised to 1/2 so that the counts' noise is comparable to the tiny data."""
    monkeypatch.setattr(qr, "COUNT_SHARE", Fraction(1, 2))
    monkeypatch.setattr(ra, "SIGMAS", sigmas)
    spent, count_claim = _claims(2.0, relation)
    assert spent <= 2.0
    worst, counts = _audit(2.0, relation)
    assert worst <= spent + 1e-9
    assert counts <= count_claim + 1e-12 and counts >= count_claim * (1 - 1e-9)
    assert worst > 0.3 * spent  # the pairs are not vacuous


def test_mutant_count_sensitivity_one_under_replace_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counts calibrated to sensitivity 1 under ``replace`` (a record moved from one side to
    the other changes two counts): the counts' step exceeds its claim."""
    for module in (ra, qr):  # the scale and the claim both read it
        monkeypatch.setattr(module, "count_sensitivity", lambda relation: 1)
    _, count_claim = _claims(2.0, "replace")
    d = np.array(BASES[0])
    d2 = d.copy()
    d2[0] = 7.5  # from the root's left side to its right side at some released units
    assert _worst(d, d2, 2.0, "replace")[1] > count_claim * 1.5


def test_mutant_counts_over_overlapping_sides_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sides that overlap (a record at the split point counted on both): one added record
    moves two counts, and the counts' step exceeds its claim."""

    def overlapping(x: np.ndarray, point: float) -> tuple[int, int]:
        return int(np.sum(x <= point)), int(np.sum(x >= point))

    monkeypatch.setattr(qr, "side_counts", overlapping)
    _, count_claim = _claims(2.0, "add_remove")
    d = np.array(BASES[0])
    assert _worst(d, np.append(d, 3.5), 2.0, "add_remove")[1] > count_claim * 1.5


@pytest.mark.slow
def test_mutant_counts_with_the_whole_level_budget_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counts drawn at the level's whole budget on top of the selection's share (claims
    unchanged): the whole output's loss exceeds ``ε_spent``."""
    monkeypatch.setattr(qr, "COUNT_SHARE", Fraction(1, 2))
    monkeypatch.setattr(ra, "SIGMAS", math.inf)
    spent, _ = _claims(2.0, "add_remove")
    real = qr._plan

    def overspending(*args: Any) -> Any:
        node = real(*args)
        if node is not None and node.count_scale is not None:
            node = qr._Plan(**{**node.__dict__, "count_scale": node.count_scale / 8})
        return node

    monkeypatch.setattr(qr, "_plan", overspending)
    d = np.array(BASES[0])
    assert _worst(d, np.append(d, 0.5), 2.0, "add_remove")[0] > spent + 0.5


@pytest.mark.slow
def test_recursion_sampler_follows_the_exact_law(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chi-square of 20,000 draws of the implementation's units against the exact law (the
    counts summed out over ``±40`` around their centres, the rest below ``e^{-19}``)."""
    monkeypatch.setattr(qr, "COUNT_SHARE", Fraction(1, 2))
    monkeypatch.setattr(ra, "SIGMAS", 0.0)
    d = np.sort(np.array([1.5, 4.5, 6.5, 3.5]))
    plan = _plan(2.0, "add_remove")
    law: dict[tuple[int, int, int], float] = {}
    for u in range(8):
        point = qr._split_point(plan, GRID, u)
        below, above = qr.side_counts(d, point)
        ls, rs = np.arange(below - 40, below + 41), np.arange(above - 40, above + 41)
        pl = discrete_laplace_pmf(ls - below, plan.count_scale)
        pr = discrete_laplace_pmf(rs - above, plan.count_scale)
        windows = [(int(a), int(b)) for a in ls for b in rs]
        root, _, _, kids = _pieces(d, plan, "add_remove", windows)[u]
        joint = np.zeros((u + 1, 8 - u))
        for i, j in np.ndindex(ls.size, rs.size):
            left, right = kids[(int(ls[i]), int(rs[j]))]
            joint += pl[i] * pr[j] * np.outer(np.exp(left), np.exp(right))
        for a, b in np.ndindex(joint.shape):
            law[(a, u, u + b)] = math.exp(root) * joint[a, b]
    draws = qr._quantiles_recursive_draws(
        d, [float(v) for v in LEVELS], bounds=BOUNDS, epsilon=2.0, size=20_000,
        rng=InsecureSeededSource(TEST_SEED), grid_bits=BITS,
    )  # fmt: skip
    units = [tuple(int(v) for v in row) for row in np.floor(draws).astype(int)]
    keys = sorted(law, key=lambda k: -law[k])
    probs = np.array([law[k] for k in keys])
    assert abs(probs.sum() - 1) < 1e-6
    cells = probs * len(units) >= 20
    index = {k: i for i, k in enumerate(keys)}
    counts = np.zeros(len(keys))
    for row in units:
        counts[index[row]] += 1
    obs = np.r_[counts[cells], counts[~cells].sum()]
    exp = np.r_[probs[cells], probs[~cells].sum()] * len(units)
    if not (~cells).any():
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def _spy_depths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Wrap ``_run`` (it recurses through the module's name) to keep the depth of the node
    being run on a stack; the stack's top is the node whose counts are drawn."""
    real = qr._run
    stack: list[int] = []

    def run(plan: Any, *args: Any, **kwargs: Any) -> None:
        stack.append(-1 if plan is None else plan.depth)
        try:
            real(plan, *args, **kwargs)
        finally:
            stack.pop()

    monkeypatch.setattr(qr, "_run", run)
    return stack


@pytest.mark.parametrize("split", [qr.SPLIT_POWER, 0.5])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_every_side_count_is_drawn_at_its_levels_charged_scale(
    relation: str, split: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spy on the counts' sampler in a 7-level recursion (99 quantile levels): every draw at
    depth ``d`` has a scale of at least ``sens / (s·ε_d)``, the scale the claim charges
    (the exact audits run one level with counts only)."""
    monkeypatch.setattr(qr, "SPLIT_POWER", split)
    stack = _spy_depths(monkeypatch)
    seen: list[tuple[int, Fraction]] = []
    real = qr.sample_discrete_laplace

    def spy(scale: Fraction, size: int, source: Any) -> np.ndarray:
        seen.append((stack[-1], Fraction(scale)))
        return real(scale, size, source)

    monkeypatch.setattr(qr, "sample_discrete_laplace", spy)
    x = np.random.default_rng(TEST_SEED).normal(size=500)
    qr._quantiles_recursive_draws(
        x, np.arange(1, 100) / 100, bounds=(-5, 5), epsilon=1.0, size=3, neighbours=relation,
        rng=InsecureSeededSource(TEST_SEED),
    )  # fmt: skip
    eps = qr._level_epsilons(Fraction(1), 99)
    assert {d for d, _ in seen} == set(range(len(eps) - 1))  # every level with children
    sens = qr.count_sensitivity(relation)
    assert all(scale >= sens / (eps[d] * qr.COUNT_SHARE) for d, scale in seen)


def test_children_anchor_on_the_released_counts_at_every_depth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The counts' noise fixed at ``K`` (far above ``n``) and the anchored branch forced
    (``SIGMAS = 0``) in a 3-level recursion (7 quantile levels, so ``Anchor.children`` runs):
    every anchor a child reads holds the released counts, ``N̂ = n + 2K``, ``Ŝ`` its exact side
    plus ``K``, ``Ô`` its left siblings' exact records plus ``K`` each, never the exact counts;
    and the level each child targets is the rule's on those counts."""
    n, big = 60, 10_000
    monkeypatch.setattr(ra, "SIGMAS", 0.0)
    monkeypatch.setattr(
        qr, "sample_discrete_laplace", lambda scale, size, source: np.full(size, big)
    )
    calls: list[tuple[str, int, int, int, Fraction, Any]] = []
    real = qr.anchored_level

    def spy(q: Fraction, level: Fraction, anchor: Any, row: int) -> Any:
        key = real(q, level, anchor, row)
        sizes = (int(anchor.total[row]), int(anchor.offset[row]), int(anchor.size[row]))
        calls.append((anchor.path, *sizes, q, key))
        a = q * sizes[0] - sizes[1]  # the rule at SIGMAS = 0, on the recorded counts
        rule = level if a == level * sizes[2] else ra.LOW if a <= 0 else (
            ra.HIGH if a >= sizes[2] else a / sizes[2])  # fmt: skip
        assert key == rule
        return key

    monkeypatch.setattr(qr, "anchored_level", spy)
    x = np.random.default_rng(TEST_SEED).uniform(0, 8, size=n)
    qr._quantiles_recursive_draws(
        x, np.arange(1, 8) / 8, bounds=(0, 8), epsilon=4.0, size=4,
        rng=InsecureSeededSource(TEST_SEED),
    )  # fmt: skip
    assert {path for path, *_ in calls} == {"L", "R", "LL", "LR", "RL", "RR"}
    for path, total, offset, size, _, _ in calls:
        assert total == n + 2 * big
        assert 0 <= size - big <= n
        assert 0 <= offset - big * path.count("R") <= n
