"""One privacy unit per accountant: a spend of another unit is refused before any data is read
(the new user's repro 5: a per-person release and a record-level quantiles summed as one
total)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp import Accountant, InvalidParameterError
from treedp.privacy import ZCDP, ApproxDP, PureDP, SpendRecord
from treedp.privacy.measures import Measure

PERSON = "person:pid"
TOTALS = [PureDP(2.0), ZCDP(1.0), ApproxDP(2.0, 1e-6)]
PURE = PureDP(1.0)


def spend(unit: str, total: Measure = PURE, name: str = "test") -> SpendRecord:
    """A spend of ``unit`` of the total's kind (small enough to fit twice)."""
    measure = ZCDP(0.1) if isinstance(total, ZCDP) else PureDP(0.25)
    return SpendRecord(name, measure, "add_remove", unit)


def refusal(acct: Accountant, record: SpendRecord) -> str:
    """The message ``check`` and ``charge`` both refuse ``record`` with; nothing charged."""
    before = acct.history
    with pytest.raises(InvalidParameterError) as by_check:
        acct.check(record)
    with pytest.raises(InvalidParameterError) as by_charge:
        acct.charge(record)
    assert acct.history == before
    assert str(by_check.value) == str(by_charge.value)
    return str(by_check.value)


def mixes_units(acct: Accountant) -> bool:
    """Whether ``acct`` takes a record-level spend after a person-level one."""
    acct.charge(spend(PERSON, acct.total))
    try:
        acct.charge(spend("record", acct.total))
    except InvalidParameterError:
        return False
    return True


@pytest.mark.parametrize("total", TOTALS, ids=["pure", "zcdp", "approx"])
@pytest.mark.parametrize(("first", "second"), [(PERSON, "record"), ("record", PERSON)])
def test_the_first_charge_fixes_the_unit(total: Measure, first: str, second: str) -> None:
    acct = Accountant(total, dataset="visits")
    assert acct.privacy_unit is None
    acct.charge(spend(first, total))
    assert acct.privacy_unit == first
    message = refusal(acct, spend(second, total, "quantiles[tree]"))
    assert f"'{first}'" in message and f"'{second}'" in message  # names both units
    assert "quantiles[tree]" in message and "'visits'" in message
    assert "one accountant (or ledger dataset) per privacy unit" in message
    assert re.search(r"\d", message) is None  # no count, value or amount
    acct.charge(spend(first, total))  # the same unit is accepted
    assert [c.record.unit for c in acct.history] == [first, first]


def test_person_units_on_different_columns_differ() -> None:
    acct = Accountant(PureDP(1.0))
    acct.charge(spend("person:pid"))
    refusal(acct, spend("person:household"))


@pytest.mark.parametrize("declared", ["pid", PERSON])
def test_a_declared_unit_refuses_another_first_charge(declared: str) -> None:
    acct = Accountant(PureDP(1.0), privacy_unit=declared)
    assert acct.privacy_unit == PERSON
    refusal(acct, spend("record"))
    acct.charge(spend(PERSON))
    record_level = Accountant(PureDP(1.0), privacy_unit="record")
    refusal(record_level, spend(PERSON))


@pytest.mark.parametrize("bad", ["", "person:", 3])
def test_a_bad_declared_unit(bad: Any) -> None:
    with pytest.raises(InvalidParameterError, match="privacy_unit"):
        Accountant(PureDP(1.0), privacy_unit=bad)


@pytest.mark.parametrize("mutant", [False, True], ids=["accountant", "unit-blind mutant"])
def test_the_unit_test_catches_an_accountant_that_ignores_the_unit(
    monkeypatch: pytest.MonkeyPatch, mutant: bool
) -> None:
    """The privacy test can fail: with the unit check removed (the accountant before this
    change), the same predicate reports that the units were mixed."""
    if mutant:
        monkeypatch.setattr(Accountant, "_check_unit", lambda self, record: None)
    assert mixes_units(Accountant(PureDP(2.0))) is mutant
    assert mixes_units(Accountant(ZCDP(1.0))) is mutant


# -- parallel groups ---------------------------------------------------------------------------


def test_parallel_groups_keep_the_unit() -> None:
    acct = Accountant(PureDP(2.0))
    acct.charge(spend(PERSON))
    group = acct.parallel(PureDP(0.5), label="by region")
    assert group.unit == PERSON and acct.history[-1].record.unit == PERSON
    part = group.part("north")
    assert part.privacy_unit == PERSON
    part.charge(spend(PERSON))
    refusal(part, spend("record"))
    refusal(acct, spend("record"))
    fresh = Accountant(PureDP(2.0)).parallel(PureDP(0.5), label="by region")
    assert fresh.unit == "record"  # nothing fixed yet: the record level, as before
    refusal(fresh.part("south"), spend(PERSON))
    declared = Accountant(PureDP(2.0), privacy_unit="pid").parallel(PureDP(0.5), label="x")
    declared.part("a").charge(spend(PERSON))


# -- releases: refused before any data is read ---------------------------------------------------


class _Unreadable(list):  # type: ignore[type-arg]
    """Values that must not be read (reading them fails the test)."""

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("data read before the accountant's unit check")

    def __len__(self) -> int:
        raise AssertionError("data read before the accountant's unit check")


class _Read(BaseException):
    """Raised by a read of :class:`_Guarded` (a BaseException: no handler of the library's
    turns it into a refusal, and a failing test does not stop the session)."""


class _Guarded(dict):  # type: ignore[type-arg]
    """A table none of whose columns may be read."""

    def __getitem__(self, key: Any) -> Any:
        raise _Read(key)


def _charged(unit: str) -> Accountant:
    acct = Accountant(PureDP(5.0), dataset="visits")
    acct.charge(spend(unit))
    return acct


_TABLE = {"v": [0.5, 0.2], "pid": [0, 1], "k": [0, 1]}
_PER_PERSON = treedp.PrivacyUnit("pid", max_contributions=3)
_COMMON: dict[str, Any] = {"column": "v", "bounds": (0, 1), "epsilon": 1.0}
_RELEASES = {
    "release_cdf per person": (
        "record",
        lambda t, a: treedp.release_cdf(
            t, bins=4, privacy_unit=_PER_PERSON, accountant=a, **_COMMON
        ),
    ),
    "release_cdf auto bound": (
        "record",
        lambda t, a: treedp.release_cdf(
            t,
            bins=4,
            privacy_unit=treedp.PrivacyUnit("pid", max_contributions="auto"),
            accountant=a,
            **_COMMON,
        ),
    ),
    "release_grouped per person": (
        "record",
        lambda t, a: treedp.release_grouped(
            t, by="k", keys=(0, 1), bins=4, privacy_unit=_PER_PERSON, accountant=a, **_COMMON
        ),
    ),
    "release_grouped": (
        PERSON,
        lambda t, a: treedp.release_grouped(
            t, by="k", keys=(0, 1), bins=4, accountant=a, **_COMMON
        ),
    ),
    "release_cdf": (PERSON, lambda t, a: treedp.release_cdf(t, bins=4, accountant=a, **_COMMON)),
    "release_cdf private bounds": (
        PERSON,
        lambda t, a: treedp.release_cdf(
            t, column="v", bounds="private", bins=4, epsilon=1.0, accountant=a
        ),
    ),
    "quantiles": (PERSON, lambda t, a: treedp.quantiles(t, [0.5], accountant=a, **_COMMON)),
    "median": (PERSON, lambda t, a: treedp.median(t, accountant=a, **_COMMON)),
}


@pytest.mark.parametrize("name", list(_RELEASES))
def test_a_release_of_another_unit_is_refused_before_reading(name: str) -> None:
    held, run = _RELEASES[name]
    acct = _charged(held)
    with pytest.raises(InvalidParameterError, match=f"kept for the privacy unit '{held}'"):
        run(_Guarded(_TABLE), acct)  # a read raises _Read
    assert len(acct.history) == 1


def test_a_profile_is_record_level_and_refused_before_reading() -> None:
    acct = _charged(PERSON)
    with pytest.raises(InvalidParameterError, match="the profile release protects"):
        treedp.profile(
            {"v": _Unreadable([0.5, 0.2])},
            epsilon=1.0,
            types={"v": "float"},
            bounds={"v": (0, 1)},
            accountant=acct,
        )
    assert len(acct.history) == 1


def test_the_repro_in_memory() -> None:
    """repro_5 with an in-memory accountant: persons with up to 40 rows, one release per
    person, then a record-level quantiles: refused, nothing more charged."""
    rng = np.random.default_rng(5)
    table = pd.DataFrame({"pid": np.repeat(np.arange(30), rng.integers(1, 41, 30))})
    table["age"] = rng.integers(0, 120, len(table))
    acct = Accountant(PureDP(2.0), dataset="visits")
    treedp.release_cdf(
        table,
        column="age",
        bounds=(0, 120),
        bins="integers",
        epsilon=0.5,
        privacy_unit=_PER_PERSON,
        accountant=acct,
        rng=treedp.InsecureSeededSource(5),
    )
    with pytest.raises(InvalidParameterError, match="privacy unit 'record'"):
        treedp.quantiles(
            table,
            [0.5],
            column="age",
            bounds=(0, 120),
            bins="integers",
            epsilon=0.5,
            accountant=acct,
        )
    assert [c.record.unit for c in acct.history] == [PERSON] and acct.spent == PureDP(0.5)


# -- the one-shot mechanisms take values, not a table: refused before the values are read --

_VALUES = {
    "private_bounds": lambda v, a: treedp.private_bounds(v, epsilon=1.0, accountant=a),
    "quantile_exponential": lambda v, a: treedp.quantile_exponential(
        v, 0.5, bounds=(0, 1), epsilon=1.0, accountant=a
    ),
    "quantiles_recursive": lambda v, a: treedp.quantiles_recursive(
        v, [0.25, 0.75], bounds=(0, 1), epsilon=1.0, accountant=a
    ),
    "stable_median": lambda v, a: treedp.stable_median(
        v, bounds=(0, 1), epsilon=1.0, delta=1e-6, accountant=a
    ),
    "release_counts": lambda v, a: treedp.release_counts(v, bins=4, epsilon=1.0, accountant=a),
}


@pytest.mark.parametrize("name", list(_VALUES))
def test_a_one_shot_mechanism_is_refused_before_reading_its_values(name: str) -> None:
    """Review R9 F1: these read their values before the accountant's check, so text values
    gave a type error (depending on the data) where the unit refusal was due."""
    acct = _charged(PERSON)
    with pytest.raises(InvalidParameterError, match="kept for the privacy unit 'person:pid'"):
        _VALUES[name](_Unreadable([0.5] * 8), acct)
    assert len(acct.history) == 1


def test_a_declared_unit_another_process_beat_says_so() -> None:
    """Review R9 F2: an accountant opened for one unit whose dataset was first charged (by
    another process) in another names both, and reports the charged unit as its own."""
    acct = Accountant(PureDP(5.0), dataset="visits", privacy_unit="record")
    acct._units["person:pid"] = None  # as a ledger refresh finds another process's charge
    assert acct.privacy_unit == "person:pid"
    with pytest.raises(InvalidParameterError, match="another process charged it first"):
        acct.check(spend("record"))
