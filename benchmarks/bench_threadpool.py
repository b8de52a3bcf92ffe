"""Does ``threadpoolctl`` (the ``strategy`` extra) pay? Strategy optimisation and a strategy
release, each in a fresh interpreter with threadpoolctl importable (one BLAS thread) and with
it blocked (numpy's default BLAS threads), interleaved under the same load.

Run: ``PYTHONPATH=src python benchmarks/bench_threadpool.py [--busy N]``; ``--busy N`` starts
``N`` busy-looping processes for the run (a shared machine's load, as where "17x" was seen).
"""

from __future__ import annotations

import os
import subprocess
import sys

from _common import machine

BLOCK = "import sys; sys.modules['threadpoolctl'] = None\n"
CASES = {
    "optimise_pidentity(256, p=16)": (
        "from treedp.strategy.optimize import optimise_pidentity\n"
        "optimise_pidentity(256, p=16, max_iter=200)\n"
    ),
    "optimise_pidentity(512, p=32)": (
        "from treedp.strategy.optimize import optimise_pidentity\n"
        "optimise_pidentity(512, p=32, max_iter=100)\n"
    ),
    "release_cdf strategy B=4096 + cdf": (
        "import numpy as np, treedp\n"
        "x = np.random.default_rng(0).integers(0, 4096, 10**5)\n"
        "r = treedp.release_cdf(x, bounds=(0, 4095), bins='integers', epsilon=1.0,\n"
        "                       mechanism='strategy')\n"
        "r.cdf(100)\n"
    ),
}


def seconds(code: str, blocked: bool) -> float:
    timed = (
        (BLOCK if blocked else "")
        + "import time\nimport numpy, scipy.optimize\nt = time.perf_counter()\n"
        + code
        + "print(time.perf_counter() - t)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", timed], capture_output=True, text=True, check=True, env=env
    )
    return float(out.stdout)


def main(repeats: int = 3) -> None:
    busy = int(sys.argv[sys.argv.index("--busy") + 1]) if "--busy" in sys.argv else 0
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        run(repeats, busy)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def run(repeats: int, busy: int) -> None:
    print(
        f"# threadpoolctl or not ({machine()}, load {os.getloadavg()[0]:.1f}, {busy} busy "
        f"processes added), best of {repeats}"
    )
    print(f"{'case':>40} {'one thread s':>13} {'default s':>10} {'ratio':>6}")
    for name, code in CASES.items():
        one, default = [], []
        for _ in range(repeats):
            one.append(seconds(code, blocked=False))
            default.append(seconds(code, blocked=True))
        ratio = min(default) / min(one)
        print(f"{name:>40} {min(one):>13.3f} {min(default):>10.3f} {ratio:>6.2f}")


if __name__ == "__main__":
    main()
