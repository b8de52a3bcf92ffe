"""Counting inside DuckDB (Parquet) and PostgreSQL against the database's own GROUP BY.

In the same process and run: the database's ``SELECT floor(v·B) AS b, count(*) ... GROUP BY
b`` (the issue's baseline: no clamping, no missing values, no exact edge check — the lower
bound of the cost) and treedp's pushed-down exact rule (``count_source`` on a DuckDB relation
or a :class:`treedp.SqlSource`; only ``B`` counts come back), best of ``--repeat`` each, and
the peak RSS of this Python process. The data (``random()`` doubles) are created in a
temporary directory and deleted afterwards. PostgreSQL: a server of its own is started in the
temporary directory with ``initdb``/``pg_ctl`` (Debian's ``postgresql`` package). Usage::

    python benchmarks/databases.py --duckdb-rows 10000000 100000000 --pg-rows 10000000 \
        --datetime-rows 10000000 --sqlite-rows 1000000 200000 --outside-rows 10000000

Each equal-width layout is timed for ``B = --bins`` and for 1,000 bins over ``(0, 1)``, whose
edges ``e_0 + (e_B - e_0)·(j/B)`` are not ``j·step + e_0`` (the baseline stays ``floor(v·B)``).
SQLite (explicit and equal-width edges, a registered ``bisect``) and DuckDB's explicit
datetime edges (the search over integer ticks) are timed against the ``CASE`` tree they
replaced, same run.

The last column is the baseline plus one comparison per row with a computed edge, the least
any exact rule that compares adds to it (measured in the same rounds); for explicit edges also
the exact ``ASOF LEFT JOIN`` alternative to treedp's binary search (:func:`asof_sql`, not
adopted). Equal-width rows also time the fast rule of before session 8
(:func:`previous_rule`) and give the CPU-time ratios of the same runs (DuckDB: this process;
PostgreSQL: the backend, without parallel workers), steadier than wall time on a loaded
machine. ``--outside-rows``: the same with 1% of the values outside the bounds, where
DuckDB's statistics cannot decide the range test.
"""

from __future__ import annotations

import argparse
import dataclasses
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

import numpy as np

import treedp
from treedp.engines.dispatch import count_source
from treedp.engines.sql import bucket
from treedp.engines.sql.duck import DIALECT as DUCK
from treedp.engines.sql.postgres import DIALECT as PG
from treedp.engines.sql.rule import Dialect, count_sql
from treedp.engines.sql.sqlite import DIALECT as LITE


def other_rule(dialect: Dialect, rule: str | None = None) -> Dialect:
    """The dialect without the one-GROUP-BY rule (``rule``: and with that bin rule), to time
    the rules it replaced in the same run."""
    if rule is None:
        return dataclasses.replace(dialect, one_group_by=False)
    return dataclasses.replace(dialect, one_group_by=False, rule=lambda bins: rule)


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


def previous_rule(dialect: Dialect) -> Dialect:
    """The fast rule of before session 8, to time in the same run: DuckDB's key a double
    with NULL for missing (no perfect-hash ``GROUP BY``); PostgreSQL's ``k`` in a subquery
    fenced by ``OFFSET 0``."""
    if dialect.name == "duckdb":
        return dataclasses.replace(dialect, integer_key=False)
    run = dialect.run

    def fenced(data: Any, text: str, params: list[Any]) -> Any:
        return run(data, text.replace(") AS s2 GROUP BY", " OFFSET 0) AS s2 GROUP BY"), params)

    return dataclasses.replace(dialect, inline_bin=False, run=fenced)


def load() -> str:
    """The 1-minute load average, for each figure."""
    return f"load {os.getloadavg()[0]:.1f}"


def with_cpu(fns: list[Callable[[], Any]], clock: Callable[[], float]) -> list[Callable[[], Any]]:
    """Each function also adds its CPU seconds (``clock()`` before and after) to
    ``CPU[i]``: under load the wall-clock ratio swings, the CPU ratio much less."""
    CPU.clear()
    CPU.extend([] for _ in fns)

    def timed(i: int, fn: Callable[[], Any]) -> Any:
        c0 = clock()
        out = fn()
        CPU[i].append(clock() - c0)
        return out

    return [lambda i=i, fn=fn: timed(i, fn) for i, fn in enumerate(fns)]


CPU: list[list[float]] = []


def cpu_ratios(labels: list[str]) -> str:
    """``label cpu ratio`` of each timed function against the first (the baseline)."""
    base = min(CPU[0])
    return ", ".join(f"{lab} {min(c) / base:.2f}x" for lab, c in zip(labels, CPU[1:], strict=True))


def backend_cpu(con: Any) -> Callable[[], float]:
    """The CPU seconds of the PostgreSQL backend serving ``con`` (``/proc``; parallel workers
    not included), or a clock that stays at 0 when ``/proc`` is not readable."""
    pid = con.execute("SELECT pg_backend_pid()").fetchone()[0]
    tick = os.sysconf("SC_CLK_TCK")

    def clock() -> float:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / tick

    return clock


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
    rows: int, n_bins: int, repeat: int, tmp: Path, explicit: bool = True, outside: bool = False
) -> list[str]:
    """``outside``: 1% of the values outside the bounds (``random()·1.02 - 0.01``), so that
    DuckDB's statistics cannot decide the range test."""
    import duckdb

    path = tmp / f"v{rows}.parquet"
    con = duckdb.connect()
    make = "random() * 1.02 - 0.01" if outside else "random()"
    con.execute(f"COPY (SELECT {make} AS v FROM range({rows})) TO '{path}' (FORMAT parquet)")
    threads = con.execute("SELECT current_setting('threads')").fetchone()
    base = f"SELECT floor(v * {n_bins})::BIGINT AS b, count(*) FROM '{path}' GROUP BY b"
    # the least an exact rule adds: one comparison per row with a computed edge
    one_cmp = (
        f"SELECT b + CAST(v >= (b + 1) * {1 / n_bins!r} AS INTEGER) AS c, count(*) FROM (SELECT "
        f"v, floor(v * {n_bins}) AS b FROM '{path}') GROUP BY c"
    )
    src = treedp.SqlSource(con, f"SELECT v FROM '{path}'")
    lines = []
    where = ", 1% outside the bounds" if outside else ""
    for label, bins in (
        ("equal-width", treedp.make_bins(bounds=(0, 1), bins=n_bins)),
        ("equal-width, 1000 bins", treedp.make_bins(bounds=(0, 1), bins=1000)),
        ("explicit edges", treedp.make_bins(edges=[i / n_bins for i in range(n_bins + 1)])),
    ):
        if label == "explicit edges" and (rows > 10_000_000 or not explicit or outside):
            continue  # explicit edges: measured at 10^7 only
        fns = [
            lambda: con.execute(base).fetchall(),
            lambda: con.execute(one_cmp).fetchall(),
            lambda b=bins: count_source(src, column="v", bins=b),
        ]
        if label.startswith("equal-width"):  # the rule of before, same run
            fns.append(lambda b=bins: count_sql(previous_rule(DUCK), src, "v", b, "error"))
        if label == "explicit edges":
            asof = asof_sql(f"'{path}'", [float(e) for e in bins.edges])
            fns.append(lambda q=asof: con.execute(q).fetchall())
        t_base, t_cmp, t_tdp, *t_asof = interleaved(with_cpu(fns, time.process_time), repeat)
        if label.startswith("equal-width"):
            other = (
                f"; previous fast rule: {t_asof[0] / t_base:.2f}x; CPU: "
                f"{cpu_ratios(['one comparison', 'treedp', 'previous'])}; {load()}"
            )
            t_asof = []
        else:
            other = f"; ASOF join: {t_asof[0] / t_base:.2f}x" if t_asof else ""
        if t_asof:  # the same counts as treedp's, bin for bin
            got = dict(con.execute(asof).fetchall())
            want = count_source(src, column="v", bins=bins).counts.tolist()
            assert [got.get(j, 0) for j in range(bins.n_bins)] == want
        lines.append(
            f"| DuckDB {duckdb.__version__} ({threads[0] if threads else '?'} threads), Parquet, "
            f"{rows:.0e} rows{where}, {label} | {t_base:.3f} s | {t_tdp:.3f} s | "
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


def postgres(rows: int, n_bins: int, repeat: int, tmp: Path, explicit: bool = True) -> list[str]:
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
    data = tmp / f"pg{rows}"
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
        version = con.execute("SHOW server_version").fetchone()
        lines = []
        for label, b_count in (("equal-width", n_bins), ("equal-width, 1000 bins", 1000)):
            bins = treedp.make_bins(bounds=(0, 1), bins=b_count)
            t_base, t_cmp, t_tdp, t_prev = interleaved(
                with_cpu(
                    [
                        lambda: con.execute(base).fetchall(),
                        lambda: con.execute(one_cmp).fetchall(),
                        lambda b=bins: count_source(src, column="v", bins=b),
                        lambda b=bins: count_sql(previous_rule(PG), src, "v", b, "error"),
                    ],
                    backend_cpu(con),
                ),
                repeat,
            )
            cpu = cpu_ratios(["one comparison", "treedp", "previous"])
            lines.append(
                f"| PostgreSQL {version[0] if version else '?'} ({workers[0] if workers else '?'}"
                f" parallel workers), table, {rows:.0e} rows, {label} | "
                f"{t_base:.3f} s | {t_tdp:.3f} s | {t_tdp / t_base:.2f}x | one comparison per "
                f"row: {t_cmp / t_base:.2f}x; previous fast rule: {t_prev / t_base:.2f}x; "
                f"backend CPU: {cpu}; {load()} |"
            )
            print(lines[-1], flush=True)
        head = f"| PostgreSQL {version[0] if version else '?'}, table, {rows:.0e} rows"
        if explicit:
            lines += pg_explicit(con, head, n_bins, repeat, rows <= 1_000_000)
        con.close()
        return lines
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                        "stop"], **kw)  # fmt: skip


def sqlite_file(rows: int, n_bins: int, repeat: int, tmp: Path) -> list[str]:
    """SQLite: its own GROUP BY, treedp's registered bisect, and the CASE tree it replaced
    (over 16,001 edges only up to 300,000 rows: it takes minutes beyond)."""
    import sqlite3

    path = tmp / f"b{rows}.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL)")
    con.execute(
        f"WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < {rows}) "
        "INSERT INTO t SELECT (random() / 18446744073709551616.0) + 0.5 FROM r"
    )
    con.commit()
    src = treedp.SqlSource(con, "SELECT v FROM t")
    geometric = np.concatenate(
        [-np.geomspace(1e9, 1e-6, 8000), [0.0], np.geomspace(1e-6, 1e9, 8000)]
    )
    lines = []
    for label, bins in (
        ("equal-width", treedp.make_bins(bounds=(0, 1), bins=n_bins)),
        ("explicit edges", treedp.make_bins(edges=[i / n_bins for i in range(n_bins + 1)])),
        ("16,001 geometric edges", treedp.make_bins(edges=geometric)),
    ):
        b = bins.n_bins
        base = f"SELECT CAST(v * {b} AS INTEGER) AS b, count(*) FROM t GROUP BY b"
        fns = [
            lambda q=base: con.execute(q).fetchall(),
            lambda b=bins: count_source(src, column="v", bins=b),
        ]
        if b <= 1024 or rows <= 300_000:
            fns.append(lambda b=bins: count_sql(other_rule(LITE, "case"), src, "v", b, "error"))
        t_base, t_tdp, *t_tree = interleaved(fns, repeat)
        tree = f"{t_tree[0] / t_base:.2f}x" if t_tree else "not run"
        lines.append(
            f"| SQLite {sqlite3.sqlite_version}, file, {rows:.0e} rows, {label} | {t_base:.3f} s "
            f"| {t_tdp:.3f} s | {t_tdp / t_base:.2f}x | CASE tree: {tree} |"
        )
        print(lines[-1], flush=True)
    con.close()
    path.unlink()
    return lines


def pg_explicit(con: Any, head: str, n_bins: int, repeat: int, tree: bool) -> list[str]:
    """PostgreSQL's explicit edges, numbers (the table ``t`` of ``random()`` doubles) and
    ``timestamp`` ticks (a table ``td`` made here): treedp's ``width_bucket`` behind the cheap
    predicates against the database's own GROUP BY, the same without the predicates (the
    previous numeric rule), a bare ``width_bucket`` GROUP BY and, if ``tree`` (up to 10^6
    rows: it is ~100x slower), the ``CASE`` tree (the previous datetime rule), same rounds."""
    bins = treedp.make_bins(edges=[i / n_bins for i in range(n_bins + 1)])
    inner = [float(e) for e in bins.edges[1:-1]]
    base = f"SELECT floor(v * {n_bins})::int8 AS b, count(*) FROM t GROUP BY b"
    bare = (
        "SELECT CASE WHEN v IS NULL OR v = 'NaN'::float8 THEN -1 ELSE width_bucket(v, "
        "%s::float8[]) END AS b, count(*) FROM t GROUP BY b"
    )
    src = treedp.SqlSource(con, "SELECT v FROM t")

    def no_predicates() -> Any:  # treedp's query with the previous rule
        bucket._PREDICATES = False
        try:
            return count_source(src, column="v", bins=bins)
        finally:
            bucket._PREDICATES = True

    t_base, t_tdp, t_old, t_bare, *t_tree = interleaved(
        [
            lambda: con.execute(base).fetchall(),
            lambda: count_source(src, column="v", bins=bins),
            no_predicates,
            lambda: con.execute(bare, [inner]).fetchall(),
        ]
        + ([lambda: count_sql(other_rule(PG, "case"), src, "v", bins, "error")] if tree else []),
        repeat,
    )
    tree_note = f"; CASE tree: {t_tree[0] / t_base:.2f}x" if t_tree else ""
    lines = [
        f"{head}, {bins.n_bins} explicit edges | {t_base:.3f} s | {t_tdp:.3f} s | "
        f"{t_tdp / t_base:.2f}x | without the predicates (previous rule): "
        f"{t_old / t_base:.2f}x; bare width_bucket GROUP BY: {t_bare / t_base:.2f}x{tree_note} |"
    ]
    print(lines[-1], flush=True)
    con.execute(
        "CREATE TABLE td AS SELECT TIMESTAMP '2000-01-01' + (floor(random() * 1e15)::int8 * "
        "interval '1 microsecond') AS t FROM t"
    )
    con.execute("VACUUM ANALYZE td")
    lo = np.datetime64("2000-01-01T00:00:00", "us").astype(np.int64)
    ticks = np.unique(np.random.default_rng(3).integers(lo, lo + 10**15, n_bins + 1))
    tbins = treedp.make_bins(edges=ticks.astype("datetime64[us]"))
    width = 10**15 // tbins.n_bins
    tbase = (
        f"SELECT (EXTRACT(EPOCH FROM t) * 1000000)::int8 / {width} AS b, count(*) FROM td "
        "GROUP BY b"
    )
    tsrc = treedp.SqlSource(con, "SELECT t FROM td")
    t_base, t_tdp, *t_tree = interleaved(
        [
            lambda: con.execute(tbase).fetchall(),
            lambda: count_source(tsrc, column="t", bins=tbins),
        ]
        + ([lambda: count_sql(other_rule(PG, "case"), tsrc, "t", tbins, "error")] if tree else []),
        repeat,
    )
    tree_note = f"CASE tree: {t_tree[0] / t_base:.2f}x" if t_tree else ""
    lines.append(
        f"{head}, timestamp, {tbins.n_bins} explicit datetime edges; baseline EXTRACT(EPOCH) "
        f"// w | {t_base:.3f} s | {t_tdp:.3f} s | {t_tdp / t_base:.2f}x | {tree_note} |"
    )
    print(lines[-1], flush=True)
    return lines


def duckdb_unit(rows: int, n_bins: int, repeat: int, tmp: Path) -> list[str]:
    """DuckDB, equal-width bins with a privacy unit (three rows per person, at most two kept):
    the fast rule against the ``arith`` rule it replaced and the database's own GROUP BY."""
    import duckdb

    from treedp.engines.grouped import GroupedJob
    from treedp.engines.sql.bound import bounded_counts
    from treedp.noise.rng import resolve_source
    from treedp.privacy.contribution import ContributionBounds

    path = tmp / f"u{rows}.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT random() AS v, range // 3 AS p FROM range({rows})) TO '{path}' "
        "(FORMAT parquet)"
    )
    base = f"SELECT floor(v * {n_bins})::BIGINT AS b, count(*) FROM '{path}' GROUP BY b"
    src = treedp.SqlSource(con, f"SELECT v, p FROM '{path}'")
    bins = treedp.make_bins(bounds=(0, 1), bins=n_bins)
    job = GroupedJob("v", (), ((),), "p", ContributionBounds("p", 2, 1, 2), bins, "error")
    rng = resolve_source(None)
    fast_counts = bounded_counts(DUCK, src, job, rng)
    assert fast_counts.counts.sum() == 2 * ((rows + 2) // 3) - (rows % 3 == 1)
    t_base, t_fast, t_arith = interleaved(
        [
            lambda: con.execute(base).fetchall(),
            lambda: bounded_counts(DUCK, src, job, rng),
            lambda: bounded_counts(other_rule(DUCK), src, job, rng),
        ],
        repeat,
    )
    line = (
        f"| DuckDB {duckdb.__version__}, Parquet, {rows:.0e} rows, equal-width B = {n_bins}, "
        f"privacy unit (3 rows a person, 2 kept) | {t_base:.3f} s | {t_fast:.3f} s | "
        f"{t_fast / t_base:.2f}x | arith rule: {t_arith / t_base:.2f}x |"
    )
    print(line, flush=True)
    con.close()
    path.unlink()
    return [line]


def duckdb_datetimes(rows: int, n_bins: int, repeat: int, tmp: Path) -> list[str]:
    """DuckDB, a TIMESTAMP column and explicit datetime edges: its own GROUP BY of
    ``epoch_us(t) // w``, treedp's search over the integer ticks, and the CASE tree."""
    import duckdb

    path = tmp / f"t{rows}.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT TIMESTAMP '2000-01-01' + to_microseconds(CAST(random() * 1e15 AS "
        f"BIGINT)) AS t FROM range({rows})) TO '{path}' (FORMAT parquet)"
    )
    lo = np.datetime64("2000-01-01T00:00:00", "us").astype(np.int64)
    ticks = np.unique(np.random.default_rng(3).integers(lo, lo + 10**15, n_bins + 1))
    bins = treedp.make_bins(edges=ticks.astype("datetime64[us]"))
    width = 10**15 // bins.n_bins
    base = f"SELECT epoch_us(t) // {width} AS b, count(*) FROM '{path}' GROUP BY b"
    src = treedp.SqlSource(con, f"SELECT t FROM '{path}'")
    t_base, t_tdp, t_tree = interleaved(
        [
            lambda: con.execute(base).fetchall(),
            lambda: count_source(src, column="t", bins=bins),
            lambda: count_sql(other_rule(DUCK, "case"), src, "t", bins, "error"),
        ],
        repeat,
    )
    line = (
        f"| DuckDB {duckdb.__version__}, Parquet, {rows:.0e} rows, TIMESTAMP, {bins.n_bins} "
        f"explicit datetime edges | {t_base:.3f} s | {t_tdp:.3f} s | {t_tdp / t_base:.2f}x | "
        f"CASE tree: {t_tree / t_base:.2f}x |"
    )
    print(line, flush=True)
    con.close()
    path.unlink()
    return [line]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duckdb-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--pg-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--bins", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-explicit", action="store_true", help="skip explicit edges (PostgreSQL too)"
    )
    parser.add_argument("--sqlite-rows", type=int, nargs="*", default=[1_000_000])
    parser.add_argument("--datetime-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--unit-rows", type=int, nargs="*", default=[10_000_000])
    parser.add_argument("--outside-rows", type=int, nargs="*", default=[10_000_000])
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}, cpus: {os.cpu_count()}", flush=True)
    print("| input | baseline GROUP BY | treedp (exact rule) | ratio | floor |")
    print("|---|---|---|---|---|")
    tmp = Path(tempfile.mkdtemp(prefix="treedp-bench-"))
    try:
        for rows in args.duckdb_rows:
            duckdb_parquet(rows, args.bins, args.repeat, tmp, not args.no_explicit)
        for rows in args.outside_rows:
            duckdb_parquet(rows, args.bins, args.repeat, tmp, False, outside=True)
        for rows in args.unit_rows:
            duckdb_unit(rows, args.bins, args.repeat, tmp)
        for rows in args.datetime_rows:
            duckdb_datetimes(rows, args.bins, args.repeat, tmp)
        for rows in args.sqlite_rows:
            sqlite_file(rows, args.bins, args.repeat, tmp)
        for rows in args.pg_rows:
            postgres(rows, args.bins, args.repeat, tmp, not args.no_explicit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"peak RSS of this process: {rss_mb():.0f} MB; load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
