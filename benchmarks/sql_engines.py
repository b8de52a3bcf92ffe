"""The SQL engines against the database's own GROUP BY count, in the same process and run.

For DuckDB (a table of N doubles, or a Parquet file of them) and SQLite, times
``count_source(SqlSource(...), column="v", bins=...)`` (treedp's bin rule pushed down: only B
counts come back) against the database counting ``floor((v - lo)·B/(hi - lo))`` with GROUP BY
(not the exact rule: no clamping, no edge correction, the lower bound of the cost), best of
``--repeat`` runs each, and the peak RSS of this process. Usage::

    python benchmarks/sql_engines.py --rows 10000000 --bins 1024 [--parquet path]
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import treedp
from treedp.engines.dispatch import count_source


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def baseline_sql(source: str, n_bins: int) -> str:
    return (
        f"SELECT b, count(*) FROM (SELECT CAST(floor(v * {n_bins}) AS BIGINT) AS b "
        f"FROM {source}) GROUP BY b"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--bins", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sqlite-rows", type=int, default=1_000_000)
    ap.add_argument("--parquet", default=None, help="a Parquet file with a double column v")
    args = ap.parse_args()
    import duckdb

    bins = treedp.make_bins(bounds=(0, 1), bins=args.bins)
    edges = treedp.make_bins(edges=sorted({i / args.bins for i in range(args.bins + 1)}))
    con = duckdb.connect()
    if args.parquet:
        source = f"read_parquet('{args.parquet}')"
    else:
        con.execute(f"CREATE TABLE t AS SELECT random() AS v FROM range({args.rows})")
        source = "t"
    rows = con.sql(f"SELECT count(*) FROM {source}").fetchall()[0]
    base = best(lambda: con.sql(baseline_sql(source, args.bins)).fetchall(), args.repeat)
    data = treedp.SqlSource(con, f"SELECT v FROM {source}")
    eq = best(lambda: count_source(data, column="v", bins=bins), args.repeat)
    ex = best(lambda: count_source(data, column="v", bins=edges), args.repeat)
    threads = con.sql("SELECT current_setting('threads')").fetchall()[0]
    n_rows = rows[0] if rows else 0
    print(f"duckdb rows={n_rows} bins={args.bins} threads={threads[0] if threads else '?'}")
    print(
        f"  GROUP BY baseline {base:.3f} s; treedp equal-width {eq:.3f} s ({eq / base:.2f}x); "
        f"explicit edges {ex:.3f} s ({ex / base:.2f}x)"
    )
    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE t (v REAL)")
    lite.executemany(
        "INSERT INTO t VALUES (?)",
        ((x[0],) for x in con.sql(f"SELECT v FROM {source} LIMIT {args.sqlite_rows}").fetchall()),
    )
    base = best(lambda: lite.execute(baseline_sql("t", args.bins)).fetchall(), args.repeat)
    data = treedp.SqlSource(lite, "SELECT v FROM t")
    eq = best(lambda: count_source(data, column="v", bins=bins), args.repeat)
    print(f"sqlite rows={args.sqlite_rows} bins={args.bins}")
    print(f"  GROUP BY baseline {base:.3f} s; treedp {eq:.3f} s ({eq / base:.2f}x)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the Python process: {rss:.0f} MB")


if __name__ == "__main__":
    main()
