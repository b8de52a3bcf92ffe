"""Ledger and accountant messages in the command line's terms, and the user-facing name of
the private-bounds charge (issue #16, after a new user's run)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import treedp
from tests.cli_lines import one_error_line
from treedp.cli import main
from treedp.privacy import PureDP
from treedp.privacy.spend import SpendRecord


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    ages = np.random.default_rng(0).integers(18, 90, 500)
    path = tmp_path / "data.csv"
    path.write_text("age\n" + "\n".join(map(str, ages)) + "\n")
    return path


def test_missing_ledger_or_dataset_names_the_cli_command(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "none.db"
    data = [str(csv_file), "--column", "age"]
    spending = [
        ["release", *data, "--bounds", "18", "90", "--bins", "integers", "--epsilon", "1",
         "--out", str(tmp_path / "r.json")],
        ["median", *data, "--bounds", "18", "90", "--epsilon", "1"],
        ["quantiles", *data, "--q", "0.5", "--bounds", "18", "90", "--epsilon", "1"],
    ]  # fmt: skip
    for args in spending:
        assert main([*args, "--ledger", str(missing), "--dataset", "ages"]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert f"Create one with: treedp budget init {missing} --dataset ages --epsilon E" in line
        assert "init_ledger" not in line
    for args in (["budget", "show", str(missing)], ["budget", "history", str(missing),
                                                      "--dataset", "ages"]):  # fmt: skip
        assert main(args) == 2
        line = one_error_line(capsys.readouterr().err)
        assert "treedp budget init" in line and "init_ledger" not in line
    assert not missing.exists()
    path = tmp_path / "b.db"
    assert main(["budget", "init", str(path), "--dataset", "people", "--epsilon", "1"]) == 0
    capsys.readouterr()
    assert main(["budget", "history", str(path), "--dataset", "other one"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert f"Set its budget first with: treedp budget init {path} --dataset 'other one'" in line
    assert "init_ledger" not in line
    # the library's messages stay in Python terms for API users
    with pytest.raises(treedp.LedgerError, match=r"treedp\.init_ledger"):
        treedp.open_ledger(missing, "ages")
    with pytest.raises(treedp.LedgerError, match=r"treedp\.init_ledger"):
        treedp.open_ledger(path, "other")


def test_measure_mismatch_names_the_cli_command(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "p", "--epsilon", "1", "--neighbours",
          "replace"])  # fmt: skip
    capsys.readouterr()
    args = ["median", str(csv_file), "--column", "age", "--method", "stable", "--epsilon", "1"]
    assert main([*args, "--ledger", str(path), "--dataset", "p"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "treedp budget init PATH --dataset NAME --rho R" in line
    assert "Open the accountant" not in line and "ZCDP(" not in line
    acct = treedp.Accountant(PureDP(1.0), neighbours="replace")  # the API keeps its wording
    with pytest.raises(treedp.InvalidParameterError, match="Open the accountant"):
        treedp.stable_median(np.arange(50.0), epsilon=1.0, delta=1e-6, accountant=acct)


@pytest.mark.filterwarnings("ignore::treedp.BoundsWarning")  # tiny data: flagged bounds
def test_private_bounds_charge_has_a_user_facing_name_and_old_ledgers_read_back(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "b.db"
    with treedp.init_ledger(path, "p", PureDP(3.0)) as led:  # a charge as older versions wrote it
        led.charge(SpendRecord("split_private_bounds", PureDP(1.0), "add_remove", "record", {}))
    args = ["release", str(csv_file), "--column", "age", "--bounds", "private", "--bins"]
    args += ["integers", "--epsilon", "1", "--out", str(tmp_path / "r.json")]
    assert main([*args, "--ledger", str(path), "--dataset", "p"]) == 0
    capsys.readouterr()
    assert main(["budget", "history", str(path), "--dataset", "p"]) == 0
    rows = capsys.readouterr().out.strip().splitlines()
    assert "split_private_bounds" in rows[1]  # the old row, unchanged (its chain verifies)
    assert "release[private bounds]" in rows[2] and "epsilon=1 (pure)" in rows[2]
    assert rows[-1].endswith("remaining epsilon=1 (pure)")
    with treedp.open_ledger(path, "p") as led:
        assert [c.record.mechanism for c in led.history] == [
            "split_private_bounds",
            "release[private bounds]",
        ]
        assert led.history[1].record.parameters["bounds"] == "private"
    acct = treedp.Accountant(PureDP(2.0))  # the API charges the same record
    x = np.random.default_rng(1).normal(50, 10, 300)
    treedp.release_cdf(x, bounds="private", bins=64, epsilon=1.0, accountant=acct)
    assert acct.history[0].record.mechanism == "release[private bounds]"
