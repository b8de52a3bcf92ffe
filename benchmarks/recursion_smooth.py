"""The recursive method alone on smooth data: what its anchoring counts cost (issue #33 item 6).

Run: ``PYTHONPATH=src:benchmarks python benchmarks/recursion_smooth.py [--reps R] [--n N]``.
Prints one Markdown row per cell of {lognormal, uniform, normal} (the data and public bounds
of ``benchmarks/quantiles_peers.py``) × (ε, m) in {(0.1, 5), (1, 5), (1, 29), (0.1, 29)}: the
mean rank gap of ``treedp.quantiles(x, q, method="recursive")`` over ``q = j / (m + 1)`` and
``--reps`` repetitions (fresh data per repetition: seed ``rep``; the mechanism's seed ``rep``),
with its standard error. Run it on two trees (``PYTHONPATH``) for a before / after comparison
on the same data and seeds (docs/private_bounds.md, "The recursion's far side of a block").
"""

from __future__ import annotations

import argparse
import math
import os

import numpy as np

import treedp
from _common import machine
from quantiles_peers import DISTS, rank_error
from treedp.noise import InsecureSeededSource

CELLS = ((0.1, 5), (1.0, 5), (1.0, 29), (0.1, 29))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=48)
    ap.add_argument("--n", type=int, default=10_000)
    args = ap.parse_args()
    print(f"machine: {machine()}\n\n| data | n | ε | m | recursive |\n|---|---|---|---|---|")
    for dist in ("lognormal", "uniform", "normal"):
        draw, bounds, _ = DISTS[dist]
        for eps, m in CELLS:
            q = np.arange(1, m + 1) / (m + 1)
            errs = []
            for rep in range(args.reps):
                xs = draw(np.random.default_rng(rep), args.n)
                res = treedp.quantiles(xs, q, epsilon=eps, bounds=bounds, method="recursive",
                                       rng=InsecureSeededSource(rep))  # fmt: skip
                errs.append(rank_error(xs, np.atleast_1d(res.values), q))
            a = np.asarray(errs)
            se = a.std(ddof=1) / math.sqrt(a.size)
            row = f"| {dist} | {args.n:.0e} | {eps:g} | {m} | {a.mean():.1f} ± {se:.1f} |"
            print(row, flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
