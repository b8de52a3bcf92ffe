"""treedp.predict_error is the release's own expected error under both neighbour relations:
a per-person or group-by release noises each key's tree as an add/remove tree at the
person's budget over the person-level sensitivity (``2·Δ1`` or ``2·L2²`` under ``replace``),
and the prediction must plan exactly that tree (session 10 found it planned a ``replace``
tree with a public total there, 2.2 times the release's error for Laplace noise)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import treedp
from treedp.exceptions import InvalidParameterError
from treedp.noise import InsecureSeededSource

BUDGETS = [{"epsilon": 1.0}, {"privacy": treedp.ZCDP(0.5)}, {"privacy": treedp.ApproxDP(1.0, 1e-6)}]
KEYS = ["a", "b", "c"]


def _table(n: int = 3000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    return {
        "x": rng.integers(0, 64, n),
        "pid": rng.integers(0, 500, n).astype(str),
        "k": rng.choice(np.array(KEYS), n),
    }


def _release(kind: str, neighbours: str, budget: dict[str, Any]) -> Any:
    """The released object of one key's tree (its mechanism and exact prefix variance)."""
    common: dict[str, Any] = {
        "column": "x",
        "bounds": (0, 63),
        "bins": "integers",
        "neighbours": neighbours,
        "rng": InsecureSeededSource(3),
        **budget,
    }
    if kind == "person":
        unit = treedp.PrivacyUnit("pid", max_contributions=3)
        return treedp.release_cdf(_table(), privacy_unit=unit, **common)
    if kind == "grouped_person":
        unit = treedp.PrivacyUnit("pid", max_groups=2, max_contributions_per_group=4)
        return treedp.release_grouped(_table(), by="k", keys=KEYS, privacy_unit=unit, **common)["b"]
    return treedp.release_grouped(_table(), by="k", keys=KEYS, **common)["b"]


def _prediction(kind: str, neighbours: str, budget: dict[str, Any]) -> treedp.ErrorPrediction:
    unit = {
        "person": treedp.PrivacyUnit("pid", max_contributions=3),
        "grouped_person": treedp.PrivacyUnit("pid", max_groups=2, max_contributions_per_group=4),
        "grouped": None,
    }[kind]
    keys = None if kind == "person" else KEYS
    return treedp.predict_error(64, neighbours=neighbours, privacy_unit=unit, keys=keys, **budget)


@pytest.mark.parametrize("budget", BUDGETS, ids=["laplace", "zcdp", "approx"])
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
@pytest.mark.parametrize("kind", ["person", "grouped_person", "grouped"])
def test_prediction_is_the_release_s_own_error(
    kind: str, neighbours: str, budget: dict[str, Any]
) -> None:
    pred = _prediction(kind, neighbours, budget)
    rel = _release(kind, neighbours, budget)
    mech = rel.mechanism
    assert (pred.mechanism, pred.level_budgets) == (mech.name, mech.block_budgets)
    assert pred.branching == getattr(getattr(mech, "shape", None), "branching", None)
    assert mech.neighbours == "add_remove"  # the tree of a per-key release
    # exact algebra on both sides, from the same public parameters
    np.testing.assert_array_equal(pred.prefix_variance, rel.prefix_variance)
    assert pred.rmse**2 == pytest.approx(float(np.mean(rel.stderr("cdf", np.arange(64)) ** 2)))


@pytest.mark.parametrize("kind", ["person", "grouped_person", "grouped"])
def test_sensitivity_and_tree_budget_follow_the_person_level_relation(kind: str) -> None:
    add = _prediction(kind, "add_remove", {"epsilon": 1.0})
    rep = _prediction(kind, "replace", {"epsilon": 1.0})
    assert rep.sensitivity == 2 * add.sensitivity
    assert rep.tree_budget is not None and add.tree_budget is not None
    assert rep.tree_budget == pytest.approx(add.tree_budget / 2)


@pytest.mark.parametrize("kind", ["person", "grouped"])
def test_a_public_n_is_refused_as_the_release_refuses_it(kind: str) -> None:
    unit = treedp.PrivacyUnit("pid", max_contributions=3) if kind == "person" else None
    keys = KEYS if kind == "grouped" else None
    with pytest.raises(InvalidParameterError, match="'n'"):
        treedp.predict_error(
            64, epsilon=1.0, neighbours="replace", n=1000, privacy_unit=unit, keys=keys
        )
