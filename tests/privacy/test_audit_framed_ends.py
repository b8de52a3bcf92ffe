"""The framed nodes' LOW/HIGH branch is decided from released values only (privacy review 13b).

``test_audit_forced_children.py`` models the sibling of a forced child as always selecting
at its frame target; since 3252127 it answers its interval's end when ``anchored_level`` of
its released side counts says LOW/HIGH. Neither that audit (at eps = 2 and n <= 8 the branch
never fires: 5 sigma of the counts' noise is ~140 records) nor its spy test (70% block, level
3/4 outside the block: the branch never fires) exercises the branch, so nothing pins that the
branch is decided from released values only. These tests do:

* ``test_framed_branch_reads_only_released_values``: ``_select`` on a framed node with its
  released inputs (anchor, frame, first, last) fixed and its exact records ``n`` or ``n + 1``
  (a neighbour under either relation), the selections stubbed to a sentinel: which rows
  answer an end, and which end, must not depend on the records.
* ``test_framed_sibling_answers_the_end_its_released_counts_give``: end to end, a 92% block,
  the counts' noise fixed: the sibling answers the root's unit exactly on the rows whose
  released counts give LOW/HIGH (recomputed here from the captured released counts), and its
  selection is drawn for the others only.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from treedp.noise import InsecureSeededSource
from treedp.value_methods import quantiles_recursive as qr
from treedp.value_methods import recursion_anchor as ra
from treedp.value_methods import recursion_forced as rf
from treedp.value_methods.exponential_core import Grid

LEVELS = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4)]
SENTINEL = -1


def _plan(relation: str, eps: int = 4) -> Any:
    return qr._plan(LEVELS, 0, 3, Fraction(0), Fraction(1), 0,
                    qr._level_epsilons(Fraction(eps), 3), relation)  # fmt: skip


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("forced_left", [True, False])
def test_framed_branch_reads_only_released_values(
    monkeypatch: pytest.MonkeyPatch, relation: str, forced_left: bool
) -> None:
    stub = lambda *args: np.full(args[3] if len(args) == 6 else args[4], SENTINEL)  # noqa: E731
    monkeypatch.setattr(qr, "select_at", stub)
    monkeypatch.setattr(qr, "select", stub)
    plan = _plan(relation)
    node = plan.right if forced_left else plan.left
    grid = Grid(0.0, 4000.0, 48)
    first, last = (3, grid.cells - 1) if forced_left else (0, grid.cells - 4)
    fine, coarse = np.arange(420), np.array([0, 5, 30, 60, 100, 200])
    # (L̂, R̂) pairs: a = q·N̂ - Ô moves by 1/4 along each fine axis, so no gate edge is missed
    rows = np.hstack([np.array(np.meshgrid(fine, coarse)).reshape(2, -1),
                      np.array(np.meshgrid(coarse, fine)).reshape(2, -1)])  # fmt: skip
    left, right = ra.root_anchor(rows[0], rows[1], plan.count_scale)
    anchor = right if forced_left else left
    branches = set()
    for n in (10, 40):
        for c in (0, 3 * n, 4 * n):  # the forced child's released count (3n: t = 0 at n)
            cs = np.full(rows.shape[1], c)
            frame = rf.beside_forced(rf.node_frame(plan, None, cs.size), cs, forced_left)
            got = []
            for k in (n, n + 1):  # neighbours: the node's exact records only differ
                x = np.sort(1000.0 + np.arange(k, dtype=float) * 2.5)
                got.append(qr._select(node, grid, x, first, last, cs.size, None, anchor,
                                      relation, frame))  # fmt: skip
            assert np.array_equal(got[0], got[1]), (n, c)
            branches |= set(np.unique(got[0]).tolist())
    # the selection and the end beside the forced child both taken: not vacuous (the far
    # end needs a negative count here: a = q·N̂ - Ô >= Ŝ has no solution with L̂, R̂ >= 0)
    assert {SENTINEL, first if forced_left else last} <= branches


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("top", [False, True])
def test_framed_sibling_answers_the_end_its_released_counts_give(
    monkeypatch: pytest.MonkeyPatch, relation: str, top: bool
) -> None:
    block = np.random.default_rng(1).random(2000) < 0.92
    x = np.sort(np.where(block, 4000.0 if top else 0.0, 1.0 + np.arange(2000)))
    monkeypatch.setattr(qr, "sample_discrete_laplace",
                        lambda scale, size, source: np.full(size, 5))  # fmt: skip
    released: list[tuple[np.ndarray, np.ndarray]] = []
    real_root = qr.root_anchor
    monkeypatch.setattr(
        qr,
        "root_anchor",
        lambda lo, hi, s, pinned=False: (
            released.append((lo.copy(), hi.copy())) or real_root(lo, hi, s, pinned)
        ),
    )
    drawn: list[int] = []
    real_at = qr.select_at
    monkeypatch.setattr(
        qr,
        "select_at",
        lambda w, t, r, size, src, f: drawn.append(size) or real_at(w, t, r, size, src, f),
    )
    plan = _plan(relation)
    size = 6
    out = qr._quantiles_recursive_draws(x, [0.25, 0.5, 0.75], bounds=(0, 4000), epsilon=4.0,
                                        size=size, neighbours=relation,
                                        rng=InsecureSeededSource(3))  # fmt: skip
    sib = plan.left if top else plan.right
    col = 0 if top else 2
    ends = 0
    for lhat, rhat in released:  # one call per distinct root unit
        left, right = ra.root_anchor(lhat, rhat, plan.count_scale)
        anchor = left if top else right
        keys = [ra.anchored_level(sib.q, sib.level, anchor, i) for i in range(lhat.size)]
        ends += sum(k in (ra.LOW, ra.HIGH) for k in keys)
    assert ends == size  # the 92% block puts the sibling's level beside its records
    assert np.all(out[:, col] == out[:, 1])  # each answers its end: the root's unit
    assert sum(drawn) == size - ends  # and only the others are drawn
