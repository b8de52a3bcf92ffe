"""Integer columns' private bounds: would a test for empty end bins recover the floor?

Run: ``PYTHONPATH=src:benchmarks python benchmarks/private_bounds_pretest.py [--ranges R]
[--draws D]``. Prints a Markdown table (docs/private_bounds.md holds one run).

Issue #33 item 4 misses on Adult ``age`` (1.146× the floor): the found range starts four
integers below the data's dense lower edge, and the prefixes at 17..22 pay for those empty
bins' noise (docs/private_bounds.md, "Why age misses"). Told which leading bins are empty,
the same release would be at 1.03× its floor. This script measures the post-processing that
tries to learn it from the release itself (no budget): find the longest leading run of bins
whose estimated prefix is at most ``c`` standard errors, and refit under the constraint that
the run holds nothing (one linear constraint ``P[j] = 0``, the BLUE's conditional update
``p - Σ[:, j] Σ[j, j]^-1 p[j]``; "both ends": also the trailing run, ``P[B] - P[B - t] = 0``).

The release is modelled exactly: its levels (node sizes from the library's own release on the
range) measured with Laplace noise of each level's variance, the GLS estimate of every prefix,
and the mean squared error at the data's quantiles ``0.001..0.999`` over the floor (the same
model on the true range at the ε left after the bounds step). Each cell: the mean over
``R`` runs of the library's bounds step (seeds ``10_000 + r``, as
``benchmarks/private_bounds_integers.py``) of ``D`` noise draws each, ± one standard error over
the runs. Ranges wider than 2,000 integers (the Adult ``capital_gain`` columns) are left out:
the model is dense.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource
from treedp.value_methods.bounds_split import split_private_bounds

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine
from private_bounds_integers import columns

EPSILON = 1.0
SHARE = 0.1
MAX_WIDTH = 2000
#: (label, c, both ends): c = None is the release as it is (no test).
RULES: tuple[tuple[str, float | None, bool], ...] = (
    ("as released", None, False),
    ("lower end, c = 2", 2.0, False),
    ("lower end, c = 3", 3.0, False),
    ("both ends, c = 2", 2.0, True),
    ("both ends, c = 3", 3.0, True),
)


class Model:
    """The integer release on ``[lo, hi]`` at ``epsilon`` as dense algebra."""

    def __init__(self, xs: np.ndarray, lo: int, hi: int, epsilon: float) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # clamped end bins
            rel = treedp.release_cdf(
                xs, bounds=(lo, hi), bins="integers", epsilon=epsilon, rng=InsecureSeededSource(0)
            )
        size = hi - lo + 1
        rows, variances = [], []
        for level, nodes in enumerate(rel.noisy_levels):
            variance = rel.level_variance[level]
            if not math.isfinite(variance):
                continue  # a level that is not measured (the root when n is not released)
            width = -(-size // len(nodes))  # contiguous nodes of equal width, the last shorter
            for j in range(len(nodes)):
                row = np.zeros(size)
                row[j * width : (j + 1) * width] = 1.0
                rows.append(row)
                variances.append(variance)
        self.a, self.v = np.array(rows), np.array(variances)
        weighted = self.a / self.v[:, None]
        # prefix estimators P[i] = sum of bins 0..i, as rows over the measurements
        self.p = np.cumsum(np.linalg.solve(self.a.T @ weighted, weighted.T), axis=0)
        self.cov = (self.p * self.v) @ self.p.T
        self.se = np.sqrt(np.diag(self.cov))
        counts = np.bincount(np.clip(xs - lo, 0, size - 1).astype(np.int64), minlength=size)
        self.x = counts.astype(np.float64)
        points = np.quantile(xs, np.arange(1, 1000) / 1000)
        self.at = np.clip((points - lo).astype(np.int64), 0, size - 1)
        self.truth = np.cumsum(self.x)[self.at]

    def variance(self) -> float:
        """The exact expected MSE of the unbiased release at the data's quantiles."""
        return float(np.mean(np.diag(self.cov)[self.at]))

    def tested(self, prefix: np.ndarray, c: float, both: bool) -> np.ndarray:
        """The prefixes refitted with the empty runs the test finds (post-processing)."""
        size = prefix.size
        constraints = []
        small = prefix <= c * self.se
        lead = size if small.all() else int(np.argmin(small))
        if 0 < lead < size:
            constraints.append(np.eye(1, size, lead - 1)[0])
        if both:
            below = np.r_[0.0, prefix[:-1]]
            var = np.diag(self.cov)
            cross = np.r_[0.0, self.cov[-1, :-1]]
            suffix_se = np.sqrt(np.maximum(var[-1] + np.r_[0.0, var[:-1]] - 2 * cross, 0.0))
            empty = (prefix[-1] - below) <= c * suffix_se
            tail = 0
            while tail < size - 1 and empty[size - 1 - tail]:
                tail += 1
            if tail:
                row = np.zeros(size)
                row[-1], row[size - 1 - tail] = 1.0, -1.0
                constraints.append(row)
        if not constraints:
            return prefix
        z = np.array(constraints)
        sz = self.cov @ z.T
        return np.asarray(prefix - sz @ np.linalg.solve(z @ sz, z @ prefix))

    def mse(self, draws: int, rng: np.random.Generator, c: float | None, both: bool) -> float:
        errors = []
        for _ in range(draws):
            y = self.a @ self.x + rng.laplace(0.0, np.sqrt(self.v / 2))
            prefix = self.p @ y
            if c is not None:
                prefix = self.tested(prefix, c, both)
            errors.append(np.mean((prefix[self.at] - self.truth) ** 2))
        return float(np.mean(errors))


def row(name: str, xs: np.ndarray, ranges: int, draws: int) -> str:
    if xs[-1] - xs[0] > MAX_WIDTH:
        return f"| {name} | (a range over {MAX_WIDTH} integers: not modelled) |"
    rest = EPSILON * (1 - SHARE)
    floor = Model(xs, int(xs[0]), int(xs[-1]), rest).variance()
    cells: list[list[float]] = [[] for _ in RULES]
    rng = np.random.default_rng(1)
    for r in range(ranges):
        (lo, hi), rest, _ = split_private_bounds(
            xs, epsilon=EPSILON, share=SHARE, integers=True, rng=InsecureSeededSource(10_000 + r)
        )
        if hi - lo > MAX_WIDTH:
            return f"| {name} | (ranges over {MAX_WIDTH} integers: not modelled) |"
        model = Model(xs, int(lo), int(hi), rest)
        for cell, (_, c, both) in zip(cells, RULES, strict=True):
            cell.append(model.mse(draws, rng, c, both) / floor)
    shown = [f"{np.mean(v):.3f} ± {np.std(v, ddof=1) / math.sqrt(len(v)):.3f}" for v in cells]
    return f"| {name} | [{int(xs[0])}, {int(xs[-1])}] | " + " | ".join(shown) + " |"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranges", type=int, default=40, help="runs of the bounds step per column")
    ap.add_argument("--draws", type=int, default=60, help="noise draws per found range")
    ap.add_argument("--only", nargs="*", default=None, help="column names to run (prefixes)")
    args = ap.parse_args()
    start = time.time()
    print(f"<!-- {machine()}; ε = {EPSILON}, share {SHARE} -->")
    print("| integer column | true range | " + " | ".join(label for label, _, _ in RULES) + " |")
    print("|---|---|" + "---|" * len(RULES))
    for name, xs in columns().items():
        if args.only and not any(name.startswith(p) for p in args.only):
            continue
        print(row(name, xs, args.ranges, args.draws), flush=True)
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
