"""``neighbors=`` is accepted as ``neighbours=`` by every public function (treedp._aliases)."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import numpy as np
import pytest

import treedp
from treedp._aliases import accepts_aliases
from treedp.exceptions import InvalidParameterError

#: Public classes with a ``neighbours`` argument that the library builds, not the user.
_RESULTS = {"GroupedRelease"}


def _public_callables_with_neighbours() -> list[str]:
    found = []
    for name in treedp.__all__:
        obj = getattr(treedp, name)
        if not callable(obj) or name in _RESULTS:
            continue
        if inspect.isclass(obj):
            if dataclasses.is_dataclass(obj):
                continue  # a record (Plan, ReleaseSpec, ...): fields, not a front door
            init = obj.__dict__.get("__init__")
            if init is None or "neighbours" not in inspect.signature(init).parameters:
                continue  # a dataclass field, not a front door
            found.append(name)
            continue
        if "neighbours" in inspect.signature(obj).parameters:
            found.append(name)
    return found


def test_every_public_function_taking_neighbours_takes_neighbors() -> None:
    names = _public_callables_with_neighbours()
    assert {"release_cdf", "quantiles", "median", "stable_median", "release_grouped"} <= set(names)
    for name in names:
        obj = getattr(treedp, name)
        target = obj.__dict__["__init__"] if inspect.isclass(obj) else obj
        assert hasattr(target, "__wrapped__"), f"{name} does not accept neighbors="


def test_signature_and_type_hints_stay_the_documented_ones() -> None:
    sig = inspect.signature(treedp.release_cdf)
    assert "neighbors" not in sig.parameters and "neighbours" in sig.parameters
    keywords = [p for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert len(keywords) <= 16
    assert typing.get_type_hints(treedp.release_cdf)["return"] is treedp.Release
    assert treedp.release_cdf.__doc__ and treedp.release_cdf.__name__ == "release_cdf"


def test_the_american_spelling_gives_the_same_release() -> None:
    x = np.arange(200) % 50
    common = {"bounds": (0, 50), "bins": 16, "epsilon": 1.0, "n": 200}
    a = treedp.release_cdf(x, neighbours="replace", rng=treedp.InsecureSeededSource(3), **common)
    b = treedp.release_cdf(x, neighbors="replace", rng=treedp.InsecureSeededSource(3), **common)
    assert b.neighbours == "replace"
    np.testing.assert_array_equal(a.cdf(a.edges), b.cdf(b.edges))


@pytest.mark.parametrize(
    "call",
    [
        lambda kw: treedp.quantiles([1, 2, 3], 0.5, epsilon=1.0, bounds=(0, 4), **kw),
        lambda kw: treedp.median([1, 2, 3], epsilon=1.0, bounds=(0, 4), **kw),
        lambda kw: treedp.stable_median([1, 2, 3], epsilon=1.0, delta=1e-6, **kw),
        lambda kw: treedp.Accountant(treedp.PureDP(1.0), **kw),
        lambda kw: treedp.plan(64, epsilon=1.0, **kw),
    ],
)
def test_the_alias_reaches_the_function(call: typing.Callable[[dict], object]) -> None:
    # the relation given under the alias is the one the function checks
    with pytest.raises(InvalidParameterError, match="neighbours"):
        call({"neighbors": "swap"})


def test_both_spellings_at_once_are_refused_before_anything_runs() -> None:
    with pytest.raises(InvalidParameterError, match="not both"):
        treedp.release_cdf(
            object(), epsilon=1.0, bounds=(0, 1), neighbours="replace", neighbors="replace"
        )


def test_the_decorator_keeps_positional_arguments() -> None:
    @accepts_aliases
    def f(a: int, *, neighbours: str = "add_remove") -> tuple[int, str]:
        return a, neighbours

    assert f(1, neighbors="replace") == (1, "replace")
    assert f(2) == (2, "add_remove")


def test_per_person_keywords_in_the_wrong_place_name_where_they_go() -> None:
    """``max_contributions=`` next to ``privacy_unit`` (which holds it) and ``privacy_unit=``
    given to ``quantiles`` / ``median`` (no per-person mode) are refused with where they go,
    before anything is read (the data here is not even a column); elsewhere an unknown
    keyword stays Python's ``TypeError``."""
    with pytest.raises(InvalidParameterError, match=r"PrivacyUnit\(column, max_contributions"):
        treedp.release_cdf(object(), epsilon=1.0, bounds=(0, 1), bins=4, max_contributions=3)
    with pytest.raises(InvalidParameterError, match=r"max_groups"):
        treedp.release_cdf([1, 2], epsilon=1.0, bounds=(0, 1), bins=2, max_groups=2)
    for front_door in (treedp.quantiles, treedp.median):
        args = (object(), [0.5]) if front_door is treedp.quantiles else (object(),)
        with pytest.raises(InvalidParameterError, match="no per-person mode"):
            front_door(*args, epsilon=1.0, bounds=(0, 1), privacy_unit="pid")
    with pytest.raises(TypeError, match="unexpected keyword"):
        treedp.plan(16, epsilon=1.0, max_groups=2)  # type: ignore[call-arg]


def test_group_keywords_outside_release_grouped_name_it() -> None:
    """``by=`` / ``keys=`` given to ``release_cdf``, ``quantiles`` or ``median`` point to
    ``release_grouped`` before anything is read (the data here is not even a column);
    elsewhere an unknown keyword stays Python's ``TypeError``."""
    calls = (
        lambda: treedp.release_cdf(object(), epsilon=1.0, bounds=(0, 1), bins=4, by="g"),
        lambda: treedp.quantiles(object(), [0.5], epsilon=1.0, bounds=(0, 1), keys=[1]),
        lambda: treedp.median(object(), epsilon=1.0, bounds=(0, 1), by="g"),
    )
    for call in calls:
        with pytest.raises(InvalidParameterError, match=r"treedp\.release_grouped\(data"):
            call()
    with pytest.raises(TypeError, match="unexpected keyword"):
        treedp.plan(16, epsilon=1.0, by="g")  # type: ignore[call-arg]
