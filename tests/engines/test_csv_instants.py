"""CSV ``by`` cells read as instants when every key names one, as numbers when every key is
one (``engines/files/csv_instants.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

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
    assert ci.key_kinds(keys, 2) == ("instant", "text")
    assert ci.csv_keys(keys, ("d", "s")) == (
        (np.datetime64("2024-01-01"), "CA"),
        (np.datetime64("2024-01-02"), "NY"),
    )
    assert ci.key_kinds(("2024-01-01", "other"), 1) == ("text",)
    assert ci.key_kinds((5, 2.5), 1) == ("number",) and ci.key_kinds((5, "x"), 1) == ("text",)
    assert ci.key_kinds((True, 1), 1) == ("text",)  # booleans are not numbers here
    assert ci.csv_keys((5, np.float64(2.5)), ("d",)) == (5, 2.5)
    with pytest.raises(InvalidParameterError, match="'d'"):
        ci.csv_keys(("2024-01-01", dt.date(2024, 1, 1)), ("d",))
    assert ci.key_kinds((), 1) == ("text",)


def test_an_arrow_column_is_encoded_once_per_distinct_cell() -> None:
    col = pa.array(["2024-01-01", None, "2024-01-01 00:00:00", "x", "2024-01-01"])
    enc = ci.instant_column(_key_column(col, "d", True))  # as the files engine encodes it
    assert enc.codes[1] == -1  # a missing cell stays missing
    values = enc.uniques[enc.codes[[0, 2, 3, 4]]]
    assert values.tolist() == [
        dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1), ci.NO_INSTANT.item(),
        dt.datetime(2024, 1, 1),
    ]  # fmt: skip


def test_a_numbers_column_is_read_by_value_once_per_distinct_cell() -> None:
    col = pa.array(["9", None, " 9.0 ", "09", "9e0", "x", "10", ""])
    enc = ci.number_column(_key_column(col, "e", True))
    assert enc.codes[1] == -1  # a missing cell stays missing
    values = [enc.uniques[c] for c in enc.codes[[0, 2, 3, 4, 6]]]
    assert values == [9, 9, 9, 9, 10] and all(v == 9.0 for v in values[:4])
    assert enc.uniques[enc.codes[5]] is ci._NO_NUMBER and enc.uniques[enc.codes[7]] is ci._NO_NUMBER


def test_float_keys_match_integer_cells_of_a_csv_as_a_frame_does(tmp_path: Any) -> None:
    """Adult's ``education_num`` written as ``9``: the keys ``9.0`` and ``10.0`` matched no cell
    by their text (every key released as noise, the budget charged; a new user's run). Now the
    CSV's counts are the DataFrame's, seed for seed."""
    import treedp

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"edu": rng.integers(8, 12, 3000), "age": rng.integers(17, 91, 3000)})
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False)
    for keys in ([9.0, 10.0], [9, 10.0], [np.int64(9), 10]):
        run = lambda data, keys=keys: treedp.release_grouped(  # noqa: E731
            data, column="age", by="edu", keys=keys, bounds=(17, 90), bins="integers",
            epsilon=1.0, rng=treedp.InsecureSeededSource(3),
        )  # fmt: skip
        csv, mem = run(str(path)), run(frame)
        for key in csv.keys:
            assert np.array_equal(csv[key].noisy_levels[0], mem[key].noisy_levels[0]), keys
        assert csv[csv.keys[0]].n == pytest.approx((frame.edu == 9).sum(), abs=40)
