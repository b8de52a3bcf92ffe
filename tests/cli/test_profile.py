"""``treedp profile``: a Parquet file end to end, a CSV's declared types, one-line refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.cli_lines import one_error_line
from tests.stats import TEST_SEED
from treedp.cli import main

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")


@pytest.fixture
def table(tmp_path: Path) -> pd.DataFrame:
    rng = np.random.default_rng(TEST_SEED)
    df = pd.DataFrame({"a": rng.integers(0, 100, 3000), "b": rng.normal(0, 1, 3000)})
    df["s"] = "x"
    df.to_parquet(tmp_path / "t.parquet")
    df.to_csv(tmp_path / "t.csv", index=False)
    return df


def test_parquet_end_to_end(
    table: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, summary = tmp_path / "p.html", tmp_path / "p.json"
    args = ["profile", str(tmp_path / "t.parquet"), "--epsilon", "1", "--out", str(out)]
    assert main([*args, "--summary", str(summary), "--insecure-seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "2 columns, pure epsilon=1 in total" in printed and "not profiled: s" in printed
    assert out.read_text().count('<section id="col') == 2
    doc = json.loads(summary.read_text())
    assert doc["epsilon_per_column"] == {"a": 0.5, "b": 0.5}


def test_csv_needs_declared_types(
    table: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "p.html"
    base = ["profile", str(tmp_path / "t.csv"), "--epsilon", "1", "--out", str(out)]
    assert main(base) == 2
    assert "--integers" in one_error_line(capsys.readouterr().err)
    assert main([*base, "--integers", "a", "--floats", "b", "--insecure-seed", "1"]) == 0
    assert out.exists()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--columns", "zz"], "--columns"),
        (["--epsilon", "-1"], "--epsilon"),
        (["--out", "x.pdf"], "--out"),
        (["--summary", "x.txt"], "--summary"),
    ],
)
def test_refusals_one_line_no_file(
    table: pd.DataFrame,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    needle: str,
) -> None:
    out = tmp_path / "p.html"
    args = ["profile", str(tmp_path / "t.parquet"), "--epsilon", "1", "--out", str(out), *extra]
    assert main(args) == 2
    assert needle in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_ledger_charged_once(
    table: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = str(tmp_path / "l.db")
    assert main(["budget", "init", ledger, "--dataset", "t", "--epsilon", "1.5"]) == 0
    args = [
        "profile",
        str(tmp_path / "t.parquet"),
        "--epsilon",
        "1",
        "--out",
        str(tmp_path / "p.html"),
    ]
    assert main([*args, "--ledger", ledger, "--dataset", "t", "--insecure-seed", "1"]) == 0
    assert main([*args, "--ledger", ledger, "--dataset", "t"]) == 2
    capsys.readouterr()
    assert main(["budget", "history", ledger, "--dataset", "t"]) == 0
    history = capsys.readouterr().out
    assert history.count("profile") == 1
