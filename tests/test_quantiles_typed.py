"""treedp.quantiles and treedp.median on integer-typed columns: integer mode when ``bins`` is
not given (the column's declared type, never its values), on every input kind."""

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
from tests.stats import TEST_SEED
from treedp import InsecureSeededSource
from treedp.exceptions import InvalidTypeError

N = 5000
LEVELS = [0.25, 0.5, 0.75]


def likert() -> np.ndarray:
    """/tmp/newuser/repro_2.py: 60% of the values are 3 (ranks about 0.2 n to 0.8 n)."""
    rng = np.random.default_rng(TEST_SEED)
    return rng.choice([1, 2, 3, 4, 5], size=N, p=[0.1, 0.1, 0.6, 0.1, 0.1])


def test_repro_likert_median_and_quartiles_are_three() -> None:
    """False-failure rate: the block of 3s spans the ranks below; every quartile lies at
    least 200 records inside it (checked). In integer mode the exponential median selects
    another integer with probability below ``4 exp(-ε · 1000 / 2) < 1e-200`` per call
    (score sensitivity 1/2 under add_remove); the tree on 5 bins misplaces a quartile only
    if a prefix count is off by more than 200, below ``3 · 2 exp(-200 / 3) < 1e-27`` (at most
    3 nodes of discrete Laplace scale at most 3). 20 seeds: below 1e-25 in all."""
    x = likert()
    below, upto = np.sum(x < 3), np.sum(x <= 3)
    assert min(q * N - below for q in LEVELS) >= 200 and min(upto - q * N for q in LEVELS) >= 200
    for seed in range(20):
        rng = InsecureSeededSource(TEST_SEED + seed)
        assert treedp.median(x, epsilon=1.0, bounds=(1, 5), rng=rng) == 3
        res = treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=(1, 5), rng=rng)
        assert list(res.values) == [3, 3, 3] and res.integer_mode == "column type"
    res = treedp.median(x, epsilon=1.0, bounds=(1, 5), details=True)
    assert res.integer_mode == "column type" and res.parameters["bins"] == "integers"
    assert res.parameters["integer_mode"] == "column type"
    assert "integer_mode='column type'" in repr(res)
    declared = treedp.median(x, epsilon=1.0, bounds=(1, 5), bins="integers", details=True)
    assert declared.integer_mode == "declared" and "integer_mode" not in repr(declared)


def test_a_float_column_of_whole_numbers_stays_continuous() -> None:
    x = likert().astype(np.float64)
    res = treedp.median(x, epsilon=1.0, bounds=(1, 5), details=True, rng=InsecureSeededSource(3))
    assert res.integer_mode is None and res.parameters["bins"] is None
    assert "integer_mode" not in res.parameters
    # the same answer as a list of the same numbers (no declared type), on the same seed
    same = treedp.median(list(x), epsilon=1.0, bounds=(1, 5), rng=InsecureSeededSource(3))
    assert res.value == same
    assert treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=(1, 5)).integer_mode is None


def _inputs(tmp_path: Path) -> dict[str, tuple[Any, dict[str, Any], str | None]]:
    """``(values, extra keywords, integer mode)`` per input kind."""
    x = likert()
    with_na = pd.array([*list(x), None], dtype="Int64")
    parquet = tmp_path / "l.parquet"
    pq.write_table(pa.table({"v": x, "f": x.astype(float)}), parquet)
    csv = tmp_path / "l.csv"
    csv.write_text("v\n" + "\n".join(map(str, x)) + "\n")
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (v INTEGER)")
    lite.executemany("INSERT INTO t VALUES (?)", [(int(v),) for v in x])
    out: dict[str, tuple[Any, dict[str, Any], str | None]] = {
        "numpy int32": (x.astype(np.int32), {}, "column type"),
        "numpy uint8": (x.astype(np.uint8), {}, "column type"),
        "pandas Int64 with NA": (pd.Series(with_na), {"nan": "drop"}, "column type"),
        "pandas IntegerArray": (with_na, {"nan": "drop"}, "column type"),  # crashed: hasnans
        "pandas Index": (pd.Index(x), {}, "column type"),
        "pandas frame": (pd.DataFrame({"v": x}), {"column": "v"}, "column type"),
        "polars": (pl.Series(x), {}, "column type"),
        "polars frame": (pl.DataFrame({"v": x}), {"column": "v"}, "column type"),
        "arrow": (pa.chunked_array([x[:100], x[100:]]), {}, "column type"),
        "parquet": (str(parquet), {"column": "v"}, "column type"),
        "parquet float column": (str(parquet), {"column": "f"}, None),
        "csv (no schema)": (str(csv), {"column": "v"}, None),
        "list (no type)": (list(x), {}, None),
        "sqlite (types values)": (lite, {"sql": "SELECT v FROM t"}, None),
    }
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM parquet_scan(?)", [str(parquet)])
    out["duckdb query"] = (con, {"sql": "SELECT v FROM t"}, "column type")
    out["duckdb relation"] = (con.sql("SELECT v FROM t"), {"column": "v"}, "column type")
    return out


def test_every_input_kind(tmp_path: Path) -> None:
    for name, (values, extra, mode) in _inputs(tmp_path).items():
        sql = extra.pop("sql", None)
        res = treedp.quantiles(
            values, 0.5, sql, epsilon=1.0, bounds=(1, 5), rng=InsecureSeededSource(1), **extra
        )
        assert res.integer_mode == mode, name
        if mode is not None:  # see the repro test for the rate: 3 in integer mode
            assert res.value == 3, name
        med = treedp.median(
            values, sql, epsilon=1.0, bounds=(1, 5), rng=InsecureSeededSource(1), **extra
        )
        assert (med == 3) if mode is not None else (med == res.value), name


def test_bounds_that_are_not_integers_and_wide_ranges() -> None:
    x = likert()
    res = treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=(0.5, 5.5), rng=InsecureSeededSource(2))
    assert res.integer_mode == "column type" and res.bounds == (1, 5)
    assert list(res.values) == [3, 3, 3]
    # no integer inside the bounds: continuous, as for a float column
    assert treedp.median(x, epsilon=1.0, bounds=(2.2, 2.8), details=True).integer_mode is None
    # more integers than the tree can hold as bins (2**26): continuous, as before
    wide = treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=(0, 2**27))
    assert wide.integer_mode is None
    # the wide-integer rule (quantiles_choice): more than 4096 integers, few levels -> recursion
    spread = np.random.default_rng(TEST_SEED).integers(0, 10**6, N)
    res = treedp.quantiles(spread, LEVELS, epsilon=1.0, bounds=(0, 10**6))
    assert (res.method, res.integer_mode) == ("recursive", "column type")
    assert all(float(v).is_integer() for v in res.values)


def test_private_bounds_public_n_and_datetimes() -> None:
    x = likert()
    for bounds in ("private", (0.5, "private"), ("private", 5), treedp.PrivateBounds(lower=1)):
        res = treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=bounds, rng=InsecureSeededSource(4))
        assert res.integer_mode == "column type", bounds
        assert all(float(v).is_integer() for v in res.values), bounds
    one = treedp.quantiles(x, 0.5, epsilon=1.0, bounds="private", rng=InsecureSeededSource(4))
    assert one.integer_mode == "column type" and float(one.value).is_integer()
    res = treedp.quantiles(x, LEVELS, epsilon=1.0, bounds=(1, 5), n=N)
    assert (res.integer_mode, res.method, res.n_source) == ("column type", "tree", "public")
    # datetime bounds on an integer column: refused as before (no integer mode to blame)
    with pytest.raises(InvalidTypeError, match="datetimes but 'values' holds numbers"):
        treedp.quantiles(x, 0.5, epsilon=1.0, bounds=("2024-01-01", "2024-02-01"))
    days = np.datetime64("2024-01-01") + x.astype("timedelta64[D]")
    res = treedp.quantiles(
        days, 0.5, epsilon=1.0, bounds=(np.datetime64("2024-01-01"), np.datetime64("2024-01-31"))
    )
    assert res.integer_mode is None
    with pytest.raises(InvalidTypeError, match="booleans"):  # as before: not an integer type
        treedp.quantiles(x > 2, 0.5, epsilon=1.0, bounds=(0, 1))
