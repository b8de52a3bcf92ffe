"""The Spark window bounding's priority prefilter (``engines/spark/prefilter.py``).

* The threshold's tail bound, with exact binomial tails (scipy): a busy person keeps fewer
  than ``m`` rows with probability at most ``10^-12``, for every row count; a threshold
  without the ``L`` terms fails the same check.
* On a real ``local[2]`` session: never more than ``m`` rows per person, every row of a person
  with at most ``m``, exactly ``m`` of a busy one; flagged records (``nan="error"``) of busy
  persons are never dropped (the release refuses them).
* The threshold column's value, from a small Spark select, is the formula's ``T(c)`` as 15
  lower-case hex digits (null for ``c <= mu(m)``) for several ``(m, c)``, large ones too; the
  column without ``lower`` fails the same check.
* The kept rows depend on the secret: two seeds keep different rows; a priority of the row id
  alone (the secret left out) fails the same check.
* The kept sample is uniform (chi-square over the rows' positions at ``ALPHA``); priorities in
  row order (keeping the first rows) fail the same check.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from scipy import stats

from tests.stats import ALPHA, TEST_SEED
from treedp import InsecureSeededSource, make_bins
from treedp.api_grouped import grouped_counts
from treedp.engines.grouped import GroupedJob
from treedp.engines.spark.count import quiet_pyspark
from treedp.engines.spark.prefilter import (
    FAILURE,
    PRIORITY_BITS,
    survivors_mean,
    threshold_hex,
)
from treedp.exceptions import DataError
from treedp.privacy.contribution import ContributionBounds


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    """pyspark 3.5's ``collect`` leaves its py4j socket to the garbage collector (a
    ``ResourceWarning``, which the suite makes an error): collected quietly, as the engine
    does around its own collects."""
    with quiet_pyspark():
        yield


MS = (1, 2, 5, 10, 50, 137, 1000, 10**4, 10**5)
EXCESS = (0, 1, 2, 5, 20, 100, 10**3, 10**4, 10**6, 10**9)


def _worst_tail(mu_of: Any) -> float:
    """The largest ``P(Binomial(c, p) < m)`` over ``MS`` and row counts just above ``mu(m)``
    to far beyond it, ``p`` the survival probability of the threshold (its double-precision
    ceiling rounds up; ``1 - 2^-50`` covers the quotient's rounding)."""
    worst = 0.0
    for m in MS:
        mu = mu_of(m)
        for extra in EXCESS:
            c = math.floor(mu) + 1 + extra
            p = math.ceil(2.0**PRIORITY_BITS * mu / c) / 2.0**PRIORITY_BITS * (1 - 2.0**-50)
            worst = max(worst, float(np.exp(stats.binom.logcdf(m - 1, c, p))))
    return worst


def test_the_threshold_leaves_fewer_than_m_rows_with_probability_below_the_bound() -> None:
    assert _worst_tail(survivors_mean) <= FAILURE
    # about m + 7.43·sqrt(m) + 55 survivors expected, as the module docstring states
    for m in MS:
        assert m < survivors_mean(m) <= m + 7.44 * math.sqrt(m) + 55.3
    # a threshold without the L terms (mean m + 3·sqrt(m)) fails the same check
    assert _worst_tail(lambda m: m + 3 * math.sqrt(m)) > 1e-6


# ---------------------------------------------------------------------- on Spark
THRESHOLD_MS = (1, 2, 50, 10**4, 10**9, 10**15)


def _expected_threshold(c: int, m: int) -> str | None:
    """``T(c) = ceil(2^60·mu/c)`` in double precision (as Spark divides), at most ``2^60 - 1``,
    as 15 lower-case hex digits; None (every row passes) for ``c <= mu(m)``."""
    mu = survivors_mean(m)
    if not float(c) > mu:
        return None
    top = 2**PRIORITY_BITS
    return format(min(math.ceil(min(mu * float(top) / float(c), float(top))), top - 1), "015x")


def test_the_threshold_column_is_the_formula_in_lower_case_hex(spark: Any) -> None:
    from pyspark.sql import functions as F

    counts = sorted(
        {m + k for m in THRESHOLD_MS for k in (0, 1)}
        | {math.floor(survivors_mean(m)) + k for m in THRESHOLD_MS for k in (0, 1, 2)}
        | {3 * m + 1000 for m in THRESHOLD_MS}
        | {10**6, 10**12, 10**18, 2**62}
    )
    frame = spark.createDataFrame([(c,) for c in counts], "c long")
    columns = [threshold_hex(F.col("c"), m).alias(f"t{i}") for i, m in enumerate(THRESHOLD_MS)]
    rows = frame.select("c", *columns).collect()
    got = {(int(r["c"]), m): r[f"t{i}"] for r in rows for i, m in enumerate(THRESHOLD_MS)}
    expected = {(c, m): _expected_threshold(c, m) for c in counts for m in THRESHOLD_MS}
    assert got == expected
    digits = [t for t in expected.values() if t is not None]
    assert len(digits) > 50 and all(len(t) == 15 == len(t.lower()) for t in digits)
    # the check can see the case: most thresholds hold a letter
    assert sum(any(ch in "abcdef" for ch in t) for t in digits) > len(digits) // 2


def test_the_kept_rows_depend_on_the_secret(spark: Any) -> None:
    """5 persons of 200 rows (each row its own value) keep 2 rows each; two seeds keep the same
    10 of the 1,000 rows with negligible probability, unless the secret is left out."""
    from treedp.engines.spark import bound_spark

    frame = spark.range(0, 1000, 1, 2).selectExpr(
        "CAST(id AS DOUBLE) AS v", "'a' AS g", "id DIV 200 AS p"
    )

    def kept(seed: int) -> list[float]:
        rows = bound_spark(frame, _job(2, 1000), InsecureSeededSource(seed)).collect()
        return sorted(float(r["__treedp_v"]) for r in rows)

    first, second = kept(TEST_SEED), kept(TEST_SEED + 1)
    assert len(first) == len(second) == 10
    assert first != second


def _job(m: int, n_bins: int, nan: str = "error") -> GroupedJob:
    bounds = ContributionBounds.from_parameters("p", m)
    bins = make_bins(bounds=(0, n_bins - 1), bins="integers")
    return GroupedJob("v", ("g",), ("a",), "p", bounds, bins, nan)  # type: ignore[arg-type]


def _persons(spark: Any, sizes: list[int], hole: bool) -> Any:
    """Person ``i`` has ``sizes[i]`` rows of value ``i`` (generated in Spark, 3 partitions);
    with ``hole``, the 8th row of each person with more than 50 rows has a missing value."""
    listed = ", ".join(str(n) for n in sizes)
    frame = spark.range(0, len(sizes), 1, 3).selectExpr(
        "id AS p", f"element_at(array({listed}), CAST(id AS INT) + 1) AS n"
    )
    frame = frame.selectExpr("p", "n", "explode(sequence(0, n - 1)) AS k")
    missing = "n > 50 AND k = 7" if hole else "false"
    return frame.selectExpr(f"IF({missing}, NULL, CAST(p AS DOUBLE)) AS v", "'a' AS g", "p")


@pytest.mark.slow
def test_bounds_and_flagged_records_with_the_prefilter(spark: Any) -> None:
    """Persons with 1, 2, 3, 80 and 400 rows (``mu(2)`` is 59.2: the last two are filtered),
    the value the person's number: the counts are the kept rows per person."""
    from pyspark.sql import functions as F

    from treedp.engines.spark import bound_spark

    sizes = [1, 2, 3, 80, 400] * 4
    job = _job(2, len(sizes))
    got = grouped_counts(_persons(spark, sizes, False), job, InsecureSeededSource(TEST_SEED))
    assert got.counts[0].tolist() == [min(size, 2) for size in sizes]
    # one missing value in each busy person (80 and 400 rows): it would pass the threshold
    # with probability 0.74 or 0.15 only, were flagged records not exempt
    holes = _persons(spark, sizes, True)
    kept = bound_spark(holes, job, InsecureSeededSource(TEST_SEED))
    per_person = kept.groupBy("__treedp_unit").agg(
        F.count(F.lit(1)).alias("kept"), F.sum((F.col("__treedp_bad") != 0).cast("int"))
    )
    flagged = {int(r[0]): (int(r[1]), int(r[2])) for r in per_person.collect()}
    assert flagged == {i: (min(n, 2), int(n > 50)) for i, n in enumerate(sizes)}
    with pytest.raises(DataError):
        grouped_counts(holes, job, InsecureSeededSource(TEST_SEED))


PERSONS, ROWS, KEEP = 1500, 200, 2


def _position_pvalue(spark: Any) -> float:
    """Each of ``PERSONS`` persons has ``ROWS`` rows, the value its position ``0..ROWS-1`` (in
    row-id order), and keeps ``KEEP``: under a uniform sample each position is kept
    ``PERSONS·KEEP/ROWS`` = 15 times in expectation. The chi-square p-value over positions
    (sampling without replacement within a person makes the counts slightly less variable
    than multinomial: the test is conservative)."""
    frame = spark.range(0, PERSONS * ROWS, 1, 4).selectExpr(
        f"id % {ROWS} AS v", "'a' AS g", f"id DIV {ROWS} AS p"
    )
    got = grouped_counts(frame, _job(KEEP, ROWS), InsecureSeededSource(TEST_SEED)).counts[0]
    assert int(got.sum()) == PERSONS * KEEP
    return float(stats.chisquare(got).pvalue)


@pytest.mark.slow
def test_the_kept_rows_are_a_uniform_sample(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _position_pvalue(spark) > ALPHA
    # mutant: priorities in row order (the first rows of each person kept) is caught
    from pyspark.sql import functions as F

    from treedp.engines.spark import grouped

    def in_row_order(secret: str) -> Any:
        return F.lpad(F.hex(F.col(grouped._ROW)), PRIORITY_BITS // 4, "0")

    monkeypatch.setattr(grouped, "_row_priority", in_row_order)
    assert _position_pvalue(spark) < ALPHA
