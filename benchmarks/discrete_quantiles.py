"""Quantiles on integer bins: the inverse-CDF rule against the nearest-CDF rule of an earlier round.

Run: ``PYTHONPATH=src python benchmarks/discrete_quantiles.py [--seeds S]``. Prints, per setting,
the mean over levels ``q = j/(m+1)`` and seeds of two rank errors of each rule's answers ``v``:

* the rank gap: the distance from ``q n`` to the ranks ``[#(x < v), #(x <= v)]`` that ``v`` holds
  (0 for a true quantile; for values without ties ``|#(x <= v) - q n|``);
* issue #16's measure ``|#(x <= v) - q n|`` (the top of ``v``'s block of ties only), with its
  floor ``min_v |#(x <= v) - q n|`` for the Adult rows.

Settings: Adult ``age`` per ``education_num`` group (integer bins 17-90, one release per group
and seed), Poisson(3) with n = 10^3 and 10^5 (integer bins 0-20), ε in {0.1, 1}, m in {5, 99}.
"""

from __future__ import annotations

import argparse

import numpy as np

import treedp
import treedp.datasets
from treedp.noise import InsecureSeededSource
from treedp.release.discrete_quantiles import discrete_quantile_from


def nearest_cdf(rel: treedp.Release, q: np.ndarray) -> np.ndarray:
    """The earlier rule: the integer whose released CDF is nearest ``q n̂`` (smallest on ties)."""
    cdf = np.asarray(rel.consistent_counts[1:], dtype=np.float64)
    target = q * float(rel.consistent_counts[-1])
    j = np.abs(cdf[None, :] - target[:, None]).argmin(axis=1)  # argmin: the smallest on ties
    return np.asarray(rel.bins.edges[:-1], dtype=np.float64)[j]


def errors(x: np.ndarray, v: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    target = q * x.size
    below = np.searchsorted(x, v, side="left")
    at_most = np.searchsorted(x, v, side="right")
    gap = np.maximum(0.0, np.maximum(below - target, target - at_most))
    return float(gap.mean()), float(np.abs(at_most - target).mean())


def run(groups: list[np.ndarray], lo: int, hi: int, eps: float, m: int, seeds: int) -> str:
    q = np.arange(1, m + 1) / (m + 1)
    rows: dict[str, list[tuple[float, float]]] = {"inverse": [], "nearest": []}
    floor = []
    for seed in range(seeds):
        source = InsecureSeededSource(seed)
        for x in groups:
            rel = treedp.release_cdf(x, bounds=(lo, hi), bins="integers", epsilon=eps, rng=source)
            inv = discrete_quantile_from(rel.bins, rel.consistent_counts, q)
            rows["inverse"].append(errors(x, inv, q))
            rows["nearest"].append(errors(x, nearest_cdf(rel, q), q))
            at_most = np.searchsorted(x, np.arange(lo, hi + 1), side="right")
            floor.append(float(np.abs(at_most[None, :] - (q * x.size)[:, None]).min(1).mean()))
    inv, near = np.mean(rows["inverse"], axis=0), np.mean(rows["nearest"], axis=0)
    return (
        f"{eps:g} | {m} | {inv[0]:.1f} / {inv[1]:.1f} | {near[0]:.1f} / {near[1]:.1f} | "
        f"{np.mean(floor):.1f} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    adult = treedp.datasets.load_adult()
    age, edu = np.asarray(adult["age"]), np.asarray(adult["education_num"])
    settings = {
        "Adult age by education (16 groups)": (
            [np.sort(age[edu == g]) for g in np.unique(edu)],
            17,
            90,
        ),
        "Poisson(3), n = 10^3": ([np.sort(np.random.default_rng(0).poisson(3, 10**3))], 0, 20),
        "Poisson(3), n = 10^5": ([np.sort(np.random.default_rng(0).poisson(3, 10**5))], 0, 20),
    }
    print(
        "| data | ε | m | inverse CDF: gap / issue's measure | nearest CDF: gap / issue's "
        "measure | floor of the issue's measure |"
    )
    print("|---|---|---|---|---|---|")
    for name, (groups, lo, hi) in settings.items():
        for eps in (0.1, 1.0):
            for m in (5, 99):
                print(f"| {name} | " + run(groups, lo, hi, eps, m, args.seeds), flush=True)
    print(f"\n{args.seeds} seeds per cell (one release per group and seed)")


if __name__ == "__main__":
    main()
