"""``treedp quantiles``: a tree whose CDF was read toward the uniform law says so, with the
share kept (from the release alone), and JSON carries it (null for other methods)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from treedp.cli import main


def _argv(tmp_path: Path, levels: int) -> list[str]:
    path = tmp_path / "u.csv"
    x = np.random.default_rng(1).uniform(0, 1, 1000)
    path.write_text("x\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    q = [f"{v:.2f}" for v in np.arange(1, levels + 1) / (levels + 1)]
    return ["quantiles", str(path), "--column", "x", "--q", *q, "--epsilon", "0.1"]


def test_a_shrunk_tree_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = [*_argv(tmp_path, 99), "--bounds", "0", "1", "--insecure-seed", "3"]
    assert main(args) == 0
    out = capsys.readouterr().out
    (line,) = [s for s in out.splitlines() if "toward the uniform law" in s]
    assert line.startswith("the tree's CDF was read toward the uniform law over the bounds, ")
    assert main([*args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] == "tree" and 0.0 <= data["shrinkage"] < 1.0


def test_other_methods_report_no_shrinkage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*_argv(tmp_path, 3), "--bounds", "0", "1", "--insecure-seed", "3", "--format", "json"]
    assert main(args) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["method"] != "tree" and data["shrinkage"] is None
