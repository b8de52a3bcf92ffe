"""Int columns on privately found bounds: one bin per integer against whole-integer bins.

Run: ``PYTHONPATH=src python benchmarks/integer_bins.py [--reps R] [--ns N ...]
[--epsilon E] [--simulations S] [--release-simulations S1] [--bins B ...]``. Prints two
Markdown tables (docs/private_bounds.md, "Wide integer ranges in a release", holds runs).

**Table 1, the release.** ``treedp.release_cdf(x, bounds="private", bins="integers",
epsilon=E)`` on int64 columns whose found range holds far more integers than 2^16. Since
session 19 such a range is released on at most ``PrivateBounds.max_bins`` (default 4096) bins
of whole integers; ``treedp.profile`` caps integer columns at ``max(bins, 4096)``. Each cell
gives ``max_bins`` = 4096 / 2^16 / 2^26, the last one bin per integer over the found range
(what ran before), in the same run with the same seed (the same bounds step). Metrics, means
over ``R``
repetitions: the rank gap of the quartiles read from the release (records: the distance from
``q·n`` to the ranks ``[#{x < v}, #{x <= v}]`` of the answer), the width of the 95%
``quantile_interval`` of the median (in the column's units), the CDF's expected squared
error at the data's own quantiles at levels ``0.001 .. 0.999`` (exact: the release's variance
there plus the squared bias of its noiseless counts, over the same mean for the tight bounds
given free at 90% of ε with one bin per integer, the floor of issue #33's item 4), and the time
of the release and of that interval. ``--caps`` sets the ``max_bins`` compared; the columns
include tied ones (Adult ``capital_gain``, amounts rounded to hundreds, zero-inflated counts),
where whole-integer bins interpolate across blocks of equal values.

**Table 2, the interval's memory.** ``quantile_interval`` of three quartiles on a release of
``B`` bins: peak memory traced (``tracemalloc``, which sees numpy's buffers) and time, against
the computation it replaced, run in the same process on the same release and seed: every
simulated prefix error held at once (``simulations × (B + 1)``) and copied per quartile.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import treedp
import treedp.datasets
from treedp.estimation import band_critical_value
from treedp.noise import InsecureSeededSource
from treedp.release import inference
from treedp.release.queries import cdf_terms

sys.path.insert(0, os.path.dirname(__file__))
from _common import machine


def _adult_capital_gain(r: np.random.Generator, n: int) -> np.ndarray:
    """Adult ``capital_gain`` (the whole vendored column; ``n`` and ``r`` unused)."""
    return np.asarray(treedp.datasets.load_adult()["capital_gain"], dtype=np.float64)


COLUMNS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "round lognormal(10.5, 0.9) (incomes)": lambda r, n: np.round(r.lognormal(10.5, 0.9, n)),
    "uniform integers 0..10^6": lambda r, n: r.integers(0, 10**6, n).astype(np.float64),
    "round normal(0, 10^5)": lambda r, n: np.round(r.normal(0, 1e5, n)),
    "lognormal(10.5, 0.9) to hundreds": lambda r, n: (
        100 * np.round(r.lognormal(10.5, 0.9, n) / 100)
    ),
    "zero-inflated counts (70% 0, else geometric(1e-4))": lambda r, n: np.where(
        r.random(n) < 0.7, 0, r.geometric(1e-4, n)
    ).astype(np.float64),
    "Adult capital_gain (48,842; n unused)": _adult_capital_gain,
}
QS = np.array([0.25, 0.5, 0.75])


def rank_gap(x_sorted: np.ndarray, value: float, q: float) -> float:
    """Distance from ``q·n`` to the ranks ``[#{x < v}, #{x <= v}]`` the answer holds."""
    below = np.searchsorted(x_sorted, value, side="left")
    upto = np.searchsorted(x_sorted, value, side="right")
    target = q * x_sorted.size
    return float(max(below - target, target - upto, 0.0))


CAPS = (4096, 2**16, 2**26)
#: The levels whose data quantiles the CDF's error is read at.
CDF_LEVELS = np.arange(1, 1000) / 1000


def cdf_error(rel: treedp.Release, xs: np.ndarray) -> float:
    """The release's expected squared CDF error at the data's quantiles (exact)."""
    points = np.quantile(xs, CDF_LEVELS)
    truth = np.searchsorted(xs, points, side="right")
    counts, _ = rel.bins.count(xs)
    noiseless = cdf_terms(rel.bins, points).evaluate(np.r_[0, np.cumsum(counts)].astype(float))
    variance = np.asarray(rel.stderr("cdf", points)) ** 2
    return float(np.mean(variance) + np.mean((noiseless - truth) ** 2))


def floor_error(x: np.ndarray, epsilon: float) -> float:
    """:func:`cdf_error` of the tight bounds given free, one bin per integer, at 90% of ε."""
    xs = np.sort(x)
    rel = treedp.release_cdf(
        xs.astype(np.int64),
        bounds=(int(xs[0]), int(xs[-1])),
        bins="integers",
        epsilon=0.9 * epsilon,
        rng=InsecureSeededSource(0),
    )
    return cdf_error(rel, xs)


def one_release(x: np.ndarray, cap: int, seed: int, sims: int, epsilon: float) -> dict[str, float]:
    """The release on found bounds with ``max_bins=cap``: its errors, interval and times."""
    xs = np.sort(x)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = treedp.release_cdf(
            x.astype(np.int64),
            bounds=treedp.PrivateBounds(max_bins=cap),
            bins="integers",
            epsilon=epsilon,
            rng=InsecureSeededSource(seed),
        )
    released = time.perf_counter() - start
    answers = np.atleast_1d(rel.quantile(QS))
    gaps = [rank_gap(xs, float(v), float(q)) for v, q in zip(answers, QS, strict=True)]
    start = time.perf_counter()
    low, high = rel.quantile_interval(0.5, simulations=sims, rng=InsecureSeededSource(seed + 1))
    interval = time.perf_counter() - start
    return {
        "bins": rel.bins.n_bins,
        "gap": float(np.mean(gaps)),
        "cdf": cdf_error(rel, xs),
        "width": float(high) - float(low),
        "release_s": released,
        "interval_s": interval,
    }


def release_table(
    ns: list[int], reps: int, sims: int, epsilon: float, caps: tuple[int, ...] = CAPS
) -> None:
    print(
        "| column | n | bins | rank gap, records | CDF error / floor | median interval width "
        "| release s | interval s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, draw in COLUMNS.items():
        for n in ns if "n unused" not in name else ns[:1]:
            rows: dict[int, list[dict[str, float]]] = {cap: [] for cap in caps}
            floor = []
            for rep in range(reps):
                x = draw(np.random.default_rng(1000 + rep), n)
                floor.append(floor_error(x, epsilon))
                for cap in rows:
                    rows[cap].append(one_release(x, cap, 100 + rep, sims, epsilon))
            means = [{k: float(np.mean([r[k] for r in v])) for k in v[0]} for v in rows.values()]
            for row in means:
                row["cdf"] /= float(np.mean(floor))

            def cell(key: str, form: str, cells: list[dict[str, float]] = means) -> str:
                return " / ".join(format(c[key], form) for c in cells)

            print(
                f"| {name} | {x.size:,} | {cell('bins', ',.0f')} | {cell('gap', '.1f')} "
                f"| {cell('cdf', '.3g')} | {cell('width', ',.0f')} | {cell('release_s', '.2f')} "
                f"| {cell('interval_s', '.2f')} |"
            )


def former_band(rel: Any, sims: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The computation ``quantile_interval`` replaced: all errors held, copied per ``q``."""
    n_bins = rel.bins.n_bins
    m = np.arange(n_bins + 1)
    errors = inference.noise_errors(
        rel.mechanism, rel.estimator, sims, InsecureSeededSource(seed), m
    )
    var_m = rel.covariance.cov(m, m)
    cov_mb = rel.covariance.cov(m, np.full_like(m, n_bins))
    lows, highs = [], []
    for q in QS:
        se = np.sqrt(np.maximum(var_m + q**2 * var_m[-1] - 2 * q * cov_mb, 0.0))
        crit = band_critical_value(errors - q * errors[:, -1:], se, 0.95)
        g_hat = rel.prefix_counts - q * rel.prefix_counts[-1]
        upper = np.minimum.accumulate((g_hat + crit * se)[::-1])[::-1]
        lower = np.maximum.accumulate(g_hat - crit * se)
        lows.append(max(int(np.argmax(upper >= 0)), 1))
        highs.append(max(int(np.argmax(lower >= 0)), 1))
    return np.array(lows), np.array(highs)


def traced(fn: Callable[[], object]) -> tuple[float, float]:
    """Seconds and peak traced memory (GB) of one call."""
    tracemalloc.start()
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e9
    tracemalloc.stop()
    return seconds, peak


def memory_table(bin_counts: list[int], sims: int) -> None:
    print("| bins | quantile_interval: s, peak GB | former (all errors held): s, peak GB |")
    print("|---:|---:|---:|")
    x = np.random.default_rng(7).lognormal(10.5, 0.9, 10_000)
    for b in bin_counts:
        rel = treedp.release_cdf(
            x, bounds=(0, 400_000), bins=b, epsilon=1.0, rng=InsecureSeededSource(3)
        )
        now = traced(
            lambda r=rel: r.quantile_interval(QS, simulations=sims, rng=InsecureSeededSource(4))
        )
        before = traced(lambda r=rel: former_band(r, sims, 4))
        print(f"| {b:,} | {now[0]:.2f} s, {now[1]:.2f} | {before[0]:.2f} s, {before[1]:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0, help="table 1")
    parser.add_argument("--ns", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--simulations", type=int, default=1000, help="table 2")
    parser.add_argument("--release-simulations", type=int, default=200, help="table 1")
    parser.add_argument("--bins", type=int, nargs="+", default=[4096, 16_384, 65_536])
    parser.add_argument("--caps", type=int, nargs="+", default=list(CAPS), help="table 1")
    parser.add_argument("--no-memory", action="store_true", help="table 1 only")
    args = parser.parse_args()
    print(f"Machine: {machine()}; load average {os.getloadavg()[0]:.2f} at start.")
    print(
        f"Settings: epsilon {args.epsilon} (table 1; 1 in table 2), {args.reps} repetitions; "
        f"{args.release_simulations} simulations "
        f"per interval in table 1 and {args.simulations} in table 2.\n"
    )
    release_table(args.ns, args.reps, args.release_simulations, args.epsilon, tuple(args.caps))
    if not args.no_memory:
        print()
        memory_table(args.bins, args.simulations)


if __name__ == "__main__":
    main()
