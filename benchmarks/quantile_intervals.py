"""Quantile intervals of a release: the simultaneous band alone (the rule until session 26),
the one-sided bounds alone (``crossing_bins``) and the default (both, intersected, the miss
probability split 0.8 / 0.2), on the same releases in the same run: coverage, mean width and
seconds per call, and the share of default calls that simulated the band (only where it can
narrow the bounds). Then the seconds of one default interval at 2^16 and 2^19 bins (past
``BAND_LIMIT`` the bounds alone) against the band alone.

    PYTHONPATH=src:benchmarks python benchmarks/quantile_intervals.py [--reps 40]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import treedp
from _common import machine
from treedp.release import inference
from treedp.release.intervals import BAND_LIMIT

QS = np.array([0.05, 0.25, 0.5, 0.75, 0.95])
#: The band itself (the coverage table counts the default's calls of the module's name)
_QUANTILE_BAND = inference.quantile_band
LEVEL = 0.95

#: name: (data, bounds, bins, target)
CASES: dict[str, tuple[Callable[[np.random.Generator], np.ndarray], tuple, Any, dict]] = {
    "lognormal(3, 1), n = 10^4, 4096 bins, ε = 1": (
        lambda g: g.lognormal(3, 1, 10_000), (0, 500), 4096, {"epsilon": 1.0}),
    "normal(50, 10), n = 10^3, 1024 bins, ε = 0.5": (
        lambda g: g.normal(50, 10, 1000), (0, 100), 1024, {"epsilon": 0.5}),
    "normal(50, 10), n = 300, 256 bins, ε = 0.3": (
        lambda g: g.normal(50, 10, 300), (0, 100), 256, {"epsilon": 0.3}),
    "exponential(10), n = 2000, 64 bins, ε = 1": (
        lambda g: g.exponential(10, 2000), (0, 100), 64, {"epsilon": 1.0}),
    "lognormal(3, 1), n = 10^4, 4096 bins, ρ = 0.5": (
        lambda g: g.lognormal(3, 1, 10_000), (0, 500), 4096, {"privacy": treedp.ZCDP(0.5)}),
    "Poisson(30), n = 10^4, integer bins, ε = 1": (
        lambda g: g.poisson(30, 10_000), (0, 200), "integers", {"epsilon": 1.0}),
}  # fmt: skip


def _pointwise(rel: treedp.Release, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The one-sided bounds alone at ``level`` (what the default runs past BAND_LIMIT)."""
    gaussian = rel.mechanism.guarantee_kind == "zcdp"
    factor = inference.tail_factor(1 - level, gaussian=gaussian)
    m_lo, m_hi = inference.quantile_pointwise(rel.covariance, rel.prefix_counts, QS, factor)
    edges = rel.bins.edges.astype(np.float64)
    low, high = edges[m_lo - 1], edges[m_hi] - (1 if rel.bins.integers else 0)
    point = np.asarray(rel.quantile(QS), dtype=np.float64)
    return np.fmin(low, point), np.fmax(high, point)


def _band(
    rel: treedp.Release, level: float, seed: int, qs: np.ndarray = QS
) -> tuple[np.ndarray, np.ndarray]:
    """The band alone (the rule until session 26): as the release ran it, 1000 draws."""
    m_lo, m_hi = _QUANTILE_BAND(
        mechanism=rel.mechanism, estimator=rel.estimator, covariance=rel.covariance,
        prefix=rel.prefix_counts, qs=qs, level=level, simulations=1000,
        rng=treedp.InsecureSeededSource(seed),
    )  # fmt: skip
    edges = rel.bins.edges.astype(np.float64)
    low, high = edges[m_lo - 1], edges[m_hi] - (1 if rel.bins.integers else 0)
    point = np.asarray(rel.quantile(qs), dtype=np.float64)
    return np.fmin(low, point), np.fmax(high, point)


def _rule(k: int, rel: treedp.Release, r: int) -> tuple[Any, Any]:
    """Rule ``k``: the band alone, the bounds alone, the default."""
    if k == 0:
        return _band(rel, LEVEL, 10_000 + r)
    if k == 1:
        return _pointwise(rel, LEVEL)
    return rel.quantile_interval(QS, level=LEVEL, rng=treedp.InsecureSeededSource(10_000 + r))


def _truth(x: np.ndarray) -> np.ndarray:
    return np.quantile(x, QS, method="inverted_cdf")


def coverage_table(reps: int) -> None:
    print(f"\n### Coverage and width ({reps} releases a row, {LEVEL:.0%}, q = {QS.tolist()})\n")
    print("| data | rule | coverage (min over q) | mean width at each q | s a call | band run |")
    print("|---|---|---|---|---|---|")
    real_band = inference.quantile_band
    runs: list[int] = []

    def counted(**kwargs: Any) -> Any:
        runs.append(1)
        return real_band(**kwargs)

    inference.quantile_band = counted  # type: ignore[assignment]
    for name, (make, bounds, bins, target) in CASES.items():
        hits, widths, secs = np.zeros((3, QS.size)), np.zeros((3, QS.size)), np.zeros(3)
        runs.clear()
        for r in range(reps):
            x = np.clip(make(np.random.default_rng(r)), *bounds)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", treedp.BoundsWarning)
                rel = treedp.release_cdf(x, bounds=bounds, bins=bins,
                                         rng=treedp.InsecureSeededSource(r), **target)  # fmt: skip
            truth = _truth(x)
            for k in range(3):
                start = time.perf_counter()
                low, high = (np.asarray(v, dtype=np.float64) for v in _rule(k, rel, r))
                secs[k] += time.perf_counter() - start
                hits[k] += (low <= truth) & (truth <= high)
                widths[k] += high - low
        base = widths[0]
        for k, rule_name in enumerate(("band alone (before)", "bounds alone", "default (both)")):
            pairs = zip(widths[k], base, strict=True)
            ratios = [f"{w / b:.2f}" if b > 0 else "–" for w, b in pairs]
            ratio = "" if k == 0 else " (" + ", ".join(ratios) + "×)"
            shown = ", ".join(f"{v / reps:.4g}" for v in widths[k])
            run = f"{len(runs) / reps:.2f}" if k == 2 else ("1" if k == 0 else "0")
            print(f"| {name} | {rule_name} | {hits[k].min() / reps:.3f} | {shown}{ratio} | "
                  f"{secs[k] / reps:.3f} | {run} |")  # fmt: skip
    inference.quantile_band = real_band


def speed_table() -> None:
    print(f"\n### Seconds of one median interval past BAND_LIMIT = {BAND_LIMIT} bins\n")
    print("| bins | release s | default interval s | the band forced (1000 draws) s |")
    print("|---|---|---|---|")
    x = np.random.default_rng(0).lognormal(3, 1, 100_000)
    for bins in (2**16, 2**19):
        start = time.perf_counter()
        rel = treedp.release_cdf(x, bounds=(0, 500), bins=bins, epsilon=1.0,
                                 rng=treedp.InsecureSeededSource(1))  # fmt: skip
        released = time.perf_counter() - start
        start = time.perf_counter()
        rel.quantile_interval(0.5)
        default = time.perf_counter() - start
        start = time.perf_counter()
        _band(rel, LEVEL, 2, np.array([0.5]))
        band = time.perf_counter() - start
        print(f"| {bins} | {released:.2f} | {default:.3f} | {band:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    args = parser.parse_args()
    print(f"<!-- {machine()}; load average at start "
          f"{', '.join(f'{v:.2f}' for v in os.getloadavg())} -->")  # fmt: skip
    if args.reps:
        coverage_table(args.reps)
    speed_table()


if __name__ == "__main__":
    main()
