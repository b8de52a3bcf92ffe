"""Exact CDF error of the optimised strategy vs the best tree, and release timings.

Run from the repository root::

    PYTHONPATH=src python benchmarks/strategy_table.py            # table + release timings
    PYTHONPATH=src python benchmarks/strategy_table.py --optimise # also time the optimisation

Every error is computed exactly from public parameters (no simulation): the mean of
``Var(P[m])`` over the prefixes ``m = 1..B`` at ε = 1, ``add_remove``. Two noise variances are
shown for the strategy: the issue's ``2Δ²/ε²`` (continuous Laplace, as in HDMM's figures) and
the exact discrete Laplace variance of the released noise (what treedp's error bars use).
The best tree is the planner's best tree alternative (exact, efficient estimator).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from treedp import InsecureSeededSource, plan, release_counts
from treedp.strategy import get_strategy, make_strategy
from treedp.strategy.candidate import strategy_errors

#: Figures quoted in issue 19 (ε = 1, add_remove): best tuned tree, HDMM p-Identity.
ISSUE = {256: (69.3, 54.3), 1024: (119.0, 90.9), 4096: (197.2, 158.2)}


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def table() -> None:
    print(f"exact mean prefix MSE at eps = 1, add_remove ({_load()})\n")
    print(
        "| B | planner's best tree | best tuned tree (issue) | treedp strategy (2Δ²) "
        "| treedp strategy (exact discrete) | p | L1 | HDMM p-Identity (issue) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b, (tuned, hdmm) in ISSUE.items():
        chosen = plan(b, epsilon=1.0)
        trees = [c for c in chosen.alternatives if c.mechanism == "tree"]
        strategy = get_strategy(b)
        l1 = strategy.sensitivity("add_remove")[0]
        continuous = 2.0 * l1**2 * float(strategy.unit_prefix_variances()[1:].mean())
        exact = strategy_errors(strategy, 1.0, "add_remove")["mean_cdf_mse"]
        print(
            f"| {b} | {min(c.value for c in trees):.1f} | {tuned} | {continuous:.1f} | "
            f"{exact:.1f} | {strategy.aggregates.shape[0]} | {l1} | "
            f"{'≤ ' if b > 256 else ''}{hdmm} |"
        )


def range_table() -> None:
    print(f"\nexact mean range MSE (all [a, b)), eps = 1, add_remove ({_load()})\n")
    print("| B | planner's best tree | prefix strategy | range strategy (`strategy_range`) |")
    print("|---|---|---|---|")
    for b in ISSUE:
        chosen = plan(b, epsilon=1.0, objective="range_mse")
        tree = min(c.value for c in chosen.alternatives if c.mechanism == "tree")
        cells = [
            f"{strategy_errors(get_strategy(b, w), 1.0, 'add_remove')['range_mse']:.1f}"
            for w in ("prefix", "range")
        ]
        print(f"| {b} | {tree:.1f} | {cells[0]} | {cells[1]} |")


def replace_table() -> None:
    print(f"\nreplace (n public), eps = 1 ({_load()})\n")
    print("| B | planner's best tree | treedp strategy (exact discrete) | strategy L1 |")
    print("|---|---|---|---|")
    for b in ISSUE:
        tree = plan(b, epsilon=1.0, neighbours="replace", n=10).mean_cdf_mse
        strategy = get_strategy(b)
        exact = strategy_errors(strategy, 1.0, "replace")["mean_cdf_mse"]
        print(f"| {b} | {tree:.1f} | {exact:.1f} | {strategy.sensitivity('replace')[0]} |")


def timings(optimise: bool) -> None:
    print(f"\nrelease timings, mechanism='strategy', eps = 1 ({_load()})\n")
    for b in (256, 1024, 4096):
        counts = np.random.default_rng(0).integers(0, 100, b)
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            release_counts(
                counts,
                bins=b,
                bounds=(0.0, 1.0),
                epsilon=1.0,
                mechanism="strategy",
                rng=InsecureSeededSource(1),
            ).cdf(0.5)
            runs.append(time.perf_counter() - start)
        print(
            f"B = {b}: first release {runs[0]:.3f} s (reads the shipped strategy), "
            f"median of the next four {float(np.median(runs[1:])):.3f} s"
        )
    if optimise:
        for b in (256, 1024, 4096):
            start = time.perf_counter()
            make_strategy(b)
            print(f"B = {b}: optimisation {time.perf_counter() - start:.1f} s ({_load()})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimise", action="store_true", help="also time the optimisation")
    args = parser.parse_args()
    table()
    range_table()
    replace_table()
    timings(args.optimise)


if __name__ == "__main__":
    main()
