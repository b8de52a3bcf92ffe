"""The concentration gate's cost and gain: ``treedp.quantiles`` with the gate and without it.

``method="auto"`` without ``n`` spends 3% of the budget its private count leaves on the gate
(``value_methods/concentration_gate.py``) whenever the count picks the tree; this script runs
the same calls with the gate removed (``plan_gate`` returning None: its share then goes to
the tree, as before the gate) in the same process, same data and noise seeds, and prints the
mean rank gap of each (± one standard error) and how often the gate sent the tree to finer
bins. The data sets are ``benchmarks/quantiles_peers.py``'s (the issue's grid and the others);
treedp's noise seed is ``NOISE_SEED + rep``, independent of the data's.

    PYTHONPATH=src:benchmarks python benchmarks/concentration_gate.py \
        --dists uniform bimodal lognormal --ns 1000 --eps 0.1 --ms 29 --reps 150
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from typing import Any

import numpy as np

import treedp
import treedp.quantiles_run as quantiles_run
from _common import machine
from quantiles_peers import ALL_DISTS, NOISE_SEED, rank_error
from treedp.noise import InsecureSeededSource
from treedp.value_methods.concentration_gate import MIN_FINER_BINS


def run(dist: str, n: int, eps: float, m: int, reps: int, gate: bool) -> tuple[float, float, int]:
    """Mean rank gap, its standard error, and the runs the gate sent to finer bins."""
    draw, bounds, bins = ALL_DISTS[dist]
    q = np.arange(1, m + 1) / (m + 1)
    real = quantiles_run.plan_gate
    if not gate:
        quantiles_run.plan_gate = lambda epsilon: None  # type: ignore[assignment]
    errs, fired = [], 0
    try:
        for rep in range(reps):
            xs = draw(np.random.default_rng(rep), n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = treedp.quantiles(
                    xs, q, epsilon=eps, bounds=bounds, bins=bins,
                    rng=InsecureSeededSource(NOISE_SEED + rep),
                )  # fmt: skip
            errs.append(rank_error(xs, np.atleast_1d(res.values), q))
            names = [p.mechanism for p in res.parts]
            fired += "concentration_gate" in names and res.grid_points >= MIN_FINER_BINS
    finally:
        quantiles_run.plan_gate = real
    a = np.asarray(errs)
    return float(a.mean()), float(a.std(ddof=1) / math.sqrt(a.size)), fired


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dists", nargs="+", default=["uniform", "bimodal", "lognormal"],
                   choices=list(ALL_DISTS))  # fmt: skip
    p.add_argument("--ns", nargs="+", type=int, default=[1000])
    p.add_argument("--eps", nargs="+", type=float, default=[0.1])
    p.add_argument("--ms", nargs="+", type=int, default=[29])
    p.add_argument("--reps", type=int, default=150)
    args = p.parse_args()
    print(machine())
    print()
    print("| data | n | ε | m | without the gate | with the gate | ratio | gate fired |")
    print("|---|---|---|---|---|---|---|---|")
    start = time.perf_counter()
    for dist in args.dists:
        for n in args.ns:
            for eps in args.eps:
                for m in args.ms:
                    off: Any = run(dist, n, eps, m, args.reps, False)
                    on: Any = run(dist, n, eps, m, args.reps, True)
                    print(
                        f"| {dist} | {n} | {eps:g} | {m} | {off[0]:.1f} ± {off[1]:.1f} | "
                        f"{on[0]:.1f} ± {on[1]:.1f} | {on[0] / off[0]:.2f} | "
                        f"{on[2]} of {args.reps} |",
                        flush=True,
                    )
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
