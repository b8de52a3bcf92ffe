"""The redesign's end-to-end speed targets, with the time split by stage.

1. A CLI release (``treedp release``, a fresh process: import, read, plan, count, noise,
   estimate, save) of 10^6 values from a Parquet file at B = 2^20: target under 1 s wall.
2. A full release in Python at B = 2^24 (bins, planning, counting, exact noise for every node,
   efficient estimate, consistent CDF): target under 2 s.
"""

from __future__ import annotations

import atexit
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import treedp
from _common import machine
from treedp.domain import make_bins
from treedp.planning import plan

N = 1_000_000
REPEATS = 3


#: The CLI processes may cache their bytecode (in a temporary folder, never the repository), as
#: an installed package does: with PYTHONDONTWRITEBYTECODE set, every run would compile treedp
#: from source (about 0.1 s of CPU here).
PYC_DIR = tempfile.mkdtemp(prefix="treedp-bench-pyc-")
atexit.register(shutil.rmtree, PYC_DIR, ignore_errors=True)
CLI_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
CLI_ENV["PYTHONPYCACHEPREFIX"] = PYC_DIR


def cli_release(path: Path, out: Path) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one ``treedp release`` process."""
    treedp_cli = Path(sys.executable).with_name("treedp")
    cmd = [str(treedp_cli), "release", str(path), "--column", "x", "--bounds", "0", "2e6"]
    cmd += ["--bins", str(2**20), "--epsilon", "1", "--out", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=CLI_ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def cli_import() -> float:
    """Wall time of ``import treedp.cli.release`` (with numpy and pyarrow) in a fresh process."""
    code = "import time; t = time.perf_counter(); import treedp.cli.release; "
    code += "print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=CLI_ENV
    )
    return float(out.stdout)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def stages(x: np.ndarray, n_bins: int) -> dict[str, tuple[float, float]]:
    """Wall and CPU seconds of each stage of one full release."""
    times: dict[str, tuple[float, float]] = {}
    marks = [(time.perf_counter(), time.process_time())]

    def done(name: str) -> None:
        marks.append((time.perf_counter(), time.process_time()))
        (w0, c0), (w1, c1) = marks[-2], marks[-1]
        times[name] = (w1 - w0, c1 - c0)

    bins = make_bins(bounds=(0.0, 2e6), bins=n_bins)
    done("bins")
    chosen = plan(n_bins, epsilon=1.0)
    done("plan")
    counts, _dropped = bins.count(x)
    done("count")
    release = treedp.release_counts(counts, bins=bins, epsilon=1.0, plan=chosen)
    done("noise+release")
    release.cdf(1e5)  # the first query builds the efficient estimate and the consistent CDF
    done("estimate+consistent")
    times["total"] = (marks[-1][0] - marks[0][0], marks[-1][1] - marks[0][1])
    return times


def main() -> None:
    print(f"# end-to-end targets, {N:,} lognormal values, epsilon=1, OS randomness ({machine()})")
    x = np.random.default_rng(0).lognormal(10, 1, size=N)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.parquet"
        pq.write_table(pa.table({"x": x}), path)
        cli_release(path, Path(tmp) / "warm.tdp")
        runs = [cli_release(path, Path(tmp) / "r.tdp") for _ in range(REPEATS)]
    wall, cpu = min(runs)
    imports = min(cli_import() for _ in range(REPEATS))
    print(
        f"CLI release at B=2^20: best {wall:.2f} s wall, {cpu:.2f} s CPU, of {REPEATS} "
        f"(target < 1 s wall); "
        f"of which importing the CLI {imports:.2f} s ({load()})"
    )
    for n_bins in (2**20, 2**24):
        runs = [stages(x, n_bins) for _ in range(REPEATS)]
        best = min(runs, key=lambda r: r["total"][0])
        parts = ", ".join(f"{k} {w:.3f}/{c:.3f}" for k, (w, c) in best.items() if k != "total")
        wall, cpu = best["total"]
        print(
            f"full release at B=2^{n_bins.bit_length() - 1}: {wall:.2f} s wall, {cpu:.2f} s "
            f"CPU (stage wall/CPU s: {parts}) ({load()})",
            flush=True,
        )


if __name__ == "__main__":
    main()
