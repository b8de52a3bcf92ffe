"""One far date never fails a Spark query where its neighbour without it succeeds: dates are
counted, grouped, selected and collected without a cast that can overflow and without Python's
year limit (an independent review of the engines, session 27)."""

from __future__ import annotations

import datetime
from typing import Any

import numpy as np
import pytest

import treedp

#: days since 1970: two ordinary dates and one 547,000 years ahead (past the microseconds of a
#: timestamp, and past Python's year 9999)
DAYS = [18300, 18300, 18400, 200_000_000]


def _frame(spark: Any, days: list[int], repeat: int = 1) -> Any:
    rows = ", ".join(f"({i % 7}, {d}, {i})" for i, d in enumerate(days * repeat))
    return spark.sql(
        "SELECT CAST(v AS DOUBLE) AS v, date_from_unix_date(d) AS d, p "
        f"FROM VALUES {rows} AS t(v, d, p)"
    )


def _spent(call: Any) -> Any:
    acc = treedp.Accountant(treedp.ApproxDP(10.0, 1e-3))
    out = call(acc)
    return out, acc.spent


def test_far_dates_are_counted_grouped_and_collected(spark: Any) -> None:
    near, far = _frame(spark, DAYS[:3]), _frame(spark, DAYS)
    bounds = ("2020-01-01", "2021-01-01")
    for data in (near, far):
        _, spent = _spent(
            lambda acc, d=data: treedp.release_cdf(
                d, column="d", bounds=bounds, bins=4, epsilon=1.0, accountant=acc
            )
        )
        assert spent.epsilon == 1.0
        _, spent = _spent(
            lambda acc, d=data: treedp.release_grouped(
                d, column="v", by="d", keys=["2020-02-08", "2020-02-08T06:30"], bounds=(0, 7),
                bins=2, epsilon=1.0, accountant=acc,
            )
        )  # fmt: skip
        assert spent.epsilon == 1.0
        _, spent = _spent(
            lambda acc, d=data: treedp.quantiles(
                d, [0.5], column="d", bounds=bounds, method="exponential", epsilon=1.0,
                accountant=acc,
            )
        )  # fmt: skip
        assert spent.epsilon == 1.0
    exact = treedp.release_grouped(
        far, column="v", by="d", keys=["2020-02-08", "2020-02-08T06:30"], bounds=(0, 7), bins=2,
        epsilon=50.0, postprocess="none", rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    assert [round(float(exact[k].n)) for k in exact.keys] == [2, 0]  # 18300 is 2020-02-08


def test_selected_far_date_keys_are_read_back(spark: Any) -> None:
    """Private key selection returns every kept key, a far one as a ``numpy.datetime64``
    (no Python ``date`` holds it), an ordinary one as a ``datetime.date``."""
    rel = treedp.release_grouped(
        _frame(spark, DAYS, repeat=300), column="v", by="d", bounds=(0, 7), bins=2,
        epsilon=5.0, delta=1e-6, rng=treedp.InsecureSeededSource(1),
    )  # fmt: skip
    keys = set(rel.keys)
    assert datetime.date(2020, 2, 8) in keys
    assert np.datetime64(200_000_000, "D") in keys


def test_collected_dates_are_their_ticks(spark: Any) -> None:
    from treedp.engines.spark import collect_column

    got = collect_column(_frame(spark, DAYS), "d")
    want = np.array(DAYS, dtype="int64").astype("datetime64[D]").astype("datetime64[us]")
    want[-1] = np.datetime64((2**63 - 1) // 86_400_000_000 * 86_400_000_000, "us")  # saturated
    assert got.dtype == np.dtype("datetime64[us]")
    assert got.tolist() == want.tolist()


pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _grouped_counts(frame: Any, by: str, keys: list[Any], column: str = "v") -> list[int]:
    rel = treedp.release_grouped(
        frame, column=column, by=by, keys=keys, bounds=(0, 10), bins=2, epsilon=50.0,
        postprocess="none", rng=treedp.InsecureSeededSource(0),
    )  # fmt: skip
    return [round(float(rel[k].n)) for k in rel.keys]


def test_keys_past_year_9999_and_numbers_of_other_types(spark: Any) -> None:
    """Spark writes ``+10000-01-01``: such a key matches its records (it matched none); an int
    key on a ``double`` or ``decimal`` column matches its value (compared as text before)."""
    far = np.datetime64("10000-01-01", "D").astype(np.int64)
    frame = spark.sql(
        f"SELECT CAST(1.0 AS DOUBLE) AS v, date_from_unix_date({far}) AS d, "
        "CAST(1.0 AS DOUBLE) AS f, CAST(1.0 AS DECIMAL(5, 2)) AS m FROM range(3)"
    )
    assert _grouped_counts(frame, "d", [np.datetime64("10000-01-01")]) == [3]
    assert _grouped_counts(frame.withColumn("t", frame["d"].cast("timestamp")), "t",
                           [np.datetime64("10000-01-01T00:00")]) == [3]  # fmt: skip
    assert _grouped_counts(frame, "f", [1, 2]) == [3, 0]
    assert _grouped_counts(frame, "m", [1, 1.5, 10**9]) == [3, 0, 0]


def test_ntz_at_the_ends_and_dates_on_wide_bins(spark: Any) -> None:
    """A ``timestamp_ntz`` a day from the int64 microseconds' end is read exactly (its day's
    product overflowed under ANSI), and dates on bins wider than ±292,277 years are counted
    from their days, as in memory (they were clamped to the microseconds' range)."""
    low = -(2**63) + 1
    ntz = spark.sql(
        f"SELECT CAST(timestamp_micros({low}) AS TIMESTAMP_NTZ) AS t UNION ALL "
        "SELECT CAST(timestamp_micros(0) AS TIMESTAMP_NTZ) AS t"
    )
    bins = treedp.make_bins(bounds=("1969-01-01", "1971-01-01"), bins=2)
    from treedp.engines.dispatch import count_source
    from treedp.engines.spark import collect_column

    assert count_source(ntz, column="t", bins=bins).counts.tolist() == [1, 1]
    assert collect_column(ntz, "t").astype(np.int64).tolist() == [low, 0]
    days = [18300, 150_000_000, 200_000_000, -150_000_000]
    dates = spark.sql(
        "SELECT date_from_unix_date(d) AS d FROM VALUES "
        + ", ".join(f"({d})" for d in days) + " AS t(d)"
    )  # fmt: skip
    wide = treedp.make_bins(
        edges=np.array(["-600000-01-01", "1000-01-01", "3000-01-01", "450000-01-01",
                        "600000-01-01"], dtype="datetime64[s]"),
    )  # fmt: skip
    memory = np.array(days, dtype="int64").astype("datetime64[D]")
    want = count_source(memory, column=None, bins=wide).counts.tolist()
    assert count_source(dates, column="d", bins=wide).counts.tolist() == want == [1, 1, 1, 1]


def test_ntz_keys_in_any_session_zone_and_exact_number_keys(spark: Any) -> None:
    """A ``timestamp_ntz`` column keyed by its own text: a far value in a zone west of UTC
    (its cast to timestamp overflowed) and 02:30 in a daylight-saving gap (read as 03:30) are
    matched as in memory; a float key a float32 column cannot hold matches nothing (Spark
    rounded it), and a decimal key past 28 digits at the column's scale is exact."""
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        frame = spark.sql(
            "SELECT CAST(1.0 AS DOUBLE) AS v, CAST(t AS TIMESTAMP_NTZ) AS t FROM VALUES "
            "('2021-03-14 02:30:00'), ('2021-03-14 03:30:00'), ('+294247-01-10 04:00:54') "
            "AS s(t)"
        )
        assert _grouped_counts(frame, "t", ["2021-03-14T02:30", "2021-03-14T03:30"]) == [1, 1]
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    numbers = spark.sql(
        "SELECT CAST(1.0 AS DOUBLE) AS v, CAST(0.1 AS FLOAT) AS f, "
        "CAST(10000000000 AS DECIMAL(38, 18)) AS m"
    )
    assert _grouped_counts(numbers, "f", [0.1, 0.5]) == [0, 0]
    assert _grouped_counts(numbers, "m", [10**10]) == [1]
