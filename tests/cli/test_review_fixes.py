"""A new user's CLI findings, fixed: grouped releases, query, report, number formatting."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

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


# --- 8, 9, 10, 13: grouped releases -------------------------------------------------------


def _grouped(csv: Path, keys: Path, out: Path, *extra: str) -> list[str]:
    argv = [*_release(csv, out), "--epsilon", "1", "--by", "state", "--keys", str(keys)]
    return [*argv, "--privacy-unit", "person", "--max-contributions", "2", *extra]


def test_grouped_query_ci_gives_each_keys_intervals(
    income_csv: Path,
    keys_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import csv
    import io

    import treedp
    from treedp.release import inference
    from treedp.release.grouped import load_grouped_release

    # A quantile interval's band is calibrated on fresh simulations of the public noise (the
    # operating system's randomness by default), so two calls may differ by a bin: the CLI's
    # and the library's are compared on the same seeded simulations.
    band = inference.quantile_band

    def seeded_band(**kwargs: Any) -> Any:
        return band(**{**kwargs, "rng": treedp.InsecureSeededSource(11)})

    monkeypatch.setattr(inference, "quantile_band", seeded_band)

    out = tmp_path / "g.tdp"
    assert main(_grouped(income_csv, keys_file, out)) == 0
    capsys.readouterr()
    argv = ["query", str(out), "--key", "CA", "--median", "--cdf", "30000", "--ci"]
    assert main([*argv, "--level", "0.9"]) == 0
    text = capsys.readouterr().out
    rows = list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))
    assert "# 0.9 intervals; count intervals include within-bin uncertainty" in text
    ca = load_grouped_release(out)["CA"]
    cdf = next(r for r in rows if r["query"] == "cdf")
    low, high = ca.confidence_interval("cdf", 30000.0, level=0.9)
    assert float(cdf["stderr"]) == pytest.approx(float(ca.stderr("cdf", 30000.0)), abs=1e-6)
    assert (float(cdf["low"]), float(cdf["high"])) == pytest.approx((low, high), abs=1e-6)
    median = next(r for r in rows if r["query"] == "quantile")
    qlow, qhigh = ca.quantile_interval(0.5, level=0.9)
    assert median["stderr"] == "" and float(median["low"]) == pytest.approx(float(qlow))
    assert float(median["high"]) == pytest.approx(float(qhigh))
    # without --ci: no interval columns; --level alone is refused as for a plain release
    assert main(["query", str(out), "--key", "CA", "--median"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "state,query,argument,value,n_hat,low_signal"
    assert main(["query", str(out), "--key", "CA", "--median", "--level", "0.9"]) == 2
    assert "add --ci" in _error(capsys)


def test_grouped_info_is_readable(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "g.tdp"
    assert main(_grouped(income_csv, keys_file, out)) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--info"]) == 0
    text = capsys.readouterr().out
    assert "{" not in text and "[" not in text.split("per key")[0]  # no raw Python dicts
    assert "guarantee:" in text and "pure epsilon-DP, epsilon=1" in text
    assert "plus delta <= (n - 1)*2**-128" in text  # CSV ids are text: a keyed hash
    assert "--privacy-unit person" in text and "--max-contributions 2" in text
    assert "3, public (--keys)" in text


def test_grouped_json_out_refused_before_anything_is_charged(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "2"]) == 0
    capsys.readouterr()
    out = tmp_path / "g.json"
    argv = [*_grouped(income_csv, keys_file, out), "--ledger", str(ledger), "--dataset", "d"]
    assert main(argv) == 2
    line = _error(capsys)
    assert "not JSON" in line and "ending in .tdp" in line
    assert not out.exists()
    assert main(["budget", "show", str(ledger)]) == 0
    assert "remaining epsilon=2" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "words", "absent"),
    [
        ([], "--by needs the public --keys FILE (one key per line), or --selection-delta D", ""),
        (["--delta", "1e-6"], "Gaussian noise (--rho, or --epsilon with --delta) needs", ""),
        (["--keys", "KEYS", "--selection-delta", "1e-6"], "with the public --keys drop", "(not"),
        (["--keys", "KEYS", "--max-contributions", "2"], "need a --privacy-unit", ""),
    ],
)
def test_key_selection_messages_name_the_options_given(
    income_csv: Path,
    keys_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: str,
    absent: str,
) -> None:
    extra = [str(keys_file) if word == "KEYS" else word for word in extra]
    argv = [*_release(income_csv, tmp_path / "x.tdp"), "--epsilon", "1", "--by", "state"]
    assert main([*argv, *extra]) == 2
    line = _error(capsys)
    assert words in line and "selection_epsilon" not in line
    assert absent == "" or absent not in line
    assert "a --delta to select" not in line


def test_no_key_kept_says_the_budget_was_charged(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "b.db"
    init = ["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "1", "--delta", "1e-5"]
    assert main(init) == 0
    argv = [*_release(income_csv, tmp_path / "x.tdp"), "--epsilon", "0.01", "--by", "state"]
    argv += ["--selection-delta", "1e-9", "--ledger", str(ledger), "--dataset", "d"]
    capsys.readouterr()
    assert main(argv) == 2
    line = _error(capsys)
    assert "kept no key" in line and f"the budget was charged to --ledger {ledger}" in line
    assert main(["budget", "show", str(ledger)]) == 0
    assert "spent epsilon=0.01" in capsys.readouterr().out  # as the message says


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (
            ["--neighbours", "replace", "--n", "5"],
            "--n is not used by a group-by or per-person release",
        ),
    ],
)
def test_grouped_n_is_refused(
    income_csv: Path,
    keys_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: str,
) -> None:
    assert main([*_grouped(income_csv, keys_file, tmp_path / "g.tdp"), *extra]) == 2
    assert words in _error(capsys)
    # replace without --n is a grouped release (its trees are add/remove at half the budget)
    argv = [*_grouped(income_csv, keys_file, tmp_path / "g.tdp"), "--neighbours", "replace"]
    assert main(argv) == 0


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--max-groups", "2"], "--max-groups is for a grouped release: give --by COL"),
        (["--max-contributions", "2"], "--max-contributions is for a grouped release"),
        (["--selection-delta", "1e-6"], "--selection-delta is for a grouped release"),
        (["--n", "5"], "--n is the public number of records, for --neighbours replace only"),
        (["--rho", "-1"], "--rho must be a float in [1e-06, 1250.0]"),
        (["--rho", "0"], "--rho must be a float in [1e-06, 1250.0]"),
    ],
)
def test_ungrouped_options_checked_in_one_line(
    income_csv: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    words: str,
) -> None:
    budget = [] if "--rho" in extra else ["--epsilon", "1"]
    assert main([*_release(income_csv, tmp_path / "r.json"), *budget, *extra]) == 2
    line = _error(capsys)
    assert words in line and "must be None" not in line
    assert not (tmp_path / "r.json").exists()


# --- 8, 13, 14: report ----------------------------------------------------------------------


def test_report_of_one_key_of_a_grouped_release(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "g.tdp"
    assert main(_grouped(income_csv, keys_file, out)) == 0
    capsys.readouterr()
    page = tmp_path / "g.html"
    assert main(["report", str(out), "--out", str(page)]) == 0  # every key on one page
    html = page.read_text()
    assert "Quartiles per key" in html and html.count("pure 1-DP for the whole release") == 1
    assert main(["report", str(out), "--out", str(page), "--key", "NY"]) == 0
    html = page.read_text()
    assert "state = NY" in html and "pure 1-DP for the whole release" in html
    assert "column &#x27;person&#x27;" in html
    assert "This key&#x27;s tree: a part of the guarantee above" in html
    assert main(["report", str(out), "--out", str(page), "--key", "XX"]) == 2
    assert "not one of the released keys" in _error(capsys)


def test_report_refuses_a_pdf_name_and_prints_counts_whole(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    import re

    import treedp

    out = tmp_path / "r.json"
    assert main([*_release(income_csv, out), "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["report", str(out), "--out", str(tmp_path / "r.pdf")]) == 2
    assert "give a name ending in .html" in _error(capsys)
    assert not (tmp_path / "r.pdf").exists()
    assert main(["report", str(out), "--out", str(tmp_path / "r.html"), "--key", "CA"]) == 2
    assert "--key is for a grouped release" in _error(capsys)
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    n_hat = treedp.load_release(out).n
    found = re.search(r"Records \(estimated n̂\)</dt><dd>([^<]*)<", html)
    assert found is not None and found.group(1) == f"{n_hat:.1f}"


def test_report_count_formatting_at_millions() -> None:
    from treedp.report.html import _fmt_count

    assert _fmt_count(10000007.6) == "10000007.6" and _fmt_count(np.float64(1e7)) == "10000000.0"


# --- 11, 14, 16: guarantees as labels -------------------------------------------------------


def test_epsilon_delta_target_is_restated_when_written(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_release(income_csv, tmp_path / "r.json"), "--epsilon", "1", "--delta", "1e-6"]
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert "rho=0.024356 (zCDP, discrete Gaussian noise; that is (epsilon, delta)-DP" in line
    assert "epsilon=1, delta=1e-06)" in line
    argv = [*_release(income_csv, tmp_path / "g.tdp"), "--epsilon", "1", "--delta", "1e-6"]
    assert main([*argv, "--by", "state", "--keys", str(keys_file)]) == 0
    line = capsys.readouterr().out
    assert "rho=0.024356; that is (epsilon, delta)-DP with epsilon=1, delta=1e-06" in line
    assert "ZCDP(" not in line and "PureDP(" not in line
    argv = [*_release(income_csv, tmp_path / "z.json"), "--rho", "0.1"]
    assert main(argv) == 0
    assert "that is" not in capsys.readouterr().out  # no delta asked: no (epsilon, delta)


def test_grouped_wrote_line_rounds_the_guarantee(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = _grouped(income_csv, keys_file, tmp_path / "g.tdp", "--neighbours", "replace")
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert "pure epsilon-DP, epsilon=1, plus delta <= (n - 1)*2**-128" in line  # text ids
    assert "hash; docs/grouped.md) for unit person:person (replace)" in line


def test_budget_left_by_rounding_is_shown_as_used_up() -> None:
    from treedp.cli.budget import fmt_measure
    from treedp.privacy.measures import ZCDP, PureDP

    assert fmt_measure(PureDP(2.32547e-12)) == "epsilon=0 (pure)"  # never a float crumb
    assert fmt_measure(PureDP(0.9999999987630684)) == "epsilon=1 (pure)"
    assert fmt_measure(ZCDP(0.5)) == "rho=0.5 (zCDP)"


def test_plan_n_without_replace_in_cli_terms(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1", "--n", "5"]) == 2
    line = _error(capsys)
    assert "--n is the public number of records, for --neighbours replace only" in line
    assert "must be None" not in line


def test_key_refused_where_there_are_no_keys(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = tmp_path / "r.json"
    assert main([*_release(income_csv, plain), "--epsilon", "1"]) == 0
    one = tmp_path / "pu.tdp"
    argv = [*_release(income_csv, one), "--epsilon", "1", "--privacy-unit", "person"]
    assert main([*argv, "--max-contributions", "1"]) == 0
    capsys.readouterr()
    assert main(["query", str(plain), "--median", "--key", "CA"]) == 2
    assert "--key is for a grouped release (made with --by)" in _error(capsys)
    assert main(["query", str(one), "--median", "--key", "CA"]) == 2  # one distribution:
    assert "this file is not one" in _error(capsys)  # a person-level release, not grouped
    assert main(["query", str(one), "--median", "--ci"]) == 0  # with intervals
    assert capsys.readouterr().out.startswith("median = ")


def test_grouped_query_text_format_is_one_line_per_answer(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--format text` on a grouped release prints one line per key and answer, counts with
    one decimal (it printed CSV with six decimals); CSV stays the grouped default."""
    out = tmp_path / "g.tdp"
    assert main(_grouped(income_csv, keys_file, out)) == 0
    capsys.readouterr()
    argv = ["query", str(out), "--key", "CA", "--cdf", "30000", "--median"]
    assert main([*argv, "--format", "text", "--ci"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("state=CA: cdf(30000) = ") and "interval [" in lines[0]
    count = lines[0].split(" = ")[1].split(" ")[0]
    assert len(count.split(".")[1]) == 1  # one decimal
    assert lines[1].startswith("state=CA: quantile(0.5) = ")
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == "state,query,argument,value,n_hat,low_signal"


def test_info_is_not_silently_dropped_or_combined(
    income_csv: Path, keys_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--info` with `--format csv` (single release), or with queries / `--key` (grouped),
    used to drop one of the two silently: now one line, exit 2."""
    out = tmp_path / "g.tdp"
    assert main(_grouped(income_csv, keys_file, out)) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--info", "--key", "CA"]) == 2
    assert "--info describes the whole grouped release" in _error(capsys)
    single = tmp_path / "r.json"
    assert main([*_release(income_csv, single), "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["query", str(single), "--info", "--cdf", "30000", "--format", "csv"]) == 2
    assert "--info is text or json" in _error(capsys)


def test_info_of_a_person_level_replace_release_keeps_n_private(
    income_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review (issue 28) F2: a person-level release under replace has no public n (the
    person's rows change, not one record); --info says it is estimated and names the unit."""
    out = tmp_path / "pu.json"  # a person-level release is a plain release: JSON is fine
    argv = [*_release(income_csv, out), "--epsilon", "1", "--privacy-unit", "person"]
    assert main([*argv, "--max-contributions", "2", "--neighbours", "replace"]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--info"]) == 0
    text = capsys.readouterr().out
    assert "(public, replace neighbours)" not in text and "estimated" in text
    assert "one person per privacy unit: person:person, at most 2 rows each" in text
