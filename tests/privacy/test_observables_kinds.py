"""A column's kind is public: what the refusals of an untyped column (a list, an object array or
Series) show must not tell neighbours apart beyond the documented "a value of another type"
class (strings among numbers and the like). An independent review (session 26) found each of
these told an empty or all-missing column, a missing marker or a list's numpy dtype apart, or
charged before refusing a public parameter; each test fails on the code before its fix."""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from treedp._codes import UNHASHABLE
from treedp.exceptions import InvalidTypeError

SEED = treedp.InsecureSeededSource(5)
DATES = (dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1))
X = dt.datetime(2020, 5, 1)


def _outcome(call: Callable[[], Any]) -> str:
    """The exception's type and text, or "ok" (warnings from released values ignored)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            call()
        except Exception as exc:  # what a user observes, whatever it is
            return f"{type(exc).__name__}: {exc}"
    return "ok"


def _front_doors(values: Any) -> dict[str, Callable[[], Any]]:
    common: dict[str, Any] = {"epsilon": 1.0, "bounds": DATES, "nan": "drop", "rng": SEED}
    return {
        "release_cdf": lambda: treedp.release_cdf(values, bins=16, **common),
        "quantiles": lambda: treedp.quantiles(values, [0.5], **common),
        "median": lambda: treedp.median(values, **common),
    }


@pytest.mark.parametrize(
    ("d", "d_prime"),
    [
        ([], [X]),
        ([None], [None, X]),
        ([float("nan")], [float("nan"), X]),
        (pd.Series([None], dtype=object), pd.Series([None, X], dtype=object)),
        (np.array([pd.NaT, None], dtype=object), np.array([pd.NaT, None, X], dtype=object)),
    ],
    ids=["empty list", "None", "NaN", "object Series", "NaT object array"],
)
def test_an_untyped_column_with_no_value_takes_the_bounds_kind(d: Any, d_prime: Any) -> None:
    """Datetime bounds: a column with nothing but missing values is missing datetimes, as its
    neighbour with one datetime is a datetime column (it was refused as "numbers")."""
    for name, call in _front_doors(d).items():
        assert _outcome(call) == "ok", name
    for name, call in _front_doors(d_prime).items():
        assert _outcome(call) == "ok", name


@pytest.mark.parametrize(
    ("d", "d_prime"),
    [
        ([X, X], [X, X, float("nan")]),
        ([X, X], [X, X, pd.NA]),
        ([X, X], [X, X, np.datetime64("NaT")]),
    ],
    ids=["NaN among datetimes", "pd.NA among datetimes", "numpy NaT"],
)
def test_any_missing_marker_is_missing_among_datetimes(d: list, d_prime: list) -> None:
    for name, call in _front_doors(d_prime).items():
        assert _outcome(call) == _outcome(_front_doors(d)[name]) == "ok", name


@pytest.mark.parametrize("marker", [pd.NaT, pd.NA, None, float("nan")])
def test_any_missing_marker_is_missing_among_numbers(marker: Any) -> None:
    d, d_prime = [1.0, 2.0], [1.0, 2.0, marker]
    for values in (d, d_prime, np.array(d_prime, dtype=object)):
        rel = treedp.release_cdf(values, bounds=(0, 4), bins=4, epsilon=1.0, nan="drop", rng=SEED)
        assert rel.bins.n_bins == 4


def test_a_numbers_list_for_datetime_bins_is_refused_without_its_dtype() -> None:
    """``[1, 2]`` is int64 and ``[1, 2, 2.5]`` float64 to numpy: the refusal said which."""
    texts = {_outcome(_front_doors(v)["release_cdf"]) for v in ([1, 2], [1, 2, 2.5], [1, 2, None])}
    assert len(texts) == 1 and "dtype" not in texts.pop()


def test_tree_quantiles_refuse_a_target_below_the_smallest_rho_before_the_charge() -> None:
    acc = treedp.Accountant(treedp.ApproxDP(10.0, 1e-4))
    with pytest.raises(treedp.InvalidParameterError, match="rho"):
        treedp.quantiles(np.arange(100.0), [0.5], bounds=(0, 100), bins=8, method="tree",
                         privacy=treedp.ApproxDP(1e-4, 1e-6), accountant=acc)  # fmt: skip
    assert acc.spent.epsilon == 0 and not acc.history


@pytest.mark.parametrize("bad", [{"x": 1}, [3], np.array([1, 2])], ids=["dict", "list", "array"])
def test_a_value_that_is_not_a_key_is_refused_with_a_fixed_message(bad: Any) -> None:
    table = pd.DataFrame(
        {
            "g": pd.Series(["a", "b", bad], dtype=object),
            "v": [1.0, 2.0, 3.0],
            "p": pd.Series([1, 2, bad], dtype=object),
        }
    )
    common: dict[str, Any] = {"bounds": (0, 10), "bins": 4, "epsilon": 1.0, "rng": SEED}
    person = {"privacy_unit": "p", "max_contributions": 1}
    for extra in ({"by": "g", "keys": ["a", "b"]}, {"by": "v", "keys": [1.0, 2.0], **person}):
        with pytest.raises(InvalidTypeError) as info:
            treedp.release_grouped(table, column="v", **extra, **common)
        assert str(info.value) == UNHASHABLE  # pandas' said "unhashable type: 'dict'"


def _kindless_inputs(tmp: Any) -> list[tuple[str, Any, Any]]:
    """Pairs (D with nothing present, D' = D and one datetime) through every reader."""
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    pq = pytest.importorskip("pyarrow.parquet")
    empty_csv, one_csv, blank_csv = tmp / "e.csv", tmp / "o.csv", tmp / "b.csv"
    empty_csv.write_text("t\n")
    one_csv.write_text("t\n2020-05-01T00:00:00\n")
    blank_csv.write_text("t\n\n")
    pq.write_table(pa.table({"t": pa.array([None])}), tmp / "n.parquet")
    pq.write_table(pa.table({"t": pa.array([X])}), tmp / "x.parquet")
    return [
        ("DataFrame object column", pd.DataFrame({"t": pd.Series([None], dtype=object)}),
         pd.DataFrame({"t": pd.Series([None, X], dtype=object)})),
        ("Arrow null array", pa.array([None]), pa.array([None, X])),
        ("polars Null column", pl.DataFrame({"t": [None]}), pl.DataFrame({"t": [None, X]})),
        ("header-only CSV", empty_csv, one_csv),
        ("CSV of empty cells", blank_csv, one_csv),
        ("Parquet null column", tmp / "n.parquet", tmp / "x.parquet"),
    ]  # fmt: skip


def test_every_reader_gives_a_column_with_nothing_present_the_bounds_kind(tmp_path: Any) -> None:
    """Readers whose column has no type of its own (an object column, an Arrow or polars null
    column, CSV text, no rows): under datetime bounds nothing present is missing datetimes,
    in every front door (the re-review of session 26's fix: it reached lists only)."""
    common: dict[str, Any] = {"epsilon": 1.0, "bounds": DATES, "nan": "drop", "rng": SEED}
    for label, d, d_prime in _kindless_inputs(tmp_path):
        column = None if label == "Arrow null array" else "t"
        for values in (d, d_prime):
            calls = {
                "release_cdf": lambda v=values, c=column: treedp.release_cdf(
                    v, column=c, bins=16, **common
                ),
                "quantiles": lambda v=values, c=column: treedp.quantiles(
                    v, [0.5], column=c, **common
                ),
            }
            for name, call in calls.items():
                assert _outcome(call) == "ok", (label, name)


def test_a_list_of_nat_alone_is_missing_numbers_under_numeric_bounds() -> None:
    """``[NaT]`` is datetime64 to numpy; nothing in it is present, so it takes the numeric
    bounds' kind, as ``[NaT, 5.0]`` (an object array whose NaT is missing) is released."""
    for values in ([np.datetime64("NaT")], (np.datetime64("NaT"),), [np.datetime64("NaT"), 5.0]):
        rel = treedp.release_cdf(values, bounds=(0, 10), bins=4, epsilon=1.0, nan="drop", rng=SEED)
        assert rel.bins.n_bins == 4


def test_a_stream_clamps_every_count_at_its_cap() -> None:
    """A values batch (its size, each bin's count) is clamped at ``count_limit`` as a count
    is: the running int64 total cannot wrap (the re-review: three 2^62-value batches of a
    ``tree_full`` stream wrapped to −9.2e18)."""
    from treedp.continual.stream import count_limit

    huge = np.broadcast_to(np.float64(1.0), (count_limit(4) + 5,))
    s = treedp.continual(horizon=4, epsilon=1.0, mechanism="tree_full", rng=SEED)
    assert s._counts(huge, None, "error")[0] == count_limit(4)
    binned = treedp.continual(horizon=4, epsilon=1.0, bins=2, bounds=(0, 2), rng=SEED)
    assert binned._counts(huge[: 2**20], None, "error").max() <= count_limit(4)


@pytest.mark.parametrize("nothing", [[], [None], [float("nan")]], ids=["empty", "None", "NaN"])
def test_nothing_present_is_never_naive_under_aware_bounds(nothing: list) -> None:
    """Aware bounds: a column with nothing present has no zone to disagree with (it was read
    as naive and refused, where ``[None, aware datetime]`` was released)."""
    import zoneinfo

    zone = zoneinfo.ZoneInfo("Europe/Paris")
    bounds = (dt.datetime(2020, 1, 1, tzinfo=zone), dt.datetime(2021, 1, 1, tzinfo=zone))
    common: dict[str, Any] = {"epsilon": 1.0, "bounds": bounds, "nan": "drop", "rng": SEED}
    for values in (nothing, [*nothing, X.replace(tzinfo=zone)]):
        assert _outcome(lambda v=values: treedp.release_cdf(v, bins=8, **common)) == "ok"
        assert _outcome(lambda v=values: treedp.quantiles(v, [0.5], **common)) == "ok"
        assert _outcome(lambda v=values: treedp.median(v, **common)) == "ok"


def test_a_typed_column_of_another_kind_is_refused_by_its_type_alone() -> None:
    """A string, boolean or category column is refused whatever its values: an empty or
    all-missing one was released (read as a kindless column) where one with a value was
    refused (a final re-check, session 26)."""
    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    columns = [
        lambda v: pd.Series(v, dtype="string"),
        lambda v: pd.Series(v, dtype="boolean"),
        lambda v: pa.array(v, type=pa.string()),
        lambda v: pl.Series(v, dtype=pl.String),
    ]
    for make in columns:
        for values in ([], [None]):
            with pytest.raises(InvalidTypeError, match="must hold numbers or datetimes; its type"):
                treedp.release_cdf(make(values), bounds=(0, 10), bins=4, epsilon=1.0,
                                   nan="drop", rng=SEED)  # fmt: skip


def test_null_columns_have_no_zone_and_an_empty_table_its_type(tmp_path: Any) -> None:
    """An Arrow or polars null column under aware bounds has no zone (it was read as naive);
    an Arrow Table with no chunk (a filter that kept no row) reads as its column's type (it was
    float, refused under datetime bounds where a kept row was released)."""
    import zoneinfo

    pa = pytest.importorskip("pyarrow")
    pl = pytest.importorskip("polars")
    utc = zoneinfo.ZoneInfo("UTC")
    aware = (dt.datetime(2020, 1, 1, tzinfo=utc), dt.datetime(2021, 1, 1, tzinfo=utc))
    common: dict[str, Any] = {"epsilon": 1.0, "nan": "drop", "rng": SEED}
    for column in (pa.array([None]), pl.Series([None])):
        assert _outcome(lambda c=column: treedp.release_cdf(c, bounds=aware, bins=8,
                                                            **common)) == "ok"  # fmt: skip
    table = pa.table({"t": pa.array([X, X], type=pa.timestamp("us"))})
    empty = table.filter(pa.compute.greater(table["t"], pa.scalar(X, pa.timestamp("us"))))
    for t in (empty, table):
        assert _outcome(lambda t=t: treedp.quantiles(t, [0.5], column="t", bounds=DATES,
                                                     **common)) == "ok"  # fmt: skip
