"""``treedp stream init|step|show``, in process: exit codes, output, the ledger, the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import treedp
from treedp.cli import main


def test_init_step_show_with_a_ledger(tmp_path, capsys) -> None:
    led, state, day = tmp_path / "l.db", tmp_path / "s.json", tmp_path / "day1.csv"
    day.write_text("x\n1\n5\n7\n9\n")
    assert main(["budget", "init", str(led), "--dataset", "d", "--epsilon", "2"]) == 0
    argv = ["stream", "init", str(state), "--horizon", "365", "--epsilon", "1", "--bins", "10"]
    argv += ["--bounds", "0", "10", "--ledger", str(led), "--dataset", "d"]
    assert main(argv) == 0
    assert "365 steps" in capsys.readouterr().out
    with treedp.open_ledger(led, "d") as ledger:
        assert len(ledger.history) == 1 and ledger.history[0].record.parameters["horizon"] == 365
    assert main(["stream", "step", str(state), str(day), "--column", "x"]) == 0
    assert capsys.readouterr().out.startswith("step 1/365: count ")
    assert main(["stream", "step", str(state), str(day), "--column", "x", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["step"] == 2 and len(out["histogram"]) == 10
    assert main(["stream", "show", str(state)]) == 0
    shown = capsys.readouterr().out
    assert "step 2 of 365" in shown and "epsilon=1" in shown
    count = f"count {treedp.cli._common.fmt_count(out['count'])} "
    assert f"step 2/365 (last answer): {count}" in shown and "quartiles: " in shown
    assert main(["stream", "show", str(state), "--format", "json"]) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["step"] == 2 and facts["last"] == out and facts["bins"] == 10
    with treedp.open_ledger(led, "d") as ledger:
        assert len(ledger.history) == 1  # steps charge nothing


def test_errors_are_one_line_and_exit_2(tmp_path, capsys) -> None:
    state = tmp_path / "c.json"
    assert main(["stream", "init", str(state), "--horizon", "1", "--rho", "0.5"]) == 0
    assert main(["stream", "step", str(state), "--count", "4"]) == 0
    capsys.readouterr()
    before = state.read_bytes()
    assert main(["stream", "step", str(state), "--count", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "horizon" in err
    assert state.read_bytes() == before
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["stream", "show", str(bad)]) == 2
    assert "state file" in capsys.readouterr().err
    assert main(["stream", "init", str(state), "--horizon", "0", "--epsilon", "1"]) == 2
    assert "horizon" in capsys.readouterr().err
    assert main(["stream", "step", str(state)]) == 2


def test_person_unit_over_the_stream(tmp_path, capsys) -> None:
    state, day = tmp_path / "s.json", tmp_path / "day.csv"
    day.write_text("x,pid\n1,a\n5,a\n7,b\n")
    argv = ["stream", "init", str(state), "--horizon", "4", "--epsilon", "1"]
    argv += ["--privacy-unit", "pid", "--max-contributions", "2", "--insecure-seed", "1"]
    assert main(argv) == 0
    assert "privacy unit person:pid" in capsys.readouterr().out
    assert main(["stream", "step", str(state), str(day), "--column", "x"]) == 0
    assert main(["stream", "show", str(state)]) == 0
    shown = capsys.readouterr().out
    assert "person:pid" in shown and "at most 2 record(s)" in shown
    assert "pid" in state.read_text() and ",a" not in state.read_text()
    assert main(["stream", "step", str(state), "--count", "3"]) == 2
    assert "batch" in capsys.readouterr().err
    bad = ["stream", "init", str(tmp_path / "t.json"), "--horizon", "4", "--epsilon", "1"]
    assert main([*bad, "--privacy-unit", "pid"]) == 2
    assert "--max-contributions" in capsys.readouterr().err


def test_step_quiet_prints_answers_only(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    state = tmp_path / "s.json"
    args = ["stream", "init", str(state), "--horizon", "4", "--epsilon", "1"]
    assert main([*args, "--bins", "4", "--bounds", "0", "4", "--insecure-seed", "1"]) == 0
    day = tmp_path / "d.csv"
    day.write_text("x\n0.5\n1.5\n2.5\n")
    capsys.readouterr()
    assert main(["stream", "step", str(state), str(day), "--column", "x", "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4  # the count, then three quartiles
    assert all(float(line) == float(line) for line in lines)


@pytest.mark.parametrize(
    ("budget", "option"),
    [
        (["--rho", "0"], "--rho"),
        (["--epsilon", "0", "--delta", "1e-6"], "--epsilon"),
        (["--epsilon", "1", "--delta", "0"], "--delta"),
    ],
)
def test_a_bad_target_is_one_line_naming_the_option(tmp_path, capsys, budget, option) -> None:
    state = tmp_path / "s.json"
    assert main(["stream", "init", str(state), "--horizon", "4", *budget]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("treedp: error: ") and option in err
    assert "privacy" not in err and not state.exists()


def test_an_auto_bound_is_one_line_saying_why(tmp_path, capsys) -> None:
    state = tmp_path / "s.json"
    argv = ["stream", "init", str(state), "--horizon", "4", "--epsilon", "1"]
    assert main([*argv, "--privacy-unit", "pid", "--max-contributions", "auto"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-contributions auto" in err and "before any step" in err
    assert not state.exists()
    assert main([*argv, "--privacy-unit", "pid", "--max-contributions", "x"]) == 2
    assert "expected a positive integer, not 'x'" in capsys.readouterr().err


def test_a_seeded_stream_marks_every_answer(tmp_path, capsys) -> None:
    """A stream begun with --insecure-seed says so at every step, in text and JSON, and in
    the Python reprs, whether or not the step repeats the flag (it said so at init only; a new
    user's run); an OS-random stream carries no mark."""
    seeded, plain = tmp_path / "s.json", tmp_path / "p.json"
    base = ["--horizon", "4", "--epsilon", "1"]
    assert main(["stream", "init", str(seeded), *base, "--insecure-seed", "1"]) == 0
    assert main(["stream", "init", str(plain), *base]) == 0
    capsys.readouterr()
    assert main(["stream", "step", str(seeded), "--count", "3"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("[SEEDED: not for publication]")
    assert main(["stream", "step", str(seeded), "--count", "3", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["seeded"] is True
    assert main(["stream", "step", str(plain), "--count", "3"]) == 0
    assert "SEEDED" not in capsys.readouterr().out
    stream = treedp.load_continual(seeded, autosave=False)
    assert stream.seeded and "[SEEDED" in repr(stream)
    assert "[SEEDED" in repr(stream.step(2))
    assert not treedp.load_continual(plain, autosave=False).seeded


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_save_still_reports_the_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    signame: str,
) -> None:  # fmt: skip
    """The saved state and the printed answer go together: a signal arriving once the state
    is written is recorded, the answer printed and the step reported as taken (it exited
    130/143 with nothing printed, though the step was saved, and the natural retry fed the
    same records twice; an independent review)."""
    import os
    import signal

    from treedp.continual.stream import ContinualStream

    state = tmp_path / "c.json"
    assert main(["stream", "init", str(state), "--horizon", "8", "--epsilon", "1"]) == 0
    capsys.readouterr()
    real = ContinualStream.save

    def save_then_signal(self: ContinualStream, path: object) -> None:
        real(self, path)  # type: ignore[arg-type]
        os.kill(os.getpid(), getattr(signal, signame))

    monkeypatch.setattr(ContinualStream, "save", save_then_signal)
    assert main(["stream", "step", str(state), "--count", "4"]) == 0
    assert capsys.readouterr().out.startswith("step 1/8: count ")
    assert treedp.load_continual(state).t == 1


def test_a_deferred_signal_does_not_outlive_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal recorded while a step was reported is forgotten when the command returns: a
    library charge in the same process afterwards is not interrupted by it."""
    import os
    import signal

    from treedp import interrupts as _interrupts
    from treedp.continual.stream import ContinualStream

    state = tmp_path / "c.json"
    assert main(["stream", "init", str(state), "--horizon", "8", "--epsilon", "1"]) == 0
    real = ContinualStream.save

    def save_then_signal(self: ContinualStream, path: object) -> None:
        real(self, path)  # type: ignore[arg-type]
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(ContinualStream, "save", save_then_signal)
    assert main(["stream", "step", str(state), "--count", "4"]) == 0
    assert _interrupts.RECEIVED == []
    acc = treedp.Accountant(treedp.PureDP(1.0))
    treedp.release_cdf([1, 2, 3], bounds=(0, 4), bins=4, epsilon=0.5, accountant=acc)
    assert len(acc.history) == 1


def test_stream_refusals_are_in_command_line_terms(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """An existing state file, a negative count and a bad count's help pointer speak the
    command line (they named the library's 'path' and 'batch' and `treedp stream --help`; a
    new user's run)."""
    state = tmp_path / "s.json"
    init = ["stream", "init", str(state), "--horizon", "4", "--epsilon", "1"]
    assert main(init) == 0
    capsys.readouterr()
    assert main(init) == 2
    err = capsys.readouterr().err
    assert "'path'" not in err and "load_continual" not in err and "stream step" in err
    assert main(["stream", "step", str(state), "--count", "-5"]) == 2
    assert capsys.readouterr().err.strip() == "treedp: error: --count must be 0 or more."
    assert main(["stream", "step", str(state), "--count", "1.5"]) == 2
    assert "(see 'treedp stream step --help')" in capsys.readouterr().err
