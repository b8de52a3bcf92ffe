"""One privacy unit per ledger dataset: fixed by the first charge across opens and processes,
checked inside the write transaction, old files still open (repro 5 against a ledger)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import treedp
from tests.cli_lines import one_error_line
from treedp import InvalidParameterError, LedgerError, init_ledger, open_ledger
from treedp.cli import main
from treedp.privacy import PureDP, SpendRecord
from treedp.privacy.accountant import Accountant
from treedp.privacy.ledger import DECLARATION

SRC = str(Path(treedp.__file__).resolve().parents[1])
OLD = Path(__file__).resolve().parents[1] / "data" / "ledger_v1_before_units.sql"
PERSON = "person:pid"


def spend(unit: str, eps: float = 0.25) -> SpendRecord:
    return SpendRecord("test", PureDP(eps), "add_remove", unit)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_repro_is_refused_and_the_ledger_unchanged(tmp_path: Path) -> None:
    """repro_5: one ledger, a per-person release_cdf, then a record-level quantiles on the same
    per-person table (up to 40 rows a person)."""
    rng = np.random.default_rng(5)
    table = pd.DataFrame({"pid": np.repeat(np.arange(30), rng.integers(1, 41, 30))})
    table["age"] = rng.integers(0, 120, len(table))
    path = tmp_path / "u.db"
    led = open_ledger(path, "visits", total=PureDP(2.0))
    treedp.release_cdf(
        table,
        column="age",
        bounds=(0, 120),
        bins="integers",
        epsilon=0.5,
        privacy_unit=treedp.PrivacyUnit("pid", max_contributions=3),
        accountant=led,
        rng=treedp.InsecureSeededSource(5),
    )
    before = digest(path)
    with pytest.raises(InvalidParameterError) as refused:
        treedp.quantiles(
            table,
            [0.5],
            column="age",
            bounds=(0, 120),
            bins="integers",
            epsilon=0.5,
            accountant=led,
        )
    message = str(refused.value)
    assert "'record'" in message and f"'{PERSON}'" in message and "'visits'" in message
    assert digest(path) == before
    assert [c.record.unit for c in led.history] == [PERSON] and led.spent == PureDP(0.5)
    led.close()


def test_the_first_charge_fixes_the_unit_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with init_ledger(path, "d", PureDP(2.0)) as led:
        assert led.privacy_unit is None
        led.charge(spend(PERSON))
    with open_ledger(path, "d") as led:
        assert led.privacy_unit == PERSON
        before = digest(path)
        for call in (led.check, led.charge):
            with pytest.raises(InvalidParameterError, match="kept for the privacy unit"):
                call(spend("record"))
        assert digest(path) == before
        led.charge(spend(PERSON))
    with open_ledger(path, "d", privacy_unit="pid") as led:  # agrees with the charges
        assert len(led.history) == 2
    with pytest.raises(LedgerError, match="privacy unit"):
        open_ledger(path, "d", privacy_unit="record")
    with pytest.raises(LedgerError, match="privacy unit"):
        open_ledger(path, "d", total=PureDP(2.0), privacy_unit="household")


def test_a_declared_unit_binds_the_ledger_object(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    with init_ledger(path, "d", PureDP(2.0), privacy_unit="pid") as led:
        assert led.privacy_unit == PERSON
        with pytest.raises(InvalidParameterError, match="kept for the privacy unit"):
            led.charge(spend("record"))
        assert [c.record.mechanism for c in led.history] == [DECLARATION]
    with pytest.raises(InvalidParameterError, match="privacy_unit"):
        init_ledger(path, "e", PureDP(2.0), privacy_unit="")
    assert treedp.privacy.ledger.list_datasets(path) == ("d",)  # refused before the file


@pytest.mark.parametrize(
    "total",
    [PureDP(2.0), treedp.ZCDP(1.0), treedp.ApproxDP(2.0, 1e-6)],
    ids=["pure", "zcdp", "approx"],
)
@pytest.mark.parametrize("neighbours", ["add_remove", "replace"])
def test_a_unit_declared_at_init_is_in_the_file(
    tmp_path: Path, total: Any, neighbours: str
) -> None:
    """``init_ledger(privacy_unit=)`` writes the unit (charge 1, a zero spend, chained): a
    later open, in this process or another, refuses another unit before the first charge."""
    path = tmp_path / "b.db"
    init_ledger(path, "d", total, neighbours=neighbours, privacy_unit="pid").close()
    with open_ledger(path, "d") as led:
        assert led.privacy_unit == PERSON and led.remaining == total
        (declared,) = led.history
        assert (declared.record.mechanism, declared.record.unit) == (DECLARATION, PERSON)
        assert declared.record.neighbours == neighbours and declared.cost == led.spent
        before = digest(path)
        for call in (led.check, led.charge):
            with pytest.raises(InvalidParameterError, match="kept for the privacy unit"):
                call(SpendRecord("test", led.remaining, neighbours, "record"))
        assert digest(path) == before
    if isinstance(total, PureDP) and neighbours == "add_remove":
        assert _charge_in_a_process(path, "record") == 3  # another process refuses it too
        assert _charge_in_a_process(path, PERSON) == 0
    with pytest.raises(LedgerError, match="privacy unit"):
        open_ledger(path, "d", privacy_unit="record")


@pytest.mark.parametrize("mutant", [False, True], ids=["ledger", "undeclared mutant"])
def test_the_declaration_test_catches_a_ledger_that_does_not_write_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutant: bool
) -> None:
    if mutant:  # the unit bound to the object only, as before session 11
        monkeypatch.setattr(treedp.privacy.ledger, "_declare", lambda *args: None)
    init_ledger(tmp_path / "b.db", "d", PureDP(2.0), privacy_unit="pid").close()
    with open_ledger(tmp_path / "b.db", "d") as led:
        assert _takes_a_record_charge(led) is mutant


def test_the_check_is_inside_the_write_transaction(tmp_path: Path) -> None:
    """Two ledger objects opened on an empty dataset: the second's state is stale when the
    first charges; its charge re-reads the rows and is refused (a check made only before the
    transaction would let it mix the units)."""
    path = tmp_path / "b.db"
    init_ledger(path, "d", PureDP(2.0)).close()
    with open_ledger(path, "d") as first, open_ledger(path, "d") as second:
        second.check(spend("record"))  # fine now
        first.charge(spend(PERSON))
        with pytest.raises(InvalidParameterError, match="kept for the privacy unit"):
            second.charge(spend("record"))
    with open_ledger(path, "d") as led:
        assert [c.record.unit for c in led.history] == [PERSON]


_OTHER_PROCESS = """
import sys
from treedp import InvalidParameterError, open_ledger
from treedp.privacy import PureDP, SpendRecord
with open_ledger(sys.argv[1], "d") as led:
    try:
        led.charge(SpendRecord("child", PureDP(0.25), "add_remove", sys.argv[2]))
    except InvalidParameterError:
        sys.exit(3)
"""


def _charge_in_a_process(path: Path, unit: str) -> int:
    env = {**os.environ, "PYTHONPATH": SRC}
    run = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, str(path), unit], env=env, capture_output=True
    )
    return run.returncode


def test_the_unit_holds_across_processes(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    init_ledger(path, "d", PureDP(2.0)).close()
    assert _charge_in_a_process(path, PERSON) == 0  # another process fixes the unit
    with open_ledger(path, "d") as led, pytest.raises(InvalidParameterError):
        led.charge(spend("record"))
    assert _charge_in_a_process(path, "record") == 3  # and a third is refused
    assert _charge_in_a_process(path, PERSON) == 0
    with open_ledger(path, "d") as led:
        assert [c.record.unit for c in led.history] == [PERSON, PERSON]


@pytest.mark.parametrize("mutant", [False, True], ids=["ledger", "unit-blind mutant"])
def test_the_ledger_test_catches_a_ledger_that_ignores_the_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mutant: bool
) -> None:
    if mutant:
        monkeypatch.setattr(Accountant, "_check_unit", lambda self, record: None)
    with init_ledger(tmp_path / "b.db", "d", PureDP(2.0)) as led:
        led.charge(spend(PERSON))
        assert _takes_a_record_charge(led) is mutant


def test_parallel_parts_on_a_ledger_keep_the_unit(tmp_path: Path) -> None:
    with init_ledger(tmp_path / "b.db", "d", PureDP(2.0)) as led:
        led.charge(spend(PERSON))
        part = led.parallel(PureDP(0.5), label="by region").part("north")
        part.charge(spend(PERSON))
        with pytest.raises(InvalidParameterError):
            part.charge(spend("record"))
        assert [c.record.unit for c in led.history] == [PERSON] * 3


# -- a ledger written before units were checked --------------------------------------------------


@pytest.fixture
def old_ledger(tmp_path: Path) -> Path:
    """The fixture ledger written by treedp 0.1.0 at 76db645 (tests/data, an SQL dump)."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(OLD.read_text())
    conn.close()
    return path


def test_an_old_ledger_still_opens(old_ledger: Path) -> None:
    before = digest(old_ledger)
    expected = {"ages": ("record", 0.75), "people": (PERSON, None), "empty": (None, 0.0)}
    for name, (unit, spent) in expected.items():
        with open_ledger(old_ledger, name) as led:
            assert led.privacy_unit == unit
            if spent is not None:
                assert led.spent == PureDP(spent)
    assert digest(old_ledger) == before  # opening writes nothing
    with open_ledger(old_ledger, "ages") as led:
        led.charge(spend("record"))
        with pytest.raises(InvalidParameterError, match="kept for the privacy unit 'record'"):
            led.charge(spend(PERSON))
    with open_ledger(old_ledger, "empty") as led:
        led.charge(spend(PERSON))


def test_an_old_ledger_that_mixes_units_opens_and_takes_no_charge(old_ledger: Path) -> None:
    with open_ledger(old_ledger, "visits") as led:
        assert [c.record.unit for c in led.history] == [PERSON, "record"]
        assert led.spent == PureDP(1.0) and led.privacy_unit == PERSON
        before = digest(old_ledger)
        for unit in (PERSON, "record"):
            for call in (led.check, led.charge):
                with pytest.raises(InvalidParameterError, match="takes no further charge"):
                    call(spend(unit))
        assert digest(old_ledger) == before
    with pytest.raises(LedgerError, match="privacy unit"):
        open_ledger(old_ledger, "visits", privacy_unit="pid")


# -- the command line ----------------------------------------------------------------------------


def test_the_cli_refuses_in_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "visits.csv"
    rows = [f"{i % 40},{i % 90}" for i in range(300)]
    data.write_text("pid,age\n" + "\n".join(rows) + "\n")
    ledger = str(tmp_path / "u.db")
    assert main(["budget", "init", ledger, "--dataset", "visits", "--epsilon", "2"]) == 0
    common = ["--column", "age", "--bounds", "0", "100", "--epsilon", "0.5"]
    charge = ["--ledger", ledger, "--dataset", "visits"]
    person = ["--privacy-unit", "pid", "--max-contributions", "3"]
    out = str(tmp_path / "a.json")
    assert (
        main(["release", str(data), *common, "--bins", "10", *person, "--out", out, *charge]) == 0
    )
    capsys.readouterr()
    _record_level_refused(tmp_path, ledger, capsys, data)


def test_budget_init_fixes_the_unit_for_later_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``treedp budget init --privacy-unit``: the unit is in the file before any charge; a
    record-level release is refused in one line, exit 2, before its file is read."""
    import json

    ledger = str(tmp_path / "u.db")
    init = ["budget", "init", ledger, "--dataset", "visits", "--epsilon", "2"]
    assert main([*init, "--privacy-unit", "pid", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["privacy_unit"] == PERSON
    assert main(["budget", "show", ledger, "--format", "json"]) == 0
    (shown,) = json.loads(capsys.readouterr().out)["datasets"]
    assert (shown["privacy_unit"], shown["charges"]) == (PERSON, 0)  # the declaration is none
    assert shown["remaining"] == shown["total"]
    assert main(["budget", "show", ledger]) == 0
    assert "privacy unit person:pid" in capsys.readouterr().out
    _record_level_refused(tmp_path, ledger, capsys)
    assert main(["budget", "history", ledger, "--dataset", "visits", "--format", "json"]) == 0
    charges = json.loads(capsys.readouterr().out)["charges"]
    assert [(c["mechanism"], c["unit"]) for c in charges] == [(DECLARATION, PERSON)]
    assert main([*init[:4], "other", *init[5:], "--privacy-unit", ""]) == 2
    assert "--privacy-unit" in one_error_line(capsys.readouterr().err)


def _record_level_refused(
    tmp_path: Path, ledger: str, capsys: pytest.CaptureFixture[str], data: Path | None = None
) -> None:
    """Record-level ``release`` and ``median`` on the ledger's dataset ``visits`` (of a person
    unit) are refused in one line naming both units, exit 2, before their file is read (a file
    whose values would be refused): the ledger and the output file unchanged."""
    before = digest(Path(ledger))
    bad = tmp_path / "bad.csv"
    bad.write_text("pid,age\n1,20\n2,abc\n")
    common = ["--column", "age", "--bounds", "0", "100", "--epsilon", "0.5"]
    out = ["--bins", "10", "--out", str(tmp_path / "b.json")]
    inputs = [bad] if data is None else [data, bad]
    for argv in (
        *(["release", str(f), *common, *out] for f in inputs),
        ["median", str(bad), *common],
    ):
        assert main([*argv, "--ledger", ledger, "--dataset", "visits"]) == 2
        line = one_error_line(capsys.readouterr().err)
        assert "privacy unit 'record'" in line and f"'{PERSON}'" in line
    assert digest(Path(ledger)) == before and not (tmp_path / "b.json").exists()


def _takes_a_record_charge(led: Any) -> bool:
    """Whether the ledger accepts a record-level charge (a mutant's mixed units)."""
    try:
        led.charge(spend("record"))
    except InvalidParameterError:
        return False
    return True
