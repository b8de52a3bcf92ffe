"""Streaming file counting: every format gives the in-memory counts, bin for bin; the CSV
readers with and without pyarrow agree on every case; errors match the in-memory ones."""

from __future__ import annotations

import gzip
import io
import sys
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

import treedp
from treedp import make_bins
from treedp._inputs import arrow_to_numpy
from treedp.engines.base import BinCounts
from treedp.engines.edge_exactness import _arithmetic_is_exact
from treedp.engines.equal_width import _count_equal_width, _count_search
from treedp.engines.files import count as files_count
from treedp.engines.files import count_path, iter_path_chunks, resolve_paths
from treedp.engines.local import count_chunk, count_chunks
from treedp.exceptions import (
    DataError,
    InvalidParameterError,
    InvalidTypeError,
    MissingDependencyError,
)

N = 20_011  # a prime number of rows, so no chunk boundary is round
BINS = make_bins(bounds=(-3.0, 3.0), bins=97)


@pytest.fixture(scope="module")
def column() -> np.ndarray:
    rng = np.random.default_rng(11)
    x = rng.normal(size=N)
    x[::1000] = np.nan
    x[1] = np.inf
    x[2] = -np.inf
    x[3:6] = BINS.edges[[0, 5, -1]]  # values exactly on edges
    return x


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, column: np.ndarray) -> Path:
    d = tmp_path_factory.mktemp("files")
    table = pa.table({"x": column, "s": pa.array(["a"] * N), "i": np.arange(N) % 50})
    pq.write_table(table, d / "x.parquet", row_group_size=3000)
    feather.write_feather(table, d / "x.feather")
    text = "x,s,i\n" + "".join(
        f"{'' if np.isnan(v) else repr(float(v))},a,{i % 50}\n" for i, v in enumerate(column)
    )
    (d / "x.csv").write_text(text)
    with gzip.open(d / "x.csv.gz", "wt") as handle:
        handle.write(text)
    (d / "x.tsv").write_text(text.replace(",", "\t"))
    parts = d / "parts"
    parts.mkdir()
    for k, piece in enumerate(np.array_split(column, 3)):
        pq.write_table(pa.table({"x": piece}), parts / f"part-{k}.parquet")
    (parts / "_SUCCESS").write_text("")
    hive = d / "hive"
    pq.write_to_dataset(pa.table({"x": column, "g": np.arange(N) % 3}), hive, partition_cols=["g"])
    return d


@pytest.mark.parametrize(
    "name", ["x.parquet", "x.feather", "x.csv", "x.csv.gz", "x.tsv", "parts", "hive", "*.csv.gz"]
)
@pytest.mark.parametrize("nan", ["drop"])
def test_every_form_counts_like_memory(
    name: str, nan: str, data_dir: Path, column: np.ndarray
) -> None:
    ref = count_chunk(column, BINS, "drop")
    assert count_path(str(data_dir / name), "x", BINS, nan, progress=False) == ref


def test_list_of_files_and_integer_bins(data_dir: Path, column: np.ndarray) -> None:
    bins = make_bins(bounds=(0, 49), bins="integers")
    ref = count_chunk(np.arange(N) % 50, bins)
    paths = [data_dir / "x.parquet"]
    assert count_path(paths, "i", bins) == ref
    assert count_path(data_dir / "x.csv", "i", bins) == ref


def test_nan_error_and_no_count_in_messages(data_dir: Path) -> None:
    for name in ("x.parquet", "x.csv", "x.feather"):
        with pytest.raises(DataError, match="NaN") as info:
            count_path(data_dir / name, "x", BINS)
        assert str(N) not in str(info.value) and "21" not in str(info.value).split("'")[-1]
    with pytest.raises(InvalidParameterError, match="'nope' is not in") as info2:
        count_path(data_dir / "x.parquet", "nope", BINS)
    assert type(info2.value) is InvalidParameterError
    for name in ("x.parquet", "x.csv", "x.feather"):
        with pytest.raises(InvalidTypeError, match="not numeric"):
            count_path(data_dir / name, "s", BINS)


def test_datetime_columns(tmp_path: Path) -> None:
    days = np.datetime64("2024-01-01") + np.arange(400)
    bins = make_bins(bounds=(np.datetime64("2024-01-01"), np.datetime64("2025-01-01")), bins=12)
    ref = count_chunk(days, bins)
    pq.write_table(pa.table({"t": days.astype("datetime64[ms]")}), tmp_path / "t.parquet")
    (tmp_path / "t.csv").write_text("t\n" + "\n".join(str(d) for d in days) + "\n")
    assert count_path(tmp_path / "t.parquet", "t", bins) == ref
    assert count_path(tmp_path / "t.csv", "t", bins) == ref
    plain = list(iter_path_chunks(tmp_path / "t.csv", None, "t", use_pyarrow=False))
    assert sum((count_chunk(c, bins) for c in plain), BinCounts.zero(12)) == ref


def test_decimal128_parquet_is_numeric(tmp_path: Path) -> None:
    values = [Decimal("1.25"), Decimal("-0.50"), None, Decimal("2.75")]
    pq.write_table(pa.table({"d": pa.array(values, pa.decimal128(6, 2))}), tmp_path / "d.parquet")
    bins = make_bins(bounds=(-1, 3), bins=4)
    got = count_path(tmp_path / "d.parquet", "d", bins, "drop")
    assert got == count_chunk(np.array([1.25, -0.5, 2.75]), bins) + BinCounts(
        np.zeros(4, dtype=np.int64), 1
    )


# ------------------------------------------------------------------ CSV realities, two readers
def _both(path: Path, monkeypatch: pytest.MonkeyPatch, **kw: str) -> tuple[object, object]:
    """Counts (or the error's class and message) from the pyarrow and the plain reader."""

    def run(arrow: bool) -> object:
        bins = make_bins(bounds=(0, 10), bins=10)
        try:
            chunks = iter_path_chunks(path, None, "b", use_pyarrow=arrow, **kw)
            return count_chunks(chunks, bins, "drop").as_tuple()[0].tolist()
        except treedp.TreeDPError as exc:
            assert "\n" not in str(exc)
            return type(exc), str(exc).replace(str(path), "PATH")

    return run(True), run(False)


CASES = {
    "plain": (b"a,b\n1,2\n3,4.5\n", {}),
    "bom": (b"\xef\xbb\xbfb,a\n2,1\n7,1\n", {}),
    "semicolon": (b"a;b\n1;2\n3;4.5\n", {"delimiter": ";"}),
    "latin1-header": ("a,b\u00e9,b\n1,2,3\n".encode("latin-1"), {"encoding": "latin-1"}),
    "latin1-no-encoding": ("a,b\u00e9,b\n1,2,3\n".encode("latin-1"), {}),
    "latin1-in-data": ("a,b\n\u00e9,2\n".encode("latin-1"), {}),
    "latin1-in-column": ("a,b\n1,2\u00e9\n".encode("latin-1"), {}),
    "null-cells": (b"a,b\n1,NA\n2,null\n3,\n4, 5 \n5,NaN\n6,N/A\n", {}),
    "ragged-short": (b"a,b\n1,2\n3\n", {}),
    "ragged-long": (b"a,b\n1,2\n3,4,5\n", {}),
    "blank-lines": (b"a,b\n1,2\n\n3,4\n", {}),
    "quoted": (b'a,b\n"x,y",2\n"z",3\n', {}),
    "text": (b"a,b\n1,x\n", {}),
    "mixed": (b"a,b\n1,2\n2,2024-01-01\n", {}),
    "exponent-inf": (b"a,b\n1,1e0\n2,inf\n3,-Infinity\n4,.5\n5,+3\n", {}),
    "underscore": (b"a,b\n1,1_000\n", {}),
    "crlf": (b"a,b\r\n1,2\r\n3,4\r\n", {}),
    "empty": (b"a,b\n", {}),
    "missing-column": (b"a,c\n1,2\n", {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_csv_readers_agree(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, kw = CASES[case]
    path = tmp_path / "c.csv"
    path.write_bytes(content)
    arrow, plain = _both(path, monkeypatch, **kw)
    assert arrow == plain
    gz = tmp_path / "c.csv.gz"
    gz.write_bytes(gzip.compress(content))
    assert _both(gz, monkeypatch, **kw) == (arrow, plain)


def test_csv_cases_work_or_fail_as_stated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def one(case: str) -> object:
        path = tmp_path / f"{case}.csv"
        path.write_bytes(CASES[case][0])
        return _both(path, monkeypatch, **CASES[case][1])[0]

    assert one("bom") == [0, 0, 1, 0, 0, 0, 0, 1, 0, 0]
    assert one("semicolon") == [0, 0, 1, 0, 1, 0, 0, 0, 0, 0]
    assert one("latin1-header") == [0, 0, 0, 1, 0, 0, 0, 0, 0, 0]
    assert one("latin1-in-data") == [0, 0, 1, 0, 0, 0, 0, 0, 0, 0]  # only 'b' is decoded
    assert one("null-cells") == [0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert one("exponent-inf") == [2, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    for case, words in [
        ("latin1-no-encoding", "encoding"),
        ("latin1-in-column", "encoding"),
        ("ragged-short", "number of fields"),
        ("ragged-long", "number of fields"),
        ("text", "not numeric"),
        ("mixed", "not numeric"),
        ("missing-column", "not in"),
    ]:
        err = one(case)
        assert isinstance(err, tuple) and words in err[1], (case, err)


def test_semicolon_decimal_comma_is_refused_not_misread(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_bytes(b"a;b\n1;4,5\n")
    with pytest.raises(InvalidTypeError, match="not numeric"):
        count_path(path, "b", BINS, delimiter=";")


@pytest.mark.parametrize("arrow", [True, False])
def test_stdin(arrow: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    stream = io.TextIOWrapper(io.BytesIO(b"\xef\xbb\xbfa,b\n1,0.5\n2,2.5\n3,\n"))
    monkeypatch.setattr(sys, "stdin", stream)
    bins = make_bins(bounds=(0, 4), bins=4)
    got = count_chunks(iter_path_chunks("-", None, "b", use_pyarrow=arrow), bins, "drop")
    assert got.counts.tolist() == [1, 0, 1, 0] and got.dropped == 1


def test_paths_and_types(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="does not exist"):
        resolve_paths(tmp_path / "nope.csv")
    with pytest.raises(InvalidParameterError, match="matches no data files"):
        resolve_paths(str(tmp_path / "*.parquet"))
    with pytest.raises(InvalidParameterError, match="holds no"):
        resolve_paths(tmp_path)
    (tmp_path / "a.csv").write_text("x\n1\n")
    (tmp_path / "b.parquet").write_bytes(b"")
    with pytest.raises(InvalidParameterError, match="mix formats"):
        resolve_paths(tmp_path)
    with pytest.raises(treedp.InvalidTypeError):
        resolve_paths(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="delimiter"):
        list(iter_path_chunks(tmp_path / "a.csv", None, "x", delimiter=";;"))
    with pytest.raises(InvalidParameterError, match="encoding"):
        list(iter_path_chunks(tmp_path / "a.csv", None, "x", encoding="no-such-codec"))


def test_parquet_without_pyarrow(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files_count, "pyarrow_or_none", lambda: None)
    with pytest.raises(MissingDependencyError, match=r"treedp\[parquet\]"):
        count_path(data_dir / "x.parquet", "x", BINS, "drop")
    ref = count_chunk(np.arange(N) % 50, make_bins(bounds=(0, 49), bins="integers"))
    assert count_path(data_dir / "x.csv", "i", make_bins(bounds=(0, 49), bins="integers")) == ref


# ------------------------------------------------------------------ the counting pipeline
def test_pipeline_holds_few_chunks_and_stops_on_error() -> None:
    bins = make_bins(bounds=(0, 1), bins=8)
    state = {"made": 0, "done": 0, "most": 0}

    def chunks():
        for k in range(40):
            state["made"] += 1
            state["most"] = max(state["most"], state["made"] - state["done"])
            yield np.full(1000, k / 40)

    def tick(size: int) -> None:
        state["done"] += 1

    got = count_chunks(chunks(), bins, workers=2, progress=tick)
    assert got == count_chunk(np.repeat(np.arange(40) / 40, 1000), bins)
    assert state["most"] <= 5  # 2 * workers in flight, plus the one being submitted

    read = []

    def bad():
        yield np.array([np.nan])
        for k in range(100):
            read.append(k)
            yield np.ones(10)

    with pytest.raises(DataError, match="NaN"):
        count_chunks(bad(), bins, workers=1)
    assert len(read) <= 3  # the stream is abandoned, not read to its end


def test_equal_width_fast_path_is_exact() -> None:
    """The verified arithmetic (no per-value correction) and the corrected path give the
    binary-search counts, on edges, one ulp either side, extremes and integers."""
    rng = np.random.default_rng(5)
    seen = set()
    for bounds, b in [
        ((0, 1), 2**16),
        ((0, 100), 256),
        ((18, 90), 72),
        ((-5, 5), 256),
        ((0, 1), 1000),
        ((-1e-3, 7e5), 4097),
        ((2.5, 2.5000001), 3),
    ]:
        bins = make_bins(bounds=bounds, bins=b)
        e = bins.edges
        seen.add(_arithmetic_is_exact(e, bins._inv_width))
        x = np.concatenate(
            [
                e,
                np.nextafter(e, np.inf),
                np.nextafter(e, -np.inf),
                rng.uniform(e[0] - 1, e[-1] + 1, 5000),
                [np.inf, -np.inf, 1e308, -1e308, -0.0],
            ]
        )
        assert np.array_equal(_count_equal_width(x, e, bins._inv_width), _count_search(x, e))
        ints = rng.integers(-(2**62), 2**62, 500)
        assert np.array_equal(
            _count_equal_width(ints, e, bins._inv_width), _count_search(ints.astype(float), e)
        )
    assert seen == {True, False}


def test_progress_bar(
    data_dir: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treedp.engines.progress import wants_progress

    ref = count_chunk(np.arange(N) % 50, make_bins(bounds=(0, 49), bins="integers"))
    bins = make_bins(bounds=(0, 49), bins="integers")
    assert count_path(data_dir / "x.parquet", "i", bins, progress=True) == ref
    err = capsys.readouterr().err
    assert "counting" in err and str(N) not in err  # a fraction and a time, never rows
    assert count_path(data_dir / "x.parquet", "i", bins) == ref  # auto: not a terminal here
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("CI", "true")
    assert wants_progress(None) is False and wants_progress(True) is True
    monkeypatch.setitem(sys.modules, "tqdm", None)
    with pytest.raises(MissingDependencyError, match=r"treedp\[progress\]"):
        count_path(data_dir / "x.parquet", "i", bins, progress=True)


def test_arrow_numeric_columns_are_zero_copy_views() -> None:
    """Null-free integer and float Arrow arrays (sliced too) become numpy views of their data
    buffer, equal to pyarrow's own conversion; arrays with nulls take the general path."""
    base = np.array([3.5, -0.0, np.inf, 7.25, np.nan, 1e-310], dtype=np.float64)
    cases = [
        pa.array(base),
        pa.array(base).slice(2, 3),
        pa.array(np.arange(-5, 5, dtype=np.int16)).slice(1),
        pa.array(np.array([0, 2**63 + 5, 2**64 - 1], dtype=np.uint64)),
        pa.array(np.array([1.5, 2.5], dtype=np.float32)),
    ]
    for arr in cases:
        got = arrow_to_numpy(arr)
        want = arr.to_numpy(zero_copy_only=False)
        assert got.dtype == want.dtype
        assert np.array_equal(got, want, equal_nan=True)
    with_null = arrow_to_numpy(pa.array([1.0, None, 3.0]))
    assert np.array_equal(with_null, [1.0, np.nan, 3.0], equal_nan=True)


def test_integers_with_nulls_beyond_2_53_round_as_numpy(tmp_path: Path) -> None:
    """Nullable int64 / uint64 columns beyond 2**53 become float64 rounded to nearest, as numpy's
    ``astype`` (and pandas) do: Arrow's safe cast refused them, with the value in the message."""
    ints = np.array([2**53 + 1, 2**53 + 3, 2**62 + 3, -(2**63), 2**63 - 1, 7], dtype=np.int64)
    uints = np.array([2**64 - 1, 2**63 + 1, 2**53 + 1, 1, 2, 3], dtype=np.uint64)
    nulls = np.array([False, False, False, False, False, True])
    bins = make_bins(edges=[-1e19, -(2.0**53), 0.0, 2.0**53, 2.0**53 + 2, 2.0**62, 2e19])
    for values in (ints, uints):
        arr = pa.array(values, mask=nulls)
        want = values.astype(np.float64)
        want[nulls] = np.nan
        assert np.array_equal(arrow_to_numpy(arr), want, equal_nan=True)
        pq.write_table(pa.table({"i": arr}), tmp_path / "i.parquet")
        assert count_path(tmp_path / "i.parquet", "i", bins, "drop") == count_chunk(
            want, bins, "drop"
        )


@pytest.mark.parametrize("unit", [None, "p"])
def test_a_file_without_a_column_does_not_count_the_files_before_it_twice(
    tmp_path: Path, unit: str | None
) -> None:
    """Parquet files were read one row group at a time until the first file lacking a job
    column, then the whole dataset was scanned: the files before it were counted twice (an
    independent review: without a privacy unit twice the stated loss). Decided for every
    file before any is read now; each row counts once, in grouped counts and key selection."""
    from treedp.engines.files.grouped import count_grouped_files, key_counts_files
    from treedp.engines.grouped import GroupedJob
    from treedp.privacy.contribution import ContributionBounds

    first = {"v": np.ones(3), "g": ["a"] * 3, "p": pa.array([1, 2, 3])}
    pq.write_table(pa.table(first), tmp_path / "2023.parquet")
    pq.write_table(pa.table({"v": np.ones(2), "p": pa.array([4, 5])}), tmp_path / "2024.parquet")
    bounds = (
        ContributionBounds.from_parameters(unit, 5) if unit else ContributionBounds(None, 1, 1, 1)
    )
    job = GroupedJob("v", ("g",), ("a",), unit, bounds, make_bins(bounds=(0, 3), bins="integers"),
                     "drop")  # fmt: skip
    got = count_grouped_files(str(tmp_path), job, treedp.InsecureSeededSource(1), partitions=4)
    assert int(got.counts.sum()) == 3  # the 2024 rows have no g: missing keys, dropped
    selected = key_counts_files(str(tmp_path), job, treedp.InsecureSeededSource(1))
    assert selected.counts.tolist() == [3]
