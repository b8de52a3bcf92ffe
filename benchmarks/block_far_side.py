"""The recursion beside a block of ties: children of a pinned parent, against the rule before.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/block_far_side.py [--reps R]``.

``treedp.quantiles(x, q, bounds="private", epsilon=ε)`` (``method="auto"``: on these integer
columns a bounds step, then the recursion on the found range or the tree) on columns with a
block at their lower end: Adult ``capital_gain`` (92% zeros, the vendored data, as a new user
ran it), synthetic amounts with 92% and 70% zeros (else round lognormal(8, 1), n = 10^4), and
Poisson(30) without a block (n = 10^4) for the cost on spread data; deciles and ``[.5, .9,
.95, .99]`` at ε ∈ {0.1, 0.3, 1}. Two columns per cell, the same data and seeds in the same
process: "before", ``recursion_anchor.PINNED_RULE = False`` (a child compares only its own
rescaled and absolute targets), and "now" (the shipped rule: a child also leaves the rescaled
level when its parent released an end of its interval, where it split its records). Mean
rank gap in records (``_common.rank_gap``) and the share of answers off the block at the
levels whose true quantile is the block's value.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

import treedp
from _common import machine, rank_gap
from treedp.noise import InsecureSeededSource
from treedp.value_methods import recursion_anchor

LEVELS = {"deciles": list(np.arange(1, 10) / 10), "tails": [0.5, 0.9, 0.95, 0.99]}


def columns() -> dict[str, np.ndarray]:
    r = np.random.default_rng(11)
    amounts = np.round(r.lognormal(8, 1, 10_000)).astype(np.int64)
    return {
        "Adult capital_gain": np.asarray(treedp.datasets.load_adult()["capital_gain"], np.int64),
        "92% zeros, else amounts": np.where(r.random(10_000) < 0.92, 0, amounts),
        "70% zeros, else amounts": np.where(r.random(10_000) < 0.70, 0, amounts),
        "Poisson(30)": r.poisson(30, 10_000).astype(np.int64),
    }


def run(x: np.ndarray, q: list[float], eps: float, reps: int, tests: bool) -> tuple[float, float]:
    """Mean rank gap (records) and the share of answers off the block where the truth is it."""
    recursion_anchor.PINNED_RULE = tests
    try:
        xs = np.sort(x)
        true = np.quantile(x, q, method="inverted_cdf")
        gaps, off = [], []
        for rep in range(reps):
            res = treedp.quantiles(x, q, bounds="private", epsilon=eps,
                                   rng=InsecureSeededSource(500 + rep))  # fmt: skip
            v = np.asarray(res.values, dtype=np.float64)
            gaps.append(rank_gap(xs.astype(np.float64), v, q))
            at_block = true == xs[0]
            off.append(np.mean(v[at_block] != xs[0]) if at_block.any() else 0.0)
    finally:
        recursion_anchor.PINNED_RULE = True
    return float(np.mean(gaps)), float(np.mean(off))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    start = time.time()
    print(f"# {machine()}; {args.reps} repetitions; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    print("| column | levels | ε | gap before | gap now | off the block before | now |")
    print("|---|---|---|---|---|---|---|")
    for name, x in columns().items():
        for which, q in LEVELS.items():
            for eps in (0.1, 0.3, 1.0):
                gb, ob = run(x, q, eps, args.reps, False)
                gn, on = run(x, q, eps, args.reps, True)
                print(f"| {name} | {which} | {eps:g} | {gb:.1f} | {gn:.1f} | {ob:.2f} | {on:.2f} |")
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
