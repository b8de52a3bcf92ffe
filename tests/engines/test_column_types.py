"""One type per column across files (``engines/files/column_types.py``).

A dataset scanner cast every file's column to the first file's type: ``int64`` values beyond
``int32`` failed with a raw Arrow error holding the value, and ``float64`` values with a
fraction failed into ``int64`` — whether a release failed, and what it said, depended on the
data. Now the column is read in the type every file's converts to exactly, or refused from the
schemas before any value is read or budget charged, in words that hold no value. Deterministic
tests (no statistical claim).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.files.column_types import check_exact, exact_type, unified_schema
from treedp.exceptions import InvalidTypeError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

BIG = 2**40 + 3  # beyond int32, exact in float64


@pytest.mark.parametrize(
    ("types", "want"),
    [
        (["int32", "int64"], "int64"),
        (["int8", "uint8"], "int16"),
        (["uint32", "int32"], "int64"),
        (["uint8", "uint32"], "uint32"),
        (["uint64", "int8"], None),
        (["int32", "float64"], "float64"),
        (["uint32", "float64"], "float64"),
        (["int32", "float32"], "float64"),
        (["int16", "float32"], "float32"),
        (["int64", "float64"], None),
        (["float32", "float64"], "float64"),
        (["date32", "date64"], "date64"),
        (["string", "int32"], None),
        (["bool", "int8"], None),
        (["null", "int32"], "int32"),
    ],
)
def test_exact_type_table(types: list[str], want: str | None) -> None:
    got = exact_type([pa.type_for_alias(t) for t in types])
    assert got == (None if want is None else pa.type_for_alias(want))


def test_exact_type_of_encodings_decimals_and_units() -> None:
    assert exact_type([pa.decimal128(5, 2), pa.decimal128(10, 0)]) == pa.decimal128(12, 2)
    assert exact_type([pa.decimal128(38, 0), pa.decimal128(38, 38)]) == pa.decimal256(76, 38)
    assert exact_type([pa.decimal256(76, 0), pa.decimal128(5, 2)]) is None
    assert exact_type([pa.timestamp("s"), pa.timestamp("ns")]) is None  # a finer unit overflows
    assert exact_type([pa.timestamp("us", "UTC"), pa.timestamp("us")]) is None
    text = pa.dictionary(pa.int32(), pa.string())
    assert exact_type([text, pa.string()]) == text  # the scanner converts text both ways
    assert exact_type([pa.dictionary(pa.int8(), pa.int64()), pa.int64()]) == pa.int64()
    assert exact_type([pa.null(), pa.null()]) == pa.null()


def _files(folder: Path, columns: list[dict[str, Any]], kind: str = "parquet") -> Path:
    folder.mkdir()
    for i, cols in enumerate(columns):
        table = pa.table(cols)
        if kind == "parquet":
            pq.write_table(table, folder / f"f{i}.parquet")
        else:
            with pa.ipc.new_file(folder / f"f{i}.arrow", table.schema) as writer:
                writer.write_table(table)
    return folder


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_widened_integers_are_read_exactly(tmp_path: Path, kind: str) -> None:
    """int32 then int64 beyond int32's range: read as int64, every value exact (a raw
    ``ArrowInvalid: Integer value 1099511627779 not in range`` before)."""
    d = _files(
        tmp_path / "d",
        [
            {"v": pa.array([1, 2, 3], pa.int32()), "g": pa.array([1, 1, 2], pa.int32())},
            {"v": pa.array([4, BIG], pa.int64()), "g": pa.array([1, BIG], pa.int64())},
        ],
        kind,
    )
    assert sorted(treedp.read_column(str(d), "v").tolist()) == [1, 2, 3, 4, BIG]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # clamped mass at the bound
        res = treedp.quantiles(
            str(d),
            [0.5],
            column="v",
            bounds=(0, 10),
            epsilon=1.0,
            rng=treedp.InsecureSeededSource(1),
        )
        grouped = treedp.release_grouped(
            str(d), column="v", by="g", keys=[1, BIG], bounds=(0, 10), bins=10, epsilon=1.0,
            rng=treedp.InsecureSeededSource(1),
        )  # fmt: skip
    assert np.isfinite(res.values).all()
    assert grouped.keys == (1, BIG)


def _calls(d: str, acc: Any) -> list[Callable[[], Any]]:
    common: dict[str, Any] = {"bounds": (0, 10), "epsilon": 1.0, "accountant": acc}
    return [
        lambda: treedp.release_cdf(d, column="v", bins=10, **common),
        lambda: treedp.quantiles(d, [0.5], column="v", **common),
        lambda: treedp.release_grouped(d, column="v", by="g", keys=[1], bins=10, **common),
        lambda: treedp.read_column(d, "v"),
    ]


@pytest.mark.parametrize("kind", ["parquet", "arrow"])
def test_types_without_an_exact_common_type_are_refused_before_any_charge(
    tmp_path: Path, kind: str
) -> None:
    """int64 and float64 (and a value that fits neither's rounding): refused in the same words
    whatever the values, naming the column, each type and a file holding it; nothing charged.
    With the float file's values integers (no cast could fail), the words are the same."""
    for name, floats in (("frac", [4.5, 2.0]), ("whole", [4.0, 2.0])):
        d = _files(
            tmp_path / f"{name}{kind}",
            [
                {"v": pa.array([1, BIG], pa.int64()), "g": pa.array([1, 1], pa.int64())},
                {"v": pa.array(floats, pa.float64()), "g": pa.array([1, 1], pa.int64())},
            ],
            kind,
        )
        acc = treedp.Accountant(treedp.PureDP(10))
        for call in _calls(str(d), acc):
            with pytest.raises(InvalidTypeError) as info:
                call()
            text = str(info.value)
            assert "column 'v' is int64 in '" in text and "double in '" in text
            assert str(BIG) not in text and "4.5" not in text
        assert acc.spent == treedp.PureDP(0.0)


def test_a_users_dataset_schema_must_hold_each_files_type(tmp_path: Path) -> None:
    """A user's Dataset is read through its own schema: a file whose type it does not hold
    exactly is refused (the scanner cast failed by value); one it holds is read exactly."""
    d = _files(
        tmp_path / "d",
        [{"v": pa.array([1, 2], pa.int32())}, {"v": pa.array([3, BIG], pa.int64())}],
    )
    files = sorted(str(p) for p in d.iterdir())
    narrow = ds.dataset(files, format="parquet")  # the first file's int32
    with pytest.raises(InvalidTypeError, match=r"column 'v' is int64 in .* but int32 in the"):
        check_exact(narrow, ["v"])
    with pytest.raises(InvalidTypeError, match="column 'v' is int64"):
        treedp.release_cdf(narrow, column="v", bounds=(0, 10), bins=10, epsilon=1.0)
    wide = ds.dataset(files, format="parquet", schema=pa.schema([("v", pa.int64())]))
    check_exact(wide, ["v"])
    rel = treedp.release_cdf(
        wide, column="v", bounds=(0, 10), bins=10, epsilon=1.0, rng=treedp.InsecureSeededSource(2)
    )
    assert rel.bins.n_bins == 10


def test_the_schema_kinds_read_every_file(tmp_path: Path) -> None:
    """The column kinds a release decides from (integer mode, key types) are those of the
    type every file converts to: int32 in one file and float64 in another is a float column,
    not the first file's integers."""
    d = _files(
        tmp_path / "d",
        [{"v": pa.array([1, 2], pa.int32())}, {"v": pa.array([2.5, 3.5], pa.float64())}],
    )
    schema = unified_schema(ds.dataset(sorted(str(p) for p in d.iterdir()), format="parquet"))
    assert schema.field("v").type == pa.float64()
    res = treedp.quantiles(
        str(d), [0.5], column="v", bounds=(0, 10), epsilon=1.0, rng=treedp.InsecureSeededSource(3)
    )
    assert not res.integer_mode


def test_hive_partitions_keep_their_columns(tmp_path: Path) -> None:
    """Partition keys (typed by the directories) stay in the widened dataset's schema."""
    for k, arr in (("1", pa.array([1, 2], pa.int32())), ("2", pa.array([BIG], pa.int64()))):
        (tmp_path / f"k={k}").mkdir()
        pq.write_table(pa.table({"v": arr}), tmp_path / f"k={k}" / "a.parquet")
    got = treedp.read_column(str(tmp_path), "v")
    assert sorted(got.tolist()) == [1, 2, BIG]
    rel = treedp.release_grouped(
        str(tmp_path), column="v", by="k", keys=[1, 2], bounds=(0, 10), bins=10, epsilon=1.0,
        rng=treedp.InsecureSeededSource(4),
    )  # fmt: skip
    assert rel.keys == (1, 2)


def test_dictionary_numbers_in_some_files_are_read_plain(tmp_path: Path) -> None:
    """Arrow files with a dictionary-encoded number column in one file only: the scanner
    cannot cast plain numbers to a dictionary (a raw Arrow error before), so they are read
    through the plain type."""
    d = _files(
        tmp_path / "d",
        [{"v": pa.array([1, 2]).dictionary_encode()}, {"v": pa.array([1, 3])}],
        "arrow",
    )
    assert sorted(treedp.read_column(str(d), "v").tolist()) == [1, 1, 2, 3]


def test_a_damaged_later_file_is_one_clear_error(tmp_path: Path) -> None:
    """A directory whose first Parquet file reads and a later one is damaged: the footer
    read that decides the column's type reports it as a :class:`DataError` naming the input
    (a raw ``ArrowInvalid`` from the counting threads before), before any budget is charged."""
    from treedp.exceptions import DataError

    pq.write_table(pa.table({"v": [1.0, 2.0]}), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"PAR1 not a parquet file")
    acc = treedp.Accountant(treedp.PureDP(1.0))
    with pytest.raises(DataError, match="could not be read as parquet"):
        treedp.release_cdf(
            str(tmp_path), column="v", bounds=(0, 10), bins=10, epsilon=1.0, accountant=acc
        )
    assert acc.spent == treedp.PureDP(0.0)
