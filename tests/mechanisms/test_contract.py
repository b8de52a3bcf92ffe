"""The privacy contract is data: guarantee, neighbours, budgets, exact scales, loss map."""

from __future__ import annotations

from fractions import Fraction

import pytest

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.mechanisms import (
    AllIntervalsMechanism,
    HistogramMechanism,
    ThresholdMechanism,
    TreeMechanism,
)
from treedp.privacy import PureDP
from treedp.tree import shape_for


def test_tree_contract_add_remove() -> None:
    mech = TreeMechanism(shape_for(64, 4), epsilon=1.0, level_budgets=[0.1, 0.2, 0.3, 0.4])
    assert mech.guarantee_kind == "pure" and mech.describe()["guarantee"] == "pure"
    assert isinstance(mech.guarantee, PureDP)
    assert Fraction(mech.guarantee.epsilon) >= mech.epsilon_spent()
    assert mech.guarantee.epsilon <= 1.0
    assert mech.neighbours == "add_remove"
    assert mech.block_sensitivity == (1, 1, 1, 1)
    assert mech.level_budgets == pytest.approx((0.1, 0.2, 0.3, 0.4))
    for s, e in zip(mech.scales, mech.level_budgets, strict=True):
        assert s is not None and s >= Fraction(1) / Fraction(e)
    assert float(mech.epsilon_spent()) <= 1.0
    assert mech.epsilon_spent() <= Fraction(1.0)
    assert mech.privacy_loss(3) == pytest.approx(3.0, rel=1e-6)
    assert mech.check(1, 1.0) and not mech.check(2, 1.0)


def test_tree_contract_replace() -> None:
    mech = TreeMechanism(shape_for(100, 10), epsilon=0.5, neighbours="replace", n=1000)
    assert mech.block_sensitivity == (0, 2, 2)
    assert mech.scales[0] is None
    assert mech.block_variance()[0] == 0.0
    assert mech.level_budgets[1:] == pytest.approx((0.25, 0.25))
    assert mech.describe()["neighbours"] == "replace"


def test_exact_budget_sum_never_exceeds_epsilon() -> None:
    for eps in (0.1, 0.3, 1 / 3, 0.7, 1.0, 3.0):
        mech = TreeMechanism(shape_for(10**4, 3), epsilon=eps)
        assert sum(map(Fraction, mech.block_epsilons)) <= Fraction(eps)
        assert mech.epsilon_spent() <= Fraction(eps)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": float("nan")}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"epsilon": 1.0, "neighbours": "swap"}, "neighbours"),
        ({"epsilon": 1.0, "neighbours": "replace"}, "'n'"),
        ({"epsilon": 1.0, "n": 10}, "'n'"),
        ({"epsilon": 1.0, "level_budgets": [0.5, 0.5]}, "one budget per noised level"),
        ({"epsilon": 1.0, "level_budgets": [0.5, 0.5, 0.5]}, "sum to epsilon"),
        ({"epsilon": 1.0, "level_budgets": [1.0, 0.0, 0.0]}, "positive"),
        ({"epsilon": 1.0, "neighbours": "replace", "n": 3, "level_budgets": [0.1, 0.5, 0.5]}, "0"),
    ],
)
def test_tree_refuses_bad_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match) as info:
        TreeMechanism(shape_for(4, 2), **kwargs)
    assert type(info.value) is InvalidParameterError


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": True}, "epsilon"),
        ({"epsilon": "1"}, "epsilon"),
        ({"epsilon": 1.0, "neighbours": 3}, "neighbours"),
        ({"epsilon": 1.0, "neighbours": "replace", "n": 2.0}, "'n'"),
        ({"epsilon": 1.0, "level_budgets": "abc"}, "sequence"),
        ({"epsilon": 1.0, "level_budgets": ["a", 0.5, 0.5]}, "level_budgets"),
    ],
)
def test_tree_refuses_bad_types(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidTypeError, match=match) as info:
        TreeMechanism(shape_for(4, 2), **kwargs)
    assert type(info.value) is InvalidTypeError


def test_replace_budgets_round_trip() -> None:
    """The root-first convention (0 for the exact root) is accepted back as input."""
    mech = TreeMechanism(shape_for(100, 10), epsilon=0.5, neighbours="replace", n=7)
    again = TreeMechanism(
        shape_for(100, 10), epsilon=0.5, neighbours="replace", n=7, level_budgets=mech.level_budgets
    )
    assert again.level_budgets == mech.level_budgets
    assert again.scales == mech.scales


def test_baselines_refuse_bad_parameters() -> None:
    with pytest.raises(InvalidParameterError, match="B <= 2048"):
        AllIntervalsMechanism(4096, epsilon=1.0)
    with pytest.raises(InvalidParameterError, match="n_bins"):
        HistogramMechanism(0, epsilon=1.0)
    for cls in (HistogramMechanism, ThresholdMechanism, AllIntervalsMechanism, None):
        with pytest.raises(InvalidParameterError, match="nothing to release"):
            if cls is None:
                TreeMechanism(shape_for(1, 2), epsilon=1.0, neighbours="replace", n=3)
            else:
                cls(1, epsilon=1.0, neighbours="replace", n=3)


@pytest.mark.parametrize("module", ["quantile_exponential", "quantiles_recursive"])
def test_value_methods_state_their_domain_and_refuse_outside_it_before_the_charge(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27 item 5: the 2**32-record limit is the guarantee's public domain (contract data),
    checked before the charge; a smaller stand-in domain shows the boundary without 32 GiB."""
    import dataclasses
    import importlib

    import numpy as np

    import treedp
    from treedp.exceptions import DataError

    mod = importlib.import_module(f"treedp.value_methods.{module}")
    assert mod.CONTRACT.max_records == 2**32 - 1
    monkeypatch.setattr(mod, "CONTRACT", dataclasses.replace(mod.CONTRACT, max_records=5))
    call = getattr(mod, module)
    acc = treedp.Accountant(treedp.PureDP(5.0))
    ok = call(np.arange(5.0), 0.5, bounds=(0, 10), epsilon=1.0, accountant=acc)
    assert ok is not None and len(acc.history) == 1
    with pytest.raises(DataError, match="public domain") as err:
        call(np.arange(6.0), 0.5, bounds=(0, 10), epsilon=1.0, accountant=acc)
    assert "6" not in str(err.value)
    assert len(acc.history) == 1  # nothing charged for input outside the domain


def test_a_mechanisms_repr_names_its_contract() -> None:
    """``repr(release.mechanism)`` says which mechanism, neighbours and guarantee (a new
    user's run printed ``<treedp.mechanisms.strategy.StrategyMechanism object at 0x...>``)."""
    import treedp

    rel = treedp.release_counts([3, 4, 5, 6], bins=4, bounds=(0, 4), epsilon=1.0,
                                rng=treedp.InsecureSeededSource(1))  # fmt: skip
    text = repr(rel.mechanism)
    assert text == (
        f"{type(rel.mechanism).__name__}(name={rel.mechanism.name!r}, "
        "neighbours='add_remove', guarantee=PureDP(epsilon=1.0))"
    )
    assert " object at 0x" not in text
