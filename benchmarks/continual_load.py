"""Continual release: the time ``load_continual`` takes with the calibration check (privacy review
of ``blt``, F3: the counter is rebuilt from the stored public parameters and its noise
parameters must match) against the same load with the check switched off (the baseline).

Each load runs in a fresh interpreter (the planners' caches start cold, as when a stream is
resumed), baseline and check alternating, best of ``--repeats`` (default 3). The state files
are written first, one step fed, in a temporary folder.

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/continual_load.py [--quick]``
(``--quick``: the small horizons only).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import treedp
from _common import machine
from treedp.noise import InsecureSeededSource

_LOAD = """
import sys, time
import treedp.continual.stream as st
if sys.argv[2] == "off":
    st._check_calibration = lambda *args: None
t0 = time.perf_counter()
st.load_continual(sys.argv[1], autosave=False)
print(time.perf_counter() - t0)
"""

_CASES = [
    ("tree", 2**20, {"epsilon": 1.0}),
    ("tree_full", 2**20, {"epsilon": 1.0}),
    ("sqrt", 2**14, {"privacy": treedp.ZCDP(0.5)}),
    ("sqrt_norm", 2**13, {"privacy": treedp.ZCDP(0.5)}),
    ("opt", 2**10, {"privacy": treedp.ZCDP(0.5)}),
    ("blt", 2**14, {"privacy": treedp.ZCDP(0.5)}),
    ("blt", 2**20, {"privacy": treedp.ZCDP(0.5)}),
]


def _time(path: str, mode: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, path, mode],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"},
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    quick = "--quick" in sys.argv
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
    print(machine())
    print(f"load average {os.getloadavg()[0]:.2f}; best of {repeats} fresh-process loads")
    print("| row | T | load, no check (baseline) s | load with the check s |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for name, horizon, budget in _CASES:
            if quick and horizon > 2**14:
                continue
            path = os.path.join(folder, f"{name}-{horizon}.json")
            stream = treedp.continual(
                horizon=horizon, mechanism=name, path=path, rng=InsecureSeededSource(1), **budget
            )
            stream.step(3)
            base, check = [], []
            for _ in range(repeats):
                base.append(_time(path, "off"))
                check.append(_time(path, "on"))
            print(f"| {name} | 2^{horizon.bit_length() - 1} | {min(base):.2f} | {min(check):.2f} |")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
