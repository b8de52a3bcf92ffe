"""Run every benchmark script in this folder and print their figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

for script in (
    "bench_sampler.py",
    "bench_gaussian.py",
    "bench_counting.py",
    "bench_estimation.py",
    "bench_isotonic.py",
    "bench_threadpool.py",
    "bench_release.py",
    "bench_exponential.py",
):
    subprocess.run([sys.executable, str(HERE / script)], check=True, cwd=HERE)
    print()
