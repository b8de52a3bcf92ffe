"""CSV ``by`` cells read as instants when every key names one
(``engines/files/csv_instants.py``)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from treedp.engines.files import csv_instants as ci
from treedp.engines.files.grouped import _key_column
from treedp.exceptions import InvalidParameterError

pa = pytest.importorskip("pyarrow")


def test_each_cell_is_read_as_its_instant_or_as_none() -> None:
    midnight = np.datetime64("2024-01-01T00:00", "us")
    for cell in ("2024-01-01", " 2024-01-01 00:00:00 ", "2024-01-01T00:00", "2024-01-01T00:00Z",
                 "2024-01-01T01:00+01:00", "2024-01-01T00:00:00.000000"):  # fmt: skip
        assert ci._cell_instant(cell) == midnight, cell
    for cell in ("2024", "2024-01", "Jan 1", "n/a", "", "5", "2024-01-01T00:00:00.000000001"):
        assert ci._cell_instant(cell) == ci.NO_INSTANT, cell
    assert not np.isnat(ci.NO_INSTANT)  # matches no key, but is not a missing cell


def test_which_columns_match_as_instants() -> None:
    keys = (("2024-01-01", "CA"), (dt.date(2024, 1, 2), "NY"))
    assert ci.dated_columns(keys, 2) == (True, False)
    assert ci.csv_keys(keys, ("d", "s")) == (
        (np.datetime64("2024-01-01"), "CA"),
        (np.datetime64("2024-01-02"), "NY"),
    )
    assert ci.dated_columns(("2024-01-01", "other"), 1) == (False,)
    assert ci.csv_keys((5, 2.5), ("d",)) == ("5", "2.5")
    with pytest.raises(InvalidParameterError, match="'d'"):
        ci.csv_keys(("2024-01-01", dt.date(2024, 1, 1)), ("d",))
    assert ci.dated_columns((), 1) == (False,)


def test_an_arrow_column_is_encoded_once_per_distinct_cell() -> None:
    col = pa.array(["2024-01-01", None, "2024-01-01 00:00:00", "x", "2024-01-01"])
    enc = ci.instant_column(_key_column(col, "d", True))  # as the files engine encodes it
    assert enc.codes[1] == -1  # a missing cell stays missing
    values = enc.uniques[enc.codes[[0, 2, 3, 4]]]
    assert values.tolist() == [
        dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1), ci.NO_INSTANT.item(),
        dt.datetime(2024, 1, 1),
    ]  # fmt: skip
