"""Counting inside DuckDB (Parquet) and PostgreSQL against the database's own GROUP BY.

In the same process and run: the database's ``SELECT floor(v·B) AS b, count(*) ... GROUP BY
b`` (the issue's baseline: no clamping, no missing values, no exact edge check — the lower
bound of the cost) and treedp's pushed-down exact rule (``count_source`` on a DuckDB relation
or a :class:`treedp.SqlSource`; only ``B`` counts come back), best of ``--repeat`` each, and
the peak RSS of this Python process. The data (``random()`` doubles) are created in a
temporary directory and deleted afterwards. PostgreSQL: a server of its own is started in the
temporary directory with ``initdb``/``pg_ctl`` (Debian's ``postgresql`` package). Usage::

    python benchmarks/databases.py --duckdb-rows 10000000 100000000 --pg-rows 10000000

The last column is the baseline plus one comparison per row with a computed edge, the least
any exact rule adds to it (measured in the same rounds); for explicit edges also the exact
``ASOF LEFT JOIN`` alternative to treedp's binary search (:func:`asof_sql`, not adopted).
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import treedp
from treedp.engines.dispatch import count_source


def interleaved(fns: list[Callable[[], Any]], repeat: int) -> list[float]:
    """Best of ``repeat`` for each, run in rounds (one of each per round), so that a change in
    the machine's load falls on all of them."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [min(t) for t in times]


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def asof_sql(source: str, edges: list[float]) -> str:
    """The explicit-edges count by an ``ASOF LEFT JOIN`` on a ``VALUES`` list of the inner
    edges ``e_1 .. e_{B-2}``, exact as treedp's rule: NULL/NaN, ``x < e_1`` and ``x >=
    e_{B-1}`` decided first, only in-range rows matched (an equality key), ``B`` rows back."""
    top = len(edges) - 2
    lo, hi = f"CAST('{edges[1]!r}' AS DOUBLE)", f"CAST('{edges[-2]!r}' AS DOUBLE)"
    values = ", ".join(f"({j}, CAST('{edges[j]!r}' AS DOUBLE))" for j in range(1, top))
    o = (
        f"CASE WHEN v IS NULL OR isnan(v) THEN -1 WHEN v < {lo} THEN 0 WHEN v >= {hi} "
        f"THEN {top} END"
    )
    return (
        f"SELECT coalesce(o, e.j) AS b, count(*) FROM (SELECT v, o, o IS NULL AS k FROM "
        f"(SELECT v, {o} AS o FROM {source})) AS s ASOF LEFT JOIN (SELECT j, edge, true AS k "
        f"FROM (VALUES {values}) AS e0(j, edge)) AS e ON s.k = e.k AND s.v >= e.edge GROUP BY b"
    )


def duckdb_parquet(
    rows: int, n_bins: int, repeat: int, tmp: Path, explicit: bool = True
) -> list[str]:
    import duckdb

    path = tmp / f"v{rows}.parquet"
    con = duckdb.connect()
    con.execute(f"COPY (SELECT random() AS v FROM range({rows})) TO '{path}' (FORMAT parquet)")
    threads = con.execute("SELECT current_setting('threads')").fetchone()
    base = f"SELECT floor(v * {n_bins})::BIGINT AS b, count(*) FROM '{path}' GROUP BY b"
    # the least an exact rule adds: one comparison per row with a computed edge
    one_cmp = (
        f"SELECT b + CAST(v >= (b + 1) * {1 / n_bins!r} AS INTEGER) AS c, count(*) FROM (SELECT "
        f"v, floor(v * {n_bins}) AS b FROM '{path}') GROUP BY c"
    )
    src = treedp.SqlSource(con, f"SELECT v FROM '{path}'")
    lines = []
    for label, bins in (
        ("equal-width", treedp.make_bins(bounds=(0, 1), bins=n_bins)),
        ("explicit edges", treedp.make_bins(edges=[i / n_bins for i in range(n_bins + 1)])),
    ):
        if label == "explicit edges" and (rows > 10_000_000 or not explicit):
            continue  # explicit edges: measured at 10^7 only
        fns = [
            lambda: con.execute(base).fetchall(),
            lambda: con.execute(one_cmp).fetchall(),
            lambda b=bins: count_source(src, column="v", bins=b),
        ]
        if label == "explicit edges":
            asof = asof_sql(f"'{path}'", [float(e) for e in bins.edges])
            fns.append(lambda q=asof: con.execute(q).fetchall())
        t_base, t_cmp, t_tdp, *t_asof = interleaved(fns, repeat)
        other = f"; ASOF join: {t_asof[0] / t_base:.2f}x" if t_asof else ""
        if t_asof:  # the same counts as treedp's, bin for bin
            got = dict(con.execute(asof).fetchall())
            want = count_source(src, column="v", bins=bins).counts.tolist()
            assert [got.get(j, 0) for j in range(bins.n_bins)] == want
        lines.append(
            f"| DuckDB {duckdb.__version__} ({threads[0] if threads else '?'} threads), Parquet, "
            f"{rows:.0e} rows, {label} | {t_base:.3f} s | {t_tdp:.3f} s | "
            f"{t_tdp / t_base:.2f}x | one comparison per row: {t_cmp / t_base:.2f}x{other} |"
        )
        print(lines[-1], flush=True)
    con.close()
    path.unlink()
    return lines


def _pg_bin() -> Path | None:
    found = shutil.which("initdb")
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for c in [found and str(Path(found).parent), "/usr/local/bin", *debian]:
        if c and (Path(c) / "initdb").exists():
            return Path(c)
    return None


def postgres(rows: int, n_bins: int, repeat: int, tmp: Path) -> list[str]:
    import psycopg

    bindir = _pg_bin()
    if bindir is None:
        return ["| PostgreSQL: no server binaries (install Debian's postgresql) | | | |"]
    kw: dict[str, Any] = {"check": True, "capture_output": True}
    if os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam("postgres")
        kw.update(user=entry.pw_uid, group=entry.pw_gid)
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tmp / "pg"
    subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "bench", "-A", "trust",
                    "--no-sync"], **kw)  # fmt: skip
    opts = f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l",
                    str(tmp / "pg.log"), "-w", "start"], **kw)  # fmt: skip
    try:
        con = psycopg.connect(f"postgresql://bench@127.0.0.1:{port}/postgres", autocommit=True)
        con.execute(f"CREATE TABLE t AS SELECT random() AS v FROM generate_series(1, {rows})")
        con.execute("VACUUM ANALYZE t")
        workers = con.execute("SHOW max_parallel_workers_per_gather").fetchone()
        base = f"SELECT floor(v * {n_bins})::int8 AS b, count(*) FROM t GROUP BY b"
        one_cmp = (
            f"SELECT b + (v >= (b + 1) * {1 / n_bins!r})::int AS c, count(*) FROM (SELECT v, "
            f"floor(v * {n_bins}) AS b FROM t) AS s GROUP BY c"
        )
        src = treedp.SqlSource(con, "SELECT v FROM t")
        bins = treedp.make_bins(bounds=(0, 1), bins=n_bins)
        t_base, t_cmp, t_tdp = interleaved(
            [
                lambda: con.execute(base).fetchall(),
                lambda: con.execute(one_cmp).fetchall(),
                lambda: count_source(src, column="v", bins=bins),
            ],
            repeat,
        )
        version = con.execute("SHOW server_version").fetchone()
        con.close()
        line = (
            f"| PostgreSQL {version[0] if version else '?'} ({workers[0] if workers else '?'} "
            f"parallel workers), table, {rows:.0e} rows, equal-width | "
            f"{t_base:.3f} s | {t_tdp:.3f} s | {t_tdp / t_base:.2f}x | one comparison per row: "
            f"{t_cmp / t_base:.2f}x |"
        )
        print(line, flush=True)
        return [line]
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                        "stop"], **kw)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duckdb-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--pg-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--bins", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-explicit", action="store_true", help="skip explicit edges")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}, cpus: {os.cpu_count()}", flush=True)
    print("| input | baseline GROUP BY | treedp (exact rule) | ratio | floor |")
    print("|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="treedp-bench-"))
    try:
        for rows in args.duckdb_rows:
            duckdb_parquet(rows, args.bins, args.repeat, tmp, not args.no_explicit)
        for rows in args.pg_rows:
            postgres(rows, args.bins, args.repeat, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"peak RSS of this process: {rss_mb():.0f} MB; load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
