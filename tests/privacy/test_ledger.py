"""The SQLite ledger: persistence, foreign and tampered files, races between processes, kill -9."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp import BudgetExceededError, LedgerError, init_ledger, open_ledger
from treedp.exceptions import InvalidParameterError
from treedp.privacy import ZCDP, ApproxDP, PureDP, SpendRecord
from treedp.privacy.accountant import decimal_value
from treedp.privacy.ledger import list_datasets

SRC = str(Path(treedp.__file__).resolve().parents[1])


def rec(eps: float, name: str = "test", **params: Any) -> SpendRecord:
    return SpendRecord(name, PureDP(eps), "add_remove", parameters=params)


def test_charges_persist_across_opens(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    with init_ledger(path, "adult", PureDP(1.0)) as led:
        led.charge(rec(0.25, "tree", bins=74, bounds=(17, 90)))
        led.charge(rec(0.25, "histogram"))
    with open_ledger(path, "adult") as led:
        assert led.spent == PureDP(0.5) and led.remaining == PureDP(0.5)
        first = led.history[0]
        assert first.seq == 1 and first.record.mechanism == "tree"
        assert dict(first.record.parameters) == {"bins": 74, "bounds": [17, 90]}
        assert first.time.endswith("+00:00")
    assert list_datasets(path) == ("adult",)


def test_datasets_are_separate_and_totals_set_once(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    init_ledger(path, "a", PureDP(1.0)).close()
    init_ledger(path, "b", ZCDP(0.5)).close()
    with pytest.raises(LedgerError, match="set once"):
        init_ledger(path, "a", PureDP(2.0))
    with open_ledger(path, "b") as led:
        led.charge(SpendRecord("g", ZCDP(0.5), "add_remove"))
    with open_ledger(path, "a") as led:
        assert led.spent == PureDP(0.0)
    with pytest.raises(LedgerError, match="no dataset"):
        open_ledger(path, "c")
    with pytest.raises(LedgerError, match="not PureDP"):
        open_ledger(path, "a", total=PureDP(3.0))
    with open_ledger(path, "d", total=ApproxDP(1.0, 1e-6)) as led:  # created on first use
        assert led.total == ApproxDP(1.0, 1e-6)
    with open_ledger(path, "d", total=ApproxDP(1.0, 1e-6)) as led:  # then opened
        assert led.history == ()


def test_release_with_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    led = init_ledger(path, "counts", PureDP(1.0))
    treedp.release_counts([3, 0, 5, 2], epsilon=0.6, accountant=led)
    with pytest.raises(BudgetExceededError):
        treedp.release_counts([3, 0, 5, 2], epsilon=0.6, accountant=led)
    led.close()
    with open_ledger(path, "counts") as again:
        assert len(again.history) == 1
        assert again.history[0].record.parameters["n_bins"] == 4


def test_parallel_parts_are_logged(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    with init_ledger(path, "people", PureDP(1.0)) as led:
        group = led.parallel(PureDP(0.5), label="by sex")
        group.part("F").charge(rec(0.5))
        group.part("M").charge(rec(0.5))
    with open_ledger(path, "people") as led:
        assert led.spent == PureDP(0.5)
        assert [c.group for c in led.history] == [None, "by sex/F#1", "by sex/M#1"]


# -- bad files -------------------------------------------------------------------------------


def test_missing_file_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nope.db"
    with pytest.raises(LedgerError, match="no ledger"):
        open_ledger(path, "x")
    assert not path.exists()


@pytest.mark.parametrize("content", [b"hello, not a database", b"\x00" * 4096])
def test_foreign_file_is_refused_and_unchanged(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "foreign.db"
    path.write_bytes(content)
    for call in (lambda: open_ledger(path, "x"), lambda: init_ledger(path, "x", PureDP(1.0))):
        with pytest.raises(LedgerError):
            call()
        assert path.read_bytes() == content


def test_foreign_sqlite_database_is_refused_and_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE people (name TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="not a treedp ledger"):
        init_ledger(path, "x", PureDP(1.0))
    with pytest.raises(LedgerError, match="not a treedp ledger"):
        open_ledger(path, "x")
    assert path.read_bytes() == before


def _edit(path: Path, sql: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()


EDITS = {
    "lower a charge": 'UPDATE charges SET measure = \'{"epsilon": 0.01, "kind": "pure"}\' '
    "WHERE seq = 2",
    "delete the last charge": "DELETE FROM charges WHERE seq = 3",
    "delete a middle charge": "DELETE FROM charges WHERE seq = 2",
    "raise the total": 'UPDATE datasets SET total = \'{"epsilon": 9.0, "kind": "pure"}\'',
    "change the count": "UPDATE datasets SET n_charges = 2",
    "change a parameter": "UPDATE charges SET parameters = '{}' WHERE seq = 1",
    "other version": "UPDATE treedp_meta SET value = '99' WHERE key = 'version'",
    "other magic": "UPDATE treedp_meta SET value = 'x' WHERE key = 'magic'",
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_inconsistent_edits_are_detected(tmp_path: Path, edit: str) -> None:
    path = tmp_path / "budget.db"
    with init_ledger(path, "d", PureDP(1.0)) as led:
        for i in range(3):
            led.charge(rec(0.3, step=i))
    survivor = open_ledger(path, "d")
    _edit(path, EDITS[edit])
    before = path.read_bytes()
    with pytest.raises(LedgerError):
        open_ledger(path, "d")
    with pytest.raises(LedgerError):  # an open ledger re-verifies before charging
        survivor.charge(rec(0.01))
    survivor.close()
    assert path.read_bytes() == before  # nothing written, nothing lost


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError):
        init_ledger(tmp_path / "a.db", "", PureDP(1.0))
    with pytest.raises(InvalidParameterError):
        init_ledger(tmp_path / "a.db", "x", ZCDP(0.0))
    with pytest.raises(InvalidParameterError):
        init_ledger(tmp_path / "a.db", "x", ApproxDP(1.0, 0.01))
    with pytest.raises(treedp.InvalidTypeError):
        init_ledger(42, "x", PureDP(1.0))  # type: ignore[arg-type]
    assert not (tmp_path / "a.db").exists()


# -- concurrency: real processes racing for the last budget ----------------------------------


def _racer(path: str, start: Any, results: Any) -> None:
    led = open_ledger(path, "race")
    start.wait()
    ok = 0
    for _ in range(3):
        try:
            led.charge(rec(0.1))
            ok += 1
        except BudgetExceededError:
            pass
    led.close()
    results.put(ok)


def test_concurrent_processes_cannot_overspend(tmp_path: Path) -> None:
    path = tmp_path / "race.db"
    init_ledger(path, "race", PureDP(1.0)).close()
    with open_ledger(path, "race") as led:  # leave exactly 5 charges of 0.1 affordable
        led.charge(rec(0.45))
    affordable = 0
    spent = decimal_value(0.45)  # budgets are compared as the decimals written
    while spent + decimal_value(0.1) <= 1:
        spent += decimal_value(0.1)
        affordable += 1
    assert affordable == 5
    ctx = multiprocessing.get_context(
        "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    )
    start = ctx.Barrier(6)
    results = ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(str(path), start, results)) for _ in range(6)]
    for p in procs:
        p.start()
    oks = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sum(oks) == affordable  # 18 attempts, exactly the affordable 5 succeed
    with open_ledger(path, "race") as led:
        assert len(led.history) == 1 + affordable
        assert decimal_value(led.spent.epsilon) >= spent  # type: ignore[union-attr]


# -- kill -9 at random times -----------------------------------------------------------------

_CHILD = """
import sys
from treedp import open_ledger
from treedp.privacy import PureDP, SpendRecord
led = open_ledger(sys.argv[1], "crash")
i = 0
while True:
    i += 1
    led.charge(SpendRecord("loop", PureDP(2.0 ** -20), "add_remove", parameters={"i": i}))
    sys.stdout.write(f"{i}\\n")
    sys.stdout.flush()
"""


def _reported(out: bytes) -> int:
    lines = [line for line in out.decode().split("\n") if line.strip()]
    return len(lines)


@pytest.mark.slow
def test_kill_9_leaves_a_consistent_ledger(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    init_ledger(path, "crash", PureDP(1.0)).close()
    rnd = random.Random(20261123)
    acknowledged = 0
    env = {**os.environ, "PYTHONPATH": SRC}
    for _ in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(path)], stdout=subprocess.PIPE, env=env
        )
        assert child.stdout is not None
        first = child.stdout.readline()  # it is charging
        assert first.strip()
        time.sleep(rnd.uniform(0.0, 0.4))
        os.kill(child.pid, signal.SIGKILL)
        rest = child.stdout.read()
        child.stdout.close()
        child.wait()
        assert child.returncode == -signal.SIGKILL
        acked_now = 1 + _reported(rest)
        with open_ledger(path, "crash") as led:  # opens: consistent (the chain verified)
            rows = led.history
            mine = [c for c in rows[acknowledged:]]
            # every acknowledged charge is there; at most one more committed before its print
            assert acked_now <= len(mine) <= acked_now + 1
            assert [c.seq for c in rows] == list(range(1, len(rows) + 1))
            # the total is exactly the committed charges
            assert Fraction(led.spent.epsilon) == len(rows) * Fraction(2.0**-20)  # type: ignore[union-attr]
            acknowledged = len(rows)
    assert acknowledged >= 6


def test_a_half_written_transaction_is_rolled_back(tmp_path: Path) -> None:
    """A writer killed inside its transaction (hot journal left behind) commits nothing."""
    path = tmp_path / "hot.db"
    with init_ledger(path, "d", PureDP(1.0)) as led:
        led.charge(rec(0.1))
    script = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN IMMEDIATE')\n"
        'c.execute("UPDATE datasets SET n_charges = 7")\n'
        'c.execute("DELETE FROM charges")\n'
        "c.execute('PRAGMA cache_size=1')\n"
        "print('in', flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True)
    assert out.returncode == -signal.SIGKILL
    with open_ledger(path, "d") as led:
        assert led.spent == PureDP(0.1) and len(led.history) == 1


def test_ledger_with_every_mechanism(tmp_path: Path) -> None:
    path = tmp_path / "budget.db"
    values = np.arange(300, dtype=np.float64) % 41
    with init_ledger(path, "col", ApproxDP(3.0, 1e-6), neighbours="replace") as led:
        treedp.release_cdf(values, epsilon=0.5, bounds=(0, 41), bins=41, accountant=led)
        treedp.median(values, epsilon=0.5, bounds=(0, 41), accountant=led)
        treedp.stable_median(values, epsilon=0.5, delta=1e-7, accountant=led)
        treedp.subsample_and_aggregate(
            values, "median", epsilon=0.5, delta=1e-7, m=10, variant="disjoint", accountant=led
        )
        with pytest.raises(BudgetExceededError):
            treedp.stable_median(values, epsilon=0.6, delta=1e-7, accountant=led)
    with open_ledger(path, "col") as led:
        names = [c.record.mechanism for c in led.history]
        assert len(names) == 4 and names[1:] == [
            "quantiles[exponential]",  # treedp.median is a quantile query
            "stable_median",
            "subsample_and_aggregate:disjoint",
        ]
        # the tree under add_remove counts twice against a replace total
        assert led.history[0].cost.epsilon == 2 * led.history[0].record.measure.epsilon  # type: ignore[union-attr]
