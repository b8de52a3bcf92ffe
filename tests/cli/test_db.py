"""``--db URL --sql QUERY``: release, quantiles, median and profile from DuckDB, SQLite and
PostgreSQL; one-line refusals (exit 2) without the password or a data value."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli_lines import one_error_line
from tests.engines.sql.conftest import postgres_url  # noqa: F401  (the server fixture)
from treedp.cli import main
from treedp.cli._db import redact

ROWS = [(0.5 + (i % 97), "CA" if i % 3 else "NY", i % 40) for i in range(600)]
SQL = "SELECT income, state, pid FROM people"
SECRET = "hunter2-secret"


def _fill(con: Any, mark: str) -> None:
    con.execute("DROP TABLE IF EXISTS people")
    con.execute("CREATE TABLE people (income DOUBLE PRECISION, state TEXT, pid BIGINT)")
    insert = f"INSERT INTO people VALUES ({mark}, {mark}, {mark})"
    if mark == "%s":
        with con.cursor() as cur:
            cur.executemany(insert, ROWS)
    else:
        con.executemany(insert, ROWS)


@pytest.fixture(params=["duckdb", "sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "duckdb":
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect(str(tmp_path / "p.duckdb"))
        _fill(con, "?")
        con.close()
        yield f"duckdb:///{tmp_path / 'p.duckdb'}"
    elif request.param == "sqlite":
        con = sqlite3.connect(tmp_path / "p.db")
        _fill(con, "?")
        con.commit()
        con.close()
        yield f"sqlite:///{tmp_path / 'p.db'}"
    else:
        import psycopg

        base = request.getfixturevalue("postgres_url")
        with psycopg.connect(base, autocommit=True) as con:
            _fill(con, "%s")
        # the server trusts local connections: the password is accepted and ignored
        yield base.replace("treedp@", f"treedp:{SECRET}@")


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    assert SECRET not in out.out + out.err
    return code, out.out, out.err


def test_release_grouped_person_quantiles_median_profile(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", url, "--sql", SQL, "--column", "income"]
    seed = ["--insecure-seed", "3"]
    common = [*db, "--bounds", "0", "100", "--epsilon", "1", *seed]
    code, out, err = _run(
        capsys, "release", *common, "--bins", "64", "--out", str(tmp_path / "r.json")
    )
    assert code == 0 and "wrote" in out, err
    assert json.loads((tmp_path / "r.json").read_text())  # a release file
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\n")
    grouped = ["--by", "state", "--keys", str(keys), "--privacy-unit", "pid"]
    code, out, _ = _run(
        capsys, "release", *common, "--bins", "64", *grouped, "--max-contributions", "3",
        "--out", str(tmp_path / "g.tdp"),
    )  # fmt: skip
    assert code == 0 and "2 groups by state" in out and "person:pid" in out
    numbers = tmp_path / "pids.txt"  # a number by column: keys read as its type
    numbers.write_text("1\n2\n")
    code, out, err = _run(
        capsys, "release", *common, "--bins", "64", "--by", "pid", "--keys", str(numbers),
        "--out", str(tmp_path / "n.tdp"),
    )  # fmt: skip
    assert code == 0 and "2 groups by pid" in out, err
    code, out, _ = _run(capsys, "quantiles", *common, "--q", "0.5", "0.9")
    assert code == 0 and out.startswith("q=0.5: ")
    code, out, _ = _run(capsys, "median", *common)
    assert code == 0 and out.startswith("median = ")
    # profile finds private bounds over ~16,000 geometric edges: PostgreSQL's width_bucket,
    # DuckDB's binary search (engines/sql/search.py) and SQLite's registered bisect
    # (engines/sql/callback.py) each take them in one query
    pytest.importorskip("matplotlib")
    # SQLite types values, not columns: its columns are declared
    types = ["--floats", "income", "--integers", "pid"] if url.startswith("sqlite") else []
    code, out, err = _run(
        capsys, "profile", "--db", url, "--sql", "SELECT income, pid FROM people",
        "--epsilon", "1", "--out", str(tmp_path / "p.html"), *types, *seed,
    )  # fmt: skip
    assert code == 0 and "2 columns" in out, err
    assert SECRET not in (tmp_path / "p.html").read_text()


def test_bad_input_is_one_line_exit_2_nothing_written(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["release", "--db", url, "--bounds", "0", "100", "--bins", "8", "--epsilon", "1"]
    out = ["--out", str(tmp_path / "r.json")]
    for sql, column, said in [
        (SQL, "nope", "'nope'"),
        ("SELECT * FROM no_such_table", "income", "query failed"),
        (SQL, "state", "number"),
    ]:
        code, _, err = _run(capsys, *base, "--sql", sql, "--column", column, *out)
        assert code == 2 and said in one_error_line(err)
        assert "CA" not in err and "no_such_table" not in err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--sql", "SELECT 1"], "--sql is the query of --db"),
        (["--db", "sqlite:///x.db"], "--db needs --sql"),
        (["x.csv", "--db", "sqlite:///x.db", "--sql", "SELECT 1"], "not both"),
        ([], "give the input file(s), or --db"),
        (["--db", f"mysql://u:{SECRET}@h/d", "--sql", "SELECT 1"], "not a database URL"),
        (["--db", f"postgresql://u:{SECRET}@127.0.0.1:1/d", "--sql", "SELECT 1"], "connect"),
        (["--db", "sqlite:////no/such/dir/x.db", "--sql", "SELECT 1"], "connect"),
    ],
)
def test_option_refusals(
    args: list[str], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--column", "v", "--bounds", "0", "1", "--bins", "4", "--epsilon", "1"]
    code, _, err = _run(capsys, "release", *args, *common, "--out", str(tmp_path / "r.json"))
    assert code == 2 and said in one_error_line(err)


def test_help_and_redact(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["release", "--help"])
    assert "--db URL" in capsys.readouterr().out
    assert redact(f"postgresql://bob:{SECRET}@db:5432/x") == "postgresql://bob:***@db:5432/x"
    assert redact("duckdb:///a.duckdb") == "duckdb:///a.duckdb"
