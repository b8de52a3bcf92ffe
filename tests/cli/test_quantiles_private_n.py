"""``treedp quantiles --n private [--n-share S]``: the count's epsilon is printed; bad values
are one-line errors with exit status 2, before anything is read or charged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.cli_lines import one_error_line
from treedp.cli import main
from treedp.quantiles_api import DEFAULT_N_SHARE
from treedp.value_methods.private_count import count_scale


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "d.csv"
    values = np.random.default_rng(0).normal(40, 10, 1500).round(2)
    path.write_text("x\n" + "\n".join(str(v) for v in values) + "\n")
    return path


def _argv(data: Path, *q: str) -> list[str]:
    levels = list(q) or [str(v) for v in np.arange(1, 30) / 30]
    return ["quantiles", str(data), "--column", "x", "--q", *levels, "--epsilon", "1"]


def test_n_private_prints_the_count_and_its_epsilon(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seeded = ["--insecure-seed", "3"]
    assert main([*_argv(data), "--bounds", "0", "100", "--n", "private", *seeded]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("method ")
    spent = count_scale(DEFAULT_N_SHARE)[1]
    assert out[-1].startswith(f"n private: epsilon {spent:.10g} spent on a noisy count")
    assert "released" in out[-1]
    argv = [*_argv(data), "--bounds", "private", "--n", "private", "--n-share", "0.1", *seeded]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "found privately" in out and f"epsilon {count_scale(0.1)[1]:.10g} spent" in out


def test_n_private_where_n_cannot_matter_spends_nothing(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*_argv(data, "0.5"), "--bounds", "0", "100", "--n", "private"]
    assert main([*argv, "--insecure-seed", "1"]) == 0
    assert "n private: nothing spent (the method and bins cannot depend on n here)" in (
        capsys.readouterr().out
    )
    argv = [*_argv(data), "--bounds", "0", "100", "--n", "private", "--neighbours", "replace"]
    assert main([*argv, "--insecure-seed", "1"]) == 0
    assert "under replace the number of records is public" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--method", "tree", "--n-share", "0.1"], "--n-share applies only with --n private"),
        (["--n", "500", "--n-share", "0.1"], "--n-share applies only with --n private"),
        (["--n", "private", "--n-share", "0"], "--n-share must be in (0, 1)"),
        (["--n", "private", "--n-share", "1.5"], "--n-share must be in (0, 1)"),
        (["--n", "privat"], "--n"),
    ],
)
def test_bad_values_are_one_line_errors(
    data: Path, capsys: pytest.CaptureFixture[str], extra: list[str], needle: str
) -> None:
    assert main([*_argv(data), "--bounds", "0", "100", *extra]) == 2
    assert needle in one_error_line(capsys.readouterr().err)


def test_shares_that_leave_nothing_are_refused_before_the_charge(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "b.db"
    assert main(["budget", "init", str(ledger), "--dataset", "d", "--epsilon", "3"]) == 0
    capsys.readouterr()
    charge = ["--ledger", str(ledger), "--dataset", "d"]
    for shares in (["--n-share", "0.95"], ["--bounds-share", "0.5", "--n-share", "0.5"]):
        argv = [*_argv(data), "--bounds", "private", "--n", "private", *shares, *charge]
        assert main(argv) == 2
        assert "add up to less than 1" in one_error_line(capsys.readouterr().err)
    assert main([*_argv(data), "--bounds", "0", "100", "--n", "private", *charge]) == 0
    assert "remaining epsilon=2" in capsys.readouterr().out
    with treedp.open_ledger(ledger, "d") as led:
        (entry,) = led.history
        assert entry.record.mechanism == "quantiles[auto, private n]"


def test_the_concentration_gate_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Data in a small part of the bounds: the gate's line names its spend and the tree's
    bins (no count or value of the data), and JSON carries the bins."""
    import json

    path = tmp_path / "narrow.csv"
    x = np.random.default_rng(1).uniform(0, 1, 10_000)
    path.write_text("x\n" + "\n".join(f"{v:.6f}" for v in x) + "\n")
    args = [str(path), "--column", "x", "--q", "0.25", "0.5", "0.75", "--epsilon", "0.1"]
    args += ["--bounds", "0", "1000", "--insecure-seed", "3"]
    for q in ("0.1", "0.2", "0.3", "0.4", "0.6", "0.7", "0.8", "0.9"):
        args.insert(6, q)  # 11 levels: the tree
    assert main(["quantiles", *args]) == 0
    out = capsys.readouterr().out
    (line,) = [s for s in out.splitlines() if s.startswith("concentration gate")]
    assert line.startswith("concentration gate: epsilon 0.00294 spent; the tree ran on ")
    assert main(["quantiles", *args, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["concentration_gate"]["bins"] >= 2048 and data["method"] == "tree"
