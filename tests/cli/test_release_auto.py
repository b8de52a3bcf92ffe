"""``treedp release --max-contributions auto`` (and ``--max-contributions-per-group auto``):
the bound chosen privately, as ``max_contributions="auto"`` in Python (argparse refused the
word before: "invalid int value")."""

from __future__ import annotations

from pathlib import Path

import pytest

import treedp
from tests.cli.visits import write_visits
from treedp.cli import main


@pytest.fixture
def visits(tmp_path: Path) -> tuple[Path, Path]:
    data = write_visits(tmp_path / "v.csv")
    keys = tmp_path / "keys.txt"
    keys.write_text("CA\nNY\n")
    return data, keys


def _argv(data: Path, keys: Path, out: Path, *bounds: str) -> list[str]:
    return [
        "release", str(data), "--column", "age", "--by", "state", "--keys", str(keys),
        "--privacy-unit", "pid", *bounds, "--bounds", "0", "120", "--bins", "integers",
        "--epsilon", "1", "--insecure-seed", "5", "--out", str(out),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("bounds", "name"),
    [
        (["--max-contributions", "auto"], "max_contributions"),
        (["--max-groups", "1", "--max-contributions-per-group", "auto"],
         "max_contributions_per_group"),
    ],
)  # fmt: skip
def test_auto_is_accepted_and_stated(
    visits: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    bounds: list[str],
    name: str,
) -> None:
    out = tmp_path / "a.tdp"
    assert main(_argv(*visits, out, *bounds)) == 0
    said = capsys.readouterr().out
    gr = treedp.load_grouped_release(out)
    assert gr.bound_choice is not None and gr.bound_choice[name] == "auto"
    chosen = gr.bounds.describe()[name]
    assert isinstance(chosen, int) and chosen >= 1
    option = "--" + name.replace("_", "-")
    assert f"{option} {chosen} chosen privately (auto, epsilon=" in said
    assert main(["query", str(out), "--info"]) == 0
    assert "chosen privately" in capsys.readouterr().out


def test_a_bad_bound_says_what_is_accepted(
    visits: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_argv(*visits, tmp_path / "x.tdp", "--max-contributions", "many")) == 2
    err = capsys.readouterr().err
    assert "positive integer or 'auto'" in err and "invalid int value" not in err
    with pytest.raises(SystemExit):
        main(["release", "--help"])
    assert "'auto': chosen privately" in capsys.readouterr().out.replace("\n", " ").replace(
        "                        ", ""
    )


def test_auto_without_groups_is_stated_too(
    visits: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A per-person release without ``--by`` says its bound was chosen privately, and with
    what budget, on the line it writes and in ``query --info`` (it said neither, so the
    budget per level looked short by the choice's 10%; a new user's run)."""
    data, _ = visits
    out = tmp_path / "p.tdp"
    argv = [
        "release", str(data), "--column", "age", "--privacy-unit", "pid",
        "--max-contributions", "auto", "--bounds", "0", "120", "--bins", "integers",
        "--epsilon", "1", "--insecure-seed", "5", "--out", str(out),
    ]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "--max-contributions " in said and "chosen privately (auto, epsilon=0.1)" in said
    assert main(["query", str(out), "--info"]) == 0
    assert "chosen privately (auto, epsilon=0.1 of the budget)" in capsys.readouterr().out
