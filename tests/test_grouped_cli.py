"""``treedp release --by --keys --privacy-unit`` on every file form, streamed; then ``query``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.stats import TEST_SEED
from treedp.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _table(n: int = 900) -> object:
    rng = np.random.default_rng(TEST_SEED)
    return pa.table(
        {
            "age": rng.integers(17, 91, n),
            "state": rng.choice(["CA", "NY", "TX"], n),
            "code": rng.integers(0, 4, n),
            "person_id": rng.integers(0, 300, n),
        }
    )


def _forms(tmp: Path) -> dict[str, list[str]]:
    import pyarrow.csv as pacsv
    import pyarrow.feather as pf

    t = _table()
    pq.write_table(t, tmp / "d.parquet")
    pacsv.write_csv(t, tmp / "d.csv")
    pf.write_feather(t, tmp / "d.arrow")
    (tmp / "parts").mkdir()
    pq.write_table(t.slice(0, 400), tmp / "parts" / "a.parquet")
    pq.write_table(t.slice(400), tmp / "parts" / "b.parquet")
    return {
        "parquet": [str(tmp / "d.parquet")],
        "csv": [str(tmp / "d.csv")],
        "arrow": [str(tmp / "d.arrow")],
        "directory": [str(tmp / "parts")],
        "glob": [str(tmp / "parts" / "*.parquet")],
        "several": [str(tmp / "parts" / "a.parquet"), str(tmp / "parts" / "b.parquet")],
    }


def _argv(inputs: list[str], keys: Path, out: Path, by: str = "state") -> list[str]:
    return [
        "release",
        *inputs,
        "--column",
        "age",
        "--by",
        by,
        "--keys",
        str(keys),
        "--privacy-unit",
        "person_id",
        "--max-contributions",
        "2",
        "--bounds",
        "17",
        "90",
        "--bins",
        "integers",
        "--insecure-seed",
        "3",
        "--out",
        str(out),
    ]


def test_release_on_every_file_form_gives_the_same_counts(tmp_path: Path, capsys) -> None:
    """Every form reads the same rows (the bounds bind, and sampling draws differ by form, so
    the released sizes are compared up to the noise and the sampling)."""
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\nWY\n")
    results = {}
    for name, inputs in _forms(tmp_path).items():
        out = tmp_path / f"{name}.tdp"
        assert main([*_argv(inputs, keys, out), "--epsilon", "1"]) == 0, name
        assert "3 groups by state" in capsys.readouterr().out
        gr = treedp.load_grouped_release(out)
        assert gr.keys == ("CA", "NY", "WY") and gr.unit == "person:person_id"
        results[name] = gr
    # every form reads the same rows: the released sizes agree up to the noise
    sizes = np.array([[gr["CA"].n, gr["NY"].n] for gr in results.values()])
    assert np.ptp(sizes, axis=0).max() < 60
    assert main(["query", str(tmp_path / "parquet.tdp"), "--quantiles", "0.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "state,query,argument,value,n_hat,low_signal"
    assert len(lines) == 1 + 3 + 2  # and WY (no rows) flagged: the note line
    assert lines[3].startswith("WY,") and lines[3].endswith(",True")
    assert lines[4].startswith("# low_signal: ")


def test_integer_keys_from_text_and_gaussian_budget(tmp_path: Path, capsys) -> None:
    forms = _forms(tmp_path)
    keys = tmp_path / "codes.txt"
    keys.write_text("0\n1\n2\n3\n9\n")
    out = tmp_path / "rho.tdp"
    assert main([*_argv(forms["parquet"], keys, out, by="code"), "--rho", "0.5"]) == 0
    assert "rho" in capsys.readouterr().out
    gr = treedp.load_grouped_release(out)
    assert gr.keys == (0, 1, 2, 3, 9)
    assert isinstance(gr.guarantee, treedp.ZCDP) and gr.guarantee.rho <= 0.5
    assert gr[9].n < gr[0].n  # key 9 has no rows: released as noise only
    assert main(["query", str(out), "--key", "9", "--format", "json", "--cdf", "50"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["code"] == 9


def test_bad_input_on_files_is_one_clear_line(tmp_path: Path, capsys) -> None:
    forms = _forms(tmp_path)
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nCA\n")
    out = tmp_path / "x.tdp"
    assert main([*_argv(forms["csv"], keys, out), "--epsilon", "1"]) != 0
    err = capsys.readouterr().err
    assert "unique" in err and "900" not in err
    keys.write_text("CA\n")
    argv = _argv(forms["directory"], keys, out)
    argv[argv.index("person_id")] = "nobody"
    assert main([*argv, "--epsilon", "1"]) != 0
    assert "nobody" in capsys.readouterr().err
    assert not out.exists()


def test_hashed_text_ids_state_their_delta_on_the_command_line(tmp_path: Path, capsys) -> None:
    """Text person ids on files are told apart by a keyed 128-bit hash: the ``wrote`` line
    and ``query --info`` state the δ it adds; integer ids (compared exactly) do not."""
    t = _table()
    text = t.set_column(3, "person_id", pa.array([f"p{v}" for v in t["person_id"].to_pylist()]))
    pq.write_table(text, tmp_path / "text.parquet")
    pq.write_table(t, tmp_path / "int.parquet")
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\n")
    for name, hashed in (("text", True), ("int", False)):
        for grouped in (True, False):
            out = tmp_path / f"{name}{grouped}.tdp"
            argv = _argv([str(tmp_path / f"{name}.parquet")], keys, out)
            if not grouped:
                at = argv.index("--by")
                del argv[at : at + 4]  # --by state --keys FILE
            assert main([*argv, "--epsilon", "1"]) == 0
            wrote = capsys.readouterr().out
            assert ("keyed 128-bit hash" in wrote) == hashed, (name, grouped, wrote)
            assert main(["query", str(out), "--info"]) == 0
            shown = capsys.readouterr().out
            assert ("delta <= (n - 1)*2**-128" in shown) == hashed, (name, grouped, shown)
            page = tmp_path / f"{name}{grouped}.html"
            assert main(["report", str(out), "--out", str(page)]) == 0
            capsys.readouterr()
            assert ("keyed 128-bit hash" in page.read_text()) == hashed, (name, grouped)
