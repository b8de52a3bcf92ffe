"""A release whose mechanism has no error bars (DAWA) in the CLI and the report: every query
that needs no interval works, and one that needs one is refused in one line (exit 2), the
refusal depending only on the mechanism (a public parameter)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import treedp
from treedp import InsecureSeededSource
from treedp.cli import main
from treedp.exceptions import InvalidParameterError


@pytest.fixture
def dawa_file(tmp_path: Path) -> Path:
    x = np.random.default_rng(0).normal(50, 10, 2000)
    rel = treedp.release_cdf(
        x, bins=128, bounds=(0, 100), epsilon=1.0, mechanism="dawa", rng=InsecureSeededSource(2)
    )
    path = tmp_path / "dawa.tdp"
    rel.save(path)
    return path


def _error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("treedp: error:")
    return lines[0]


def test_offers_intervals_and_to_arrays(dawa_file: Path) -> None:
    rel = treedp.load_release(dawa_file)
    assert rel.offers_intervals is False
    table = rel.to_arrays()
    assert np.isnan(table["count_low"]).all() and np.isnan(table["cdf_high"]).all()
    assert np.isfinite(table["count"]).all()
    with pytest.raises(InvalidParameterError, match="no standard errors"):
        rel.stderr("cdf", 50.0)
    tree = treedp.release_cdf(
        np.arange(100.0), bins=16, bounds=(0, 100), epsilon=1.0, rng=InsecureSeededSource(1)
    )
    assert tree.offers_intervals is True
    assert np.isfinite(tree.to_arrays()["count_low"]).all()


def test_queries_without_intervals_work(dawa_file: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["query", str(dawa_file), "--histogram", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["answers"]
    assert len(rows) == 128 and all("low" not in row for row in rows)
    assert main(["query", str(dawa_file), "--info"]) == 0
    out = capsys.readouterr().out
    assert "no standard error for this mechanism" in out and "pure epsilon-DP, epsilon=1" in out
    assert main(["query", str(dawa_file), "--quantiles", "0.5", "--cdf", "50"]) == 0


def test_ci_and_report_refused_in_one_line(
    dawa_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["query", str(dawa_file), "--cdf", "50", "--ci"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert "--ci" in line and "dawa" in line
    out = tmp_path / "report.html"
    assert main(["report", str(dawa_file), "--out", str(out)]) == 2
    assert "error bars" in _error_line(capsys.readouterr().err)
    assert not out.exists()


def test_render_report_refuses_clearly(dawa_file: Path) -> None:
    pytest.importorskip("matplotlib", reason="the report needs treedp[plot]")
    from treedp.report import render_report

    with pytest.raises(InvalidParameterError, match="query it instead"):
        render_report(treedp.load_release(dawa_file))
