"""Public keys of a type the ``by`` column's schema rules out are refused before any budget is
spent, on every engine, by one rule read from the schema (:mod:`treedp.engines.key_types`).

Before the rule, text keys for an integer column (``["9", "10"]``) matched no record in memory
and on Parquet: every key was released as pure noise and the budget charged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.key_types import key_kind
from treedp.exceptions import InvalidTypeError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

ROWS = {
    "num": np.array([9, 10, 13, 9, 10, 9], dtype=np.int64),
    "word": np.array(["a", "b", "c", "a", "b", "a"]),
    "x": np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
}


def _release(data: Any, by: str, keys: list[Any], accountant: Any = None, **kw: Any) -> Any:
    return treedp.release_grouped(
        data, column="x", by=by, keys=keys, bins=4, bounds=(0, 8), epsilon=1.0,
        accountant=accountant, rng=treedp.InsecureSeededSource(1), **kw,
    )  # fmt: skip


def _refused(data: Any, by: str, keys: list[Any], kind: str, **kw: Any) -> str:
    accountant = treedp.Accountant(treedp.PureDP(2.0))
    with pytest.raises(InvalidTypeError) as err:
        _release(data, by, keys, accountant, **kw)
    message = str(err.value)
    assert "'keys'" in message and f"{kind} type" in message and f"'{by}'" in message
    assert accountant.history == ()  # refused before any charge
    for value in ("15784", "6"):  # no count of the data (6 rows, sizes)
        assert value not in message
    return message


def _tables() -> dict[str, Any]:
    frame = pd.DataFrame({**ROWS, "word": pd.array(ROWS["word"], dtype="string")})
    import polars as pl

    return {
        "mapping": ROWS,
        "pandas": frame,
        "polars": pl.DataFrame(ROWS),
        "arrow": pa.table(ROWS),
    }


@pytest.mark.parametrize("name", ["mapping", "pandas", "polars", "arrow"])
def test_memory_tables_refuse_keys_of_the_wrong_type(name: str) -> None:
    data = _tables()[name]
    message = _refused(data, "num", ["9", "10", "13"], "integer")
    assert "'9', '10', '13'" in message  # the public keys may be named
    _refused(data, "word", [1, 2], "text")
    _refused(data, "word", ["a", True], "text")  # a bool is a number key
    # the right types release, and a mix of number kinds is allowed for a number column
    assert set(_release(data, "num", [9, 10.0, 13]).keys) == {9, 10, 13}
    assert set(_release(data, "word", ["a", "b"]).keys) == {"a", "b"}


def test_key_arrays_and_several_by_columns() -> None:
    x, num = ROWS["x"], ROWS["num"]
    with pytest.raises(InvalidTypeError, match="'by'"):
        treedp.release_grouped(x, by=num, keys=["9"], bins=4, bounds=(0, 8), epsilon=1.0)
    with pytest.raises(InvalidTypeError, match="'word' has a text type"):
        treedp.release_grouped(
            ROWS, column="x", by=["num", "word"], keys=[(9, "a"), (10, 2)], bins=4,
            bounds=(0, 8), epsilon=1.0,
        )  # fmt: skip
    got = treedp.release_grouped(
        ROWS, column="x", by=["num", "word"], keys=[(9, "a")], bins=4, bounds=(0, 8),
        epsilon=1.0, rng=treedp.InsecureSeededSource(1),
    )  # fmt: skip
    assert got.keys == ((9, "a"),)


def test_columns_whose_schema_does_not_say_are_not_checked() -> None:
    """pandas ``object`` (any Python values), categoricals and booleans: the schema does not
    rule a key out, so nothing is refused (a refusal may not depend on values)."""
    frame = pd.DataFrame({"obj": pd.Series([9, "a", 10, 9, 10, 9], dtype=object), "x": ROWS["x"]})
    assert key_kind(frame, "obj") is None
    assert set(_release(frame, "obj", ["9", 10]).keys) == {"9", 10}
    cat = pd.DataFrame({"c": pd.Categorical(["a", "b"] * 3), "x": ROWS["x"]})
    assert key_kind(cat, "c") is None


def test_files(tmp_path: Path) -> None:
    """Parquet's schema types the column; a CSV's ``by`` columns are read as text and matched
    by ``str(key)``, so any key type can match and nothing is refused."""
    import pyarrow.parquet as pq

    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table(ROWS), parquet)
    _refused(str(parquet), "num", ["9"], "integer")
    _refused(treedp.FileSource(str(parquet)), "word", [1], "text")
    csv = tmp_path / "t.csv"
    pd.DataFrame(ROWS).to_csv(csv, index=False)
    assert key_kind(str(csv), "num") is None
    as_text = _release(str(csv), "num", ["9", "10"])
    as_numbers = _release(str(csv), "num", [9, 10])
    assert (as_text.keys, as_numbers.keys) == (("9", "10"), (9, 10))  # both matched by text


def test_dask(dask_client: Any) -> None:
    import dask.dataframe as dd

    frame = dd.from_pandas(pd.DataFrame(ROWS).astype({"word": "string"}), npartitions=2)
    _refused(frame, "num", ["9"], "integer")


def test_spark(spark: Any) -> None:
    rows = list(zip(*(v.tolist() for v in ROWS.values()), strict=True))
    frame = spark.createDataFrame(rows, "num long, word string, x double")
    _refused(frame, "num", ["9"], "integer")
    _refused(frame, "word", [1], "text")
