"""SQLite connections shared by threads (``treedp.profile`` reads columns in threads): every
statement goes through one lock, so a query running registered Python functions and another
thread's statement on the same connection cannot deadlock (a profile hung in the suite)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent(
    """
    import sqlite3, sys, threading
    from treedp.engines.sql import sqlite as eng
    from treedp.engines.sql.source import SqlSource

    con = sqlite3.connect(":memory:", check_same_thread=False)
    con.execute("CREATE TABLE t (x)")
    con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(100_000)])
    data = SqlSource(con, "SELECT x FROM t")

    def query():
        for _ in range(10):
            with eng._session(data, {"f": lambda v: v + 1}):
                eng._run(data, "SELECT sum(f(x)) FROM t", [])

    def schema():
        for _ in range(1000):
            eng._columns(data)

    threads = [threading.Thread(target=query), threading.Thread(target=schema)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("done")
    """
)


def test_statements_from_two_threads_on_one_connection_finish() -> None:
    """In a child process (a deadlock holds the GIL, so only a kill ends it): a query whose
    Python function runs for every row, and schema reads on the same connection from another
    thread. Without the lock around ``_columns`` this hangs."""
    proc = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
