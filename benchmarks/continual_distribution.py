"""A stream's distribution answers against the truth and a one-off release of the same data.

Run: ``PYTHONPATH=src:benchmarks python benchmarks/continual_distribution.py [--reps R]
[--steps T]``. A stream of ``T`` steps (default 365) of 30 exponential(20) values a step, on
64 bins over ``(0, 120)``, ε = 1 (``treedp.continual``, its default mechanism); at the last
step, the mean ± standard deviation over ``R`` streams (seeds ``0..R-1``) of the consistent
histogram's total, ``cdf(30)``, the median and the 90th percentile, beside the truth and a
one-off ``release_cdf`` of all the step's records at ε = 1 on the same bins (the baseline in
the same run; it spends its ε on one answer, the stream on ``T``). Also the root mean squared
error of ``cdf`` at the data's deciles at steps 1, T/2 and T, for the stream's consistent
view and for the unbiased prefixes (``raw_histogram``), averaged over the streams.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import treedp
from treedp.noise import InsecureSeededSource

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine

BOUNDS, BINS, PER_STEP = (0.0, 120.0), 64, 30


def raw_cdf(answer: object, x: np.ndarray) -> np.ndarray:
    """``<= x`` shares from the unbiased bins (linear inside a bin), over the unbiased count."""
    edges = np.linspace(*BOUNDS, BINS + 1)
    cum = np.concatenate([[0.0], np.cumsum(answer.raw_histogram)])  # type: ignore[attr-defined]
    return np.interp(x, edges, cum) / max(cum[-1], 1.0)


def run(reps: int, steps: int) -> None:
    data = np.random.default_rng(2026).exponential(20.0, (steps, PER_STEP))
    marks = sorted({1, steps // 2, steps})
    finals, oneoff, rmse, rmse_raw = [], [], {t: [] for t in marks}, {t: [] for t in marks}
    start = time.time()
    for seed in range(reps):
        stream = treedp.continual(horizon=steps, epsilon=1.0, bins=BINS, bounds=BOUNDS,
                                  rng=InsecureSeededSource(seed))  # fmt: skip
        for t in range(1, steps + 1):
            answer = stream.step(data[t - 1])
            if t in marks:
                seen = np.sort(data[:t].ravel())
                x = np.quantile(seen, np.arange(1, 10) / 10)
                truth = np.searchsorted(seen, x, side="right") / seen.size
                rmse[t].append(np.sqrt(np.mean((answer.cdf(x) - truth) ** 2)))
                rmse_raw[t].append(np.sqrt(np.mean((raw_cdf(answer, x) - truth) ** 2)))
        q = answer.quantile([0.5, 0.9])
        finals.append([answer.histogram.sum(), answer.count, answer.cdf(30.0), q[0], q[1]])
        rel = treedp.release_cdf(data.ravel(), bounds=BOUNDS, bins=BINS, epsilon=1.0,
                                 rng=InsecureSeededSource(10_000 + seed))  # fmt: skip
        oneoff.append([rel.n, rel.n, rel.cdf(30.0) / rel.n, *rel.quantile([0.5, 0.9])])
    seen = np.sort(data.ravel())
    truth = [seen.size, seen.size, np.mean(seen <= 30.0), *np.quantile(seen, [0.5, 0.9])]
    print(f"{machine()}; {reps} streams of {steps} steps, {time.time() - start:.0f} s\n")
    print("| answer at the last step | truth | stream: mean ± sd | one-off release: mean ± sd |")
    print("|---|---:|---:|---:|")
    names = ["histogram total", "count (unbiased)", "cdf(30)", "median", "90th percentile"]
    f, o = np.array(finals), np.array(oneoff)
    for i, name in enumerate(names):
        print(f"| {name} | {truth[i]:.4g} | {f[:, i].mean():.4g} ± {f[:, i].std():.2g} | "
              f"{o[:, i].mean():.4g} ± {o[:, i].std():.2g} |")  # fmt: skip
    print("\n| step | CDF RMSE at the deciles: consistent view | unbiased bins |")
    print("|---:|---:|---:|")
    for t in marks:
        print(f"| {t} | {np.mean(rmse[t]):.4f} | {np.mean(rmse_raw[t]):.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--steps", type=int, default=365)
    args = parser.parse_args()
    run(args.reps, args.steps)


if __name__ == "__main__":
    main()
