"""``treedp plan`` with contribution bounds: each key's expected error before any data is
read, the same figures as :func:`treedp.predict_error`, and one-line usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

import treedp
from treedp.cli import main


def test_per_key_error_is_predict_error_s(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("AA\nUA\nDL\n")
    args = ["plan", "--bins", "256", "--epsilon", "1", "--max-contributions", "50"]
    assert main([*args, "--keys", str(keys), "--sizes", "2000"]) == 0
    out = capsys.readouterr().out
    unit = treedp.PrivacyUnit("person", max_contributions=50)
    pred = treedp.predict_error(256, epsilon=1.0, privacy_unit=unit, keys=["AA", "UA", "DL"])
    assert f"expected CDF error (RMSE): {pred.rmse:.4g} records" in out
    assert f"2,000 records: off by about {pred.rmse / 2000:.3g}" in out
    assert "sensitivity 50" in out and "keys: 3" in out


def test_without_bounds_plan_prints_no_per_key_block(capsys: pytest.CaptureFixture) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1"]) == 0
    assert "per key" not in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra",
    [["--max-groups", "2", "--max-contributions-per-group", "3"], ["--max-contributions", "0"]],
)
def test_bad_bounds_are_one_line(extra: list[str], capsys: pytest.CaptureFixture) -> None:
    assert main(["plan", "--bins", "64", "--epsilon", "1", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("treedp: error:")
