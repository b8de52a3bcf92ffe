"""Int-typed columns with private bounds over wide ranges: ``auto`` against the tree it ran before.

Run: ``PYTHONPATH=src python benchmarks/wide_integer_ranges.py [--reps R] [--ns N ...]
[--ms M ...]``. Prints a Markdown table (docs/private_bounds.md, "Wide found integer ranges",
holds one run).

``treedp.quantiles(x, q, bounds="private", epsilon=ε)`` on an int64 column runs in integer
mode: a private bounds step, then the tree with one bin per integer, unless the found bounds
hold more than 4,096 integers below 64 levels, when the recursion's integer mode runs on them
(:func:`treedp.quantiles_fallback.wide_range`, the rule public bounds have). Baseline in the
same run: ``method="tree"`` with the same seed (the same bounds step), what ``auto`` ran
before the rule. Metric: the mean over the levels and ``R`` repetitions of the rank gap in
records (the distance from ``q·n`` to the ranks ``[#{x < v}, #{x <= v}]`` the answer holds);
levels ``j/(m + 1)``; "auto ran": how often each method ran; "found": the range of the
number of integers in the found bounds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

Draw = Callable[[np.random.Generator, int], np.ndarray]

COLUMNS: dict[str, Draw] = {
    "round lognormal(8, 1)": lambda r, n: np.round(r.lognormal(8, 1, n)),
    "round lognormal(5, 1)": lambda r, n: np.round(r.lognormal(5, 1, n)),
    "uniform 0..5000": lambda r, n: r.integers(0, 5001, n),
    "floor exponential(5000)": lambda r, n: np.floor(r.exponential(5000, n)),
    "round normal(0, 300)": lambda r, n: np.round(r.normal(0, 300, n)),
    "Poisson(1000)": lambda r, n: r.poisson(1000, n),
}


def gap(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> float:
    below = np.searchsorted(xs, est, side="left") - q * xs.size
    above = q * xs.size - np.searchsorted(xs, est, side="right")
    return float(np.mean(np.maximum(0, np.maximum(below, above))))


def cell(draw: Draw, n: int, eps: float, m: int, reps: int) -> str:
    q = np.arange(1, m + 1) / (m + 1)
    auto, tree, ran, found = [], [], Counter[str](), []
    for rep in range(reps):
        x = np.asarray(draw(np.random.default_rng(200 + rep), n)).astype(np.int64)
        xs = np.sort(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", treedp.BoundsWarning)
            a = treedp.quantiles(x, q, bounds="private", epsilon=eps,
                                 rng=InsecureSeededSource(rep))  # fmt: skip
            t = treedp.quantiles(x, q, bounds="private", epsilon=eps, method="tree",
                                 rng=InsecureSeededSource(rep))  # fmt: skip
        ran[a.method] += 1
        if t.bounds is not None and np.all(np.isfinite(t.bounds)):
            found.append(int(t.bounds[1] - t.bounds[0] + 1))
        auto.append(gap(xs, np.asarray(a.values, dtype=float), q))
        tree.append(gap(xs, np.asarray(t.values, dtype=float), q))
    methods = ", ".join(f"{k} {v}" for k, v in sorted(ran.items()))
    span = f"{min(found)}–{max(found)}" if found else "-"
    ratio = np.mean(auto) / np.mean(tree) if np.mean(tree) > 0 else float("nan")
    return f"{np.mean(auto):.1f} | {np.mean(tree):.1f} | {ratio:.2f} | {methods} | {span}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ns", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--ms", type=int, nargs="+", default=[3, 29])
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 1.0])
    args = ap.parse_args()
    start = time.time()
    print("| column | n | ε | m | auto gap | tree gap (before) | auto / tree | auto ran | found |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, draw in COLUMNS.items():
        for n in args.ns:
            for eps in args.epsilons:
                for m in args.ms:
                    row = cell(draw, n, eps, m, args.reps)
                    print(f"| {name} | {n:g} | {eps:g} | {m} | {row} |", flush=True)
    print(
        f"\n{args.reps} repetitions per cell (data seeds 200.., noise seeds 0..); gaps in "
        f"records; {time.time() - start:.0f} s; {machine()}; load average "
        f"{os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
