"""Every command's help and a set of bad inputs, grepped for the slips a new user met
(issue 32): an option name rewritten inside prose ("pure --epsilon 1"), "Columns: ." for an
empty file, a folder said not to exist when it is a file, float crumbs such as "2.3e-12", a
negative budget, "Got int 0", quoted options, a traceback."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from treedp.cli import COMMANDS, main

#: What no output of the command line may contain, with why.
SLIPS = {
    r"\b(pure|total|spent|spend|only|remaining|of|the) --(epsilon|rho|delta)\b": (
        "an amount of budget rewritten as an option"
    ),
    r"Columns: \.": "an empty list of columns",
    r"\b\d\.\d+e-(1\d|[2-9]\d)\b": "a float crumb",
    r"(epsilon|rho)=-": "a negative budget",
    r"Got (int|float|str) -?\d": "a type name before a value that only has the wrong range",
    r"'--[a-z]": "a quoted option",
    r"Traceback": "a traceback",
    r"\bNone\b(?! \(not given\))": "Python's None",
}


def _slips(text: str) -> list[str]:
    return [why for pattern, why in SLIPS.items() if re.search(pattern, text)]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # --help
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def data(tmp_path: Path) -> dict[str, str]:
    rng = np.random.default_rng(4)
    csv = tmp_path / "d.csv"
    values = rng.integers(0, 100, 300)
    csv.write_text("x,k\n" + "\n".join(f"{v},{'AB'[v % 2]}" for v in values) + "\n")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    ledger = tmp_path / "l.db"
    assert main(["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "1"]) == 0
    return {"csv": str(csv), "empty": str(empty), "ledger": str(ledger), "dir": str(tmp_path)}


def test_every_help_is_free_of_slips(capsys: pytest.CaptureFixture[str]) -> None:
    helps = [["--help"]] + [[c, "--help"] for c in COMMANDS]
    helps += [["budget", a, "--help"] for a in ("init", "show", "history")]
    for argv in helps:
        code, text = _run(argv, capsys)
        assert code == 0, argv
        assert not _slips(text), (argv, _slips(text))


def test_every_help_names_only_its_own_options(monkeypatch: pytest.MonkeyPatch) -> None:
    """An option named inside a command's help text is one of that command's options
    (``treedp profile --help`` said ``--sql``'s columns were named by ``--column``, which
    profile does not take: it takes ``--columns``)."""
    from treedp.cli import _build_parser, _subparser

    monkeypatch.setenv("COLUMNS", "1000")  # no option split across lines
    made_with = {"report": {"--by"}}  # "a grouped release (--by)": treedp release's option
    parser = _build_parser()
    for command in COMMANDS:
        sub = _subparser(parser, command)
        own = {o for action in sub._actions for o in action.option_strings}
        own |= made_with.get(command, set())
        named = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*[a-z])", sub.format_help()))
        assert named <= own, (command, sorted(named - own))


def _bad_inputs(d: dict[str, str]) -> list[list[str]]:
    csv, empty, ledger = d["csv"], d["empty"], d["ledger"]
    q = ["quantiles", csv, "--column", "x", "--q", "0.5"]
    rel = ["release", csv, "--column", "x", "--bins", "8", "--bounds", "0", "100"]
    return [
        # the ledger refuses: its message states amounts of budget, not options
        [*q, "--bounds", "0", "100", "--epsilon", "0.8", "--ledger", ledger, "--dataset", "d"],
        [*q, "--bounds", "0", "100", "--epsilon", "0.8", "--ledger", ledger, "--dataset", "d"],
        [
            "release",
            empty,
            "--column",
            "a",
            "--bounds",
            "0",
            "1",
            "--bins",
            "4",
            "--epsilon",
            "1",
            "--out",
            str(Path(d["dir"]) / "o.json"),
        ],
        [*rel, "--epsilon", "1", "--out", f"{csv}/o.json"],  # the parent is a file
        [*rel, "--epsilon", "1", "--out", str(Path(d["dir"]) / "no" / "o.json")],
        ["plan", "--bins", "0", "--epsilon", "1"],
        ["plan", "--bins", "64", "--epsilon", "-1"],
        ["plan", "--bins", "64", "--epsilon", "1", "--n", "5"],
        [*q, "--epsilon", "1"],  # no --bounds
        ["median", csv, "--column", "x", "--epsilon", "1"],  # no --bounds
        [
            "median",
            csv,
            "--column",
            "x",
            "--epsilon",
            "1",
            "--method",
            "stable",
            "--bounds",
            "private",
        ],
        ["median", csv, "--column", "x", "--epsilon", "1", "--method", "stable", "--nan", "drop"],
        [*q, "--bounds", "0", "100", "--epsilon", "1e9"],
        [*q, "--bounds", "100", "0", "--epsilon", "1"],
        [*q, "--bounds", "0", "100", "--epsilon", "1", "--method", "tree", "--n-share", "0.1"],
        [*rel, "--epsilon", "1", "--rho", "0.5", "--out", "x.json"],
        [*rel, "--out", "x.json"],
        [
            "release",
            csv,
            "--column",
            "nope",
            "--bins",
            "8",
            "--bounds",
            "0",
            "1",
            "--epsilon",
            "1",
            "--out",
            str(Path(d["dir"]) / "o.json"),
        ],
        [
            "release",
            csv,
            "--column",
            "x",
            "--bins",
            "8",
            "--bounds",
            "0",
            "1",
            "--epsilon",
            "1",
            "--by",
            "k",
            "--keys",
            d["dir"],
            "--out",
            str(Path(d["dir"]) / "g.tdp"),
        ],
        ["budget", "show", str(Path(d["dir"]) / "missing.db")],
        ["budget", "history", ledger, "--dataset", "nope"],
        ["query", csv, "--cdf", "1"],  # not a release file
        ["profile", csv, "--epsilon", "1", "--out", str(Path(d["dir"]) / "p.html")],
    ]


def test_bad_inputs_give_one_clean_line(
    data: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    first = True
    for argv in _bad_inputs(data):
        code, text = _run(argv, capsys)
        if first:  # the first quantiles call spends 0.8 of 1: the second is refused
            assert code == 0, text
            first = False
            continue
        assert code == 2, (argv, text)
        errors = [line for line in text.splitlines() if line.startswith("treedp: error:")]
        assert len(errors) == 1, (argv, text)
        assert not _slips(text), (argv, text, _slips(text))


def test_the_ledger_refusal_keeps_amounts_in_words(
    data: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    q = ["quantiles", data["csv"], "--column", "x", "--q", "0.5", "--bounds", "0", "100"]
    ledger = ["--ledger", data["ledger"], "--dataset", "d"]
    assert main([*q, "--epsilon", "0.75", *ledger]) == 0
    capsys.readouterr()
    assert main([*q, "--epsilon", "0.5", *ledger]) == 2
    err = capsys.readouterr().err
    assert "pure epsilon=0.5" in err and "pure epsilon=0.25" in err and "--epsilon" not in err


def test_empty_file_and_file_as_folder_are_said_plainly(
    data: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--column", "a", "--bounds", "0", "1", "--bins", "4", "--epsilon", "1"]
    out = str(Path(data["dir"]) / "o.json")
    assert main(["release", data["empty"], *common, "--out", out]) == 2
    assert "the file is empty" in capsys.readouterr().err
    assert main(["release", data["csv"], *common, "--out", "d.csv/o.json"]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err or "does not exist" in err  # relative to the cwd
    bad = f"{data['csv']}/o.json"
    assert main(["release", data["csv"], *common, "--out", bad]) == 2
    err = capsys.readouterr().err
    assert f"'{data['csv']}' is a file, not a folder" in err


def test_budget_amounts_have_no_float_crumbs() -> None:
    from treedp.cli._ledger import fmt_measure
    from treedp.privacy.measures import ZCDP, ApproxDP, PureDP

    assert fmt_measure(PureDP(2.3e-12)) == "epsilon=0 (pure)"
    assert fmt_measure(ZCDP(1e-13)) == "rho=0 (zCDP)"
    assert fmt_measure(ApproxDP(3e-15, 1e-6)) == "epsilon=0, delta=1e-06"
    assert fmt_measure(PureDP(0.25)) == "epsilon=0.25 (pure)"


def test_demo_says_what_the_tree_shape_is(capsys: pytest.CaptureFixture[str]) -> None:
    import treedp.cli.demo as demo

    source = Path(demo.__file__).read_text()
    assert "fan-out" in source and "list(release.branching)" not in source


def test_keys_file_header_is_not_a_key(
    data: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("k\nA\nB\n")
    out = tmp_path / "g.tdp"
    argv = ["release", data["csv"], "--column", "x", "--by", "k", "--keys", str(keys),
            "--bounds", "0", "100", "--bins", "8", "--epsilon", "1", "--out", str(out),
            "--insecure-seed", "1"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "2 groups by k" in captured.out
    assert "read as a header row" in captured.err
    keys.write_text("A\nB\n")  # no header: no note
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "2 groups by k" in captured.out and "header" not in captured.err


@pytest.mark.parametrize(
    "total, spend",
    [(["--rho", "1"], ["--rho", "0.8"]), (["--epsilon", "2", "--delta", "1e-6"],
                                           ["--epsilon", "2", "--delta", "1e-6"])],
)  # fmt: skip
def test_gaussian_refusals_keep_amounts_in_words(
    data: dict[str, str], tmp_path: Path, total: list[str], spend: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    ledger = str(tmp_path / "g.db")
    assert main(["budget", "init", ledger, "--dataset", "g", *total]) == 0
    rel = ["release", data["csv"], "--column", "x", "--bounds", "0", "100", "--bins", "16",
           *spend, "--ledger", ledger, "--dataset", "g"]  # fmt: skip
    assert main([*rel, "--out", str(tmp_path / "a.json")]) == 0
    capsys.readouterr()
    assert main([*rel, "--out", str(tmp_path / "b.json")]) == 2
    err = capsys.readouterr().err
    assert "Refused" in err and not _slips(err), err
    assert "--rho 0" not in err and "--delta 1e" not in err and "--epsilon 2" not in err
