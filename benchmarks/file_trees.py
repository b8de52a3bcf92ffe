"""The per-person file release of ``per_person.py`` from two source trees, alternated.

Writes the flights-like Parquet file once (kept under ``--dir`` for later runs), then runs
``per_person.py --child`` from each tree's ``src`` in a fresh process, the trees alternated
in every round, and prints wall, CPU and peak RSS above the interpreter (with pandas and
pyarrow) per run, and the best and median per tree; ``uptime`` at start and end.

Usage::

    python benchmarks/file_trees.py --rows 10000000 --rounds 3 \
        --tree before=/path/to/main --tree after=/path/to/branch
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine
from per_person import make_frame


def write_file(rows: int, directory: str) -> str:
    """The flights-like Parquet file of ``rows`` rows (chunks of 10^7), written once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(directory, f"flights{rows}.parquet")
    if os.path.exists(path):
        return path
    writer = None
    for i, start in enumerate(range(0, rows, 10**7)):
        frame = make_frame(min(10**7, rows - start), seed=i + 1)
        table = pa.Table.from_pandas(frame).select(["tailnum", "carrier", "delay"])
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
    assert writer is not None
    writer.close()
    return path


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10**7)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tree", action="append", required=True, help="name=path of a checkout")
    ap.add_argument("--dir", default="/tmp", help="where the Parquet file is kept")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    print(machine())
    print("uptime:", uptime())
    path = write_file(args.rows, args.dir)
    res: dict[str, list[tuple[float, ...]]] = {k: [] for k in trees}
    for r in range(args.rounds):
        for name, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=os.path.join(tree, "src"))
            script = os.path.join(tree, "benchmarks", "per_person.py")
            out = subprocess.run(
                [sys.executable, script, "--child", path],
                check=True,
                capture_output=True,
                text=True,
                env=env,
            )
            wall, cpu, base, peak = map(float, out.stdout.split()[-4:])
            res[name].append((wall, cpu, base, peak))
            print(
                f"{name} round {r}: wall {wall:.2f} s, CPU {cpu:.2f} s, peak {peak:.0f} MB, "
                f"above the interpreter {peak - base:.0f} MB (load {os.getloadavg()[0]:.1f})",
                flush=True,
            )
    for name, v in res.items():
        above = [x[3] - x[2] for x in v]
        print(
            f"{name}: wall best {min(x[0] for x in v):.2f} s, median "
            f"{statistics.median(x[0] for x in v):.2f} s; CPU median "
            f"{statistics.median(x[1] for x in v):.2f} s; "
            f"above {min(above):.0f}–{max(above):.0f} MB"
        )
    print("uptime:", uptime())


if __name__ == "__main__":
    main()
