"""Streaming a Parquet column into bin counts: time, rows/s and peak RSS against pyarrow alone.

Each measurement runs in a fresh subprocess, so its peak resident memory (``VmHWM``) is its
own; "above start" subtracts the RSS after the imports. The data is generated into
``$TREEDP_BENCH_DIR`` (default ``/tmp/treedp-bench``), never into the repository.

Usage: ``python bench_scale_files.py [ROWS ...] [--treedp-only] [--delete]`` (default
``10**7 10**8``). ``--treedp-only`` times the two treedp modes once each (for 10^9 rows, where
the pyarrow reference modes would take long), ``--delete`` removes each generated file after
its rows are measured (10^9 rows are an 8.4 GB file).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import treedp
from _common import machine

DATA_DIR = Path(os.environ.get("TREEDP_BENCH_DIR", "/tmp/treedp-bench"))
ROW_GROUP = 1 << 20
N_BINS = 1 << 16
MODES = ("pyarrow read_table", "pyarrow row-group loop + numpy", "treedp counts", "treedp release")


def generate(rows: int) -> Path:
    """A Parquet file of ``rows`` uniform float64 values in column ``x`` (written once)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = DATA_DIR / f"uniform_{rows}.parquet"
    if path.exists():
        return path
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    rng = np.random.default_rng(0)
    schema = pa.schema([("x", pa.float64())])
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, ROW_GROUP):
            n = min(ROW_GROUP, rows - start)
            writer.write_table(pa.table({"x": rng.random(n)}), row_group_size=ROW_GROUP)
    tmp.rename(path)
    return path


def peak_mb() -> float:
    """This process's peak resident memory in MB: ``VmHWM`` (Linux), which exec resets, unlike
    ``ru_maxrss``, which keeps the parent's peak from before the exec."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, path: str) -> None:
    """Run one mode and print its time and memory as JSON (in a fresh process)."""
    import pyarrow.parquet as pq

    from treedp.engines.files import count_path

    start_rss = peak_mb()
    bins = treedp.make_bins(bounds=(0.0, 1.0), bins=N_BINS)
    t0 = time.perf_counter()
    c0 = time.process_time()
    if mode == MODES[0]:
        table = pq.read_table(path, columns=["x"])
        rows = table.num_rows
    elif mode == MODES[1]:
        pf = pq.ParquetFile(path)
        counts = np.zeros(N_BINS, dtype=np.int64)
        rows = 0
        for i in range(pf.num_row_groups):
            x = pf.read_row_group(i, columns=["x"]).column(0).to_numpy()
            idx = np.minimum((x * N_BINS).astype(np.intp), N_BINS - 1)
            counts += np.bincount(idx, minlength=N_BINS)
            rows += x.size
    elif mode == MODES[2]:
        rows = int(count_path(path, "x", bins, progress=False).counts.sum())
    else:
        rel = treedp.release_cdf(
            path,
            column="x",
            bounds=(0.0, 1.0),
            bins=N_BINS,
            epsilon=1.0,
            engine=treedp.LocalEngine(progress=False),
        )
        rows = round(rel.n)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - c0
    peak = peak_mb()
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu": cpu,
                "peak_mb": peak,
                "start_mb": start_rss,
                "rows": rows,
            }
        )
    )


def measure(mode: str, path: Path) -> dict[str, float]:
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(Path(__file__).parents[1] / "src"), os.environ.get("PYTHONPATH", "")]
        ),
    )
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(path)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2])
        return
    treedp_only = "--treedp-only" in argv
    delete = "--delete" in argv
    sizes = [int(float(a)) for a in argv if not a.startswith("--")] or [10**7, 10**8]
    modes = MODES[2:] if treedp_only else MODES
    repeats = 1 if treedp_only else 2
    print(f"# streaming a Parquet float64 column into {N_BINS} bins ({machine()})")
    print(f"# data in {DATA_DIR}; row groups of {ROW_GROUP} rows; best of {repeats} run(s) each")
    print(
        f"{'rows':>12} {'mode':>32} {'s':>7} {'CPU s':>6} {'M rows/s':>9} {'peak MB':>8} "
        f"{'above start':>11} load"
    )
    for rows in sizes:
        path = generate(rows)
        for mode in modes:
            runs = [measure(mode, path) for _ in range(repeats)]
            best = min(runs, key=lambda r: r["seconds"])
            peak = max(r["peak_mb"] for r in runs)
            above = max(r["peak_mb"] - r["start_mb"] for r in runs)
            print(
                f"{rows:>12,} {mode:>32} {best['seconds']:>7.2f} {best['cpu']:>6.2f} "
                f"{rows / best['seconds'] / 1e6:>9.1f} {peak:>8.0f} {above:>11.0f} "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
        if delete:
            path.unlink()


if __name__ == "__main__":
    main(sys.argv[1:])
