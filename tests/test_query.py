"""The one validated query (treedp.query.build_query): public rules refused before any value
is read or any budget is charged, whatever the front door."""

from __future__ import annotations

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource, InvalidParameterError, InvalidTypeError
from treedp.privacy.accountant import Accountant


class _Unread:
    """A column whose values must not be read (any read fails the test)."""

    def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
        raise AssertionError("the data was read before a public check refused the call")

    def __len__(self) -> int:
        raise AssertionError("the data was read before a public check refused the call")


def _accountant() -> Accountant:
    return Accountant(treedp.PureDP(10.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        # review F1: no by and no unit column reached the charge before being refused
        (
            lambda acc: treedp.release_grouped(
                np.arange(5.0), by=(), epsilon=1.0, bounds=(0, 5), bins=4, accountant=acc
            ),
            "'by' columns, a 'privacy_unit'",
        ),
        (
            lambda acc: treedp.release_cdf(
                np.arange(5.0),
                privacy_unit=treedp.PrivacyUnit(None, max_contributions=1),
                epsilon=1.0,
                bounds=(0, 5),
                bins=4,
                accountant=acc,
            ),
            "person-id column",
        ),
        # review F6: a plan with private integer bounds was refused after the charge
        (
            lambda acc: treedp.release_cdf(
                np.arange(50.0),
                bounds="private",
                bins="integers",
                epsilon=1.0,
                accountant=acc,
                plan=treedp.plan(bins=8, epsilon=0.9),
            ),
            "'plan'",
        ),
        # review F7: delta without by was accepted and charged as (ε, δ)
        (
            lambda acc: treedp.release_grouped(
                {"v": np.arange(5.0), "p": np.arange(5)},
                column="v",
                privacy_unit="p",
                max_contributions=1,
                delta=1e-6,
                epsilon=1.0,
                bounds=(0, 5),
                bins=4,
                accountant=acc,
            ),
            "'delta'",
        ),
    ],
)
def test_public_refusals_come_before_any_charge(call: object, match: str) -> None:
    acc = _accountant()
    with pytest.raises(InvalidParameterError, match=match):
        call(acc)  # type: ignore[operator]
    assert acc.spent == treedp.PureDP(0.0) and not acc.history


def test_a_bad_share_names_the_share() -> None:
    """Review F8: the message names PrivateBounds' own field."""
    with pytest.raises(InvalidParameterError, match=r"'share' of treedp\.PrivateBounds"):
        treedp.PrivateBounds(share=1.5)
    with pytest.raises(InvalidTypeError, match="public bounds"):
        treedp.PrivateBounds(lower=0, upper=1)


@pytest.mark.parametrize(
    "bad",
    [
        {"mechanism": 3},
        {"plan": "yes"},
        {"privacy_unit": "person"},  # a bare column name: the bounds are part of the unit
        {"bins": [0, 1, 2], "bounds": (0, 2)},
        {"neighbours": "swap"},
    ],
)
def test_release_cdf_refuses_before_reading(bad: dict) -> None:
    kwargs = {"epsilon": 1.0, "bounds": (0, 1), "bins": 4, **bad}
    with pytest.raises((InvalidParameterError, InvalidTypeError)):
        treedp.release_cdf(_Unread(), rng=InsecureSeededSource(1), **kwargs)


def test_release_cdf_takes_at_most_16_keywords_and_is_typed_release() -> None:
    import inspect
    import typing

    sig = inspect.signature(treedp.release_cdf)
    keywords = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert len(keywords) <= 16
    assert typing.get_type_hints(treedp.release_cdf)["return"] is treedp.Release


def test_quantiles_and_median_are_queries_run_by_the_one_run() -> None:
    """treedp.quantiles and treedp.median build the one Query (build_query(quantiles=...))
    and run it with treedp.run_query: the same answers for the same seed."""
    x = np.random.default_rng(3).normal(50, 10, 500)
    query = treedp.build_query(
        x, quantiles=[0.25, 0.5], epsilon=1.0, bounds=(0, 100), rng=InsecureSeededSource(5)
    )
    assert isinstance(query, treedp.Query) and query.spec is None
    assert query.quantiles is not None and query.epsilon == 1.0
    ran = treedp.run_query(query)
    direct = treedp.quantiles(
        x, [0.25, 0.5], epsilon=1.0, bounds=(0, 100), rng=InsecureSeededSource(5)
    )
    assert isinstance(ran, treedp.QuantilesResult)
    assert np.array_equal(ran.value, direct.value) and ran.method == direct.method
    med = treedp.run_query(
        treedp.build_query(
            x, quantiles=0.5, mechanism="exponential", epsilon=1.0, bounds=(0, 100),
            rng=InsecureSeededSource(6),
        )
    )  # fmt: skip
    assert treedp.median(x, epsilon=1.0, bounds=(0, 100), rng=InsecureSeededSource(6)) == med.value
    shared = treedp.PrivateBounds(share=0.3)
    a = treedp.quantiles(x, 0.5, epsilon=1.0, bounds=shared, rng=InsecureSeededSource(7))
    b = treedp.quantiles(
        x, 0.5, epsilon=1.0, bounds="private", bounds_share=0.3, rng=InsecureSeededSource(7)
    )
    assert a.value == b.value and a.parts == b.parts


@pytest.mark.parametrize(
    "extra",
    [
        {"privacy": treedp.ZCDP(0.5)},
        {"by": "k"},
        {"plan": False},
        {"integer": True},
        {"postprocess": "none"},
        {"counts": True},
    ],
)
def test_a_quantile_query_refuses_release_only_keywords_before_reading(extra: dict) -> None:  # type: ignore[type-arg]
    acct = _accountant()
    with pytest.raises(InvalidParameterError, match=repr(next(iter(extra)))):
        treedp.build_query(
            _Unread(), quantiles=0.5, epsilon=1.0, bounds=(0, 1), accountant=acct, **extra
        )
    with pytest.raises(InvalidParameterError, match="n_share"):
        treedp.build_query(_Unread(), epsilon=1.0, bounds=(0, 1), bins=4, n_share=0.2)
    assert not acct.history
