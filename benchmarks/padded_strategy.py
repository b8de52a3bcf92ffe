"""The padded strategy (``strategy_padded``) against the planner's best tree, for bin counts no
strategy ships for.

Run from the repository root::

    PYTHONPATH=src python benchmarks/padded_strategy.py [--optimise]

Every error is exact, from public parameters (no simulation): the mean of ``Var(P[m])`` over
the prefixes ``m = 1..B`` at ε = 1, ``add_remove``, discrete Laplace noise. Columns: the
planner's best tree (its best non-offered candidate, the baseline, computed in the same run),
the shipped strategy of the next size on its first ``B`` bins, what ``treedp.plan`` picks now
and its figure, and the time of that plan. ``--optimise`` also optimises a strategy for ``B``
itself (what ``mechanism="strategy"`` does at a ``B`` that is not shipped: seconds to
minutes) and times it, where ``B <= 1000``.
"""

from __future__ import annotations

import argparse
import os
import time

from treedp import plan
from treedp.strategy import make_strategy
from treedp.strategy.candidate import strategy_errors
from treedp.strategy.store import padded_strategy, shipped_size

SIZES = (
    10,
    14,
    16,
    20,
    30,
    50,
    64,
    74,
    99,
    100,
    150,
    200,
    300,
    500,
    600,
    1000,
    1500,
    2000,
    3000,
    4000,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimise", action="store_true", help="also optimise for B itself")
    args = parser.parse_args()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"exact mean prefix MSE at eps = 1, add_remove (load average {load})\n")
    head = (
        "| B | padded from | planner's best tree | strategy_padded | ratio | plan picks "
        "| plan time |"
    )
    if args.optimise:
        head += " optimised for B (time) |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for b in SIZES:
        start = time.perf_counter()
        p = plan(b, epsilon=1.0)
        planned = time.perf_counter() - start
        tree = min(c.value for c in p.alternatives if not c.offered)
        strategy = padded_strategy(b)
        assert strategy is not None
        padded = strategy_errors(strategy, 1.0, "add_remove")["mean_cdf_mse"]
        size = shipped_size(b)
        row = (
            f"| {b:,} | {size:,} | {tree:.1f} | {padded:.1f} | {padded / tree:.3f} | "
            f"{p.mechanism} ({p.predicted:.1f}) | {planned:.2f} s |"
        )
        if args.optimise and b <= 1000:
            start = time.perf_counter()
            own = strategy_errors(make_strategy(b), 1.0, "add_remove")["mean_cdf_mse"]
            row += f" {own:.1f} ({time.perf_counter() - start:.1f} s) |"
        elif args.optimise:
            row += " - |"
        print(row)


if __name__ == "__main__":
    main()
