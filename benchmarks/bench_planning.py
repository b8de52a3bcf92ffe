"""Cold planning time: ``treedp.plan`` as the first call of a fresh process, per ``B``.

Each measurement runs in its own subprocess (so no cache, memo or warm import helps); the
import of treedp is timed separately. Prints the median of ``--repeats`` processes.

    PYTHONPATH=src python benchmarks/bench_planning.py [--repeats 3] [--pythonpath DIR]

``--pythonpath`` times another source tree (for a before/after table).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

from _common import machine

SIZES = [2**10, 2**16, 2**20, 2**24]

_CHILD = """
import json, sys, time
start = time.perf_counter()
import treedp
imported = time.perf_counter()
bins, neighbours = int(sys.argv[1]), sys.argv[2]
cpu = time.process_time()
treedp.plan(bins, epsilon=1.0, neighbours=neighbours, n=10**6 if neighbours == "replace" else None)
done = time.perf_counter()
print(json.dumps({"import": imported - start, "plan": done - imported,
                  "cpu": time.process_time() - cpu}))
"""


def cold(bins: int, neighbours: str, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(bins), neighbours],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pythonpath", default=None, help="source tree to time (default: env)")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.pythonpath is not None:
        env["PYTHONPATH"] = args.pythonpath
    print(f"# cold treedp.plan, epsilon=1, efficient estimator, cdf_mse ({machine()})")
    print(f"# median of {args.repeats} fresh processes; PYTHONPATH={env.get('PYTHONPATH', '')}")
    print(f"# load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} (plan CPU s is")
    print("# the planner's own CPU time: on a loaded machine it is what an idle one would take)")
    print(f"{'bins':>10} {'neighbours':>11} {'plan s':>8} {'plan CPU s':>11} {'import s':>9}")
    for bins in SIZES:
        for neighbours in ("add_remove", "replace"):
            runs = [cold(bins, neighbours, env) for _ in range(args.repeats)]
            plan_s = statistics.median(r["plan"] for r in runs)
            cpu_s = statistics.median(r["cpu"] for r in runs)
            import_s = statistics.median(r["import"] for r in runs)
            print(f"{bins:>10} {neighbours:>11} {plan_s:>8.3f} {cpu_s:>11.3f} {import_s:>9.2f}")


if __name__ == "__main__":
    main()
