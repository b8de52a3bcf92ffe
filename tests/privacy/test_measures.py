"""Privacy measures: exact and tight conversions, validation, composition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from treedp.exceptions import InvalidParameterError, InvalidTypeError
from treedp.privacy import ZCDP, ApproxDP, PureDP, compose, zcdp_to_epsilon


@pytest.mark.parametrize("epsilon", [0.0, 1e-6, 0.1, 1.0, 3.7, 50.0])
def test_pure_to_zcdp_is_eps_squared_over_two(epsilon: float) -> None:
    rho = PureDP(epsilon).to_zcdp().rho
    assert rho >= epsilon**2 / 2  # rounded up, never down
    assert rho == pytest.approx(epsilon**2 / 2, rel=1e-11, abs=1e-14)
    assert PureDP(epsilon).to_approx() == ApproxDP(epsilon, 0.0)


def _cks(alpha: np.ndarray, rho: float, delta: float) -> np.ndarray:
    """CKS20 Corollary 13, written out independently of the library."""
    return alpha * rho + (
        np.log(1 / delta) + (alpha - 1) * np.log(1 - 1 / alpha) - np.log(alpha)
    ) / (alpha - 1)


@pytest.mark.parametrize("rho", [1e-4, 0.01, 0.125, 0.5, 2.0, 10.0])
@pytest.mark.parametrize("delta", [1e-12, 1e-9, 1e-6, 1e-3, 0.1])
def test_cks_conversion_is_tight_and_below_the_classical_bound(rho: float, delta: float) -> None:
    eps = ZCDP(rho).to_approx(delta).epsilon
    classical = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    assert eps <= classical * (1 + 1e-12)
    # brute-force grid over α (dense on a log scale of α - 1): the result is at least the
    # grid minimum up to 1e-9 relative (it is the minimum over all α, rounded up) and at most
    # the grid minimum plus a little (the search is not worse than the grid)
    alpha = 1 + np.logspace(-8, 8, 400_001)
    grid = max(0.0, float(np.nanmin(_cks(alpha, rho, delta))))  # ε is never negative
    assert eps >= grid * (1 - 1e-9)
    assert eps <= grid * (1 + 1e-6) + 1e-14


def test_zero_rho_and_validation() -> None:
    assert zcdp_to_epsilon(0.0, 1e-6) == 0.0
    for bad, err in [
        (lambda: PureDP(-1.0), InvalidParameterError),
        (lambda: PureDP(math.inf), InvalidParameterError),
        (lambda: PureDP("1"), InvalidTypeError),  # type: ignore[arg-type]
        (lambda: ZCDP(True), InvalidTypeError),  # type: ignore[arg-type]
        (lambda: ApproxDP(1.0, 1.0), InvalidParameterError),
        (lambda: ZCDP(1.0).to_approx(0.0), InvalidParameterError),
        (lambda: ApproxDP(1.0, 1e-3).to_approx(1e-6), InvalidParameterError),
    ]:
        with pytest.raises(err) as info:
            bad()
        assert type(info.value) is err


def test_compose() -> None:
    assert compose([PureDP(0.25), PureDP(0.5), PureDP(0.25)]) == PureDP(1.0)
    assert compose([ZCDP(0.1), ZCDP(0.2)]).rho == pytest.approx(0.3)
    both = compose([ApproxDP(1.0, 1e-6), ApproxDP(0.5, 1e-7)])
    assert both.epsilon == pytest.approx(1.5) and both.delta == pytest.approx(1.1e-6)
    # mixed kinds: convert first (pure to zCDP is exact)
    with pytest.raises(InvalidParameterError, match="one kind"):
        compose([PureDP(1.0), ZCDP(0.5)])
    mixed = compose([PureDP(1.0).to_zcdp(), ZCDP(0.5)])
    assert mixed.rho == pytest.approx(1.0)
    with pytest.raises(InvalidParameterError):
        compose([])
