"""quantiles(privacy=ZCDP(ρ)) and (ε, δ) targets: calibration, records, refusals."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import treedp
from treedp import ZCDP, ApproxDP
from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.noise import InsecureSeededSource
from treedp.privacy.measures import zcdp_to_epsilon
from treedp.quantile_privacy import calibrate

TEST_SEED = 20261126
X = np.random.default_rng(TEST_SEED).lognormal(10, 1, 5_000)
Q = [0.25, 0.5, 0.75]


@pytest.mark.parametrize(
    ("method", "bounds", "steps"),
    [
        ("exponential", (0.0, 1e6), 3),
        ("exponential", "private", 3),
        ("recursive", (0.0, 1e6), 2),
        ("recursive", "private", 2),
    ],
)
def test_zcdp_target_runs_at_the_bounded_range_cost(
    method: str, bounds: object, steps: int
) -> None:
    """ρ = Σ ε_j²/8 over the composed selections: ε = sqrt(8ρk) for k equal steps (3 levels
    independent); the recursion's 2 levels of ε/2 each add the root's side counts, pure
    ``s·ε/2`` (``s = COUNT_SHARE``), at ``c²/2``, and its selection has ``(1 - s)·ε/2``;
    charged once as the whole ρ to a zCDP ledger."""
    from treedp.value_methods.quantiles_recursive import COUNT_SHARE

    share = float(COUNT_SHARE)
    rho = 0.125
    acc = treedp.Accountant(ZCDP(1.0))
    res = treedp.quantiles(
        X, Q, epsilon=None, privacy=ZCDP(rho), bounds=bounds, method=method,
        rng=InsecureSeededSource(1), accountant=acc,
    )  # fmt: skip
    assert isinstance(res.guarantee, ZCDP) and res.guarantee.rho <= rho
    assert res.guarantee.rho > rho * (1 - 1e-6)
    if method == "exponential":
        assert math.isclose(res.epsilon, math.sqrt(8 * rho * steps), rel_tol=1e-9)
    else:  # rho = (eps/2)**2 ((1 - s)**2/8 + s**2/2) + (eps/2)**2/8
        per_eps2 = ((1 - share) ** 2 / 8 + share**2 / 2 + 1 / 8) / steps**2
        assert math.isclose(res.epsilon, math.sqrt(rho / per_eps2), rel_tol=1e-6)
    assert res.epsilon > math.sqrt(2 * rho) * 2  # far above the generic conversion's ε
    assert isinstance(acc.spent, ZCDP) and math.isclose(acc.spent.rho, rho)
    assert res.parts[-1].parameters["zcdp"].startswith("bounded range")
    assert np.all(np.diff(res.values) >= 0)


def test_tree_takes_the_gaussian_path() -> None:
    res = treedp.quantiles(
        X, Q, epsilon=None, privacy=ZCDP(0.5), bounds=(0.0, 1e6), method="tree",
        rng=InsecureSeededSource(2),
    )  # fmt: skip
    assert isinstance(res.guarantee, ZCDP) and res.guarantee.rho <= 0.5


def test_approx_target_takes_the_better_of_pure_and_zcdp() -> None:
    """(ε, δ): the selections run at the larger of ε and the ε of the largest ρ that converts
    to (ε, δ); the record is the zCDP cost when that was chosen, and it converts within."""
    target = ApproxDP(1.0, 1e-6)
    many = np.arange(1, 30) / 30  # 29 independent selections: zCDP accounting wins
    eps = calibrate(target, many, "add_remove", "exponential")
    assert eps > 1.5
    acc = treedp.Accountant(ApproxDP(2.0, 1e-5))
    res = treedp.quantiles(
        X, many, epsilon=None, privacy=target, bounds="private", method="exponential",
        rng=InsecureSeededSource(3), accountant=acc,
    )  # fmt: skip
    assert isinstance(res.guarantee, ZCDP)
    assert zcdp_to_epsilon(res.guarantee.rho, target.delta) <= target.epsilon
    assert math.isclose(res.epsilon, eps)
    # Three levels: pure composition wins, and the record stays pure.
    assert calibrate(target, np.array(Q), "add_remove", "recursive") == 1.0
    few = treedp.quantiles(
        X, Q, epsilon=None, privacy=target, bounds="private", rng=InsecureSeededSource(4)
    )
    assert isinstance(few.guarantee, treedp.PureDP) and few.guarantee.epsilon <= 1.0


@pytest.mark.parametrize(
    ("target", "named"),
    [
        (ZCDP(0), "'rho'"),
        (ZCDP(5000.0), "'rho'"),
        (ZCDP(1e-9), "'rho'"),
        (ApproxDP(0.0, 1e-6), "'epsilon'"),
        (ApproxDP(1.0, 0.5), "'delta'"),
    ],
)
def test_a_target_out_of_range_names_its_own_parameter(target: Any, named: str) -> None:
    """``quantiles(epsilon=None, privacy=ZCDP(0))`` named 'epsilon' (the ε standing in for
    the target in the choice rules); it names 'rho', by release_cdf's rule, and the same
    ranges hold for both (before, ZCDP(1e-9) and a δ of 0.5 were taken by quantiles)."""
    acc = treedp.Accountant(ZCDP(1.0))
    calls = (
        lambda: treedp.quantiles(X, Q, epsilon=None, privacy=target, bounds=(0, 1e6),
                                 accountant=acc),
        lambda: treedp.release_cdf(X, bins=64, epsilon=None, privacy=target, bounds=(0, 1e6),
                                   accountant=acc),
    )  # fmt: skip
    for call in calls:
        with pytest.raises(InvalidParameterError) as err:
            call()
        assert named in str(err.value)
    assert not acc.history


def test_refusals_before_anything_is_charged() -> None:
    acc = treedp.Accountant(ZCDP(1.0))
    with pytest.raises(InvalidParameterError, match="not both"):
        treedp.quantiles(X, Q, epsilon=1.0, privacy=ZCDP(0.5), bounds=(0, 1e6))
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        treedp.quantiles(X, Q, epsilon=None, bounds=(0, 1e6))
    with pytest.raises(InvalidTypeError, match="'privacy'"):
        treedp.quantiles(X, Q, epsilon=None, privacy=0.5, bounds=(0, 1e6))
    with pytest.raises(InvalidParameterError, match="bounds step"):  # the tree's one scan
        treedp.quantiles(X, Q, epsilon=None, privacy=ZCDP(0.5), bounds=(0, "private"),
                         method="tree", accountant=acc)  # fmt: skip
    with pytest.raises(InvalidParameterError, match="pure-epsilon"):
        treedp.quantiles(X, Q, epsilon=None, privacy=ZCDP(0.5), bounds=(0, 1e6), n="private")
    with pytest.raises(InvalidParameterError, match="bounds step"):
        treedp.quantiles(
            X, Q, epsilon=None, privacy=ZCDP(0.5), bounds="private", method="tree",
            accountant=acc,
        )  # fmt: skip
    assert not acc.history


@pytest.mark.parametrize(
    ("method", "rho", "bounds"),
    [
        ("exponential", 50.0, "private"),
        ("recursive", 300.0, "private"),
        ("exponential", 50.0, (0.0, 1e6)),
        ("recursive", 300.0, (0.0, 1e6)),
    ],
)
def test_calibrated_epsilon_above_the_limit_is_refused_before_the_charge(
    method: str, rho: float, bounds: object
) -> None:
    """Privacy review F6: a zCDP target over 99 levels calibrates to an ε above
    ``MAX_EPSILON`` (``sqrt(8ρ·99)`` for the exponential method); the method refused it only
    after the accountant was charged the whole ρ, with nothing released. It is now refused
    with the calibration, before the charge."""
    levels = list(np.linspace(0.01, 0.99, 99))
    acc = treedp.Accountant(ZCDP(1000.0))
    with pytest.raises(InvalidParameterError) as refused:
        treedp.quantiles(
            X, levels, epsilon=None, privacy=ZCDP(rho), bounds=bounds, method=method,
            rng=InsecureSeededSource(5), accountant=acc,
        )  # fmt: skip
    assert not acc.history and acc.spent == ZCDP(0.0)
    assert "'privacy'" in str(refused.value) and str(X.size) not in str(refused.value)
    ok = treedp.quantiles(  # a smaller target runs, at a calibrated ε within the limit
        X, levels, epsilon=None, privacy=ZCDP(1.0), bounds=bounds, method=method,
        rng=InsecureSeededSource(5), accountant=acc,
    )  # fmt: skip
    assert ok.epsilon <= 50.0 and acc.spent == ZCDP(1.0)


def test_one_public_side_over_every_float_takes_a_target() -> None:
    """One public side with the methods over every float: no scan runs, so a zCDP target is
    met at the methods' tightest cost (charged the target once) and the answers keep the
    side."""
    acc = treedp.Accountant(ZCDP(1.0))
    for method in ("exponential", "recursive"):
        res = treedp.quantiles(
            X, Q, epsilon=None, privacy=ZCDP(0.2), bounds=(0, "private"), method=method,
            accountant=acc, rng=treedp.InsecureSeededSource(3),
        )  # fmt: skip
        assert isinstance(res.guarantee, ZCDP) and res.guarantee.rho <= 0.2
        assert len(res.parts) == 1 and np.all(np.asarray(res.value) >= 0)
    assert [h.record.measure for h in acc.history] == [ZCDP(0.2), ZCDP(0.2)]  # type: ignore[union-attr]


def test_auto_with_a_target_and_private_bounds_runs_over_every_float() -> None:
    """A target cannot pay the tree's pure-ε bounds scan: ``auto`` with private bounds (both,
    or one public side) and several levels takes the recursion over every float, integer bins
    included (the tree was chosen there and the call refused)."""
    x = np.random.default_rng(1).poisson(5, 1000)
    for bounds in ((0, "private"), "private"):
        res = treedp.quantiles(
            x, Q, epsilon=None, privacy=ZCDP(0.3), bounds=bounds, bins="integers",
            rng=treedp.InsecureSeededSource(2),
        )  # fmt: skip
        assert res.method == "recursive" and isinstance(res.guarantee, ZCDP)
        assert np.all(np.asarray(res.value) == np.round(res.value))
