"""engines/schema.integer_typed: a column's integer type from its schema, never its values,
the same kinds treedp.profile reads (one rule)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import treedp
from treedp.engines.schema import integer_typed, schema_kinds
from treedp.profiling.schema import column_kinds

INTS = np.array([1, 2, 3, 3, 5])


@pytest.mark.parametrize(
    ("values", "typed"),
    [
        (INTS.astype(np.int64), True),
        (INTS.astype(np.int8), True),
        (INTS.astype(np.uint32), True),
        (INTS.astype(np.float64), False),  # whole numbers in a float column: a float column
        (INTS.astype(bool), False),  # booleans are not integers here (refused by the methods)
        (INTS.astype("datetime64[D]"), False),
        (INTS.astype(object), False),  # Python objects: no declared type
        (list(INTS), False),
        (tuple(INTS), False),
        (pd.Series(INTS), True),
        (pd.array([1, None, 3], dtype="Int64"), True),  # nullable
        (pd.Series([1, None, 3], dtype="UInt16"), True),
        (pd.Series([1.0, 2.0]), False),
        (pd.Series([True, None], dtype="boolean"), False),
        (pl.Series([1, None, 3], dtype=pl.Int64), True),
        (pl.Series([1, 2], dtype=pl.UInt8), True),
        (pl.Series([1.0, 2.0]), False),
        (pl.Series([True, False]), False),
        (pa.array([1, None, 3], type=pa.int32()), True),
        (pa.chunked_array([[1, 2], [None]], type=pa.int64()), True),
        (pa.array([1.0, 2.0]), False),
        (pa.array([True, False]), False),
    ],
)
def test_one_column_kinds(values: Any, typed: bool) -> None:
    assert integer_typed(values) is typed


def _tables(tmp_path: Path) -> dict[str, Any]:
    data = {"i": INTS.astype(np.int64), "f": INTS.astype(np.float64)}
    parquet = tmp_path / "t.parquet"
    pq.write_table(pa.table(data), parquet)
    return {
        "pandas": pd.DataFrame(data),
        "polars": pl.DataFrame(data),
        "arrow": pa.table(data),
        "mapping": data,
        "parquet": str(parquet),
    }


def test_tables_by_column_agree_with_profile(tmp_path: Path) -> None:
    for name, table in _tables(tmp_path).items():
        assert integer_typed(table, "i") and not integer_typed(table, "f"), name
        # the same rule as treedp.profile's column kinds (one place: engines/schema.py)
        kinds = column_kinds(table, None)
        assert {c: kinds[c] == "integer" for c in ("i", "f")} == {"i": True, "f": False}, name
        assert not integer_typed(table, "missing"), name


def test_csv_has_no_declared_type(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("i\n1\n2\n3\n")
    assert schema_kinds(str(path)) is None
    assert not integer_typed(str(path), "i")  # whole numbers in a CSV: nothing declares them
    assert not integer_typed(treedp.FileSource(str(path)), "i")


def test_database_queries() -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i BIGINT, f DOUBLE)")
    con.execute("INSERT INTO t VALUES (1, 1.0), (2, 2.0)")
    assert integer_typed(treedp.SqlSource(con, "SELECT i FROM t"))  # one column: its type
    assert not integer_typed(treedp.SqlSource(con, "SELECT f FROM t"))
    assert integer_typed(treedp.SqlSource(con, "SELECT * FROM t"), "i")
    assert not integer_typed(treedp.SqlSource(con, "SELECT * FROM t"))  # which column?
    assert integer_typed(con.sql("SELECT i FROM t"))  # a DuckDB relation
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (i INTEGER)")
    assert not integer_typed(treedp.SqlSource(lite, "SELECT i FROM t"))  # SQLite types values


_NO_PYARROW = """
import sys
for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")] + ["pyarrow"]:
    sys.modules[name] = None  # as on a core install
import treedp
from treedp.cli import main
calls = {
    "quantiles": lambda: treedp.quantiles(
        PATH, [0.5], column="x", bounds=(0, 1), epsilon=1.0),
    "median": lambda: treedp.median(PATH, column="x", bounds=(0, 1), epsilon=1.0),
    "profile": lambda: treedp.profile(PATH, epsilon=1.0),
    "private": lambda: treedp.release_cdf(
        PATH, column="x", bounds="private", bins=64, epsilon=1.0),
}
for name, call in calls.items():
    try:
        call()
    except treedp.MissingDependencyError as exc:
        assert "treedp[parquet]" in str(exc), name
    else:
        raise AssertionError(name)
code = main(["median", PATH, "--column", "x", "--bounds", "0", "1", "--epsilon", "1"])
assert code == 2, code
print("ok")
"""


def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path) -> None:
    """On a core install a Parquet path is refused naming ``treedp[parquet]`` by every front
    door, not with a raw ``ModuleNotFoundError`` (an adopter's run: quantiles, median, profile
    and private bounds read the file's schema first)."""
    import subprocess
    import sys

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [0.1, 0.5, 0.9]}), path)
    code = _NO_PYARROW.replace("PATH", repr(str(path)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
    assert "needs pyarrow: install treedp[parquet]" in done.stderr
