"""Integer-typed columns without ``bins``: integer mode (this round) against the continuous
reading (before), in the same process.

Run: ``PYTHONPATH=src python benchmarks/integer_columns.py [--reps R]``. For each column the
same call ``treedp.quantiles(x, q, epsilon=1, bounds=...)`` (no ``bins``, ``method="auto"``)
on the int64 column (after: integer mode from its type) and on the same values as float64
(before: what an int64 column got until this round; the continuous path is unchanged, so the
float column reproduces it). Mean rank gap over ``n`` (the distance from ``q n`` to the ranks
``[#{x < v}, #{x <= v}]`` of the answer), and the share of answers that are true quantiles
(gap 0), at the median alone and at the quartiles.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np

import treedp
from treedp.datasets import load_adult
from treedp.noise import InsecureSeededSource

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

LEVELS = {"median": np.array([0.5]), "quartiles": np.array([0.25, 0.5, 0.75])}


def columns() -> dict[str, tuple[np.ndarray, tuple[int, int]]]:
    rng = np.random.default_rng(0)
    adult = load_adult()
    return {
        "Likert 1..5, 60% at 3 (repro_2), n = 5000": (
            rng.choice([1, 2, 3, 4, 5], size=5000, p=[0.1, 0.1, 0.6, 0.1, 0.1]),
            (1, 5),
        ),
        "Adult age, bounds (0, 120)": (np.asarray(adult["age"]), (0, 120)),
        "Adult hours_per_week, bounds (0, 100)": (np.asarray(adult["hours_per_week"]), (0, 100)),
        "Poisson(3), n = 10^4, bounds (0, 20)": (rng.poisson(3, 10**4), (0, 20)),
    }


def gaps(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> np.ndarray:
    below = np.searchsorted(xs, est, side="left") - q * xs.size
    above = q * xs.size - np.searchsorted(xs, est, side="right")
    return np.asarray(np.maximum(0, np.maximum(below, above)) / xs.size)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    start = time.time()
    print("| column | levels | before: float reading (method) | after: integer mode (method) |")
    print("|---|---|---|---|")
    for name, (x, bounds) in columns().items():
        xs = np.sort(x)
        for label, q in LEVELS.items():
            cells = []
            for data in (xs.astype(np.float64), xs):  # before, after
                got, method = [], ""
                for s in range(args.reps):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = treedp.quantiles(
                            data, q, epsilon=1.0, bounds=bounds, rng=InsecureSeededSource(s)
                        )
                    got.append(gaps(xs, np.atleast_1d(np.asarray(res.values, float)), q))
                    method = res.method + (", integers" if res.integer_mode else "")
                g = np.concatenate(got)
                cells.append(f"gap {g.mean():.4f}, exact {100 * np.mean(g == 0):.0f}% ({method})")
            print(f"| {name} | {label} | {cells[0]} | {cells[1]} |", flush=True)
    print(
        f"\nε = 1, add/remove, {args.reps} seeds per cell; {time.time() - start:.0f} s; "
        f"{machine()}; load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
