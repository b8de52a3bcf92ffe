"""``treedp profile``: a Parquet file end to end, a CSV's declared types, one-line refusals."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

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


def test_no_matplotlib_is_refused_before_the_ledger_is_charged(
    table: pd.DataFrame,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without ``treedp[plot]`` the page cannot be drawn: refused before the ledger is opened
    (it was charged, then the plots failed: an adopter's run on a core install)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    ledger = str(tmp_path / "l.db")
    assert main(["budget", "init", ledger, "--dataset", "t", "--epsilon", "1.5"]) == 0
    out = tmp_path / "p.html"
    args = ["profile", str(tmp_path / "t.parquet"), "--epsilon", "1", "--out", str(out)]
    assert main([*args, "--ledger", ledger, "--dataset", "t"]) == 2
    assert "treedp[plot]" in one_error_line(capsys.readouterr().err)
    assert main(["budget", "show", ledger, "--dataset", "t"]) == 0
    assert "0 charges" in capsys.readouterr().out and not out.exists()


def _times_csv(tmp_path: Path, suffix: str) -> Path:
    rng = np.random.default_rng(TEST_SEED)
    t = np.datetime64("2013-01-01T00:00:00", "s") + rng.integers(0, 365 * 86_400, 3000).astype(
        "timedelta64[s]"
    )
    path = tmp_path / f"times{suffix or '_naive'}.csv"
    pd.DataFrame({"dep": rng.integers(-20, 200, 3000), "t": [f"{v}{suffix}" for v in t]}).to_csv(
        path, index=False
    )
    return path


@pytest.mark.parametrize(
    ("suffix", "tz", "shown"),
    [("", None, r",201[23]-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+,"), ("Z", "America/New_York", ":00-0")],
)
def test_datetime_columns_of_a_csv_get_private_bounds(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    suffix: str,
    tz: str | None,
    shown: str,
) -> None:
    path, summary = _times_csv(tmp_path, suffix), tmp_path / "p.csv"
    args = ["profile", str(path), "--epsilon", "1", "--out", str(tmp_path / "p.html")]
    args += ["--integers", "dep", "--datetimes", "t", "--summary", str(summary)]
    args += ["--insecure-seed", "2", *(["--tz", tz] if tz else [])]
    assert main(args) == 0
    assert "2 columns" in capsys.readouterr().out
    rows = [line for line in summary.read_text().splitlines() if line.startswith("t,")]
    bounds = [r for r in rows if "_bound" in r]
    assert len(bounds) == 2 and all(re.search(shown, r) for r in bounds)


def test_datetime_declarations_are_checked_in_cli_terms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _times_csv(tmp_path, "Z")
    out = tmp_path / "p.html"
    base = ["profile", str(path), "--epsilon", "1", "--out", str(out)]
    assert main([*base, "--integers", "t", "--datetimes", "t"]) == 2
    assert "--integers and --datetimes both name 't'" in one_error_line(capsys.readouterr().err)
    assert main([*base, "--datetimes", "t"]) == 2  # cells with offsets, no --tz
    assert "--tz" in one_error_line(capsys.readouterr().err)
    assert main([*base, "--floats", "t"]) == 2  # datetimes declared as numbers
    assert "--datetimes" in one_error_line(capsys.readouterr().err)
    assert not out.exists()


def test_release_of_a_csv_datetime_column_with_private_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, out = _times_csv(tmp_path, ""), tmp_path / "r.tdp"
    base = ["release", str(path), "--column", "t", "--bounds", "private", "--bins", "64"]
    base += ["--epsilon", "1", "--out", str(out), "--insecure-seed", "1"]
    assert main(base) == 2
    assert "--datetimes" in one_error_line(capsys.readouterr().err)
    assert main([*base, "--datetimes"]) == 0
    assert "found privately" in capsys.readouterr().out
    assert main(["query", str(out), "--quantiles", "0.5"]) == 0
    assert "2013-" in capsys.readouterr().out


def test_the_columns_bounds_warnings_are_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As ``treedp release`` prints its bounds warning, ``treedp profile`` prints each
    column's (a line each on stderr, named by column; in JSON the ``warning``): a column of
    mostly zeros gets the end-bin warning the API raises (a new user's run, finding 5)."""
    rng = np.random.default_rng(TEST_SEED)
    zeros = np.where(rng.random(5000) < 0.9, 0, rng.integers(1, 1000, 5000))
    pd.DataFrame({"z": zeros, "u": rng.integers(0, 100, 5000)}).to_parquet(tmp_path / "z.parquet")
    base = ["profile", str(tmp_path / "z.parquet"), "--epsilon", "1", "--insecure-seed", "2"]
    assert main([*base, "--out", str(tmp_path / "p.html")]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line]
    assert any(line.startswith("treedp: warning: Column 'z': ") for line in err)
    assert not any("Column 'u'" in line for line in err)
    assert main([*base, "--out", str(tmp_path / "q.html"), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["warning"].startswith("Column 'z': ")


def test_a_signal_between_the_page_and_the_summary_finishes_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once charged, the page and its summary are written together: a signal arriving after
    the page is recorded and both are finished (it left the page without its summary, the
    budget spent; an independent review)."""
    import os
    import signal

    from treedp.profiling.result import TableProfile

    pytest.importorskip("matplotlib")
    data = tmp_path / "d.csv"
    data.write_text("v\n" + "\n".join(str(i % 50) for i in range(400)) + "\n")
    real = TableProfile.write_report

    def report_then_signal(self: TableProfile, *args: Any, **kwargs: Any) -> Any:
        out = real(self, *args, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)
        return out

    monkeypatch.setattr(TableProfile, "write_report", report_then_signal)
    page, summary = tmp_path / "p.html", tmp_path / "p.json"
    code = main(["profile", str(data), "--floats", "v", "--epsilon", "1", "--out", str(page),
                 "--summary", str(summary)])  # fmt: skip
    assert code == 0 and page.exists() and summary.exists()


def test_a_signal_after_the_outputs_still_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page and the line saying so go together: a signal arriving once the page is
    written is recorded and the profile reported, 0 returned (it exited 130 with the page
    written and the ledger charged, and the natural retry charged again; an interrupt
    review)."""
    import os
    import signal

    import treedp.cli.profile as command

    data = tmp_path / "d.csv"
    data.write_text("v\n" + "\n".join(str(i % 50) for i in range(400)) + "\n")
    real = command.output_of

    def signal_then_output(args: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)
        return real(args)

    monkeypatch.setattr(command, "output_of", signal_then_output)
    page = tmp_path / "p.html"
    code = main(["profile", str(data), "--floats", "v", "--epsilon", "1", "--out", str(page)])
    assert code == 0 and page.exists()
    assert capsys.readouterr().out.startswith(f"wrote {page}: 1 columns")
