"""A new user's CLI findings, fixed: grouped releases, query, report, number formatting."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from tests.cli_lines import one_error_line
from tests.stats import TEST_SEED
from treedp.cli import main


@pytest.fixture
def income_csv(tmp_path: Path) -> Path:
    rng = np.random.default_rng(TEST_SEED)
    n = 600
    states = rng.choice(["CA", "NY", "TX"], n)
    income = rng.uniform(0, 100_000, n)
    person = rng.integers(0, 300, n)
    lines = ["person,state,income"]
    lines += [f"{p},{s},{v:.2f}" for p, s, v in zip(person, states, income, strict=True)]
    path = tmp_path / "inc.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def keys_file(tmp_path: Path) -> Path:
    path = tmp_path / "keys.txt"
    path.write_text("CA\nNY\nTX\n")
    return path


def _release(csv: Path, out: Path, *extra: str) -> list[str]:
    return [
        "release",
        str(csv),
        "--column",
        "income",
        "--bounds",
        "0",
        "100000",
        "--bins",
        "16",
        "--insecure-seed",
        "3",
        "--out",
        str(out),
        *extra,
    ]


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    return one_error_line(capsys.readouterr().err)


# --- 13, 16: query options checked, in the command line's terms --------------------------


def test_level_without_ci_is_refused(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert main([*_release(income_csv, out), "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--cdf", "40", "--level", "0.5"]) == 2
    assert "--level sets the coverage of --ci intervals: add --ci" in _error(capsys)
    assert main(["query", str(out), "--cdf", "40", "--level", "0.5", "--ci"]) == 0
    assert "0.5 interval" in capsys.readouterr().out


def test_quantiles_out_of_range_named_without_python_terms(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert main([*_release(income_csv, out), "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--quantiles", "2"]) == 2
    line = _error(capsys)
    assert "--quantiles takes probabilities in [0, 1]" in line and "array" not in line


def test_datetime_release_refuses_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rng = np.random.default_rng(TEST_SEED)
    days = np.datetime64("2024-01-01") + rng.integers(0, 360, 300).astype("timedelta64[D]")
    data = tmp_path / "dates.csv"
    data.write_text("when\n" + "\n".join(str(d) for d in days) + "\n")
    out = tmp_path / "dt.json"
    argv = ["release", str(data), "--column", "when", "--bounds", "2024-01-01", "2025-01-01"]
    assert main([*argv, "--bins", "12", "--epsilon", "1", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--cdf", "40"]) == 2
    line = _error(capsys)
    assert "--cdf takes datetimes" in line and "such as 2024-01-31" in line
    assert main(["query", str(out), "--range", "40", "50"]) == 2
    assert "--range takes datetimes" in _error(capsys)
    assert main(["query", str(out), "--cdf", "2024-06-01"]) == 0


def test_truncated_gzip_names_the_cause(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = gzip.compress(("age\n" + "\n".join(str(20 + i % 50) for i in range(5000))).encode())
    path = tmp_path / "trunc.csv.gz"
    path.write_bytes(body[: len(body) // 2])
    argv = ["release", str(path), "--column", "age", "--bounds", "17", "90", "--bins", "integers"]
    assert main([*argv, "--epsilon", "1", "--out", str(tmp_path / "t.json")]) == 2
    line = _error(capsys)
    assert "truncated or corrupt" in line and ": OSError" not in line


# --- 14: counts keep their units digit; intervals say why they are wide -----------------


def test_counts_printed_with_one_decimal_and_interval_labelled(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import treedp

    out = tmp_path / "r.json"
    assert main([*_release(income_csv, out), "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--cdf", "31000", "--ci", "--info"]) == 0
    text = capsys.readouterr().out
    rel = treedp.load_release(out)
    low, high = rel.confidence_interval("cdf", 31000.0)
    line = next(x for x in text.splitlines() if x.startswith("cdf(31000)"))
    assert f"= {float(rel.cdf(31000.0)):.1f} " in line
    assert f"interval incl. within-bin uncertainty [{low:.1f}, {high:.1f}]" in line
    assert f"records:          {rel.n:.1f} (estimated" in text


def test_fmt_count_keeps_millions_exact_to_a_tenth() -> None:
    from treedp.cli._common import fmt_count

    assert fmt_count(6555520.34) == "6555520.3"
    assert fmt_count(np.float64(1e7)) == "10000000.0"
    assert fmt_count(None) == "nan" and fmt_count(float("nan")) == "nan"
