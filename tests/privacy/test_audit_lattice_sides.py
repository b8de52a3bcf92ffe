"""The recursion's forced children on the float lattice with a public side.

``test_audit_forced_children.py`` audits a forced child (its noisy count) and its framed
sibling exactly, given their pieces: the count's scale, the sibling's target from the count and
its rate. On the lattice with a public side (``quantiles_unbounded(..., side=...)``) the zone is
the group holding the public bound (``float_lattice.side_units``); these spies tie the
lattice's run to the same pieces, with the counts' noise fixed: every forced row's child holds
only records of the zone group (disjoint nodes), its count is drawn at
:func:`~treedp.value_methods.recursion_forced.forced_count_scale`, and its sibling selects at
the frame's target (:func:`~treedp.value_methods.recursion_forced.offset_target`) and the
anchored rate of its frame's level, under both relations and on either side. An independent
exact audit of this case (root and two leaves, lower side 0, add/remove and replace, ε 0.5, 2
and 6, with mutants) was run by the session-21 privacy review (docs/private_bounds.md).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from treedp.noise import InsecureSeededSource
from treedp.value_methods import quantiles_recursive as qr
from treedp.value_methods import recursion_forced as rf
from treedp.value_methods.float_lattice import UnitGrid, positions, side_units
from treedp.value_methods.unbounded_quantiles import unbounded_draws

LEVELS = [0.25, 0.5, 0.75]
NOISE = 5


def _run(x: np.ndarray, relation: str, side: tuple, monkeypatch: pytest.MonkeyPatch) -> Any:
    scales: list[Fraction] = []
    framed: list[tuple[Fraction, Fraction, int]] = []
    roots: list[np.ndarray] = []
    real_at, real_select = qr.select_at, qr.select

    def spy(w: Any, level: Fraction, n: int, rate: Fraction, size: int, source: Any,
            first: int = 0) -> Any:  # fmt: skip
        units = real_select(w, level, n, rate, size, source, first)
        roots.append(units)  # the root's selection comes first
        return units

    def fixed(scale: Any, size: int, source: Any) -> np.ndarray:
        scales.append(Fraction(scale))
        return np.full(size, NOISE, dtype=np.int64)

    def spy_at(w: Any, target: Fraction, rate: Fraction, size: int, source: Any, first: int) -> Any:
        framed.append((target, rate, first))
        return real_at(w, target, rate, size, source, first)

    monkeypatch.setattr(qr, "sample_discrete_laplace", fixed)
    monkeypatch.setattr(qr, "select_at", spy_at)
    monkeypatch.setattr(qr, "select", spy)
    out = unbounded_draws(x, LEVELS, epsilon=4.0, size=40, neighbours=relation,
                          rng=InsecureSeededSource(3), side=side)  # fmt: skip
    monkeypatch.undo()
    return out, scales, framed, roots[0]


@pytest.mark.parametrize("relation", ["add_remove", "replace"])
@pytest.mark.parametrize("lower", [True, False])
def test_forced_children_on_the_lattice_use_the_audited_pieces(
    relation: str, lower: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = np.r_[np.zeros(700), np.arange(1.0, 301.0)]
    x = base if lower else -base
    side = (0.0, None) if lower else (None, 0.0)
    out, scales, framed, roots = _run(x, relation, side, monkeypatch)
    assert np.all(out >= 0.0) if lower else np.all(out <= 0.0)
    _, _, (low_end, high_start) = side_units(side)
    pos = positions(np.sort(np.clip(x, *((0.0, None) if lower else (None, 0.0)))))
    plan = qr._plan([Fraction(v) for v in LEVELS], 0, 3, Fraction(0), Fraction(1), 0,
                    qr._level_epsilons(Fraction(4), 3), relation)  # fmt: skip
    assert plan is not None and plan.left is not None and plan.right is not None
    forced, sibling = (plan.left, plan.right) if lower else (plan.right, plan.left)
    grid = UnitGrid(zones=(low_end, high_start))
    in_zone = roots < low_end if lower else roots >= high_start
    assert framed and in_zone.any(), "no forced row: the side's zone never forced a child"
    assert rf.forced_count_scale(forced, relation) in scales
    expected = set()
    for unit in np.unique(roots[in_zone]):
        point = float(grid.values(np.array([unit]))[0])
        below = int(np.searchsorted(pos, point, side="left"))
        zone = pos[:below] if lower else pos[below:]  # the forced child's records
        assert np.all(zone < low_end) if lower else np.all(zone >= high_start)
        count = np.array([zone.size + NOISE])
        frame = rf.beside_forced(rf.node_frame(plan, None, 1), count, lower)
        a = frame.level(sibling.q)
        size = pos.size - below if lower else below
        target = rf.offset_target(a, size, frame.offset(sibling.q, 0))
        expected.add((target, qr._anchored_rate(sibling, a, relation)))
    assert {(t, r) for t, r, _ in framed} <= expected  # every framed draw: the audited pieces
