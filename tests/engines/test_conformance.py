"""One answer on every engine: numpy (in memory), Spark and Dask count the same inputs into
identical count vectors, bin for bin, and reject bad input with the same error class.

The inputs are the hard cases of the bin rule (:mod:`treedp.engines.base`): values exactly on
edges and one ulp either side, below ``lo`` and above ``hi``, ±0.0, subnormals, ±inf, NaN
under each ``nan=`` policy, integers beyond 2**53, datetimes of several units and time zones
(and beyond the int64 range of the bins' unit), explicit edges and integer bins.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import numpy as np
import pytest

from treedp import make_bins
from treedp._inputs import as_1d_array
from treedp.domain import Bins
from treedp.engines import BinCounts, count_chunk
from treedp.engines.spark import quiet_pyspark
from treedp.exceptions import DataError, InvalidParameterError, InvalidTypeError

pd = pytest.importorskip("pandas")

EQUAL = make_bins(bounds=(-1.0, 1.0), bins=7)  # edges that are not exact binary fractions
EXPLICIT = make_bins(edges=[-1e300, -1.0, -0.0, 1e-310, 0.1, 3.0, 1e300])
INTEGERS = make_bins(bounds=(-3, 4), bins="integers")
EXACT = make_bins(bounds=(0.5, 1000.5), bins=1000)  # _arithmetic_is_exact holds


def _hard_floats(bins: Bins) -> np.ndarray:
    edges = bins.edges
    near = np.concatenate([edges, np.nextafter(edges, -np.inf), np.nextafter(edges, np.inf)])
    special = [
        0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-310, -1e-310,
        np.inf, -np.inf, -1e308, 1e308, -7.5, 42.0, 0.3, 1 / 3,
    ]  # fmt: skip
    return np.concatenate([near, np.array(special)])


BIG_INTS = np.array(
    [2**53, 2**53 + 1, 2**53 - 1, -(2**53) - 1, 2**62 + 3, -(2**63), 2**63 - 1, 0, 1, -1, 3, 4, 5],
    dtype=np.int64,
)
BIG_INT_BINS = make_bins(edges=[-1e19, -(2.0**53), 0.0, 2.0**53, 2.0**53 + 2, 2.0**62, 1e19])

FLOAT_CASES = {
    "equal-width": (_hard_floats(EQUAL), EQUAL),
    # the arithmetic alone is proven exact for these edges: engines may skip the correction
    "exact-arithmetic": (_hard_floats(EXACT), EXACT),
    "explicit-edges": (_hard_floats(EXPLICIT), EXPLICIT),
    "integer-bins": (np.concatenate([_hard_floats(INTEGERS), np.arange(-5.0, 7.0)]), INTEGERS),
}

NAN_VALUES = np.array([0.5, np.nan, -0.25, np.nan, 3.0, -np.inf])

# Instants in several zones, at microsecond resolution (Spark's), around the bins' edges.
_ZONES = [
    dt.UTC,
    dt.timezone(dt.timedelta(hours=5, minutes=30)),
    dt.timezone(-dt.timedelta(hours=8)),
]
INSTANTS = [
    dt.datetime(2020, 1, 1, 0, 0, 0, 0, tzinfo=z).astimezone(_ZONES[i % 3])
    + dt.timedelta(microseconds=k)
    for i, k in enumerate([-1, 0, 1, 999_999, 86_400_000_000, -86_400_000_001, 7])
    for z in _ZONES[:1]
] + [
    dt.datetime(2019, 12, 31, 23, 59, 59, 999_999, tzinfo=_ZONES[1]),
    dt.datetime(2020, 1, 2, 5, 30, tzinfo=_ZONES[1]),
    dt.datetime(1900, 1, 1, tzinfo=_ZONES[2]),
    dt.datetime(2500, 6, 1, tzinfo=dt.UTC),  # beyond datetime64[ns]: saturates
]
DATETIME_BINS = {
    "D": make_bins(
        edges=np.array(["2019-12-30", "2020-01-01", "2020-01-02", "2020-01-05"], "datetime64[D]")
    ),
    "s": make_bins(bounds=(np.datetime64("2019-12-31T12:00"), np.datetime64("2020-01-02")), bins=5),
    "ns": make_bins(
        edges=np.array(
            ["2019-12-31T23:59:59.999999", "2020-01-01", "2020-01-01T00:00:00.000001"],
            "datetime64[ns]",
        )
    ),
}


def _utc_naive(instants: list[dt.datetime]) -> np.ndarray:
    """The instants as numpy datetime64[us] in UTC (what the in-memory path counts)."""
    series = pd.Series(pd.to_datetime(instants, utc=True)).astype("datetime64[us, UTC]")
    return as_1d_array(series)


def local(values: np.ndarray, bins: Bins, nan: str = "error") -> BinCounts:
    return count_chunk(values, bins, nan, kernel="numpy")  # type: ignore[arg-type]


# ---- the compiled kernel (treedp[fast]) ---------------------------------------------------


def _needs_numba() -> None:
    # CI installs numba (the test extra includes treedp[fast]); only a venv without it skips
    pytest.importorskip("numba", reason="numba is not installed (treedp[fast])")


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_compiled_kernel_floats(case: str) -> None:
    _needs_numba()
    values, bins = FLOAT_CASES[case]
    for kernel in ("numba", "auto"):
        assert count_chunk(values, bins, kernel=kernel) == local(values, bins)  # type: ignore[arg-type]


def test_compiled_kernel_nan_policies() -> None:
    _needs_numba()
    expected = local(NAN_VALUES, EQUAL, "drop")
    assert count_chunk(NAN_VALUES, EQUAL, "drop", kernel="numba") == expected
    with pytest.raises(DataError) as info:
        count_chunk(NAN_VALUES, EQUAL, "error", kernel="numba")
    assert not any(ch.isdigit() for ch in str(info.value))


def test_compiled_kernel_other_inputs_are_counted_by_numpy() -> None:
    """Integers beyond 2**53 and datetimes are not float64: 'numba' counts them with numpy."""
    _needs_numba()
    assert count_chunk(BIG_INTS, BIG_INT_BINS, kernel="numba") == local(BIG_INTS, BIG_INT_BINS)
    values = _utc_naive(INSTANTS)
    for unit, bins in DATETIME_BINS.items():
        assert count_chunk(values, bins, kernel="numba") == local(values, bins), unit


# ---- Spark -------------------------------------------------------------------------------


def spark_frame(spark: Any, values: Any, kind: str) -> Any:
    from pyspark.sql import types as T

    spark_type = {"double": T.DoubleType(), "long": T.LongType(), "ts": T.TimestampType()}[kind]
    schema = T.StructType([T.StructField("v", spark_type), T.StructField("other", T.StringType())])
    rows = [(_py(v), "x") for v in values]
    with quiet_pyspark():
        return spark.createDataFrame(rows, schema)


def _py(v: Any) -> Any:
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.integer):
        return int(v)
    return v


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_spark_floats(spark: Any, case: str) -> None:
    from treedp.engines.spark import count_spark

    values, bins = FLOAT_CASES[case]
    assert count_spark(spark_frame(spark, values, "double"), "v", bins) == local(values, bins)


def test_spark_big_integers(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    got = count_spark(spark_frame(spark, BIG_INTS, "long"), "v", BIG_INT_BINS)
    assert got == local(BIG_INTS, BIG_INT_BINS)
    got = count_spark(spark_frame(spark, BIG_INTS[-6:], "long"), "v", INTEGERS)
    assert got == local(BIG_INTS[-6:], INTEGERS)


def test_spark_nan_policies(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    frame = spark_frame(spark, [*NAN_VALUES.tolist(), None], "double")
    expected = local(np.append(NAN_VALUES, np.nan), EQUAL, "drop")
    assert count_spark(frame, "v", EQUAL, "drop") == expected
    assert expected.dropped == 3
    with pytest.raises(DataError) as info:
        count_spark(frame, "v", EQUAL, "error")
    assert not any(ch.isdigit() for ch in str(info.value))


def test_spark_datetimes(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    frame = spark_frame(spark, INSTANTS, "ts").cache()
    values = _utc_naive(INSTANTS)
    for unit, bins in DATETIME_BINS.items():
        assert count_spark(frame, "v", bins) == local(values, bins), unit
    frame.unpersist()


def test_spark_bad_input_same_error_class(spark: Any) -> None:
    from treedp.engines.spark import count_spark

    frame = spark_frame(spark, [0.5, 1.5], "double")
    with pytest.raises(InvalidParameterError):
        count_spark(frame, "missing", EQUAL)
    with pytest.raises(InvalidTypeError):
        count_spark(frame, "other", EQUAL)  # strings
    with pytest.raises(InvalidTypeError):
        count_spark(frame, "v", DATETIME_BINS["D"])  # numbers for datetime bins
    with pytest.raises(InvalidTypeError):
        local(np.array(["a"]), EQUAL)  # the in-memory counterpart of the string column


# ---- Dask --------------------------------------------------------------------------------


def dask_forms(values: Any) -> list[Any]:
    import dask.array as da
    import dask.dataframe as dd

    frame = dd.from_pandas(pd.DataFrame({"v": values, "other": "x"}), npartitions=3)
    forms = [frame, frame["v"]]
    if isinstance(values, np.ndarray):
        forms.append(da.from_array(values, chunks=max(1, values.size // 4)))
    return forms


def _dask_count(obj: Any, bins: Bins, nan: str = "error") -> BinCounts:
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    column = "v" if isinstance(obj, dd.DataFrame) else None
    return count_dask(obj, column, bins, nan)  # type: ignore[arg-type]


@pytest.mark.parametrize("case", sorted(FLOAT_CASES))
def test_dask_floats(dask_client: Any, case: str) -> None:
    values, bins = FLOAT_CASES[case]
    for obj in dask_forms(values):
        assert _dask_count(obj, bins) == local(values, bins)


def test_dask_big_integers(dask_client: Any) -> None:
    for obj in dask_forms(BIG_INTS):
        assert _dask_count(obj, BIG_INT_BINS) == local(BIG_INTS, BIG_INT_BINS)


def test_dask_nan_policies(dask_client: Any) -> None:
    expected = local(NAN_VALUES, EQUAL, "drop")
    for obj in dask_forms(NAN_VALUES):
        assert _dask_count(obj, EQUAL, "drop") == expected
        with pytest.raises(DataError) as info:
            _dask_count(obj, EQUAL, "error")
        assert not any(ch.isdigit() for ch in str(info.value))


def test_dask_datetimes(dask_client: Any) -> None:
    values = _utc_naive(INSTANTS)
    aware = pd.Series(pd.to_datetime(INSTANTS, utc=True)).astype("datetime64[us, UTC]")
    for unit, bins in DATETIME_BINS.items():
        for obj in dask_forms(values):
            assert _dask_count(obj, bins) == local(values, bins), unit
        zoned = aware.dt.tz_convert("Asia/Kolkata")  # the same instants in another zone
        for obj in dask_forms(zoned)[:2]:
            assert _dask_count(obj, bins) == local(values, bins), unit


def test_dask_bad_input_same_error_class(dask_client: Any) -> None:
    import dask.dataframe as dd

    from treedp.engines.dask import count_dask

    frame = dd.from_pandas(pd.DataFrame({"v": [0.5, 1.5], "other": ["a", "b"]}), npartitions=1)
    with pytest.raises(InvalidParameterError):
        count_dask(frame, "missing", EQUAL)
    with pytest.raises(InvalidTypeError):
        count_dask(frame, "other", EQUAL)
    with pytest.raises(InvalidTypeError):
        count_dask(frame, "v", DATETIME_BINS["D"])
    with pytest.raises(InvalidTypeError):
        count_dask([0.5], None, EQUAL)
