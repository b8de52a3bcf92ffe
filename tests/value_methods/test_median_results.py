"""The one-shot mechanisms share one result family, contract data, nan policy and datetimes."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource, InvalidParameterError
from treedp.exceptions import DataError, InvalidTypeError
from treedp.mechanisms import (
    MechanismResult,
    MedianResult,
    QuantileResult,
    SpendRecord,
)
from treedp.privacy import ApproxDP, PureDP, compose
from treedp.value_methods import quantile_exponential as qe_module
from treedp.value_methods import stable_median as sm_module
from treedp.value_methods import subsample_aggregate as sa_module
from treedp.value_methods.quantile_exponential import quantile_exponential
from treedp.value_methods.stable_median import stable_median
from treedp.value_methods.subsample_aggregate import noisy_mode, subsample_and_aggregate

STABLE = np.concatenate([np.full(500, 7.0), np.arange(200.0)])


def test_results_carry_their_randomness() -> None:
    """F6: MedianResult and QuantileResult record the source, and say when it was seeded."""
    from treedp import SystemRandomSource

    x = np.concatenate([np.full(500, 7.0), np.arange(200.0)])
    seeded = [
        stable_median(x, epsilon=1.0, delta=1e-6, rng=InsecureSeededSource(5), details=True),
        subsample_and_aggregate(
            x, "median", epsilon=1.0, delta=1e-6, m=20, variant="disjoint",
            rng=InsecureSeededSource(5), details=True,
        ),
        quantile_exponential(
            x, 0.5, bounds=(0, 200), epsilon=1.0, rng=InsecureSeededSource(5), details=True
        ),
    ]  # fmt: skip
    for res in seeded:
        assert res.seeded and res.randomness == InsecureSeededSource(5).describe()
        assert repr(res).endswith("[SEEDED: not for publication]")
    honest = [
        stable_median(x, epsilon=1.0, delta=1e-6, rng=SystemRandomSource(), details=True),
        quantile_exponential(x, 0.5, bounds=(0, 200), epsilon=1.0, details=True),
    ]
    for res in honest:
        assert not res.seeded and res.randomness == SystemRandomSource().describe()
        assert "SEEDED" not in repr(res)


def _all_three(x, rng, **kw):
    return [
        stable_median(x, epsilon=1.0, delta=1e-6, rng=rng, details=True, **kw),
        subsample_and_aggregate(
            x, "median", epsilon=1.0, delta=1e-6, m=20, variant="disjoint", rng=rng,
            details=True, **kw,
        ),
        quantile_exponential(x, 0.5, bounds=(0, 200), epsilon=1.0, rng=rng, details=True, **kw),
    ]  # fmt: skip


def test_median_is_a_function() -> None:
    """treedp.median was a module ("module not callable"); it is the EM median now."""
    assert callable(treedp.median) and inspect.isfunction(treedp.median)
    x = np.arange(101.0)
    a = treedp.median(x, epsilon=1.0, bounds=(0, 100), rng=InsecureSeededSource(TEST_SEED))
    b = quantile_exponential(
        x, 0.5, bounds=(0, 100), epsilon=1.0, rng=InsecureSeededSource(TEST_SEED)
    )
    assert isinstance(a, float) and a == b
    res = treedp.median(x, epsilon=1.0, bounds=(0, 100), neighbours="add_remove", details=True)
    assert isinstance(res, QuantileResult) and res.neighbours == "add_remove"
    for name in ("stable_median", "subsample_and_aggregate", "quantile_exponential", "noisy_mode"):
        assert callable(getattr(treedp, name))
    assert treedp.stable_median is stable_median and treedp.noisy_mode is noisy_mode


def test_results_state_guarantee_and_spend() -> None:
    """One result family: the guarantee is a treedp.privacy value, the spend record composes."""
    results = _all_three(STABLE, InsecureSeededSource(TEST_SEED))
    sm, sa, em = results
    assert all(isinstance(r, MechanismResult) for r in results)
    assert isinstance(sm, MedianResult) and isinstance(sa, MedianResult)
    assert isinstance(em, QuantileResult)
    assert sm.guarantee == ApproxDP(sm.epsilon_spent, 1e-6) and sm.epsilon_spent <= 1.0
    assert isinstance(sa.guarantee, ApproxDP) and 0 < sa.delta <= 1e-6
    assert isinstance(em.guarantee, PureDP) and em.delta == 0.0
    assert 1.0 * (1 - 2**-28) <= em.epsilon_spent <= 1.0
    for res in results:
        spend = res.spend
        assert isinstance(spend, SpendRecord) and spend.measure == res.guarantee
        # the exponential mechanism defaults to add_remove (as treedp.quantiles and the tree)
        expected = "add_remove" if res is em else "replace"
        assert spend.neighbours == res.neighbours == expected
        assert spend.unit == res.privacy_unit == "record"
        assert spend.mechanism == res.mechanism and spend.parameters["epsilon"] == 1.0
        with pytest.raises(dataclasses.FrozenInstanceError):
            res.value = 0  # type: ignore[misc]
        with pytest.raises(TypeError):
            spend.parameters["epsilon"] = 2.0  # type: ignore[index]
    total = compose([r.spend.measure.to_approx() for r in results])
    assert isinstance(total, ApproxDP)
    assert total.epsilon == pytest.approx(sum(r.epsilon_spent for r in results))
    assert total.delta == pytest.approx(sm.delta + sa.delta)
    mode = noisy_mode(  # seeded: with OS randomness it refuses (None) now and then
        np.zeros(40),
        epsilon=1.0,
        delta=1e-6,
        sensitivity=1,
        details=True,
        rng=InsecureSeededSource(TEST_SEED),
    )
    assert isinstance(mode, MedianResult) and mode.value == 0.0 and mode.delta <= 1e-6
    assert mode.mechanism == "noisy_mode" and isinstance(mode.guarantee, ApproxDP)


def test_contracts_are_data() -> None:
    """Each mechanism states its measure, neighbours and sensitivity as data, and results
    agree with it."""
    assert sm_module.CONTRACT.measure is ApproxDP and sm_module.NEIGHBOURS == ("replace",)
    assert sm_module.SENSITIVITY == 1
    assert sa_module.CONTRACT.measure is ApproxDP and sa_module.NEIGHBOURS == ("replace",)
    assert qe_module.CONTRACT.measure is PureDP
    assert qe_module.NEIGHBOURS == ("replace", "add_remove")
    sm, sa, em = _all_three(STABLE, InsecureSeededSource(TEST_SEED))
    for res, module in ((sm, sm_module), (sa, sa_module), (em, qe_module)):
        contract = module.CONTRACT
        assert res.mechanism.split(":")[0] == contract.name
        assert isinstance(res.guarantee, contract.measure)
        assert res.neighbours in contract.neighbours and contract.privacy_unit == "record"
        doc = inspect.getdoc(getattr(module, contract.name)) or ""
        for word in ("Guarantee", "Sensitivity", "record"):
            assert word.lower() in doc.lower(), (contract.name, word)
    assert sm.sensitivity == (1.0,) and sa.sensitivity == (1.0,)
    assert em.sensitivity == (pytest.approx(0.5 + 2**-32),)  # the median under add_remove


def test_replace_only_mechanisms_refuse_other_neighbours_and_nan_drop() -> None:
    """The same neighbour and nan= rules as the tree: drop is refused under replace."""
    x = np.arange(100.0)
    calls = [
        lambda **kw: stable_median(x, epsilon=1.0, delta=1e-6, **kw),
        lambda **kw: subsample_and_aggregate(x, "median", epsilon=1.0, delta=1e-6, m=5, **kw),
        lambda **kw: quantile_exponential(
            x, 0.5, bounds=(0, 100), epsilon=1.0, **{"neighbours": "replace", **kw}
        ),
    ]
    for call in calls:
        with pytest.raises(InvalidParameterError, match="nan='drop' is not allowed"):
            call(nan="drop")
        with pytest.raises(InvalidParameterError, match="'nan'"):
            call(nan="keep")
        with pytest.raises(InvalidParameterError, match="'neighbours'"):
            call(neighbours="edit")
        with pytest.raises(InvalidTypeError, match="'neighbours'"):
            call(neighbours=1)
    for call in calls[:2]:
        with pytest.raises(InvalidParameterError, match="'neighbours'"):
            call(neighbours="add_remove")
    with_nan = np.concatenate([x, [np.nan]])
    for call in (stable_median, lambda v, **kw: subsample_and_aggregate(v, "mean", m=5, **kw)):
        with pytest.raises(DataError, match="NaN/NaT"):
            call(with_nan, epsilon=1.0, delta=1e-6)


def test_datetimes_in_datetimes_out() -> None:
    """Datetime data with datetime bounds: the release is datetime64, like release_cdf's."""
    rng = InsecureSeededSource(TEST_SEED)
    days = np.datetime64("2024-01-01") + np.arange(365).astype("timedelta64[D]")
    em = quantile_exponential(
        days, [0.25, 0.5], bounds=("2023-01-01", "2025-06-01"), epsilon=2.0, rng=rng
    )
    assert em.dtype == np.dtype("datetime64[s]")
    assert np.all(np.abs(em - days[[91, 182]].astype("datetime64[s]")) < np.timedelta64(40, "D"))
    one = treedp.median(
        days, epsilon=2.0, bounds=(np.datetime64("2023-01-01"), np.datetime64("2025-06-01"))
    )
    assert isinstance(one, np.datetime64) and np.datetime64("2023-01-01") <= one
    with pytest.raises(InvalidTypeError, match="'bounds'"):
        quantile_exponential(np.arange(5.0), 0.5, bounds=("2023-01-01", "2025-01-01"), epsilon=1)
    with pytest.raises(InvalidTypeError, match="'bounds'"):
        quantile_exponential(days, 0.5, bounds=("2023-01-01", 5), epsilon=1.0)
    stamps = np.array(["2024-05-05T10:00:00"] * 400 + ["2024-01-01T00:00:00"] * 100, "M8[ns]")
    sm = stable_median(stamps, epsilon=1.0, delta=1e-6, rng=rng)
    assert sm == np.datetime64("2024-05-05T10:00:00", "ns") and sm.dtype == np.dtype("M8[ns]")
    sa = subsample_and_aggregate(
        stamps, "median", epsilon=1.0, delta=1e-6, m=10, variant="disjoint", rng=rng
    )
    assert sa == np.datetime64("2024-05-05T10:00:00", "ns")
    coarse = subsample_and_aggregate(
        stamps, "mean", epsilon=1.0, delta=1e-6, m=10, variant="disjoint", rng=rng,
        resolution=np.timedelta64(1000, "D"),
    )  # fmt: skip
    assert coarse is None or isinstance(coarse, np.datetime64)
    picked = subsample_and_aggregate(
        stamps, lambda block: block.max(), epsilon=1.0, delta=1e-6, m=10,
        variant="disjoint", rng=rng,
    )  # fmt: skip
    assert picked == np.datetime64("2024-05-05T10:00:00", "ns")
    with pytest.raises(DataError, match="NaN/NaT"):
        stable_median(np.array(["2024-01-01", "NaT"], "M8[D]"), epsilon=1.0, delta=1e-6)
    dropped = quantile_exponential(
        np.concatenate([days, np.array(["NaT"], "M8[D]")]), 0.5,
        bounds=("2023-01-01", "2025-06-01"),
        epsilon=1.0, neighbours="add_remove", nan="drop", rng=InsecureSeededSource(3),
    )  # fmt: skip
    kept = quantile_exponential(
        days, 0.5, bounds=("2023-01-01", "2025-06-01"), epsilon=1.0, neighbours="add_remove",
        rng=InsecureSeededSource(3),
    )  # fmt: skip
    assert dropped == kept
