"""Real databases for the SQL engines: DuckDB and SQLite in-process, and a PostgreSQL server
started in a temporary directory (skipped, with the reason, when no server binaries exist)."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _pg_bin() -> Path | None:
    """The directory of initdb / pg_ctl: on PATH, /usr/local/bin, or Debian's layout."""
    found = shutil.which("initdb")
    candidates = [found and str(Path(found).parent), "/usr/local/bin"]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in candidates:
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user() -> tuple[int, int] | None:
    """PostgreSQL refuses to run as root: run it as the 'postgres' (or 'nobody') user."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    pytest.skip("running as root and no 'postgres' or 'nobody' user to start PostgreSQL as")
    return None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server of its own, in a temporary directory, for the session."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install treedp[sql])")
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH, in /usr/local/bin or "
            "/usr/lib/postgresql/*/bin; install Debian's 'postgresql' package"
        )
    user = _as_user()
    root = Path(tempfile.mkdtemp(prefix="treedp-pg-"))
    data = root / "data"
    if user is not None:
        os.chown(root, *user)

    def run(*args: str) -> None:
        kwargs: dict[str, Any] = {"check": True, "capture_output": True}
        if user is not None:
            kwargs.update(user=user[0], group=user[1])
        subprocess.run(args, **kwargs)

    port = _free_port()
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "treedp", "-A", "trust", "--no-sync")
        opts = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w",
            "start")  # fmt: skip
    except (subprocess.CalledProcessError, OSError) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"PostgreSQL did not start: {type(exc).__name__}")
    url = f"postgresql://treedp@127.0.0.1:{port}/postgres"
    try:
        yield url
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, OSError):
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        time.sleep(0.1)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg(postgres_url: str) -> Iterator[Any]:
    """A fresh connection with an empty schema of its own (dropped afterwards)."""
    import psycopg

    con = psycopg.connect(postgres_url, autocommit=True)
    con.execute("DROP SCHEMA IF EXISTS t CASCADE")
    con.execute("CREATE SCHEMA t")
    con.execute("SET search_path TO t")
    try:
        yield con
    finally:
        con.close()
