"""``--format json`` (one JSON object on stdout, documented keys) and ``--quiet`` (answers only)
on every command that prints answers (treedp.cli._output)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treedp.cli import main

#: The keys every JSON document of these commands has.
COMMON = {"warning", "notes"}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    rng = np.random.default_rng(8)
    csv = tmp_path / "d.csv"
    values = rng.integers(0, 100, 2000)
    csv.write_text("x,y\n" + "\n".join(f"{v},{v / 3:.3f}" for v in values) + "\n")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "10"]) == 0
    release = tmp_path / "r.json"
    assert main(["release", str(csv), "--column", "x", "--bounds", "0", "100", "--bins",
                 "integers", "--epsilon", "1", "--out", str(release)]) == 0  # fmt: skip
    return {"csv": str(csv), "ledger": str(ledger), "release": str(release), "dir": str(tmp_path)}


def _json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert captured.err == ""  # warnings and notes are keys of the document
    lines = captured.out.strip().splitlines()
    document = json.loads(captured.out)
    assert isinstance(document, dict)
    assert len(lines) == 1 or argv[0] == "query"  # one object (query's is indented)
    return document


def _quiet(argv: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main([*argv, "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "treedp: note" not in captured.err
    return captured.out.strip().splitlines()


def test_quantiles(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["quantiles", files["csv"], "--column", "y", "--q", "0.25", "0.5", "--bounds", "0",
            "40", "--epsilon", "1", "--ledger", files["ledger"], "--dataset", "d"]  # fmt: skip
    doc = _json(argv, capsys)
    assert set(doc) == COMMON | {
        "quantiles", "method", "bounds", "bounds_found_privately", "epsilon_spent",
        "neighbours", "seeded", "integer_mode", "shrinkage", "budget",
    }  # fmt: skip
    assert doc["integer_mode"] is None  # a CSV column has no declared type: continuous
    assert [row["q"] for row in doc["quantiles"]] == [0.25, 0.5]
    assert doc["notes"]  # the continuous-column hint, in the document instead of stderr
    assert doc["budget"]["spent"] == {"epsilon": 1.0}
    lines = _quiet(argv, capsys)
    assert len(lines) == 2 and all(float(v) >= 0 for v in lines)


def test_median(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["median", files["csv"], "--column", "x", "--bounds", "0", "100", "--epsilon", "1",
            "--insecure-seed", "2"]  # fmt: skip
    doc = _json(argv, capsys)
    assert set(doc) == COMMON | {
        "median", "refused", "refusal", "how", "method", "neighbours", "seeded", "integer_mode"
    }  # fmt: skip
    assert doc["seeded"] is True and 20 < doc["median"] < 80
    (line,) = _quiet(argv, capsys)
    assert float(line) == doc["median"]  # same seed, full precision
    stable = ["median", files["csv"], "--column", "y", "--epsilon", "1", "--method", "stable"]
    doc = _json(stable, capsys)
    assert doc["refused"] is True and doc["median"] is None and "stable" in doc["refusal"]
    assert _quiet(stable, capsys) == ["refused"]


def test_release_and_query(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    out = str(Path(files["dir"]) / "r2.json")
    argv = ["release", files["csv"], "--column", "x", "--bounds", "0", "100", "--bins", "16",
            "--epsilon", "1", "--out", out]  # fmt: skip
    doc = _json(argv, capsys)
    assert {"out", "mechanism", "bins", "guarantee", "neighbours", "n", "seeded"} <= set(doc)
    assert doc["out"] == out and 1 - 1e-9 < doc["guarantee"]["epsilon"] <= 1.0  # rounded down
    assert _quiet(argv, capsys) == [out]
    lines = _quiet(["query", files["release"], "--cdf", "10", "50", "--median"], capsys)
    assert len(lines) == 3 and all(float(v) == float(v) for v in lines)
    lines = _quiet(["query", files["release"], "--median", "--ci"], capsys)
    assert len(lines[0].split()) == 3  # estimate, low, high


def test_plan(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["plan", "--bins", "64", "--epsilon", "1"]
    doc = _json(argv, capsys)
    assert {"mechanism", "branching", "level_budgets", "predicted", "alternatives"} <= set(doc)
    mechanism, branching, budgets = _quiet(argv, capsys)
    assert mechanism == doc["mechanism"]
    assert [int(b) for b in branching.split(",")] == doc["branching"]
    assert len(budgets.split(",")) == len(doc["level_budgets"])


def test_budget(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    init = ["budget", "init", str(Path(files["dir"]) / "m.db"), "--dataset", "m", "--rho", "1"]
    doc = _json(init, capsys)
    assert doc["total"] == {"rho": 1.0} and doc["dataset"] == "m"
    doc = _json(["budget", "show", files["ledger"]], capsys)
    (entry,) = doc["datasets"]
    assert entry["remaining"] == {"epsilon": 10.0} and entry["charges"] == 0
    assert _quiet(["budget", "show", files["ledger"]], capsys) == ["d epsilon=10 (pure)"]
    doc = _json(["budget", "history", files["ledger"], "--dataset", "d"], capsys)
    assert doc["charges"] == [] and doc["budget"]["total"] == {"epsilon": 10.0}
    assert _quiet(["budget", "history", files["ledger"], "--dataset", "d"], capsys) == []


def test_profile(files: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    page = str(Path(files["dir"]) / "p.html")
    argv = ["profile", files["csv"], "--integers", "x", "--floats", "y", "--epsilon", "2",
            "--out", page, "--insecure-seed", "1"]  # fmt: skip
    doc = _json(argv, capsys)
    assert set(doc["columns"]) == {"x", "y"} and doc["per_column"] == {"x": 1.0, "y": 1.0}
    assert _quiet(argv, capsys) == [page]


def test_the_bounds_warning_is_shown_once(
    files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The API warns (BoundsWarning) and the command prints it: one line, not two; in JSON
    it is the document's ``warning``."""
    argv = ["release", files["csv"], "--column", "x", "--bounds", "0", "10", "--bins", "10",
            "--epsilon", "1", "--out", str(Path(files["dir"]) / "n.json")]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.count("last bin holds") == 1 and "BoundsWarning" not in err
    doc = _json(argv, capsys)
    assert "last bin holds" in doc["warning"]
    tree = ["median", files["csv"], "--column", "x", "--bounds", "0", "10", "--epsilon", "1"]
    assert main(tree) == 0
    assert capsys.readouterr().err.count("last bin holds") == 1


def test_neighbors_is_the_american_spelling_on_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    doc = _json(["plan", "--bins", "64", "--epsilon", "1", "--neighbors", "replace"], capsys)
    assert doc["neighbours"] == "replace"


def test_a_quantile_answered_nan_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release whose estimated count is not positive holds no quantile: median, quantiles
    and query print nan with exit 0 (a valid release) and one warning saying why (text on
    stderr, ``warning`` in JSON); a finite answer gets no such warning."""
    from treedp.cli._output import NO_ANSWER

    csv = tmp_path / "tiny.csv"
    csv.write_text("x\n1\n2\n3\n")
    common = [str(csv), "--column", "x", "--bounds", "0", "10", "--epsilon", "0.1"]
    seeded = [*common, "--insecure-seed", "1"]  # n̂ <= 0 with this seed (checked below)
    assert main(["median", *seeded]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("median = nan") and NO_ANSWER in captured.err
    assert _json(["median", *seeded], capsys)["warning"] == NO_ANSWER
    assert main(["quantiles", *seeded, "--q", "0.5", "0.7", "--method", "tree"]) == 0
    assert capsys.readouterr().err.count(NO_ANSWER) == 1
    out = tmp_path / "r.json"
    # n̂ <= 0 with this seed on 16 bins (a strategy since session 31: seed 1 gives n̂ > 0)
    released = [*common, "--insecure-seed", "2", "--bins", "16", "--out", str(out)]
    assert main(["release", *released]) == 0
    capsys.readouterr()
    assert main(["query", str(out), "--median", "--cdf", "5"]) == 0
    assert NO_ANSWER in capsys.readouterr().err
    assert main(["query", str(out), "--cdf", "5"]) == 0  # no quantile asked: no warning
    assert capsys.readouterr().err == ""
    assert main(["median", *common, "--insecure-seed", "4"]) == 0  # n̂ > 0 with this seed
    captured = capsys.readouterr()
    assert "nan" not in captured.out and NO_ANSWER not in captured.err


def test_quiet_answers_from_seeded_noise_say_so_on_stderr(
    files: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``--quiet`` prints answers alone, so the seeded mark its text lines carry goes to stderr
    (once): every result made with ``--insecure-seed`` says so (a new user's run found none).
    ``stream step --quiet`` prints full precision, as every ``--quiet`` does."""
    seed = ["--insecure-seed", "3"]
    common = ["--column", "x", "--bounds", "0", "100", "--epsilon", "1"]
    seeded_release = str(tmp_path / "s.json")
    state = str(tmp_path / "stream.json")
    runs = [
        ["median", files["csv"], *common, *seed],
        ["quantiles", files["csv"], *common, "--q", "0.5", *seed],
        ["release", files["csv"], *common, "--bins", "16", *seed, "--out", seeded_release],
        ["query", seeded_release, "--median"],
        ["stream", "init", state, "--horizon", "3", "--epsilon", "1", *seed],
        ["stream", "step", state, "--count", "17"],
    ]
    for argv in runs:
        capsys.readouterr()
        assert main([*argv, "--quiet"] if argv[:2] != ["stream", "init"] else argv) == 0
        captured = capsys.readouterr()
        if argv[:2] != ["stream", "init"]:
            assert captured.err.count("SEEDED: not for publication") == 1, argv
    (count,) = captured.out.split()
    assert len(count) > 7 or float(count) == int(float(count))  # not rounded to 6 digits
    capsys.readouterr()
    assert main(["query", files["release"], "--median", "--quiet"]) == 0
    assert "SEEDED" not in capsys.readouterr().err  # the OS's noise: no mark
