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
rule: rescaled, anchored inside, either end), and compared with the claimed ``ε_spent``; each
recursion level's own (level 0: the root's unit and counts; level 1: the children given
them) is compared with that level's claim. Under ``replace`` every record of each dataset is
replaced in turn (moves inside a child and between the two). As one child's slack can hide
the other's overspend on such tiny data, a per-node check holds each child's selection at its
run-time rate to its allotment (``share / 2`` for a record added or removed under
``replace``) on larger seeded datasets (catches the root's rate ``share / 2`` given to the
children).
The rule's threshold (:data:`~treedp.value_methods.recursion_anchor.SIGMAS`) is public
post-processing: the audit runs with it forced to 0 (the anchored branch almost everywhere)
and to infinity (Kaplan et al.'s rescaled levels, but below a root that released an end of
the grid, whose children take the anchored branch), and with the default. The counts' step is
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

from tests.privacy.test_audit_quantiles import BASES as AUDIT_BASES
from tests.stats import ALPHA, TEST_SEED
from treedp.noise import InsecureSeededSource
from treedp.noise.discrete_laplace import discrete_laplace_pmf
from treedp.value_methods import quantiles_recursive as qr
from treedp.value_methods import recursion_anchor as ra
from treedp.value_methods import recursion_budget as rb
from treedp.value_methods.exponential_core import Grid

BITS = 3
BOUNDS = (0.0, 8.0)
LEVELS = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
WINDOW = 8
BASES = AUDIT_BASES[:5]  # the recursion audit's datasets on the same tiny grid
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
                   relation: str, rates: dict | None = None) -> np.ndarray:  # fmt: skip
    """A child's ``log P(unit)`` over ``first..last`` given its rule's outcome ``key`` (at
    the grid's edge, where no point was released, :data:`~ra.LOW` / :data:`~ra.HIGH` select
    at level 0 / 1 among its records). ``rates`` keeps the child's run-time rate per outcome
    (no data in it) while ``node``'s plan lives."""
    if (key == ra.LOW and first == 0) or (key == ra.HIGH and last == 7):
        key = Fraction(int(key == ra.HIGH))
    if key in (ra.LOW, ra.HIGH):
        out = np.full(last - first + 1, -np.inf)
        out[0 if key == ra.LOW else -1] = 0.0
        return out
    if rates is None:
        return _em_log_law(x, first, last, key, qr._anchored_rate(node, key, relation))
    if (id(node), key) not in rates:
        rates[(id(node), key)] = qr._anchored_rate(node, key, relation)
    return _em_log_law(x, first, last, key, rates[(id(node), key)])


def _keys(plan: Any, side: np.ndarray, outcomes: list[Any],
          pinned: bool = False) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Each child's rule outcome for each count pair ``(L̂, R̂)`` of ``side × side`` (the
    released counts and whether the root released an end of the grid, ``pinned``: no data,
    so computed once per plan), as indices into ``outcomes``, the distinct outcomes (grown
    here)."""
    ids = np.empty((2, side.size, side.size), dtype=np.int64)
    for i, j in np.ndindex(side.size, side.size):
        left, right = ra.root_anchor(side[i : i + 1], side[j : j + 1], plan.count_scale,
                                     pinned)  # fmt: skip
        for child, (node, anchor) in enumerate(((plan.left, left), (plan.right, right))):
            key = ra.anchored_level(node.q, node.level, anchor, 0)
            if key not in outcomes:
                outcomes.append(key)
            ids[child, i, j] = outcomes.index(key)
    return ids[0], ids[1]


Keys = dict[bool, tuple[np.ndarray, np.ndarray]]


def _all_keys(plan: Any, side: np.ndarray) -> tuple[Keys, dict[bool, list[Any]]]:
    """:func:`_keys` below a root unit inside the grid (``False``) and at its ends (``True``:
    the root pinned its children), each with its own list of outcomes (few inside, where the
    rescaled level is mostly kept)."""
    outcomes: dict[bool, list[Any]] = {False: [], True: []}
    ids = {pinned: _keys(plan, side, outcomes[pinned], pinned) for pinned in (False, True)}
    return ids, outcomes


def _pieces(x: np.ndarray, plan: Any, relation: str, outcomes: dict[bool, list[Any]],
            rates: dict | None = None) -> dict:  # fmt: skip
    """For each root unit: its log-probability, the counts' centres, and each child's
    log-law for each outcome of its rule (the pinned outcomes at the grid's ends)."""
    rates = {} if rates is None else rates
    x = np.sort(x)
    root = _em_log_law(x, 0, 7, plan.level, plan.rate)
    out = {}
    for u in range(8):
        keys = outcomes[u in (0, 7)]
        point = qr._split_point(plan, GRID, u)
        below, above = qr.side_counts(x, point)
        split = int(np.searchsorted(x, point, side="left"))
        laws = [
            [_child_log_law(plan.left, x[:split], 0, u, key, relation, rates) for key in keys],
            [_child_log_law(plan.right, x[split:], u, 7, key, relation, rates) for key in keys],
        ]
        out[u] = (root[u], below, above, laws)
    return out


def _largest(law1: list[np.ndarray], law2: list[np.ndarray]) -> np.ndarray:
    """Per rule outcome, the largest log-ratio of one child's law, both signs: ``(2, k)``."""
    out = np.empty((2, len(law1)))
    for k, (a, b) in enumerate(zip(law1, law2, strict=True)):
        held = np.isfinite(a) | np.isfinite(b)
        out[0, k], out[1, k] = np.max(a[held] - b[held]), np.max(b[held] - a[held])
    return out


def _worst(d: np.ndarray, d2: np.ndarray, eps: float, relation: str,
           memo: dict | None = None) -> tuple[float, ...]:  # fmt: skip
    """The exact largest log-ratio for the pair ``(d, d2)`` over the window: of the whole
    output; of level 0 (the root's unit and counts); of level 1 given level 0's output (the
    two children, independent given it: their largest log-ratios of one sign added); and
    of the counts' step alone. ``memo`` keeps what holds no data (the plan, the rules'
    outcomes per window, the rates) and the first dataset's pieces while it recurs."""
    memo = {} if memo is None else memo
    if "plan" not in memo:
        memo["plan"] = _plan(eps, relation)
    plan = memo["plan"]
    side = np.arange(-WINDOW, max(d.size, d2.size) + WINDOW + 1)
    if side.size not in memo:
        memo[side.size] = _all_keys(plan, side)
    ids, outcomes = memo[side.size]
    rates = memo.setdefault("rates", {})
    base = (side.size, np.sort(d).tobytes())  # the first dataset recurs across the pairs
    if memo.get("base") != base:
        memo["base"], memo["pieces"] = base, _pieces(d, plan, relation, outcomes, rates)
    p, p2 = memo["pieces"], _pieces(d2, plan, relation, outcomes, rates)
    scale = plan.count_scale
    whole = level0 = level1 = counts = 0.0
    for u in range(8):
        left_ids, right_ids = ids[u in (0, 7)]
        r1, b1, a1, k1 = p[u]
        r2, b2, a2, k2 = p2[u]
        counts = max(counts, (abs(b1 - b2) + abs(a1 - a2)) / float(scale))
        cl = np.log(discrete_laplace_pmf(side - b1, scale) / discrete_laplace_pmf(side - b2, scale))
        cr = np.log(discrete_laplace_pmf(side - a1, scale) / discrete_laplace_pmf(side - a2, scale))
        first = r1 - r2 + cl[:, None] + cr[None, :]  # level 0's log-ratio at (u, L̂, R̂)
        kl, kr = _largest(k1[0], k2[0]), _largest(k1[1], k2[1])
        up = kl[0][left_ids] + kr[0][right_ids]  # level 1's, given (u, L̂, R̂), each sign
        down = kl[1][left_ids] + kr[1][right_ids]
        level0 = max(level0, float(np.abs(first).max()))
        level1 = max(level1, float(np.maximum(up, down).max()))
        whole = max(whole, float(np.maximum(first + up, down - first).max()))
    return whole, counts, level0, level1


def _pairs(relation: str, bases=None, values=(0.5, 3.5, 4.5, 7.5)):  # type: ignore[no-untyped-def]
    """Every base (:data:`BASES` by default) with one record of ``values`` added (add_remove),
    or with each of its records in turn replaced (replace: moves inside a child and between
    the two children)."""
    for base in BASES if bases is None else bases:
        d = np.array(base)
        for v in values:
            if relation == "add_remove":
                yield d, np.append(d, v)
            else:
                for i in range(d.size):
                    if d[i] != v:
                        d2 = d.copy()
                        d2[i] = v
                        yield d, d2


def _audit(eps: float, relation: str) -> tuple[float, ...]:
    """The largest of each of :func:`_worst`'s log-ratios over :func:`_pairs`."""
    out = np.zeros(4)
    memo: dict = {}
    for d, d2 in _pairs(relation):
        out = np.maximum(out, _worst(d, d2, eps, relation, memo))
    return tuple(float(v) for v in out)


def _claims(eps: float, relation: str) -> tuple[float, float, list[float]]:
    """``ε_spent``, the counts' claimed loss, and each level's claimed loss."""
    plan = _plan(eps, relation)
    levels = qr._depth_losses(plan, relation)
    spent = float(sum(levels, Fraction(0)))
    return spent, float(qr._node_parts(plan, relation)[1]), [float(v) for v in levels]


@pytest.mark.slow
@pytest.mark.parametrize("sigmas", [0.0, ra.SIGMAS, math.inf])
@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_recursion_with_counts_exact_loss_within_claim(
    relation: str, sigmas: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole output's exact largest log-ratio stays within ``ε_spent``, each recursion
    level's (given the earlier levels' output) within that level's claim, and the counts'
    step within its own claim, which it reaches (the claim is not loose). ``COUNT_SHARE`` is
    raised to 1/2 so that the counts' noise is comparable to the tiny data."""
    monkeypatch.setattr(qr, "COUNT_SHARE", Fraction(1, 2))
    monkeypatch.setattr(ra, "SIGMAS", sigmas)
    spent, count_claim, levels = _claims(2.0, relation)
    assert spent <= 2.0
    worst, counts, level0, level1 = _audit(2.0, relation)
    assert worst <= spent + 1e-9
    assert level0 <= levels[0] + 1e-9 and level1 <= levels[1] + 1e-9
    assert counts <= count_claim + 1e-12 and counts >= count_claim * (1 - 1e-9)
    assert worst > 0.3 * spent and level1 > 0.3 * levels[1]  # the pairs are not vacuous


#: Anchored levels for the per-node check: small ones (``Δ`` near 1) and their mirrors.
KEYS = [Fraction(1, 64), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(7, 8)]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
def test_each_anchored_child_spends_at_most_its_allotment(relation: str) -> None:
    """Per node (the audit above holds tiny data, where one child's slack hides the other's
    overspend): a child's selection at its run-time rate (:func:`_anchored_rate`), for a
    record added or removed, costs at most ``share / 2`` under ``replace`` (a move between
    two nodes: each pays half) and ``share`` under ``add_remove``; for a record replaced
    inside it (``replace``), at most ``share``. Exact log-laws over 1,500 seeded datasets of
    up to 60 records on the 8-point grid; the first bound is nearly reached."""
    node = _plan(2.0, relation).left
    share = float(node.share)
    moved = share / 2 if relation == "replace" else share
    rng = np.random.default_rng(TEST_SEED)
    worst_moved = worst_inside = 0.0
    for key in KEYS:
        rate = qr._anchored_rate(node, key, relation)
        for _ in range(300):
            x = np.sort(rng.integers(0, 8, int(rng.integers(1, 60))) + 0.5)
            law = _em_log_law(x, 0, 7, key, rate)
            added = np.sort(np.append(x, rng.integers(0, 8) + 0.5))
            worst_moved = max(worst_moved, np.abs(law - _em_log_law(added, 0, 7, key, rate)).max())
            swapped = x.copy()
            swapped[rng.integers(x.size)] = rng.integers(0, 8) + 0.5
            swapped_law = _em_log_law(np.sort(swapped), 0, 7, key, rate)
            worst_inside = max(worst_inside, np.abs(law - swapped_law).max())
    assert 0.85 * moved < worst_moved <= moved + 1e-9
    if relation == "replace":  # under add_remove a swap is two neighbouring steps
        assert worst_inside <= share + 1e-9


def test_mutant_count_sensitivity_one_under_replace_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counts calibrated to sensitivity 1 under ``replace`` (a record moved from one side to
    the other changes two counts): the counts' step exceeds its claim."""
    for module in (ra, qr, rb):  # the scale and the claim both read it
        monkeypatch.setattr(module, "count_sensitivity", lambda relation: 1)
    count_claim = _claims(2.0, "replace")[1]
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
    count_claim = _claims(2.0, "add_remove")[1]
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
    spent = _claims(2.0, "add_remove")[0]
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
@pytest.mark.parametrize("sigmas", [0.0, math.inf])
def test_recursion_sampler_follows_the_exact_law(
    sigmas: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chi-square of 20,000 draws of the implementation's units against the exact law (the
    counts summed out over ``±40`` around their centres, the rest below ``e^{-19}``). At
    ``SIGMAS`` 0 every child takes the anchored branch; at infinity only the children of a
    root that released an end of the grid do (``Anchor.pinned``, modelled here apart from the
    implementation): a root that never pins fails it (the privacy review of session 23
    measured p = 1e-277 with the rule removed from the code, and 0 with it read from the
    records)."""
    monkeypatch.setattr(qr, "COUNT_SHARE", Fraction(1, 2))
    monkeypatch.setattr(ra, "SIGMAS", sigmas)
    d = np.sort(np.array([1.5, 4.5, 6.5, 3.5]))
    plan = _plan(2.0, "add_remove")
    law: dict[tuple[int, int, int], float] = {}
    side = np.arange(-40, d.size + 41)
    ids, outcomes = _all_keys(plan, side)
    pieces = _pieces(d, plan, "add_remove", outcomes)
    for u in range(8):
        left_ids, right_ids = ids[u in (0, 7)]
        root, below, above, (left, right) = pieces[u]
        pl = discrete_laplace_pmf(side - below, plan.count_scale)
        pr = discrete_laplace_pmf(side - above, plan.count_scale)
        n_out = len(outcomes[u in (0, 7)])
        weight = np.zeros((n_out, n_out))  # P(the children's outcomes)
        np.add.at(weight, (left_ids, right_ids), np.outer(pl, pr))
        joint = np.zeros((u + 1, 8 - u))
        for i, j in zip(*np.nonzero(weight), strict=True):
            joint += weight[i, j] * np.outer(np.exp(left[i]), np.exp(right[j]))
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
