"""README.md's recipes run as written: every ``treedp ...`` line of the Recipes section through
the CLI, and every Python block of it, on the example files ``make examples`` writes (the
answers are seeded nowhere: only that each recipe runs is checked)."""

from __future__ import annotations

import shlex
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp.cli import main
from treedp.examples import write_examples

README = Path(__file__).resolve().parents[1] / "README.md"


def _recipes() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index("## Recipes") : text.index("## The details")]


def _blocks(lang: str) -> list[str]:
    """The fenced blocks of the Recipes section whose info string is ``lang``."""
    blocks: list[str] = []
    current: list[str] | None = None
    kind = ""
    for line in _recipes().splitlines():
        if line.startswith("```"):
            if current is None:
                current, kind = [], line[3:].strip()
            else:
                if kind == lang:
                    blocks.append("\n".join(current) + "\n")
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _commands() -> list[list[str]]:
    out = []
    for block in _blocks(""):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("treedp ") and "..." not in line:
                out.append(shlex.split(line)[1:])
    return out


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example files a user gets from ``make examples`` (:mod:`treedp.examples`)."""
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    write_examples(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_recipes_exist() -> None:
    assert len(_commands()) >= 10 and len(_blocks("python")) >= 5


def test_every_command_line_runs(workdir: Path, capsys: pytest.CaptureFixture) -> None:
    for args in _commands():
        if args[:1] == ["release"] and "--db" in args:
            pytest.importorskip("duckdb")
        code = main(args)
        err = capsys.readouterr().err
        assert code == 0, (args, err)


def _namespace(workdir: Path) -> dict[str, Any]:

    rng = np.random.default_rng(1)
    return {
        "treedp": treedp,
        "np": np,
        "x": rng.integers(0, 100, 500),
        "todays_waiting_times": rng.integers(0, 120, 50),
        "todays_values": rng.integers(0, 120, 50),
        "todays_person_ids": rng.integers(0, 20, 50).astype(str),
    }


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_every_python_block_runs(index: int, workdir: Path) -> None:
    block = _blocks("python")[index]
    if "duckdb" in block:
        pytest.importorskip("duckdb")
    with warnings.catch_warnings():  # a recipe's small data may warn at its budget, by noise
        warnings.simplefilter("ignore", treedp.BoundsWarning)  # (a tail in a found end bin)
        exec(compile(block, f"README recipe {index}", "exec"), _namespace(workdir))
