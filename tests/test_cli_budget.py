"""The CLI budget: `treedp budget init|show|history`, `--ledger` on spending commands, demo."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import treedp
from treedp import open_ledger
from treedp.cli import main
from treedp.privacy import ZCDP, ApproxDP, PureDP


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "data.csv"
    path.write_text("age\n" + "\n".join(str(a) for a in rng.integers(18, 90, 500)) + "\n")
    return path


def _error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("treedp: error:"), err
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "total"),
    [
        (["--epsilon", "1.5"], PureDP(1.5)),
        (["--rho", "0.25"], ZCDP(0.25)),
        (["--epsilon", "2", "--delta", "1e-6"], ApproxDP(2.0, 1e-6)),
    ],
)
def test_init_and_show(tmp_path: Path, capsys: pytest.CaptureFixture, flags: list, total) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "b.db"
    assert main(["budget", "init", str(path), "--dataset", "d", *flags]) == 0
    assert "'d' has a total of" in capsys.readouterr().out
    with open_ledger(path, "d") as led:
        assert led.total == total
    assert main(["budget", "show", str(path), "--dataset", "d"]) == 0
    assert "spent" in capsys.readouterr().out
    assert main(["budget", "init", str(path), "--dataset", "d", *flags]) == 2
    assert "set once" in _error(capsys.readouterr().err)


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--rho", "0"],
        ["--rho", "-1"],
        ["--epsilon", "0"],
        ["--epsilon", "1", "--delta", "0.01"],
        ["--epsilon", "1", "--delta", "0"],
        ["--rho", "1", "--epsilon", "1"],
    ],
)
def test_init_bad_totals(tmp_path: Path, capsys: pytest.CaptureFixture, flags: list) -> None:  # type: ignore[type-arg]
    path = tmp_path / "b.db"
    assert main(["budget", "init", str(path), "--dataset", "d", *flags]) == 2
    _error(capsys.readouterr().err)
    assert not path.exists() or path.stat().st_size == 0 or "d" not in _datasets(path)


def _datasets(path: Path) -> tuple[str, ...]:
    from treedp.privacy.ledger import list_datasets

    return list_datasets(path)


def test_release_and_median_charge_the_ledger(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "1"])
    common = ["--ledger", str(path), "--dataset", "ages", "--insecure-seed", "1"]
    release = ["release", str(csv_file), "--column", "age", "--bounds", "18", "90"]
    release += ["--bins", "integers", "--epsilon", "0.4", "--out", str(tmp_path / "r.json")]
    assert main([*release, *common]) == 0
    assert "remaining epsilon=0.6" in capsys.readouterr().out
    median = ["median", str(csv_file), "--column", "age", "--bounds", "18", "90"]
    assert main([*median, "--method", "exponential", "--neighbours", "add_remove", "--epsilon",
                 "0.4", *common]) == 0  # fmt: skip
    capsys.readouterr()
    out_file = tmp_path / "r2.json"
    assert main([*release[:-1], str(out_file), *common]) == 2  # 0.4 more does not fit
    assert "Refused" in _error(capsys.readouterr().err)
    assert not out_file.exists()  # nothing released
    assert main(["budget", "history", str(path), "--dataset", "ages"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].split()[:3] == ["#", "time", "(UTC)"]
    assert any(m in table[1] for m in ("tree", "histogram", "strategy"))
    assert "quantile_exponential" in table[2]
    assert table[-1].startswith("budget of 'ages': spent")
    with open_ledger(path, "ages") as led:
        assert len(led.history) == 2


def test_ledger_options_go_together(csv_file: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    args = ["median", str(csv_file), "--column", "age", "--method", "stable", "--epsilon", "1"]
    assert main([*args, "--dataset", "x"]) == 2
    assert "--ledger and --dataset" in capsys.readouterr().err
    assert main([*args, "--ledger", str(tmp_path / "none.db"), "--dataset", "x"]) == 2
    assert "no ledger" in _error(capsys.readouterr().err)
    assert not (tmp_path / "none.db").exists()


def test_a_note_is_recorded_with_the_charge_and_shown_in_the_history(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """``--note`` on every spending command: recorded with its charge beside the column and
    the input; refused in CLI terms without --ledger or when empty, before any charge."""
    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "5"])
    capsys.readouterr()
    common = ["--ledger", str(path), "--dataset", "ages", "--insecure-seed", "1"]
    data = [str(csv_file), "--column", "age", "--bounds", "18", "90", "--epsilon", "0.5"]
    runs = [
        ["release", *data, "--bins", "integers", "--out", str(tmp_path / "r.json")],
        ["median", *data, "--method", "exponential", "--neighbours", "add_remove"],
        ["quantiles", *data, "--q", "0.5"],
        ["stream", "init", str(tmp_path / "s.json"), "--horizon", "4", "--epsilon", "0.5"],
        ["profile", str(csv_file), "--integers", "age", "--epsilon", "0.5",
         "--out", str(tmp_path / "p.html")],
    ]  # fmt: skip
    for i, args in enumerate(runs):
        assert main([*args, *common, "--note", f"Table {i}"]) == 0, args
    capsys.readouterr()
    for bad in (["--note", "Table 9"], ["--note", "", *common]):
        assert main([*runs[0][:-1], str(tmp_path / "r9.json"), *bad]) == 2
        assert "--note" in _error(capsys.readouterr().err)
    capsys.readouterr()
    with open_ledger(path, "ages") as led:
        subjects = [c.record.parameters["release"] for c in led.history]
    assert [s["note"] for s in subjects] == [f"Table {i}" for i in range(5)]
    assert subjects[0]["column"] == "age" and subjects[0]["source"] == str(csv_file)
    assert subjects[0]["bounds"] == [18, 90]
    assert main(["budget", "history", str(path), "--dataset", "ages"]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert "release" in table[0].split()
    assert "Table 0 (age of " in table[1] and "Table 3 (stream: " in table[4]
    assert main(["budget", "history", str(path), "--dataset", "ages", "--format", "json"]) == 0
    charges = json.loads(capsys.readouterr().out)["charges"]
    assert charges[0]["release"]["note"] == "Table 0"
    assert "release" not in charges[0]["parameters"]


def test_replace_methods_need_a_replace_ledger(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "a", "--epsilon", "1", "--delta", "1e-5"])
    main(["budget", "init", str(path), "--dataset", "r", "--epsilon", "1", "--delta", "1e-5",
          "--neighbours", "replace"])  # fmt: skip
    capsys.readouterr()
    args = ["median", str(csv_file), "--column", "age", "--method", "stable", "--epsilon", "0.5"]
    assert main([*args, "--ledger", str(path), "--dataset", "a"]) == 2
    assert "--neighbours replace" in _error(capsys.readouterr().err)
    assert main([*args, "--ledger", str(path), "--dataset", "r"]) == 0
    assert "budget of 'r'" in capsys.readouterr().out
    assert main(["budget", "show", str(path)]) == 0  # every dataset
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(":")[0] for line in lines] == ["a", "r"]


def test_foreign_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    for action in (["show", str(path)], ["history", str(path), "--dataset", "d"]):
        assert main(["budget", *action]) == 2
        assert "not a" in _error(capsys.readouterr().err)
    assert main(["budget", "init", str(path), "--dataset", "d", "--epsilon", "1"]) == 2
    assert path.read_text() == "a,b\n1,2\n"


@pytest.mark.slow
def test_demo_states_one_total(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "demo.db"
    assert main(["demo", "--epsilon", "3", "--ledger", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Total privacy budget of the dataset: epsilon=3 (pure)" in out
    assert "epsilon=1 (exact" in out
    assert "Total spent on the dataset: epsilon=3 (pure) of epsilon=3 (pure)" in out
    assert "is refused by the ledger" in out
    with open_ledger(path, "adult") as led:
        assert len(led.history) == 3
        assert led.spent.epsilon <= 3.0  # type: ignore[union-attr]
    assert main(["demo", "--epsilon", "3", "--ledger", str(path)]) == 2  # spent: refused
    assert "Refused" in capsys.readouterr().err


def test_show_and_history_state_the_privacy_unit(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A ledger holds one privacy unit (docs/privacy.md): `budget show` says which (not fixed
    before the first charge) and `budget history --format json` states each charge's."""
    import json

    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "1"])
    capsys.readouterr()
    assert main(["budget", "show", str(path), "--dataset", "ages", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["datasets"][0]["privacy_unit"] is None
    release = ["release", str(csv_file), "--column", "age", "--bounds", "18", "90", "--bins"]
    release += ["integers", "--epsilon", "0.4", "--out", str(tmp_path / "r.json")]
    assert main([*release, "--ledger", str(path), "--dataset", "ages"]) == 0
    capsys.readouterr()
    assert main(["budget", "show", str(path), "--dataset", "ages"]) == 0
    assert "privacy unit record" in capsys.readouterr().out
    assert main(["budget", "history", str(path), "--dataset", "ages", "--format", "json"]) == 0
    assert [c["unit"] for c in json.loads(capsys.readouterr().out)["charges"]] == ["record"]


def _ledger_and_output(tmp_path: Path, capsys: pytest.CaptureFixture) -> tuple[Path, Path]:
    """A fresh ledger with 'ages' at epsilon 1, and a release's output path."""
    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "1"])
    capsys.readouterr()
    return path, tmp_path / "r.json"


def _ledger_release(csv_file: Path, out: Path, path: Path) -> list[str]:
    """``treedp release`` of the ages at epsilon 0.4, charged to the ledger."""
    return ["release", str(csv_file), "--column", "age", "--bounds", "18", "90", "--bins",
            "integers", "--epsilon", "0.4", "--out", str(out), "--ledger", str(path),
            "--dataset", "ages"]  # fmt: skip


@pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX")
def test_a_sigterm_whose_exception_was_lost_still_stops_the_run(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGTERM during start-up whose exception the import machinery drops (seen while
    modules compile, ``PYTHONDONTWRITEBYTECODE=1``: the run went on to charge the ledger and
    release; an independent review) still stops the run before anything is charged: 143,
    one line, no output, the ledger untouched. Simulated by swallowing the exception."""
    import treedp.cli as cli

    real = cli._build_parser

    def swallowing() -> Any:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here and raises
        except cli._Terminated:
            pass  # what the import machinery did
        return real()

    path, out = _ledger_and_output(tmp_path, capsys)
    monkeypatch.setattr(cli, "_build_parser", swallowing)
    code = main(_ledger_release(csv_file, out, path))
    assert code == 128 + signal.SIGTERM
    assert capsys.readouterr().err.strip() == "treedp: terminated (SIGTERM)"
    assert not out.exists()
    with open_ledger(path, "ages") as led:
        assert len(led.history) == 0


def test_an_output_folder_that_refuses_files_is_found_before_the_charge(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``os.access`` says yes where creating a file still fails (root on ``/proc``, a read-only
    mount, an ACL): the output check creates and removes a file to tell, so the release is
    refused before the ledger is charged (it was charged, then failed; a budget review)."""
    import errno
    import tempfile

    from treedp import _atomic

    path = tmp_path / "b.db"
    main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "1"])
    real = tempfile.mkstemp
    out = tmp_path / "out"
    out.mkdir()

    def refusing(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs.get("dir", "")) == out:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args, **kwargs)

    monkeypatch.setattr(_atomic.tempfile, "mkstemp", refusing)
    capsys.readouterr()
    target = str(out / "r.json")
    ledger = ["--ledger", str(path), "--dataset", "ages"]
    code = main(["release", str(csv_file), "--column", "age", "--bounds", "18", "90", "--bins",
                 "integers", "--epsilon", "0.4", "--out", target, *ledger])  # fmt: skip
    assert code == 2
    assert "Read-only file system" in _error(capsys.readouterr().err)
    with open_ledger(path, "ages") as led:
        assert len(led.history) == 0
    assert list(out.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_lost_during_the_run_stops_it_before_the_charge(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
    signame: str,
) -> None:  # fmt: skip
    """A signal whose exception is dropped after the CLI's last check (a module compiled by
    a command's lazy import) is raised again at the charge, the library's commit point:
    nothing charged, nothing written, one line (a Ctrl-C was not recorded at all)."""
    import treedp.cli as cli
    from treedp.privacy.accountant import Accountant

    real = Accountant.cost

    def cost_after_a_lost_signal(self: Accountant, record: Any) -> Any:
        try:
            os.kill(os.getpid(), getattr(signal, signame))
            time.sleep(5)
        except (KeyboardInterrupt, cli._Terminated):
            pass  # what the import machinery did
        return real(self, record)

    path, out = _ledger_and_output(tmp_path, capsys)
    monkeypatch.setattr(Accountant, "cost", cost_after_a_lost_signal)
    code = main(_ledger_release(csv_file, out, path))
    signum = getattr(signal, signame)
    assert code == (130 if signum == signal.SIGINT else 128 + signum)
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not out.exists()
    with open_ledger(path, "ages") as led:
        assert len(led.history) == 0


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("grouped", [False, True])
def test_a_signal_after_the_release_is_written_still_reports_it(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
    grouped: bool,
) -> None:  # fmt: skip
    """The release file and the lines saying so go together: a signal arriving once the file
    is written is recorded, the release reported and 0 returned (it exited 130 with the file
    written and the ledger charged, and the natural retry charged again; an interrupt
    review)."""
    real_save = treedp.Release.save
    real_grouped_save = treedp.GroupedRelease.save

    def then_signal(real: Any) -> Any:
        def save(self: Any, target: Any) -> None:
            real(self, target)
            os.kill(os.getpid(), signal.SIGINT)

        return save

    monkeypatch.setattr(treedp.Release, "save", then_signal(real_save))
    monkeypatch.setattr(treedp.GroupedRelease, "save", then_signal(real_grouped_save))
    path, out = _ledger_and_output(tmp_path, capsys)
    if grouped:  # the same ages, each with a group
        ages = csv_file.read_text().splitlines()[1:]
        csv_file = tmp_path / "grouped.csv"
        csv_file.write_text(
            "age,sex\n" + "".join(f"{a},{'FM'[i % 2]}\n" for i, a in enumerate(ages))
        )
        out = tmp_path / "r.tdp"
    argv = _ledger_release(csv_file, out, path)
    if grouped:
        (tmp_path / "keys.txt").write_text("F\nM\n")
        argv += ["--by", "sex", "--keys", str(tmp_path / "keys.txt")]
    assert main(argv) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith(f"wrote {out}") and "remaining" in printed.out
    assert printed.err == "" and out.exists()
    with open_ledger(path, "ages") as led:
        assert len(led.history) == 1


def test_an_empty_ledger_file_names_the_init_command(
    csv_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """An interrupted ``budget init`` can leave an empty file: a spending command says how to
    make it a ledger, in CLI terms (it said only that it was not one; an interrupt review)."""
    path = tmp_path / "b.db"
    path.touch()
    code = main(["release", str(csv_file), "--column", "age", "--bounds", "18", "90", "--bins",
                 "integers", "--epsilon", "0.4", "--out", str(tmp_path / "r.json"), "--ledger",
                 str(path), "--dataset", "ages"])  # fmt: skip
    assert code == 2
    assert "treedp budget init" in _error(capsys.readouterr().err)
    assert main(["budget", "init", str(path), "--dataset", "ages", "--epsilon", "1"]) == 0


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_an_import_error_made_by_a_signal_is_the_signal(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, signame: str
) -> None:
    """numpy turns an interrupt inside its C-extension import into an ImportError ("bad
    install", 51 lines): with a signal recorded, the CLI says interrupted or terminated in one
    line (an interrupt review); without one, the ImportError is what it is."""
    import treedp.cli as cli
    from treedp import interrupts as _interrupts

    def broken() -> Any:
        _interrupts.RECEIVED.append(getattr(signal, signame))
        raise ImportError("Importing the numpy C-extensions failed.")

    monkeypatch.setattr(cli, "_build_parser", broken)
    code = main(["release", "x.csv"])
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert code == (130 if signame == "SIGINT" else 128 + signal.SIGTERM)
