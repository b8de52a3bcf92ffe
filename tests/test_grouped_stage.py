"""Bad input of a per-person grouped release in memory (issue 29): null ids, mixed-type ids,
a missing key column. Each is refused (or handled by the stated rule) before any budget is
charged, with no count of the data in the message."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp import InsecureSeededSource
from treedp.exceptions import DataError, InvalidParameterError


def _frame(ids: object) -> pd.DataFrame:
    return pd.DataFrame(
        {"person": ids, "state": ["CA", "NY", "CA", "NY"], "income": [1.0, 2.0, 3.0, 4.0]}
    )


def _release(frame: pd.DataFrame, acc: object, **kw: object) -> object:
    args: dict[str, object] = dict(
        column="income",
        by="state",
        keys=["CA", "NY"],
        privacy_unit="person",
        max_contributions=2,
        bounds=(0, 8),
        bins=8,
        epsilon=1.0,
        rng=InsecureSeededSource(3),
        accountant=acc,
    )
    args.update(kw)
    return treedp.release_grouped(frame, **args)


@pytest.mark.parametrize(
    "ids",
    [
        pd.Series(["a", None, "b", "a"], dtype="string[pyarrow]"),  # pandas' NA
        pd.Series(["a", None, "b", "a"], dtype=object),
        pd.Series([1.0, np.nan, 2.0, 1.0]),
    ],
)
def test_null_person_ids_are_refused_before_any_charge_or_dropped(ids: pd.Series) -> None:
    """The rule: a person id that is None, NaN, NaT or pandas' NA is missing; under
    ``nan="error"`` (the default) the release is refused before any budget is charged, under
    ``nan="drop"`` those rows are left out before bounding (as a missing value is)."""
    acc = treedp.Accountant(treedp.PureDP(10.0))
    with pytest.raises(DataError, match="privacy_unit") as err:
        _release(_frame(ids), acc)
    assert not re.search(r"\d", str(err.value))
    assert acc.spent.epsilon == 0
    rel = _release(_frame(ids), acc, nan="drop")
    assert rel is not None and acc.spent.epsilon > 0


def test_mixed_type_person_ids_are_data_not_an_error() -> None:
    ids = pd.Series(["p1", 7, "p1", 7], dtype=object)
    acc = treedp.Accountant(treedp.PureDP(10.0))
    assert _release(_frame(ids), acc) is not None


@pytest.mark.parametrize("missing", ["by", "privacy_unit"])
def test_a_missing_key_or_unit_column_is_refused_before_any_charge(missing: str) -> None:
    acc = treedp.Accountant(treedp.PureDP(10.0))
    kw = {"by": "region"} if missing == "by" else {"privacy_unit": "who"}
    with pytest.raises(InvalidParameterError, match=missing) as err:
        _release(_frame(["a", "b", "c", "d"]), acc, **kw)
    assert not re.search(r"\d", str(err.value))
    assert acc.spent.epsilon == 0


@pytest.mark.parametrize("dtype", ["string[pyarrow]", "category", "string[python]"])
def test_text_key_and_id_columns_give_the_object_column_s_release(dtype: str) -> None:
    """Key and person-id columns encoded by pandas at the source (no Python objects) give the
    same seeded release as the same columns as plain objects, missing keys dropped alike."""
    rng = np.random.default_rng(2)
    n = 5000
    state = rng.choice(["CA", "NY", "TX", "WA"], n).astype(object)
    state[::97] = None
    frame = pd.DataFrame(
        {
            "person": pd.Series([f"p{i}" for i in rng.integers(0, 400, n)], dtype=object),
            "state": pd.Series(state, dtype=object),
            "income": rng.integers(0, 8, n).astype(float),
        }
    )
    typed = frame.assign(state=frame["state"].astype(dtype), person=frame["person"].astype(dtype))
    acc = treedp.Accountant(treedp.PureDP(10.0))
    kw: dict[str, object] = dict(keys=["CA", "NY", "TX"], nan="drop")
    a = _release(frame, acc, **kw)
    b = _release(typed, acc, **kw)
    for key in ["CA", "NY", "TX"]:
        assert np.array_equal(a[key].cdf([2, 5]), b[key].cdf([2, 5]))  # type: ignore[index]


@pytest.mark.parametrize(
    "bounds", [{"max_contributions": 3}, {"max_groups": 2, "max_contributions_per_group": 2}]
)
def test_a_frame_s_release_is_that_of_its_numpy_columns(bounds: dict[str, int]) -> None:
    """A DataFrame's person ids are numbered in order of first appearance when only the
    per-person bound applies (no remapping pass), a mapping of numpy columns' in the ids'
    order: the same kept rows, hence the same seeded release (and with (person, group)
    steps, where the numbering orders the draws, both use the ids' order)."""
    rng = np.random.default_rng(4)
    n = 6000
    names = np.array([f"p{v}" for v in rng.permutation(500)], dtype=object)
    frame = pd.DataFrame(
        {
            "person": pd.Series(names[rng.integers(0, 500, n)], dtype="string[pyarrow]"),
            "state": pd.Series(rng.choice(["CA", "NY", "TX"], n), dtype="string[pyarrow]"),
            "income": rng.integers(0, 8, n).astype(float),
        }
    )
    table = {c: frame[c].to_numpy(dtype=object if c != "income" else float) for c in frame}
    acc = treedp.Accountant(treedp.PureDP(10.0))
    kw: dict[str, object] = {"keys": ["CA", "NY", "TX"], "max_contributions": None, **bounds}
    a, b = _release(frame, acc, **kw), _release(table, acc, **kw)  # type: ignore[arg-type]
    for key in ["CA", "NY", "TX"]:
        assert np.array_equal(a[key].cdf([2, 5]), b[key].cdf([2, 5]))  # type: ignore[index]
