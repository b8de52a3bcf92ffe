"""``treedp.examples.write_examples``: the README recipes' input files, and the recipes that
read them run as written (``make examples``; a new user's run found none of them shipped)."""

from __future__ import annotations

import importlib.util
import sqlite3
import sys
from pathlib import Path

import pytest

import treedp
from treedp.cli import main
from treedp.examples import CARRIERS, write_examples


def test_every_input_is_written_and_the_recipes_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    out = write_examples(tmp_path)
    duckdb = importlib.util.find_spec("duckdb") is not None  # people.duckdb: with duckdb only
    assert out["skipped"] == ([] if duckdb else ["people.duckdb"])
    assert len(out["written"]) == 12 + duckdb
    assert (tmp_path / "carriers.txt").read_text().split() == list(CARRIERS)
    with sqlite3.connect(tmp_path / "people.db") as con:
        (rows,) = con.execute("SELECT COUNT(*) FROM people").fetchone()
    con.close()
    assert rows == 48_842
    monkeypatch.chdir(tmp_path)
    recipes = [  # README lines, as written there
        "release people.csv --column age --bins integers --bounds 0 120 --nan drop "
        "--epsilon 1 --out age.json",
        "query age.json --quantiles 0.25 0.5 0.75 --ci",
        "release flights.parquet --column dep_delay --bins integers --bounds -60 963 --nan drop "
        "--by carrier --keys carriers.txt --privacy-unit tailnum --max-contributions 20 "
        "--epsilon 1 --out delays.tdp",
        "median flights.csv --column time_hour --bounds 2013-01-01 2014-01-01 --epsilon 1 --tz UTC",
        "stream init waits.json --horizon 365 --epsilon 1 --bins 64 --bounds 0 120",
        "stream step waits.json day17.csv --column wait",
        "median a.csv b.csv --column age --bounds 0 120 --epsilon 1 --format json",
    ]
    for line in recipes:
        assert main(line.split()) == 0, (line, capsys.readouterr().err)
    rel = treedp.release_cdf(tmp_path / "people.parquet", column="income",
                             bounds=(0, 200_000), bins=1024, epsilon=1.0)  # fmt: skip
    assert 20_000 < rel.median() < 60_000


def test_parquet_files_are_skipped_without_pyarrow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    out = write_examples(tmp_path)
    assert sorted(out["skipped"]) == [
        "data.parquet", "flights.parquet", "people.parquet", "survey.parquet",
    ]  # fmt: skip
    assert not list(tmp_path.glob("*.parquet")) and (tmp_path / "people.csv").exists()
    # the DuckDB file is read from the CSV: [sql] without [parquet] writes it
    assert ("people.duckdb" in out["written"]) == (importlib.util.find_spec("duckdb") is not None)
