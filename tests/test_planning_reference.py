"""The planner returns what it returned before it was made fast.

``tests/data/plan_reference.json`` holds the plans (mechanism, branching, level budgets,
predicted errors and every alternative's score) of the planner as it was at commit 12907e6,
before the speed-up, on a grid of 153 configurations: ``B`` from 1 to 2^24 (primes, powers of
two and their neighbours, padded sizes), both neighbour relations, both estimators, all three
objectives and three budgets. On the recording machine the new planner reproduces them bit for
bit; the tolerance below only absorbs last-bit differences of another platform's libm.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import treedp

_DATA = json.loads((Path(__file__).parent / "data" / "plan_reference.json").read_text())
_PLANS = _DATA["plans"]
_REL = 1e-9


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=_REL, abs_tol=1e-300)


def _id(ref: dict) -> str:
    c = ref["config"]
    return f"{c['bins']}-{c['neighbours']}-{c['estimator']}-{c['objective']}-eps{c['epsilon']}"


@pytest.mark.parametrize("ref", _PLANS, ids=[_id(r) for r in _PLANS])
def test_plan_matches_the_recorded_plan(ref: dict) -> None:
    p = treedp.plan(**ref["config"])
    assert p.mechanism == ref["mechanism"]
    assert list(p.branching) == ref["branching"]
    assert len(p.level_budgets) == len(ref["level_budgets"])
    assert all(_close(a, b) for a, b in zip(p.level_budgets, ref["level_budgets"], strict=True))
    assert p.predicted <= ref["predicted"] * (1 + _REL)  # never worse
    assert _close(p.predicted, ref["predicted"])
    assert _close(p.mean_cdf_mse, ref["mean_cdf_mse"])
    assert _close(p.max_cdf_variance, ref["max_cdf_variance"])
    got = [(c.mechanism, list(c.branching), c.value, c.how) for c in p.alternatives]
    assert len(got) == len(ref["alternatives"])
    for (mech, branching, value, how), want in zip(got, ref["alternatives"], strict=True):
        assert [mech, branching, how] == [want[0], want[1], want[3]]
        assert _close(value, want[2])
