"""A ``by`` column of a date or datetime type is grouped by instants, on every engine.

Before: datetime keys were refused by the key check, and text keys matched no record in memory,
on Parquet and Dask (every key released as noise, the budget charged), while DuckDB cast the
text to the column's type (a key at 06:30 matched a whole date) and Spark compared text. Now a
key naming an instant (:func:`treedp.engines.keys.key_instant`: a date, a naive datetime, a
``numpy.datetime64``, a ``pandas.Timestamp`` or ISO 8601 text) matches the records at that
instant, the same on every engine; anything else is refused from the schema before any charge.

The conformance check: under one seed, grouping by the dates releases exactly what grouping by
an integer column holding the same groups releases (same counts, same noise).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.engines.keys import key_instant, key_ticks
from treedp.exceptions import InvalidParameterError, InvalidTypeError

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

DAYS = np.array(["2024-01-01", "2024-01-02", "2024-01-03"], dtype="datetime64[ns]")
_RNG = np.random.default_rng(3)
CODES = _RNG.integers(0, 3, 60)
X = _RNG.uniform(0, 8, 60)
FRAME = pd.DataFrame({"d": DAYS[CODES], "day": CODES + 1, "x": X})
#: Keys naming 2024-01-01 and 2024-01-02 in every accepted form.
KEYS: dict[str, list[Any]] = {
    "text": ["2024-01-01", "2024-01-02"],
    "date": [dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
    "datetime": [dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 2)],
    "numpy": [np.datetime64("2024-01-01"), np.datetime64("2024-01-02T00:00:00")],
    "pandas": [pd.Timestamp("2024-01-01"), pd.Timestamp("2024-01-02")],
}


def _release(data: Any, keys: list[Any], by: str = "d", accountant: Any = None) -> Any:
    return treedp.release_grouped(
        data, column="x", by=by, keys=keys, bins=4, bounds=(0, 8), epsilon=1.0,
        accountant=accountant, rng=treedp.InsecureSeededSource(5),
    )  # fmt: skip


def _counts(rel: Any) -> list[list[float]]:
    return [np.asarray(rel[k].histogram()[0], dtype=float).tolist() for k in rel.keys]


#: What grouping by the integer column ``day`` releases for days 1 and 2 (the reference).
def _reference() -> list[list[float]]:
    return _counts(_release(FRAME, [1, 2], by="day"))


def _same_as_reference(data: Any, forms: tuple[str, ...] = tuple(KEYS)) -> None:
    want = _reference()
    for form in forms:
        got = _release(data, KEYS[form])
        assert got.keys == tuple(KEYS[form])  # the labels are the keys as given
        assert _counts(got) == want, form


def test_key_instant_and_ticks() -> None:
    assert key_instant("2024-01-31") == np.datetime64("2024-01-31")
    assert key_instant("2024-01-31 06:30:00") == np.datetime64("2024-01-31T06:30")
    assert key_instant(dt.date(2024, 1, 31)) == np.datetime64("2024-01-31")
    assert key_instant(pd.Timestamp("2024-01-31 00:00:00.000000001")) == np.datetime64(
        "2024-01-31T00:00:00.000000001"
    )
    for other in (1, 2.5, True, "CA", "", np.datetime64("NaT")):
        assert key_instant(other) is None
    assert key_ticks("2024-01-02", "D") == 19724
    assert key_ticks("2024-01-02T06:30", "D") is None  # no date equals a time of day
    assert key_ticks("2024-01-02T06:30", "s") == 19724 * 86400 + 6 * 3600 + 30 * 60
    assert key_ticks("9999-12-31", "ns") is None  # beyond the unit's range
    assert key_ticks(pd.Timestamp("2024-01-02 00:00:00.000000001"), "us") is None


@pytest.mark.parametrize(
    "name", ["mapping", "pandas", "pandas-utc", "polars", "polars-date", "arrow-date", "arrow-utc"]
)
def test_memory_tables_match_instants(name: str) -> None:
    import polars as pl

    table = {
        "mapping": {"d": FRAME["d"].to_numpy(), "x": X},
        "pandas": FRAME,
        "pandas-utc": FRAME.assign(d=FRAME["d"].dt.tz_localize("UTC")),  # matched in UTC
        "arrow-utc": pa.Table.from_pandas(FRAME.assign(d=FRAME["d"].dt.tz_localize("UTC"))),
        "polars": pl.from_pandas(FRAME),
        "polars-date": pl.from_pandas(FRAME).with_columns(pl.col("d").dt.date()),
        "arrow-date": pa.table({"d": pa.array(FRAME["d"].dt.date), "x": X}),
    }[name]
    _same_as_reference(table)


def test_a_time_of_day_matches_no_date() -> None:
    dated = pd.DataFrame({"d": FRAME["d"].dt.date.astype("datetime64[s]"), "x": X})
    got = _release(dated, ["2024-01-01T06:30", "2024-01-02"])
    want = _release(FRAME, [99, 2], by="day")  # day 99 has no records: noise only
    assert _counts(got) == _counts(want)


def test_wrong_keys_are_refused_before_any_charge() -> None:
    for keys in ([1, 2], ["CA", "NY"], [True], ["2024"], ["5"], ["2024-01"]):
        acct = treedp.Accountant(treedp.PureDP(2.0))
        with pytest.raises(InvalidTypeError, match="'d' has a datetime type") as err:
            _release(FRAME, keys, accountant=acct)
        assert "ISO 8601" in str(err.value) and acct.history == ()
    acct = treedp.Accountant(treedp.PureDP(2.0))
    with pytest.raises(InvalidParameterError, match="same instant"):
        _release(FRAME, ["2024-01-01", dt.date(2024, 1, 1)], accountant=acct)
    assert acct.history == ()
    for by in ("day", "word"):  # a date can equal no number and no text
        frame = FRAME.assign(word=pd.array(["a"] * 60, dtype="string"))
        with pytest.raises(InvalidTypeError, match="'keys'"):
            _release(frame, [dt.date(2024, 1, 1)], by=by)
    with pytest.raises(InvalidParameterError, match="naive"):
        _release(FRAME, [dt.datetime(2024, 1, 1, tzinfo=dt.UTC)])


@pytest.mark.parametrize(
    "written", ["{d}", "{d} 00:00:00", "{d}T00:00", "{d}T00:00:00Z", "{d}T01:00:00+01:00"]
)
def test_csv_cells_match_as_instants(tmp_path: Path, written: str) -> None:
    """A CSV's date cells, however written (a spreadsheet's date, pandas' midnight, ISO with a
    ``T``, UTC or an offset), match every form of key naming their instant (before: a key
    matched only cells of its own text, ``str(key)``, and 11 of these 20 pairs released
    noise); cells naming no instant match no key and are not an error."""
    text = [written.format(d=str(d)[:10]) for d in DAYS[CODES]]
    frame = pd.DataFrame({"d": text, "day": CODES + 1, "x": X})
    junk = pd.DataFrame({"d": ["2024", "Jan 1", "n/a x"], "day": [9, 9, 9], "x": [1.0] * 3})
    path = tmp_path / "t.csv"
    pd.concat([frame, junk]).to_csv(path, index=False)
    _same_as_reference(str(path))


def test_csv_keys_not_all_instants_match_by_text(tmp_path: Path) -> None:
    """With one key that names no instant, the column is matched by text (the rule before):
    ``"2024-01-01"`` does not match cells written ``"2024-01-01 00:00:00"``."""
    frame = pd.DataFrame({"d": [str(d)[:10] + " 00:00:00" for d in DAYS[CODES]], "x": X})
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    mixed = _counts(_release(str(path), ["2024-01-01", "other"]))
    as_text = _counts(_release(str(path), ["2024-01-01 00:00:00", "other"]))
    assert mixed[0] != as_text[0] and mixed[0] == _counts(_release(str(path), ["x", "y"]))[0]


def test_cli_keys_file_of_dates_on_a_csv_written_by_pandas(tmp_path: Path) -> None:
    """``treedp release data.csv --by d --keys days.txt``: the file holds the dates as
    ``2024-01-01 00:00:00`` (pandas' form for timestamps), the keys file ``2024-01-01``: the
    release equals grouping by the integer day (before: both keys released as noise)."""
    from treedp.cli import main

    path = tmp_path / "t.csv"
    FRAME.to_csv(path, index=False, date_format="%Y-%m-%d %H:%M:%S")
    assert "2024-01-01 00:00:00" in path.read_text()
    out: list[list[list[float]]] = []
    for by, keys in (("d", "2024-01-01\n2024-01-02\n"), ("day", "1\n2\n")):
        (tmp_path / "keys.txt").write_text(keys)
        tdp = tmp_path / f"{by}.tdp"
        argv = ["release", str(path), "--column", "x", "--by", by, "--keys",
                str(tmp_path / "keys.txt"), "--bounds", "0", "8", "--bins", "4",
                "--epsilon", "1", "--out", str(tdp), "--insecure-seed", "5"]  # fmt: skip
        assert main(argv) == 0
        out.append(_counts(treedp.load_grouped_release(tdp)))
    assert out[0] == out[1]


def test_parquet_and_dask(tmp_path: Path, dask_client: Any) -> None:
    import dask.dataframe as dd

    path = tmp_path / "t.parquet"
    FRAME[["d", "x"]].to_parquet(path)
    _same_as_reference(str(path), ("text", "date"))
    _same_as_reference(dd.from_pandas(FRAME[["d", "x"]], npartitions=2), ("text", "numpy"))


def test_spark(spark: Any) -> None:
    from pyspark.sql import functions as F

    rows = [(d.to_pydatetime(), float(x)) for d, x in zip(FRAME["d"], X, strict=True)]
    frame = spark.createDataFrame(rows, "d timestamp, x double")
    _same_as_reference(frame, ("text", "date"))
    _same_as_reference(frame.withColumn("d", F.to_date("d")), ("numpy",))


def test_far_keys_are_not_the_same_instant() -> None:
    """Instants compared exactly: 2**62 seconds is not 1970-01-01 (a cast to microseconds
    wrapped it to 0; a docs check), while a month and its first day are one instant."""
    from treedp.engines.keys import refuse_equal_instants

    refuse_equal_instants("d", [np.datetime64(2**62, "s"), "1970-01-01"])
    with pytest.raises(treedp.InvalidParameterError, match="same instant"):
        refuse_equal_instants("d", [np.datetime64("2024-01"), "2024-01-01"])
