"""No private spill file outlives a grouped file release: not on SIGTERM, SIGHUP or SIGKILL.

A grouped release from files with a privacy unit spills (person hash, key, bin) rows to
temporary files between its two passes. Round 3 found named files under ``$TMPDIR`` left
behind by SIGTERM (what ``timeout``, systemd, Kubernetes and Slurm send). The spill files are
now anonymous (unlinked from the start), so the spill folder is empty *while* the release runs
and after any signal; the CLI also unwinds SIGTERM and SIGHUP like Ctrl-C (one line, exit
``128 + n``, no partial output). Each test runs a real process, paused inside the second pass
(its spill files full), and signals it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

_PAUSE = textwrap.dedent(
    """
    import sys, time
    import treedp.engines.files.grouped as gf

    real = gf.bound_contributions

    def paused(*args, **kwargs):  # pass 2 has started: every row is spilled
        open(sys.argv[1], "w").close()
        time.sleep(120)
        return real(*args, **kwargs)

    gf.bound_contributions = paused
    """
)

_LIBRARY = _PAUSE + textwrap.dedent(
    """
    import treedp
    treedp.release_grouped(sys.argv[2], column="v", by="k", keys=[0, 1, 2], privacy_unit="p",
                       max_contributions=2, epsilon=1.0, bounds=(0, 1), bins=8)
    """
)

_CLI = _PAUSE + textwrap.dedent(
    """
    from treedp.cli import main
    sys.exit(main(["release", sys.argv[2], "--column", "v", "--by", "k", "--keys", sys.argv[3],
                   "--privacy-unit", "p", "--max-contributions", "2", "--epsilon", "1",
                   "--bounds", "0", "1", "--bins", "8", "--out", sys.argv[4], "--quiet"]))
    """
)


def _table(folder: Path) -> Path:
    rng = np.random.default_rng(0)
    n = 20_000
    path = folder / "rows.csv"
    with path.open("w") as f:
        f.write("v,k,p\n")
        for v, k, p in zip(
            rng.random(n), rng.integers(0, 3, n), rng.integers(0, 2000, n), strict=True
        ):
            f.write(f"{v:.4f},{k},id{p}\n")
    return path


def _default_signals() -> None:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _run_paused(tmp_path: Path, script: str, *args: str) -> tuple[subprocess.Popen[str], Path]:
    spill = tmp_path / "spill"
    spill.mkdir()
    marker = tmp_path / "paused"
    env = {**os.environ, "TMPDIR": str(spill)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(marker), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,  # a suite run under nohup would pass SIGHUP ignored
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            _, err = proc.communicate()
            pytest.fail(f"the release never reached its second pass: {err[-2000:]}")
        time.sleep(0.05)
    return proc, spill


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_signalled_library_release_leaves_no_spill_file(tmp_path: Path, signum: int) -> None:
    proc, spill = _run_paused(tmp_path, _LIBRARY, str(_table(tmp_path)))
    assert list(spill.iterdir()) == []  # nothing named, even while the rows are spilled
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    assert proc.returncode == -signum
    assert list(spill.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_the_cli_unwinds_sigterm_and_sighup_in_one_line(tmp_path: Path, signum: int) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("0\n1\n2\n")
    out = tmp_path / "release.zip"
    proc, spill = _run_paused(tmp_path, _CLI, str(_table(tmp_path)), str(keys), str(out))
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert err.strip().splitlines() == [f"treedp: terminated ({signal.Signals(signum).name})"]
    assert list(spill.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keys.txt", "paused", "rows.csv", "spill"]
