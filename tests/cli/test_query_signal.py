"""``treedp query`` on a grouped release carries each key's released ``n̂`` and the HTML
report's low-signal flag (:func:`treedp.release.signal.low_signal`) in every format; a public
key with no records no longer gets a bare, confident-looking median."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.cli.visits import write_visits
from treedp.cli import main


@pytest.fixture
def grouped(tmp_path: Path) -> Path:
    data = write_visits(tmp_path / "d.csv", np.arange(3000) % 700)
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\nRR\n")
    out = tmp_path / "g.tdp"
    argv = ["release", str(data), "--column", "age", "--by", "state", "--keys", str(keys)]
    argv += ["--privacy-unit", "pid", "--max-contributions", "5", "--bounds", "0", "120"]
    argv += ["--bins", "integers", "--epsilon", "0.5", "--insecure-seed", "3", "--out", str(out)]
    assert main(argv) == 0
    return out


def test_every_format_carries_n_hat_and_the_flag(
    grouped: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gr = treedp.load_grouped_release(grouped)
    flags = gr.low_signal()
    assert flags == {"CA": False, "NY": False, "RR": True}  # RR: no records
    capsys.readouterr()
    assert main(["query", str(grouped), "--quantiles", "0.5"]) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))
    assert [r["state"] for r in rows] == ["CA", "NY", "RR"]
    for r in rows:
        assert float(r["n_hat"]) == pytest.approx(gr[r["state"]].n, abs=1e-6)
        assert r["low_signal"] == str(flags[r["state"]])
    assert "# low_signal: " in text
    assert main(["query", str(grouped), "--median", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["state"]: r["low_signal"] for r in doc["rows"]} == flags
    assert all("n_hat" in r for r in doc["rows"])
    assert main(["query", str(grouped), "--median", "--format", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rr = next(line for line in lines if line.startswith("state=RR"))
    assert "too little signal" in rr and "n̂ " in rr
    ca = next(line for line in lines if line.startswith("state=CA"))
    assert "too little signal" not in ca and f"n̂ {gr['CA'].n:.1f}" in ca
    # --quiet stays the bare answers
    assert main(["query", str(grouped), "--median", "--quiet"]) == 0
    assert len(capsys.readouterr().out.split()) == 3


def test_ci_on_a_per_person_release_says_the_intervals_describe_the_rows_kept(
    grouped: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A statistical review: per-person intervals cover the rows kept (at most k per person),
    not every row; with --ci the CLI says so (a note on standard error; JSON: notes), and a
    release without a privacy unit has no such note."""
    capsys.readouterr()
    assert main(["query", str(grouped), "--quantiles", "0.5", "--ci"]) == 0
    err = capsys.readouterr().err
    assert "treedp: note: the answers and their intervals describe the rows kept (at most 5" in err
    assert main(["query", str(grouped), "--quantiles", "0.5", "--ci", "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert len(notes) == 1 and "not every row of the input" in notes[0]
    assert main(["query", str(grouped), "--quantiles", "0.5"]) == 0  # no --ci: no note
    assert "rows kept" not in capsys.readouterr().err
    data = write_visits(tmp_path / "e.csv", np.arange(3000) % 700)
    for unit, note in ((["--privacy-unit", "pid", "--max-contributions", "2"], True), ([], False)):
        out = tmp_path / f"r{len(unit)}.json"
        argv = ["release", str(data), "--column", "age", "--bounds", "0", "120"]
        argv += ["--bins", "integers", "--epsilon", "1", "--insecure-seed", "1"]
        argv += ["--out", str(out), *unit]
        assert main(argv) == 0
        capsys.readouterr()
        assert main(["query", str(out), "--cdf", "40", "--ci", "--format", "json"]) == 0
        notes = json.loads(capsys.readouterr().out)["notes"]
        assert (notes == [treedp.load_release(out).unit.kept]) if note else notes == []
