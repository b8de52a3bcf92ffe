"""Every quantile method on point masses (issue #33 item 6), with the best method per level.

Run: ``PYTHONPATH=src python benchmarks/point_masses.py [--reps R]``. Prints one Markdown table
per input (docs/private_bounds.md holds one run): the mean rank gap over ``n`` at the levels
0.1, 0.25, 0.5, 0.75, 0.9 of ``treedp.quantiles`` for each method (exponential, recursive,
tree) and bounds (the public ``bounds`` given, or ``"private"``; integer data also with
``bins="integers"``; the rows without it read integer data as a float column, continuous),
then the best mean per level in the same run, and the medians of
``treedp.stable_median`` and ``treedp.subsample_and_aggregate`` (``δ = 1e-6``, 100 blocks;
their answers, or "refused").

Inputs: diffprivlib issue #107's (80% of the records at 65,000, the rest uniform integers on
0..500,000, ``n = 10^5``), 99% at 7.0 (a float-lattice point) and at 7.3 (not one) with 1%
normal(0, 100), and 70% zeros with lognormal(5, 1) otherwise (the recursion's far side).
Rank gap: the distance from ``q n`` to the ranks ``[#{x < v}, #{x <= v}]`` of the answer.
Every answer must be finite (checked).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Any

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

Q = np.array([0.1, 0.25, 0.5, 0.75, 0.9])


def issue_107(n: int) -> np.ndarray:
    rng = np.random.RandomState(0)
    atom = np.full(int(0.8 * n), 65_000, dtype=np.int64)
    return np.concatenate([atom, rng.randint(0, 500_000, size=n - atom.size)])


def inputs() -> dict[str, tuple[np.ndarray, tuple[Any, Any]]]:
    r = np.random.default_rng(1)
    return {
        "#107, n = 10^5": (issue_107(10**5), (0, 500_000)),
        "99% at 7.0": (np.r_[np.full(9_900, 7.0), r.normal(0, 100, 100)], (-400.0, 400.0)),
        "99% at 7.3": (np.r_[np.full(9_900, 7.3), r.normal(0, 100, 100)], (-400.0, 400.0)),
        "70% zeros": (
            np.where(r.random(10**4) < 0.7, 0.0, r.lognormal(5, 1, 10**4)),
            (0.0, 5000.0),
        ),
    }


def gap(xs: np.ndarray, est: np.ndarray, q: np.ndarray) -> np.ndarray:
    below = np.searchsorted(xs, est, side="left") - q * xs.size
    above = q * xs.size - np.searchsorted(xs, est, side="right")
    return np.asarray(np.maximum(0, np.maximum(below, above)) / xs.size)


def configs(integer: bool, public: tuple[Any, Any]) -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = [("public", public, None), ("private", "private", None)]
    if integer:
        out += [
            ("public, integers", public, "integers"),
            ("private, integers", "private", "integers"),
        ]
    return out


def medians(xs: np.ndarray, eps: float, reps: int) -> str:
    cells = []
    for name, fn in (
        ("stable_median", treedp.stable_median),
        ("subsample_and_aggregate", None),
    ):
        answers = []
        for s in range(reps):
            if fn is not None:
                v = fn(xs, epsilon=eps, delta=1e-6, rng=InsecureSeededSource(s))
            else:
                v = treedp.subsample_and_aggregate(
                    xs, "median", epsilon=eps, delta=1e-6, m=100, rng=InsecureSeededSource(s)
                )
            answers.append("refused" if v is None else f"{float(v):g}")
        cells.append(f"{name}: {', '.join(sorted(set(answers)))}")
    return "; ".join(cells)


def table(name: str, x: np.ndarray, public: tuple[Any, Any], eps: float, reps: int) -> None:
    xs = np.sort(x)
    rows: dict[str, np.ndarray] = {}
    for method in ("exponential", "recursive", "tree"):
        for label, bounds, bins in configs(xs.dtype.kind == "i", public):
            # The rows without bins read the values as continuous: an integer column type
            # would now run in integer mode (bins="integers"), so they get a float column.
            data = xs if bins is not None else xs.astype(np.float64)
            gaps = []
            for s in range(reps):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = treedp.quantiles(
                        data, Q, epsilon=eps, bounds=bounds, bins=bins, method=method,
                        rng=InsecureSeededSource(s),
                    )  # fmt: skip
                v = np.asarray(res.values, dtype=float)
                if not np.all(np.isfinite(v)):
                    raise AssertionError(f"{name}: {method} {label} answered {v}")
                gaps.append(gap(xs, v, Q))
            rows[f"{method}, {label}"] = np.mean(gaps, axis=0)
    best = np.min(np.array(list(rows.values())), axis=0)
    print(f"\n{name}, ε = {eps} (mean rank gap / n; best of the row's level in bold)\n")
    print("| method, bounds | " + " | ".join(f"q = {q:g}" for q in Q) + " |")
    print("|---|" + "---|" * Q.size)
    for label, g in rows.items():
        cells = [
            f"**{v:.4f}**" if v <= b + 1e-4 else f"{v:.4f}" for v, b in zip(g, best, strict=True)
        ]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"\nMedians: {medians(xs, eps, reps)}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    start = time.time()
    for name, (x, public) in inputs().items():
        for eps in (0.3, 1.0):
            table(name, x, public, eps, args.reps)
    print(
        f"\n{args.reps} releases per cell; {time.time() - start:.0f} s; {machine()}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
